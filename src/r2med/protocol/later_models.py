"""Protocol data of the systems published on R2MED after the paper (``later_models.json``), typed access.

``later_models.json`` holds, per later retriever and reranker, the settings behind its published
figure with the source of each one (``repo path@commit:line``), what could not be found
(``gaps``) and the published CSV row it reproduces.  This module reads it; the presets built from
it (the embedders: ``r2med.retrieval.later_presets``; the rerankers: ``r2med.reranking.qwen3``,
``r2med.reranking.reasonrank``) ask it for their settings, prompts and provenance.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

from ..errors import R2MedError
from ..infra.records import refuse_unknown_keys


@cache
def later_models() -> dict[str, Any]:
    text = resources.files(__package__).joinpath("later_models.json").read_text(encoding="utf-8")
    data: dict[str, Any] = json.loads(text)
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


def later_reranker(name: str) -> dict[str, Any]:
    """The ``rerankers`` entry of ``name`` (e.g. ``reasonrank-32b``, ``qwen3-reranker-0.6b``)."""
    entries = later_models()["rerankers"]
    if name not in entries:
        raise R2MedError(f"no later-work reranker {name!r}; known: {', '.join(entries)}")
    entry: dict[str, Any] = entries[name]
    refuse_unknown_keys(entry, RERANKER_KEYS, f"later_models.json: reranker {name!r}")
    return entry


def later_retriever(name: str) -> dict[str, Any]:
    """The ``retrievers`` entry of ``name`` (e.g. ``reasonembed-qwen3-8b``)."""
    entries = later_models()["retrievers"]
    if name not in entries:
        raise R2MedError(f"no later-work retriever {name!r}; known: {', '.join(entries)}")
    entry: dict[str, Any] = entries[name]
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


def needs_gpu(entry: dict[str, Any]) -> str | None:
    """The entry's size (``"8B"``) when it is too large for a CPU in reasonable time, else None."""
    size = str(entry.get("parameters") or "")
    if not size.endswith("B"):
        return None
    return size if float(size[:-1]) >= GPU_FROM_BILLIONS else None


def provenance(entry: dict[str, Any]) -> dict[str, Any]:
    """What ``r2med models`` shows of an entry: its name, size, published row, setting sources and gaps."""
    keys = ("display_name", "parameters", "published", "sources", "gaps", "assumed", "notes", "default_choice")
    out = {k: entry[k] for k in keys if k in entry}
    out["assumed"] = bool(entry.get("assumed"))
    return out
