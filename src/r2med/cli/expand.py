"""``r2med expand``: generate query expansions with any OpenAI-compatible LLM (cached, resumable).

Writes ``OUT/<task>/<method>/<llm>/query_with_hydoc.jsonl`` (R2MED's layout); then ``r2med evaluate
--expansion METHOD:LLM --expansion-dir OUT`` scores it.  The work: :mod:`r2med.jobs.expand`.
"""

from __future__ import annotations

import logging
from pathlib import Path

import typer
from rich.markup import escape
from rich.table import Table

from ..infra.llm_defaults import CONCURRENCY, MAX_RETRIES
from . import app, strict_data
from ._ui import print_next, print_with_paths
from .options import (
    EXPANSION_METHOD_CHOICE,
    ApiKey,
    BaseUrl,
    DataDir,
    NoCache,
    Revision,
    Split,
    Tasks,
    Wide,
    as_given,
)


@app.command("expand")
def expand_command(
    ctx: typer.Context,
    method: str = typer.Option(
        ...,
        "--method",
        metavar=EXPANSION_METHOD_CHOICE.choices_metavar,
        callback=EXPANSION_METHOD_CHOICE.callback,
        help="hyde, query2doc, lamer, search-r1 or search-o1.",
    ),
    model: str = typer.Option(
        ..., "--model", help="Model name at the endpoint (e.g. gpt-4o, Qwen/Qwen2.5-7B-Instruct)."
    ),
    tasks: Tasks = "all",
    data_dir: DataDir = None,
    split: Split = "test",
    out: Path = typer.Option(
        Path("expansions"), "--out", "-o", help="Writes OUT/<task>/<method>/<llm>/query_with_hydoc.jsonl."
    ),
    llm_name: str | None = typer.Option(
        None, "--llm-name", "--name", help="Folder name for the LLM (default: from --model)."
    ),
    base_url: BaseUrl = None,
    api_key: ApiKey = None,
    # not given: the LLM client's defaults (infra/llm_defaults.py), the job's timeout (jobs/expand.py's TIMEOUT)
    concurrency: int | None = typer.Option(
        None, "--concurrency", parser=as_given, help=f"Requests in flight at once (default: {CONCURRENCY})."
    ),
    timeout: float | None = typer.Option(
        None,
        "--timeout",
        parser=as_given,
        help="Seconds before a request is retried (default: expand's own, for answers that take minutes).",
    ),
    max_retries: int | None = typer.Option(
        None, "--max-retries", parser=as_given, help=f"Retries per request, 429/5xx/timeouts (default: {MAX_RETRIES})."
    ),
    sampling: str | None = typer.Option(
        None,
        "--sampling",
        help="Paper defaults: 'api' (temperature 0.8, top_p 0.8) or 'open' "
        "(temperature 0.7, seed 42, max_tokens 10240). Default: api for "
        "OpenAI, open with --base-url.",
    ),
    temperature: float | None = typer.Option(
        None, "--temperature", parser=as_given, help="Override the sampling temperature."
    ),
    top_p: float | None = typer.Option(None, "--top-p", parser=as_given, help="Override top_p."),
    max_tokens: int | None = typer.Option(None, "--max-tokens", parser=as_given, help="Override max_tokens."),
    seed: int | None = typer.Option(None, "--seed", parser=as_given, help="Override the sampling seed."),
    prompt_task: str | None = typer.Option(
        None, "--prompt-task", help="Use this task's prompt (for collections not named after a task)."
    ),
    prompt_file: Path | None = typer.Option(
        None,
        "--prompt-file",
        help="Your prompt template instead of the paper's: {query}, and "
        "{passages} for LameR-style prompts (top-10 BM25 passages).",
    ),
    retriever: str = typer.Option("bm25", "--retriever", "-r", help="Agentic methods: the index searched."),
    retrieval_url: str | None = typer.Option(
        None,
        "--retrieval-url",
        help="Agentic methods: search this running server (r2med serve, or any Search-R1-shaped one) instead of "
        "an index built here.",
    ),
    max_turns: int = typer.Option(4, "--max-turns", parser=as_given, help="Agentic methods: LLM turns per query."),
    search_k: int = typer.Option(
        3, "--search-k", parser=as_given, help="Agentic methods: passages returned per search."
    ),
    search_tags: str | None = typer.Option(
        None, "--search-tags", help="Agentic: OPEN,CLOSE tags of a search request (default: the protocol's)."
    ),
    result_tags: str | None = typer.Option(None, "--result-tags", help="Agentic: OPEN,CLOSE tags around results."),
    answer_tags: str | None = typer.Option(None, "--answer-tags", help="Agentic: OPEN,CLOSE tags of the answer."),
    revision: Revision = None,
    no_cache: NoCache = False,
    wide: Wide = False,
) -> None:
    """Generate expansions for each task's queries; re-runs are free (cache) and interrupted runs resume."""
    from ..data import check_hub, resolve
    from ..expansion_name import ExpansionName
    from ..jobs.expand import expand_tasks
    from ..steps import ExpandStep, flat
    from ..typed.parse import Origin

    if logging.getLogger().level > logging.DEBUG:  # one line per HTTP request is noise next to the progress
        for noisy in ("httpx2", "httpx", "openai"):
            logging.getLogger(noisy).setLevel(logging.WARNING)
    step: ExpandStep = flat(
        {
            "method": method,
            "model": model,
            "out": out,
            "llm_name": llm_name,
            "base_url": base_url,
            "api_key": api_key,
            "concurrency": concurrency,
            "timeout": timeout,
            "max_retries": max_retries,
            "sampling": sampling,
            "temperature": temperature,
            "top_p": top_p,
            "max_tokens": max_tokens,
            "seed": seed,
            "prompt_task": prompt_task,
            "retriever": retriever,
            "retrieval_url": retrieval_url,
            "max_turns": max_turns,
            "search_k": search_k,
            "search_tags": search_tags,
            "result_tags": result_tags,
            "answer_tags": answer_tags,
            "cache": not no_cache,
            "prompt_file": prompt_file,
            "tasks": tasks,
            "data_dir": data_dir,
            "revision": revision,
            "split": split,
            "strict": strict_data(ctx),
        },
        ExpandStep,
        Origin.cli(),
    )
    data = step.data
    method, llm, done = expand_tasks(
        step, check_hub(resolve(data.task_text, data.data_dir, data.revision, data.split, strict=data.strict))
    )

    def layout(with_path: bool) -> Table:
        table = Table(title=escape(f"{method} expansions by {model}"))
        columns = ("task", "queries", "requests", "cached", "retries", "tokens in/out")
        for col in columns + (("file",) if with_path else ()):
            table.add_column(col, justify="left" if col in ("task", "file") else "right", no_wrap=True)
        for d in done:
            u = d.usage
            table.add_row(
                escape(d.task),
                str(d.queries),
                str(u["requests"]),
                str(u["cache_hits"]),
                str(u["retries"]),
                f"{u['prompt_tokens']:,}/{u['completion_tokens']:,}",
                *((escape(str(d.path)),) if with_path else ()),
            )
        return table

    print_with_paths(layout, [(d.task, str(d.path)) for d in done], "file", wide=wide)
    print_next(
        "evaluate with:",
        "r2med",
        "evaluate",
        "--expansion",
        ExpansionName(method, llm).text,
        "--expansion-dir",
        out,
        "--tasks",  # the tasks expanded: without it evaluate runs R2MED's 8, whatever was expanded
        ",".join(d.task for d in done),
        *(("--data-dir", data_dir) if data_dir else ()),
        *(("--split", split) if split != "test" else ()),
    )
