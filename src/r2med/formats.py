"""The output formats of r2med's commands (``--format``), as ``StrEnum`` s.

Kept out of :mod:`r2med.report` (whose package imports numpy) so that the CLI can show and check them while the
command line is parsed.  A member is the plain string (``ReportFormat.JSON == "json"``).
"""

from __future__ import annotations

from enum import StrEnum


class ReportFormat(StrEnum):
    """``r2med report`` / ``compare``: a terminal table, Markdown, CSV, LaTeX or JSON."""

    TABLE = "table"
    MARKDOWN = "markdown"
    CSV = "csv"
    LATEX = "latex"
    JSON = "json"


#: Short names accepted for a :class:`ReportFormat`.
REPORT_FORMAT_ALIASES: dict[str, ReportFormat] = {"md": ReportFormat.MARKDOWN, "tex": ReportFormat.LATEX}


class ListingFormat(StrEnum):
    """``r2med tasks`` / ``models`` / ``cache`` / ``reproduce``: a terminal table or JSON."""

    TABLE = "table"
    JSON = "json"


class ScoreFormat(StrEnum):
    """``r2med score``: trec_eval's lines or JSON."""

    TREC = "trec"
    JSON = "json"
