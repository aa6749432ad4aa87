"""What the command line shows: the consoles, tables that fit the terminal (80 columns when not on one), JSON,
output files.  Progress of long steps is :mod:`r2med.infra.progress` (drawn on :data:`err_console`).

Every command renders through here; the decisions are the jobs' (:mod:`r2med.jobs`).  Text shown
never reaches the terminal with its control or bidi characters raw (U+202E would reorder the line):
:func:`printable` writes them as ``\\u202e``; the consoles apply it to every string they render, and
the log handler (:class:`PrintableFilter`) and JSON output do too.
"""

from __future__ import annotations

import json
import logging
import sys
import unicodedata
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console, HighlighterType, JustifyMethod, OverflowMethod, RenderableType
from rich.markup import escape
from rich.style import Style
from rich.text import Text

from ..measures import Measure

if TYPE_CHECKING:
    from rich.table import Table

    from ..evaluation.metrics import Metrics
    from ..results.folders import Summary, TaskResult

_KEPT = frozenset("\n\t")


def _unsafe(ch: str) -> bool:
    return ch not in _KEPT and unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp")


def printable(text: str) -> str:
    """``text`` with control, format (bidi: U+202E, U+2066...) and line/paragraph separator characters
    written as escapes (``\\x1b``, ``\\u202e``); new lines and tabs kept."""
    if text.isprintable():
        return text
    return "".join(ch.encode("unicode_escape").decode("ascii") if _unsafe(ch) else ch for ch in text)


class PrintableConsole(Console):
    """A rich console that shows every string it renders (plain, markup, table cells) through :func:`printable`."""

    def render_str(
        self,
        text: str,
        *,
        style: str | Style = "",
        justify: JustifyMethod | None = None,
        overflow: OverflowMethod | None = None,
        emoji: bool | None = None,
        markup: bool | None = None,
        highlight: bool | None = None,
        highlighter: HighlighterType | None = None,
    ) -> Text:
        return super().render_str(
            printable(text),
            style=style,
            justify=justify,
            overflow=overflow,
            emoji=emoji,
            markup=markup,
            highlight=highlight,
            highlighter=highlighter,
        )


def PrintableFilter() -> logging.Filter:
    """A log filter that writes control and bidi characters of a message as escapes (see :func:`printable`)."""
    from ..infra.redact import MessageFilter

    return MessageFilter(printable)


#: Emoji codes off: a text that holds ``:dog:`` or ``nothere.py:X:`` (a path, a spec, a message) is printed
#: as written.  Markup stays on for r2med's own styling; every text from the user, a file or a docstring is
#: passed through :func:`rich.markup.escape` (and ``--help`` is plain click text: ``rich_markup_mode=None``).
console = PrintableConsole(emoji=False)
err_console = PrintableConsole(stderr=True, emoji=False)


def print_notes(lines: Sequence[str]) -> None:
    """What a command left out or wants the reader to know beside its output, one ``note:`` line each, on
    stderr (so stdout stays the table or file asked for); each line printed as written."""
    for line in dict.fromkeys(lines):
        err_console.print(f"[yellow]note:[/] {escape(line)}", highlight=False, soft_wrap=True)


def table_console() -> Console:
    """The console for tables: wide enough when stdout is not a terminal (pipes, files, CI logs)."""
    return console if console.is_terminal else PrintableConsole(width=max(console.width, 160), emoji=False)


#: Width of ``--wide`` tables: nothing is wrapped or shortened.
WIDE = 1000


def fit_console(wide: bool = False) -> Console:
    """The console tables are fitted to: the terminal's width (80 columns when stdout is not a terminal,
    or ``$COLUMNS``); ``--wide``: as wide as the table wants."""
    return PrintableConsole(width=WIDE, emoji=False) if wide else console


#: the console script's name (pyproject.toml ``[project.scripts]``), as suggested commands start
COMMAND = "r2med"


def print_next(label: str, *command: object) -> None:
    """A suggested next command: ``label`` on one line, then the command alone on its own line, never wrapped by
    r2med (the terminal may fold it, but no line break lands inside an option), arguments shell-quoted so it
    can be pasted."""
    import shlex

    parts = [str(part) for part in command]
    if parts[:1] == [COMMAND]:  # as the user can run it from here: `.venv/bin/r2med` when no venv is activated
        parts[:1] = program()
    console.print(escape(label), highlight=False)
    console.print(escape(shlex.join(parts)), highlight=False, soft_wrap=True)


def program(argv0: str | None = None, path: str | None = None) -> list[str]:
    """How to run this r2med again from the current folder, the words of a command line: ``r2med`` when that
    name on ``PATH`` is the script running now; else the script's path (``.venv/bin/r2med`` after ``make demo``
    without an activated venv: relative when it lies under the current folder); ``python -m r2med`` run as a
    module (the running interpreter); ``r2med`` run by that bare name.  ``argv0``/``path``: ``sys.argv[0]``
    and ``PATH`` (for tests)."""
    import os
    import shutil

    argv0 = sys.argv[0] if argv0 is None else argv0

    def shown(p: str) -> str:
        full = Path(p).absolute()
        try:
            rel = full.relative_to(Path.cwd())
        except ValueError:
            return str(full)
        return str(rel) if "/" in str(rel) else f"./{rel}"

    if Path(argv0).name in ("__main__.py", "-m"):
        return [shown(sys.executable) if os.sep in sys.executable else sys.executable, "-m", "r2med"]
    if os.sep not in argv0:  # run by its name, found on PATH
        return ["r2med"]
    found = shutil.which("r2med", path=path)
    if found is not None and os.path.realpath(found) == os.path.realpath(argv0):
        return ["r2med"]
    return [shown(argv0)]


def print_fitted(*tables: RenderableType | Callable[[int], RenderableType], wide: bool = False) -> None:
    """Tables printed to fit :func:`fit_console` (each may be one table, or a function of the width
    returning the layout that fits it: :func:`r2med.report.layout.fitted`)."""
    target = fit_console(wide)
    for table in tables:
        target.print(table(target.width) if callable(table) else table)


def print_with_paths(
    layout: Callable[[bool], Table], paths: Sequence[tuple[str, str]], label: str, wide: bool = False
) -> None:
    """A table whose last column is a path: whole when it fits (or ``--wide``); else the table without that
    column and one ``LABEL TASK: PATH`` line per row under it, so a path is never cut."""
    from ..report.layout import table_width

    target = fit_console(wide)
    full = layout(True)
    if wide or table_width(full) <= target.width:
        target.print(full)
        return
    target.print(layout(False))
    for task, path in paths:
        target.print(escape(f"{label} {task}: {path}"), highlight=False, soft_wrap=True)


def print_json(data: object) -> None:
    """``--format json``: one JSON document on stdout (plain text, never styled)."""
    import typer

    typer.echo(printable(json.dumps(data, indent=1, ensure_ascii=False)))  # escapes only occur inside strings


def check_json_format(fmt: str, json_alias: bool, choices: Sequence[str] = ("table", "json")) -> str:
    """``--format`` (with the hidden ``--json`` alias of earlier versions) as one of ``choices``."""
    from ..errors import R2MedError

    fmt = "json" if json_alias else fmt.lower()
    if fmt not in choices:
        raise R2MedError(f"unknown --format {fmt!r}; choose from: {', '.join(choices)}")
    return fmt


def emit(text: str, output: Path | None) -> None:
    """``text`` to stdout, or written atomically to ``output``."""
    import typer

    from ..infra.containment import check_output_file
    from ..infra.home import write_text_atomic

    if output is None:
        typer.echo(printable(text), nl=False)
        return
    check_output_file(output, "--output")
    output.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(output, text)
    console.print(f"written: {escape(str(output))}")


def print_summary(
    results: Sequence[TaskResult],
    summary: Summary,
    folder: Path | None = None,
    title: str | None = None,
    measures: Sequence[Measure] | None = None,
) -> None:
    """A job's summary table (:func:`r2med.report.summary.summary_table`: a column per measure, nDCG@10 by
    default), its precision note, where results are."""
    from ..report.judgments import judgment_lines
    from ..report.layout import fitted
    from ..report.summary import precision_note, summary_table, ungraded_notes
    from ..report.ties import tie_lines

    print_fitted(
        fitted(
            lambda: summary_table(results, summary, measures=measures, title=title),
            lambda: summary_table(results, summary, measures=measures, title=title, compact=True),
        )
    )
    note = precision_note(summary)
    if note:
        console.print(f"[yellow]{escape(note)}[/]")
    for line in ungraded_notes(summary):
        console.print(f"[yellow]{escape(line)}[/]")
    for line in tie_lines(results, measures):
        console.print(f"[yellow]{escape(line)}[/]", soft_wrap=True)
    for line in judgment_lines(results):
        console.print(f"[yellow]{escape(line)}[/]", soft_wrap=True)
    if folder is not None:
        console.print(f"results: {escape(str(folder))}")


def print_tie_line(metrics: Metrics) -> None:
    """``r2med score``'s line on stderr when ties decide a measure it printed (stdout stays trec_eval's lines)."""
    from ..evaluation.ties import tie_line

    line = tie_line(metrics.ties, metrics.measures)
    if line is not None:
        sys.stdout.flush()  # after the lines on stdout, where both reach one terminal
        err_console.print(f"[yellow]{escape(line)}[/]", soft_wrap=True, highlight=False)
