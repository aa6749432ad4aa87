"""``r2med run EXPERIMENT.toml``: a declared grid of steps over tasks, run as one job -- from a file or from Python.

An :class:`Experiment` is a results root, the data, and a list of step specs (:mod:`r2med.steps`:
:class:`~r2med.steps.EvaluateStep`, :class:`~r2med.steps.RerankStep`,
:class:`~r2med.steps.FuseStep`, :class:`~r2med.steps.ImportStep`), each the spec its command builds;
a rerank names the systems it reads in ``runs``, a fusion in ``systems`` (systems of the experiment, or folders
already in ``out``).  :func:`make_experiment` checks it whole before any work (names, what each step reads, the
order, the report's destinations); the TOML reader :func:`load_experiment` is one way to build it: each table
goes through the one parse (:func:`r2med.steps.evaluate_step` and the others), so a bad value is one line
naming the file, the table and the key (``exp.toml: [[retrievers]] 2: k1: expected a finite number >= 0, got
'high'``).  :func:`run_experiment` runs the steps in dependency order through the same jobs as the commands:
finished task folders are reused (a second run recomputes nothing), and a killed run resumes from the folders it
finished.  :func:`write_reports` writes the report.

Relative paths in a file (``out``, ``dirs``, ``expansion_file``, ``expansion_dir``, ``html``, ``latex``,
``markdown``, ``[report] data_dir``, an import's ``runs``, the module of an ``encoder`` or ``scorer`` given as a
``.py`` file, and ``model`` / ``reranker`` / ``base`` / ``lora`` / ``tokenizer`` values naming an existing
folder or starting with ``.``) are read against the folder of the file, not the current one.
"""

from __future__ import annotations

import logging
import os
import re
import tomllib
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TypeVar

from pydantic import BaseModel, BeforeValidator, Field, ValidationError, field_validator

from ..data import TaskRef, check_hub, resolve
from ..data.hub import parse_revision
from ..data.names import aliases, is_hub_task, task_parts
from ..data.resolve import task_filter
from ..errors import R2MedError, did_you_mean
from ..errors import shown as shown_value
from ..infra.containment import check_input_file, check_output_dir, check_output_file, system_folder
from ..infra.home import write_text_atomic
from ..infra.input_files import open_regular, read_regular
from ..measures import HEADLINE, Measure
from ..report import build_leaderboard
from ..report.html import render_html
from ..report.multi import Boards
from ..reranking.base import reranker_meta
from ..retrieval.registry import retriever_meta
from ..runs.fusion import check_weights
from ..runs.record import StepKind
from ..steps import (
    Data,
    EvaluateStep,
    FuseStep,
    ImportStep,
    MeasureField,
    Output,
    RerankStep,
    evaluate_step,
    flat,
    fuse_step,
    rerank_step,
)
from ..typed.options import FusionOptions
from ..typed.parse import Origin, Spec, SpecError, field_names, parse, plain, spec_error
from .evaluate import plan, run_tasks
from .fuse import fuse_folders
from .fuse import system_name as fused_name
from .imports import import_files
from .report import load_report, task_texts
from .rerank import rerank_folder, system_name

if TYPE_CHECKING:
    from ..report.leaderboard import Leaderboard

log = logging.getLogger(__name__)

#: The file's tables, as written in it (for error messages).
TABLES: dict[StepKind, str] = {
    "evaluate": "[[retrievers]]",
    "rerank": "[[rerank]]",
    "fuse": "[[fusion]]",
    "import": "[[imports]]",
}
#: The file's keys of each table -> the step's field (the options of what a table runs come on top).
FILE_KEYS: dict[StepKind, dict[str, str]] = {
    "evaluate": {
        "name": "retriever",
        "label": "name",
        "tasks": "tasks",
        "top_k": "top_k",
        "expansion": "expansion",
        "expansion_file": "expansion_file",
        "expansion_dir": "expansion_dir",
        "qrels": "qrels",
    },
    "rerank": {"reranker": "reranker", "runs": "runs", "label": "name", "top_k": "top_k", "keep_tail": "keep_tail"},
    "fuse": {"systems": "systems", "label": "name", "top_k": "top_k", **{f: f for f in field_names(FusionOptions)}},
    "import": {"name": "name", "runs": "runs", "note": "note", "ties": "ties", "tasks": "tasks", "qrels": "qrels"},
}
TOP_LEVEL = ("out", "data", "retrievers", "rerank", "fusion", "imports", "report")
#: Keys whose values are paths (read against the file's folder).
PATH_KEYS = {"expansion_file", "expansion_dir", "qrels"}
#: Keys whose values may be paths or hub ids (a path when it exists there or starts with ``.``).
MAYBE_PATH_KEYS = {"model", "reranker", "base", "lora", "tokenizer"}
#: Keys naming your code as MODULE:OBJ (a ``.py`` module is a path, read against the file's folder).
CODE_KEYS = {"encoder", "scorer"}


@dataclass
class Step:
    """One step of the experiment: its spec, the system ``label`` it makes and the systems it reads (``needs``)."""

    kind: StepKind
    index: int  # 1-based, within its table
    label: str
    spec: EvaluateStep | RerankStep | FuseStep | ImportStep
    needs: tuple[str, ...] = ()
    what: str = ""  # the retriever, reranker, fusion method or "import"

    @property
    def where(self) -> str:
        return f"{TABLES[self.kind]} {self.index}"


def _path_value(value: object) -> Path:
    """A path field's value: text or a path, not empty, no NUL (no file name holds one)."""
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if not isinstance(value, str) or not value:
        raise ValueError(f"expected a path (text), got {shown_value(value)}")
    if "\0" in value:
        raise ValueError(f"expected a path, got {shown_value(value)}, which holds a NUL")
    return Path(value).expanduser()


#: a file or folder named by text or a path (a relative one is the file's folder's, in a file: :class:`Reader`)
FilePath = Annotated[Path, BeforeValidator(_path_value)]


def _some(value: object, words: str) -> list[object]:
    """One value or a list of them, as a list (``dirs = "data"`` is ``dirs = ["data"]``)."""
    if isinstance(value, (str, os.PathLike, Measure)):
        return [value]
    if isinstance(value, tuple):
        return list(value)
    if not isinstance(value, list):
        raise ValueError(f"expected {words}, got {shown_value(value)}")
    return value


class DataTable(Spec):
    """``[data]`` (and :func:`make_experiment`'s data arguments): the tasks (``all``, names, or a list of names),
    the local folders ``dirs`` (one or a list), the hub ``revision`` and BRIGHT's ``long_documents`` setting, as
    ``r2med evaluate``'s ``--tasks``, ``--data-dir``, ``--revision`` and ``--long-documents`` take them."""

    tasks: str | list[str] = Field(default="all", json_schema_extra={"expected": "task names"})
    dirs: list[FilePath] = Field(default_factory=list, json_schema_extra={"expected": "a path or a list of paths"})
    revision: str | None = None
    long_documents: bool = False

    @field_validator("tasks", mode="before")
    @classmethod
    def _tasks(cls, value: object) -> object:
        """``all``, names as text, or a non-empty list of names (:func:`r2med.data.names.task_parts`: ``""`` and
        ``[]`` name no task, they never mean all)."""
        if value is not None and not isinstance(value, (str, Iterable)):
            raise ValueError(f"expected task names (text, or a list of them), got {shown_value(value)}")
        try:
            task_parts(value)  # a name that is no text, or none: one line
        except R2MedError as exc:
            raise ValueError(str(exc).removeprefix("--tasks").removeprefix(":").lstrip()) from None
        return list(value) if isinstance(value, tuple) else value

    @field_validator("dirs", mode="before")
    @classmethod
    def _dirs(cls, value: object) -> list[object]:
        return _some(value, "a path or a list of paths")

    @field_validator("revision")
    @classmethod
    def _revision(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                parse_revision(value)
            except R2MedError as exc:
                raise ValueError(str(exc)) from None
        return value


#: where the values of a :class:`ReportSpec` being built come from: a Python call unless a file's ``[report]`` is
#: read (pydantic builds a model whose ``__init__`` is its own through that ``__init__``, the parse's too)
_REPORT_ORIGIN: ContextVar[Origin | None] = ContextVar("report_origin", default=None)


class ReportSpec(Spec):
    """``[report]``: the measures (one table each), the files written, the significance baseline, the page's title,
    and the data whose query and document texts the HTML page carries.

    Built from a file's table or from Python (``ReportSpec(measures="nDCG@10", html="page.html")``) through the
    one parse: measures as :class:`~r2med.measures.Measure` values or any spelling (one or several), files and
    folders as text or paths; a bad value is one line (``ReportSpec: measures: unknown measure ...``)."""

    measures: tuple[MeasureField, ...] = Field(
        default=(HEADLINE,), json_schema_extra={"expected": "measure names such as 'nDCG@10'"}
    )
    html: FilePath | None = None
    latex: FilePath | None = None
    markdown: FilePath | None = None
    baseline: str | None = None
    title: str = "R2MED results"
    data_dir: FilePath | None = None

    def __init__(self, **values: object) -> None:
        """The spec of ``values`` (None: not set), or one :class:`ExperimentError` line naming where they came from
        (:data:`_REPORT_ORIGIN`: a Python call, or the file whose ``[report]`` the parse reads) and the key."""
        try:
            super().__init__(**{k: plain(v) for k, v in values.items() if v is not None})
        except ValidationError as exc:
            raise ExperimentError(
                str(spec_error(ReportSpec, exc, _REPORT_ORIGIN.get() or Origin.python("ReportSpec")))
            ) from None

    @field_validator("measures", mode="before")
    @classmethod
    def _measures(cls, value: object) -> tuple[object, ...]:
        given = _some(value, "measure names such as 'nDCG@10'")
        if not given:
            raise ValueError("name at least one measure (e.g. 'nDCG@10')")
        return tuple(given)

    @field_validator("measures")
    @classmethod
    def _once(cls, value: tuple[Measure, ...]) -> tuple[Measure, ...]:
        return tuple(dict.fromkeys(value))


#: the keys of ``[data]`` and ``[report]``: their specs' fields
DATA_KEYS = field_names(DataTable)
REPORT_KEYS = field_names(ReportSpec)


@dataclass
class Experiment:
    """A results root, the data and the steps, checked (:func:`make_experiment`) and in the order they run."""

    out: Path
    steps: list[Step] = field(default_factory=list)
    tasks: str | list[str] = "all"
    dirs: list[Path] = field(default_factory=list)
    revision: str | None = None
    report: ReportSpec = field(default_factory=ReportSpec)
    #: ``[data] long_documents``: BRIGHT's tasks in their long-document setting (``bright:<task>:long``)
    long_documents: bool = False
    #: the file it was read from (None: built in Python)
    source: Path | None = None

    @property
    def systems(self) -> list[str]:
        return [s.label for s in self.steps]

    @property
    def read_systems(self) -> list[str]:
        """The systems of its report: those it makes, then those its steps read from ``out`` (a fusion's inputs)."""
        made = self.systems
        return made + [n for n in dict.fromkeys(need for s in self.steps for need in s.needs) if n not in made]


class ExperimentError(R2MedError):
    """An experiment that cannot run: ``exp.toml: [[retrievers]] 2: unknown option 'k3'``."""


# -- an experiment from step specs (Python, and the file reader below) ---------------------------------------


def _names(paths: Sequence[Path]) -> tuple[str, ...]:
    return tuple(str(p) for p in paths)


def step_of(spec: EvaluateStep | RerankStep | FuseStep | ImportStep, index: int) -> Step:
    """The experiment step of ``spec`` (``index``: its number within its kind), named as its command names it."""
    if isinstance(spec, EvaluateStep):
        return Step("evaluate", index, plan(spec).name, spec, (), spec.retriever)
    if isinstance(spec, RerankStep):
        if len(spec.runs) != 1:
            raise R2MedError(f"a rerank step of an experiment reads one system; got {len(spec.runs)}")
        [run] = _names(spec.runs)
        return Step("rerank", index, system_name(spec, run), spec, (run,), spec.reranker_name)
    if isinstance(spec, FuseStep):
        return Step("fuse", index, fused_name(spec, spec.systems), spec, _names(spec.systems), spec.options.method)
    return Step("import", index, spec.name, spec, (), "import")


def kind_of(spec: EvaluateStep | RerankStep | FuseStep | ImportStep) -> StepKind:
    if isinstance(spec, EvaluateStep):
        return "evaluate"
    if isinstance(spec, RerankStep):
        return "rerank"
    return "fuse" if isinstance(spec, FuseStep) else "import"


def exp_data(
    exp: Experiment | None = None, dirs: Sequence[Path] = (), revision: str | None = None
) -> dict[str, object]:
    """What an evaluate step of the experiment reads beside its tasks: the one data folder (where expansion files
    are looked for, as ``--data-dir``) and the hub revision."""
    if exp is not None:
        dirs, revision = exp.dirs, exp.revision
    return {"data_dir": dirs[0] if len(dirs) == 1 else None, "revision": revision}


def make_experiment(
    out: str | os.PathLike[str],
    steps: Sequence[EvaluateStep | RerankStep | FuseStep | ImportStep | Step],
    tasks: str | Sequence[str] = "all",
    dirs: Sequence[str | os.PathLike[str]] = (),
    revision: str | None = None,
    report: ReportSpec | None = None,
    source: str | os.PathLike[str] | None = None,
    fail: Callable[[str, str], R2MedError] | None = None,
    long_documents: bool = False,
) -> Experiment:
    """An experiment of ``steps`` (specs, as the commands build them, or :class:`Step` s), checked before any work:
    each system made once, every system a step reads made by the experiment or a folder in ``out``, no cycle, the
    data found, the report's destinations writable (never the experiment file, never inside a system folder).
    A rerank reads the system its ``runs`` names, a fusion those its ``systems`` name.  ``fail(where, message)``
    makes the error (the file reader's names the file)."""
    fail = fail or (lambda where, message: ExperimentError(f"{where + ': ' if where else ''}{message}"))
    data = data_table({"tasks": tasks, "dirs": dirs, "revision": revision, "long_documents": long_documents}, fail)
    exp = Experiment(
        _path(out, "", "out", fail),
        tasks=data.tasks,
        dirs=list(data.dirs),
        revision=data.revision,
        report=_report(report, fail),
        source=Path(source) if source is not None else None,
        long_documents=data.long_documents,
    )
    if isinstance(steps, (str, Mapping, Spec)) or not isinstance(steps, Sequence):
        raise fail("", f"steps: expected a list of steps (EvaluateStep, RerankStep, ...), got {shown_value(steps)}")
    counts: dict[str, int] = {}
    for number, item in enumerate(steps, start=1):
        if not isinstance(item, (Step, EvaluateStep, RerankStep, FuseStep, ImportStep)):
            raise fail(
                f"steps[{number - 1}]",
                f"expected EvaluateStep, RerankStep, FuseStep or ImportStep (r2med.steps), got {shown_value(item)}",
            )
        if isinstance(item, Step):
            exp.steps.append(item)
            continue
        kind = kind_of(item)
        counts[kind] = counts.get(kind, 0) + 1
        if isinstance(item, EvaluateStep) and item.data.data_dir is None and item.data.revision is None:
            item = item.model_copy(update={"data": item.data.model_copy(update=exp_data(exp))})
        try:
            exp.steps.append(step_of(item, counts[kind]))
        except R2MedError as exc:
            raise fail(f"{TABLES[kind]} {counts[kind]}", str(exc)) from None
    if not exp.steps:
        raise fail("", "no [[retrievers]], [[rerank]], [[fusion]] or [[imports]] step to run")
    for step in exp.steps:  # an import's files, before any step runs (the steps before it would run for nothing)
        if isinstance(step.spec, ImportStep):
            for run in step.spec.runs:
                _path(run, step.where, "runs", fail)
                if not run.is_file():
                    raise fail(step.where, f"runs: {run}: no such file")
    seen: dict[str, Step] = {}
    for step in exp.steps:
        if step.label in seen:
            raise fail(step.where, f"makes system '{step.label}', as {seen[step.label].where} does; give one a label")
        seen[step.label] = step
    for step in exp.steps:
        if isinstance(step.spec, FuseStep) and len(set(step.needs)) < 2:  # as `r2med fuse` refuses, before any work
            raise fail(step.where, f"systems: fusion needs at least two systems, got {', '.join(step.needs)}")
        for needed in step.needs:
            if needed not in seen and not (exp.out / needed).is_dir():
                raise fail(
                    step.where,
                    f"'{needed}' is no system of this experiment (it makes: {', '.join(seen)}) "
                    f"nor a folder in {exp.out}",
                )
    exp.steps = order_steps(exp.steps, fail)
    try:
        refs = data_refs(exp)
    except R2MedError as exc:
        raise fail("[data]", str(exc)) from None
    names = {r.name.lower() for r in refs}
    for step in exp.steps:
        wanted = step.spec.data.tasks if isinstance(step.spec, (EvaluateStep, ImportStep)) else "all"
        if isinstance(wanted, tuple):
            unknown = [t for t in wanted if t.lower() not in names]
            if unknown:
                raise fail(
                    step.where,
                    f"tasks: {unknown[0]!r} is none of the experiment's tasks ({', '.join(r.name for r in refs)})",
                )
        qrels = step.spec.data.qrels if isinstance(step.spec, (EvaluateStep, ImportStep)) else None
        if qrels is not None:  # as the command checks --qrels, before any step runs
            try:
                check_input_file(_path(qrels, step.where, "qrels", fail), "qrels")
            except R2MedError as exc:
                raise fail(step.where, str(exc)) from None
            count = len(wanted) if isinstance(wanted, tuple) else len(refs)
            if count != 1:
                raise fail(
                    step.where,
                    f"qrels {qrels} holds the judgments of one task, but the step runs on {count}: name one with tasks",
                )
    check_destinations(exp, fail)
    return exp


def _path(value: object, where: str, key: str, fail: Callable[[str, str], R2MedError]) -> Path:
    """A path argument as the file's reader takes it: text or a path, not empty, no NUL (no file name holds one)."""
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if not isinstance(value, str) or not value:
        raise fail(where, f"{key}: expected a path (text), got {shown_value(value)}")
    if "\0" in value:
        raise fail(where, f"{key}: expected a path, got {shown_value(value)}, which holds a NUL")
    return Path(value).expanduser()


def data_table(values: Mapping[str, object], fail: Callable[[str, str], R2MedError]) -> DataTable:
    """``[data]`` from ``values`` (a file's table, :func:`make_experiment`'s arguments) through the one parse; a
    fault is ``fail("[data]", "<key>: <what>")``."""
    try:
        return parse(DataTable, values, Origin.python(""))
    except SpecError as exc:
        raise fail("[data]", str(exc)) from None


def _report(report: object, fail: Callable[[str, str], R2MedError]) -> ReportSpec:
    if report is None:
        return ReportSpec()
    if not isinstance(report, ReportSpec):
        raise fail("[report]", f"expected a ReportSpec, got {shown_value(report)}")
    return report


def check_destinations(exp: Experiment, fail: Callable[[str, str], R2MedError]) -> None:
    """``out`` and the report's files checked as every command checks its ``--out``; a report file may not be the
    experiment file itself, nor lie inside a system folder of ``out`` (it would replace a result), nor be any input
    of the experiment (:func:`experiment_inputs`: an import's run, a qrels or expansion file, a data folder), nor
    be another of its reports (``latex`` and ``html`` one file, or ``latex`` the Markdown report:
    each would replace the other); no system folder the steps write may be a link
    (:func:`r2med.infra.containment.system_folder`).  All found before the first step."""
    try:
        check_output_dir(exp.out, "out")
    except R2MedError as exc:
        raise fail("", str(exc)) from None
    for step in exp.steps:
        try:
            system_folder(exp.out, step.label)
        except R2MedError as exc:
            raise fail(step.where, str(exc)) from None
    spec = exp.report
    root = exp.out.resolve()
    for key in ("html", "latex", "markdown"):
        path: Path | None = getattr(spec, key)
        if path is None:
            continue
        try:
            spec = spec.model_copy(update={key: check_output_file(path, key)})
        except R2MedError as exc:
            raise fail("[report]", str(exc)) from None
        target = path.resolve()
        if exp.source is not None and target == exp.source.resolve():
            raise fail("[report]", f"{key}: {path} is the experiment file itself; name another file")
        inside = target.relative_to(root).parts if target.is_relative_to(root) else ()
        if len(inside) == 1 and (inside[0] in exp.read_systems or target.is_dir()):
            raise fail(
                "[report]",
                f"{key}: {path} is the system folder {inside[0]!r} of out; write reports beside the systems "
                "(out/report.md) or elsewhere",
            )
        if target.is_dir():
            raise fail("[report]", f"{key}: {path} is a folder; name a file")
        if target.is_relative_to(root) and len(target.relative_to(root).parts) > 1:
            raise fail(
                "[report]",
                f"{key}: {path} lies inside the system folder {target.relative_to(root).parts[0]!r} of out; "
                "write reports beside the systems (out/report.md) or elsewhere",
            )
    exp.report = spec
    _refuse_shared_destinations(exp, fail)
    if spec.baseline is not None and spec.baseline not in exp.read_systems:
        raise fail(
            "[report]",
            f"baseline '{spec.baseline}' is no system of this experiment (it makes: {', '.join(exp.systems)})",
        )


def experiment_inputs(exp: Experiment) -> list[tuple[str, Path]]:
    """Every file and folder the experiment reads, with where it is named (``[[imports]] 1 runs``, ``[data] dirs``,
    ``[report] data_dir``, the experiment file): each path field of every step's spec, found by walking the spec
    (a path field added tomorrow is an input too)."""
    found: list[tuple[str, Path]] = [("[data] dirs", d) for d in exp.dirs]
    if exp.report.data_dir is not None:
        found.append(("[report] data_dir", exp.report.data_dir))
    if exp.source is not None:
        found.append(("the experiment file", exp.source))

    def walk(where: str, value: object) -> None:
        if isinstance(value, Path):
            found.append((where, value))
        elif isinstance(value, BaseModel):
            for name in type(value).model_fields:
                if name != "out":  # the results root: an output (report files inside system folders: refused)
                    walk(
                        f"{where} {name}" if name not in ("data", "options", "output") else where, getattr(value, name)
                    )
        elif isinstance(value, (list, tuple)):
            for item in value:
                walk(where, item)

    for step in exp.steps:
        walk(step.where, step.spec)
    return found


def _refuse_shared_destinations(exp: Experiment, fail: Callable[[str, str], R2MedError]) -> None:
    """A report file is no input of the experiment and no other report of it (:func:`check_destinations`)."""
    spec = exp.report
    destinations = [
        ("markdown", spec.markdown if spec.markdown is not None else exp.out / "report.md"),
        ("latex", spec.latex),
        ("html", spec.html),
    ]
    inputs = [(where, Path(os.path.realpath(path))) for where, path in experiment_inputs(exp)]
    taken: dict[Path, str] = {}
    for key, path in destinations:
        if path is None:
            continue
        target = Path(os.path.realpath(path))
        if target in taken:
            other = taken[target]
            said = "the Markdown report" if other == "markdown" and spec.markdown is None else f"[report] {other}"
            raise fail("[report]", f"{key}: {path} is also {said}; each report needs a file of its own")
        taken[target] = key
        for where, source in inputs:
            if target == source:
                raise fail(
                    "[report]",
                    f"{key}: {path} is an input of the experiment ({where}); a report never replaces what the "
                    "experiment reads",
                )


def order_steps(steps: Sequence[Step], fail: Callable[[str, str], R2MedError]) -> list[Step]:
    """``steps`` in dependency order (a step after those making the systems it reads), else in the order given."""
    by_label = {s.label: s for s in steps}
    done: list[Step] = []
    visiting: set[str] = set()

    def visit(step: Step) -> None:
        if step in done:
            return
        if step.label in visiting:
            raise fail(step.where, f"depends on itself (through '{step.label}')")
        visiting.add(step.label)
        for needed in step.needs:
            if needed in by_label:
                visit(by_label[needed])
        visiting.discard(step.label)
        done.append(step)

    for step in steps:
        visit(step)
    return done


# -- the file ----------------------------------------------------------------------------------------------


def load_experiment(path: str | os.PathLike[str]) -> Experiment:
    """Read and check an experiment file; every error is one line naming the file and the key."""
    source = Path(path)
    shown = str(path)
    if not source.is_file():
        raise ExperimentError(f"{shown}: no such file")

    try:
        with open_regular(source) as handle:
            raw = tomllib.load(handle)
    except tomllib.TOMLDecodeError as exc:
        raise ExperimentError(f"{shown}: not valid TOML ({exc})") from None
    except UnicodeDecodeError as exc:  # TOML is UTF-8 (a UTF-16 file, a stray byte)
        raise ExperimentError(f"{shown}: not valid TOML (not UTF-8: {exc.reason} at byte {exc.start})") from None
    except RecursionError:  # arrays or tables nested deeper than tomllib's parser goes
        raise ExperimentError(f"{shown}: not valid TOML (nested too deeply)") from None
    return Reader(shown, source.resolve().parent).experiment(raw, source)


#: the spec a step's table builds (:meth:`Reader._step`)
_Built = TypeVar("_Built", bound=Spec)
#: a table's value as the file gives it (:meth:`Reader.maybe_path`: text may become a path's text)
_Value = TypeVar("_Value")


class Reader:
    """Turns the parsed file into an :class:`Experiment`, failing on the first bad key."""

    def __init__(self, shown: str, base: Path) -> None:
        self.shown = shown
        self.base = base
        self.read_data: dict[str, object] = {}

    def fail(self, where: str, message: str) -> ExperimentError:
        return ExperimentError(f"{self.shown}: {where + ': ' if where else ''}{message}")

    def origin(self, where: str, kind: StepKind) -> Origin:
        spelled = {field: key for key, field in FILE_KEYS[kind].items() if key != field}
        return Origin.file(f"{self.shown}: {where}", spelled)

    def path(self, value: object, where: str, key: str) -> Path:
        if not isinstance(value, str) or not value:
            raise self.fail(where, f"{key}: expected a path (text), got {shown_value(value)}")
        if "\0" in value:  # no file name holds one (os calls raise ValueError)
            raise self.fail(where, f"{key}: expected a path, got {shown_value(value)}, which holds a NUL")
        p = Path(value).expanduser()
        return p if p.is_absolute() else self.base / p

    def maybe_path(self, value: _Value) -> _Value | str:
        """A model or reranker named by a relative folder, read against the file's folder; else as written."""
        if not isinstance(value, str) or Path(value).expanduser().is_absolute():
            return value
        candidate = self.base / value
        return str(candidate) if value.startswith(".") or candidate.exists() else value

    def code(self, value: object) -> object:
        """``MODULE:OBJ`` with a ``.py`` module (or any path) read against the file's folder; a dotted module as
        written (it is imported by name)."""
        if not isinstance(value, str):
            return value
        module, sep, attr = value.rpartition(":")
        if not sep or not (module.endswith(".py") or "/" in module or "\\" in module):
            return value
        p = Path(module).expanduser()
        return value if p.is_absolute() else f"{self.base / p}:{attr}"

    def unknown(self, where: str, keys: Sequence[str], allowed: Sequence[str], extra: str = "") -> None:
        bad = [k for k in keys if k not in allowed]
        if bad:
            raise self.fail(
                where,
                f"unknown option {shown_value(bad[0])}{did_you_mean(bad[0], allowed)}; it takes: "
                f"{', '.join(allowed)}{extra}",
            )

    def table(self, raw: Mapping[str, object], key: str) -> list[Mapping[str, object]]:
        value = raw.get(key, [])
        if isinstance(value, Mapping):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, Mapping) for v in value):
            raise self.fail("", f"{key}: expected [[{key}]] tables")
        return value

    def names(self, value: object, where: str, key: str) -> tuple[str, ...]:
        given = [value] if isinstance(value, str) else value
        names = tuple(v for v in given if isinstance(v, str) and v) if isinstance(given, list) else ()
        if not names or not isinstance(given, list) or len(names) != len(given):
            raise self.fail(where, f"{key}: expected a system name or a list of them, got {given!r}")
        return names

    def values(self, entry: Mapping[str, object], kind: StepKind, where: str, own: Sequence[str]) -> dict[str, object]:
        """A table's keys checked (the step's, then the options ``own`` of what it runs), spelled as the step's
        fields, paths read against the file's folder."""
        keys = FILE_KEYS[kind]
        allowed = [*keys, *(k for k in own if k not in keys)]
        self.unknown(where, list(entry), allowed, extra=f" (options of what it runs: {', '.join(own) or 'none'})")
        values: dict[str, object] = {}
        for key, value in entry.items():
            if key in PATH_KEYS:
                value = str(self.path(value, where, key))
            elif key in MAYBE_PATH_KEYS:
                value = self.maybe_path(value)
            elif key in CODE_KEYS:
                value = self.code(value)
            values[keys.get(key, key)] = value
        return values

    # -- the file's parts ----------------------------------------------------------------------------------
    def experiment(self, raw: Mapping[str, object], source: Path) -> Experiment:
        self.unknown("", list(raw), TOP_LEVEL)
        if "out" not in raw:
            raise self.fail("", "missing key 'out' (the results root, e.g. out = \"results\")")
        out = self.path(raw["out"], "", "out")
        data = self.data(raw.get("data", {}))
        self.read_data = exp_data(None, data.dirs, data.revision)
        specs: list[Step] = []
        for i, entry in enumerate(self.table(raw, "retrievers"), start=1):
            specs.append(self.retriever(entry, i))
        for i, entry in enumerate(self.table(raw, "imports"), start=1):
            specs.append(self.imported(entry, i))
        for i, entry in enumerate(self.table(raw, "rerank"), start=1):
            specs.extend(self.rerank(entry, i, out))
        for i, entry in enumerate(self.table(raw, "fusion"), start=1):
            specs.append(self.fusion(entry, i, out))
        report = self.report_spec(raw.get("report", {}))
        return make_experiment(
            out,
            specs,
            data.tasks,
            data.dirs,
            data.revision,
            report,
            source,
            fail=self.fail,
            long_documents=data.long_documents,
        )

    def data(self, raw: object) -> DataTable:
        """``[data]`` parsed (before the steps' tables read its folders and revision), its folders read against
        the file's."""
        if not isinstance(raw, Mapping):
            raise self.fail("", "data: expected a [data] table")
        self.unknown("[data]", list(raw), DATA_KEYS)
        data = data_table(raw, self.fail)
        return data.model_copy(update={"dirs": [self.base / d for d in data.dirs]})  # an absolute one stays

    def _step(self, build: Callable[[], _Built], where: str) -> _Built:
        try:
            return build()
        except SpecError:
            raise
        except R2MedError as exc:
            raise self.fail(where, str(exc)) from None

    def retriever(self, entry: Mapping[str, object], index: int) -> Step:
        where = f"{TABLES['evaluate']} {index}"
        name = entry.get("name")
        if not isinstance(name, str) or not name:
            raise self.fail(where, "missing key 'name' (the retriever, as `r2med evaluate -r`)")
        try:
            meta = retriever_meta(name)
        except R2MedError as exc:
            raise self.fail(where, f"name: {exc}") from None
        values = {**self.read_data, **self.values(entry, "evaluate", where, field_names(meta.options))}
        spec = self._step(lambda: evaluate_step(values, self.origin(where, "evaluate")), where)
        return self._made(step_of, spec, index, where)

    def _made(self, make: Callable[[_Built, int], Step], spec: _Built, index: int, where: str) -> Step:
        try:
            return make(spec, index)
        except R2MedError as exc:
            raise self.fail(where, str(exc)) from None

    def imported(self, entry: Mapping[str, object], index: int) -> Step:
        where = f"{TABLES['import']} {index}"
        values = self.values(entry, "import", where, ())
        if "runs" in values:
            runs = values["runs"]
            runs = [runs] if isinstance(runs, str) else runs
            if not isinstance(runs, list) or not runs:
                raise self.fail(where, f"runs: expected a run file or a list of them, got {runs!r}")
            values["runs"] = tuple(self.path(r, where, "runs") for r in runs)
        spec = self._step(lambda: flat(values, ImportStep, self.origin(where, "import")), where)
        return self._made(step_of, spec, index, where)

    def rerank(self, entry: Mapping[str, object], index: int, out: Path) -> list[Step]:
        where = f"{TABLES['rerank']} {index}"
        reranker = entry.get("reranker")
        if not isinstance(reranker, str) or not reranker:
            raise self.fail(where, "missing key 'reranker' (as `r2med rerank --reranker`)")
        if "runs" not in entry:
            raise self.fail(where, "missing key 'runs' (the systems to rerank)")
        runs = self.names(entry["runs"], where, "runs")
        try:
            meta = reranker_meta(self.maybe_path(reranker))
        except R2MedError as exc:
            raise self.fail(where, f"reranker: {exc}") from None
        values = self.values(entry, "rerank", where, field_names(meta.options))
        label = values.get("name")
        if label is not None and len(runs) > 1:
            raise self.fail(where, f"label names one result, but runs lists {len(runs)} systems")
        origin = self.origin(where, "rerank")
        steps = []
        for run in runs:
            one = {**values, "runs": (run,)}
            spec = self._step(partial(rerank_step, one, origin), where)
            steps.append(self._made(step_of, spec, index, where))
        return steps

    def fusion(self, entry: Mapping[str, object], index: int, out: Path) -> Step:
        where = f"{TABLES['fuse']} {index}"
        values = self.values(entry, "fuse", where, ())
        if "systems" not in values:
            raise self.fail(where, "missing key 'systems' (the systems to fuse)")
        values["systems"] = self.names(values["systems"], where, "systems")
        spec: FuseStep = self._step(lambda: fuse_step(values, self.origin(where, "fuse")), where)
        try:  # the rest FusionOptions checked; how many systems it could not know
            check_weights(len(spec.systems), spec.options.weights)
        except R2MedError as exc:
            raise self.fail(where, str(exc)) from None
        return self._made(step_of, spec, index, where)

    def report_spec(self, raw: object) -> ReportSpec:
        """``[report]`` through the one parse, its files and folder read against the file's."""
        if not isinstance(raw, Mapping):
            raise self.fail("", "report: expected a [report] table")
        self.unknown("[report]", list(raw), REPORT_KEYS)
        origin = Origin.file(f"{self.shown}: [report]")
        token = _REPORT_ORIGIN.set(origin)
        try:
            spec = parse(ReportSpec, raw, origin)
        finally:
            _REPORT_ORIGIN.reset(token)
        paths = {k: self.base / p for k in ("html", "latex", "markdown", "data_dir") if (p := getattr(spec, k))}
        spec = spec.model_copy(update=paths)  # an absolute one stays
        if spec.data_dir is not None and not spec.data_dir.is_dir():
            raise self.fail("[report]", f"data_dir: {spec.data_dir}: no such folder")
        return spec


def data_refs(exp: Experiment, strict: bool = False) -> list[TaskRef]:
    """The tasks of ``[data]`` (:func:`r2med.data.resolve` per folder of ``dirs``; ``demo``: the built-in demo);
    ``strict``: their collections refuse repeated ids and judgments.

    With ``dirs``, ``tasks`` may mix the folders' collections (by name) with hub tasks of either family
    (``bright:biology``, ``Biology``, ``bright``): the folders' first, then the hub's.  A name that is both a
    collection of the folders and a hub task is the collection (the folder is what the file names)."""
    tasks = exp.tasks
    if not exp.dirs:
        if tasks == "demo" or tasks == ["demo"]:
            return [TaskRef.the_demo(strict=strict)]
        return resolve(tasks, None, exp.revision, strict=strict, long_documents=exp.long_documents)
    parts = [t.strip() for t in (tasks.split(",") if isinstance(tasks, str) else tasks) if t.strip()]
    if [p.lower() for p in parts] in ([], ["all"]):
        parts = []
    local: list[TaskRef] = []
    for folder in exp.dirs:
        if not folder.is_dir():
            raise R2MedError(f"dirs: {folder}: no such folder")
        local.extend(resolve("all", folder, exp.revision, strict=strict))
    if not parts:  # every collection of the folders
        return local
    have = {r.name.lower(): r for r in local}
    hub = [t for t in parts if t.lower() not in have and _names_hub_tasks(t)]
    unknown = [t for t in parts if t.lower() not in have and t not in hub]
    if unknown:
        raise R2MedError(
            f"tasks: {unknown[0]!r} is no collection of dirs ({', '.join(r.name for r in local)}) nor a hub task "
            "(R2MED's, bright:<task>, or r2med / bright for a whole benchmark)"
        )
    refs = [have[t.lower()] for t in dict.fromkeys(t for t in parts if t.lower() in have)]
    if hub:  # hub tasks of either family beside the folders: one study, one file
        refs += resolve(",".join(hub), None, exp.revision, strict=strict, long_documents=exp.long_documents)
    return refs


def _names_hub_tasks(word: str) -> bool:
    """Whether ``[data] tasks`` entry ``word`` names hub tasks (a task of either family, or a family's word:
    ``r2med``, ``bright``, ``bright:long``) rather than a collection of ``dirs``."""
    return is_hub_task(word) or word.strip().lower() in set(aliases()) - {"all"}


# -- running ----------------------------------------------------------------------------------------------


@dataclass
class StepOutcome:
    step: Step
    tasks: int
    reused: int


def _settings(step: Step) -> dict[str, object]:
    """What ``--dry-run`` shows of a step: the values set in its spec (its options included), not its data/output."""
    spec = step.spec
    shown: dict[str, object] = {}
    for name in field_names(type(spec)):
        if name in ("data", "output", "runs", "systems", "retriever", "reranker", "name", "options"):
            continue
        value = getattr(spec, name)
        if value is not None and value != type(spec).model_fields[name].default:
            shown[name] = value
    options = getattr(spec, "options", None)
    if isinstance(options, Spec):
        shown.update({k: v for k, v in options.given().items() if k != "cache" or v is False})
    return shown


def plan_rows(exp: Experiment) -> list[list[str]]:
    """``--dry-run``: one row per step (order, job, system made, what it reads, its settings)."""
    rows = []
    names = [r.name for r in data_refs(exp)]
    for number, step in enumerate(exp.steps, start=1):
        tasks = step.spec.data.tasks if isinstance(step.spec, (EvaluateStep, ImportStep)) else "all"
        reads = ", ".join(step.needs) if step.needs else ", ".join(names if tasks == "all" else tasks)
        settings = " ".join(f"{k}={v}" for k, v in _settings(step).items())
        rows.append([str(number), step.kind, step.what, step.label, reads, settings])
    return rows


def _refs_of(step: EvaluateStep | ImportStep, refs: Sequence[TaskRef]) -> list[TaskRef]:
    """The experiment's tasks a step runs on (its ``tasks``, in r2med's spelling; all of them by default), each
    judged by the step's ``qrels`` file when it names one (one task)."""

    wanted = step.data.tasks
    keep = None if wanted == "all" or not isinstance(wanted, tuple) else task_filter(",".join(wanted))
    chosen = [r for r in refs if keep is None or r.name.lower() in keep]
    if isinstance(wanted, tuple) and isinstance(step, ImportStep):  # file i is the i-th task its tasks list
        order: dict[str, int] = {}
        for i, word in enumerate(wanted):
            for task in task_filter(word) or ():
                order.setdefault(task, i)
        chosen.sort(key=lambda r: order.get(r.name.lower(), len(wanted)))
    qrels = step.data.qrels
    if qrels is None:
        return chosen
    if len(chosen) != 1:
        raise R2MedError(
            f"qrels {qrels}: holds the judgments of one task, but the step runs on {len(chosen)}; name one with tasks"
        )
    return [replace(chosen[0], qrels=Path(os.path.abspath(qrels)))]


def run_experiment(
    exp: Experiment,
    overwrite: bool = False,
    on_step: Callable[[StepOutcome], None] | None = None,
    strict: bool = False,
) -> list[StepOutcome]:
    """Run every step in order through the evaluate / rerank / fuse / import jobs, writing ``exp.out/<system>/``;
    finished task folders of the same step are reused.  A rerank and a fusion read only the experiment's tasks.
    ``strict``: collections with repeated ids or judgments are refused (``r2med --strict``)."""

    check_output_dir(exp.out)
    readers = [plan(step.spec).query_builder for step in exp.steps if isinstance(step.spec, EvaluateStep)]
    refs = check_hub(data_refs(exp, strict), readers)  # every hub file found before any download
    output = Output(out=exp.out, measures=exp.report.measures, overwrite=overwrite)
    tasks = tuple(r.name for r in refs)
    outcomes = []
    for step in exp.steps:
        spec = step.spec
        if isinstance(spec, EvaluateStep):
            chosen = _refs_of(spec, refs)
            spec = spec.model_copy(update={"output": output, "name": step.label})
            results = run_tasks(spec, chosen)
        elif isinstance(spec, RerankStep):
            data = Data(tasks=tasks, revision=exp.revision, strict=strict)
            update = {"runs": (exp.out / step.needs[0],), "name": step.label, "data": data, "output": output}
            [done] = rerank_folder(spec.model_copy(update=update))
            results = done.results
        elif isinstance(spec, FuseStep):
            data = Data(tasks=tasks, revision=exp.revision, strict=strict)
            update = {"systems": tuple(exp.out / s for s in step.needs), "name": step.label, "data": data}
            results = fuse_folders(spec.model_copy(update={**update, "output": output})).results
        else:
            chosen = _refs_of(spec, refs)
            try:  # the file's key names the tasks, not the command line's flag
                results = import_files(spec.model_copy(update={"output": output}), chosen, flag="tasks").results
            except R2MedError as exc:
                where = f"{exp.source}: {step.where}" if exp.source is not None else step.where
                error = ExperimentError(f"{where}: {exc}")
                error.exit_code = exc.exit_code
                raise error from None
        outcome = StepOutcome(step, len(results), sum(1 for r in results if r.reused))
        outcomes.append(outcome)
        if on_step is not None:
            on_step(outcome)
    return outcomes


#: The HTML page's time stamp: two pages differing only there show the same results.
_GENERATED = r"\d{4}-\d\d-\d\d \d\d:\d\d UTC"


def write_if_changed(path: Path, text: str) -> bool:
    """Write ``text`` atomically unless the file already holds it, time stamp aside (a re-run rewrites
    nothing); True if written."""

    if path.is_file() and re.sub(_GENERATED, "", read_regular(path).decode("utf-8", "replace")) == re.sub(
        _GENERATED, "", text
    ):
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, text)
    return True


def write_reports(exp: Experiment) -> tuple[list[Path], list[Leaderboard]]:
    """The experiment's report: ``out/report.md`` (every measure), and the LaTeX / HTML files of ``[report]``; a
    file already holding the same report is left alone.  It lists every system the experiment made and every
    system its steps read from ``out`` (a fusion's inputs).  With ``[report] data_dir``, the HTML page carries
    the query and document texts.  The written paths, and the leaderboards (one per measure)."""

    systems = load_report([exp.out / label for label in exp.read_systems])
    spec = exp.report
    tables = [build_leaderboard(systems, m, baseline=spec.baseline) for m in spec.measures]
    boards = Boards(tables)
    written = []
    for path, fmt in ((spec.markdown or exp.out / "report.md", "markdown"), (spec.latex, "latex")):
        if path is not None and write_if_changed(path, boards.render(fmt)):
            written.append(path)
    if spec.html is not None:
        texts = task_texts(tables[0].tasks, spec.data_dir) if spec.data_dir is not None else {}
        page = render_html(systems, tables[0].measure, texts, board=tables[0], title=spec.title)
        if write_if_changed(spec.html, page):
            written.append(spec.html)
    return written, tables
