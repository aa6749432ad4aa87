"""BRIGHT's protocol facts -- the benchmark R2MED's code forks -- typed, read lazily from the package data.

Files (every entry names its source inside; docs/bright.md explains the protocol point by point):

* ``bright_tasks.json``: the 12 tasks (BRIGHT's hub names, sizes, judgment and exclusion counts), the hub
  dataset ``xlangai/BRIGHT`` (pinned revision, file layout, columns) and the LLM reasoning query sets;
* ``bright_models.json``: each retriever as BRIGHT's code runs it (checkpoint, pooling, max lengths, scoring,
  instructions per task exactly as ``configs/<model>/<task>.json`` hold them, with ``{task}`` unfilled), the
  r2med preset with the same checkpoint and how r2med's encoders run BRIGHT's setting (``r2med_encoder``: read by
  :meth:`r2med.data.benchmarks.Bright.model_settings`), Pyserini's two-click reproductions, ``rerank.py``'s
  conventions and its LLM prompt (:func:`rerank_prompt`);
* ``bright_published.csv``: published figures -- the paper's table, the leaderboard's averages, Pyserini's
  reproductions, later papers -- one row per setting x retriever x queries x reranker x documents x measure x task;
* ``bright_contamination.json``: models trained on data rebuilt from BRIGHT's documents and the tasks that touches
  (R2MED's Biology shares BRIGHT biology's documents), looked up by checkpoint (:func:`contamination_of`).

Task names are BRIGHT's (``earth_science``); :func:`task` also takes ``bright:earth-science`` and Anserini's hyphens.
Instructions are filled as BRIGHT fills them (:func:`fill_instruction`): ``template.format(task=<BRIGHT task name>)``.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from types import MappingProxyType
from typing import TypedDict, TypeVar

from ..errors import OptionError, R2MedError, did_you_mean, shown
from ..infra.json_types import JsonObject, JsonValue
from ..infra.records import field_names, refuse_unknown_keys
from ..measures import HEADLINE, Family, Measure

#: The prefix of a BRIGHT task's qualified name (``bright:biology``); R2MED's tasks keep their own names.
FAMILY = "bright"


def _text(name: str) -> str:
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


_V = TypeVar("_V")


def _frozen(data: Mapping[str, _V] | None) -> Mapping[str, _V]:
    return MappingProxyType(dict(data or {}))


# ---------------------------------------------------------------- the files' shapes (r2med's own package data, checked
# by the tests; a model's entry is read field by field, each checked: :func:`_model_from`)


class _TaskRow(TypedDict):
    """A task of ``bright_tasks.json`` (:class:`BrightTask`'s fields, and its hub split and Anserini name)."""

    name: str
    display_name: str
    group: str
    hub_split: str
    anserini_name: str
    queries: int
    documents: int
    gold_ids: int
    gold_pairs: int
    qrels_lines: int
    fixed_qrels_lines: int
    long_documents: int | None
    long_gold_ids: int | None
    queries_with_exclusions: int
    excluded_ids: int
    no_exclusion_marker: list[str] | None
    mteb_a75a0eb: dict[str, int | float]
    paper: dict[str, int | float | str]
    sources: dict[str, str]


class _HubRow(TypedDict):
    repo_id: str
    revision: str
    revision_source: str
    bright_code_revision: str
    paths: dict[str, str]
    paths_source: str
    example_columns: list[str]
    document_columns: list[str]
    columns_source: str
    long_document_tasks: list[str]
    long_document_tasks_source: str
    revision_caveats: list[str]


class _ReasoningRow(TypedDict):
    name: str
    config: str
    llm: str


class _TasksFile(TypedDict):
    """``bright_tasks.json``."""

    _source: str
    hub: _HubRow
    reasoning_sets: list[_ReasoningRow]
    reasoning_sets_source: str
    tasks: list[_TaskRow]


class RerankPrompt(TypedDict):
    """``rerank.py``'s LLM prompt, its sampling and answer pattern, the cross-encoder's batch and the leaderboard's
    reranking models (model -> the reranker that runs it), each with its source."""

    _source: str
    system: str
    system_source: str
    document_line: str
    document_line_source: str
    query_newline: str
    query_newline_source: str
    user: str
    user_source: str
    sampling: dict[str, float]
    sampling_source: str
    answer_pattern: str
    answer_pattern_source: str
    cross_encoder_batch_size: int
    cross_encoder_source: str
    leaderboard_models: dict[str, str]
    leaderboard_models_source: str


class _ModelsFile(TypedDict):
    """``bright_models.json``; the facts kept as they are written (task filling, Pyserini's reproductions, the
    reasoning generation, what BRIGHT's code lacks) are read by their accessors as JSON objects."""

    _source: str
    bright_commit: str
    task_filling: JsonObject
    models: dict[str, JsonObject]
    leaderboard_names: dict[str, str]
    leaderboard_names_source: str
    not_in_bright_code: JsonObject
    reproductions: JsonObject
    rerank: dict[str, str]
    reasoning_generation: JsonObject
    rerank_prompt: RerankPrompt


class _TrainingSet(TypedDict):
    tasks: list[str]
    how: str
    sources: list[str]
    certainty: str


class _ContaminatedModel(TypedDict, total=False):
    model: str
    training_set: str
    r2med_presets: list[str]
    sources: list[str]
    certainty: str
    note: str


class _ContaminationFile(TypedDict):
    """``bright_contamination.json``."""

    _source: str
    shared_corpora: dict[str, str]
    shared_corpora_source: str
    training_sets: dict[str, _TrainingSet]
    models: list[_ContaminatedModel]
    not_determined: JsonObject


@cache
def _tasks_file() -> _TasksFile:
    data: _TasksFile = json.loads(_text("bright_tasks.json"))
    return data


@cache
def _models_file() -> _ModelsFile:
    data: _ModelsFile = json.loads(_text("bright_models.json"))
    return data


@cache
def _contamination_file() -> _ContaminationFile:
    data: _ContaminationFile = json.loads(_text("bright_contamination.json"))
    return data


# ---------------------------------------------------------------- hub and tasks


@dataclass(frozen=True)
class ReasoningSet:
    """One LLM reasoning query set on the hub: its files hold the examples with ``query`` replaced by the LLM's text."""

    name: str  #: BRIGHT's ``--reasoning`` value (``gpt4``)
    config: str  #: the hub folder / config (``gpt4_reason``)
    llm: str  #: the LLM that wrote it, as the leaderboard names it


@dataclass(frozen=True)
class HubLayout:
    """Where BRIGHT's files live on the hub and what their columns are."""

    repo_id: str
    revision: str
    revision_source: str
    paths: Mapping[str, str]  #: config kind -> path template with ``{task}`` (and ``{config}`` for reasoning sets)
    example_columns: tuple[str, ...]
    document_columns: tuple[str, ...]
    long_document_tasks: tuple[str, ...]
    reasoning_sets: tuple[ReasoningSet, ...]

    def path(self, config: str, task_name: str) -> str:
        """The file of ``config`` (``examples``, ``documents``, ``long_documents`` or a reasoning config such as
        ``gpt4_reason``) for ``task_name``: ``documents/biology-00000-of-00001.parquet``."""
        name = task(task_name).name
        if config in self.paths and config != "reasoning":
            if config == "long_documents" and name not in self.long_document_tasks:
                raise OptionError(
                    f"BRIGHT task {name!r} has no long documents (only {', '.join(self.long_document_tasks)})"
                )
            return self.paths[config].format(task=name)
        configs = [r.config for r in self.reasoning_sets]
        if config not in configs:
            known = ["examples", "documents", "long_documents", *configs]
            raise OptionError(
                f"no BRIGHT hub config {shown(config)}{did_you_mean(config, known)}; choose from: {', '.join(known)}"
            )
        return self.paths["reasoning"].format(config=config, task=name)


@dataclass(frozen=True)
class BrightTask:
    """One BRIGHT task with its sizes; ``sources`` names where each count comes from."""

    name: str  #: BRIGHT's name and hub split (``earth_science``)
    display_name: str
    group: str  #: StackExchange, Coding or Theorems
    queries: int
    documents: int
    gold_ids: int  #: entries of ``gold_ids`` over all queries
    gold_pairs: int  #: distinct (query, gold id) pairs = judgments (relevance 1)
    qrels_lines: int  #: Anserini's plain qrels
    fixed_qrels_lines: int  #: Anserini's corrected ("fixed") qrels
    long_documents: int | None  #: None: no long-document setting
    long_gold_ids: int | None
    queries_with_exclusions: int
    excluded_ids: int
    no_exclusion_marker: tuple[str, ...] | None  #: what a query without exclusions holds (``("N/A",)`` or ``()``)
    paper: Mapping[str, int | float | str]  #: the paper's dataset table row (an early version)
    mteb_a75a0eb: Mapping[str, int | float]  #: what mteb's statistics say of the pinned revision
    sources: Mapping[str, str]

    @property
    def qualified_name(self) -> str:
        return f"{FAMILY}:{self.name}"

    @property
    def anserini_name(self) -> str:
        return self.name.replace("_", "-")

    @property
    def has_long_documents(self) -> bool:
        return self.long_documents is not None


#: the keys a task of ``bright_tasks.json`` holds (declared once: :class:`_TaskRow`)
_TASK_KEYS = tuple(_TaskRow.__annotations__)


def _task_from(row: _TaskRow) -> BrightTask:
    refuse_unknown_keys(row, _TASK_KEYS, f"bright_tasks.json: task {row.get('name')!r}")
    marker = row["no_exclusion_marker"]
    return BrightTask(
        name=row["name"],
        display_name=row["display_name"],
        group=row["group"],
        queries=row["queries"],
        documents=row["documents"],
        gold_ids=row["gold_ids"],
        gold_pairs=row["gold_pairs"],
        qrels_lines=row["qrels_lines"],
        fixed_qrels_lines=row["fixed_qrels_lines"],
        long_documents=row["long_documents"],
        long_gold_ids=row["long_gold_ids"],
        queries_with_exclusions=row["queries_with_exclusions"],
        excluded_ids=row["excluded_ids"],
        no_exclusion_marker=None if marker is None else tuple(marker),
        paper=_frozen(row["paper"]),
        mteb_a75a0eb=_frozen(row["mteb_a75a0eb"]),
        sources=_frozen(row["sources"]),
    )


@cache
def tasks() -> tuple[BrightTask, ...]:
    """The 12 tasks in BRIGHT's order (StackExchange, coding, theorems)."""
    return tuple(_task_from(row) for row in _tasks_file()["tasks"])


def task_names() -> tuple[str, ...]:
    return tuple(t.name for t in tasks())


def task(name: str) -> BrightTask:
    """A task by BRIGHT's name, case-insensitively; a ``bright:`` prefix and hyphens are accepted
    (``bright:earth-science``)."""
    key = name.strip()
    if key.lower().startswith(f"{FAMILY}:"):
        key = key[len(FAMILY) + 1 :]
    key = key.lower().replace("-", "_")
    for t in tasks():
        if t.name == key:
            return t
    names = task_names()
    raise OptionError(f"unknown BRIGHT task {shown(name)}{did_you_mean(key, names)}; choose from: {', '.join(names)}")


@cache
def hub() -> HubLayout:
    data = _tasks_file()
    h = data["hub"]
    return HubLayout(
        repo_id=h["repo_id"],
        revision=h["revision"],
        revision_source=h["revision_source"],
        paths=_frozen(h["paths"]),
        example_columns=tuple(h["example_columns"]),
        document_columns=tuple(h["document_columns"]),
        long_document_tasks=tuple(h["long_document_tasks"]),
        reasoning_sets=tuple(ReasoningSet(r["name"], r["config"], r["llm"]) for r in data["reasoning_sets"]),
    )


def reasoning_set(name: str) -> ReasoningSet:
    """A reasoning query set by BRIGHT's ``--reasoning`` name (``gpt4``) or its hub config (``gpt4_reason``)."""
    for r in hub().reasoning_sets:
        if name in (r.name, r.config):
            return r
    known = [r.name for r in hub().reasoning_sets]
    raise OptionError(
        f"no BRIGHT reasoning set {shown(name)}{did_you_mean(name, known)}; choose from: {', '.join(known)}"
    )


def revision_caveats() -> tuple[str, ...]:
    """Known differences between the pinned revision and other states of the hub data (each with its source)."""
    return tuple(_tasks_file()["hub"]["revision_caveats"])


# ---------------------------------------------------------------- models and instructions


def fill_instruction(template: str, task_name: str) -> str:
    """An instruction as BRIGHT fills it: ``template.format(task=TASK)`` with TASK the ``--task`` value itself
    (retrievers.py:96-97, 266, 273, 288): ``earth_science``, not its display name."""
    return template.format(task=task(task_name).name)


#: The instruction tables a model may have: (setting, text kind) -> the key in ``bright_models.json``.
INSTRUCTION_TABLES = ("standard_query", "standard_document", "long_query", "long_document")


@dataclass(frozen=True)
class BrightModel:
    """One BRIGHT retriever as BRIGHT's code runs it; ``sources`` names file:line for its settings."""

    name: str  #: BRIGHT's ``--model`` value (``sf``, ``inst-l``...)
    kind: str  #: bm25, dense or api
    display_name: str
    model: str | None  #: checkpoint or API model
    loader: str
    pooling: str | None
    normalize: bool | None
    similarity: str
    score_scale: float  #: what BRIGHT multiplies the similarity by (the ranking is the same)
    query_max_length: int | None  #: None: no truncation by BRIGHT's code (the model's own limit)
    doc_max_length: int | None
    max_length_note: str
    batch_size: int | None
    trust_remote_code: bool
    framing: str | None
    instruction_filling: str | None
    instructions: Mapping[str, Mapping[str, str]]  #: INSTRUCTION_TABLES key -> task -> template ({task} unfilled)
    r2med_preset: str | None  #: the r2med retriever with the same checkpoint, if any
    r2med_same: bool  #: whether that preset's R2MED settings equal BRIGHT's
    r2med_differences: tuple[str, ...]
    extra: Mapping[str, JsonValue]  #: kind-specific facts (BM25's k1, b, analyzer, query weighting; notes)
    sources: Mapping[str, str]
    #: how r2med's encoders run BRIGHT's setting: ``EncoderSettings`` fields (loader, pooling, normalize, max lengths,
    #: dtype, framing, extra), ``similarity``, a defined preset's registry facts, and ``sources`` (empty: none)
    r2med_encoder: Mapping[str, JsonValue] = field(default_factory=lambda: MappingProxyType({}))
    #: r2med defines the preset :attr:`r2med_preset` from this record (a BRIGHT model r2med had none for)
    defines_preset: bool = False

    def instruction_template(self, task_name: str, kind: str = "query", long: bool = False) -> str | None:
        """The unfilled instruction for ``task_name`` (None: the model has none for it).

        ``long``: the long-document setting (``instructions_long``), which exists for 8 tasks only.
        """
        if kind not in ("query", "document"):
            raise OptionError(f"instruction kind must be 'query' or 'document', not {shown(kind)}")
        name = task(task_name).name
        if long and not task(name).has_long_documents:
            raise OptionError(f"BRIGHT task {name!r} has no long-document setting")
        table = self.instructions.get(f"{'long' if long else 'standard'}_{kind}", {})
        return table.get(name)

    def encoder_sources(self) -> dict[str, str]:
        """The sources of the ``r2med_encoder`` block's settings (setting -> file:line; empty: none)."""
        found = self.r2med_encoder.get("sources")
        return {k: str(v) for k, v in found.items()} if isinstance(found, dict) else {}

    def encoder_similarity(self) -> str | None:
        """How r2med scores the vectors in BRIGHT's setting (the ``r2med_encoder`` block's ``similarity``)."""
        found = self.r2med_encoder.get("similarity")
        return found if isinstance(found, str) else None

    def instruction(self, task_name: str, kind: str = "query", long: bool = False) -> str:
        """The instruction BRIGHT prepends for ``task_name``, filled as BRIGHT fills it (``""``: none)."""
        template = self.instruction_template(task_name, kind, long)
        return "" if template is None else fill_instruction(template, task_name)


#: the keys an entry of ``bright_models.json`` holds for :class:`BrightModel`'s fields (declared once, there):
#: every field but its ``name`` (the entry's key) and ``extra`` (:data:`_MODEL_EXTRA`), and the source of its
#: instructions (``instructions_source``: kept in :attr:`BrightModel.sources`)
_MODEL_FIELDS = (*(f for f in field_names(BrightModel) if f not in ("name", "extra")), "instructions_source")
#: keys an entry may hold beyond the fields: they go to :attr:`BrightModel.extra`
_MODEL_EXTRA = ("k1", "b", "analyzer", "query_weighting", "batch_size_note")


_T = TypeVar("_T")


class _Entry:
    """A model's entry of ``bright_models.json`` read field by field: a value of another type than its field's is
    a packaging error naming the model and the key."""

    def __init__(self, name: str, entry: Mapping[str, JsonValue]) -> None:
        self.name, self.entry = name, entry

    def fault(self, key: str) -> ValueError:
        return ValueError(f"bright_models.json: model {self.name!r}: {key} is {shown(self.entry.get(key))}")

    def value(self, key: str, kind: type[_T]) -> _T:
        found = self.entry[key]
        if not isinstance(found, kind):
            raise self.fault(key)
        return found

    def optional(self, key: str, kind: type[_T]) -> _T | None:
        return None if self.entry[key] is None else self.value(key, kind)

    def number(self, key: str) -> float:
        found = self.entry[key]
        if isinstance(found, bool) or not isinstance(found, (int, float)):
            raise self.fault(key)
        return float(found)

    def texts(self, value: JsonValue, key: str) -> dict[str, str]:
        """``value`` (the entry's ``key`` or a part of it) as an object of texts."""
        if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
            raise self.fault(key)
        return {k: str(v) for k, v in value.items()}


def _model_from(name: str, entry: Mapping[str, JsonValue]) -> BrightModel:
    refuse_unknown_keys(entry, (*_MODEL_FIELDS, *_MODEL_EXTRA), f"bright_models.json: model {name!r}")
    read = _Entry(name, entry)
    tables = read.optional("instructions", dict) or {}
    refuse_unknown_keys(tables, INSTRUCTION_TABLES, f"bright_models.json: model {name!r} instructions")
    encoder = read.optional("r2med_encoder", dict) if "r2med_encoder" in entry else None
    return BrightModel(
        name=name,
        kind=read.value("kind", str),
        display_name=read.value("display_name", str),
        model=read.optional("model", str),
        loader=read.value("loader", str),
        pooling=read.optional("pooling", str),
        normalize=read.optional("normalize", bool),
        similarity=read.value("similarity", str),
        score_scale=read.number("score_scale"),
        query_max_length=read.optional("query_max_length", int),
        doc_max_length=read.optional("doc_max_length", int),
        max_length_note=read.value("max_length_note", str),
        batch_size=read.optional("batch_size", int),
        trust_remote_code=bool(entry["trust_remote_code"]),
        framing=read.optional("framing", str),
        instruction_filling=read.optional("instruction_filling", str),
        instructions=MappingProxyType({k: _frozen(read.texts(v, "instructions")) for k, v in tables.items()}),
        r2med_preset=read.optional("r2med_preset", str),
        r2med_same=bool(entry["r2med_same"]),
        r2med_differences=tuple(str(d) for d in read.value("r2med_differences", list)),
        extra=_frozen({k: entry[k] for k in _MODEL_EXTRA if k in entry}),
        sources=_frozen(
            {**read.texts(entry["sources"], "sources"), "instructions": read.value("instructions_source", str)}
        ),
        r2med_encoder=_frozen(encoder),
        defines_preset=bool(entry.get("defines_preset", False)),
    )


@cache
def models() -> Mapping[str, BrightModel]:
    """BRIGHT's retrievers by BRIGHT's ``--model`` name."""
    entries = _models_file()["models"]
    return MappingProxyType({name: _model_from(name, entry) for name, entry in entries.items()})


def model(name: str) -> BrightModel:
    """A BRIGHT retriever by BRIGHT's name (``sf``) or the leaderboard's (``sfr``)."""
    found = models()
    key = _models_file()["leaderboard_names"].get(name, name)
    if key not in found:
        raise OptionError(
            f"unknown BRIGHT retriever {shown(name)}{did_you_mean(name, found)}; choose from: {', '.join(found)}"
        )
    return found[key]


def model_for_preset(preset: str) -> BrightModel | None:
    """The BRIGHT retriever that runs the same checkpoint as r2med's preset ``preset`` (None: BRIGHT has none)."""
    for m in models().values():
        if m.r2med_preset == preset:
            return m
    return None


def task_filling() -> Mapping[str, JsonValue]:
    """How BRIGHT fills ``{task}`` (rule, sources, the unused display names, examples)."""
    return _frozen(_models_file()["task_filling"])


def reproductions() -> Mapping[str, JsonValue]:
    """Pyserini's two-click reproductions of BRIGHT: common settings and each condition's query prefix."""
    return _frozen(_models_file()["reproductions"])


def pyserini_query_prefix(condition: str, task_name: str) -> str | None:
    """The query prefix Pyserini's ``condition`` puts before each query of ``task_name`` (None: none)."""
    conditions = reproductions()["conditions"]
    if not isinstance(conditions, dict) or condition not in conditions:
        known = list(conditions) if isinstance(conditions, dict) else []
        hint = did_you_mean(condition, known)
        raise OptionError(f"no Pyserini BRIGHT condition {shown(condition)}{hint}; choose from: {', '.join(known)}")
    entry = conditions[condition]
    if not isinstance(entry, dict):
        raise ValueError(f"bright_models.json: reproductions condition {condition!r} is not an object")
    prefix = entry["query_prefix"]
    if isinstance(prefix, dict):  # a template filled per task
        return str(entry["query_prefix_template"]).format(query_prefix=prefix[task(task_name).name])
    return None if prefix is None else str(prefix)


def rerank_conventions() -> Mapping[str, str]:
    """``rerank.py``'s conventions (input depth, LLM scores ``k - rank``, fallbacks), each with its lines."""
    return _frozen(_models_file()["rerank"])


def rerank_prompt() -> RerankPrompt:
    """``rerank.py``'s LLM prompt (system and user texts, the document line, the query's newline), its sampling, the
    answer pattern, the cross-encoder's batch, and which reranker runs each of the leaderboard's reranking models;
    each with its source."""
    return _models_file()["rerank_prompt"].copy()  # a copy: the file's data stays as read


# ---------------------------------------------------------------- published figures


@dataclass(frozen=True)
class PublishedRow:
    """One published BRIGHT figure (x100, as published) with its source."""

    setting: str  #: paper, leaderboard, leaderboard_submission, pyserini_2cr, later_paper, later_leaderboard, ...
    retriever: str  #: BRIGHT's model name for BRIGHT's retrievers, else the name its source uses
    queries: str  #: original, a reasoning config (gpt4_reason ...), or what the source names
    reranker: str  #: none, or the reranker and its depth
    documents: str  #: short or long
    measure: Measure  #: nDCG@10, R@100, R@1000, Recall@1 (:func:`csv_measure` spells it as the CSV does)
    task: str  #: a BRIGHT task name, or Average
    value: float
    qrels: str  #: gold_ids or gold_ids_long
    source: str
    note: str


_PUBLISHED_COLUMNS = (
    "setting",
    "retriever",
    "queries",
    "reranker",
    "documents",
    "measure",
    "task",
    "value",
    "qrels",
    "source",
    "note",
)


def csv_measure(measure: Measure) -> str:
    """A measure as ``bright_published.csv`` spells it: ``nDCG@10``, ``R@100``, ``R@1000``; ``Recall@1`` (the
    leaderboard's name of the long documents' headline)."""
    return "Recall@1" if measure == Measure(Family.RECALL, 1) else measure.label


@cache
def published_rows() -> tuple[PublishedRow, ...]:
    text = _text("bright_published.csv")
    reader = csv.DictReader(text.splitlines())
    if tuple(reader.fieldnames or ()) != _PUBLISHED_COLUMNS:
        raise R2MedError(f"bright_published.csv: columns {reader.fieldnames} are not {list(_PUBLISHED_COLUMNS)}")
    out = []
    for line, r in enumerate(reader, start=2):
        if not r["source"]:
            raise R2MedError(f"bright_published.csv:{line}: a row without a source")
        measure = Measure.parse(r["measure"])
        if csv_measure(measure) != r["measure"]:
            raise R2MedError(
                f"bright_published.csv:{line}: measure {r['measure']!r} is spelled {csv_measure(measure)!r}"
            )
        out.append(
            PublishedRow(
                setting=r["setting"],
                retriever=r["retriever"],
                queries=r["queries"],
                reranker=r["reranker"],
                documents=r["documents"],
                measure=measure,
                task=r["task"],
                value=float(r["value"]),
                qrels=r["qrels"],
                source=r["source"],
                note=r["note"],
            )
        )
    return tuple(out)


def published(
    retriever: str,
    setting: str | None = None,
    queries: str = "original",
    reranker: str = "none",
    documents: str = "short",
    measure: Measure = HEADLINE,
) -> dict[str, float]:
    """Task (or ``Average``) -> published figure for one configuration; several settings publish it: the first of
    ``paper``, ``leaderboard``, ``pyserini_2cr``, then the others by name, unless ``setting`` picks one."""
    found: dict[str, dict[str, float]] = {}
    for r in published_rows():
        same = (r.retriever, r.queries, r.reranker, r.documents, r.measure) == (
            retriever,
            queries,
            reranker,
            documents,
            measure,
        )
        if same and (setting is None or r.setting == setting):
            found.setdefault(r.setting, {})[r.task] = r.value
    if not found:
        return {}
    order = ("paper", "leaderboard", "pyserini_2cr")
    best = sorted(found, key=lambda s: (order.index(s) if s in order else len(order), s))[0]
    return found[best]


def mean(values: Iterable[float]) -> float:
    """The unweighted mean over tasks, as BRIGHT's leaderboard averages (each task counts once)."""
    items = list(values)
    return sum(items) / len(items)


# ---------------------------------------------------------------- contamination


@dataclass(frozen=True)
class Contamination:
    """A model trained on data rebuilt from BRIGHT's documents, and the tasks whose documents that touches."""

    model: str
    training_set: str
    tasks: tuple[str, ...]  #: BRIGHT task names
    how: str
    certainty: str  #: stated or inferred
    r2med_presets: tuple[str, ...]
    sources: tuple[str, ...]
    note: str

    def qualified_tasks(self) -> tuple[str, ...]:
        """``bright:<task>`` for each task, plus the R2MED tasks sharing their documents (``Biology``)."""
        shared = _contamination_file()["shared_corpora"]
        names = [f"{FAMILY}:{t}" for t in self.tasks]
        names += [r2med for r2med, bright in shared.items() if bright in names]
        return tuple(names)


@cache
def contamination() -> tuple[Contamination, ...]:
    data = _contamination_file()
    sets = data["training_sets"]
    out = []
    for m in data["models"]:
        refuse_unknown_keys(
            m,
            ("model", "training_set", "r2med_presets", "sources", "certainty", "note"),
            f"bright_contamination.json: {m.get('model')!r}",
        )
        ts = sets[m["training_set"]]
        out.append(
            Contamination(
                model=m["model"],
                training_set=m["training_set"],
                tasks=tuple(task(t).name for t in ts["tasks"]),
                how=ts["how"],
                certainty=m["certainty"],
                r2med_presets=tuple(m["r2med_presets"]),
                sources=(*m["sources"], *ts["sources"]),
                note=m.get("note", ""),
            )
        )
    return tuple(out)


def contamination_of(checkpoint: str | None) -> tuple[Contamination, ...]:
    """The contamination facts of a checkpoint (a hub id, compared case-insensitively as the hub does; a local
    folder or snapshot of it by its last path part): what registry records and recorded runs are looked up by."""
    if not checkpoint:
        return ()
    wanted = _checkpoint_key(checkpoint)
    return tuple(c for c in contamination() if _checkpoint_key(c.model) == wanted)


def _checkpoint_key(model: str) -> str:
    """A checkpoint's repository name, lowercased: ``org/name``'s ``name``; a Hugging Face cache snapshot
    (``.../models--org--name/snapshots/<commit>``) the repository it caches.  Any other local folder is no
    checkpoint's (``""``): a folder renamed ``ReasonIR-8B`` is not ReasonIR-8B -- a mark is given from what the
    run is, never from a name."""
    text = model.replace("\\", "/")
    parts = [p for p in text.rstrip("/").split("/") if p]
    if len(parts) >= 3 and parts[-2] == "snapshots" and parts[-3].startswith("models--"):
        return parts[-3].split("--")[-1].lower()
    if text.startswith(("/", ".", "~")) or len(parts) > 2 or (len(text) > 1 and text[1] == ":"):
        return ""  # a local folder (absolute, relative or a drive path), not a cache snapshot
    return parts[-1].lower() if parts else ""


def contaminated_tasks(name: str) -> tuple[str, ...]:
    """The tasks (``bright:biology``...; R2MED's by their own names: ``Biology``) whose documents the training data
    of model ``name`` (a checkpoint id or an r2med preset name) was built from; empty when none is known."""
    for c in contamination():
        if name == c.model or name in c.r2med_presets:
            return c.qualified_tasks()
    return ()
