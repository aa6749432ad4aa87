"""Figures for a paper (``r2med plot``): per-task bars, a per-query scatter of two systems, facet bars.

matplotlib (the optional extra ``plot``) is imported inside each function, so the rest of r2med never needs
it.  Figures are drawn as :class:`matplotlib.figure.Figure` objects (never through pyplot) inside a local
style context (:data:`STYLE`): a Python caller's backend and ``rcParams`` are left as they were.  The
``*_figure`` functions return the figure (a notebook shows it); ``plot_*`` write it to a file whose suffix
(``.png``, ``.pdf``, ``.svg``) is its format, atomically.

* **Paper sizes**: one column (3.3 in wide), two columns (7 in) when there are many bars, 8 pt text.
* **Grayscale-safe, stable styles**: each system has a gray level and a hatch chosen from its *name*
  (:func:`series_styles`), so it keeps them across figures whatever the order of the arguments; published
  figures are black ticks.
* **One stated set**: values are x100 everywhere (the axis says so), as in the tables.  A cell without a
  value is a gap (``n/a`` drawn at the axis, never a zero bar); a system without every task has no Average
  bar (:mod:`.board`); one task draws no duplicate Average group.  In the facet bars, a group whose
  systems cover different numbers of its queries is marked ``*`` (with the range of counts).
* Text is text: names are never read as mathtext (a system named ``$$`` is drawn as written).

Every bar has a ``gid`` (``bar:<system>:<column>``), and every gap a text with gid
``gap:<system>:<column>``, so a figure can be read back (from the object, or an SVG).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from ..errors import R2MedError
from ..infra.home import atomic_path
from ..measures import Measure
from .format import GAP, SIGNIFICANT
from .layout import short_task

if TYPE_CHECKING:
    from matplotlib.artist import Artist
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.typing import RcKeyType

    from ..evaluation.facets import FacetRow, Facets
    from .board import Leaderboard

PlotKind = Literal["bars", "scatter", "facets"]
KINDS: tuple[PlotKind, ...] = ("bars", "scatter", "facets")
FIGURE_FORMATS = ("png", "pdf", "svg")
#: One column of a two-column paper, and the full text width (inches).
ONE_COLUMN, TWO_COLUMNS = 3.3, 7.0
FONT_PT = 8
GRAYS = ("0.92", "0.75", "0.58", "0.42", "0.25")
HATCHES = ("", "///", "...", "xxx", "\\\\\\", "++", "ooo", "---", "|||", "**")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "*")
DPI = 300
#: Values are drawn x100, as the tables show them.
SCALE = 100
#: The settings every figure is drawn and saved with (inside :func:`matplotlib.rc_context`, never globally).
STYLE: dict[RcKeyType, object] = {
    "font.size": FONT_PT,
    "axes.titlesize": FONT_PT + 1,
    "axes.labelsize": FONT_PT,
    "xtick.labelsize": FONT_PT - 1,
    "ytick.labelsize": FONT_PT - 1,
    "legend.fontsize": FONT_PT - 1,
    "hatch.linewidth": 0.6,
    "text.parse_math": False,  # a name with $ is text, not mathtext
    "text.usetex": False,
    "svg.hashsalt": "r2med",
    "svg.fonttype": "none",  # text stays text: editable, searchable
    "pdf.fonttype": 42,
}


def figure_format(path: str | Path) -> str:
    """The format named by ``path``'s suffix, or a one-line error."""
    suffix = Path(path).suffix.lower().lstrip(".")
    if suffix not in FIGURE_FORMATS:
        raise R2MedError(f"{path}: a figure is .png, .pdf or .svg (the suffix names the format)")
    return suffix


@contextmanager
def _style() -> Iterator[None]:
    try:
        import matplotlib
    except ImportError:
        raise R2MedError("r2med plot needs matplotlib: pip install 'r2med[plot]'") from None
    with matplotlib.rc_context(STYLE):
        yield


def _figure(width: float, height: float) -> Figure:
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height))


def _slot(name: str) -> int:
    digest = hashlib.blake2b(name.encode("utf-8"), digest_size=4).digest()
    return int.from_bytes(digest, "big") % (len(GRAYS) * len(HATCHES))


def series_styles(names: Sequence[str]) -> dict[str, tuple[str, str]]:
    """name -> (gray level, hatch), from a hash of the name (the same in every figure, whatever the order of
    ``names``).  Two names of one figure that hash to the same style: the later by name takes the next free
    one (consecutive styles differ in gray level and hatch)."""
    slots = len(GRAYS) * len(HATCHES)
    taken: dict[int, str] = {}
    for name in sorted(dict.fromkeys(names), key=lambda n: (_slot(n), n)):
        slot = _slot(name)
        while slot in taken:
            slot = (slot + 1) % slots
        taken[slot] = name
    return {
        name: (GRAYS[slot % len(GRAYS)], HATCHES[(slot // len(GRAYS)) % len(HATCHES)]) for slot, name in taken.items()
    }


def _save(fig: Figure, path: str | Path) -> Path:
    fmt = figure_format(path)
    metadata = {"Date": None} if fmt in ("pdf", "svg") else {}
    with _style(), atomic_path(path) as tmp:
        fig.savefig(tmp, format=fmt, dpi=DPI, bbox_inches="tight", metadata=metadata)
    return Path(path)


def _grouped_bars(
    ax: Axes,
    groups: Sequence[str],
    series: Sequence[str],
    values: Mapping[str, Sequence[float | None]],
    published: Mapping[str, Sequence[float | None]] | None = None,
    keys: Sequence[str] | None = None,
    significant: Mapping[str, Sequence[bool]] | None = None,
) -> None:
    """Bars of each series per group; a missing value is a gap (``n/a`` at the axis); ``significant``: a
    :data:`~r2med.report.format.SIGNIFICANT` mark over the bars that differ from the baseline (gid
    ``sig:<series>:<key>``); legend entries are given as handles and labels (so a name starting with ``_`` is not
    dropped)."""
    from matplotlib.patches import Patch

    styles = series_styles(series)
    width = 0.8 / max(len(series), 1)
    handles: list[Artist] = []
    labels: list[str] = []
    ticks = None
    keys = list(keys or groups)
    for i, name in enumerate(series):
        gray, hatch = styles[name]
        xs = [g + (i - (len(series) - 1) / 2) * width for g in range(len(groups))]
        for x, v, key in zip(xs, values[name], keys):
            if v is None:
                ax.text(
                    x,
                    0,
                    GAP,
                    rotation=90,
                    ha="center",
                    va="bottom",
                    fontsize=FONT_PT - 3,
                    color="0.35",
                    gid=f"gap:{name}:{key}",
                )
                continue
            [bar] = ax.bar([x], [v], width, color=gray, edgecolor="black", linewidth=0.4, hatch=hatch)
            bar.set_gid(f"bar:{name}:{key}")
        for x, v, key, sig in zip(xs, values[name], keys, (significant or {}).get(name) or []):
            if sig and v is not None:
                ax.text(x, v, SIGNIFICANT, ha="center", va="bottom", fontsize=FONT_PT - 1, gid=f"sig:{name}:{key}")
        handles.append(Patch(facecolor=gray, edgecolor="black", linewidth=0.4, hatch=hatch))
        labels.append(name)
        marks = (published or {}).get(name)
        pts = [(x, p) for x, p in zip(xs, marks or []) if p is not None]
        if pts:
            ticks = ax.scatter(
                [x for x, _ in pts], [p for _, p in pts], marker="_", s=60, color="black", linewidths=1.4, zorder=3
            )
    if ticks is not None:
        handles.append(ticks)
        labels.append("published")
    ax.set_xlim(-0.5, len(groups) - 0.5)  # every slot inside the axes, a gap's n/a too
    ax.set_xticks(range(len(groups)))
    tilted = len(groups) > 3 or max(map(len, groups), default=0) > 10
    ax.set_xticklabels(groups, rotation=30 if tilted else 0, ha="right" if tilted else "center")
    ax.set_axisbelow(True)
    ax.grid(axis="y", linewidth=0.3, color="0.8")
    ax.set_ylim(bottom=0)
    ax.legend(handles, labels, frameon=False, ncol=min(3, len(labels)), loc="lower center", bbox_to_anchor=(0.5, 1.0))


def _width(bars: int) -> float:
    return ONE_COLUMN if bars <= 12 else TWO_COLUMNS


def bar_columns(board: Leaderboard) -> list[str]:
    """The groups the bars figure draws: the tasks, and the Average when there are several tasks."""
    return board.columns if len(board.tasks) > 1 else list(board.tasks)


def bars_figure(board: Leaderboard) -> Figure:
    """Per-task bars (and the Average, with several tasks) of every system of ``board``; published figures as
    black ticks; gaps where a system has no value (no Average for a system without every task); with a baseline
    (``--baseline``), :data:`~r2med.report.format.SIGNIFICANT` over each bar that differs from it (the
    randomisation test of ``compare``, Holm across tasks, as the table marks it), said in a note under the axes."""
    rows = board.systems
    columns = bar_columns(board)
    with _style():
        fig = _figure(_width(len(rows) * len(columns)), 2.2)
        ax = fig.add_subplot()
        values = {r.system: [r.cells[c].value for c in columns] for r in rows}
        published = {r.system: [r.cells[c].published for c in columns] for r in rows}
        significant = {
            r.system: [bool(r.cells[c].significant and r.cells[c].p_holm is not None) for c in columns] for r in rows
        }
        names = [short_task(c) for c in columns]
        _grouped_bars(ax, names, [r.system for r in rows], values, published, columns, significant)
        ax.set_ylabel(f"{board.measure.label} (x{SCALE})")
        if any(any(marks) for marks in significant.values()):
            top = max([v for vs in values.values() for v in vs if v is not None] + [0.0])
            ax.set_ylim(0, top * 1.12 if top > 0 else 1)  # room for the marks over the tallest bars
            fig.text(
                0.01,
                -0.02,
                f"{SIGNIFICANT} differs from {board.baseline} (randomisation test, Holm across tasks; "
                f"p < {board.alpha:g})",
                fontsize=FONT_PT - 2,
                ha="left",
                va="top",
                gid="sig-note",
            )
    return fig


def plot_bars(board: Leaderboard, path: str | Path) -> Path:
    """:func:`bars_figure` written to ``path``."""
    figure_format(path)
    return _save(bars_figure(board), path)


def scatter_figure(
    per_query: Mapping[str, Mapping[str, Mapping[str, float]]], x_system: str, y_system: str, measure: Measure
) -> Figure:
    """Per-query values x100 of two systems (``per_query``: system -> task -> query -> value), one marker per
    task, the diagonal dashed: points above it are queries ``y_system`` does better on.  A system without
    per-query values, or two that share no query, is a one-line error (not an empty figure)."""
    label = measure.label
    for name in (x_system, y_system):
        if name not in per_query:
            raise R2MedError(f"--systems: {name!r} is not one of the systems: {', '.join(per_query)}")
        if not any(per_query[name].values()):
            raise R2MedError(
                f"{name}: no per-query {label} in its metrics.json; re-run `r2med evaluate -m {label}` "
                "(it re-scores finished runs)"
            )
    tasks = [
        t
        for t in per_query[x_system]
        if t in per_query[y_system] and set(per_query[x_system][t]) & set(per_query[y_system][t])
    ]
    if not tasks:
        raise R2MedError(f"{x_system} and {y_system} share no query with a per-query {label}")
    with _style():
        fig = _figure(ONE_COLUMN, ONE_COLUMN)
        ax = fig.add_subplot()
        ax.plot([0, SCALE], [0, SCALE], linestyle="--", color="0.5", linewidth=0.6)
        for i, task in enumerate(tasks):
            xs, ys = per_query[x_system][task], per_query[y_system][task]
            common = [q for q in xs if q in ys]
            ax.scatter(
                [SCALE * xs[q] for q in common],
                [SCALE * ys[q] for q in common],
                marker=MARKERS[i % len(MARKERS)],
                s=12,
                facecolors="none" if i % 2 else GRAYS[(2 * i + 1) % len(GRAYS)],
                edgecolors="black",
                linewidths=0.5,
                label=task,
                gid=f"points:{task}",
            )
        pad = SCALE * 0.02
        ax.set_xlim(-pad, SCALE + pad)
        ax.set_ylim(-pad, SCALE + pad)
        ax.set_aspect("equal")
        ax.set_xlabel(f"{x_system} ({label} x{SCALE})")
        ax.set_ylabel(f"{y_system} ({label} x{SCALE})")
        if len(tasks) > 1:
            handles = [c for c in ax.collections if c.get_gid() and str(c.get_gid()).startswith("points:")]
            ax.legend(handles, tasks, frameon=False, loc="upper left", markerscale=1.2)
    return fig


def plot_scatter(
    per_query: Mapping[str, Mapping[str, Mapping[str, float]]],
    x_system: str,
    y_system: str,
    measure: Measure,
    path: str | Path,
) -> Path:
    """:func:`scatter_figure` written to ``path``."""
    figure_format(path)
    return _save(scatter_figure(per_query, x_system, y_system, measure), path)


UNEVEN = "*"
"""Marks a facet group whose systems cover different numbers of its queries."""


def facet_group_label(row: FacetRow, systems: Sequence[str]) -> str:
    """A facet group's label: its value and query count, or the range of the systems' counts marked
    :data:`UNEVEN` when they cover different queries of it (a system without any counts 0)."""
    counts = [row.counts.get(s, 0) for s in systems]
    if all(c == row.queries for c in counts):
        return f"{row.value} ({row.queries})"
    return f"{row.value} ({min(counts)}–{max(counts)}){UNEVEN}"


def facets_figure(facets: Facets, measure: Measure) -> Figure:
    """Bars per facet value (with its query count) for every system of ``facets``; a group whose systems cover
    different queries is marked (see :func:`facet_group_label`) and the figure says what the mark means."""
    groups = [facet_group_label(row, facets.systems) for row in facets.rows]
    values = {s: [SCALE * row.mean[s] if s in row.mean else None for row in facets.rows] for s in facets.systems}
    with _style():
        fig = _figure(_width(len(groups) * len(facets.systems)), 2.2)
        ax = fig.add_subplot()
        _grouped_bars(ax, groups, facets.systems, values, keys=[row.value for row in facets.rows])
        ax.set_ylabel(f"{measure.label} (x{SCALE})")
        ax.set_xlabel(facets.by)
        if any(g.endswith(UNEVEN) for g in groups):
            fig.text(
                0.01,
                -0.02,
                f"{UNEVEN} the systems' bars are over different numbers of the group's queries (the range in brackets)",
                fontsize=FONT_PT - 2,
                va="top",
                gid="uneven-note",
            )
    return fig


def plot_facets(facets: Facets, measure: Measure, path: str | Path) -> Path:
    """:func:`facets_figure` written to ``path``."""
    figure_format(path)
    return _save(facets_figure(facets, measure), path)
