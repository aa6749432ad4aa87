"""The step types: one typed, frozen spec per job (evaluate, rerank, fuse, expand, import, export).

A step is what one job runs: the command line, an experiment file, the Python API and a Ray worker build it
through the same parse (:func:`evaluate_step`, :func:`rerank_step`, :func:`fuse_step`, and
:func:`~r2med.typed.parse.parse` for the others), and the job takes it whole.  The part that changes scores is
what ``metrics.json``'s ``config`` records (:meth:`EvaluateStep.record`, :meth:`RerankStep.record`,
:meth:`FuseStep.record`) and what a finished folder is reused by; :func:`evaluate_from_record` and
:func:`rerank_from_record` read a recorded ``config`` back as the same type.

Where results go and what they store (:class:`Output`) and which data a step reads (:class:`Data`) are specs
too, shared by the steps.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Literal

from pydantic import (
    Field,
    PlainSerializer,
    PlainValidator,
    SerializeAsAny,
    WithJsonSchema,
    field_validator,
    model_validator,
)

from .data.benchmarks import protocol_of_task
from .data.loaders import check_split
from .expansion.spec import Expansion
from .measures import HEADLINE, Measure
from .reranking.base import TAIL_REFUSED, published_depth, reranker_meta
from .retrieval.registry import RETRIEVERS, retriever_meta
from .runs.record import RecordedConfig
from .typed.options import ExpandLlmOptions, FusionOptions
from .typed.parse import (
    Count,
    Origin,
    RerankerOptions,
    RetrieverOptions,
    Spec,
    SpecError,
    SpecT,
    field_names,
    flag_of,
    parse,
    plain,
)

#: one path or several, as text or path objects (a step's ``runs``)
PathOrPaths = str | os.PathLike[str] | Iterable[str | os.PathLike[str]]
#: a path given as text or a Path (read as given: relative paths are relative to the current folder)
PathField = Annotated[Path, Field(strict=False)]


def _as_measure(value: object) -> Measure:
    """A measure field's value: a :class:`~r2med.measures.Measure`, or any spelling of one (parsed here)."""
    if isinstance(value, Measure):
        return value
    if isinstance(value, str):
        return Measure.parse(value)
    raise ValueError(f"expected a measure name such as nDCG@10, got {value!r}")


#: a measure given as a :class:`~r2med.measures.Measure` or any spelling; dumped as its pytrec_eval name
MeasureField = Annotated[
    Measure,
    PlainValidator(_as_measure),
    PlainSerializer(lambda m: m.trec, return_type=str),
    WithJsonSchema({"type": "string"}),
]


class Data(Spec):
    """Which data a step reads: the tasks, a local folder (else the hub, or the source its inputs recorded), the
    hub revision, a BEIR folder's split, whether repeated ids or judgments are refused, BRIGHT's long-document
    setting (``long_documents``: each BRIGHT task's ``bright:<task>:long``), and a judgments file read in place of
    the task's own (``qrels``: one task; recorded by hash, never graded against published rows)."""

    tasks: str | tuple[str, ...] = "all"
    data_dir: PathField | None = None
    revision: str | None = None
    split: str = "test"
    strict: bool = False
    long_documents: bool = False
    qrels: PathField | None = None

    @field_validator("tasks", mode="before")
    @classmethod
    def _tasks(cls, value: object) -> object:
        if isinstance(value, list):
            return tuple(value)
        return value

    @field_validator("split")
    @classmethod
    def _split(cls, value: str) -> str:
        try:
            return check_split(value)
        except SpecError:
            raise
        except ValueError as exc:
            raise ValueError(str(exc).removeprefix("--split must be ")) from None

    @property
    def task_text(self) -> str:
        """``tasks`` as ``r2med --tasks`` writes it (``all`` or comma-separated names)."""
        return self.tasks if isinstance(self.tasks, str) else ",".join(self.tasks)


def _refuse_evaluation_data(data: Data, job: str) -> None:
    """``qrels`` and ``long_documents`` choose what a run is scored on and which corpus it searches; a job that
    takes its tasks from runs made before (rerank, fuse) or makes none (expand) refuses them rather than ignore
    them."""
    if data.qrels is not None:
        raise ValueError(
            f"qrels: {job} takes no judgments file (evaluate, import and score do; a {job} result is scored on "
            "the judgments of its task)"
        )
    if data.long_documents:
        raise ValueError(
            f"long_documents: {job} takes no long-document setting (the tasks of its inputs say it: bright:<task>:long)"
        )


class Output(Spec):
    """Where a step writes (``OUT/<system>/<task>/``; None: the root of its first input, or nowhere) and what its
    results store: the measures asked for (stored beside the default set), whether unanswered
    judged queries count as 0, whether finished folders are recomputed."""

    out: PathField | None = None
    measures: tuple[MeasureField, ...] = Field(default=(), json_schema_extra={"flag": "--measure"})
    count_missing: bool = False
    overwrite: bool = False

    @field_validator("measures", mode="before")
    @classmethod
    def _measures(cls, value: object) -> object:
        if isinstance(value, (str, Measure)):
            value = [value]
        if isinstance(value, (list, tuple)) and all(isinstance(m, (str, Measure)) for m in value):
            return tuple(dict.fromkeys(_as_measure(m) for m in value))
        return value

    @property
    def columns(self) -> tuple[Measure, ...]:
        """The measures a table shows: those asked for, else nDCG@10."""
        return self.measures or (HEADLINE,)

    def columns_for(self, tasks: Sequence[str]) -> tuple[Measure, ...]:
        """The measures a table of ``tasks`` shows: those asked for, else each task's headline (nDCG@10; Recall@1
        for BRIGHT's long-document setting, as its leaderboard reports it), each once."""
        if self.measures or not tasks:
            return self.columns
        return tuple(dict.fromkeys(protocol_of_task(t).headline for t in tasks))


class EvaluateStep(Spec):
    """``r2med evaluate`` / ``[[retrievers]]``: one retriever with its options over tasks."""

    retriever: str
    options: SerializeAsAny[RetrieverOptions] = Field(default_factory=lambda: RetrieverOptions())
    #: documents kept per query; None: the depth of each task's protocol (R2MED 100, BRIGHT 1000)
    top_k: Count | None = None
    expansion: Expansion | None = None
    expansion_file: PathField | None = None
    expansion_dir: PathField | None = None
    name: str | None = None
    data: Data = Field(default_factory=lambda: Data())
    output: Output = Field(default_factory=lambda: Output())

    @classmethod
    def of(cls, retriever: str, **values: object) -> EvaluateStep:
        """The step of ``retriever`` with ``values`` (its options, the step's fields, its data and output side
        by side), through the one parse: ``EvaluateStep.of("bm25", k1=1.2, top_k=10)``."""
        return evaluate_step({"retriever": retriever, **values}, Origin.python(f"EvaluateStep.of({retriever!r})"))

    def depth(self, protocol_depth: int) -> int:
        """How many documents it keeps per query on a task whose protocol keeps ``protocol_depth``: ``top_k``
        when given (``--top-k`` overrides the protocol, and is recorded), else the protocol's."""
        return self.top_k if self.top_k is not None else protocol_depth

    def record(self, depth: int | None = None) -> dict[str, object]:
        """What ``metrics.json``'s ``config`` holds of this step (the facts of the run follow it); ``k`` is the
        depth it ran at (``depth``: the task's, where ``top_k`` is not given)."""
        return {
            "step": "evaluate",
            "retriever": self.retriever,
            "options": self.options.record(),
            "k": self.top_k if self.top_k is not None else depth,
        }


class RerankStep(Spec):
    """``r2med rerank`` / ``[[rerank]]``: a reranker with its options over the runs of first-stage systems."""

    runs: tuple[PathField, ...] = Field(json_schema_extra={"flag": "--run"})
    #: a registry name, a model id or folder (a cross-encoder), or a scorer object (Python: ``custom``'s)
    reranker: object
    options: SerializeAsAny[RerankerOptions] = Field(default_factory=lambda: RerankerOptions())
    top_k: Count | None = None
    keep_tail: bool = Field(default=True, json_schema_extra={"flag": "--top-k-only"})  # the flag sets it false
    name: str | None = None
    data: Data = Field(default_factory=lambda: Data())
    output: Output = Field(default_factory=lambda: Output())

    @model_validator(mode="after")
    def _data(self) -> RerankStep:
        _refuse_evaluation_data(self.data, "rerank")
        return self

    @classmethod
    def of(cls, runs: PathOrPaths, reranker: object, **values: object) -> RerankStep:
        """The step reranking ``runs`` (a folder or several) with ``reranker``, through the one parse."""
        given = (runs,) if isinstance(runs, (str, os.PathLike)) else tuple(runs)
        shown = reranker if isinstance(reranker, str) else type(reranker).__name__
        return rerank_step(
            {"runs": given, "reranker": reranker, **values}, Origin.python(f"RerankStep.of(reranker={shown!r})")
        )

    @property
    def reranker_name(self) -> str:
        """The registry name it runs (``custom`` for a scorer object)."""
        return self.reranker if isinstance(self.reranker, str) else "custom"

    def depth(self) -> int:
        """How deep it reranks: ``top_k``, else the depth of the reranker's published figures."""
        return self.top_k if self.top_k is not None else published_depth(self.reranker_name)

    def record(self) -> dict[str, object]:
        return {"step": "rerank", "options": self.options.record(), "top_k": self.depth(), "keep_tail": self.keep_tail}


class FuseStep(Spec):
    """``r2med fuse`` / ``[[fusion]]``: several systems fused into one."""

    systems: tuple[PathField, ...]
    options: FusionOptions = Field(default_factory=lambda: FusionOptions())
    #: documents kept per query; None: the depth of each task's protocol (R2MED 100, BRIGHT 1000)
    top_k: Count | None = None
    name: str | None = None
    data: Data = Field(default_factory=lambda: Data())
    output: Output = Field(default_factory=lambda: Output())

    @model_validator(mode="after")
    def _data(self) -> FuseStep:
        _refuse_evaluation_data(self.data, "fuse")
        return self

    @classmethod
    def of(cls, systems: Iterable[str | os.PathLike[str]], **values: object) -> FuseStep:
        """The step fusing ``systems`` (folders), through the one parse: ``FuseStep.of([a, b], method="rrf")``."""
        return fuse_step({"systems": tuple(systems), **values}, Origin.python("FuseStep.of()"))

    def depth(self, protocol_depth: int) -> int:
        """How many documents the fused run keeps per query on a task whose protocol keeps ``protocol_depth``."""
        return self.top_k if self.top_k is not None else protocol_depth

    def record(self, depth: int | None = None) -> dict[str, object]:
        """What ``metrics.json``'s ``config`` holds of this step; ``depth``: the task's, where ``top_k`` is not
        given."""
        o = self.options
        return {
            "step": "fuse",
            "fusion": o.method,
            "k": o.k if o.method == "rrf" else None,
            "norm": None if o.method == "rrf" else o.norm,
            "weights": list(o.weights) if o.weights else None,
            "depth": self.top_k if self.top_k is not None else depth,
        }


class ImportStep(Spec):
    """``r2med import`` / ``[[imports]]``: run files made elsewhere, scored and written as a system."""

    runs: tuple[PathField, ...] = ()
    name: str
    note: str | None = None
    #: how equal scores are ordered when scored: trec_eval's rule, or the run's own listed order (recorded)
    ties: Literal["trec_eval", "listed"] = "trec_eval"
    trace: PathField | None = None  # an agent's trace from ``r2med serve``: each query's union as the run
    data: Data = Field(default_factory=lambda: Data())
    output: Output = Field(default_factory=lambda: Output())

    @classmethod
    def of(cls, runs: PathOrPaths, **values: object) -> ImportStep:
        """The step importing ``runs`` (one path or several, text or ``Path``) with ``values`` (its fields, its data
        and output side by side, as ``[[imports]]`` gives them), through the one parse:
        ``ImportStep.of([Path("pony.trec")], name="theirs", tasks=["bright:pony"], ties="listed")``."""
        given: object = [runs] if isinstance(runs, (str, os.PathLike)) else runs
        if isinstance(given, list):
            given = tuple(given)
        return flat({"runs": given, **values}, cls, Origin.python("ImportStep.of(...)"))


class ExpandStep(Spec):
    """``r2med expand``: queries expanded by an LLM, written as hub-layout expansion files.  The LLM's endpoint,
    requests and sampling are its ``llm`` (:class:`~r2med.typed.options.ExpandLlmOptions`, given flat: ``model``,
    ``base_url``, ``timeout``... beside the step's own fields)."""

    method: str
    llm: ExpandLlmOptions
    out: PathField
    llm_name: str | None = None
    sampling: Literal["api", "open"] | None = None
    prompt_task: str | None = None
    retriever: str = "bm25"
    retrieval_url: str | None = None
    max_turns: Count = 4
    search_k: Count = 3
    search_tags: str | None = None
    result_tags: str | None = None
    answer_tags: str | None = None
    prompt_file: PathField | None = None
    data: Data = Field(default_factory=lambda: Data())

    @model_validator(mode="after")
    def _data(self) -> ExpandStep:
        _refuse_evaluation_data(self.data, "expand")
        return self


class ExportStep(Spec):
    """``r2med export``: finished systems in another toolkit's results format (MTEB)."""

    runs: tuple[PathField, ...]
    out: PathField
    format: str = "mteb"
    model: str | None = None
    model_revision: str | None = None
    force: bool = False
    mteb_task: str | None = None
    strict: bool = False


# -- the parse of a step whose options depend on what it runs ---------------------------------------------

#: the specs a step holds whole whose fields are given flat beside its own (``--data-dir``, ``--out``, expand's
#: ``--model``...)
_NESTED: dict[str, type[Spec]] = {"data": Data, "output": Output, "llm": ExpandLlmOptions}


def _split(
    step: type[Spec], values: Mapping[str, object], origin: Origin
) -> tuple[dict[str, object], dict[str, object], dict[str, dict[str, object]]]:
    """``values`` (flat, as a command line or a table gives them) as (step fields, options, nested specs); a path
    object is its text (:func:`~r2med.typed.parse.plain`: ``reranker=Path(...)`` names a folder, as its text does)."""
    values = {key: plain(value) for key, value in values.items()}
    own = set(field_names(step)) - {"options", *_NESTED}
    nested_fields = {name: set(field_names(kind)) for name, kind in _NESTED.items() if name in step.model_fields}
    fields: dict[str, object] = {}
    options: dict[str, object] = {}
    nested: dict[str, dict[str, object]] = {name: {} for name in nested_fields}
    for key, value in values.items():
        if key in own:
            fields[key] = value
        elif key in nested or key == "options":  # given whole (a spec), or as a mapping (a dumped spec)
            if isinstance(value, Spec):
                fields[key] = value
            elif isinstance(value, Mapping):
                (options if key == "options" else nested[key]).update(value)
            else:
                raise origin.fail(f"{key}: expected a table of options, got {value!r}")
        else:
            home = next((name for name, names in nested_fields.items() if key in names), None)
            if home is not None:
                nested[home][key] = value
            else:
                options[key] = value
    return fields, options, nested


def step_flags(step: type[Spec]) -> dict[str, str]:
    """Each key of ``step``'s flat values that is not an option of what it runs (the step's own fields, its
    ``data`` and ``output`` and their fields), with the command-line flag that sets it: what ``--set`` refuses,
    naming the flag (``--set qrels=FILE``: ``--qrels``).  ``options`` (a table of options) is an option."""
    flags: dict[str, str] = {}
    for name in field_names(step):
        kind = _NESTED.get(name)
        if kind is not None:
            flags[name] = ", ".join(flag_of(kind, n) for n in field_names(kind))
            flags.update((n, flag_of(kind, n)) for n in field_names(kind))
        elif name != "options":
            flags[name] = flag_of(step, name)
    return flags


def _build(
    step: type[SpecT],
    fields: dict[str, object],
    nested: Mapping[str, Mapping[str, object]],
    options: Spec | None,
    origin: Origin,
) -> SpecT:
    for name, values in nested.items():
        if name not in fields:
            fields[name] = parse(_NESTED[name], values, origin)
    if options is not None:
        fields["options"] = options
    return parse(step, fields, origin)


def evaluate_step(values: Mapping[str, object], origin: Origin) -> EvaluateStep:
    """An :class:`EvaluateStep` from flat ``values`` (the step's fields, its data and output, and the retriever's
    own options side by side, as ``r2med evaluate`` and ``[[retrievers]]`` give them); the options are parsed by
    the retriever's options type (its registry record)."""
    fields, options, nested = _split(EvaluateStep, values, origin)
    retriever = fields.get("retriever")
    if not isinstance(retriever, str) or not retriever:
        raise origin.fail(f"{origin.key(EvaluateStep, 'retriever')}: missing (the retriever, as `r2med models` lists)")
    try:
        meta = retriever_meta(retriever)
    except SpecError:
        raise
    except ValueError as exc:
        raise origin.fail(f"{origin.key(EvaluateStep, 'retriever')}: {exc}") from None
    given = fields.pop("options", None)
    parsed = given if isinstance(given, Spec) and not options else parse(meta.options, options, origin)
    if not isinstance(parsed, meta.options):
        raise origin.fail(f"options: expected {meta.options.__name__} for {retriever!r}, got {type(parsed).__name__}")
    return _build(EvaluateStep, fields, nested, parsed, origin)


def rerank_step(values: Mapping[str, object], origin: Origin) -> RerankStep:
    """A :class:`RerankStep` from flat ``values``; the options are parsed by the reranker's options type (a
    model id or folder: a cross-encoder's; a scorer object: ``custom``'s)."""
    fields, options, nested = _split(RerankStep, values, origin)
    reranker = fields.get("reranker")
    if reranker is None or (isinstance(reranker, str) and not reranker):
        raise origin.fail(f"{origin.key(RerankStep, 'reranker')}: missing (as `r2med rerank --reranker`)")
    if isinstance(reranker, str):
        try:
            meta = reranker_meta(reranker)
        except ValueError as exc:
            raise origin.fail(f"{origin.key(RerankStep, 'reranker')}: {exc}") from None
        if meta.name != reranker and options.get("model") is None:  # a model id or folder: a cross-encoder's
            options = {**options, "model": reranker}
        kind = meta.options
        if not meta.tail:  # its run is what it ranks (BRIGHT's rerank.py): no first-stage tail follows
            if fields.get("keep_tail") is True:
                raise origin.fail(f"{origin.key(RerankStep, 'keep_tail')}: {reranker}: {TAIL_REFUSED}")
            fields["keep_tail"] = False
    else:  # a scorer object (Python): the custom reranker over it
        kind = reranker_meta("custom").options
        options = {"scorer": reranker, **options}
    given = fields.pop("options", None)
    parsed = given if isinstance(given, Spec) and not options else parse(kind, options, origin)
    return _build(RerankStep, fields, nested, parsed, origin)


def fuse_step(values: Mapping[str, object], origin: Origin) -> FuseStep:
    """A :class:`FuseStep` from flat ``values`` (the fusion options beside the step's fields)."""
    fields, options, nested = _split(FuseStep, values, origin)
    given = fields.pop("options", None)
    parsed = given if isinstance(given, Spec) and not options else parse(FusionOptions, options, origin)
    return _build(FuseStep, fields, nested, parsed, origin)


def flat(values: Mapping[str, object], step: type[SpecT], origin: Origin) -> SpecT:
    """A step without registry-dependent options (import, expand, export) from flat ``values``."""
    fields, extra, nested = _split(step, values, origin)
    if extra:
        first = next(iter(extra))
        raise origin.fail(f"unknown option {origin.key(step, first)!r}")
    return _build(step, fields, nested, None, origin)


# -- a recorded config read back --------------------------------------------------------------------------


def evaluate_from_record(config: RecordedConfig) -> EvaluateStep | None:
    """The :class:`EvaluateStep` a ``metrics.json`` ``config`` recorded (any schema version, upgraded), or None
    when it is not an evaluate record or names a retriever this r2med does not know."""
    if config.step != "evaluate":
        return None
    retriever = config.retriever
    meta = RETRIEVERS.get(retriever) if retriever is not None else None
    if meta is None:
        return None
    recorded = meta.upgrade_config(config.as_json())  # an option also recorded beside ``options`` (BM25's k1, b)
    given = recorded.get("options")
    options = given if isinstance(given, Mapping) else {}
    expansion = config.expansion
    # the options as a table of their own (an option never reads as a step field)
    values: dict[str, object] = {"retriever": retriever, "options": dict(options or {})}
    if isinstance(config.k, int):
        values["top_k"] = config.k
    if expansion is not None and expansion.method and expansion.llm:
        values["expansion"] = {"method": expansion.method, "llm": expansion.llm}
    try:
        return evaluate_step(values, Origin.record(f"the recorded config of {retriever!r}"))
    except SpecError:
        return None


def rerank_from_record(config: RecordedConfig) -> RerankStep | None:
    """The :class:`RerankStep` a ``metrics.json`` ``config`` recorded (any schema version), or None when it is not a
    rerank record or names no reranker this r2med knows (a scorer of your own: ``custom``).

    Its options are schema 3's ``options``; a record written before them (schema 1 and 2) holds only what they
    resolved to (its ``reranker`` record), so the options type's fields found there are read back instead.  Its
    runs are the first stage's system folder as recorded (``first_stage.folder``)."""
    if config.step != "rerank":
        return None
    block = config.reranker
    name = block.reranker if block is not None else None
    if block is None or not name:
        return None
    try:
        meta = reranker_meta(name)
    except ValueError:
        return None
    options: Mapping[str, object]
    if config.options is None:  # before schema 3: the resolved record's fields of the options type
        fields = set(field_names(meta.options)) - {"model"} if meta.name != name else set(field_names(meta.options))
        options = {k: v for k, v in block.as_json().items() if k in fields and v is not None}
    else:
        options = config.options
    folder = config.first_stage.folder if config.first_stage is not None else None
    values: dict[str, object] = {
        "runs": (Path(folder).parent,) if folder else (Path("."),),
        "reranker": name,
        "options": dict(options),
    }
    if config.top_k is not None:
        values["top_k"] = config.top_k
    if config.keep_tail is not None:
        values["keep_tail"] = config.keep_tail
    try:
        return rerank_step(values, Origin.record(f"the recorded config of reranker {name!r}"))
    except SpecError:
        return None
