"""Benchmark families: a family is a plug-in -- its data plus its protocol, asked -- never a fork of the code.

A family (R2MED: :mod:`r2med.families.r2med`; BRIGHT: :mod:`r2med.families.bright`; any package's, through the
``r2med.benchmarks`` entry point) is one :class:`Benchmark` that answers every question the rest of the code asks of
a benchmark; nothing else names a family:

* :class:`Protocol` -- how a task's runs are made and scored: the run depth, the measures stored, the headline
  measure, where judgments come from, whether queries carry exclusions removed before the cut, and how the benchmark
  averages; :func:`protocol_of` gives a collection's (a local folder follows :func:`local_protocol`);
* :class:`Benchmark` -- a family: its task names and aliases (``--tasks``), the hub files a task needs at its revision
  (checked before any download), how a task loads (with or without its documents), the table of ``r2med tasks``, and
  its own settings for a model (:meth:`Benchmark.model_settings`).  A family with published figures also gives its
  table (``published()``: :class:`r2med.results.grading.Publishes`, a layer above this one).

The registry (:func:`benchmarks`) holds r2med's own families, then those other packages declare under the entry-point
group :data:`GROUP` (``[project.entry-points."r2med.benchmarks"]``: ``name = "package.module:OBJECT"``), then those
registered in code (:func:`register`); the first of a name wins.  Families load lazily, on the first question
(importing this module imports none of them).  :func:`r2med.data.names.parse_tasks` is the one reading of a
``--tasks`` spec over every family.
"""

from __future__ import annotations

import abc
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import import_module
from importlib.metadata import entry_points
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import OptionError, shown
from ..expansion_name import ExpansionName
from ..infra.json_types import JsonObject, JsonValue
from ..measures import DEFAULT_MEASURES, HEADLINE, Measure

if TYPE_CHECKING:
    from .collection import Collection

log = logging.getLogger(__name__)


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

    def record(self, collection: Collection) -> JsonObject:
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


@cache
def local_protocol() -> Protocol:
    """A local collection's (``--data-dir``): no family; depth 100, the default measures, the headline first."""
    return Protocol(None, 100, DEFAULT_MEASURES, HEADLINE, "the folder's", "the folder's", False, "")


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
    encoder: Mapping[str, JsonValue]
    similarity: str | None  #: how the family scores the vectors (None: not a vector model)
    score_scale: float  #: the factor the family multiplies its similarity by (recorded; it changes no ranking)
    batch_size: int | None  #: the family's batch (recorded; it changes no vector: r2med keeps its own)
    differences: tuple[str, ...]  #: how they differ from the preset's settings in its own family
    sources: Mapping[str, str]  #: file:line of each setting
    checkpoint: str | None = None  #: the checkpoint the family's code loaded (None: the preset's own)

    def record(self) -> JsonObject:
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
    facts: Mapping[str, JsonValue]  #: the family's own facts of the task (open: each family's columns)


@dataclass(frozen=True)
class TaskColumn:
    """A column of a family's table in ``r2med tasks``."""

    title: str
    justify: str = "right"  #: ``left`` or ``right``
    no_wrap: bool = True


@dataclass(frozen=True)
class TaskTable:
    """A family's table in ``r2med tasks``: its title, columns, rows (one text per column) and the notes under it."""

    title: str
    columns: tuple[TaskColumn, ...]
    rows: tuple[tuple[str, ...], ...]
    notes: tuple[str, ...] = ()


class Benchmark(abc.ABC):
    """A benchmark family: its tasks, its protocol, its hub data."""

    name: str  #: its registry name (the ``family`` of its records)
    title: str  #: how text names it (``R2MED``)
    has_long_documents: bool = False  #: whether some of its tasks have a long-document setting
    #: whether a copy of its task in a local folder (``--data-dir``) stands for the task and may be graded (R2MED:
    #: its folder layout, checked by the copy's counts); False: its tasks are read from the hub only
    local_copies: bool = False
    #: the name of MTEB's benchmark of its tasks, one MTEB task per hub dataset of a task (R2MED's ``R2MED``), or
    #: None: MTEB has none r2med's export can file its results under (``r2med export`` refuses them)
    mteb_benchmark: str | None = None

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
        self, name: str, revision: str | None, expansions: Sequence[ExpansionName] = (), corpus: bool = True
    ) -> HubRequest:
        """The files task ``name`` needs (``expansions``: those read from the hub; ``corpus``: False for
        judgments only) at the revision ``revision`` (a ``--revision`` spec) gives it."""

    @abc.abstractmethod
    def load(self, name: str, revision: str | None = None, strict: bool = False, corpus: bool = True) -> Collection:
        """Task ``name`` from the hub (``corpus``: False reads no documents)."""

    @abc.abstractmethod
    def rows(self) -> list[TaskRow]:
        """Its tasks for ``r2med tasks --format json`` (and the facts its table shows)."""

    @abc.abstractmethod
    def task_table(self, wide: bool) -> TaskTable:
        """Its table in ``r2med tasks`` (``wide``: every column at full width)."""

    @abc.abstractmethod
    def choices(self) -> str:
        """Its task names as an unknown task's error lists them (``BRIGHT's bright:<task> (bright: the 12)``)."""

    def long_setting(self, name: str) -> str | None:
        """The long-document setting of its task ``name`` (``--long-documents``), or None: the family has none (a
        task of a family that has them but not this task's is the family's one-line error)."""
        return None

    def reasoning_queries(
        self, collection: Collection, llm: str, file: Path | None = None, strict: bool = False
    ) -> tuple[dict[str, str], Path] | None:
        """The reasoning query set of ``llm`` its hub holds for its task ``collection`` (each query replaced by the
        LLM's reasoning, read at the commit the data came from; or from ``file``, one task's file of the set:
        ``--expansion-file``; ``strict``: a repeated query id refused) and the file read, or None: the family holds
        no reasoning sets."""
        return None

    def expansion_file(self, task: str, method: str, llm: str, revision: str | None) -> Path | None:
        """Its hub's file of the ``method:llm`` expansions of its task ``task`` (r2med's exact name) at
        ``revision`` (a ``--revision`` spec or the data's commit), or None: its hub holds no expansion files."""
        return None

    def model_settings(self, retriever: str, task: str) -> ModelSettings | None:
        """Its own settings for retriever ``retriever`` (an r2med retriever name) on its task ``task``, where the
        family defines any (None: the preset's own).  The hook per-model presets read (BRIGHT's instructions and
        lengths: :mod:`r2med.protocol.bright`); looked up in the family's records, never by testing names."""
        return None

    def settings_summary(self, retriever: str) -> Mapping[str, JsonValue] | None:
        """Its settings for ``retriever`` across its tasks, for ``r2med models`` (None: it defines none)."""
        return None


# -- the registry --------------------------------------------------------------------------------------------------

#: the entry-point group other packages declare their families under
GROUP = "r2med.benchmarks"
#: r2med's own families, in the order of ``r2med tasks`` and of report columns (also declared under :data:`GROUP`
#: in pyproject.toml; listed here so a source tree run without installing finds them)
BUILT_IN = {"r2med": "r2med.families.r2med:R2MED", "bright": "r2med.families.bright:BRIGHT"}
_registered: dict[str, Benchmark] = {}
_NAME = re.compile(r"[a-z][a-z0-9_-]{0,39}")


def _load(value: str) -> Benchmark:
    module, _, attr = value.partition(":")
    found = getattr(import_module(module), attr)
    if not isinstance(found, Benchmark):
        raise OptionError(f"benchmark entry point {value}: not a r2med.data.benchmarks.Benchmark")
    return found


def _clash(family: object, known: Sequence[Benchmark]) -> str | None:
    """Why ``family`` cannot join the families ``known`` (None: it can): not a :class:`Benchmark`, a name that is
    no plain word, a name taken, or a task name or ``--tasks`` word another family already answers to (the first
    family would silently win it, and ``--tasks r2med`` could mean another family's tasks)."""
    if not isinstance(family, Benchmark):
        return f"{type(family).__name__} is not a r2med.data.benchmarks.Benchmark"
    name = family.name
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        return f"its name {shown(name)} is not a lower-case word (a-z, 0-9, - and _)"
    if name in {b.name for b in known}:
        return f"benchmark {shown(name)} is already registered"
    words = {w.lower(): b.name for b in known for w in b.aliases()}
    for word in family.aliases():
        if word.lower() in words:
            return f"its --tasks word {shown(word)} is already {words[word.lower()]}'s"
    for task in (*family.task_names(), *family.aliases()):
        owner = next((b.name for b in known if b.owns(task)), None)
        if owner is not None:
            return f"its task {shown(task)} is already {owner}'s"
    return None


def register(family: Benchmark) -> Benchmark:
    """Add ``family`` to the registry (after the built-in and entry-point families); a name taken, or a task name or
    ``--tasks`` word another family answers to, is refused."""
    problem = _clash(family, benchmarks())
    if problem is not None:
        raise OptionError(f"cannot register a benchmark family: {problem}")
    _registered[family.name] = family
    return family


@cache
def _discovered() -> tuple[Benchmark, ...]:
    found = {name: _load(value) for name, value in BUILT_IN.items()}
    for point in entry_points(group=GROUP):
        if point.name in found:
            if point.value != BUILT_IN.get(point.name):
                log.warning("entry point %s of %s: the name is taken; ignored", point.name, GROUP)
            continue
        try:
            family = _load(point.value)
        except Exception as exc:  # a package's broken plug-in never stops r2med: named, skipped
            log.warning("entry point %s = %s of %s: %s; ignored", point.name, point.value, GROUP, shown(str(exc)))
            continue
        problem = _clash(family, tuple(found.values()))
        if problem is not None:
            log.warning("entry point %s = %s of %s: %s; ignored", point.name, point.value, GROUP, problem)
            continue
        found[point.name] = family
    return tuple(found.values())


def benchmarks() -> tuple[Benchmark, ...]:
    """Every family: r2med's own first, then the entry points', then those registered in code."""
    return (*_discovered(), *_registered.values())


def benchmark(name: str) -> Benchmark:
    """A family by its name (``r2med``, ``bright``)."""
    for b in benchmarks():
        if b.name == name:
            return b
    raise OptionError(f"unknown benchmark {shown(name)}; choose from: {', '.join(b.name for b in benchmarks())}")


def benchmark_of(task: str) -> Benchmark | None:
    """The family whose task ``task`` is (any accepted spelling), or None: not a benchmark's task (a local
    collection).  A malformed name of a family (``bright:nosuch``) is that family's one-line error."""
    return next((b for b in benchmarks() if b.owns(task)), None)


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
