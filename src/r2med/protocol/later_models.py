"""Protocol data of the systems published on R2MED after the paper (``later_models.json``), typed access.

``later_models.json`` holds, per later retriever and reranker, the settings behind its published
figure with the source of each one (``repo path@commit:line``), what could not be found
(``gaps``) and the published CSV row it reproduces.  This module reads it; the presets built from
it (the embedders: ``r2med.retrieval.later_presets``; the rerankers: ``r2med.reranking.qwen3``,
``r2med.reranking.reasonrank``) ask it for their settings, prompts and provenance.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import cache
from importlib import resources
from typing import TypedDict

from ..errors import R2MedError
from ..infra.json_shapes import json_object
from ..infra.json_types import JsonObject
from ..infra.records import refuse_unknown_keys

# The shape of ``later_models.json`` (r2med's own package data, checked by the tests).


class Published(TypedDict, total=False):
    """The published row an entry's settings reproduce (None where a field is not published)."""

    setting: str | None
    retriever: str
    expansion: str | None
    llm: str
    average: float | None
    source: str
    first_stage: str
    #: the first-stage run it reranked: where it is and what it is (its own record: open)
    first_stage_run: JsonObject
    #: the same model's figures published elsewhere (their own record: open)
    elsewhere: JsonObject


class RetrieverSettings(TypedDict, total=False):
    """How a later retriever's published code ran it (each with its source in ``sources``)."""

    hub_id: str
    revision: str | None
    loader: str
    upstream_runner: str
    trust_remote_code: bool
    pooling: str
    padding_side: str
    normalize: bool
    similarity: str
    query_max_length: int
    doc_max_length: int
    truncation: str
    dtype: str
    dtype_detail: str
    query_template: str
    query_instructions: str
    doc_template: str
    doc_text: str
    append_eos: bool
    eos: str
    batch_size: int
    search_top_k: int


class RerankerSettings(TypedDict, total=False):
    """How a later reranker's published code ran it (each with its source in ``sources``)."""

    hub_id: str
    revision: str | None
    served_as: str
    prompt_mode: str
    #: the prompt's parts (system, user_prefix, after_prefix, passage_line, user_post)
    prompt: dict[str, str]
    prompt_rendering: str
    query_preprocessing: str
    passage_preprocessing: str
    passage_max_tokens: int
    window_size: int
    step: int
    rerank_depth: int
    num_passes: int
    shuffle_candidates: bool
    window_loop: str
    temperature: float
    max_tokens: int
    max_tokens_detail: str
    context_size: int
    answer_pattern: str
    parsing: list[str]
    first_stage: str
    loader: str
    prefix: str
    pair_template: str
    suffix: str
    default_instruction: str
    max_length: int
    input_ids: str
    padding_side: str
    yes_token: str
    no_token: str
    expected_token_ids: dict[str, int]
    score: str
    dtype: str
    dtype_detail: str
    batch_size: int


class LaterEncoder(TypedDict, total=False):
    """How r2med's encoders run a later retriever (its preset's fields, the similarity, the instructions)."""

    loader: str
    pooling: str
    normalize: bool
    max_length: int
    query_max_length: int
    dtype: str
    cpu_dtype: str
    append_eos: bool
    trust_remote_code: bool
    query_instruction_template: str
    doc_instruction: str
    similarity: str
    batch_size: int
    #: the tokens around each text (:class:`r2med.retrieval.encoders.framing.FramingRecord`'s data)
    framing: JsonObject
    #: the encoder's own settings (open per encoder)
    extra: JsonObject


class LaterEntry(TypedDict, total=False):
    """What every entry holds: its name, size, the settings' sources, gaps and notes (and a published row)."""

    display_name: str
    parameters: str
    sources: dict[str, str]
    gaps: list[str]
    notes: str


class LaterReranker(LaterEntry, total=False):
    """A ``rerankers`` entry of ``later_models.json``."""

    kind: str
    #: None: no figure published on R2MED
    published: Published | None
    settings: RerankerSettings
    variants_seen: list[str]


class LaterRetriever(LaterEntry, total=False):
    """A ``retrievers`` entry of ``later_models.json``; ``r2med_encoder``: how r2med's encoders run it (read by
    :mod:`r2med.retrieval.later_presets` through its preset schema)."""

    published: Published
    settings: RetrieverSettings
    r2med_encoder: LaterEncoder
    architecture: str
    assumed: bool
    default_choice: str
    family: str
    reference_only: dict[str, str]
    revision_reference_only: dict[str, str]


class LaterModels(TypedDict):
    """``later_models.json``: the R2MED tasks, query instructions per task (per instruction set), the entries."""

    _source: str
    tasks: list[str]
    query_instructions: dict[str, dict[str, str]]
    retrievers: dict[str, LaterRetriever]
    rerankers: dict[str, LaterReranker]


@cache
def later_models() -> LaterModels:
    text = resources.files(__package__).joinpath("later_models.json").read_text(encoding="utf-8")
    data: LaterModels = json.loads(text)
    return data


#: The keys an entry of ``later_models.json`` may hold (what r2med reads, and the documentation it carries).
_COMMON_KEYS = ("display_name", "gaps", "notes", "parameters", "published", "settings", "sources")
RERANKER_KEYS: tuple[str, ...] = (*_COMMON_KEYS, "kind", "variants_seen")
RETRIEVER_KEYS: tuple[str, ...] = (
    *_COMMON_KEYS,
    "architecture",
    "assumed",
    "default_choice",
    "family",
    "r2med_encoder",
    "reference_only",
    "revision_reference_only",
)


def later_reranker(name: str) -> LaterReranker:
    """The ``rerankers`` entry of ``name`` (e.g. ``reasonrank-32b``, ``qwen3-reranker-0.6b``)."""
    entries = later_models()["rerankers"]
    if name not in entries:
        raise R2MedError(f"no later-work reranker {name!r}; known: {', '.join(entries)}")
    entry = entries[name]
    refuse_unknown_keys(entry, RERANKER_KEYS, f"later_models.json: reranker {name!r}")
    return entry


def later_retriever(name: str) -> LaterRetriever:
    """The ``retrievers`` entry of ``name`` (e.g. ``reasonembed-qwen3-8b``)."""
    entries = later_models()["retrievers"]
    if name not in entries:
        raise R2MedError(f"no later-work retriever {name!r}; known: {', '.join(entries)}")
    entry = entries[name]
    refuse_unknown_keys(entry, RETRIEVER_KEYS, f"later_models.json: retriever {name!r}")
    return entry


def query_instruction(name: str, task: str) -> str:
    """The query prefix of retriever ``name`` for hub task ``task``: its template with the task's instruction."""
    entry = later_retriever(name)
    table = later_models()["query_instructions"][entry["settings"]["query_instructions"]]
    if task not in table:
        raise R2MedError(f"{name} has instructions for the R2MED tasks only, not {task!r}")
    template: str = entry["r2med_encoder"]["query_instruction_template"]
    return template.format(instruction=table[task])


def query_instructions(name: str) -> dict[str, str]:
    """Hub task -> the query prefix of retriever ``name`` on that task (:func:`query_instruction` per task)."""
    return {task: query_instruction(name, task) for task in later_models()["tasks"]}


#: A checkpoint of this many billion parameters or more is too slow for a CPU (the paper presets' rule:
#: bmr-410m runs on a CPU, inst-xl's 1.5B does not).
GPU_FROM_BILLIONS = 1.0


def needs_gpu(entry: LaterEntry) -> str | None:
    """The entry's size (``"8B"``) when it is too large for a CPU in reasonable time, else None."""
    size = str(entry.get("parameters") or "")
    if not size.endswith("B"):
        return None
    return size if float(size[:-1]) >= GPU_FROM_BILLIONS else None


def provenance(entry: LaterEntry) -> JsonObject:
    """What ``r2med models`` shows of an entry: its name, size, published row, setting sources and gaps (JSON, as
    the file holds them: the display shows them as they are; grading reads the published row's first-stage run)."""
    keys = ("display_name", "parameters", "published", "sources", "gaps", "assumed", "notes", "default_choice")
    held: Mapping[str, object] = entry
    out = json_object({k: held[k] for k in keys if k in held})
    out["assumed"] = bool(held.get("assumed"))
    return out
