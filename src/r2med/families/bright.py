"""BRIGHT as a plug-in family: 12 tasks in one hub dataset (``xlangai/BRIGHT``, parquet files) at the commit mteb
pins, named ``bright:<task>`` (``bright:<task>:long``: the long-document setting of 8 of them); run to depth 1000
with each query's ``excluded_ids`` removed before the cut, judged by ``gold_ids`` (``gold_ids_long``), scored with
BRIGHT's measures (``retrievers.py``); its models' own settings (``configs/<model>/<task>.json``) run where an r2med
preset stands for one of its models.

Its names and files are :mod:`r2med.data.bright`'s; its facts (tasks, sizes, hub layout, models, published figures)
:mod:`r2med.protocol.bright`'s.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from ..data import bright
from ..data.benchmarks import Benchmark, HubRequest, ModelSettings, Protocol, TaskColumn, TaskRow, TaskTable
from ..errors import OptionError
from ..expansion.reasoning import ReasoningQueries
from ..expansion_name import ExpansionName
from ..measures import HEADLINE, Family, Measure
from ..protocol import bright as facts
from ..results import bright_published as published
from ..results.data_states import bright_data_problem
from ..results.grading import RerankSpec, RetrieverSpec
from ..results.published import PublishedKey
from ..results.reproduction import Target
from ..runs.record import RunData

if TYPE_CHECKING:
    from ..data.collection import Collection
    from ..infra.json_types import JsonObject, JsonValue
    from ..steps import RerankStep


#: the measures BRIGHT's published rows grade: nDCG@10 (short documents), Recall@1 (long documents)
GRADED_MEASURES: tuple[Measure, ...] = (HEADLINE, Measure(Family.RECALL, 1))


def measures() -> tuple[Measure, ...]:
    """BRIGHT's measures (retrievers.py:544-588): nDCG, MAP, recall and precision at 1, 5, 10, 25, 50, 100, and MRR;
    plus R@1000, which Pyserini's reproductions report."""
    cut = tuple(
        Measure(f, k)
        for f in (Family.NDCG, Family.MAP, Family.RECALL, Family.PRECISION)
        for k in (1, 5, 10, 25, 50, 100)
    )
    return (*cut, Measure(Family.MRR), Measure(Family.RECALL, 1000))


@cache
def protocol(long: bool = False) -> Protocol:
    return Protocol(
        family="bright",
        depth=1000,
        measures=measures(),
        headline=Measure(Family.RECALL, 1) if long else HEADLINE,
        judgments="gold_ids_long" if long else "gold_ids",
        documents="long_documents" if long else "documents",
        exclusions=True,
        average=(
            "the unweighted mean of the 8 long-document tasks' Recall@1 (the leaderboard's)"
            if long
            else "the unweighted mean of the 12 tasks' nDCG@10 (the leaderboard's)"
        ),
    )


class BrightTable:
    """BRIGHT's published figures (``protocol/bright_published.csv``: the paper, its leaderboard, later copies) as
    r2med grades them (:class:`r2med.results.grading.PublishedTable`; the rows and their rules:
    :mod:`r2med.results.bright_published`), graded on the hub's data at the pinned commit only."""

    #: the settings with per-task figures r2med grades: the paper's table, the long documents' per-task Recall@1;
    #: the leaderboard's rows are Averages, graded by ``r2med report`` over all the tasks (:meth:`unreproduced`)
    settings = published.PER_TASK_SETTINGS
    run_depth: int | None = None  # BRIGHT's protocol's (1000)
    expansions_with_data = True  # the reasoning query sets: the hub dataset's, at the data's commit

    def targets(
        self, settings: tuple[str, ...], retrievers: Iterable[str] | None, tasks: list[str] | None
    ) -> list[Target]:
        """BRIGHT's graded per-task figures (the paper's nDCG@10, the long documents' Recall@1) for the
        configurations r2med can run (no reranked row publishes per-task figures, so none is a target);
        ``retrievers`` by r2med's names (``sfr``) or BRIGHT's (``sf``)."""
        wanted_s, wanted_t = set(settings) & set(self.settings), set(tasks or ())
        wanted_r = set(retrievers) if retrievers else None
        out = []
        for key in published.bright_keys():
            if wanted_r is not None and not {key.system, key.retriever} & wanted_r:
                continue
            for measure in GRADED_MEASURES:
                for task, (setting, source) in key.sources(measure).items():
                    if task in wanted_t and setting in wanted_s:
                        out.append(Target(key, setting, task, key.figures(measure)[task], source))
        return out

    def no_targets(self, retrievers: Iterable[str], settings: tuple[str, ...], tasks: list[str] | None) -> str:
        known_r = sorted({k.system for k in published.bright_keys()})
        return (
            f"no published per-task figures for {', '.join(sorted(retrievers))} in {', '.join(settings)} on "
            f"{', '.join(tasks or ())}; BRIGHT's retrievers: {', '.join(known_r)}"
        )

    def unpublished(self, settings: tuple[str, ...] | None) -> list[tuple[str, str]]:
        return []  # r2med keeps no record of BRIGHT's later work without a figure

    def unreproduced(self, settings: tuple[str, ...] | None) -> list[tuple[str, str]]:
        """The graded configurations whose figures are Averages only (the leaderboard's: ``r2med report`` grades
        them over all the tasks), then every row r2med cannot run, with the reason
        (:func:`r2med.results.bright_published.not_reproducible`)."""
        chosen = set(settings) if settings is not None else set(self.settings)
        out = []
        for key in published.bright_keys():
            per_task = {s for m in GRADED_MEASURES for t, (s, _) in key.sources(m).items() if t != "Average"}
            if not per_task & chosen:
                what = " and ".join(
                    f"{'Recall@1 (long documents)' if m != HEADLINE else 'nDCG@10'} {key.figures(m)['Average']:.1f}"
                    for m in GRADED_MEASURES
                    if key.figures(m) and "Average" in key.figures(m)
                )
                out.append((key.label, f"graded by r2med report: the leaderboard's Average only ({what})"))
        out += [(name, f"not reproducible: {why} ({n} figures)") for name, why, n in published.not_reproducible()]
        return out

    def query_builder(self, key: PublishedKey, folders: list[Path], revision: str | None) -> ReasoningQueries:
        """BRIGHT's reasoning set, from the hub at the data's commit."""
        return ReasoningQueries(key.llm)

    def configurations(self) -> tuple[PublishedKey, ...]:
        return published.bright_keys()

    def spec(self, key: PublishedKey) -> RetrieverSpec | RerankSpec | None:
        return published.spec(key)

    def by_label(self, label: str) -> PublishedKey | None:
        return published.by_label(label)

    def examples(self) -> tuple[str, ...]:
        return ("bm25", "sfr+reason-gpt4", "bm25+bright-llm-gpt-4-0125-preview-top100")

    def key_for(self, retriever: str, method: str, llm: str) -> PublishedKey | None:
        return published.bright_key_for(retriever, method, llm)

    def rerank_candidates(
        self, rows: Mapping[PublishedKey, RerankSpec], first: str, step: RerankStep
    ) -> list[PublishedKey]:
        return published.rerank_candidates(rows, first, step)

    def data_problem(
        self, task: str, run: RunData, key: PublishedKey | None = None, measure: Measure = HEADLINE
    ) -> str | None:
        """BRIGHT's figures are graded on the data each was computed on: documents, examples and reasoning set,
        commit by commit (:func:`r2med.results.data_states.bright_data_problem`)."""
        return bright_data_problem(task, run, key, measure)

    def settings_dtype(self, model: str) -> tuple[str | None] | None:
        return published.settings_dtype(model)

    def not_reproducible(self) -> list[tuple[str, str, int]]:
        return published.not_reproducible()


class Bright(Benchmark):
    """BRIGHT: 12 tasks in one hub dataset (``xlangai/BRIGHT``), at the commit mteb pins; ``bright:<task>:long``
    for the long-document setting of 8 of them."""

    name = "bright"
    title = "BRIGHT"

    has_long_documents = True

    def task_names(self) -> tuple[str, ...]:
        return bright.names()

    def aliases(self) -> Mapping[str, tuple[str, ...]]:
        return {self.name: bright.names(), f"{self.name}:{bright.LONG}": bright.names(long=True)}

    def canonical(self, name: str) -> str | None:
        return bright.parse_name(name).name if bright.is_bright(name) else None

    def hub_task(self, name: str) -> str:
        return bright.parse_name(name).hub_task

    def protocol(self, name: str) -> Protocol:
        return protocol(bright.parse_name(name).long)

    def choices(self) -> str:
        return f"BRIGHT's {bright.PREFIX}<task> (bright: the 12)"

    def long_setting(self, name: str) -> str | None:
        return bright.long_name(name)

    def hub_request(
        self, name: str, revision: str | None, expansions: Sequence[ExpansionName] = (), corpus: bool = True
    ) -> HubRequest:
        parsed = bright.parse_name(name)
        others = [e for e in expansions if e.method != bright.REASON]
        if others:
            raise OptionError(
                f"{parsed.name}: BRIGHT's hub holds no {others[0].text} expansions (its query sets are "
                f"{bright.REASON}:<llm>: {', '.join(r.name for r in facts.hub().reasoning_sets)}); "
                "pass --expansion-file or --expansion-dir for your own"
            )
        wanted, why = bright.revision_for(parsed.name, revision)
        # a reasoning set the record shows absent at that commit is read at one that holds it (checked when read)
        here = bright.reasoning_commit(wanted)[0] == wanted
        paths = bright.files(parsed.name, corpus=corpus, reasoning=[e.llm for e in expansions] if here else [])
        return HubRequest(facts.hub().repo_id, tuple(paths), wanted, why)

    def load(self, name: str, revision: str | None = None, strict: bool = False, corpus: bool = True) -> Collection:
        return bright.load(name, revision=revision, strict=strict, corpus=corpus)

    def rows(self) -> list[TaskRow]:
        out = []
        for t in facts.tasks():
            long = f"; long: {t.long_documents:,} docs, {t.long_gold_ids} judgments" if t.has_long_documents else ""
            excluded = f"{t.excluded_ids:,} excluded pairs" if t.excluded_ids else "no exclusions"
            out.append(
                TaskRow(
                    t.qualified_name,
                    self.name,
                    t.queries,
                    t.documents,
                    t.gold_pairs,
                    f"{t.group}; {excluded}{long}",
                    facts.hub().revision,
                    {
                        "name": t.qualified_name,
                        "hub_split": t.name,
                        "display_name": t.display_name,
                        "group": t.group,
                        "queries": t.queries,
                        "docs": t.documents,
                        "judgments": t.gold_pairs,
                        "long_documents": t.long_documents,
                        "long_judgments": t.long_gold_ids,
                        "queries_with_exclusions": t.queries_with_exclusions,
                        "excluded_ids": t.excluded_ids,
                        "hub_id": facts.hub().repo_id,
                        "revision": facts.hub().revision,
                        "sources": dict(t.sources),
                    },
                )
            )
        return out

    def task_table(self, wide: bool) -> TaskTable:
        columns = (
            TaskColumn("task", "left"),
            *([TaskColumn("group", "left", no_wrap=False)] if wide else []),
            *(TaskColumn(col) for col in ("queries", "docs", "gold", "excluded", "long")),
        )
        rows = tuple(
            (
                row.name,
                *([str(row.facts["group"])] if wide else []),
                f"{row.queries:,}",
                f"{row.docs:,}",
                f"{row.judgments:,}",
                f"{row.facts['excluded_ids']:,}" if row.facts["excluded_ids"] else "-",
                f"{row.facts['long_documents']:,}" if row.facts["long_documents"] else "-",
            )
            for row in self.rows()
        )
        note = (
            f"{sum(r.queries for r in self.rows()):,} queries in all; docs: Anserini's index of the hub's corpus; "
            "gold: distinct (query, gold id) pairs; excluded: (query, document) pairs removed before the cut; long: "
            "the long-document corpus. Hub data "
            f"loads at commit {facts.hub().revision[:7]} (the data of its graded figures; --revision changes it). "
            "--tasks bright runs "
            "all 12; bright:<task>:long (or --long-documents) the long-document setting of the 8 with long docs; "
            "--tasks all stays R2MED's 8."
        )
        return TaskTable(f"{self.title} tasks (hub: {facts.hub().repo_id})", columns, rows, (note,))

    def published(self) -> BrightTable:
        return TABLE

    def reasoning_queries(
        self, collection: Collection, llm: str, file: Path | None = None, strict: bool = False
    ) -> tuple[dict[str, str], Path]:
        return bright.reasoning_queries(collection, llm, file, strict=strict)

    def model_settings(self, retriever: str, task: str) -> ModelSettings | None:
        """BRIGHT's settings for the BRIGHT model whose record names ``retriever`` as its r2med preset
        (``bright_models.json``): instructions from ``configs/<model>/<task>.json`` (``instructions_long`` in the long
        setting) with ``{task}`` filled as BRIGHT fills it (the raw task id), and the lengths, pooling,
        normalisation, loader and similarity of its ``retrievers.py`` function."""
        model = facts.model_for_preset(retriever)
        if model is None:
            return None
        parsed = bright.parse_name(task)
        block = dict(model.r2med_encoder)
        block.pop("sources", None)
        sources = {**model.sources, **model.encoder_sources()}
        similarity = model.encoder_similarity()
        block.pop("similarity", None)
        for fact in _REGISTRY_FACTS:  # a defined preset's registry facts, not settings
            block.pop(fact, None)
        encoder: JsonObject = {}
        if model.kind != "bm25":
            encoder = dict(block)  # r2med's encoder defaults fill the rest where it runs (Preset.settings)
            encoder["query_instruction"] = model.instruction(parsed.task, "query", parsed.long)
            encoder["doc_instruction"] = model.instruction(parsed.task, "document", parsed.long)
        return ModelSettings(
            family=self.name,
            model=model.name,
            task=parsed.name,
            encoder=encoder,
            similarity=similarity,
            score_scale=model.score_scale,
            batch_size=model.batch_size,
            differences=model.r2med_differences,
            sources=sources,
            checkpoint=model.model or None,
        )

    def settings_summary(self, retriever: str) -> Mapping[str, JsonValue] | None:
        model = facts.model_for_preset(retriever)
        if model is None:
            return None
        block = {k: v for k, v in model.r2med_encoder.items() if k not in ("sources", *_REGISTRY_FACTS)}

        def instructions(kind: str) -> str:
            filled = {model.instruction(t.name, kind) for t in facts.tasks()}
            if filled == {""}:
                return ""
            return f"per task (configs/{model.name}/<task>.json)" if len(filled) > 1 else filled.pop()

        return {
            "model": model.name,
            "checkpoint": model.model,
            **block,
            "score_scale": model.score_scale,
            "batch_size": model.batch_size,
            "query_instruction": instructions("query"),
            "doc_instruction": instructions("document"),
            "differences": list(model.r2med_differences),
        }


#: Keys of a BRIGHT ``r2med_encoder`` block that are a defined preset's registry facts, not settings.
_REGISTRY_FACTS = ("batch_size", "needs_gpu", "api_key_env")


TABLE = BrightTable()
BRIGHT = Bright()
