"""R2MED as a plug-in family: 8 tasks, one hub repository each (``R2MED/<Task>``, JSONL files), at the commits MTEB
pins; run to depth 100 and scored with r2med's default measures against ``qrels.jsonl``.

Its task specs (hub ids, pinned commits, sizes) are :mod:`r2med.data.tasks`'s; its hub files :mod:`r2med.data.hub`'s.
Names: the task names themselves, any case (``biology`` -> ``Biology``); ``all`` and ``r2med`` for the 8.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from ..data.benchmarks import Benchmark, HubRequest, Protocol, TaskColumn, TaskRow, TaskTable
from ..data.hub import TASK_FILES, download_expansion, expansion_path, load_from_hub, task_revision
from ..data.tasks import TASK_NAMES, TASKS, get_task
from ..errors import OptionError
from ..expansion.precomputed import ExpansionQueries
from ..expansion_name import ExpansionName
from ..measures import DEFAULT_MEASURES, HEADLINE, Measure
from ..protocol import published_figures
from ..reranking.base import all_rerankers
from ..results.data_states import unknown_figure
from ..results.grading import HEADLINE_DEPTH, Published, RerankSpec, RetrieverSpec, rerank_spec, retriever_spec
from ..results.published import PublishedKey, parse_label, published_keys, published_retriever
from ..results.reproduction import Target, Variant
from ..retrieval.registry import all_retrievers
from ..runs.record import RunData

if TYPE_CHECKING:
    from ..data.collection import Collection
    from ..reranking.base import RerankerMeta
    from ..retrieval.registry import RetrieverMeta
    from ..steps import RerankStep

#: the words ``--tasks`` takes for the 8 (``all``: what it always meant)
ALIASES = ("all", "r2med")
#: the expansion method of another family's query sets, which R2MED's hub does not hold
_REASONING = "reason"

#: The paper's own settings: retriever x expansion configurations, and rerankers over a first stage.
SETTINGS = ("base", "gar", "lrm_agentic", "reranker_top_10")
#: Figures published on R2MED after the paper: embedders (ReasonEmbed's table) and the leaderboard's reranker.
LATER_SETTINGS = ("later_embedder", "later_leaderboard")
#: What ``r2med reproduce`` covers unless told otherwise: every published setting.
ALL_SETTINGS = SETTINGS + LATER_SETTINGS

#: Corrected configurations run beside the plain published ones (setting ``base``), never graded.
VARIANTS: Mapping[str, tuple[Variant, ...]] = {
    "medcpt": (
        Variant(
            "query-encoder",
            {"medcpt_published": False},
            "r2med's default: queries through MedCPT's Query encoder (the published figures encoded "
            "them with the Article encoder, eval_bench.py:253-254): shown beside them, not graded",
            query_encoder=True,
        ),
    ),
}


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


class R2medTable:
    """R2MED's published nDCG@10 figures (``protocol/r2med_published_ndcg10.csv``: the paper, its leaderboard and
    later papers) as r2med grades them (:class:`r2med.results.grading.PublishedTable`)."""

    settings = ALL_SETTINGS
    run_depth: int | None = 100  # the paper's runs: top 100
    expansions_with_data = False  # expansion files of their own (a local folder's, the hub's)

    def targets(
        self, settings: tuple[str, ...], retrievers: Iterable[str] | None, tasks: list[str] | None
    ) -> list[Target]:
        """R2MED's published per-task figures of ``settings`` (Average rows left out), each ``base`` retriever
        figure with its corrected variants (:data:`VARIANTS`) beside it."""
        if tasks is not None and not tasks:
            return []
        wanted_r = {published_retriever(r) for r in retrievers} if retrievers else None
        wanted_t = {get_task(t).name for t in tasks} if tasks else None
        out = []
        for f in published_figures():
            if f.setting not in settings or f.task not in TASK_NAMES:
                continue
            if wanted_r is not None and f.retriever not in wanted_r:
                continue
            if wanted_t is not None and f.task not in wanted_t:
                continue
            target = Target(PublishedKey(f.retriever, f.expansion, f.llm), f.setting, f.task, f.ndcg10, f.source)
            out.append(target)
            if f.setting == "base" and target.key.expansion == "none":
                out += [replace(target, variant=v) for v in VARIANTS.get(target.key.system, ())]
        return out

    def no_targets(self, retrievers: Iterable[str], settings: tuple[str, ...], tasks: list[str] | None) -> str:
        wanted = {published_retriever(r) for r in retrievers}
        known = sorted({PublishedKey(f.retriever).label for f in published_figures() if f.setting in settings})
        return (
            f"no published figures for {', '.join(sorted(wanted))} in {', '.join(settings)}; "
            f"retrievers: {', '.join(known)}"
        )

    def unpublished(self, settings: tuple[str, ...] | None) -> list[tuple[str, str]]:
        """The later-work records no published figure grades (Qwen3-Reranker, ReasonRank-7B), listed beside the
        matrix when it covers the later settings."""
        if not set(settings or ALL_SETTINGS) & set(LATER_SETTINGS):
            return []
        out = []
        registered: dict[str, RetrieverMeta | RerankerMeta] = {**all_retrievers(), **all_rerankers()}
        for name, meta in registered.items():
            if not meta.later or meta.published_as or not meta.provenance:
                continue
            published = meta.provenance.get("published")
            elsewhere = published.get("elsewhere") if isinstance(published, dict) else None
            why = "no published R2MED figure in the package"
            if isinstance(elsewhere, dict) and elsewhere:
                why += f" (elsewhere: {elsewhere.get('average')} average, {elsewhere.get('source')})"
            out.append((name, why))
        return out

    def unreproduced(self, settings: tuple[str, ...] | None) -> list[tuple[str, str]]:
        return []  # every row has per-task figures

    def query_builder(self, key: PublishedKey, folders: list[Path], revision: str | None) -> ExpansionQueries:
        """R2MED's expansion files (a local folder's, else the hub's)."""
        return ExpansionQueries(key.expansion, key.llm, folders=folders, revision=revision)

    def configurations(self) -> tuple[PublishedKey, ...]:
        return published_keys()

    def spec(self, key: PublishedKey) -> RetrieverSpec | RerankSpec | None:
        return rerank_spec(key) if key.reranker else retriever_spec(key, Published(at_least=HEADLINE_DEPTH))

    def by_label(self, label: str) -> PublishedKey | None:
        return parse_label(label)

    def examples(self) -> tuple[str, ...]:
        return ("bm25", "nv", "bge+hyde-gpt4", "bm25+query2doc-qwen-72b", "reasonembed-qwen3-8b", "e5+reasonrank-32b")

    def key_for(self, retriever: str, method: str, llm: str) -> PublishedKey | None:
        return PublishedKey(published_retriever(retriever), method, llm)

    def rerank_candidates(
        self, rows: Mapping[PublishedKey, RerankSpec], first: str, step: RerankStep
    ) -> list[PublishedKey]:
        retriever = published_retriever(first)
        return [k for k in rows if k.retriever == retriever]

    def data_problem(
        self, task: str, run: RunData, key: PublishedKey | None = None, measure: Measure = HEADLINE
    ) -> str | None:
        """Why the data one task folder recorded (``run``: its record's fields) is not the hub task ``task`` whose
        figures are published, or why ``key``'s figure is never graded: no source shows the data it was made on
        (:func:`r2med.results.data_states.unknown_figure`).

        The hub task is data read from the task's hub repository at its pinned commit, or data whose recorded
        counts (queries, documents) equal the task's published counts (a local copy).  r2med knows no file hashes
        of the pinned commits, so a local folder with the right name and counts is taken for the hub task; any
        other local folder -- or one whose run recorded no counts -- is not."""
        spec = TASKS.get(task)
        if spec is None:
            return f"{task} is not one of R2MED's tasks"
        unknown = unknown_figure(task, key, measure)
        if unknown is not None:
            return unknown
        source, revision = run.source, run.revision
        hub = f"hf://datasets/{spec.hub_id}@"
        if revision == spec.revision and source is not None and source.startswith(hub):
            return None
        counts = run.data
        where = f"hub commit {revision[:12]}" if revision else "a local folder"
        if counts is None:
            return f"{task}: data from {where} with no recorded counts (re-run with this r2med to grade it)"
        queries, docs = counts.queries, counts.docs
        if (queries, docs) != (spec.queries, spec.docs):
            return (
                f"{task}: data from {where} has {queries} queries and {docs} docs, the hub task "
                f"{spec.queries} and {spec.docs}"
            )
        return None

    def settings_dtype(self, model: str) -> tuple[str | None] | None:
        return None  # R2MED's rows ran r2med's presets, whose records hold their precision

    def not_reproducible(self) -> list[tuple[str, str, int]]:
        return []  # every row names a retriever or reranker record; one r2med lacks is never a key with a spec


class R2med(Benchmark):
    """R2MED: 8 tasks, one hub repository each (``R2MED/<Task>``), at the commits MTEB pins."""

    name = "r2med"
    title = "R2MED"
    local_copies = True
    mteb_benchmark = "R2MED"

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
        self, name: str, revision: str | None, expansions: Sequence[ExpansionName] = (), corpus: bool = True
    ) -> HubRequest:
        spec = get_task(name)
        if any(e.method == _REASONING for e in expansions):
            raise OptionError(
                f"{spec.name}: {_REASONING}:<llm> names BRIGHT's reasoning query sets; R2MED's tasks have "
                "none (their expansions: hyde, query2doc, lamer...)"
            )
        wanted, why = task_revision(spec.name, revision, expansions)
        files = [f for f in TASK_FILES if corpus or f != "corpus.jsonl"]
        paths = (*files, *(expansion_path(e.method, e.llm) for e in expansions))
        return HubRequest(spec.hub_id, tuple(paths), wanted, why)

    def load(self, name: str, revision: str | None = None, strict: bool = False, corpus: bool = True) -> Collection:
        found = load_from_hub(get_task(name.strip()).name, revision=revision, strict=strict, corpus=corpus)
        return found.replace(benchmark=self.name)

    def expansion_file(self, task: str, method: str, llm: str, revision: str | None) -> Path | None:
        """The hub's expansion file, from the commit the task's data came from (so data and expansions match)."""
        return download_expansion(task, method, llm, revision) if task in TASK_NAMES else None

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

    def published(self) -> R2medTable:
        return TABLE


TABLE = R2medTable()
R2MED = R2med()
