"""R2MED as a plug-in family: 8 tasks, one hub repository each (``R2MED/<Task>``, JSONL files), at the commits MTEB
pins; run to depth 100 and scored with r2med's default measures against ``qrels.jsonl``.

Its task specs (hub ids, pinned commits, sizes) are :mod:`r2med.data.tasks`'s; its hub files :mod:`r2med.data.hub`'s.
Names: the task names themselves, any case (``biology`` -> ``Biology``); ``all`` and ``r2med`` for the 8.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cache
from typing import TYPE_CHECKING

from ..data.benchmarks import Benchmark, HubRequest, Protocol, TaskColumn, TaskRow, TaskTable
from ..data.hub import TASK_FILES, expansion_path, load_from_hub, task_revision
from ..data.tasks import TASK_NAMES, TASKS, get_task
from ..errors import OptionError
from ..measures import DEFAULT_MEASURES, HEADLINE

if TYPE_CHECKING:
    from ..data.collection import Collection

#: the words ``--tasks`` takes for the 8 (``all``: what it always meant)
ALIASES = ("all", "r2med")
#: the expansion method of another family's query sets, which R2MED's hub does not hold
_REASONING = "reason"


@cache
def protocol() -> Protocol:
    return Protocol(
        family="r2med",
        depth=100,
        measures=DEFAULT_MEASURES,
        headline=HEADLINE,
        judgments="qrels.jsonl",
        documents="corpus.jsonl",
        exclusions=False,
        average="the unweighted mean of the 8 tasks' nDCG@10",
    )


class R2med(Benchmark):
    """R2MED: 8 tasks, one hub repository each (``R2MED/<Task>``), at the commits MTEB pins."""

    name = "r2med"
    title = "R2MED"

    def task_names(self) -> tuple[str, ...]:
        return tuple(TASK_NAMES)

    def aliases(self) -> Mapping[str, tuple[str, ...]]:
        return dict.fromkeys(ALIASES, tuple(TASK_NAMES))

    def canonical(self, name: str) -> str | None:
        wanted = name.strip().lower()
        return next((t for t in TASK_NAMES if t.lower() == wanted), None)

    def hub_task(self, name: str) -> str:
        return get_task(name.strip()).name

    def protocol(self, name: str) -> Protocol:
        return protocol()

    def choices(self) -> str:
        return f"R2MED's {', '.join(TASK_NAMES)} (all or r2med: the 8)"

    def hub_request(
        self, name: str, revision: str | None, expansions: Sequence[tuple[str, str]] = (), corpus: bool = True
    ) -> HubRequest:
        spec = get_task(name)
        if any(method == _REASONING for method, _ in expansions):
            raise OptionError(
                f"{spec.name}: {_REASONING}:<llm> names BRIGHT's reasoning query sets; R2MED's tasks have "
                "none (their expansions: hyde, query2doc, lamer...)"
            )
        wanted, why = task_revision(spec.name, revision, expansions)
        files = [f for f in TASK_FILES if corpus or f != "corpus.jsonl"]
        paths = (*files, *(expansion_path(method, llm) for method, llm in expansions))
        return HubRequest(spec.hub_id, tuple(paths), wanted, why)

    def load(self, name: str, revision: str | None = None, strict: bool = False, corpus: bool = True) -> Collection:
        found = load_from_hub(get_task(name.strip()).name, revision=revision, strict=strict, corpus=corpus)
        return found.replace(benchmark=self.name)

    def rows(self) -> list[TaskRow]:
        return [
            TaskRow(
                t.name,
                self.name,
                t.queries,
                t.docs,
                round(t.avg_positives * t.queries),
                t.scenario.removesuffix(" retrieval"),
                t.revision,
                vars(t),
            )
            for t in TASKS.values()
        ]

    def task_table(self, wide: bool) -> TaskTable:
        columns = (
            TaskColumn("task", "left"),
            TaskColumn("scenario", "left", no_wrap=not wide),
            *([TaskColumn("retrieval", "left", no_wrap=False)] if wide else []),
            *(TaskColumn(col) for col in ("queries", "docs", "pos/q", "len q/d")),
        )
        rows = tuple(
            (
                t.name,
                t.scenario if wide else t.scenario.removesuffix(" retrieval"),
                *([t.retrieval_type] if wide else []),
                f"{t.queries:,}",
                f"{t.docs:,}",
                f"{t.avg_positives:.1f}",
                f"{t.avg_query_length:.0f}/{t.avg_doc_length:.0f}",
            )
            for t in TASKS.values()
        )
        notes = (
            f"{sum(t.queries for t in TASKS.values())} queries in all; lengths: the dataset card's mean "
            "tokens per query/doc.",
            "Hub data loads at pinned commits: "
            + ", ".join(f"{t.name} {t.revision[:7]}" for t in TASKS.values())
            + " (MTEB's pins; --revision changes them; `--format json` gives them in full).",
        )
        return TaskTable("R2MED tasks (hub: R2MED/<task>)", columns, rows, notes)


R2MED = R2med()
