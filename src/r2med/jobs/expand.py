"""``r2med expand``: generate query expansions with any OpenAI-compatible LLM, task by task (cached, resumable).

Writes ``OUT/<task>/<method>/<llm>/query_with_hydoc.jsonl`` (R2MED's layout) once every query of a
task has its expansion, with ``llm.json`` naming the model (so two models whose names give one folder -- ``org1/qwen``
and ``org2/Qwen`` -- are an error, never one replacing the other: :func:`check_llm_folder`);
``r2med evaluate --expansion METHOD:LLM --expansion-dir OUT`` scores it.
HyDE / Query2doc / LameR are one request per query (:mod:`r2med.expansion.generate`); Search-R1 /
Search-O1 search the task's own index in a loop (:mod:`r2med.expansion.agentic`).  Every answer is
cached by :class:`r2med.infra.llm.LLMClient`, so a re-run sends no request and an interrupted one resumes.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import secrets
from collections import ChainMap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ..data import Collection, TaskRef
from ..data.loaders import EXPANSION_FILE
from ..errors import R2MedError, shown
from ..expansion.agentic import AgenticExpander, get_protocol
from ..expansion.combine import AGENTIC, check_method
from ..expansion.generate import generate_expansions, paper_sampling, read_prompt_file, write_expansion_file
from ..expansion.generate import prompt_task as resolve_prompt
from ..expansion.traces import normalize_llm
from ..infra import progress
from ..infra.containment import check_output_dir, ensure_within, plain_name, task_folder
from ..infra.home import check_home, read_json, write_text_atomic
from ..infra.json_shapes import as_object
from ..infra.json_types import JsonObject, JsonValue
from ..infra.llm import LLMClient, Result
from ..retrieval.base import Retriever, index_collection
from ..retrieval.registry import make_retriever
from ..serve.client import RemoteRetriever
from ..steps import ExpandStep

if TYPE_CHECKING:
    from ..expansion.agentic import TagFormat


class Bar(Protocol):
    """What the job reports to a progress display while one task's expansions are made."""

    def result(self, key: str, result: Result | bool) -> None: ...  # one query done (an LLM Result, or a flag)

    def retry(self, error: str) -> None: ...

    def describe(self, text: str) -> None: ...


class RequestBar:
    """One task's expansion requests on :mod:`r2med.infra.progress`: queries done, failed, retried, retrying now
    (requests between a transient error and their answer), tokens so far."""

    def __init__(self, task: progress.Progress, client: LLMClient):
        self.task, self.client = task, client

    def _tokens(self) -> None:
        u = self.client.usage
        self.task.set(**{"retrying": u.retrying, "tokens in": u.prompt_tokens, "tokens out": u.completion_tokens})

    def result(self, _key: str, result: Result | bool) -> None:
        ok = result if isinstance(result, bool) else result.ok
        self.task.advance(1, failed=0 if ok else 1)
        self._tokens()

    def retry(self, _error: str) -> None:
        self.task.count(retried=1)
        self.task.set(retrying=self.client.usage.retrying)  # requests waiting to be sent again right now

    def describe(self, text: str) -> None:
        self.task.describe(text)


@dataclass
class Expanded:
    """One task's expansions: where they were written and what they cost."""

    task: str
    queries: int
    path: Path
    usage: dict[str, int]  # requests, cache_hits, retries, prompt_tokens, completion_tokens... of this task


#: The request timeout (seconds) when ``--timeout`` is not given: a long expansion takes minutes to write.
TIMEOUT = 300.0
#: Beside an expansion file made with ``--prompt-file``: the prompt's file, sha256 and text.
PROMPT_RECORD = "prompt.json"
#: Beside every expansion file ``expand`` writes: the ``--model`` whose answers it holds.
LLM_RECORD = "llm.json"


def check_llm_folder(folder: Path, model: str) -> None:
    """``OUT/<task>/<method>/<llm>`` free for the answers of ``model``, else a one-line error: it holds another
    model's expansions (``--model org1/qwen`` and ``--model org2/Qwen`` both name ``qwen``), or a folder beside it
    differs from it only in case (one folder on a case-insensitive filesystem).  An expansion file without a
    record (made before r2med kept one) is replaced with a warning."""

    parent = folder.parent
    if parent.is_dir():
        for entry in parent.iterdir():
            if entry.name != folder.name and entry.name.casefold() == folder.name.casefold():
                raise R2MedError(
                    f"{folder}: {parent / entry.name} differs from it only in case, and on a case-insensitive "
                    "filesystem the two are one folder; pass --llm-name to name this LLM apart"
                )
    record = folder / LLM_RECORD
    if record.exists() or record.is_symlink():
        try:
            if record.is_symlink() or not record.is_file():
                raise ValueError("not a file")
            # the one JSON reader: malformed, nested too deeply or not an object: ValueError
            recorded = as_object(read_json(record))["model"]
        except (OSError, ValueError, KeyError, TypeError):
            raise R2MedError(
                f"{record}: unreadable, so whose expansions {folder} holds is unknown; remove the folder or "
                "pass --llm-name to write elsewhere"
            ) from None
        if recorded != model and not (folder / EXPANSION_FILE).exists():
            raise R2MedError(
                f"{folder} is claimed by --model {shown(recorded)} (a run of it in progress, or one that stopped "
                f"before writing its expansions); those of --model {shown(model)} would replace them: pass "
                f"--llm-name to name this one apart, or remove {record} if no such run is going on"
            )
        if recorded != model:
            raise R2MedError(
                f"{folder} holds the expansions of --model {shown(recorded)}; those of --model {shown(model)} "
                f"would replace them (both name the folder {folder.name!r}): pass --llm-name to name this one apart"
            )
    elif (folder / EXPANSION_FILE).exists():
        logging.getLogger(__name__).warning(
            "%s holds expansions made before r2med recorded their model (%s); those of %s replace them",
            folder,
            LLM_RECORD,
            model,
        )


def claim_llm_folder(folder: Path, model: str) -> bool:
    """Claim ``OUT/<task>/<method>/<llm>`` for ``model`` before any request: its ``llm.json`` is created naming the
    model, atomically and only where none is, so of two runs of other models into one folder at once the second
    is refused (:func:`check_llm_folder`), where both used to pass the check and the later writer replaced the
    other's expansions.  True when this call made the claim (the caller drops it if it writes nothing)."""

    folder.mkdir(parents=True, exist_ok=True)
    record = folder / LLM_RECORD
    tmp = folder / f".{LLM_RECORD}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    try:
        tmp.write_text(json.dumps({"model": model}, ensure_ascii=False) + "\n", encoding="utf-8")
        try:
            os.link(tmp, record)  # create-if-absent, with its whole content
            return True
        except FileExistsError:
            check_llm_folder(folder, model)  # another run's claim: refused unless it is this model's
            return False
    finally:
        tmp.unlink(missing_ok=True)


def _remove_empty(folder: Path, top: Path) -> None:
    """``folder`` and its parents up to ``top`` (the first this run made), where they are empty."""
    for path in (folder, *folder.parents):
        with contextlib.suppress(OSError):
            path.rmdir()
        if path == top or not path.is_relative_to(top):
            return


def llm_folder_name(model: str) -> str:
    """A folder name for a model id: ``Qwen/Qwen2.5-7B-Instruct`` -> ``qwen2.5-7b-instruct``."""
    tail = model.rstrip("/").rsplit("/", 1)[-1]
    return re.sub(r"[^a-z0-9.]+", "-", tail.lower()).strip("-") or "llm"


def check_llm_name(name: str) -> str:
    """``--llm-name`` as given, if it is a plain name in the folder form ``--expansion METHOD:LLM`` reads back.

    Refused, never rewritten: a separator, whitespace or control character
    (:func:`~r2med.infra.containment.plain_name`), and upper case or ``_``, which ``--expansion`` would read as
    another folder; so two different names never write one folder.
    """
    plain_name(name, "--llm-name", run_name=True)
    folder = normalize_llm(name)
    if folder != name:
        raise R2MedError(
            f"--llm-name {shown(name)} is not in folder form (lower case, '-' for '_'); "
            f"--expansion METHOD:LLM reads it as {shown(folder)}: pass --llm-name {shown(folder)}"
        )
    return name


def agentic_tags(
    method: str, search: str | None = None, result: str | None = None, answer: str | None = None
) -> TagFormat:
    """The tag format of an agentic method, with ``OPEN,CLOSE`` overrides (``--search-tags`` ...)."""
    overrides: dict[str, str] = {}
    for kind, value in (("search", search), ("result", result), ("answer", answer)):
        if value is None:
            continue
        parts = value.split(",")
        if len(parts) != 2 or not all(p.strip() for p in parts):
            raise R2MedError(f"--{kind}-tags wants OPEN,CLOSE (e.g. '<search>,</search>'), got {value!r}")
        overrides[f"{kind}_open"], overrides[f"{kind}_close"] = (p.strip() for p in parts)
    return get_protocol(method, **overrides)


def _agentic(
    collection: Collection,
    method: str,
    client: LLMClient,
    sampling: Mapping[str, JsonValue],
    retriever_name: str,
    max_turns: int,
    search_k: int,
    bar: Bar,
    tags: TagFormat,
    retrieval_url: str | None = None,
) -> tuple[dict[str, str], dict[str, str], dict[str, JsonObject]]:
    """The agentic loop over the task's own index, or a running server's (``retrieval_url``: its texts shown);
    returns the answers, the errors and each query's trace (the searches, turns, how it stopped)."""

    retriever: Retriever | RemoteRetriever
    corpus: Mapping[str, str] = collection.corpus
    if retrieval_url is not None:
        retriever = remote = RemoteRetriever(retrieval_url)
        corpus = ChainMap(remote.texts, collection.corpus)  # the server's texts first; corpus order for ties
    else:
        retriever = make_retriever(retriever_name, task=collection.name)
        index_collection(retriever, collection)
    agent = AgenticExpander(
        client, retriever, corpus, tags=tags, max_turns=max_turns, top_k=search_k, sampling=sampling
    )

    def on_turn(turn: int, searching: int) -> None:
        bar.describe(f"{method} · {collection.name} · turn {turn}: {searching} searching")

    traces = agent.run(collection.queries, on_turn=on_turn, on_retry=bar.retry)
    texts: dict[str, str] = {}
    errors: dict[str, str] = {}
    extra: dict[str, JsonObject] = {}
    for qid, trace in traces.items():
        bar.result(qid, trace.error is None)
        if trace.error is not None:
            errors[qid] = trace.error
        else:
            texts[qid] = trace.answer
            extra[qid] = {
                "searches": [[q, list[JsonValue](docs)] for q, docs in trace.searches],  # JSON lists hold any value
                "turns": trace.turns,
                "stopped": trace.stopped,
            }
    return texts, errors, extra


def expand_tasks(step: ExpandStep, tasks: Sequence[TaskRef]) -> tuple[str, str, list[Expanded]]:
    """Expand every query of every task as ``step`` says; returns the method (normalised), the LLM's folder name
    and one :class:`Expanded` per task.

    Everything that can be checked is checked before the first request: the method, the sampling
    preset, the output folder, the prompts of the tasks (generative methods), the agentic tags.
    A task with failed requests is an error after the others finished (answers so far stay cached).
    ``prompt_file``: a template of the user's instead of the paper's prompts (generative methods); its text
    and sha256 are recorded in ``prompt.json`` beside each expansion file, and each record names the sha256.
    """
    endpoint = step.llm
    (method, model, out, llm_name, sampling, prompt_file, prompt_task) = (
        step.method,
        endpoint.model,
        step.out,
        step.llm_name,
        step.sampling,
        step.prompt_file,
        step.prompt_task,
    )

    method = check_method(method)
    if sampling is not None and sampling not in ("api", "open"):
        raise R2MedError(f"--sampling must be 'api' or 'open', got {sampling!r}")
    llm = check_llm_name(llm_name) if llm_name is not None else llm_folder_name(model)
    check_output_dir(out)
    for ref in tasks:  # before any request: every task's folders below --out (a link there: one line), and no
        # other model's expansions are replaced
        ensure_within(out, task_folder(out, ref.name) / method / llm / EXPANSION_FILE)
        check_llm_folder(task_folder(out, ref.name) / method / llm, model)
    if endpoint.cache:
        check_home()
    agentic = method in AGENTIC
    if step.retrieval_url is not None and not agentic:
        raise R2MedError(f"--retrieval-url goes with an agentic method (search-r1, search-o1), not {method}")
    tags = agentic_tags(method, step.search_tags, step.result_tags, step.answer_tags) if agentic else None
    template = None
    if prompt_file is not None:
        if agentic:
            raise R2MedError(f"--prompt-file applies to hyde, query2doc and lamer, not {method}")
        template = read_prompt_file(prompt_file)
    elif not agentic:
        for ref in tasks:  # fail before any request when a prompt is missing
            resolve_prompt(ref.name, prompt_task)
    params = paper_sampling(
        api=(sampling or ("api" if endpoint.base_url is None else "open")) == "api",
        temperature=endpoint.temperature,
        top_p=endpoint.top_p,
        max_tokens=endpoint.max_tokens,
        seed=endpoint.seed,
    )
    client = endpoint.client(TIMEOUT)
    done = []
    claimed: list[
        tuple[Path, Path | None]
    ] = []  # (folder, the first folder made for it): dropped if nothing is written
    try:
        for ref in tasks:
            folder = task_folder(out, ref.name) / method / llm
            made = next((p for p in (*reversed(folder.parents), folder) if not p.exists()), None)
            if claim_llm_folder(folder, model):
                claimed.append((folder, made))
        for ref in tasks:
            collection = ref.load()
            before = client.usage.as_dict()
            path = ensure_within(out, task_folder(out, collection.name) / method / llm / EXPANSION_FILE)
            check_llm_folder(path.parent, model)
            with progress.task(
                f"{method} · {collection.name}",
                total=len(collection.queries),
                unit="queries",
                counters=("failed", "retried", "retrying", "tokens in", "tokens out"),
            ) as task:
                bar = RequestBar(task, client)
                if tags is not None:  # an agentic method
                    texts, errors, extra = _agentic(
                        collection,
                        method,
                        client,
                        params,
                        step.retriever,
                        step.max_turns,
                        step.search_k,
                        bar,
                        tags,
                        step.retrieval_url,
                    )
                else:
                    res = generate_expansions(
                        collection,
                        method,
                        client,
                        params,
                        task=prompt_task,
                        on_result=bar.result,
                        on_retry=bar.retry,
                        prompt_file=template,
                    )
                    texts, errors, extra = res.texts, res.errors, {}
                    if template is not None:
                        extra = {qid: {"prompt_sha256": template.sha256} for qid in texts}
            if errors:
                first = next(iter(errors.items()))
                raise R2MedError(
                    f"{collection.name}: {len(errors)} of {len(collection.queries)} requests failed "
                    f"(query {first[0]}: {first[1]}); answers so far are cached: re-run to resume"
                )
            write_expansion_file(path, collection, texts, extra)

            write_text_atomic(path.parent / LLM_RECORD, json.dumps({"model": model}, ensure_ascii=False) + "\n")
            prompt_record = path.parent / PROMPT_RECORD
            if template is not None:
                write_text_atomic(prompt_record, json.dumps(template.record(), indent=1) + "\n")
            elif prompt_record.exists():  # the paper's prompts now: an older record of another prompt goes
                prompt_record.unlink()
            now = client.usage.as_dict()
            done.append(Expanded(collection.name, len(collection.queries), path, {k: now[k] - before[k] for k in now}))
    finally:
        client.close()
        for folder, made in claimed:
            if not (folder / EXPANSION_FILE).exists():
                (folder / LLM_RECORD).unlink(missing_ok=True)
                if made is not None:
                    _remove_empty(folder, made)
    return method, llm, done
