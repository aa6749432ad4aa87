"""The static HTML report: one self-contained file, no network needed to open it.

Owns the page's data (leaderboard, per-query values, each system's top-10, gold
documents and texts) and its assembly: ``report.html`` (skeleton), ``report.css``
and ``report.js`` (sortable table, scatter of two systems, per-query inspector)
are package files inlined into the page; the per-task bar charts are inline SVG
drawn here.  Query/doc texts and judgments come from the collections when given
(:func:`r2med.jobs.report.task_texts`: ``--data-dir`` or the hub); without them the page shows ids
only.  The expansions shown are those each run recorded in ``config["expansion"]``
(:func:`r2med.jobs.report.expansion_texts`).
"""

from __future__ import annotations

import html
import json
import logging
import os
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import TypedDict

from ..data import Collection
from ..data.benchmarks import benchmark, benchmark_of, benchmarks
from ..errors import R2MedError
from ..evaluation.facets import Facets
from ..evaluation.ties import TIED_MARK
from ..infra.home import write_text_atomic
from ..infra.input_files import exists_as_regular
from ..infra.json_types import JsonObject
from ..measures import HEADLINE, Measure
from ..results.folders import System
from ..runs.run import ranked
from ..version import __version__
from .board import AVERAGE, Leaderboard, build_leaderboard
from .facet_table import FacetBoard
from .format import FLAG, GAP, SIGNIFICANT
from .ticks import nice_ticks, tick_labels
from .ties import tie_mark_html

log = logging.getLogger(__name__)

TOP = 10
SNIPPET = 400
EXPANSION_CHARS = 3000
#: One colour per task in the "all tasks" scatter (Tableau 20: twenty distinguishable hues, BRIGHT's 12 and
#: R2MED's 8 tasks on one page).
TASK_PALETTE = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
    "#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94", "#f7b6d2", "#c7c7c7", "#dbdb8d", "#9edae5",
]  # fmt: skip
PALETTE = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"]


def _asset(name: str) -> str:
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


def _family(task: str) -> str | None:
    """The benchmark family whose task ``task`` is (``r2med``, ``bright``), None for a local collection."""
    try:
        found = benchmark_of(task)
    except R2MedError:  # a name like a family's that is not one of its tasks: a local collection
        return None
    return found.name if found is not None else None


def report_title(tasks: Sequence[str]) -> str:
    """The page's title from the benchmarks its tasks belong to: ``R2MED results``, ``BRIGHT results``,
    ``R2MED and BRIGHT results`` (a combined page), ``+ local`` when other collections are shown beside them;
    ``Retrieval results`` for local collections only (never one benchmark's name over another's tasks)."""
    shown = {_family(t) for t in tasks}
    names = [b.title for b in benchmarks() if b.name in shown]
    if not names:
        return "Retrieval results"
    return " and ".join(names) + (" (and local collections)" if None in shown else "") + " results"


class QueryEntry(TypedDict, total=False):
    """What the page holds of one query: its text, its relevant documents (id, grade) and each system's expansion."""

    text: str
    gold: list[list[str | int]]
    expansion: dict[str, str]


class ReportData(TypedDict):
    """Everything the page shows (its script reads these keys)."""

    title: str
    generated: str
    version: str
    measure: str
    measureLabel: str
    tasks: list[str]
    systems: list[str]
    colors: dict[str, str]
    taskColors: dict[str, str]
    leaderboard: JsonObject
    perQuery: dict[str, dict[str, dict[str, float]]]
    runs: dict[str, dict[str, dict[str, list[list[str | float]]]]]
    goldRanks: dict[str, dict[str, dict[str, dict[str, int]]]]
    queries: dict[str, dict[str, QueryEntry]]
    docs: dict[str, dict[str, str]]
    hasTexts: dict[str, bool]
    scatterScale: int
    scatterTicks: list[float]


def report_data(
    systems: list[System],
    board: Leaderboard,
    collections: Mapping[str, Collection],
    measure: Measure = HEADLINE,
    top: int = TOP,
    expansions: Mapping[str, Mapping[str, Mapping[str, str]]] | None = None,
) -> ReportData:
    """Everything the page shows, as one JSON-able dict (``expansions``: system -> task -> query -> the
    expansion text its run used, :func:`r2med.jobs.report.expansion_texts`)."""
    tasks = board.tasks
    per_query: dict[str, dict[str, dict[str, float]]] = {}
    runs: dict[str, dict[str, dict[str, list[list[str | float]]]]] = {}
    gold_ranks: dict[str, dict[str, dict[str, dict[str, int]]]] = {}
    queries: dict[str, dict[str, QueryEntry]] = {t: {} for t in tasks}
    docs: dict[str, dict[str, str]] = {t: {} for t in tasks}
    for s in systems:
        per_query[s.name] = {t: r.scores(measure) for t, r in s.tasks.items()}
        runs[s.name] = {}
        gold_ranks[s.name] = {}
        for t, r in s.tasks.items():
            coll = collections.get(t)
            judgments = coll.qrels if coll else {}
            runs[s.name][t] = {}
            gold_ranks[s.name][t] = {}
            for qid, scores in r.run.items():
                order = ranked(scores)
                runs[s.name][t][qid] = [[d, round(v, 4)] for d, v in order[:top]]
                rel = {d for d, g in judgments.get(qid, {}).items() if g > 0}
                if rel:
                    gold_ranks[s.name][t][qid] = {d: i + 1 for i, (d, _) in enumerate(order) if d in rel}
                if coll:
                    for d, _ in order[:top]:
                        if d in coll.corpus:
                            docs[t].setdefault(d, coll.corpus[d][:SNIPPET])
            for qid in per_query[s.name][t]:
                queries[t].setdefault(qid, {})
            for qid in r.run:
                queries[t].setdefault(qid, {})
    for t in tasks:
        coll = collections.get(t)
        if coll is None:
            continue
        shown = {name: by_task[t] for name, by_task in (expansions or {}).items() if t in by_task}
        for qid, entry in queries[t].items():
            entry["text"] = coll.queries.get(qid, "")
            gold = sorted(coll.qrels.get(qid, {}).items(), key=lambda kv: (-kv[1], kv[0]))
            entry["gold"] = [[d, g] for d, g in gold if g > 0]
            for d, g in gold:
                if g > 0 and d in coll.corpus:
                    docs[t].setdefault(d, coll.corpus[d][:SNIPPET])
            exp = {name: texts[qid][:EXPANSION_CHARS] for name, texts in shown.items() if qid in texts}
            if exp:
                entry["expansion"] = exp
    return {
        "title": report_title(tasks),
        "generated": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "version": __version__,
        "measure": measure.trec,
        "measureLabel": measure.label,
        "tasks": tasks,
        "systems": [s.name for s in systems],
        "colors": {s.name: PALETTE[i % len(PALETTE)] for i, s in enumerate(systems)},
        "taskColors": {t: TASK_PALETTE[i % len(TASK_PALETTE)] for i, t in enumerate(tasks)},
        "leaderboard": board.to_dict(),
        "perQuery": per_query,
        "runs": runs,
        "goldRanks": gold_ranks,
        "queries": queries,
        "docs": docs,
        "hasTexts": {t: t in collections for t in tasks},
        "scatterScale": SCALE,
        "scatterTicks": scatter_ticks(per_query),
    }


#: Per-query values are shown x100 in the scatter, as in the leaderboard and the bars.
SCALE = 100


def scatter_ticks(per_query: Mapping[str, Mapping[str, Mapping[str, float]]], n: int = 5) -> list[float]:
    """Round ticks (:func:`r2med.report.ticks.nice_ticks`) from 0 to the largest per-query value of any system,
    x100 (:data:`SCALE`): the scatter's axes, the same for every pair of systems."""
    top = max((v for tasks in per_query.values() for values in tasks.values() for v in values.values()), default=0.0)
    return nice_ticks(0.0, SCALE * top if top > 0 else SCALE, n)


# -- server-side pieces (work without JavaScript) -------------------------------------------------


def leaderboard_html(board: Leaderboard) -> str:
    e = html.escape
    head = "".join(f'<th data-col="{i + 1}" title="click to sort">{e(c)}</th>' for i, c in enumerate(board.columns))
    rows = []
    for row in board.rows:
        band = "ungraded" if row.tolerance is None else f"tol ±{row.tolerance:g}"
        cells = [
            f'<td class="sys" data-value="{e(row.system)}">{e(row.system)}'
            + (
                f'<div class="pub">= {e(row.published.label)} ({band})</div>'
                if row.published and any(c.published is not None for c in row.cells.values())
                else ""
            )
            + "</td>"
        ]
        for col in board.columns:
            c = row.cells[col]
            how = "all queries pooled" if col == AVERAGE else "Holm across tasks"
            mark = (
                f'<span class="sig" title="differs from {e(board.baseline or "")}: p = {c.p_holm:.4g} '
                f'(randomisation test, {how})">†</span>'
                if c.significant and c.p_holm is not None and c.value is not None
                else ""
            )
            mark += "".join(
                tie_mark_html(c)
                if m == TIED_MARK
                else f'<span class="mark" title="{e(board.marks.get(m, ""))}">{e(m)}</span>'
                for m in c.marks
            )
            if c.value is None:
                why = (
                    f"no Average: no result for {', '.join(row.missing)}"
                    if col == AVERAGE and row.missing
                    else "no result"
                )
                val = f'<span class="gap" title="{e(why)}">{GAP}</span>'
            else:
                val = f"{c.value:.2f}"
            extra = ""
            if c.published is not None:
                d = c.delta
                within = row.within(col)
                cls = "ok" if within else "bad" if within is False else ""  # None: ungraded
                extra = (
                    f'<div class="pub">pub {c.published:.2f} · <span class="{cls}">'
                    f"{'' if d is None else f'{d:+.2f}'}{' ' + FLAG if within is False else ''}</span></div>"
                )
            sort_value = "" if c.value is None else f"{c.value:.6f}"
            cells.append(f'<td data-value="{sort_value}">{val}{mark}{extra}</td>')
        rows.append(('<tr class="ref">' if row.reference else "<tr>") + "".join(cells) + "</tr>")
    return (
        f'<div class="scroll"><table id="leaderboard" class="board"><thead><tr><th data-col="0" title="click to '
        f'sort">system</th>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table></div>'
        + "".join(f'<p class="legend">{e(line)}</p>' for line in board.legend())
    )


def bar_columns_shown(board: Leaderboard) -> list[str]:
    """The panels the page draws: each task, and the Average only when some system has one (a combined page
    whose systems each lack a task has none: no empty panel)."""
    return [c for c in board.columns if c in board.tasks or any(r.cells[c].value is not None for r in board.rows)]


def bar_axis(board: Leaderboard, columns: Sequence[str]) -> list[float]:
    """The one axis every panel shares (x100, as the table; round ticks from 0): the panels compare, so a bar of
    the same length is the same value in each (:func:`r2med.report.ticks.nice_ticks`)."""
    top = max(
        [v for r in board.rows for c in columns for v in (r.cells[c].value, r.cells[c].published) if v is not None]
        + [0.0]
    )
    return nice_ticks(0.0, top if top > 0 else 1.0, 4)


def bars_hint(board: Leaderboard) -> str:
    """The line above the bar panels: what they share and what their marks are."""
    cells = [c for r in board.rows for c in r.cells.values()]
    hint = f"Bars: this report's systems, every panel on one axis ({board.measure.label} x100)"
    if any(c.published is not None for c in cells):
        hint += "; black ticks: published figures"
    if any(c.significant and c.p_holm is not None for c in cells):
        hint += f"; {SIGNIFICANT}: differs from {board.baseline} (randomisation test, as in the table)"
    return hint + "."


def bar_charts_svg(board: Leaderboard, colors: Mapping[str, str]) -> str:
    """One small horizontal bar chart per column (task, and the Average when it holds values), all on one round
    axis (:func:`bar_axis`); published figures as black ticks; ``†`` after a value that differs significantly
    from ``--baseline`` (the randomisation test ``compare`` runs, as the table marks it)."""
    e = html.escape
    charts = []
    rows = board.rows
    bar_h, gap, label_w, width = 16, 4, 150, 380
    plot_w = width - label_w - 50
    columns = bar_columns_shown(board)
    ticks = bar_axis(board, columns)
    scale = plot_w / ticks[-1]
    for col in columns:
        axis_y = 24 + len(rows) * (bar_h + gap)
        height = axis_y + 22
        parts = [
            f'<svg class="bars" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" role="img" aria-label="{e(col)}" data-axis-max="{ticks[-1]:g}">',
            f'<text x="4" y="16" class="title">{e(col)}</text>',
        ]
        for tick, label in zip(ticks, tick_labels(ticks)):
            x = label_w + tick * scale
            parts.append(
                f'<line x1="{x:.1f}" x2="{x:.1f}" y1="20" y2="{axis_y}" class="grid"/>'
                f'<text x="{x:.1f}" y="{axis_y + 14}" text-anchor="middle" class="tick">{label}</text>'
            )
        for i, r in enumerate(rows):
            y = 24 + i * (bar_h + gap)
            cell = r.cells[col]
            v = cell.value
            parts.append(
                f'<text x="{label_w - 6}" y="{y + bar_h - 4}" text-anchor="end" class="lab">{e(r.system[:22])}</text>'
            )
            if v is None:  # a gap, not a zero bar
                parts.append(f'<text x="{label_w + 4}" y="{y + bar_h - 4}" class="val gap">{GAP}</text>')
            else:
                w = max(v * scale, 0.5)
                sig = cell.significant and cell.p_holm is not None
                parts.append(
                    f'<rect x="{label_w}" y="{y}" width="{w:.1f}" height="{bar_h}" '
                    f'fill="{colors.get(r.system, "#c7c7c7")}">'
                    f"<title>{e(r.system)}: {v:.2f}</title></rect>"
                )
                parts.append(
                    f'<text x="{label_w + w + 4:.1f}" y="{y + bar_h - 4}" class="val">{v:.2f}'
                    + (f'<tspan class="sig">{SIGNIFICANT}</tspan>' if sig else "")
                    + "</text>"
                )
            p = cell.published
            if p is not None:
                x = label_w + p * scale
                parts.append(
                    f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{y - 2}" y2="{y + bar_h + 2}" class="pubtick">'
                    f"<title>published {p:.2f}</title></line>"
                )
        parts.append("</svg>")
        charts.append("".join(parts))
    return "".join(charts)


def facets_html(
    facets: Mapping[str, Facets], board: Leaderboard, selected: str | None = None, loaded: Sequence[str] = ()
) -> str:
    """The leaderboard per facet value: a selector of the facets (``scenario``, query metadata keys) and
    one table per facet (values x systems, x100, with query counts); the selected one shown.  Without facets,
    why: the collections were not loaded (pass ``--data-dir``), or -- ``loaded`` names the tasks whose
    collections were -- they were, and hold nothing to group by."""
    if not facets:
        missing = [t for t in board.tasks if t not in loaded]
        if not missing:
            return (
                '<p class="hint">No query groups: no task here has a scenario (only R2MED\'s have), and no query '
                "metadata key of the loaded collections is shared by several queries.</p>"
            )
        return (
            '<p class="hint">No query metadata loaded for '
            + html.escape(", ".join(missing))
            + ": pass --data-dir (or --hub) for per-group tables.</p>"
        )
    e = html.escape
    keys = list(facets)
    chosen = selected if selected in facets else keys[0]
    options = "".join(f'<option value="{e(k)}"{" selected" if k == chosen else ""}>{e(k)}</option>' for k in keys)
    parts = [f'<div class="controls"><label>group by <select id="facet-key">{options}</select></label></div>']
    for key, table in facets.items():
        fb = FacetBoard(table, board.measure)
        header, rows = fb.grid()
        head = "".join(f"<th>{e(h)}</th>" for h in header)
        body = "".join(
            "<tr>" + "".join(f"<td{' class=sys' if i == 0 else ''}>{e(c)}</td>" for i, c in enumerate(cells)) + "</tr>"
            for cells in rows
        )
        hidden = "" if key == chosen else " hidden"
        parts.append(
            f'<div class="facet" data-key="{e(key)}"{hidden}><div class="scroll"><table class="board facet-table">'
            f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>"
            + "".join(f'<p class="legend">{e(line)}</p>' for line in fb.legend())
            + "</div>"
        )
    return "".join(parts)


def _texts_option(tasks: Sequence[str]) -> str:
    """Where the texts of ``tasks`` come from: ``--hub`` for a benchmark's tasks that are never read from a folder
    (its family has no ``local_copies``: BRIGHT's), ``--data-dir`` for local collections (R2MED's tasks: either)."""
    kinds = {_family(t) for t in tasks}
    hub_only = {k for k in kinds if k is not None and not benchmark(k).local_copies}
    if hub_only and kinds <= hub_only:
        return "<code>--hub</code>"
    if hub_only:
        return "<code>--data-dir</code> (your collections) and <code>--hub</code> (the benchmarks' tasks)"
    return "<code>--data-dir</code> (or <code>--hub</code>)"


def _json_for_script(data: object) -> str:
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    return (
        text.replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


def _count(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def render_html(
    systems: list[System],
    measure: Measure = HEADLINE,
    collections: Mapping[str, Collection] | None = None,
    board: Leaderboard | None = None,
    title: str | None = None,
    expansions: Mapping[str, Mapping[str, Mapping[str, str]]] | None = None,
    facets: Mapping[str, Facets] | None = None,
    facet: str | None = None,
) -> str:
    """The page (``facets``: facet name -> its table, :func:`r2med.jobs.report.html_facets`; ``facet``:
    the one shown first; ``title``: default :func:`report_title`)."""
    board = board or build_leaderboard(systems, measure)
    title = title if title is not None else report_title(board.tasks)
    data = report_data(systems, board, collections or {}, measure=board.measure, expansions=expansions)
    data["title"] = title
    page = _asset("report.html")
    loaded = collections or {}
    missing = [t for t in board.tasks if t not in loaded]
    note = (
        ""
        if not missing
        else f'<p class="note">No texts or judgments for {html.escape(", ".join(missing))}: the inspector shows ids '
        f"only. Re-run with {_texts_option(missing)} for query and document texts.</p>"
    )
    replacements = {
        "{{TITLE}}": html.escape(title),
        "{{CSS}}": _asset("report.css"),
        "{{JS}}": _asset("report.js"),
        "{{DATA}}": _json_for_script(data),
        "{{LEADERBOARD}}": leaderboard_html(board),
        "{{BARS}}": bar_charts_svg(board, data["colors"]),
        "{{BARSHINT}}": bars_hint(board),
        "{{FACETS}}": facets_html(facets or {}, board, facet, loaded=[t for t in board.tasks if t in loaded]),
        "{{MEASURE}}": html.escape(board.measure.label),
        "{{META}}": html.escape(
            f"{_count(len(systems), 'system')} · {_count(len(board.tasks), 'task')} · "
            f"generated {data['generated']} by r2med {__version__}"
        ),
        "{{NOTE}}": note,
    }
    return fill_template(page, replacements)


_PLACEHOLDER = re.compile(r"\{\{[A-Z]+\}\}")


def fill_template(template: str, values: Mapping[str, str]) -> str:
    """Replace every ``{{NAME}}`` of ``template`` in one pass: inserted text (query texts, names, the
    page's own script) is never scanned again, so data can never be read as a placeholder."""
    unknown = sorted(set(_PLACEHOLDER.findall(template)) - set(values))
    if unknown:
        raise ValueError(f"report template placeholders without a value: {', '.join(unknown)}")
    return _PLACEHOLDER.sub(lambda m: values[m.group(0)], template)


def write_html(
    path: str | os.PathLike[str],
    systems: list[System],
    measure: Measure = HEADLINE,
    collections: Mapping[str, Collection] | None = None,
    board: Leaderboard | None = None,
    title: str | None = None,
    expansions: Mapping[str, Mapping[str, Mapping[str, str]]] | None = None,
    facets: Mapping[str, Facets] | None = None,
    facet: str | None = None,
) -> Path:
    """Write the self-contained report page atomically."""
    path = Path(path)
    page = render_html(systems, measure, collections, board, title, expansions, facets, facet)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, page)
    if exists_as_regular(path):  # a device or a pipe written as a stream keeps its own permissions
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(path, 0o666 & ~umask)  # a page to share, not a private temp file
    return path
