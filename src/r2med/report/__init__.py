"""Results you can show: leaderboards against the published figures, paired comparisons, HTML, reproduction.

* :mod:`.systems` -- run folders as systems, matched to published configurations;
* :mod:`.leaderboard` -- systems x tasks tables with published deltas (terminal, Markdown, CSV, LaTeX, JSON);
* :mod:`.compare` -- per-task and pooled paired significance tests against a baseline;
* :mod:`.html` -- one self-contained HTML page (sortable table, inline SVG charts, per-query inspector);
* :mod:`.reproduce` -- the reproduction matrix over the published configurations.
"""

from __future__ import annotations

from .compare import Comparison, compare_many, compare_systems, render_comparisons
from .leaderboard import FORMATS, Leaderboard, build_leaderboard
from .systems import PublishedKey, System, load_systems, match_published, parse_label

__all__ = [
    "FORMATS", "Comparison", "Leaderboard", "PublishedKey", "System", "build_leaderboard", "compare_many",
    "compare_systems", "load_systems", "match_published", "parse_label", "render_comparisons",
]
