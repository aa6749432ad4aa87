"""Text shared by the report renderers: the output formats of every command (``--format``, as ``StrEnum`` s:
a member is the plain string, ``ReportFormat.JSON == "json"``), cell marks, LaTeX escaping.

Imported while the command line is parsed (the choices of ``--format``): no numpy here, and the ``report``
package imports its renderers lazily."""

from __future__ import annotations

import csv
import io
import json
import unicodedata
from collections.abc import Mapping, Sequence
from enum import StrEnum

from ..errors import R2MedError


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


FORMATS: tuple[ReportFormat, ...] = tuple(ReportFormat)
SIGNIFICANT = "†"
FLAG = "!"
#: Added to the tolerance of a system that ran in another precision than the paper's code (``--dtype``):
#: its row stays matched to the published one, with a wider band.
NONPAPER_PRECISION_EXTRA = 1.0
#: A cell without a value, in every renderer (tables, the HTML page, figures): a gap, never a zero.
GAP = "n/a"

_TEX = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "±": r"$\pm$",
    "†": r"$^\dagger$",
    "◇": r"$^{\diamond}$",
    "‡": r"$^\ddagger$",
    "¶": r"\textsuperscript{\P}",
    # OT1, LaTeX's default font encoding, prints these as other glyphs (¡, ¿, an em dash) and the backquote as an
    # opening quote: each is written as the command that prints it
    "<": r"\textless{}",
    ">": r"\textgreater{}",
    "|": r"\textbar{}",
    "`": r"\textasciigrave{}",
}

_MD = {"|": "\\|", "&": "&amp;", "<": "&lt;", ">": "&gt;", "`": "\\`"}


def md(text: str) -> str:
    """A Markdown table cell's text: ``|`` escaped (a system named ``a|b`` keeps the table's columns), the HTML
    specials as entities (a system named ``<script>`` is text, never markup, wherever the Markdown is shown) and the
    backquote escaped (never a code span).  Control and bidi characters are shown by :func:`visible`."""
    return "".join(_MD.get(ch, ch) for ch in visible(text))


def tex(text: str) -> str:
    """``text`` with LaTeX's special characters escaped (control and bidi characters shown by :func:`visible`)."""
    return "".join(_TEX.get(ch, ch) for ch in visible(text))


def _shown_char(ch: str) -> str:
    return f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}" if ord(ch) < 0x10000 else f"\\U{ord(ch):08x}"


def visible(text: str, keep: str = "") -> str:
    """``text`` for a terminal or a document: every control, format (bidi overrides such as U+202E, zero-width
    characters) and line/paragraph separator character written as its escape (``\\u202e``), so what is shown is
    what the text holds -- a query id can neither reorder the line it is printed in nor hide its characters.
    ``keep``: characters left as they are (a query's text keeps its newlines and tabs)."""
    if text.isascii() and text.isprintable():
        return text
    return "".join(_shown_char(ch) if unicodedata.category(ch) in _HIDDEN and ch not in keep else ch for ch in text)


_HIDDEN = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"})


def tex_row(cells: Sequence[str]) -> str:
    """One tabular row of (already escaped) cells, ended by ``\\\\``.  A row that starts with ``[`` or ``*``
    gets ``{}`` in front: after the previous row's ``\\\\`` (or a booktabs rule) LaTeX would read it as that
    command's optional argument or star (a system named ``[bold]z`` stops pdflatex with "Missing number")."""
    first = cells[0] if cells else ""
    if first.startswith(("[", "*")):
        first = "{}" + first
    return " & ".join([first, *cells[1:]]) + r" \\"


def tex_note(lines: Sequence[str]) -> str:
    """A table's note: ``lines`` (plain text, escaped here) as a small-type paragraph set under its ``tabular``,
    so what the marks mean is printed with the table (not hidden in ``%`` comments a reader of the PDF never
    sees).  Empty without lines."""
    if not lines:
        return ""
    body = "\n".join(r"\noindent " + tex(line) + r"\par" for line in lines)
    return "\\par\\smallskip\n{\\footnotesize\n" + body + "\n}\n"


def check_format(fmt: str) -> ReportFormat:
    """A format name (``md`` and ``tex`` accepted), or a one-line error listing :data:`FORMATS`."""
    name = fmt.lower()
    if name in REPORT_FORMAT_ALIASES:
        return REPORT_FORMAT_ALIASES[name]
    try:
        return ReportFormat(name)
    except ValueError:
        raise R2MedError(f"unknown format {name!r}; choose from: {', '.join(FORMATS)}") from None


def records_text(
    records: Sequence[Mapping[str, object]], fmt: str, fields: Sequence[str] | None = None, blank_none: bool = False
) -> str:
    """Records as JSON (a list) or CSV (a header, then one line per record; ``None`` as an empty cell
    with ``blank_none``)."""
    if fmt == "json":
        return json.dumps(list(records), indent=1) + "\n"
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(fields or (records[0] if records else [])), lineterminator="\n")
    writer.writeheader()
    for r in records:
        writer.writerow({k: "" if v is None else v for k, v in r.items()} if blank_none else r)
    return buf.getvalue()
