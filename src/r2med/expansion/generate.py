"""Live query expansion: HyDE, Query2doc and LameR with the paper's prompts, through :mod:`r2med.infra.llm`.

Prompts come from ``r2med.protocol.protocol()["generation_prompts"][method][task]`` (the
Query2doc prompts carry their few-shot examples), sent as the paper does: a system message
``"You are a helpful assistant."`` and the prompt as the user message.  LameR's prompt
lists the top-10 passages of the paper's BM25 for the query, each with newlines replaced
by spaces, cut to 512 whitespace tokens and numbered ``"\\n[i]. text"``.

Sampling defaults are the paper's: API models ``temperature=0.8, top_p=0.8``; open models
served by vLLM ``temperature=0.7, seed=42, max_tokens=10240``.

Every answer goes through the client's on-disk cache, so a re-run costs no request and an
interrupted run resumes; :func:`write_expansion_file` writes the R2MED layout atomically.
"""

from __future__ import annotations

import hashlib
import json
import logging
import string
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..data.collection import Collection
from ..errors import R2MedError
from ..infra.containment import check_input_file
from ..infra.home import write_text_atomic
from ..infra.input_files import read_input
from ..infra.json_types import JsonObject, JsonValue
from ..protocol import models, protocol
from ..retrieval.base import Retriever, index_collection
from ..retrieval.bm25 import BM25
from ..runs.run import ranked

if TYPE_CHECKING:
    from ..infra.llm import LLMClient, Result

log = logging.getLogger(__name__)

GENERATIVE = ("hyde", "query2doc", "lamer")
SYSTEM_PROMPT = "You are a helpful assistant."
PAPER_SAMPLING: dict[str, JsonObject] = {
    "api": {"temperature": 0.8, "top_p": 0.8},
    "open": {"temperature": 0.7, "seed": 42, "max_tokens": 10240},
}
LAMER_K = 10
LAMER_WORDS = 512


def system_prompt() -> str:
    prompt: str = models().get("generation", {}).get("system_prompt", SYSTEM_PROMPT)
    return prompt


def prompt_task(name: str, override: str | None = None) -> str:
    """The protocol's prompt key for a collection: its task name, or ``override`` (``--prompt-task``)."""
    prompts: dict[str, str] = protocol()["generation_prompts"]["hyde"]
    lowered = {k.lower(): k for k in prompts}
    if override:
        if override.lower() not in lowered:
            raise R2MedError(f"unknown --prompt-task {override!r}; choose from: {', '.join(prompts)}")
        return lowered[override.lower()]
    if name.lower() in lowered:
        return lowered[name.lower()]
    raise R2MedError(
        f"no generation prompt for collection {name!r}; pass --prompt-task with one of: {', '.join(prompts)}"
    )


def prompt_template(method: str, task: str) -> str:
    prompts: dict[str, dict[str, str]] = protocol()["generation_prompts"]
    if method not in prompts:
        raise R2MedError(f"no generation prompts for method {method!r}; choose from: {', '.join(prompts)}")
    return prompts[method][task]


def cut_words(text: str, limit: int = LAMER_WORDS) -> str:
    return " ".join(text.split()[:limit])


def lamer_passages(
    collection: Collection, k: int = LAMER_K, words: int = LAMER_WORDS, retriever: Retriever | None = None
) -> dict[str, str]:
    """The ``{PASSAGE}`` block per query: top-``k`` paper-BM25 docs, flattened, cut and numbered.

    Docs tied in score keep corpus order, as in the paper's top-k files (a stable sort over the
    corpus, ``src/eval_BM25.py`` ``save_topk_docs``, read by ``src/generate_hypothetical_doc.py``).
    """
    if retriever is None:
        retriever = BM25(flavour="paper")  # the paper's k1 and b: Bm25Options' defaults

        index_collection(retriever, collection)
    run = retriever.search(collection.queries, k=k)
    position = {did: i for i, did in enumerate(collection.corpus)}
    out = {}
    for qid in collection.queries:
        top = ranked(run.get(qid, {}), position)[:k]
        out[qid] = "".join(
            f"\n[{i + 1}]. {cut_words(collection.corpus[did].replace(chr(10), ' '), words)}"
            for i, (did, _) in enumerate(top)
        )
    return out


#: The placeholders a prompt file (``r2med expand --prompt-file``) may hold; ``{query}`` is required.
PROMPT_FIELDS = ("query", "passages")
#: The most placeholders a prompt file may hold: each repeats the query (or its passages) in every prompt sent.
MAX_PLACEHOLDERS = 100


@dataclass(frozen=True)
class PromptFile:
    """A prompt template of the user's (``--prompt-file``): ``{query}``, and ``{passages}`` (LameR-style: the
    query's top-10 paper-BM25 passages, numbered as LameR's); literal braces are written ``{{`` and ``}}``.
    Only plain placeholders: a conversion (``{query!r}``) or a format spec (``{query:>3000000000}``, ``{query:d}``,
    ``{query:{query}}``) is refused when the file is read, before any request."""

    path: Path
    text: str
    sha256: str

    @property
    def wants_passages(self) -> bool:
        return "passages" in _fields(self.text, self.path)

    def fill(self, query: str, passages: str | None = None) -> str:
        return self.text.format(query=query, passages=passages or "")

    def record(self) -> dict[str, str]:
        """What the expansion's sidecar and a result's configuration record about it."""
        return {"file": str(self.path), "sha256": self.sha256, "text": self.text}


def _fields(text: str, path: Path) -> set[str]:
    try:
        fields = [(name, spec, conv) for _, name, spec, conv in string.Formatter().parse(text) if name is not None]
    except ValueError as exc:
        raise R2MedError(f"{path}: not a prompt template ({exc}; write literal braces as {{{{ and }}}})") from None
    for name, spec, conv in fields:
        if name not in PROMPT_FIELDS:
            raise R2MedError(
                f"{path}: unknown placeholder {name_of(name, spec, conv)} (a prompt file may use {{query}} and "
                "{passages}; literal braces are written {{ and }})"
            )
        if spec or conv:  # `{query:>3000000000}` would pad every prompt to 3 GB; `{query!r}` quotes it
            raise R2MedError(
                f"{path}: placeholder {name_of(name, spec, conv)} has a "
                + ("conversion" if conv else "format spec")
                + " (only plain {query} and {passages} are filled; literal braces are written {{ and }})"
            )
    if len(fields) > MAX_PLACEHOLDERS:  # each one repeats a query (or 10 passages) in every prompt sent
        raise R2MedError(
            f"{path}: {len(fields):,} placeholders; a prompt file may hold at most {MAX_PLACEHOLDERS} (each "
            "repeats the query or its passages in every prompt sent)"
        )
    return {name for name, _, _ in fields}


def name_of(name: str, spec: str | None, conv: str | None) -> str:
    """A placeholder as it was written (``{query!r:>9}``), for messages (cut to 80 characters)."""
    text = "{" + name + (f"!{conv}" if conv else "") + (f":{spec}" if spec else "") + "}"
    text = text if len(text) <= 80 else text[:77] + "...}"
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in text)


def read_prompt_file(path: str | Path) -> PromptFile:
    """A prompt file, checked: UTF-8 text, only ``{query}`` / ``{passages}`` placeholders, ``{query}`` present."""

    path = check_input_file(Path(path), "--prompt-file")

    try:
        text = read_input(path).decode("utf-8")  # a stream given on purpose: read once, bounded
    except UnicodeDecodeError as exc:
        raise R2MedError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise R2MedError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    if "query" not in _fields(text, path):
        raise R2MedError(f"{path}: the prompt has no {{query}} placeholder (where each query's text goes)")
    return PromptFile(Path(path).resolve(), text, hashlib.sha256(text.encode("utf-8")).hexdigest())


def expansion_messages(
    method: str,
    task: str,
    query: str,
    passages: str | None = None,
    system: str | None = None,
    prompt_file: PromptFile | None = None,
) -> list[dict[str, str]]:
    """The chat messages the paper sends for one query (``prompt_file``: the user's template instead)."""
    if prompt_file is not None:
        return [
            {"role": "system", "content": system or system_prompt()},
            {"role": "user", "content": prompt_file.fill(query, passages)},
        ]
    prompt = prompt_template(method, task).replace("{TEXT}", query)
    if method == "lamer":
        if passages is None:
            raise R2MedError("LameR needs the retrieved passages for each query")
        prompt = prompt.replace("{PASSAGE}", passages)
    return [{"role": "system", "content": system or system_prompt()}, {"role": "user", "content": prompt}]


def paper_sampling(api: bool, **overrides: float | int | None) -> JsonObject:
    """The paper's sampling settings (``api``: OpenAI-style model, else open model on vLLM) plus overrides (the
    request's numbers: ``temperature``, ``top_p``, ``max_tokens``, ``seed``; None: the paper's)."""
    base = dict(PAPER_SAMPLING["api" if api else "open"])
    base.update({k: v for k, v in overrides.items() if v is not None})
    return base


@dataclass
class GenerationResult:
    texts: dict[str, str] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        return not self.errors


def generate_expansions(
    collection: Collection,
    method: str,
    client: LLMClient,
    sampling: Mapping[str, JsonValue],
    task: str | None = None,
    on_result: Callable[[str, Result], None] | None = None,
    on_retry: Callable[[str], None] | None = None,
    prompt_file: PromptFile | None = None,
) -> GenerationResult:
    """One expansion per query of ``collection`` (cached requests are free); ``prompt_file``: the user's
    template instead of the paper's prompt (its ``{passages}``, when present, are LameR's)."""
    if method not in GENERATIVE:
        raise R2MedError(
            f"live generation supports {', '.join(GENERATIVE)}; {method!r} is agentic (see r2med.expansion.agentic)"
        )
    key = prompt_task(collection.name, task) if prompt_file is None else ""
    qids = list(collection.queries)
    wants = prompt_file.wants_passages if prompt_file is not None else method == "lamer"
    passages = lamer_passages(collection) if wants else {}
    batch = [
        expansion_messages(method, key, collection.queries[q], passages.get(q), prompt_file=prompt_file) for q in qids
    ]
    results = client.chat_many(
        batch,
        on_result=(lambda i, r: on_result(qids[i], r)) if on_result else None,
        on_retry=on_retry,
        **dict(sampling),
    )
    out = GenerationResult()
    for qid, res in zip(qids, results):
        if res.ok and res.text is not None:  # ``ok`` holds a text
            out.texts[qid] = res.text
        else:
            out.errors[qid] = res.error or "failed"
    return out


def write_expansion_file(
    path: str | Path,
    collection: Collection,
    texts: Mapping[str, str],
    extra: Mapping[str, Mapping[str, JsonValue]] | None = None,
) -> Path:
    """Write ``query_with_hydoc.jsonl`` (``id``, ``text``, ``hy_doc``, ``doc_id`` when known) atomically."""
    missing = [q for q in collection.queries if q not in texts]
    if missing:
        raise R2MedError(f"refusing to write {path}: {len(missing)} queries have no expansion")
    lines = []
    for qid, text in collection.queries.items():
        record: JsonObject = {"id": qid, "text": text, "hy_doc": texts[qid]}
        meta = collection.query_meta.get(qid, {})
        if "doc_id" in meta:
            record["doc_id"] = meta["doc_id"]
        record.update((extra or {}).get(qid, {}))
        lines.append(json.dumps(record, ensure_ascii=False))
    path = Path(path)
    write_text_atomic(path, "\n".join(lines) + "\n")
    return path
