"""The record of one task's results (``metrics.json``): a typed, checked value with one reader and one writer.

:func:`read_record` is the one reader of ``metrics.json`` (report, show, compare, board, export, fuse, rerank,
reproduce, html and a resumed evaluate all read through it; :func:`parse_record` reads a decoded payload) into a
:class:`RunRecord` (pydantic): its ``config`` is a :class:`RecordedConfig` -- the step that made the run and the
facts beside it, typed (expansion, judgments file, family settings, encoder, reranker, first stage, fused inputs,
imported file) -- and its ``data`` and ``protocol`` are typed too (:meth:`RunRecord.run_data`: which data the run
read, the view the data rules grade); readers read fields, never mappings.  A JSON
object stays open only where its keys are someone else's (a retriever's own ``config()`` facts, a custom model's
record, package versions, encoding facts), each named where it is declared.  Every field is checked
(types, finite measures within 0..1 under pytrec_eval names, bounded sizes, no integer too long for a float,
every query scored on the same measures, the ``ties`` block by :func:`r2med.evaluation.ties.check_block`) and
any fault is one line naming the file and the key.
Files without ``schema_version`` are version 1 (what r2med wrote before the schema had a number); version 1 and 2
files are upgraded in memory (:func:`upgrade_config_v1`: the older text record of a query expansion becomes the
structured ``expansion``; :func:`upgrade_config_v2`: the ``step`` that made the record), and reused on everything
they recorded (:func:`same_config`).  :func:`metrics_json` is the one writer's text (version
:data:`SCHEMA_VERSION`), used by
:func:`r2med.runs.run.write_task_results`, which writes it atomically beside the run.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Final, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, PrivateAttr, ValidationError, model_validator

from ..data.files import MAX_QUERY_ID_CHARS as FILES_MAX_QUERY_ID_CHARS
from ..data.files import id_problem
from ..data.resolve import RecordedSource
from ..errors import DataError, R2MedError
from ..evaluation.tie_data import BlockError, check_block
from ..expansion_name import ExpansionName
from ..infra.containment import name_problem
from ..infra.input_files import read_regular
from ..infra.json_types import JsonObject as JsonObject  # re-exported: results and jobs import it from here
from ..infra.json_types import JsonValue
from ..measures import from_trec

#: a task folder's results file
METRICS_FILE: Final = "metrics.json"
#: The longest integer literal ``metrics.json`` may hold (r2med writes counts and seeds; a longer one is damage,
#: and a 400-digit one would overflow every float conversion, a 4,301-digit one Python's int parser).
MAX_INT_DIGITS: Final = 30
#: The range of every measure r2med stores (trec_eval's nDCG, MAP, recall, precision and reciprocal rank).
MEASURE_RANGE: Final = (0.0, 1.0)
#: How much of a key or value an error message echoes.
ECHO_CHARS: Final = 60


class _LongInteger(str):
    """An integer literal longer than :data:`MAX_INT_DIGITS` digits, kept as its text so the check can name its key."""


def _parse_int(text: str) -> int | _LongInteger:
    return int(text) if len(text.lstrip("-")) <= MAX_INT_DIGITS else _LongInteger(text)


def shown(value: object) -> str:
    """``value`` for an error message: one line, at most :data:`ECHO_CHARS` characters of it."""
    if isinstance(value, str):
        text = value if value.isprintable() else repr(value)
        return text if len(text) <= ECHO_CHARS else text[:ECHO_CHARS] + f"... ({len(value):,} characters)"
    text = repr(value)
    return text if len(text) <= ECHO_CHARS else text[:ECHO_CHARS] + "..."


def _long_integer(data: object) -> tuple[str, _LongInteger] | None:
    """The first over-long integer literal anywhere in ``data``, with the key path that holds it."""
    stack: list[tuple[str, object]] = [("", data)]
    while stack:
        where, value = stack.pop()
        if isinstance(value, _LongInteger):
            return where or "the file", value
        if isinstance(value, dict):
            stack.extend((f"{where}.{shown(k)}" if where else shown(k), v) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend((f"{where}[{i}]", v) for i, v in enumerate(value))
    return None


#: the schema :func:`metrics_json` writes; 1 is a file from before the schema had a number (no ``schema_version``);
#: 3: ``config`` is the step spec (:mod:`r2med.steps`: its ``step`` kind, and a reranker's ``options``) with
#: the facts of the run beside it (and the content fingerprint of an expansion file read: ``expansion_fingerprint``);
#: its ``protocol`` field (the family's protocol the run followed) came later in 3: a file without it reads as before
SCHEMA_VERSION: Final = 3
#: the keys of ``config`` schema 3 added to what version 2 recorded (a v2 record is reused on everything it holds)
V3_CONFIG_KEYS: Final = frozenset({"step", "options", "expansion_fingerprint"})
#: the fields of a record, in the order r2med writes them (``schema_version`` comes first)
FIELDS: Final = (
    "task",
    "retriever",
    "config",
    "aggregate",
    "per_query",
    "count_missing",
    "timing",
    "versions",
    "data",
    "dataset_fingerprint",
    "judgments_fingerprint",
    "source",
    "revision",
    "split",
    "encoding",
    "ties",
    "protocol",
    "empty_queries",
)
#: the most measures a file may hold (r2med stores 21 by default), and queries per task (R2MED's largest has 1,000s)
MAX_MEASURES: Final = 1_000
MAX_QUERIES: Final = 10_000_000
#: the longest measure name, query id and text field a record may hold
MAX_NAME_CHARS: Final = 100
MAX_QUERY_ID_CHARS: Final = FILES_MAX_QUERY_ID_CHARS  # the id rule's (every reader refuses a longer id)
MAX_TEXT_CHARS: Final = 10_000


#: what made a record: the ``step`` of its ``config`` (schema 3)
StepKind = Literal["evaluate", "rerank", "fuse", "import"]


def step_kind(config: Mapping[str, object]) -> StepKind:
    """What made a recorded ``config``: its ``step`` (schema 3), else read from its keys (an import's record, a
    reranker's, a fusion's, else an evaluate)."""
    kind = config.get("step")
    for known in ("evaluate", "rerank", "fuse", "import"):
        if kind == known:
            return known
    if "imported" in config:
        return "import"
    if "reranker" in config:
        return "rerank"
    if "fusion" in config:
        return "fuse"
    return "evaluate"


class _Recorded(BaseModel):
    """A part of ``metrics.json``'s ``config``, typed: values are what the JSON holds (strict: no conversion), and
    keys this schema does not name are kept (``extra``: each subclass says whose they are)."""

    model_config = ConfigDict(frozen=True, strict=True, extra="allow")

    def as_json(self) -> JsonObject:
        """The object as recorded (the keys the file holds)."""
        return self.model_dump(exclude_unset=True)


class ExpansionRecord(_Recorded):
    """How a run's queries were expanded (``config["expansion"]``: the query builder's ``describe()``); other keys
    are a query builder's own (a user's builder may record more: open)."""

    method: str | None = None
    llm: str | None = None
    trace: str | None = None
    rule: str | None = None
    #: the stamp of the local files given (:data:`r2med.expansion.precomputed.NO_LOCAL_FILES`: none)
    files: str | None = None
    #: the file it read for the task
    file: str | None = None
    #: the commit of a hub reasoning set's file
    revision: str | None = None


class JudgmentsRecord(_Recorded):
    """A judgments file scored in place of the task's own (``--qrels``): its path and content hash."""

    file: str
    sha256: str


class SettingsRecord(_Recorded):
    """A family's own settings for its model (``config["settings"]``, :meth:`r2med.data.benchmarks.FamilySettings
    .record`); the scoring facts beside these are the family's own (open per family plug-in)."""

    family: str | None = None
    model: str | None = None
    task: str | None = None


class EncoderRecord(_Recorded):
    """What a dense retriever's encoder resolved to (``config["encoder"]``); every other key is the encoder's own
    ``config()`` (open per encoder class, a user's included)."""

    #: the checkpoint for documents (and queries, unless ``query_model``), at ``model_revision``
    model: str | None = None
    query_model: str | None = None
    model_revision: str | None = None
    dtype: str | None = None
    #: a custom encoder's facts (``custom``: its spec and class)
    extra: JsonObject | None = None  # open: a custom encoder's own record


class RerankerRecord(_Recorded):
    """What a reranker resolved to (``config["reranker"]``); every other key is the reranker's own ``config()``
    (open per reranker class)."""

    reranker: str | None = None
    #: the checkpoint it loaded
    model: str | None = None
    dtype: str | None = None
    #: a scorer of your own: its spec, class and module hash
    scorer: JsonObject | None = None  # open: a user's scorer's own record


class ImportedRecord(_Recorded):
    """What ``r2med import`` recorded of the run it scored (``config["imported"]``); the other keys are its
    source's own (a file's path, tags and what it states of itself; a run given in Python; an agent's trace)."""

    #: the run file's content hash (None: a run given in Python or a trace)
    sha256: str | None = None
    note: str | None = None
    #: entries the task's exclusions removed before scoring
    excluded_removed: int | None = None


class FirstStage(_Recorded):
    """The first stage a reranked run reranked (``config["first_stage"]``): its name, folder, run and own record."""

    retriever: str | None = None
    folder: str | None = None
    run_fingerprint: str | None = None
    config: RecordedConfig | None = None


class FusedInput(FirstStage):
    """One system a fused run fused (an item of ``config["inputs"]``): recorded as a first stage is."""


_Typed = TypeVar("_Typed", bound=BaseModel)


class RecordedConfig(_Recorded):
    """``metrics.json``'s ``config``, typed: the step that made the run (its ``step`` kind and the step's record:
    :meth:`r2med.steps.EvaluateStep.record` and its siblings) and the facts of the run beside it.  Read back as the
    step by :func:`r2med.steps.evaluate_from_record` / :func:`r2med.steps.rerank_from_record`.

    Keys this type does not name are a retriever's own ``config()`` (BM25's ``k1``, an encoder's pooling...: open
    per retriever, plug-ins included): :meth:`fact` reads one by name.  :meth:`as_json` is the object as recorded
    (key order kept), what reuse compares and a report echoes."""

    step: StepKind
    retriever: str | None = None
    #: the options as the step's options type records them (open: each retriever's and reranker's own type, read
    #: back as that type by :mod:`r2med.steps`)
    options: JsonObject | None = None
    #: the depth an evaluate ran at (a fusion's: ``depth``, its ``k`` RRF's constant); a reranker's ``top_k`` and
    #: ``keep_tail``
    k: int | float | None = None
    top_k: int | None = None
    keep_tail: bool | None = None
    expansion: ExpansionRecord | None = None
    expansion_fingerprint: str | None = None
    queries_fingerprint: str | None = None
    split: str | None = None
    judgments: JudgmentsRecord | None = None
    settings: SettingsRecord | None = None
    encoder: EncoderRecord | None = None
    reranker: RerankerRecord | None = None
    first_stage: FirstStage | None = None
    #: a fusion's: its inputs, method (``rrf``, ``combsum``...), RRF's ``k`` (above), score normalisation, weights
    #: and the depth it kept
    inputs: list[FusedInput] | None = None
    fusion: str | None = None
    norm: str | None = None
    weights: list[float] | None = None
    depth: int | None = None
    imported: ImportedRecord | None = None
    #: how many documents the corpus holds more than once, where the retriever indexed the repeats too
    corpus_repeats: int | None = None
    #: how equal scores were ordered when scored (``r2med import --ties``)
    ties: Literal["trec_eval", "listed"] | None = None
    _json: JsonObject = PrivateAttr(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _step(cls, value: object) -> object:
        """A config with no ``step`` (a hand-made one, a first stage's) is read as :func:`step_kind` tells."""
        if isinstance(value, Mapping) and "step" not in value:
            return {"step": step_kind(value), **value}
        return value

    @classmethod
    def read(cls, config: Mapping[str, JsonValue], where: str | os.PathLike[str] = "config") -> RecordedConfig:
        """``config`` (a decoded ``config`` object, of schema 3 or upgraded) as its typed record; a value of another
        type than the schema's is a one-line :class:`DataError` naming ``where`` and the key.  A config with no
        ``step`` (a hand-made one) is read as :func:`step_kind` tells; a model's commit recorded as ``revision``
        as ``model_revision`` (:func:`upgrade_model_revision`)."""
        return cls.read_upgraded(upgrade_model_revision(config), where)

    @classmethod
    def read_upgraded(cls, config: Mapping[str, JsonValue], where: str | os.PathLike[str]) -> RecordedConfig:
        """:meth:`read` of a ``config`` its caller has already upgraded (or writes as given: the record's reader)."""
        try:
            value = cls.model_validate(config)
        except ValidationError as exc:
            raise DataError(Path(where), None, _validation_line(exc, "config")) from None
        value._keep(config)
        return value

    def _keep(self, config: Mapping[str, JsonValue]) -> None:
        self._json = dict(config)
        if self.first_stage is not None and self.first_stage.config is not None:
            self.first_stage.config._keep(_inner_config(config.get("first_stage")))
        raw_inputs = config.get("inputs")
        for item, raw in zip(self.inputs or (), raw_inputs if isinstance(raw_inputs, list) else ()):
            if item.config is not None:
                item.config._keep(_inner_config(raw))

    def as_json(self) -> JsonObject:
        """The object as recorded (a new dict, key order kept)."""
        return dict(self._json)

    def fact(self, name: str) -> JsonValue:
        """A retriever's own recorded fact (a key of its ``config()``: open per retriever), or None."""
        return self._json.get(name)


def _inner_config(part: JsonValue) -> JsonObject:
    """The ``config`` object of a recorded first stage or fused input (validated as a mapping by then)."""
    inner = part.get("config") if isinstance(part, dict) else None
    return inner if isinstance(inner, dict) else {}


FirstStage.model_rebuild()
FusedInput.model_rebuild()


class DataCounts(_Recorded):
    """The size of the data a run was made on (``metrics.json``'s ``data``)."""

    queries: int | None = None
    #: None: the corpus was read for its judgments only
    docs: int | None = None
    judged_queries: int | None = None
    judgments: int | None = None


class ProtocolRecord(_Recorded):
    """The protocol of its family a run followed (``metrics.json``'s ``protocol``:
    :meth:`r2med.data.benchmarks.Protocol.record`)."""

    family: str | None = None
    depth: int | None = None
    judgments: str | None = None
    documents: str | None = None
    exclusions: JsonObject | None = None  # the exclusion set's own record (queries, pairs, fingerprint)
    qrels: JudgmentsRecord | None = None


class RunData(BaseModel):
    """Which data one run read, as its ``metrics.json`` records it: the data's counts (``data``), fingerprints, hub
    ``source`` and commit (``revision``), split, the family protocol it followed, and the query expansion it read
    (its config's ``expansion``: a BRIGHT reasoning set's file and commit) -- what a family's data rules grade
    (:func:`r2med.results.grading.data_problem`, :func:`r2med.report.mteb.task_figure`).  A record's is
    :meth:`RunRecord.run_data`; a job's result's is made from its collection (:func:`r2med.results.folders.run_data`);
    a field the run did not record is None."""

    model_config = ConfigDict(frozen=True, strict=True, extra="forbid")

    data: DataCounts | None = None
    dataset_fingerprint: str | None = None
    judgments_fingerprint: str | None = None
    source: str | None = None
    revision: str | None = None
    split: str | None = None
    protocol: ProtocolRecord | None = None
    expansion: ExpansionRecord | None = None


class RunRecord(BaseModel):
    """One task folder's ``metrics.json``, checked and typed.  ``keys``: the keys the file holds, in its order (so a
    record is echoed as it was read); a field the file lacks is ``None`` (``per_query``: empty)."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    aggregate: dict[str, float]
    per_query: dict[str, dict[str, float]] = {}
    task: str | None = None
    retriever: str | None = None
    config: RecordedConfig | None = None
    count_missing: bool | None = None
    timing: dict[str, float] | None = None
    #: package -> version (open: whatever the run's environment held)
    versions: JsonObject | None = None
    data: DataCounts | None = None
    dataset_fingerprint: str | None = None
    judgments_fingerprint: str | None = None
    source: str | None = None
    revision: str | None = None
    split: str | None = None
    #: what a model actually ran with (package versions, lengths, framing, dtype: open per encoder and reranker)
    encoding: JsonObject | None = None
    #: the ranges the order of tied documents allows (:func:`r2med.evaluation.ties.check_block`'s block); None:
    #: written before r2med recorded them
    ties: JsonObject | None = None
    protocol: ProtocolRecord | None = None
    #: the queries the system answered with no document (an empty entry: scored 0, as pytrec_eval scores it; a
    #: ``run.trec`` cannot hold them); None: none, or written before r2med recorded them
    empty_queries: tuple[str, ...] | None = None
    #: keys this schema does not name (kept as they are: open)
    extra: JsonObject = {}
    keys: tuple[str, ...] = ()
    #: the version of the file read (1: no ``schema_version``); the record itself is always :data:`SCHEMA_VERSION`
    read_version: int = SCHEMA_VERSION
    #: the decoded objects as the file holds them (upgraded), to echo it: :meth:`to_json`
    raw: JsonObject = {}

    def run_data(self) -> RunData:
        """Which data the run read (its data fields and its config's expansion), typed."""
        return RunData(
            data=self.data,
            dataset_fingerprint=self.dataset_fingerprint,
            judgments_fingerprint=self.judgments_fingerprint,
            source=self.source,
            revision=self.revision,
            split=self.split,
            protocol=self.protocol,
            expansion=self.config.expansion if self.config is not None else None,
        )

    def recorded_source(self) -> RecordedSource:
        """Where the run's data came from (its ``source``, hub ``revision`` and ``split``): what
        :func:`r2med.data.resolve.locate` reads of a run."""
        return RecordedSource(source=self.source, revision=self.revision, split=self.split)

    def to_json(self) -> JsonObject:
        """The file's object as r2med writes it: ``schema_version`` first, then the file's keys in order (an older
        version's ``config`` as upgraded in memory)."""
        payload: JsonObject = {"schema_version": SCHEMA_VERSION}
        for key in self.keys or ("aggregate",):
            payload[key] = self.raw[key]
        return payload


def parse_record(data: object, path: str | os.PathLike[str], upgrade: bool = True) -> RunRecord:
    """``data`` (a decoded ``metrics.json``) as a record; any fault a one-line :class:`DataError` naming ``path``
    and the key.  Version 1 (no ``schema_version``) is upgraded; a newer version than this r2med knows is refused.
    A model's commit recorded as ``revision`` reads as ``model_revision`` (:func:`upgrade_model_revision`) unless
    ``upgrade`` is False (the writer: a payload is written as given)."""
    where = Path(path)

    def fail(message: str) -> DataError:
        return DataError(where, None, message)

    if not isinstance(data, dict):
        raise fail(f"expected a JSON object, got {type(data).__name__}")
    version = data.get("schema_version", 1)
    if isinstance(version, bool) or not isinstance(version, int):
        raise fail(f"schema_version must be a whole number, got {shown(version)}")
    if version > SCHEMA_VERSION:
        raise fail(
            f"schema_version {shown(version)} is newer than this r2med reads (1..{SCHEMA_VERSION}); upgrade r2med"
        )
    if version < 1:
        raise fail(f"schema_version {shown(version)} is not one r2med ever wrote (1..{SCHEMA_VERSION})")

    def finite(value: object) -> bool:
        return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)

    def numbers(values: object, key: str, bounds: tuple[float, float], named: bool) -> dict[str, float]:
        if not isinstance(values, dict):
            raise fail(f"{key} must be an object of measure -> number, got {type(values).__name__}")
        if len(values) > MAX_MEASURES:
            raise fail(f"{key} holds {len(values):,} values, more than {MAX_MEASURES:,}")
        checked: dict[str, float] = {}
        for name, value in values.items():
            if len(name) > MAX_NAME_CHARS:
                raise fail(f"{key}: a name of {len(name):,} characters ({shown(name)}), longer than a measure's")
            if not finite(value):
                raise fail(f"{key}.{shown(name)} is {shown(value)}, not a finite number")
            if not bounds[0] <= value <= bounds[1]:
                raise fail(
                    f"{key}.{shown(name)} is {shown(value)}, outside "
                    f"{bounds[0]:g}..{bounds[1]:g} (the range of every measure r2med stores)"
                )
            if named:
                try:
                    from_trec(name)
                except R2MedError:
                    raise fail(f"{key}.{shown(name)} is not a measure r2med stores (pytrec_eval names)") from None
            checked[name] = value
        return checked

    if "aggregate" not in data:
        raise fail("no 'aggregate' measures (not written by r2med?)")
    aggregate = numbers(data["aggregate"], "aggregate", MEASURE_RANGE, named=True)
    raw_per_query = data.get("per_query", {})
    if not isinstance(raw_per_query, dict):
        raise fail(f"per_query must be an object of query -> measures, got {type(raw_per_query).__name__}")
    if len(raw_per_query) > MAX_QUERIES:
        raise fail(f"per_query holds {len(raw_per_query):,} queries, more than {MAX_QUERIES:,}")
    per_query: dict[str, dict[str, float]] = {}
    first_qid, first_row = "", set[str]()
    for qid, values in raw_per_query.items():
        key = f"per_query[{shown(qid)!r}]"
        if len(qid) > MAX_QUERY_ID_CHARS:
            raise fail(f"per_query: a query id of {len(qid):,} characters ({shown(qid)})")
        row = numbers(values, key, MEASURE_RANGE, named=True)
        if per_query and set(row) != first_row:
            odd = min(set(row) ^ first_row)
            state = "lacks" if odd in first_row else "has"
            raise fail(f"{key} {state} {shown(odd)}, unlike per_query[{shown(first_qid)!r}]")
        if not per_query:
            first_qid, first_row = qid, set(row)
        per_query[qid] = row

    texts: dict[str, str | None] = {}
    for key in ("task", "retriever", "source", "dataset_fingerprint", "judgments_fingerprint", "revision", "split"):
        value = data.get(key)
        if value is not None and not isinstance(value, str):
            raise fail(f"{key} must be text, got {type(value).__name__}")
        if isinstance(value, str) and len(value) > (1000 if key in ("task", "retriever") else MAX_TEXT_CHARS):
            raise fail(
                f"{key} {shown(value)} is longer than a {'name' if key in ('task', 'retriever') else key} can be"
            )
        texts[key] = value
    if texts["task"] is not None:
        problem = name_problem(texts["task"])
        if problem is not None:
            raise fail(f"task {problem}; refusing to use it as a folder name")
    if texts["retriever"] is not None:
        problem = name_problem(texts["retriever"], run_name=True)
        if problem is not None:
            raise fail(f"retriever {problem}; refusing to use it in a folder name")
    objects: dict[str, JsonObject | None] = {}
    for key in ("config", "versions", "data", "encoding", "protocol"):
        value = data.get(key)
        if value is not None and not isinstance(value, dict):
            raise fail(f"{key} must be an object, got {type(value).__name__}")
        objects[key] = value
    if version == 1 and objects["config"] is not None:
        objects["config"] = upgrade_config_v1(objects["config"])
    if version < 3 and objects["config"] is not None:
        objects["config"] = upgrade_config_v2(objects["config"])
    if upgrade and objects["config"] is not None:  # a model's commit recorded as ``revision`` (before the rename)
        objects["config"] = upgrade_model_revision(objects["config"])
    timing = data.get("timing")
    if timing is not None:
        timing = numbers(timing, "timing", (0.0, math.inf), named=False)
    count_missing = data.get("count_missing")
    if "count_missing" in data and not isinstance(count_missing, bool):
        raise fail(f"count_missing must be true or false, got {shown(count_missing)}")

    ties = data.get("ties")
    if ties is not None:
        try:
            ties = check_block(ties, aggregate, per_query, MAX_QUERIES, MAX_QUERY_ID_CHARS)
        except BlockError as exc:
            raise fail(str(exc)) from None

    empty_queries = data.get("empty_queries")
    if empty_queries is not None:
        if not isinstance(empty_queries, list) or len(empty_queries) > MAX_QUERIES:
            raise fail(f"empty_queries must be a list of query ids, got {type(empty_queries).__name__}")
        for qid in empty_queries:
            if not isinstance(qid, str) or id_problem(qid) is not None:  # the id rule every reader holds ids to
                raise fail(f"empty_queries holds {shown(qid)}, not a query id")
        empty_queries = tuple(empty_queries)

    keys = tuple(k for k in data if k != "schema_version")
    config = RecordedConfig.read_upgraded(objects["config"], where) if objects["config"] is not None else None
    raw: JsonObject = {k: data[k] for k in keys}
    if objects["config"] is not None:
        raw["config"] = objects["config"]  # as upgraded
    if ties is not None:
        raw["ties"] = ties
    return RunRecord.model_construct(
        aggregate=aggregate,
        per_query=per_query,
        task=texts["task"],
        retriever=texts["retriever"],
        config=config,
        count_missing=count_missing,
        timing=timing,
        versions=objects["versions"],
        data=_typed(DataCounts, objects["data"], "data", where),
        dataset_fingerprint=texts["dataset_fingerprint"],
        judgments_fingerprint=texts["judgments_fingerprint"],
        source=texts["source"],
        revision=texts["revision"],
        split=texts["split"],
        encoding=objects["encoding"],
        ties=ties,
        protocol=_typed(ProtocolRecord, objects["protocol"], "protocol", where),
        empty_queries=empty_queries,
        extra={k: data[k] for k in keys if k not in FIELDS},
        keys=keys,
        read_version=version,
        raw=raw,
    )


def _typed(model: type[_Typed], value: Mapping[str, JsonValue] | None, key: str, where: Path) -> _Typed | None:
    """``value`` (the file's ``key`` object) as ``model``; a value of another type a one-line DataError naming the
    file and the key."""
    if value is None:
        return None
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        raise DataError(where, None, _validation_line(exc, key)) from None


#: the names pydantic puts in an error's location for the member of a union tried (not keys of the file)
_UNION_MEMBERS: Final = frozenset({"int", "float", "str", "bool"})


def _validation_line(exc: ValidationError, key: str) -> str:
    """The first of ``exc``'s errors as one line: the key path in the file (``config.first_stage.config.k``), what
    was wrong, and the value (shortened)."""
    error = exc.errors()[0]
    parts = [p for p in error["loc"] if not (isinstance(p, str) and (p in _UNION_MEMBERS or "[" in p))]
    path = ".".join(str(part) for part in (key, *parts))
    return f"{path}: {error['msg'].lower()} (got {shown(error['input'])})"


def upgrade_config_v1(config: Mapping[str, JsonValue]) -> JsonObject:
    """A version-1 ``config`` with the structured ``expansion`` record: run folders written before it had one
    stored the expansion as the text ``queries`` (``"plain"`` or ``"hyde:gpt4 trace=auto rule=paper-v1
    files=..."``); a reranked run's first stage (``first_stage.config``) is upgraded the same way.  Anything
    else is kept as it is (a new dict; ``config`` is not changed)."""
    upgraded = dict(config)
    first = upgraded.get("first_stage")
    if isinstance(first, dict) and isinstance(inner := first.get("config"), dict):
        upgraded["first_stage"] = {**first, "config": upgrade_config_v1(inner)}
    queries = upgraded.get("queries")
    if "expansion" in upgraded or not isinstance(queries, str):
        return upgraded
    expansion: JsonObject | None = None
    if queries.split() and queries != "plain":
        head, *rest = queries.split()
        try:
            method, llm = ExpansionName.parse(head)
        except ValueError:  # no METHOD:LLM: kept as written, for the record's check to name
            method, llm = head, ""
        fields = dict(part.partition("=")[::2] for part in rest)
        expansion = {
            "method": method,
            "llm": llm,
            "trace": fields.get("trace", "auto"),
            "rule": fields.get("rule"),
            "files": fields.get("files"),
        }
    upgraded["expansion"] = expansion
    return upgraded


def upgrade_config_v2(config: Mapping[str, JsonValue]) -> JsonObject:
    """A version-2 (or upgraded version-1) ``config`` as schema 3 records it: the ``step`` that made it first (read
    from its keys: :func:`step_kind`), and the same for a reranked run's first stage and a fusion's inputs.
    Anything else is kept as it is (a new dict).  (A retriever's ``options`` as its options type records them --
    an option a v2 run did not record had its default -- are compared so when a folder is reused:
    :func:`r2med.results.folders.reuse`.)"""
    upgraded: JsonObject = {"step": step_kind(config), **config}
    first = upgraded.get("first_stage")
    if isinstance(first, dict) and isinstance(inner := first.get("config"), dict) and "step" not in inner:
        upgraded["first_stage"] = {**first, "config": upgrade_config_v2(inner)}
    inputs = upgraded.get("inputs")
    if upgraded["step"] == "fuse" and isinstance(inputs, list):
        upgraded["inputs"] = [_upgraded_input(item) for item in inputs]
    return upgraded


def _upgraded_input(item: JsonValue) -> JsonValue:
    """A fused input of a version-2 record with its ``config`` upgraded (:func:`upgrade_config_v2`); else as it is."""
    inner = item.get("config") if isinstance(item, dict) else None
    if isinstance(item, dict) and isinstance(inner, dict) and "step" not in inner:
        return {**item, "config": upgrade_config_v2(inner)}
    return item


#: the blocks of a ``config`` that name a model's commit, and its name before it was ``model_revision`` everywhere
MODEL_COMMIT_BLOCKS: Final = ("options", "encoder", "reranker")
OLD_MODEL_COMMIT: Final = "revision"


def upgrade_model_revision(config: Mapping[str, JsonValue]) -> JsonObject:
    """A ``config`` (any schema version) with a model's commit named ``model_revision``: a record written before the
    rename named it ``revision`` in its ``options`` (the option's first name), ``encoder`` and ``reranker`` blocks;
    read here as ``model_revision`` (in place: key order kept), and the same for a reranked run's first stage and a
    fusion's inputs.  A block holding both keys keeps its ``model_revision``.  In memory only: the file is never
    rewritten.  (No options type, block or plug-in record of r2med names anything else ``revision``: the data's
    commit is the record's top-level ``revision``, an expansion's the ``expansion`` block's, neither touched.)"""
    upgraded = dict(config)
    for name in MODEL_COMMIT_BLOCKS:
        block = upgraded.get(name)
        if isinstance(block, dict) and OLD_MODEL_COMMIT in block:
            new = "model_revision" in block
            upgraded[name] = {
                ("model_revision" if k == OLD_MODEL_COMMIT else k): v
                for k, v in block.items()
                if not (new and k == OLD_MODEL_COMMIT)
            }
    first = upgraded.get("first_stage")
    if isinstance(first, dict):
        inner = first.get("config")
        if isinstance(inner, dict):
            upgraded["first_stage"] = {**first, "config": upgrade_model_revision(inner)}
    inputs = upgraded.get("inputs")
    if isinstance(inputs, list):
        upgraded["inputs"] = [_with_model_revision(item) for item in inputs]
    return upgraded


def _with_model_revision(item: JsonValue) -> JsonValue:
    """A fused input with its ``config`` read by :func:`upgrade_model_revision`; else as it is."""
    inner = item.get("config") if isinstance(item, dict) else None
    if isinstance(item, dict) and isinstance(inner, dict):
        return {**item, "config": upgrade_model_revision(inner)}
    return item


def same_config(
    stored: RunRecord, config: Mapping[str, JsonValue], recorded: Mapping[str, JsonValue] | None = None
) -> bool:
    """Whether a finished folder's record was made with ``config`` (as this r2med records it): equal, or for a
    record of schema 2 or 1 (upgraded) equal on everything it recorded, ``config`` adding only the keys schema 3
    added (:data:`V3_CONFIG_KEYS`).  ``recorded``: the record's config as compared (default: as read)."""
    if recorded is None:
        recorded = stored.config.as_json() if stored.config is not None else None
    if recorded is None:
        return False
    if stored.read_version >= 3:
        return recorded == config
    extra = set(config) - set(recorded)
    return extra <= V3_CONFIG_KEYS and all(config.get(k) == v for k, v in recorded.items())


def read_record(folder: str | os.PathLike[str]) -> RunRecord:
    """A task folder's ``metrics.json`` as a checked record (the one reader); any fault a DataError naming it."""
    path = Path(folder) / METRICS_FILE
    try:
        data = json.loads(read_regular(path).decode("utf-8"), parse_int=_parse_int)  # a FIFO there: never waited on
    except FileNotFoundError:
        raise DataError(path, None, "no metrics.json (not a finished task folder)") from None
    except UnicodeDecodeError as exc:
        raise DataError(path, None, f"not UTF-8 text (byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise DataError(path, exc.lineno, f"malformed JSON ({exc.msg})") from None
    except RecursionError:
        raise DataError(path, None, "malformed JSON (nested too deeply)") from None
    except OSError as exc:
        raise DataError(path, None, f"cannot read it ({exc.strerror or exc})") from None
    except ValueError as exc:  # e.g. a number literal json cannot convert
        raise DataError(path, None, f"malformed JSON ({shown(str(exc))})") from None
    found = _long_integer(data)
    if found is not None:
        key, literal = found
        raise DataError(
            path,
            None,
            f"{key} is a {len(literal.lstrip('-')):,}-digit integer, not a value r2med "
            f"writes (at most {MAX_INT_DIGITS} digits)",
        )
    return parse_record(data, path)


def metrics_record(payload: Mapping[str, object], where: str | os.PathLike[str]) -> RunRecord:
    """``payload`` (what a run writes to ``metrics.json``) checked as a record of :data:`SCHEMA_VERSION` (written as
    given: no upgrade, the model's commit included); any fault a one-line :class:`DataError` naming ``where``."""
    return parse_record({**payload, "schema_version": SCHEMA_VERSION}, where, upgrade=False)


def record_text(record: RunRecord) -> str:
    """The text of ``metrics.json`` for ``record`` (``schema_version`` :data:`SCHEMA_VERSION` first, then the
    record's keys in order): the one writer's serialisation."""
    return json.dumps(record.to_json(), indent=1) + "\n"


def metrics_json(payload: Mapping[str, object], where: str | os.PathLike[str]) -> str:
    """The text of ``metrics.json`` for ``payload``, checked as a record (:func:`metrics_record`)."""
    return record_text(metrics_record(payload, where))
