"""The leaderboard as a type: systems x tasks for one measure, beside the published figures (no rendering here).

Rows are systems, columns the tasks (R2MED's 8 in the paper's order, then any
others) and their macro average, values x100 like the paper.  A system that
matches a published configuration (see :mod:`r2med.results.published`) gets a
``published`` row and a ``delta`` row; a delta beyond the tolerance is flagged.
With a baseline, each cell is marked when it differs significantly from the
baseline (paired randomisation test, Holm-Bonferroni across tasks).

**One stated set.**  The ``Average`` column is the macro average over *all* the table's tasks (its
columns), and only that: a system without a value for one of them has no Average (:data:`GAP`, never
ranked or bolded), its gaps are gaps, and :meth:`Leaderboard.left_out` says in words what the table
leaves out (the commands print it on stderr).  A significance mark on the Average is shown only when
the comparison behind it pooled the queries of all those tasks.  Every renderer reads its cells from
:meth:`Leaderboard.grid` / :meth:`Leaderboard.cell_text`, so the rule holds in each of them.

**Marks.**  Besides the significance mark, a cell can carry marks of its own (:attr:`BoardCell.marks`),
each explained once by a legend line (:attr:`Leaderboard.marks`): the hook for annotations.  Ties use it
(:func:`r2med.report.ties.mark_ties`): a cell whose value the order of tied documents decides carries ``◇``
and its range (:attr:`BoardCell.ties`); a cell without a value never does.  So do judgments files (``§``,
:mod:`.judgments`) and models trained on data rebuilt from the task's documents (``‡``, :mod:`.contamination`).

The renderers are apart from this type: :mod:`.leaderboard` (terminal, Markdown, CSV, JSON),
:mod:`.latex`, :mod:`.html` and :mod:`.plot`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from ..data.benchmarks import benchmark, benchmark_of, benchmarks, protocol_of_task
from ..errors import OptionError, R2MedError
from ..infra.json_types import JsonObject, JsonValue
from ..measures import HEADLINE, Measure
from ..results.folders import System, task_order
from ..results.grading import data_problem, nonpaper_precision, require_labels
from ..results.published import PublishedKey, tolerance_of
from ..retrieval.registry import RETRIEVERS
from ..runs.record import RecordedConfig
from .claims import mark_claims
from .compare import compare_systems
from .contamination import mark_contamination
from .format import FLAG, GAP, NONPAPER_PRECISION_EXTRA, SIGNIFICANT
from .judgments import mark_judgments
from .layout import short_task
from .mteb import mark_mteb
from .sources import note_beside
from .ties import mark_ties, published_place

AVERAGE = "Average"
#: The benchmark a local collection (``--data-dir``) belongs to, as a per-benchmark Average names it.
LOCAL = "local"


def graded_tolerance(key: PublishedKey, other_precision: bool) -> float | None:
    """The |delta| (x100) a run of ``key`` may show to its published figures: its tolerance class's, widened by
    :data:`NONPAPER_PRECISION_EXTRA` when it ran in another precision than the paper's code; None: ungraded.
    The one rule for every table that prints a delta (``report``'s and the one a job prints when it ends)."""
    tol = tolerance_of(key)
    return tol + NONPAPER_PRECISION_EXTRA if tol is not None and other_precision else tol


def beyond(delta: float | None, tolerance: float | None) -> bool:
    """Whether ``delta`` lies outside ``tolerance`` (a delta or tolerance of None is not graded)."""
    return delta is not None and tolerance is not None and abs(delta) > tolerance + 1e-9


@dataclass
class BoardCell:
    """One system x task (or average) entry of the leaderboard, x100."""

    value: float | None = None  # x100
    published: float | None = None
    p_holm: float | None = None
    significant: bool = False
    #: why the published figure is not shown though the system matched one (its data is not the hub task's)
    ungraded: str | None = None
    #: marks shown after the value in every renderer, each explained by a line of :attr:`Leaderboard.marks`
    marks: list[str] = field(default_factory=list)
    #: (worst, best) x100 when the order of tied documents decides the value (:func:`r2med.report.ties.mark_ties`)
    ties: tuple[float, float] | None = None

    @property
    def delta(self) -> float | None:
        if self.value is None or self.published is None:
            return None
        return self.value - self.published


@dataclass
class Row:
    system: str
    published: PublishedKey | None
    tolerance: float | None
    cells: dict[str, BoardCell]
    #: the table's tasks this row has no value for: it shows no Average (an Average is over every column)
    missing: list[str] = field(default_factory=list)
    published_average_note: str = ""
    reference: bool = False  # a published configuration shown for comparison, not a run
    precision_note: str = ""  # e.g. "bf16 (paper: fp32)": the tolerance was widened for it
    #: why it shows no published figure though it names a published row (the fields of its spec that differ)
    ungraded: str | None = None
    #: mteb's figures of its model on its data (task -> x100; :mod:`r2med.report.mteb`), and that model
    mteb: dict[str, float] = field(default_factory=dict)
    mteb_label: str = ""

    @property
    def partial_average(self) -> bool:
        """Whether the row lacks some of the table's tasks (and so shows no Average)."""
        return bool(self.missing)

    def within(self, task: str) -> bool | None:
        d = self.cells[task].delta
        if d is None or self.tolerance is None:
            return None
        return not beyond(d, self.tolerance)


@dataclass
class Leaderboard:
    measure: Measure
    tasks: list[str]
    rows: list[Row]
    baseline: str | None = None
    alpha: float = 0.05
    notes: list[str] = field(default_factory=list)
    #: mark -> the legend line explaining it, for the marks cells carry (:attr:`BoardCell.marks`)
    marks: dict[str, str] = field(default_factory=dict)
    #: (column, its tasks) of each benchmark's own Average, when the table holds tasks of several
    #: (:func:`benchmark_groups`: ``Average R2MED``, ``Average BRIGHT``, ``Average local``); else none
    groups: list[tuple[str, list[str]]] = field(default_factory=list)

    @property
    def columns(self) -> list[str]:
        """The tasks, each benchmark's Average (when the table holds several), then the Average of all."""
        return [*self.tasks, *(col for col, _ in self.groups), AVERAGE]

    def average_tasks(self, col: str) -> list[str]:
        """The tasks an average column is over: a benchmark's own, or all of the table's (``Average``)."""
        return dict(self.groups).get(col, self.tasks)

    @property
    def systems(self) -> list[Row]:
        """The rows of this report's systems (not the ``paper:`` reference rows): what is ranked."""
        return [row for row in self.rows if not row.reference]

    def cell_text(self, row: Row, col: str) -> str:
        """A cell as every renderer shows it: the value with two decimals (:data:`GAP` when it has none), then
        the significance mark and the cell's own marks."""
        c = row.cells[col]
        text = GAP if c.value is None else f"{c.value:.2f}"
        if c.significant and c.value is not None:
            text += SIGNIFICANT
        return text + "".join(c.marks)

    def common_tasks(self) -> list[str]:
        """The tasks every system of the table has a value for."""
        return [t for t in self.tasks if all(row.cells[t].value is not None for row in self.systems)]

    def left_out(self) -> list[str]:
        """What the table leaves out, one line each (the commands print them on stderr): each row without an
        Average and the tasks it lacks, and the tasks every system has (``--tasks`` for an Average of each)."""
        label = self.measure.label
        n = len(self.tasks)
        out = [
            f"{row.system}: no {label} for {', '.join(row.missing)}; no {AVERAGE} shown for it "
            f"(an {AVERAGE} is over all {n} tasks of the table){self._own_averages(row)}"
            for row in self.rows
            if row.missing
        ]
        if out:
            common = self.common_tasks()
            if common:
                out.append(f"--tasks {','.join(common)}: the tasks every system has, for an {AVERAGE} of each")
        return out

    def _own_averages(self, row: Row) -> str:
        """``; Average BRIGHT shown`` for the benchmarks' averages a row without the overall one has."""
        shown = [col for col, _ in self.groups if row.cells[col].value is not None]
        return f"; {', '.join(shown)} shown" if shown else ""

    # -- a grid of strings shared by the text renderers -----------------------------------------
    def grid(self, flag: str = FLAG, compact: bool = False) -> tuple[list[str], list[tuple[str, list[str]]]]:
        """Header and lines (kind, cells) as text; ``compact``: short task names and row labels."""
        header = ["system", *(short_task(c) if compact else c for c in self.columns)]
        lines: list[tuple[str, list[str]]] = []
        for row in self.rows:
            vals = [self.cell_text(row, col) for col in self.columns]
            lines.append(("reference" if row.reference else "system", [row.system, *vals]))
            if row.published is not None and any(row.cells[c].published is not None for c in self.columns):
                pub = ["-" if row.cells[c].published is None else f"{row.cells[c].published:.2f}" for c in self.columns]
                lines.append(("published", [f"  {'pub.' if compact else 'published'} {row.published.label}", *pub]))
                deltas = []
                for col in self.columns:
                    d = row.cells[col].delta
                    if d is None:
                        deltas.append("-")
                    else:
                        deltas.append(f"{d:+.2f}" + (f" {flag}" if row.within(col) is False else ""))
                extra = f", {row.precision_note}" if row.precision_note and not compact else ""
                band = (
                    "ungraded"
                    if row.tolerance is None
                    else f"±{row.tolerance:g}"
                    if compact
                    else f"tol ±{row.tolerance:g}"
                )
                label = f"  delta {band}" if compact else f"  delta ({band}{extra})"
                lines.append(("delta", [label, *deltas]))
            if row.mteb:
                vals = ["-" if c not in row.mteb else f"{row.mteb[c]:.2f}" for c in self.columns]
                lines.append(("mteb", [f"  mteb {row.mteb_label}", *vals]))
        return header, lines

    def legend(self) -> list[str]:
        n = len(self.tasks)
        over = "its one task" if n == 1 else f"all {n} tasks of the columns"
        out = [
            f"{self.measure.label} x100; {AVERAGE} = macro average over {over} "
            "(each task counts once; compare's 'all queries (pooled)' line averages queries instead)."
        ]
        if self.groups:
            out.append(
                f"{', '.join(col for col, _ in self.groups)}: each benchmark's own macro average over its tasks in "
                f"the columns (a system without every one of them has none); {AVERAGE}: over all of them."
            )
        if any(r.reference for r in self.rows):
            out.append("paper: rows are published figures (no run), for comparison.")
        if any(r.missing for r in self.rows):
            out.append(f"{GAP}: no result; a system without every task has no {AVERAGE} (never ranked).")
        shown = [r for r in self.rows if any(r.cells[c].published is not None for c in self.columns if c in r.cells)]
        if shown:
            source = next((s for r in shown if r.published is not None and (s := r.published.tolerance_source)), "")
            out.append(f"{FLAG} delta beyond tolerance{source}.")
        if any(r.published is not None and r.tolerance is None for r in self.rows):
            out.append(
                "ungraded: a configuration whose settings r2med assumed (none published); the delta "
                "measures the assumption."
            )
        if any(r.precision_note for r in self.rows if r.published is not None):
            out.append(
                f"tolerance widened by {NONPAPER_PRECISION_EXTRA:g} for systems run in another precision "
                "than the paper's code (--dtype)."
            )
        out += list(
            dict.fromkeys(
                str(r.published.legend(self.measure))
                for r in self.rows
                if r.published is not None and _shows_legend(r, self.columns, self.measure)
            )
        )
        out += [f"no published figure for {r.system}: {r.ungraded}." for r in self.rows if r.ungraded]
        out += [
            f"no published figure for {r.system}: {r.cells[c].ungraded}."
            for r in self.rows
            for c in self.columns
            if r.cells[c].ungraded
        ]
        notes = sorted({r.published_average_note for r in self.rows if r.published_average_note})
        out += [f"{AVERAGE} delta: {note}." for note in notes]
        if self.baseline:
            out.append(
                f"{SIGNIFICANT} differs from {self.baseline} (paired randomisation test, Holm-Bonferroni "
                f"across tasks, alpha {self.alpha:g}; {AVERAGE}: all queries pooled)."
            )
        used = {m for r in self.rows for c in r.cells.values() for m in c.marks}
        out += [line for mark, line in self.marks.items() if mark in used]
        return out + self.notes

    def records(self) -> list[JsonObject]:
        """Long form: one record per system x column."""
        recs: list[JsonObject] = []
        for row in self.rows:
            for col in self.columns:
                c = row.cells[col]
                recs.append(
                    {
                        "system": row.system,
                        "reference": row.reference,
                        "task": col,
                        "measure": self.measure.trec,
                        "value": _round(c.value),
                        "published": c.published,
                        "delta": _round(c.delta),
                        "tolerance": row.tolerance if c.published is not None else None,
                        "within_tolerance": row.within(col),
                        "published_config": row.published.label if row.published and c.published is not None else None,
                        "p_holm": c.p_holm,
                        "significant": c.significant if self.baseline else None,
                        "ungraded": c.ungraded,
                    }
                )
        return recs

    def to_dict(self) -> JsonObject:
        systems: list[JsonValue] = []
        for row in self.rows:
            key = row.published
            systems.append(
                {
                    "name": row.system,
                    "published": None
                    if key is None
                    else {
                        "retriever": key.retriever,
                        "expansion": key.expansion,
                        "llm": key.llm,
                        "label": key.label,
                        "setting": key.setting(),
                        "source": key.source(),
                    },
                    "ungraded": row.ungraded,
                    "tolerance": row.tolerance,
                    "precision_note": row.precision_note or None,
                    "missing_tasks": list(row.missing),
                    "reference": row.reference,
                    "cells": {
                        col: {
                            "value": _round(row.cells[col].value),
                            "published": row.cells[col].published,
                            "delta": _round(row.cells[col].delta),
                            "within_tolerance": row.within(col),
                            "p_holm": row.cells[col].p_holm,
                            "significant": row.cells[col].significant,
                            "ungraded": row.cells[col].ungraded,
                            "marks": list(row.cells[col].marks),
                            "ties": _range(row.cells[col].ties, row.cells[col].published),
                            "mteb": row.mteb.get(col),
                        }
                        for col in self.columns
                    },
                }
            )
        return {
            "measure": self.measure.trec,
            "scale": 100,
            "tasks": list(self.tasks),
            "baseline": self.baseline,
            "alpha": self.alpha,
            "systems": systems,
            "legend": list(self.legend()),
        }


def _round(v: float | None) -> float | None:
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else round(v, 6)


def _range(ties: tuple[float, float] | None, published: float | None = None) -> JsonObject | None:
    """A cell's tie range as JSON; with a published figure, where it lies in it (``published_place``: 0 at the
    worst order's value, 1 at the best's; outside 0..1: no order gives it)."""
    if ties is None:
        return None
    out: JsonObject = {"worst": _round(ties[0]), "best": _round(ties[1])}
    if published is not None:
        out["published_place"] = _round(published_place(BoardCell(published=published, ties=ties)))
    return out


def build_leaderboard(
    systems: list[System],
    measure: Measure = HEADLINE,
    tolerance: float | None = None,
    baseline: str | None = None,
    alpha: float = 0.05,
    n_permutations: int = 10_000,
    seed: int = 42,
    references: Sequence[str] = (),
) -> Leaderboard:
    """Tabulate ``systems`` for ``measure``; published deltas only for nDCG@10 (the published measure).

    ``references`` adds published configurations (``nv``, ``bm25+hyde-gpt4``) as rows of their
    own, for comparison with systems that have no published counterpart.
    """
    if not systems:
        raise R2MedError("no systems to report; pass run folders written by `r2med evaluate`")
    if not any(measure.trec in s.measures() for s in systems):
        label = measure.label
        raise R2MedError(f"no run folder has {label}; re-run `r2med evaluate -m {label}` (it re-scores finished runs)")
    tasks = task_order(systems)
    groups = benchmark_groups(tasks, systems)
    base = None
    if baseline is not None:
        named = [s for s in systems if s.name == baseline]
        if not named:
            raise R2MedError(f"--baseline {baseline!r} is not one of the systems: {', '.join(s.name for s in systems)}")
        base = named[0]
    rows = []
    for s in systems:
        key = s.published if measure == HEADLINE or _family_measure(s.published, measure) else None
        figures = key.figures(measure) if key else {}
        covered = key.graded_tasks(measure) if key is not None and figures else set()
        cells: dict[str, BoardCell] = {}
        for t in tasks:
            res = s.tasks.get(t)
            v = res.value(measure) if res else None
            problem = data_problem(t, res.record.run_data(), key, measure) if res is not None and t in covered else None
            cells[t] = BoardCell(
                value=None if v is None else 100 * v, published=None if problem else figures.get(t), ungraded=problem
            )
        missing = [t for t in tasks if cells[t].value is None]
        notes = []
        for col, over in [*groups, (AVERAGE, tasks)]:
            cells[col], note = _average(key, measure, figures, cells, over)
            notes += [note if col == AVERAGE else f"{note} ({col})"] if note else []
        note = "; ".join(dict.fromkeys(notes))
        precision = (
            next((p for p in (nonpaper_precision(t.config) for t in s.tasks.values()) if p), "") if figures else ""
        )
        tol = (
            tolerance
            if tolerance is not None
            else graded_tolerance(key, bool(precision))
            if figures and key is not None
            else None
        )
        rows.append(
            Row(
                s.name,
                key if figures else None,
                tol,
                cells,
                missing=missing,
                published_average_note=note,
                precision_note=precision,
                ungraded=s.ungraded if key is None and (measure == HEADLINE or _all_family(s, measure)) else None,
            )
        )
    rows += _reference_rows(references, tasks, measure, groups)
    board = Leaderboard(measure, tasks, rows, baseline=base.name if base else None, alpha=alpha, groups=groups)
    mark_ties(board, systems)
    mark_judgments(board, systems)
    mark_contamination(board, systems)
    mark_claims(board, systems)
    mark_mteb(board, systems)
    note_beside(board, systems)
    board.notes += _headline_notes(tasks, measure)
    board.notes += _encoding_notes(rows, systems)
    if base is not None:
        _mark_significance(board, systems, base, measure, alpha, n_permutations, seed)
    return board


def benchmark_groups(tasks: Sequence[str], systems: Sequence[System] = ()) -> list[tuple[str, list[str]]]:
    """Each benchmark's Average column and its tasks, when ``tasks`` hold tasks of more than one (R2MED, BRIGHT,
    local collections), in the families' order then local; else none (the ``Average`` is the one average).  A
    task's benchmark is the family its results recorded following (``metrics.json``'s ``protocol.family``: a local
    folder named ``Biology`` is local), else -- a folder written before the protocol was recorded -- its family
    asked by name (:func:`r2med.data.benchmarks.benchmark_of`)."""

    by: dict[str, list[str]] = {}
    for task in tasks:
        recorded = [
            r.record.protocol
            for r in (s.tasks.get(task) for s in systems)
            if r is not None and r.record.protocol is not None
        ]
        try:
            if recorded:
                name = recorded[0].family
                family = benchmark(name) if name is not None else None
            else:
                family = benchmark_of(task)
        except OptionError:
            family = None
        by.setdefault(family.title if family is not None else LOCAL, []).append(task)
    if len(by) < 2:
        return []
    order = [b.title for b in benchmarks()] + [LOCAL]
    return [(f"{AVERAGE} {title}", by[title]) for title in order if title in by]


def _average(
    key: PublishedKey | None,
    measure: Measure,
    figures: dict[str, float],
    cells: dict[str, BoardCell],
    tasks: Sequence[str],
) -> tuple[BoardCell, str]:
    """The average cell over ``tasks`` (one stated set: over every one of them, or not shown) with its published
    figure where one is published for the same set (:func:`_published_average`), and the note saying how that figure
    was taken."""
    present = [t for t in tasks if cells[t].value is not None]
    missing = [t for t in tasks if cells[t].value is None]
    avg = sum(cells[t].value or 0.0 for t in tasks) / len(tasks) if tasks and not missing else None
    note = ""
    pub_avg = None
    if key is not None:
        pub_avg, note = _published_average(key, measure, figures, cells, present, missing)
    return BoardCell(value=avg, published=pub_avg), note


def _shows_legend(row: Row, columns: Sequence[str], measure: Measure) -> bool:
    """Whether ``row`` shows published figures whose row has a legend line of its own (BRIGHT's: their source)."""
    return (
        row.published is not None
        and row.published.legend(measure) is not None
        and any(row.cells[c].published is not None for c in columns if c in row.cells)
    )


def _family_measure(key: PublishedKey | None, measure: Measure) -> bool:
    """Whether ``key`` publishes figures of ``measure`` besides nDCG@10 (BRIGHT's long documents: Recall@1);
    R2MED's rows are nDCG@10 only."""
    return key is not None and bool(key.figures(measure))


def _all_family(system: System, measure: Measure) -> bool:
    """Whether every task of ``system`` is of a family whose headline is ``measure`` (BRIGHT's long documents)."""
    return bool(system.tasks) and all(protocol_of_task(t).headline == measure for t in system.tasks)


def _published_average(
    key: PublishedKey,
    measure: Measure,
    figures: dict[str, float],
    cells: dict[str, BoardCell],
    present: list[str],
    missing: list[str],
) -> tuple[float | None, str]:
    """A row's published Average beside the table's: its own when the table holds exactly the tasks it is over
    (R2MED's 8, BRIGHT's 12 or its 8 long-document settings) and none is ungraded; the mean of its per-task figures
    over the same tasks when the table holds fewer (said in a note); else none.  Every task shown needs a figure,
    unless the row publishes Averages alone (:attr:`~r2med.results.published.PublishedKey.average_alone`)."""
    if not figures or missing or any(cells[t].ungraded for t in present):
        return None, ""
    if not key.average_alone and not all(t in figures for t in present):
        return None, ""
    scope = key.average_tasks(measure)
    if sorted(present) == sorted(scope):
        return figures.get(AVERAGE), ""
    if present and all(t in scope and t in figures for t in present):
        return sum(figures[t] for t in present) / len(present), f"published average over the same {len(present)} tasks"
    return None, ""


def default_measure(systems: Sequence[System]) -> Measure:
    """The measure a report shows when none is asked for: the headline every task of ``systems`` shares under its
    family's protocol (BRIGHT's long-document setting: Recall@1, as its leaderboard reports it), else nDCG@10."""
    headlines = {protocol_of_task(t).headline for s in systems for t in s.tasks}
    return headlines.pop() if len(headlines) == 1 else HEADLINE


def _headline_notes(tasks: Sequence[str], measure: Measure) -> list[str]:
    """A note when some of the table's tasks have another headline measure than the one shown."""
    other: dict[Measure, list[str]] = {}
    for t in tasks:
        headline = protocol_of_task(t).headline
        if headline != measure:
            other.setdefault(headline, []).append(t)
    return [
        f"{', '.join(names)}: {headline.label} is the headline of {'its' if len(names) == 1 else 'their'} "
        f"protocol (-m {headline.label})."
        for headline, names in other.items()
    ]


def encoding_line(encoding: Mapping[str, JsonValue]) -> str:  # open: each encoder records its own facts
    """What made a result's vectors (``metrics.json``'s ``encoding``), in one line."""
    parts = []
    versions = encoding.get("versions")
    if isinstance(versions, dict) and versions:
        parts.append(", ".join(f"{name} {version}" for name, version in versions.items()))
    lengths = encoding.get("max_length")
    if isinstance(lengths, dict) and lengths:
        parts.append("max length " + " / ".join(f"{side} {n}" for side, n in lengths.items()))
    framing = encoding.get("framing")
    # the tokens built (by text), and what the tokenizer alone adds (an older record: a name)
    if isinstance(framing, dict) and framing:
        built, alone = framing.get("tokens"), framing.get("tokenizer_alone")
        used = built.get("framing") if isinstance(built, dict) else framing.get("framing")
        alone = alone.get("framing") if isinstance(alone, dict) else alone
        parts.append(f"framing {used}" + (f" (tokenizer alone: {alone})" if alone else ""))
    dtype = encoding.get("dtype")
    if dtype:
        weights = (
            f" (weights {encoding['weights']}, compute {encoding.get('compute')})" if encoding.get("weights") else ""
        )
        parts.append(f"dtype {dtype}{weights}")
    if encoding.get("made_by") == "the embedding cache":
        parts.append("vectors from the embedding cache")
    return "; ".join(parts)


def _encoding_notes(rows: list[Row], systems: list[System]) -> list[str]:
    """For each cell outside its tolerance, what made its vectors (issue 20): the library versions, the max
    length per side, the framing and the dtype its ``metrics.json`` recorded.  Only a run that encoded has
    vectors: a lexical retriever's cell (BM25) gets no such line (issue 39), a dense one without recorded facts
    says so."""
    notes = []
    for row, system in zip(rows, systems):  # the system rows come first, in order
        for task, result in system.tasks.items():
            if task in row.cells and row.within(task) is False:
                encoding = result.record.encoding
                line = encoding_line(encoding) if encoding is not None else ""
                if not line and not _encodes(result.config):
                    continue
                notes.append(f"{FLAG} {row.system} {task}: made with {line or 'no recorded encoding facts'}.")
    return notes


def _encodes(config: RecordedConfig | None) -> bool:
    """Whether the run a recorded ``config`` describes encoded texts into vectors: its retriever's registry
    record is of the dense family (a name the registry does not know is taken to encode)."""
    name = config.retriever if config is not None else None
    meta = RETRIEVERS.get(name) if name is not None else None
    return meta is None or meta.family == "dense"


def _reference_rows(
    labels: Sequence[str], tasks: list[str], measure: Measure, groups: Sequence[tuple[str, list[str]]] = ()
) -> list[Row]:
    """A row of published figures per label: every family's configuration of that label with figures for one of
    ``tasks`` (``bm25`` over R2MED's and BRIGHT's tasks: both families' BM25), else the first family's; each
    Average column (``groups``: one per benchmark, then the table's) over its own tasks."""
    rows = []
    for label in labels:
        keys = require_labels(label)
        if not any(k.figures(measure) for k in keys):
            raise R2MedError(f"published rows of {label!r} have no {measure.trec} figures (nDCG@10 has them)")
        covering = [k for k in keys if set(tasks) & set(k.figures(measure))]
        for key in covering or keys[:1]:
            figures = key.figures(measure)
            cells = {t: BoardCell(value=figures.get(t)) for t in tasks}
            missing = [t for t in tasks if cells[t].value is None]
            for col, over in [*groups, (AVERAGE, tasks)]:
                if any(t not in figures for t in over):
                    avg = None
                elif sorted(over) == sorted(key.average_tasks(measure)):
                    avg = figures.get(AVERAGE)
                else:
                    avg = sum(figures[t] for t in over) / len(over)
                cells[col] = BoardCell(value=avg)
            rows.append(Row(f"paper: {key.title}", None, None, cells, missing=missing, reference=True))
    return rows


def _mark_significance(
    board: Leaderboard,
    systems: list[System],
    base: System,
    measure: Measure,
    alpha: float,
    n_permutations: int,
    seed: int,
) -> None:
    for row, s in zip(board.rows, systems):
        if s is base:
            continue
        comparison = compare_systems(base, s, measure, n_permutations=n_permutations, seed=seed)
        lines = comparison.rows
        if len(lines) == 1:  # one common task: its queries are all the queries, and the Average is that task
            lines = [lines[0], replace(lines[0], task=comparison.ALL, p_rand_holm=lines[0].stats.p_randomization)]
        pooled_all = {line.task for line in comparison.rows if line.task != comparison.ALL} == set(board.tasks)
        for line in lines:
            col = AVERAGE if line.task == comparison.ALL else line.task
            if col == AVERAGE and not pooled_all:  # its queries are not those of the Average's tasks: no mark
                continue
            if col in row.cells and row.cells[col].value is not None:
                p = line.p_rand_holm if line.task != comparison.ALL else line.stats.p_randomization
                row.cells[col].p_holm = p
                row.cells[col].significant = p is not None and p < alpha
