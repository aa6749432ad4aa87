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
from collections.abc import Mapping
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

from ..data import Collection
from ..evaluation.facets import Facets
from ..evaluation.ties import TIED_MARK
from ..infra.home import write_text_atomic
from ..measures import HEADLINE, Measure
from ..results.folders import System
from ..runs.run import ranked
from ..version import __version__
from .board import AVERAGE, Leaderboard, build_leaderboard
from .format import FLAG, GAP
from .ticks import nice_ticks, tick_labels
from .ties import tie_mark_html

log = logging.getLogger(__name__)

TOP = 10
SNIPPET = 400
EXPANSION_CHARS = 3000
PALETTE = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"]


def _asset(name: str) -> str:
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


def report_data(
    systems: list[System],
    board: Leaderboard,
    collections: Mapping[str, Collection],
    measure: Measure = HEADLINE,
    top: int = TOP,
    expansions: Mapping[str, Mapping[str, Mapping[str, str]]] | None = None,
) -> dict[str, Any]:
    """Everything the page shows, as one JSON-able dict (``expansions``: system -> task -> query -> the
    expansion text its run used, :func:`r2med.jobs.report.expansion_texts`)."""
    tasks = board.tasks
    per_query: dict[str, dict[str, dict[str, float]]] = {}
    runs: dict[str, dict[str, dict[str, list[list[str | float]]]]] = {}
    gold_ranks: dict[str, dict[str, dict[str, dict[str, int]]]] = {}
    queries: dict[str, dict[str, dict[str, Any]]] = {t: {} for t in tasks}
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
            for d, _ in entry["gold"]:
                if d in coll.corpus:
                    docs[t].setdefault(d, coll.corpus[d][:SNIPPET])
            exp = {name: texts[qid][:EXPANSION_CHARS] for name, texts in shown.items() if qid in texts}
            if exp:
                entry["expansion"] = exp
    return {
        "title": "R2MED results",
        "generated": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "version": __version__,
        "measure": measure.trec,
        "measureLabel": measure.label,
        "tasks": tasks,
        "systems": [s.name for s in systems],
        "colors": {s.name: PALETTE[i % len(PALETTE)] for i, s in enumerate(systems)},
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
        f'<table id="leaderboard" class="board"><thead><tr><th data-col="0" title="click to sort">system</th>'
        f"{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
        + "".join(f'<p class="legend">{e(line)}</p>' for line in board.legend())
    )


def bar_charts_svg(board: Leaderboard, colors: Mapping[str, str]) -> str:
    """One small horizontal bar chart per column (task or average) on a round axis
    (:func:`r2med.report.ticks.nice_ticks`); published figures as black ticks."""
    e = html.escape
    charts = []
    rows = board.rows
    bar_h, gap, label_w, width = 16, 4, 150, 380
    plot_w = width - label_w - 50
    for col in board.columns:
        vals = [r.cells[col].value for r in rows]
        pubs = [r.cells[col].published for r in rows]
        top = max([v for v in vals + pubs if v is not None] + [0.0])
        ticks = nice_ticks(0.0, top if top > 0 else 1.0, 4)
        scale = plot_w / ticks[-1]
        axis_y = 24 + len(rows) * (bar_h + gap)
        height = axis_y + 22
        parts = [
            f'<svg class="bars" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" role="img" aria-label="{e(col)}">',
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
            v = r.cells[col].value
            parts.append(
                f'<text x="{label_w - 6}" y="{y + bar_h - 4}" text-anchor="end" class="lab">{e(r.system[:22])}</text>'
            )
            if v is None:  # a gap, not a zero bar
                parts.append(f'<text x="{label_w + 4}" y="{y + bar_h - 4}" class="val gap">{GAP}</text>')
            else:
                w = max(v * scale, 0.5)
                parts.append(
                    f'<rect x="{label_w}" y="{y}" width="{w:.1f}" height="{bar_h}" '
                    f'fill="{colors.get(r.system, "#c7c7c7")}">'
                    f"<title>{e(r.system)}: {v:.2f}</title></rect>"
                )
                parts.append(f'<text x="{label_w + w + 4:.1f}" y="{y + bar_h - 4}" class="val">{v:.2f}</text>')
            p = r.cells[col].published
            if p is not None:
                x = label_w + p * scale
                parts.append(
                    f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{y - 2}" y2="{y + bar_h + 2}" class="pubtick">'
                    f"<title>published {p:.2f}</title></line>"
                )
        parts.append("</svg>")
        charts.append("".join(parts))
    return "".join(charts)


def facets_html(facets: Mapping[str, Facets], board: Leaderboard, selected: str | None = None) -> str:
    """The leaderboard per facet value: a selector of the facets (``scenario``, query metadata keys) and
    one table per facet (values x systems, x100, with query counts); the selected one shown."""
    from .facet_table import FacetBoard

    if not facets:
        return '<p class="hint">No query metadata loaded: pass --data-dir (or --by) for per-group tables.</p>'
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
            f'<div class="facet" data-key="{e(key)}"{hidden}><table class="board facet-table"><thead><tr>'
            f"{head}</tr></thead><tbody>{body}</tbody></table>"
            + "".join(f'<p class="legend">{e(line)}</p>' for line in fb.legend())
            + "</div>"
        )
    return "".join(parts)


def _json_for_script(data: Any) -> str:
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
    title: str = "R2MED results",
    expansions: Mapping[str, Mapping[str, Mapping[str, str]]] | None = None,
    facets: Mapping[str, Facets] | None = None,
    facet: str | None = None,
) -> str:
    """The page (``facets``: facet name -> its table, :func:`r2med.jobs.report.html_facets`; ``facet``:
    the one shown first)."""
    board = board or build_leaderboard(systems, measure)
    data = report_data(systems, board, collections or {}, measure=board.measure, expansions=expansions)
    data["title"] = title
    page = _asset("report.html")
    missing = [t for t in board.tasks if t not in (collections or {})]
    note = (
        ""
        if not missing
        else f'<p class="note">No texts or judgments for {html.escape(", ".join(missing))}: the inspector shows ids '
        "only. Re-run with <code>--data-dir</code> (or <code>--hub</code>) for query and document texts.</p>"
    )
    replacements = {
        "{{TITLE}}": html.escape(title),
        "{{CSS}}": _asset("report.css"),
        "{{JS}}": _asset("report.js"),
        "{{DATA}}": _json_for_script(data),
        "{{LEADERBOARD}}": leaderboard_html(board),
        "{{BARS}}": bar_charts_svg(board, data["colors"]),
        "{{BARSHINT}}": "Bars: this report's systems"
        + (
            "; black ticks: published figures."
            if any(c.published is not None for r in board.rows for c in r.cells.values())
            else "."
        ),
        "{{FACETS}}": facets_html(facets or {}, board, facet),
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
    title: str = "R2MED results",
    expansions: Mapping[str, Mapping[str, Mapping[str, str]]] | None = None,
    facets: Mapping[str, Facets] | None = None,
    facet: str | None = None,
) -> Path:
    """Write the self-contained report page atomically."""
    from ..infra.input_files import exists_as_regular

    path = Path(path)
    page = render_html(systems, measure, collections, board, title, expansions, facets, facet)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, page)
    if exists_as_regular(path):  # a device or a pipe written as a stream keeps its own permissions
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(path, 0o666 & ~umask)  # a page to share, not a private temp file
    return path
