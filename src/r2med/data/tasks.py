"""The registry of R2MED's 8 tasks: hub ids, pinned hub revisions, published sizes, scenario and retrieval type.

Sizes come from the R2MED dataset card (``protocol/r2med_hub_configs.json``); each task's
pinned ``revision`` is the hub commit MTEB pins for it (the file's ``_revision_source`` names
the source); scenarios follow the R2MED paper (arXiv 2505.14558, Table 1).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..errors import OptionError, did_you_mean, shown
from ..protocol import hub_configs

_SCENARIO = {
    "Biology": ("Q&A reference retrieval", "question -> reference passage"),
    "Bioinformatics": ("Q&A reference retrieval", "question -> reference passage"),
    "Medical-Sciences": ("Q&A reference retrieval", "question -> reference passage"),
    "MedXpertQA-Exam": ("Clinical evidence retrieval", "exam case -> evidence passage"),
    "MedQA-Diag": ("Clinical evidence retrieval", "patient case -> diagnosis evidence"),
    "PMC-Treatment": ("Clinical evidence retrieval", "patient case -> treatment evidence"),
    "PMC-Clinical": ("Clinical case retrieval", "patient case -> similar case"),
    "IIYi-Clinical": ("Clinical case retrieval", "patient case -> similar case"),
}


@dataclass(frozen=True)
class TaskSpec:
    name: str
    #: the dataset card's name of the task ("Medical Sciences"); r2med itself names it by ``name``, but
    #: ``r2med tasks --format json`` lists it, so it stays
    display_name: str
    hub_id: str
    queries: int
    docs: int
    avg_positives: float
    avg_query_length: float
    avg_doc_length: float
    scenario: str
    retrieval_type: str
    revision: str
    """The hub commit loaded by default (``--revision`` overrides it)."""


def _build() -> dict[str, TaskSpec]:
    specs = {}
    for row in hub_configs()["tasks"]:
        scenario, rtype = _SCENARIO[row["name"]]
        specs[row["name"]] = TaskSpec(
            name=row["name"],
            display_name=row["display_name"],
            hub_id=row["hub_id"],
            queries=row["queries"],
            docs=row["docs"],
            avg_positives=row["avg_positives_per_query"],
            avg_query_length=row["avg_query_length"],
            avg_doc_length=row["avg_doc_length"],
            scenario=scenario,
            retrieval_type=rtype,
            revision=row["revision"],
        )
    return specs


TASKS: dict[str, TaskSpec] = _build()
TASK_NAMES: list[str] = list(TASKS)
REVISION_SOURCE: str = hub_configs()["_revision_source"]


def get_task(name: str) -> TaskSpec:
    """Look a task up by its hub name, case-insensitively (``biology`` -> ``Biology``)."""
    if name in TASKS:
        return TASKS[name]
    lowered = {k.lower(): k for k in TASKS}
    if name.lower() in lowered:
        return TASKS[lowered[name.lower()]]
    raise OptionError(
        f"unknown task {shown(name)}{did_you_mean(name, TASK_NAMES)}; choose from: {', '.join(TASK_NAMES)}"
    )


def parse_tasks(spec: str | Iterable[str] | None) -> list[str]:
    """``"all"``/None -> all 8; ``"Biology,MedQA-Diag"`` (or a list of names) -> those, validated."""
    if spec is None or (isinstance(spec, str) and spec.strip().lower() in ("", "all")):
        return list(TASK_NAMES)
    parts = spec.split(",") if isinstance(spec, str) else spec
    return [get_task(part.strip()).name for part in parts if part.strip()]
