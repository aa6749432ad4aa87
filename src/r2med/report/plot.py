"""Figures for a paper (``r2med plot``): per-task bars, a per-query scatter of two systems, facet bars.

matplotlib (the optional extra ``plot``) is imported inside each function, with the Agg backend, so the
rest of r2med never needs it.  Figures are sized for a paper (one column: 3.3 in wide; two columns, 7 in,
when there are many bars) with 8 pt text, and readable in grayscale: each system has a hatch (bars) or
a marker (scatter) as well as a gray level, and published figures are black ticks.  The file's suffix
(``.png``, ``.pdf``, ``.svg``) is its format; it is written atomically.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ..errors import R2MedError
from ..evaluation.metrics import measure_label

if TYPE_CHECKING:
    from ..evaluation.facets import Facets
    from .leaderboard import Leaderboard

PlotKind = Literal["bars", "scatter", "facets"]
KINDS: tuple[PlotKind, ...] = ("bars", "scatter", "facets")
FIGURE_FORMATS = ("png", "pdf", "svg")
#: One column of a two-column paper, and the full text width (inches).
ONE_COLUMN, TWO_COLUMNS = 3.3, 7.0
FONT_PT = 8
HATCHES = ("", "///", "...", "xxx", "\\\\\\", "++", "ooo", "---", "|||", "**")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "*")
DPI = 300


def figure_format(path: str | Path) -> str:
    """The format named by ``path``'s suffix, or a one-line error."""
    suffix = Path(path).suffix.lower().lstrip(".")
    if suffix not in FIGURE_FORMATS:
        raise R2MedError(f"{path}: a figure is .png, .pdf or .svg (the suffix names the format)")
    return suffix


def _pyplot() -> Any:
    try:
        import matplotlib
    except ImportError:
        raise R2MedError("r2med plot needs matplotlib: pip install 'r2med[plot]'") from None
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    plt.rcParams.update(
        {
            "font.size": FONT_PT,
            "axes.titlesize": FONT_PT + 1,
            "axes.labelsize": FONT_PT,
            "xtick.labelsize": FONT_PT - 1,
            "ytick.labelsize": FONT_PT - 1,
            "legend.fontsize": FONT_PT - 1,
            "hatch.linewidth": 0.6,
            "svg.hashsalt": "r2med",
            "svg.fonttype": "none",  # text stays text: editable, searchable
            "pdf.fonttype": 42,
        }
    )
    return plt


def _gray(i: int, n: int) -> str:
    """A gray level per series, from light to dark (hatches tell them apart too)."""
    return str(round(0.85 - 0.6 * (i / max(n - 1, 1)), 3))


def _save(fig: Any, path: str | Path) -> Path:
    from ..infra.home import atomic_path

    fmt = figure_format(path)
    metadata = {"Date": None} if fmt in ("pdf", "svg") else {}
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format=fmt, dpi=DPI, bbox_inches="tight", metadata=metadata)
    import matplotlib.pyplot as plt

    plt.close(fig)
    return Path(path)


def _grouped_bars(
    ax: Any,
    groups: Sequence[str],
    series: Sequence[str],
    values: Mapping[str, Sequence[float | None]],
    published: Mapping[str, Sequence[float | None]] | None = None,
) -> None:
    width = 0.8 / max(len(series), 1)
    labelled = False
    for i, name in enumerate(series):
        xs = [g + (i - (len(series) - 1) / 2) * width for g in range(len(groups))]
        heights = [v if v is not None else 0.0 for v in values[name]]
        ax.bar(
            xs,
            heights,
            width,
            label=name,
            color=_gray(i, len(series)),
            edgecolor="black",
            linewidth=0.4,
            hatch=HATCHES[i % len(HATCHES)],
        )
        marks = (published or {}).get(name)
        if marks:
            pts = [(x, p) for x, p in zip(xs, marks) if p is not None]
            if pts:
                ax.scatter(
                    [x for x, _ in pts],
                    [p for _, p in pts],
                    marker="_",
                    s=60,
                    color="black",
                    linewidths=1.4,
                    zorder=3,
                    label=None if labelled else "published",
                )
                labelled = True
    ax.set_xticks(range(len(groups)))
    tilted = len(groups) > 3 or max(map(len, groups), default=0) > 10
    ax.set_xticklabels(groups, rotation=30 if tilted else 0, ha="right" if tilted else "center")
    ax.set_axisbelow(True)
    ax.grid(axis="y", linewidth=0.3, color="0.8")


def _width(bars: int) -> float:
    return ONE_COLUMN if bars <= 12 else TWO_COLUMNS


def plot_bars(board: Leaderboard, path: str | Path) -> Path:
    """Per-task bars (and the Average) of every system of ``board``; published figures as black ticks."""
    from .layout import short_task

    plt = _pyplot()
    rows = [r for r in board.rows if not r.reference]
    columns = board.columns
    fig, ax = plt.subplots(figsize=(_width(len(rows) * len(columns)), 2.2))
    values = {r.system: [r.cells[c].value for c in columns] for r in rows}
    published = {r.system: [r.cells[c].published for c in columns] for r in rows}
    _grouped_bars(ax, [short_task(c) for c in columns], [r.system for r in rows], values, published)
    ax.set_ylabel(f"{measure_label(board.measure)} (x100)")
    ax.legend(frameon=False, ncol=min(3, len(rows) + 1), loc="lower center", bbox_to_anchor=(0.5, 1.0))
    return _save(fig, path)


def plot_scatter(
    per_query: Mapping[str, Mapping[str, Mapping[str, float]]],
    x_system: str,
    y_system: str,
    measure: str,
    path: str | Path,
) -> Path:
    """Per-query values of two systems (``per_query``: system -> task -> query -> value), one marker per
    task, the diagonal dashed: points above it are queries ``y_system`` does better on."""
    plt = _pyplot()
    for name in (x_system, y_system):
        if name not in per_query:
            raise R2MedError(f"--systems: {name!r} is not one of the systems: {', '.join(per_query)}")
    tasks = [t for t in per_query[x_system] if t in per_query[y_system]]
    if not tasks:
        raise R2MedError(f"{x_system} and {y_system} share no task")
    fig, ax = plt.subplots(figsize=(ONE_COLUMN, ONE_COLUMN))
    ax.plot([0, 1], [0, 1], linestyle="--", color="0.5", linewidth=0.6)
    for i, task in enumerate(tasks):
        xs, ys = per_query[x_system][task], per_query[y_system][task]
        common = [q for q in xs if q in ys]
        ax.scatter(
            [xs[q] for q in common],
            [ys[q] for q in common],
            marker=MARKERS[i % len(MARKERS)],
            s=12,
            facecolors="none" if i % 2 else _gray(i, len(tasks)),
            edgecolors="black",
            linewidths=0.5,
            label=task,
        )
    ax.set_xlim(-0.02, 1.02)
    ax.set_ylim(-0.02, 1.02)
    ax.set_aspect("equal")
    label = measure_label(measure)
    ax.set_xlabel(f"{x_system} ({label})")
    ax.set_ylabel(f"{y_system} ({label})")
    if len(tasks) > 1:
        ax.legend(frameon=False, loc="upper left", markerscale=1.2)
    return _save(fig, path)


def plot_facets(facets: Facets, measure: str, path: str | Path) -> Path:
    """Bars per facet value (with its query count) for every system of ``facets``."""
    plt = _pyplot()
    groups = [f"{row.value} ({row.queries})" for row in facets.rows]
    values = {s: [100 * row.mean[s] if s in row.mean else None for row in facets.rows] for s in facets.systems}
    fig, ax = plt.subplots(figsize=(_width(len(groups) * len(facets.systems)), 2.2))
    _grouped_bars(ax, groups, facets.systems, values)
    ax.set_ylabel(f"{measure_label(measure)} (x100)")
    ax.set_xlabel(facets.by)
    ax.legend(frameon=False, ncol=min(3, len(facets.systems)), loc="lower center", bbox_to_anchor=(0.5, 1.0))
    return _save(fig, path)
