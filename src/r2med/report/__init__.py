"""Results you can show: tables and the HTML page (what they show is found by :mod:`r2med.jobs`).

* :mod:`.board` -- the leaderboard as a type: systems x tasks with published deltas, every average over one
  stated set (the table's tasks);
* :mod:`.leaderboard` -- its renderers: terminal, Markdown, CSV, JSON (``render_board``);
* :mod:`.compare` -- per-task and pooled paired significance tests against a baseline;
* :mod:`.html` -- one self-contained HTML page (sortable table, inline SVG charts, per-query inspector);
* :mod:`.summary` -- the table a job prints (tasks x measure, published figure, delta);
* :mod:`.reproduce` -- the reproduction matrix's tables;
* :mod:`.latex` -- the leaderboard as a paper's booktabs table (best bold, second underlined);
* :mod:`.multi` -- several measures in one report (a table per measure, in every format);
* :mod:`.plot` -- paper figures with matplotlib (bars, per-query scatter, facet bars);
* :mod:`.show` -- one query in a terminal or notebook: its text, judged documents, each system's top k;
* :mod:`.format` -- formats, marks and escaping shared by the renderers.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from .format import FORMATS

if TYPE_CHECKING:  # pragma: no cover
    from .board import Leaderboard, build_leaderboard
    from .compare import Comparison, compare_many, compare_systems, render_comparisons
    from .leaderboard import render_board

_LAZY = {
    "Comparison": "compare",
    "compare_many": "compare",
    "compare_systems": "compare",
    "render_comparisons": "compare",
    "Leaderboard": "board",
    "build_leaderboard": "board",
    "render_board": "leaderboard",
}


def __getattr__(name: str) -> object:  # the names are typed by the imports above
    """The renderers import numpy: loaded on first use, so ``--format``'s choices cost nothing at start-up."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{module}", __name__), name)


__all__ = [
    "FORMATS",
    "Comparison",
    "Leaderboard",
    "build_leaderboard",
    "compare_many",
    "compare_systems",
    "render_board",
    "render_comparisons",
]
