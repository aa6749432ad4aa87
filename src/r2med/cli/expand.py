"""``r2med expand``: generate query expansions with any OpenAI-compatible LLM (cached, resumable).

Writes ``OUT/<task>/<method>/<llm>/query_with_hydoc.jsonl`` (R2MED's layout) once every query
of a task has its expansion; then ``r2med evaluate --expansion METHOD:LLM --expansion-dir OUT``
scores it.  All the logic lives in :mod:`r2med.expansion` and :mod:`r2med.llm`.
"""

from __future__ import annotations

import logging
import re
import threading
from pathlib import Path
from typing import Any, Optional

import typer
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from ..data.loaders import EXPANSION_FILE
from ..cache import check_home
from ..errors import R2MedError
from ..paths import check_output_dir, plain_name, task_folder
from ..pipeline import resolve_collections
from ..tasks import parse_tasks
from . import app, console
from .options import AT_LEAST_0, AT_LEAST_1, POSITIVE, TEMPERATURE, TOP_P

log = logging.getLogger(__name__)


def llm_folder_name(model: str) -> str:
    """A folder name for a model id: ``Qwen/Qwen2.5-7B-Instruct`` -> ``qwen2.5-7b-instruct``."""
    tail = model.rstrip("/").rsplit("/", 1)[-1]
    return re.sub(r"[^a-z0-9.]+", "-", tail.lower()).strip("-") or "llm"


class _Bar:
    """A rich progress bar with done / failed / retried counts and token usage (thread-safe updates)."""

    def __init__(self, progress: Progress, client: Any, label: str, total: int):
        self.progress, self.client = progress, client
        self.done = self.failed = self.retried = 0
        self.lock = threading.Lock()
        self.task = progress.add_task(label, total=total, stats="")

    def _refresh(self) -> None:
        u = self.client.usage
        self.progress.update(self.task, stats=f"ok {self.done} · failed {self.failed} · retried {self.retried} · "
                                              f"tokens {u.prompt_tokens:,} in / {u.completion_tokens:,} out")

    def result(self, _key: Any, res: Any) -> None:
        """Count one finished item: an LLM ``Result`` or a plain success flag."""
        ok = res if isinstance(res, bool) else res.ok
        with self.lock:
            if ok:
                self.done += 1
            else:
                self.failed += 1
            self.progress.advance(self.task)
            self._refresh()

    def retry(self, _error: str) -> None:
        with self.lock:
            self.retried += 1
            self._refresh()


@app.command("expand")
def expand_command(
    method: str = typer.Option(..., "--method", help="hyde, query2doc, lamer, search-r1 or search-o1."),
    model: str = typer.Option(..., "--model", help="Model name at the endpoint (e.g. gpt-4o, Qwen/Qwen2.5-7B-Instruct)."),
    tasks: str = typer.Option("all", "--tasks", "-t", help="'all' or comma-separated task names."),
    data_dir: Optional[Path] = typer.Option(None, "--data-dir", "-d",
                                            help="Local data: one collection folder, or a folder of task folders."),
    out: Path = typer.Option(Path("expansions"), "--out", "-o",
                             help="Writes OUT/<task>/<method>/<llm>/query_with_hydoc.jsonl."),
    llm_name: Optional[str] = typer.Option(None, "--llm-name", help="Folder name for the LLM (default: from --model)."),
    base_url: Optional[str] = typer.Option(None, "--base-url", help="OpenAI-compatible endpoint (vLLM, Ollama, ...); "
                                                                    "default: OpenAI."),
    api_key: Optional[str] = typer.Option(None, "--api-key", envvar="OPENAI_API_KEY", show_envvar=True,
                                          help="API key (not needed for local endpoints)."),
    concurrency: int = typer.Option(16, "--concurrency", "-c", callback=AT_LEAST_1, help="Requests in flight at once."),
    timeout: float = typer.Option(300.0, "--timeout", callback=POSITIVE, help="Seconds before a request is retried."),
    max_retries: int = typer.Option(6, "--max-retries", callback=AT_LEAST_0, help="Retries per request (429/5xx/timeouts)."),
    sampling: Optional[str] = typer.Option(None, "--sampling",
                                           help="Paper defaults: 'api' (temperature 0.8, top_p 0.8) or 'open' "
                                                "(temperature 0.7, seed 42, max_tokens 10240). Default: api for "
                                                "OpenAI, open with --base-url."),
    temperature: Optional[float] = typer.Option(None, "--temperature", callback=TEMPERATURE, help="Override the sampling temperature."),
    top_p: Optional[float] = typer.Option(None, "--top-p", callback=TOP_P, help="Override top_p."),
    max_tokens: Optional[int] = typer.Option(None, "--max-tokens", callback=AT_LEAST_1, help="Override max_tokens."),
    seed: Optional[int] = typer.Option(None, "--seed", callback=AT_LEAST_0, help="Override the sampling seed."),
    prompt_task: Optional[str] = typer.Option(None, "--prompt-task",
                                              help="Use this task's prompt (for collections not named after a task)."),
    retriever: str = typer.Option("bm25", "--retriever", "-r", help="Agentic methods: the index searched."),
    max_turns: int = typer.Option(4, "--max-turns", callback=AT_LEAST_1, help="Agentic methods: LLM turns per query."),
    search_k: int = typer.Option(3, "--search-k", callback=AT_LEAST_1, help="Agentic methods: passages returned per search."),
    search_tags: Optional[str] = typer.Option(None, "--search-tags", help="Agentic: OPEN,CLOSE tags of a search "
                                                                          "request (default: the protocol's)."),
    result_tags: Optional[str] = typer.Option(None, "--result-tags", help="Agentic: OPEN,CLOSE tags around results."),
    answer_tags: Optional[str] = typer.Option(None, "--answer-tags", help="Agentic: OPEN,CLOSE tags of the answer."),
    revision: Optional[str] = typer.Option(None, "--revision", help="Pinned hub revision."),
    no_cache: bool = typer.Option(False, "--no-cache", help="Do not read or write the LLM answer cache."),
) -> None:
    """Generate expansions for each task's queries; re-runs are free (cache) and interrupted runs resume."""
    from ..expansion.combine import AGENTIC, check_method
    from ..expansion.generate import paper_sampling, prompt_task as resolve_prompt
    from ..llm import LLMClient

    if logging.getLogger().level > logging.DEBUG:  # one line per HTTP request is noise next to the progress bar
        for noisy in ("httpx2", "httpx", "openai"):
            logging.getLogger(noisy).setLevel(logging.WARNING)
    method = check_method(method)
    if sampling is not None and sampling not in ("api", "open"):
        raise R2MedError(f"--sampling must be 'api' or 'open', got {sampling!r}")
    llm = plain_name(llm_folder_name(llm_name or model), "--llm-name")
    check_output_dir(out)
    if not no_cache:
        check_home()
    names = parse_tasks(tasks) if data_dir is None or not (data_dir / "corpus.jsonl").exists() else [data_dir.name]
    tags = _tags(method, search_tags, result_tags, answer_tags) if method in AGENTIC else None
    if method not in AGENTIC:
        for name in names:  # fail before any request when a prompt is missing
            resolve_prompt(name, prompt_task)
    params = paper_sampling(api=(sampling or ("api" if base_url is None else "open")) == "api",
                            temperature=temperature, top_p=top_p, max_tokens=max_tokens, seed=seed)
    client = LLMClient(model, base_url=base_url, api_key=api_key, concurrency=concurrency, timeout=timeout,
                       max_retries=max_retries, cache=not no_cache)
    loaders = resolve_collections(names, data_dir, revision)
    table = Table(title=escape(f"{method} expansions by {model}"))
    for col in ("task", "queries", "requests", "cached", "retries", "tokens in/out", "file"):
        table.add_column(col, justify="left" if col in ("task", "file") else "right")
    try:
        for load in loaders:
            collection = load()
            before = client.usage.as_dict()
            path = task_folder(out, collection.name) / method / llm / EXPANSION_FILE
            with Progress(TextColumn("{task.description}", style="bold", markup=False), BarColumn(),
                          TextColumn("{task.completed}/{task.total}"), TextColumn("{task.fields[stats]}", markup=False), TimeElapsedColumn(), console=console,
                          transient=True) as progress:
                bar = _Bar(progress, client, f"{method} · {collection.name}", len(collection.queries))
                if method in AGENTIC:
                    texts, errors, extra = _agentic(collection, method, client, params, retriever, max_turns,
                                                    search_k, bar, tags)
                else:
                    from ..expansion.generate import generate_expansions

                    res = generate_expansions(collection, method, client, params, task=prompt_task,
                                              on_result=bar.result, on_retry=bar.retry)
                    texts, errors, extra = res.texts, res.errors, {}
            if errors:
                first = next(iter(errors.items()))
                raise R2MedError(f"{collection.name}: {len(errors)} of {len(collection.queries)} requests failed "
                                 f"(query {first[0]}: {first[1]}); answers so far are cached: re-run to resume")
            from ..expansion.generate import write_expansion_file

            write_expansion_file(path, collection, texts, extra)
            now = client.usage.as_dict()
            d = {k: now[k] - before[k] for k in now}
            table.add_row(escape(collection.name), str(len(collection.queries)), str(d["requests"]),
                          str(d["cache_hits"]), str(d["retries"]), f"{d['prompt_tokens']:,}/{d['completion_tokens']:,}",
                          escape(str(path)))
    finally:
        client.close()
    console.print(table)
    console.print(escape(f"evaluate with: r2med evaluate --expansion {method}:{llm} --expansion-dir {out}"
                         + (f" --data-dir {data_dir}" if data_dir else "")))


def _tags(method: str, search: str | None, result: str | None, answer: str | None):
    from ..expansion.agentic import get_protocol

    overrides = {}
    for kind, value in (("search", search), ("result", result), ("answer", answer)):
        if value is None:
            continue
        parts = value.split(",")
        if len(parts) != 2 or not all(p.strip() for p in parts):
            raise R2MedError(f"--{kind}-tags wants OPEN,CLOSE (e.g. '<search>,</search>'), got {value!r}")
        overrides[f"{kind}_open"], overrides[f"{kind}_close"] = (p.strip() for p in parts)
    return get_protocol(method, **overrides)


def _agentic(collection, method: str, client, params: dict, retriever_name: str, max_turns: int, search_k: int,
             bar: _Bar, tags):
    from ..expansion.agentic import AgenticExpander
    from ..retrieval import make_retriever

    retriever = make_retriever(retriever_name, task=collection.name)
    try:
        retriever.index(collection.corpus, corpus_fingerprint=collection.fingerprint)  # type: ignore[call-arg]
    except TypeError:
        retriever.index(collection.corpus)
    agent = AgenticExpander(client, retriever, collection.corpus, tags=tags, max_turns=max_turns,
                            top_k=search_k, sampling=params)
    def on_turn(turn: int, searching: int) -> None:
        bar.progress.update(bar.task, description=f"{method} · {collection.name} · turn {turn}: {searching} searching")

    traces = agent.run(collection.queries, on_turn=on_turn, on_retry=bar.retry)
    texts, errors, extra = {}, {}, {}
    for qid, trace in traces.items():
        bar.result(qid, trace.error is None)
        if trace.error is not None:
            errors[qid] = trace.error
        else:
            texts[qid] = trace.answer
            extra[qid] = {"searches": [[q, docs] for q, docs in trace.searches], "turns": trace.turns,
                          "stopped": trace.stopped}
    return texts, errors, extra
