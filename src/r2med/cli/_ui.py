"""What the command line shows: the consoles, progress bars, tables printed wide enough, output files.

Every command renders through here; the decisions are the jobs' (:mod:`r2med.jobs`).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

console = Console()
err_console = Console(stderr=True)


def task_progress(*extra: Any) -> Progress:
    """A transient bar: description (task names shown as text, never read as markup), done/total, time."""
    return Progress(TextColumn("{task.description}", style="bold", markup=False), BarColumn(),
                    TextColumn("{task.completed}/{task.total}"), *extra, TimeElapsedColumn(), console=console,
                    transient=True)


@contextlib.contextmanager
def job_events(label: str, total: int) -> Iterator[Any]:
    """A bar over ``total`` tasks, driven by a job's ``events(task, stage)`` callback (yielded)."""
    with task_progress() as progress:
        bar = progress.add_task(label, total=total)

        def events(task: str, stage: str) -> None:
            if stage == "done":
                progress.advance(bar)
            else:
                progress.update(bar, description=f"{label} · {task}: {stage}")

        yield events


class LLMBar:
    """A bar of LLM requests with done / failed / retried counts and token usage (thread-safe updates)."""

    def __init__(self, progress: Progress, client: Any, label: str, total: int):
        self.progress, self.client = progress, client
        self.done = self.failed = self.retried = 0
        self.lock = threading.Lock()
        self.task = progress.add_task(label, total=total, stats="")

    def _refresh(self) -> None:
        u = self.client.usage
        self.progress.update(self.task, stats=f"ok {self.done} · failed {self.failed} · retried {self.retried} · "
                                              f"tokens {u.prompt_tokens:,} in / {u.completion_tokens:,} out")

    def result(self, _key: Any, res: Any) -> None:
        """Count one finished item: an LLM ``Result`` or a plain success flag."""
        ok = res if isinstance(res, bool) else res.ok
        with self.lock:
            if ok:
                self.done += 1
            else:
                self.failed += 1
            self.progress.advance(self.task)
            self._refresh()

    def retry(self, _error: str) -> None:
        with self.lock:
            self.retried += 1
            self._refresh()

    def describe(self, text: str) -> None:
        self.progress.update(self.task, description=text)


@contextlib.contextmanager
def llm_bar(label: str, total: int, client: Any) -> Iterator[LLMBar]:
    with task_progress(TextColumn("{task.fields[stats]}", markup=False)) as progress:
        yield LLMBar(progress, client, label, total)


def table_console() -> Console:
    """The console for tables: wide enough when stdout is not a terminal (pipes, files, CI logs)."""
    return console if console.is_terminal else Console(width=max(console.width, 160))


def emit(text: str, output: Path | None) -> None:
    """``text`` to stdout, or written atomically to ``output``."""
    import typer

    from ..cache import write_text_atomic
    from ..paths import check_output_file

    if output is None:
        typer.echo(text, nl=False)
        return
    check_output_file(output, "--output")
    output.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(output, text)
    console.print(f"written: {escape(str(output))}")


def print_summary(results: Sequence[Any], summary: Any, folder: Path | None = None, title: str | None = None) -> None:
    """A job's summary table (:func:`r2med.report.summary.summary_table`), its precision note, where results are."""
    from ..report.summary import precision_note, summary_table

    console.print(summary_table(results, summary, title=title))
    note = precision_note(summary)
    if note:
        console.print(f"[yellow]{escape(note)}[/]")
    if folder is not None:
        console.print(f"results: {escape(str(folder))}")
