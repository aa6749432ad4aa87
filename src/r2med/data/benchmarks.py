"""Benchmark families: a family is its data plus its protocol, asked by name -- never a fork of the code.

r2med runs two families, each under its own protocol: **R2MED** (8 tasks, ``R2MED/<Task>`` on the hub, JSONL
files) and **BRIGHT** (12 tasks, ``xlangai/BRIGHT``, parquet files; named ``bright:<task>``).  Code that needs to
know which rules a task follows asks its family (:func:`benchmark_of`), not its name:

* :class:`Protocol` -- how a task's runs are made and scored: the run depth (R2MED 100, BRIGHT 1000), the measures
  stored, the headline measure, where judgments come from, whether queries carry exclusions removed before the
  cut (BRIGHT's ``excluded_ids``), and how the benchmark averages; :func:`protocol_of` gives a collection's (a local
  folder follows :data:`LOCAL`, R2MED's numbers);
* :class:`Benchmark` -- a family: its task names and aliases (``--tasks bright`` is BRIGHT's 12; ``all`` stays
  R2MED's 8, as it always was, and ``r2med`` says so explicitly), the hub files a task needs at its revision (checked
  before any download), how a task loads (with or without its documents), the rows of ``r2med tasks``, and the
  hooks where published figures and per-model settings are looked up (:meth:`Benchmark.published`,
  :meth:`Benchmark.model_settings`).

:func:`r2med.data.names.parse_tasks` is the one reading of a ``--tasks`` spec over both families (names are
:mod:`.names`'s; the families here add their data and protocols).
"""

from __future__ import annotations

import abc
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

from ..errors import OptionError, shown
from ..measures import Measure
from . import names

if TYPE_CHECKING:
    from .collection import Collection


@dataclass(frozen=True)
class Protocol:
    """How one task's runs are made and scored."""

    family: str | None  #: the benchmark family (None: a local collection)
    depth: int  #: documents kept per query (``--top-k`` overrides it, recorded)
    measures: tuple[Measure, ...]  #: what every ``metrics.json`` of the task stores (``-m`` adds to it)
    headline: Measure  #: the measure a table shows first
    judgments: str  #: where the judgments come from (``qrels.jsonl``, ``gold_ids``, ``gold_ids_long``)
    documents: str  #: where the corpus comes from (``corpus.jsonl``, ``documents``, ``long_documents``)
    exclusions: bool  #: whether queries carry documents removed from their scores before the cut
    average: str  #: how the family averages, in words

    def record(self, collection: Collection) -> dict[str, Any]:
        """What ``metrics.json``'s ``protocol`` holds of a task's run: the family, its depth, judgments and corpus,
        the exclusions (queries, pairs, fingerprint; None: none) and the judgments file used instead of the task's
        own (``--qrels``; None: the task's own)."""
        return {
            "family": self.family,
            "depth": self.depth,
            "judgments": self.judgments,
            "documents": self.documents,
            "exclusions": collection.exclusions.record(),
            "qrels": collection.judgments.record() if collection.judgments is not None else None,
        }


def _r2med_measures() -> tuple[Measure, ...]:
    from ..measures import DEFAULT_MEASURES

    return DEFAULT_MEASURES


def _bright_measures() -> tuple[Measure, ...]:
    """BRIGHT's measures (retrievers.py:544-588): nDCG, MAP, recall and precision at 1, 5, 10, 25, 50, 100, and MRR;
    plus R@1000, which Pyserini's reproductions report."""
    from ..measures import Family, Measure

    cut = tuple(
        Measure(f, k)
        for f in (Family.NDCG, Family.MAP, Family.RECALL, Family.PRECISION)
        for k in (1, 5, 10, 25, 50, 100)
    )
    return (*cut, Measure(Family.MRR), Measure(Family.RECALL, 1000))


@cache
def r2med_protocol() -> Protocol:
    from ..measures import HEADLINE

    return Protocol(
        family="r2med",
        depth=100,
        measures=_r2med_measures(),
        headline=HEADLINE,
        judgments="qrels.jsonl",
        documents="corpus.jsonl",
        exclusions=False,
        average="the unweighted mean of the 8 tasks' nDCG@10",
    )


@cache
def local_protocol() -> Protocol:
    """A local collection's (``--data-dir``): R2MED's numbers, no family."""
    base = r2med_protocol()
    return Protocol(None, base.depth, base.measures, base.headline, "the folder's", "the folder's", False, "")


@cache
def bright_protocol(long: bool = False) -> Protocol:
    from ..measures import HEADLINE, Family, Measure

    return Protocol(
        family="bright",
        depth=1000,
        measures=_bright_measures(),
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


@dataclass(frozen=True)
class ModelSettings:
    """A family's own settings for one retriever on one task (BRIGHT: ``configs/<model>/<task>.json`` and its
    ``retrievers.py`` function), in the terms of r2med's encoders: what a preset runs on that family's tasks instead
    of the settings of its own family (:meth:`Benchmark.model_settings`)."""

    family: str  #: whose settings they are (``bright``)
    model: str  #: the family's name for the model (BRIGHT's ``--model`` value: ``sf``)
    task: str  #: the task they are for (``bright:biology``, ``bright:biology:long``)
    #: ``EncoderSettings`` fields they set: instructions filled as the family fills them, max lengths, pooling,
    #: normalisation, loader, dtype, framing, extra (empty: not a vector model -- BM25)
    encoder: Mapping[str, Any]
    similarity: str | None  #: how the family scores the vectors (None: not a vector model)
    score_scale: float  #: the factor the family multiplies its similarity by (recorded; it changes no ranking)
    batch_size: int | None  #: the family's batch (recorded; it changes no vector: r2med keeps its own)
    differences: tuple[str, ...]  #: how they differ from the preset's settings in its own family
    sources: Mapping[str, str]  #: file:line of each setting

    def record(self) -> dict[str, Any]:
        """What ``metrics.json``'s ``config["settings"]`` holds: whose settings ran, for which task, the family's
        scoring facts and the code they come from (the vectors' own settings are ``config["encoder"]``; every
        setting's source: ``r2med models --json``)."""
        return {
            "family": self.family,
            "model": self.model,
            "task": self.task,
            "similarity": self.similarity,
            "score_scale": self.score_scale,
            "batch_size": self.batch_size,
            "source": self.sources.get("function"),
        }


@dataclass(frozen=True)
class HubRequest:
    """The hub files one task needs at one revision: checked before any download (:func:`r2med.data.check_hub`)."""

    repo_id: str
    paths: tuple[str, ...]
    revision: str
    why: str  #: whose revision it is (``""``: ``--revision``'s)


@dataclass(frozen=True)
class TaskRow:
    """One line of ``r2med tasks``."""

    name: str
    family: str
    queries: int
    docs: int
    judgments: int
    note: str
    revision: str
    facts: Mapping[str, Any]


class Benchmark(abc.ABC):
    """A benchmark family: its tasks, its protocol, its hub data."""

    name: str
    title: str

    @abc.abstractmethod
    def task_names(self) -> tuple[str, ...]:
        """Its tasks as r2med names them, in the family's order."""

    @abc.abstractmethod
    def aliases(self) -> Mapping[str, tuple[str, ...]]:
        """Words ``--tasks`` takes for several of its tasks (lower case -> names)."""

    @abc.abstractmethod
    def canonical(self, name: str) -> str | None:
        """r2med's spelling of one of its task names (any case and accepted spelling), or None: not its task."""

    def owns(self, name: str) -> bool:
        return self.canonical(name) is not None

    @abc.abstractmethod
    def hub_task(self, name: str) -> str:
        """The hub task a name reads (its key in ``--revision`` pairs)."""

    @abc.abstractmethod
    def protocol(self, name: str) -> Protocol:
        """The protocol task ``name`` follows."""

    @abc.abstractmethod
    def hub_request(
        self, name: str, revision: str | None, expansions: Sequence[tuple[str, str]] = (), corpus: bool = True
    ) -> HubRequest:
        """The files task ``name`` needs (``expansions``: ``(method, llm)`` read from the hub; ``corpus``: False for
        judgments only) at the revision ``revision`` (a ``--revision`` spec) gives it."""

    @abc.abstractmethod
    def load(self, name: str, revision: str | None = None, strict: bool = False, corpus: bool = True) -> Collection:
        """Task ``name`` from the hub (``corpus``: False reads no documents)."""

    @abc.abstractmethod
    def rows(self) -> list[TaskRow]:
        """Its tasks for ``r2med tasks``."""

    def published(self) -> Any:
        """Where its published figures are looked up (the hook graded rows start from)."""
        return None

    def model_settings(self, retriever: str, task: str) -> ModelSettings | None:
        """Its own settings for retriever ``retriever`` (an r2med retriever name) on its task ``task``, where the
        family defines any (None: the preset's own).  The hook per-model presets read (BRIGHT's instructions and
        lengths: :mod:`r2med.protocol.bright`); looked up in the family's records, never by testing names."""
        return None

    def settings_summary(self, retriever: str) -> Mapping[str, Any] | None:
        """Its settings for ``retriever`` across its tasks, for ``r2med models`` (None: it defines none)."""
        return None


class R2med(Benchmark):
    """R2MED: 8 tasks, one hub repository each (``R2MED/<Task>``), at the commits MTEB pins."""

    name = "r2med"
    title = "R2MED"

    def task_names(self) -> tuple[str, ...]:
        from .tasks import TASK_NAMES

        return tuple(TASK_NAMES)

    def aliases(self) -> Mapping[str, tuple[str, ...]]:
        return {word: tasks for word, tasks in names.aliases().items() if word in names.R2MED_ALIASES}

    def canonical(self, name: str) -> str | None:
        return names.canonical_task(name) if names.family_of(name) == self.name else None

    def hub_task(self, name: str) -> str:
        return names.canonical_task(name)

    def protocol(self, name: str) -> Protocol:
        return r2med_protocol()

    def hub_request(
        self, name: str, revision: str | None, expansions: Sequence[tuple[str, str]] = (), corpus: bool = True
    ) -> HubRequest:
        from .hub import TASK_FILES, expansion_path, task_revision
        from .tasks import get_task

        spec = get_task(name)
        if any(method == names.REASON for method, _ in expansions):
            raise OptionError(
                f"{spec.name}: {names.REASON}:<llm> names BRIGHT's reasoning query sets; R2MED's tasks have "
                "none (their expansions: hyde, query2doc, lamer...)"
            )
        wanted, why = task_revision(spec.name, revision, expansions)
        files = [f for f in TASK_FILES if corpus or f != "corpus.jsonl"]
        paths = (*files, *(expansion_path(method, llm) for method, llm in expansions))
        return HubRequest(spec.hub_id, tuple(paths), wanted, why)

    def load(self, name: str, revision: str | None = None, strict: bool = False, corpus: bool = True) -> Collection:
        from .hub import load_from_hub

        return load_from_hub(names.canonical_task(name), revision=revision, strict=strict, corpus=corpus)

    def rows(self) -> list[TaskRow]:
        from .tasks import TASKS

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

    def published(self) -> Any:
        from ..protocol import published_figures

        return published_figures()


class Bright(Benchmark):
    """BRIGHT: 12 tasks in one hub dataset (``xlangai/BRIGHT``), at the commit mteb pins; ``bright:<task>:long``
    for the long-document setting of 8 of them."""

    name = "bright"
    title = "BRIGHT"

    def task_names(self) -> tuple[str, ...]:
        return names.names()

    def aliases(self) -> Mapping[str, tuple[str, ...]]:
        return {word: tasks for word, tasks in names.aliases().items() if word.startswith(self.name)}

    def canonical(self, name: str) -> str | None:
        return names.parse_name(name).name if names.is_bright(name) else None

    def hub_task(self, name: str) -> str:
        return names.parse_name(name).hub_task

    def protocol(self, name: str) -> Protocol:
        return bright_protocol(names.parse_name(name).long)

    def hub_request(
        self, name: str, revision: str | None, expansions: Sequence[tuple[str, str]] = (), corpus: bool = True
    ) -> HubRequest:
        from ..protocol import bright as facts
        from . import bright

        parsed = names.parse_name(name)
        others = [f"{m}:{llm}" for m, llm in expansions if m != names.REASON]
        if others:
            raise OptionError(
                f"{parsed.name}: BRIGHT's hub holds no {others[0]} expansions (its query sets are "
                f"{names.REASON}:<llm>: {', '.join(r.name for r in facts.hub().reasoning_sets)}); "
                "pass --expansion-file or --expansion-dir for your own"
            )
        wanted, why = bright.revision_for(parsed.name, revision)
        # a reasoning set the record shows absent at that commit is read at one that holds it (checked when read)
        here = bright.reasoning_commit(wanted)[0] == wanted
        paths = bright.files(parsed.name, corpus=corpus, reasoning=[llm for _, llm in expansions] if here else [])
        return HubRequest(facts.hub().repo_id, tuple(paths), wanted, why)

    def load(self, name: str, revision: str | None = None, strict: bool = False, corpus: bool = True) -> Collection:
        from . import bright

        return bright.load(name, revision=revision, strict=strict, corpus=corpus)

    def rows(self) -> list[TaskRow]:
        from ..protocol import bright as facts

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

    def published(self) -> Any:
        from ..protocol import bright as facts

        return facts.published_rows()

    def model_settings(self, retriever: str, task: str) -> ModelSettings | None:
        """BRIGHT's settings for the BRIGHT model whose record names ``retriever`` as its r2med preset
        (``bright_models.json``): instructions from ``configs/<model>/<task>.json`` (``instructions_long`` in the long
        setting) with ``{task}`` filled as BRIGHT fills it (the raw task id), and the lengths, pooling,
        normalisation, loader and similarity of its ``retrievers.py`` function."""
        from ..protocol import bright as facts

        model = facts.model_for_preset(retriever)
        if model is None:
            return None
        parsed = names.parse_name(task)
        block = dict(model.r2med_encoder)
        sources = {**model.sources, **dict(block.pop("sources", None) or {})}
        similarity = block.pop("similarity", None)
        for fact in _REGISTRY_FACTS:  # a defined preset's registry facts, not settings
            block.pop(fact, None)
        encoder: dict[str, Any] = {}
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
        )

    def settings_summary(self, retriever: str) -> Mapping[str, Any] | None:
        from ..protocol import bright as facts

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


R2MED = R2med()
BRIGHT = Bright()
#: every family r2med runs, R2MED's first (the order of ``r2med tasks``, of report columns)
BENCHMARKS: tuple[Benchmark, ...] = (R2MED, BRIGHT)


def benchmark(name: str) -> Benchmark:
    """A family by its name (``r2med``, ``bright``)."""
    for b in BENCHMARKS:
        if b.name == name:
            return b
    raise OptionError(f"unknown benchmark {shown(name)}; choose from: {', '.join(b.name for b in BENCHMARKS)}")


def benchmark_of(task: str) -> Benchmark | None:
    """The family whose task ``task`` is (any accepted spelling), or None: not a benchmark's task (a local
    collection).  A malformed name of a family (``bright:nosuch``) is that family's one-line error."""
    family = names.family_of(task)
    return None if family is None else benchmark(family)


def protocol_of(collection: Collection) -> Protocol:
    """The protocol a collection follows: its family's for a benchmark's task, else :func:`local_protocol`."""
    if collection.benchmark is None:
        return local_protocol()
    return benchmark(collection.benchmark).protocol(collection.name)


def protocol_of_task(task: str) -> Protocol:
    """The protocol of a task by name (a local collection's name: :func:`local_protocol`)."""
    try:
        family = benchmark_of(task)
    except OptionError:
        return local_protocol()
    return family.protocol(task) if family is not None else local_protocol()


def parse_tasks(spec: str | Iterable[str] | None, long_documents: bool = False) -> list[str]:
    """:func:`r2med.data.names.parse_tasks`: a ``--tasks`` spec over both families."""
    return names.parse_tasks(spec, long_documents)
