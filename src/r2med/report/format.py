"""Text shared by the report renderers: output formats, cell marks, LaTeX escaping."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import R2MedError
from ..formats import REPORT_FORMAT_ALIASES, ReportFormat

FORMATS: tuple[ReportFormat, ...] = tuple(ReportFormat)
SIGNIFICANT = "†"
FLAG = "!"

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
}


def tex(text: str) -> str:
    """``text`` with LaTeX's special characters escaped."""
    return "".join(_TEX.get(ch, ch) for ch in text)


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
    records: Sequence[Mapping[str, Any]], fmt: str, fields: Sequence[str] | None = None, blank_none: bool = False
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
