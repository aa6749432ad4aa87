"""The ``r2med`` command line: arguments -> one :mod:`r2med.jobs` call -> rendering (:mod:`._ui`, :mod:`r2med.report`).

Each group of commands lives in its own module (``core``: tasks/evaluate/demo/score; ``models``;
``cache``; ``expand``; ``rerank``: rerank/fuse; ``report``: report/compare/reproduce/plot; ``encode``:
encode; ``export``; ``experiment``: run; ``show``: show); every module registers its commands on the shared
``app``.  Errors the user can fix (:class:`r2med.errors.R2MedError`) print one line and exit with code 2.
Every text shown is printed as written: help is click's plain text (no rich markup), and the consoles
(:mod:`._ui`) read no emoji codes.
"""

from __future__ import annotations

import importlib
import logging
import sys
from types import FrameType
from typing import TYPE_CHECKING

import typer
from rich.logging import RichHandler
from rich.markup import escape
from typer.core import TyperGroup, TyperOption

from ..errors import R2MedError
from ._ui import PrintableFilter, console, err_console

if TYPE_CHECKING:  # the click typer builds on (typer 0.29 carries its own copy: typer._click)
    from typer._click import Command, Context, HelpFormatter

#: The logging options of ``r2med`` itself, also taken after a command's name (``r2med evaluate ... -q``).
GLOBAL_FLAGS = ("-q", "--quiet", "-v", "--verbose")


def _as_flag(param: object) -> None:
    if isinstance(param, TyperOption) and param.is_flag and param.metavar is None:
        param.metavar = ""


def show_flags_as_flags(command: object) -> None:
    """On/off options (``--help`` too) are listed as ``--overwrite``, not ``--overwrite <bool>`` (typer's default)."""
    if command is None or getattr(command, "_r2med_flags_shown", False):
        return
    for param in getattr(command, "params", []):
        _as_flag(param)
    help_option = command.get_help_option  # type: ignore[attr-defined]

    def get_help_option(ctx: typer.Context) -> object:
        option = help_option(ctx)
        _as_flag(option)
        return option

    command.get_help_option = get_help_option  # type: ignore[attr-defined]
    command._r2med_flags_shown = True  # type: ignore[attr-defined]
    for subcommand in getattr(command, "commands", {}).values():  # a group of commands (``cache ls|rm``)
        show_flags_as_flags(subcommand)


class R2MedGroup(TyperGroup):
    """The ``r2med`` group: ``-q``/``-v`` mean quiet/verbose wherever they are on the command line, and flags
    show as flags in every help page."""

    def parse_args(self, ctx: Context, args: list[str]) -> list[str]:
        end = args.index("--") if "--" in args else len(args)
        hoisted = [a for a in args[:end] if a in GLOBAL_FLAGS]
        rest = [a for a in args[:end] if a not in GLOBAL_FLAGS]
        show_flags_as_flags(self)
        return super().parse_args(ctx, hoisted + rest + args[end:])

    def get_command(self, ctx: Context, cmd_name: str) -> Command | None:
        command = super().get_command(ctx, cmd_name)
        show_flags_as_flags(command)
        return command

    def format_commands(self, ctx: Context, formatter: HelpFormatter) -> None:
        """The commands with the first sentence of their help, whole (wrapped to the terminal, never cut with
        "...": click cuts it to the line's width)."""
        rows = []
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, command.get_short_help_str(limit=10_000)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


app = typer.Typer(
    cls=R2MedGroup,
    name="r2med",
    help="R2MED benchmark toolkit: load tasks, retrieve, expand, rerank, evaluate like trec_eval, report.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # help texts are printed as written (click's formatter: `[data]`, `[[retrievers]]`, `r2med[plot]` and
    # `:x:` are text, never rich markup or emoji codes), wrapped to the terminal, never cut with "…"
    rich_markup_mode=None,
)
#: Modules that register commands on ``app`` (one per concept).
COMMAND_MODULES = [
    "core",
    "report",
    "show",
    "expand",
    "models",
    "rerank",
    "encode",
    "export",
    "experiment",
    "cache",
    "serve",
]


def _print_version(value: bool) -> None:
    if value:
        from ..version import __version__

        console.print(f"r2med {__version__}")
        raise typer.Exit()


#: The environment variable holding ``r2med --strict``'s default (read once, by the CLI only).
STRICT_ENV = "R2MED_STRICT"


def strict_from_environment() -> bool:
    """``$R2MED_STRICT`` set to 1/true/yes/on: the default of ``r2med --strict``."""
    import os

    return os.environ.get(STRICT_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def strict_data(ctx: typer.Context, strict: bool = False) -> bool:
    """Whether this command's data readers refuse repeated ids: its own ``--strict``, or ``r2med --strict``
    (default ``$R2MED_STRICT``).  The answer is passed down as the ``strict`` parameter of the jobs and
    loaders (and travels with each :class:`~r2med.data.TaskRef` to workers)."""
    settings = ctx.find_root().obj
    return strict or bool(isinstance(settings, dict) and settings.get("strict"))


def enable_random_init(ctx: typer.Context) -> None:
    """``--allow-random-init``: models whose checkpoints lack tensors load anyway, those tensors random (for
    tests with tiny random models; :mod:`r2med.infra.weights`).  Through the environment, so worker processes
    inherit it; restored when the command ends."""
    import os

    from ..infra.weights import ALLOW_ENV

    before = os.environ.get(ALLOW_ENV)
    os.environ[ALLOW_ENV] = "1"

    def restore() -> None:
        if before is None:
            os.environ.pop(ALLOW_ENV, None)
        else:
            os.environ[ALLOW_ENV] = before

    ctx.call_on_close(restore)


@app.callback()
def _main(
    ctx: typer.Context,
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Show debug logging."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Only warnings and errors (no progress)."),
    version: bool = typer.Option(
        False, "--version", callback=_print_version, is_eager=True, help="Print the version and exit."
    ),
    strict: bool = typer.Option(
        False,
        "--strict",
        help="Refuse data files with repeated ids or judgments (default: keep the last, as the paper's loader).",
    ),
    allow_random_init: bool = typer.Option(
        False,
        "--allow-random-init",
        help="Load models whose checkpoint lacks tensors, leaving them random (for tests; default: refused).",
    ),
) -> None:
    ctx.obj = {**(ctx.obj or {}), "strict": strict or strict_from_environment()}
    if allow_random_init:
        enable_random_init(ctx)
    level = logging.DEBUG if verbose else logging.WARNING if quiet else logging.INFO
    if err_console.is_terminal:
        handler: logging.Handler = RichHandler(console=err_console, show_path=False, markup=False)
        handler.setFormatter(logging.Formatter("%(message)s", datefmt="[%X]"))
    else:  # logs piped to a file stay one line per message
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
    from ..infra.redact import RedactingFilter

    handler.addFilter(RedactingFilter())
    handler.addFilter(PrintableFilter())
    logging.basicConfig(level=level, handlers=[handler], force=True)
    for noisy in (
        "httpx",
        "httpx2",
        "urllib3",
        "filelock",
        "huggingface_hub",
        "sentence_transformers",
        "faiss",
        "fontTools",
        "matplotlib",
    ):
        logging.getLogger(noisy).setLevel(max(level, logging.WARNING))
    from ..infra import progress

    # one progress display for every long step, on stderr beside the log records; -q silences it
    progress.configure(console=err_console)
    progress.set_quiet(quiet)
    progress.quiet_library_bars()  # no library's own bars in a log file (issue 39)


for _module in COMMAND_MODULES:
    importlib.import_module(f"{__name__}.{_module}")


def _on_interrupt(signum: int, frame: FrameType | None) -> None:
    err_console.print("interrupted: finished tasks are kept, and a re-run resumes from them")
    raise KeyboardInterrupt


def main() -> None:
    import signal

    from ..infra.input_files import forget_streams

    signal.signal(signal.SIGINT, _on_interrupt)
    forget_streams()  # a stream given as an input is read once per command
    try:
        app()
    except R2MedError as exc:
        _error(str(exc))
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        sys.exit(130)
    except BrokenPipeError:  # output piped into `head` and the like: not an error
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(141)
    except OSError as exc:
        _error(os_error_line(exc))
        sys.exit(R2MedError.exit_code)


def os_error_line(exc: OSError) -> str:
    """An OSError as one line naming the path(s): ``out/bm25: Not a directory``."""
    from ..infra.redact import redact_urls

    reason = exc.strerror or type(exc).__name__
    if exc.filename is not None:
        where = str(exc.filename) + (f" -> {exc.filename2}" if exc.filename2 is not None else "")
        return f"{where}: {reason}"
    return redact_urls(" ".join(str(exc).split()) or reason)


def _error(message: str) -> None:
    """One line on stderr; the message is printed as text, never read as markup."""
    from ..errors import MAX_ERROR_CHARS, bounded
    from ..infra.redact import redact_urls

    # redacted before it is cut (a cut URL could hide where its query starts); only the head of a huge one
    head = redact_urls(message[: 4 * MAX_ERROR_CHARS])
    one_line = bounded(head, total=len(message) if len(head) > MAX_ERROR_CHARS else None)
    one_line = one_line.replace("\r", "\\r").replace("\n", "\\n")
    err_console.print(f"[bold red]error:[/] {escape(one_line)}", highlight=False, markup=True, soft_wrap=True)
