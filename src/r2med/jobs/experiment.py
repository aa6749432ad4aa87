"""``r2med run EXPERIMENT.toml``: a declared grid of retrievers, rerankers and fusions over tasks, run as one job.

The file (read with :mod:`tomllib`) declares ``out``, ``[data]``, ``[[retrievers]]``, ``[[rerank]]``,
``[[fusion]]`` and ``[report]`` (docs/experiments.md).  :func:`load_experiment` checks all of it before any
work -- every key against what the job it feeds accepts (the keyword parameters of
:func:`r2med.jobs.evaluate.plan` / :func:`~r2med.jobs.evaluate.run_tasks`, a retriever's
:class:`~r2med.retrieval.registry.RetrieverMeta` options, :func:`r2med.jobs.rerank.rerank_folder`, the
reranker's own constructor, :func:`r2med.jobs.fuse.fuse_folders`), so a bad file is one line naming the key.
:func:`run_experiment` runs the steps in dependency order through those same jobs: finished task folders
are reused (a second run recomputes nothing), and a killed run resumes from the folders it finished.

Relative paths in the file (``out``, ``dirs``, ``expansion_file``, ``expansion_dir``, ``html``, ``latex``,
and ``model`` / ``reranker`` values naming an existing folder or starting with ``.``) are read against
the folder of the file, not the current one.
"""

from __future__ import annotations

import inspect
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ..errors import R2MedError
from ..evaluation.metrics import HEADLINE

if TYPE_CHECKING:
    from ..report.leaderboard import Leaderboard

log = logging.getLogger(__name__)

StepKind = Literal["evaluate", "rerank", "fuse"]

#: The file's tables, as written in it (for error messages).
TABLES: dict[StepKind, str] = {"evaluate": "[[retrievers]]", "rerank": "[[rerank]]", "fuse": "[[fusion]]"}
TOP_LEVEL = ("out", "data", "retrievers", "rerank", "fusion", "report")
DATA_KEYS = ("tasks", "dirs", "revision")
REPORT_KEYS = ("measures", "html", "latex", "markdown", "baseline", "title")
#: Keys of a step that name the result folder (the jobs' ``name``: a retriever's ``name`` is the retriever).
LABEL = "label"
#: Option names the command line uses, as the jobs' parameters (``top_k`` -> evaluate's ``k``).
ALIASES: dict[StepKind, dict[str, str]] = {"evaluate": {"top_k": "k"}, "rerank": {}, "fuse": {"top_k": "depth"}}
#: Job parameters the experiment sets itself (never from a step's table).
_SET_BY_EXPERIMENT = {
    "retriever",
    "options",
    "data_dir",
    "revision",
    "name",
    "job",
    "tasks",
    "out",
    "measures",
    "overwrite",
    "runs",
    "reranker",
}
#: Keys whose values are paths (read against the file's folder).
PATH_KEYS = {"expansion_file", "expansion_dir"}
#: Keys whose values may be paths or hub ids (a path when it exists there or starts with ``.``).
MAYBE_PATH_KEYS = {"model", "reranker", "base", "lora", "tokenizer"}


def job_parameters(*functions: Callable[..., Any]) -> list[str]:
    """The keyword parameters of ``functions`` a step's table may set (those the experiment sets left out)."""
    names: list[str] = []
    for function in functions:
        for parameter in inspect.signature(function).parameters.values():
            if parameter.kind in (parameter.VAR_KEYWORD, parameter.VAR_POSITIONAL):
                continue
            if parameter.name not in _SET_BY_EXPERIMENT and parameter.name not in names:
                names.append(parameter.name)
    return names


@dataclass
class Step:
    """One job of the experiment: an ``evaluate``, ``rerank`` or ``fuse`` making the system ``label``."""

    kind: StepKind
    index: int  # 1-based, within its table
    label: str
    needs: tuple[str, ...] = ()  # systems it reads
    what: str = ""  # the retriever, reranker or fusion method
    job: dict[str, Any] = field(default_factory=dict)  # keyword arguments of its job
    options: dict[str, Any] = field(default_factory=dict)  # the retriever's or reranker's own options

    @property
    def where(self) -> str:
        return f"{TABLES[self.kind]} {self.index}"


@dataclass
class ReportSpec:
    measures: tuple[str, ...] = (HEADLINE,)
    html: Path | None = None
    latex: Path | None = None
    markdown: Path | None = None
    baseline: str | None = None
    title: str = "R2MED results"


@dataclass
class Experiment:
    source: Path
    out: Path
    tasks: str | list[str] = "all"
    dirs: list[Path] = field(default_factory=list)
    revision: str | None = None
    steps: list[Step] = field(default_factory=list)
    report: ReportSpec = field(default_factory=ReportSpec)

    @property
    def systems(self) -> list[str]:
        return [s.label for s in self.steps]


class ExperimentError(R2MedError):
    """An experiment file that cannot run: ``exp.toml: [[retrievers]] 2: unknown option 'k3'``."""


def load_experiment(path: str | os.PathLike[str]) -> Experiment:
    """Read and check an experiment file; every error is one line naming the file and the key."""
    import tomllib

    source = Path(path)
    shown = str(path)
    if not source.is_file():
        raise ExperimentError(f"{shown}: no such file")
    try:
        with open(source, "rb") as handle:
            raw = tomllib.load(handle)
    except tomllib.TOMLDecodeError as exc:
        raise ExperimentError(f"{shown}: not valid TOML ({exc})") from None
    return Checker(shown, source.resolve().parent).experiment(raw, source)


class Checker:
    """Turns the parsed file into an :class:`Experiment`, failing on the first bad key."""

    def __init__(self, shown: str, base: Path) -> None:
        self.shown = shown
        self.base = base

    def fail(self, where: str, message: str) -> ExperimentError:
        return ExperimentError(f"{self.shown}: {where + ': ' if where else ''}{message}")

    def path(self, value: Any, where: str, key: str) -> Path:
        if not isinstance(value, str) or not value:
            raise self.fail(where, f"{key}: expected a path (a string), got {value!r}")
        p = Path(value).expanduser()
        return p if p.is_absolute() else self.base / p

    def maybe_path(self, value: Any) -> Any:
        """A model or reranker named by a relative folder, read against the file's folder; else as written."""
        if not isinstance(value, str) or Path(value).expanduser().is_absolute():
            return value
        candidate = self.base / value
        return str(candidate) if value.startswith(".") or candidate.exists() else value

    def unknown(self, where: str, keys: Sequence[str], allowed: Sequence[str], extra: str = "") -> None:
        bad = [k for k in keys if k not in allowed]
        if bad:
            from difflib import get_close_matches

            close = get_close_matches(bad[0], list(allowed), n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            raise self.fail(where, f"unknown option '{bad[0]}'{hint}; it takes: {', '.join(allowed)}{extra}")

    def table(self, raw: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
        value = raw.get(key, [])
        if isinstance(value, Mapping):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, Mapping) for v in value):
            raise self.fail("", f"{key}: expected [[{key}]] tables")
        return value

    def names(self, value: Any, where: str, key: str) -> list[str]:
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not value or not all(isinstance(v, str) and v for v in value):
            raise self.fail(where, f"{key}: expected a system name or a list of them, got {value!r}")
        return list(value)

    # -- the file ------------------------------------------------------------------------------------
    def experiment(self, raw: Mapping[str, Any], source: Path) -> Experiment:
        self.unknown("", list(raw), TOP_LEVEL)
        if "out" not in raw:
            raise self.fail("", "missing key 'out' (the results root, e.g. out = \"results\")")
        exp = Experiment(source, self.path(raw["out"], "", "out"))
        self.data(raw.get("data", {}), exp)
        for i, entry in enumerate(self.table(raw, "retrievers"), start=1):
            exp.steps.append(self.retriever(entry, i, exp))
        for i, entry in enumerate(self.table(raw, "rerank"), start=1):
            exp.steps.extend(self.rerank(entry, i, exp))
        for i, entry in enumerate(self.table(raw, "fusion"), start=1):
            exp.steps.append(self.fusion(entry, i, exp))
        if not exp.steps:
            raise self.fail("", "no [[retrievers]], [[rerank]] or [[fusion]] step to run")
        seen: dict[str, Step] = {}
        for step in exp.steps:
            if step.label in seen:
                raise self.fail(
                    step.where, f"makes system '{step.label}', as {seen[step.label].where} does; give one a label"
                )
            seen[step.label] = step
        for step in exp.steps:
            for needed in step.needs:
                if needed not in seen and not (exp.out / needed).is_dir():
                    raise self.fail(
                        step.where,
                        f"'{needed}' is no system of this experiment "
                        f"(it makes: {', '.join(seen)}) nor a folder in {exp.out}",
                    )
        exp.steps = order_steps(exp.steps, self)
        exp.report = self.report_spec(raw.get("report", {}), exp)
        return exp

    def data(self, raw: Any, exp: Experiment) -> None:
        if not isinstance(raw, Mapping):
            raise self.fail("", "data: expected a [data] table")
        self.unknown("[data]", list(raw), DATA_KEYS)
        tasks = raw.get("tasks", "all")
        if isinstance(tasks, list) and all(isinstance(t, str) for t in tasks):
            exp.tasks = list(tasks)
        elif isinstance(tasks, str):
            exp.tasks = tasks
        else:
            raise self.fail("[data]", f'tasks: expected a list of task names or "all", got {tasks!r}')
        dirs = raw.get("dirs", [])
        exp.dirs = [self.path(d, "[data]", "dirs") for d in ([dirs] if isinstance(dirs, str) else dirs)]
        exp.revision = raw.get("revision")
        try:
            data_refs(exp)
        except R2MedError as exc:
            raise self.fail("[data]", str(exc)) from None

    def retriever(self, entry: Mapping[str, Any], index: int, exp: Experiment) -> Step:
        from ..retrieval.registry import retriever_meta
        from .evaluate import plan, run_tasks

        where = f"{TABLES['evaluate']} {index}"
        name = entry.get("name")
        if not isinstance(name, str) or not name:
            raise self.fail(where, "missing key 'name' (the retriever, as `r2med evaluate -r`)")
        try:
            meta = retriever_meta(name)
        except R2MedError as exc:
            raise self.fail(where, f"name: {exc}") from None
        job_keys = job_parameters(plan, run_tasks)
        aliases = ALIASES["evaluate"]
        own = [p for p in meta.parameters if p not in job_keys]
        allowed = ["name", LABEL, *aliases, *(k for k in job_keys if k not in aliases.values()), *own]
        self.unknown(where, list(entry), allowed, extra=f" (options of {name}: {', '.join(own) or 'none'})")
        job: dict[str, Any] = {}
        options: dict[str, Any] = {}
        for key, value in entry.items():
            if key in ("name", LABEL):
                continue
            key = aliases.get(key, key)
            if key in PATH_KEYS:
                value = str(self.path(value, where, key))
            elif key in MAYBE_PATH_KEYS:
                value = self.maybe_path(value)
            (options if key in own else job)[key] = value
        label = entry.get(LABEL)
        try:
            meta.check_options(options)
            made = plan(
                name,
                options,
                cache=bool(job.pop("cache", True)),
                expansion=job.pop("expansion", None),
                expansion_file=job.pop("expansion_file", None),
                expansion_dir=job.pop("expansion_dir", None),
                data_dir=exp.dirs[0] if len(exp.dirs) == 1 else None,
                revision=exp.revision,
                name=label if isinstance(label, str) else None,
            )
        except R2MedError as exc:
            raise self.fail(where, str(exc)) from None
        self.check_job_values(where, job, run_tasks)
        return Step("evaluate", index, made.name, (), name, job={"plan": made, **job}, options=options)

    def rerank(self, entry: Mapping[str, Any], index: int, exp: Experiment) -> list[Step]:
        from ..reranking.base import make_reranker, reranker_meta
        from ..results.published import published_depth
        from .rerank import default_name, rerank_folder, result_name

        where = f"{TABLES['rerank']} {index}"
        reranker = entry.get("reranker")
        if not isinstance(reranker, str) or not reranker:
            raise self.fail(where, "missing key 'reranker' (as `r2med rerank --reranker`)")
        reranker = self.maybe_path(reranker)
        if "runs" not in entry:
            raise self.fail(where, "missing key 'runs' (the systems to rerank)")
        runs = self.names(entry["runs"], where, "runs")
        try:
            meta = reranker_meta(reranker)
        except R2MedError as exc:
            raise self.fail(where, f"reranker: {exc}") from None
        job_keys = job_parameters(rerank_folder)
        job = {k: v for k, v in entry.items() if k in job_keys}
        options = {
            k: self.maybe_path(v)
            for k, v in entry.items()
            if k not in job_keys and k not in ("reranker", "runs", LABEL)
        }
        try:  # rerankers load their model lazily: building one checks its options and loads nothing
            make_reranker(reranker, **options)
        except TypeError as exc:
            raise self.fail(
                where,
                f"reranker {reranker!r} does not take one of {', '.join(options)} ({exc}); "
                f"the step takes: reranker, runs, {LABEL}, {', '.join(job_keys)} and the "
                "reranker's own options",
            ) from None
        except R2MedError as exc:
            raise self.fail(where, str(exc)) from None
        self.check_job_values(where, job, rerank_folder)
        top_k = job.get("top_k")
        job["top_k"] = top_k if top_k is not None else published_depth(meta.name)
        label = entry.get(LABEL)
        if label is not None and len(runs) > 1:
            raise self.fail(where, f"{LABEL} names one result, but runs lists {len(runs)} systems")
        steps = []
        for run in runs:
            try:
                made = result_name(label, default_name(run, reranker, options.get("model"), job["top_k"]))
            except R2MedError as exc:
                raise self.fail(where, str(exc)) from None
            steps.append(Step("rerank", index, made, (run,), reranker, job=dict(job), options=options))
        return steps

    def fusion(self, entry: Mapping[str, Any], index: int, exp: Experiment) -> Step:
        from ..runs.fusion import check_fusion
        from .fuse import fuse_folders
        from .rerank import folder_name, result_name

        where = f"{TABLES['fuse']} {index}"
        job_keys = job_parameters(fuse_folders)
        aliases = ALIASES["fuse"]
        allowed = ["systems", LABEL, *aliases, *(k for k in job_keys if k not in aliases.values())]
        self.unknown(where, list(entry), allowed)
        if "systems" not in entry:
            raise self.fail(where, "missing key 'systems' (the systems to fuse)")
        systems = self.names(entry["systems"], where, "systems")
        job = {aliases.get(k, k): v for k, v in entry.items() if k not in ("systems", LABEL)}
        method = job.get("method", "rrf")
        try:
            check_fusion(
                len(systems),
                str(method),
                k=job.get("k", 60),
                norm=job.get("norm", "minmax"),
                weights=job.get("weights"),
            )
            label = result_name(entry.get(LABEL), f"{method}-" + "+".join(folder_name(s) for s in systems))
        except R2MedError as exc:
            raise self.fail(where, str(exc)) from None
        self.check_job_values(where, job, fuse_folders)
        return Step("fuse", index, label, tuple(systems), str(method), job=job)

    def check_job_values(self, where: str, job: dict[str, Any], function: Callable[..., Any]) -> None:
        """A value of the wrong type for a job parameter with a plain default (``top_k = "ten"``) is an error;
        a parameter typed ``float`` gets a float, given or not (``k = 60`` is recorded as the command line
        records it, 60.0, so the folders of either are reused by the other)."""
        import typing

        signature = inspect.signature(function)
        hints = typing.get_type_hints(function)
        for key, parameter in signature.parameters.items():
            if hints.get(key) is float and isinstance(parameter.default, int) and key not in _SET_BY_EXPERIMENT:
                value = job.get(key, parameter.default)
                if isinstance(value, int) and not isinstance(value, bool):
                    job[key] = float(value)
        for key, value in job.items():
            expected = set(typing.get_args(hints.get(key))) or {hints.get(key)}
            expected.discard(type(None))
            if (
                expected
                and expected <= {int, float}
                and (isinstance(value, bool) or not isinstance(value, (int, float)))
            ):
                raise self.fail(where, f"{key}: expected a number, got {value!r}")
            if expected == {bool} and not isinstance(value, bool):
                raise self.fail(where, f"{key}: expected true or false, got {value!r}")
            if expected == {str} and not isinstance(value, str):
                raise self.fail(where, f"{key}: expected a string, got {value!r}")

    def report_spec(self, raw: Any, exp: Experiment) -> ReportSpec:
        from ..evaluation.metrics import canonical

        if not isinstance(raw, Mapping):
            raise self.fail("", "report: expected a [report] table")
        self.unknown("[report]", list(raw), REPORT_KEYS)
        spec = ReportSpec()
        measures = raw.get("measures", ["nDCG@10"])
        measures = [measures] if isinstance(measures, str) else measures
        try:
            spec.measures = tuple(dict.fromkeys(canonical(str(m)) for m in measures))
        except R2MedError as exc:
            raise self.fail("[report]", f"measures: {exc}") from None
        from ..infra.containment import check_output_dir, check_output_file

        try:  # destinations checked before any work, as every command checks its --out
            check_output_dir(exp.out, "out")
        except R2MedError as exc:
            raise self.fail("", str(exc)) from None
        for key in ("html", "latex", "markdown"):
            if key in raw:
                try:
                    setattr(spec, key, check_output_file(self.path(raw[key], "[report]", key), key))
                except R2MedError as exc:
                    raise self.fail("[report]", str(exc)) from None
        baseline = raw.get("baseline")
        if baseline is not None and baseline not in exp.systems:
            raise self.fail(
                "[report]",
                f"baseline '{baseline}' is no system of this experiment (it makes: {', '.join(exp.systems)})",
            )
        spec.baseline = baseline
        spec.title = str(raw.get("title", spec.title))
        return spec


def order_steps(steps: Sequence[Step], checker: Checker) -> list[Step]:
    """``steps`` in dependency order (a step after those making the systems it reads), else file order."""
    by_label = {s.label: s for s in steps}
    done: list[Step] = []
    visiting: set[str] = set()

    def visit(step: Step) -> None:
        if step in done:
            return
        if step.label in visiting:
            raise checker.fail(step.where, f"depends on itself (through '{step.label}')")
        visiting.add(step.label)
        for needed in step.needs:
            if needed in by_label:
                visit(by_label[needed])
        visiting.discard(step.label)
        done.append(step)

    for step in steps:
        visit(step)
    return done


def data_refs(exp: Experiment, strict: bool = False) -> list[Any]:
    """The tasks of ``[data]`` (:func:`r2med.data.resolve` per folder of ``dirs``; ``demo``: the built-in demo);
    ``strict``: their collections refuse repeated ids and judgments."""
    from ..data import TaskRef, resolve

    tasks = exp.tasks
    if not exp.dirs:
        if tasks == "demo" or tasks == ["demo"]:
            return [TaskRef.the_demo(strict=strict)]
        return resolve(tasks, None, exp.revision, strict=strict)
    refs = []
    for folder in exp.dirs:
        if not folder.is_dir():
            raise R2MedError(f"dirs: {folder}: no such folder")
        refs.extend(resolve(tasks if isinstance(tasks, str) else ",".join(tasks), folder, exp.revision, strict=strict))
    return refs


# -- running ----------------------------------------------------------------------------------------------


@dataclass
class StepOutcome:
    step: Step
    tasks: int
    reused: int


def plan_rows(exp: Experiment) -> list[list[str]]:
    """``--dry-run``: one row per step (order, job, system made, what it reads, its options)."""
    rows = []
    for number, step in enumerate(exp.steps, start=1):
        settings = {**{k: v for k, v in step.job.items() if k != "plan"}, **step.options}
        reads = ", ".join(step.needs) if step.needs else ", ".join(r.name for r in data_refs(exp))
        rows.append(
            [str(number), step.kind, step.what, step.label, reads, " ".join(f"{k}={v}" for k, v in settings.items())]
        )
    return rows


def run_experiment(
    exp: Experiment,
    overwrite: bool = False,
    on_step: Callable[[StepOutcome], None] | None = None,
    strict: bool = False,
) -> list[StepOutcome]:
    """Run every step in order through the evaluate / rerank / fuse jobs, writing ``exp.out/<system>/``;
    finished task folders of the same configuration are reused.  ``strict``: collections with repeated ids
    or judgments are refused (``r2med --strict``)."""
    from ..data import check_hub
    from ..infra.containment import check_output_dir
    from .evaluate import run_tasks
    from .fuse import fuse_folders
    from .rerank import rerank_folder

    check_output_dir(exp.out)
    readers = [step.job["plan"].query_builder for step in exp.steps if step.kind == "evaluate"]
    refs = check_hub(data_refs(exp, strict), readers)  # every hub file found before any download
    measures = exp.report.measures
    outcomes = []
    for step in exp.steps:
        if step.kind == "evaluate":
            job = dict(step.job)
            made = job.pop("plan")
            results = run_tasks(made, refs, out=exp.out / step.label, measures=measures, overwrite=overwrite, **job)
        elif step.kind == "rerank":
            [done] = rerank_folder(
                exp.out / step.needs[0],
                step.what,
                step.options,
                out=exp.out,
                name=step.label,
                revision=exp.revision,
                measures=measures,
                overwrite=overwrite,
                strict=strict,
                **step.job,
            )
            results = done.results
        else:
            results = fuse_folders(
                [exp.out / s for s in step.needs],
                out=exp.out,
                name=step.label,
                revision=exp.revision,
                measures=measures,
                overwrite=overwrite,
                strict=strict,
                **step.job,
            ).results
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
    import re

    from ..infra.home import write_text_atomic

    if path.is_file() and re.sub(_GENERATED, "", path.read_text(encoding="utf-8")) == re.sub(_GENERATED, "", text):
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, text)
    return True


def write_reports(exp: Experiment) -> tuple[list[Path], list[Leaderboard]]:
    """The experiment's report: ``out/report.md`` (every measure), and the LaTeX / HTML files of
    ``[report]``; a file already holding the same report is left alone.  The written paths, and the
    leaderboards (one per measure)."""
    from ..report import build_leaderboard
    from ..report.multi import Boards
    from .report import load_report

    systems = load_report([exp.out / label for label in exp.systems])
    spec = exp.report
    tables = [build_leaderboard(systems, m, baseline=spec.baseline) for m in spec.measures]
    boards = Boards(tables)
    written = []
    for path, fmt in ((spec.markdown or exp.out / "report.md", "markdown"), (spec.latex, "latex")):
        if path is not None and write_if_changed(path, boards.render(fmt)):
            written.append(path)
    if spec.html is not None:
        from ..report.html import render_html

        page = render_html(systems, tables[0].measure, {}, board=tables[0], title=spec.title)
        if write_if_changed(spec.html, page):
            written.append(spec.html)
    return written, tables
