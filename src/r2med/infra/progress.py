"""Progress of long steps (indexing, encoding, reranking, LLM requests): one API, two displays, one quiet switch.

::

    from r2med.infra import progress

    with progress.task("encoding docs", total=len(docs), unit="docs", counters=("cached",)) as p:
        for batch in batches:
            ...
            p.advance(len(batch), cached=hits)      # thread-safe; extra keywords add to counters

* **Terminal** (stderr is a terminal, or the console given to :func:`configure` is): a rich display,
  one row per active task -- description, bar, done/total, rate, ETA, counters.  Tasks nest (an
  outer loop over tasks, an inner encoding step): inner rows go when their step ends, the display
  when the outermost task ends.
* **Not a terminal** (logs piped to a file, CI): one-line ``logging`` INFO messages from the
  ``r2med.infra.progress`` logger, at most every ``interval_s`` seconds (10) and at every ``step`` of the
  total (10%) when ``min_gap_s`` (2 s) has passed since the last line, plus a closing line for a step
  that took ``min_gap_s`` or more (or printed a line)::

      encoding docs: 4096/61379 (6.7%), 812 docs/s, ETA 71 s, 0 cached

* **Quiet** (:func:`set_quiet`, the CLI's ``-q``): nothing is shown or logged; counts are still kept.

Counters are totals (``failed=1`` adds one); :meth:`Progress.set` sets a value instead (e.g. the
number of requests retrying right now).  rich (a dependency of the command line's) is imported with the module,
at its top (issue 35); the scientific stack is not: importing this module loads no numpy, torch or HTTP client.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TypeVar

from huggingface_hub import utils as hub_utils
from rich.console import Console
from rich.progress import BarColumn, TaskID, TextColumn
from rich.progress import Progress as RichProgress

log = logging.getLogger(__name__)

T = TypeVar("T")

MODES = ("auto", "rich", "log", "off")


@dataclass
class _Settings:
    quiet: bool = False
    mode: str = "auto"
    interval_s: float = 10.0
    step: float = 0.10
    min_gap_s: float = 2.0
    clock: Callable[[], float] = time.monotonic
    console: Console | None = None


_settings = _Settings()
_lock = threading.RLock()
_display: RichProgress | None = None  # the shared rich Progress while a terminal display is live
_active = 0  # tasks open in the display


def configure(
    *,
    quiet: bool | None = None,
    mode: str | None = None,
    interval_s: float | None = None,
    step: float | None = None,
    min_gap_s: float | None = None,
    clock: Callable[[], float] | None = None,
    console: Console | None = None,
) -> None:
    """Change the global settings (only those given): ``mode`` ``"auto"`` (rich on a terminal, else log
    lines), ``"rich"``, ``"log"`` or ``"off"``; log-line spacing; the clock (tests); the rich console
    to draw on (the CLI's stderr console, so log records and bars share it)."""
    if mode is not None and mode not in MODES:
        raise ValueError(f"progress mode {mode!r}; choose from {', '.join(MODES)}")
    for name, value in (
        ("quiet", quiet),
        ("mode", mode),
        ("interval_s", interval_s),
        ("step", step),
        ("min_gap_s", min_gap_s),
        ("clock", clock),
        ("console", console),
    ):
        if value is not None:
            setattr(_settings, name, value)


def reset() -> None:
    """Back to the defaults (tests)."""
    global _settings
    _settings = _Settings()


def set_quiet(quiet: bool = True) -> None:
    """Silence (or not) every progress display and progress log line."""
    _settings.quiet = quiet


def is_quiet() -> bool:
    """public: whether progress is silenced (:func:`set_quiet`, ``r2med -q``)."""
    return _settings.quiet


def _is_terminal() -> bool:
    if _settings.console is not None:
        return bool(getattr(_settings.console, "is_terminal", False))
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def _mode() -> str:
    if _settings.quiet or _settings.mode == "off":
        return "off"
    if _settings.mode == "auto":
        return "rich" if _is_terminal() else "log"
    return _settings.mode


#: huggingface_hub's switch for its progress bars, read when it is imported (transformers reads hub's switch too).
HUB_BARS_ENV = "HF_HUB_DISABLE_PROGRESS_BARS"


def quiet_library_bars() -> bool:
    """Where r2med's own display is not a terminal's (logs to a file, CI, ``-q``), turn off the bars other
    libraries draw by themselves (transformers' "Loading weights", huggingface_hub's downloads): a log then holds
    r2med's progress lines only, never a library's carriage-return bars.  A user's own
    ``HF_HUB_DISABLE_PROGRESS_BARS`` is left as set.  Returns whether the bars were turned off."""
    if _mode() == "rich" or HUB_BARS_ENV in os.environ:
        return False
    os.environ[HUB_BARS_ENV] = "1"  # for the libraries imported from now on, and for worker processes
    if "huggingface_hub" in sys.modules:
        hub_utils.disable_progress_bars()  # type: ignore[attr-defined]  # a call: off until enabled again
    if "transformers" in sys.modules:
        from transformers.utils import logging as transformers_logging

        transformers_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    return True


def duration(seconds: float) -> str:
    """``71 s``, ``12 min 05 s``, ``2 h 03 min``."""
    seconds = max(0.0, seconds)
    if seconds < 100:
        return f"{seconds:.0f} s" if seconds >= 10 else f"{seconds:.1f} s"
    minutes, secs = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {secs:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def _rate_text(rate: float, unit: str) -> str:
    if rate >= 100:
        return f"{rate:,.0f} {unit}/s"
    if rate >= 10:
        return f"{rate:.1f} {unit}/s"
    return f"{rate:.2f} {unit}/s"


class Progress:
    """One step's progress (made by :func:`task`); :meth:`advance` may be called from any thread."""

    def __init__(
        self,
        description: str,
        total: int | None,
        unit: str,
        counters: Iterable[str],
        mode: str,
        parent: Progress | None,
    ):
        self.description = description
        self.total = total
        self.unit = unit
        self.done = 0
        self.counters: dict[str, int] = {name: 0 for name in counters}
        self.parent = parent
        self._mode = mode
        self._lock = threading.Lock()
        self.started = _settings.clock()
        self._last_line = self.started
        self._last_step = 0
        self._lines = 0
        self._rich_id: TaskID | None = None

    # -- figures ---------------------------------------------------------------------------------
    @property
    def elapsed(self) -> float:
        return _settings.clock() - self.started

    @property
    def rate(self) -> float | None:
        """Items per second since the step started (None before any time has passed)."""
        elapsed = self.elapsed
        return self.done / elapsed if elapsed > 0 else None

    @property
    def eta(self) -> float | None:
        """Seconds left at the current rate (None without a total or a rate)."""
        rate = self.rate
        if self.total is None or not rate:
            return None
        return max(0, self.total - self.done) / rate

    def counter_text(self) -> str:
        return ", ".join(f"{value:,} {name}" for name, value in self.counters.items())

    def line(self, final: bool = False) -> str:
        """``encoding docs: 4096/61379 (6.7%), 812 docs/s, ETA 71 s, 0 cached``."""
        with self._lock:
            return self._line(final)

    def _count_text(self) -> str:
        return f"{self.done:,}/{self.total:,}" if self.total else f"{self.done:,} {self.unit}"

    def _line(self, final: bool = False) -> str:
        parts = [self._count_text() + (f" ({100 * self.done / self.total:.1f}%)" if self.total else "")]
        rate = self.rate
        if rate is not None and self.done:
            parts.append(_rate_text(rate, self.unit))
        if final:
            parts.append(f"took {duration(self.elapsed)}")
        else:
            eta = self.eta
            if eta is not None:
                parts.append(f"ETA {duration(eta)}")
        if self.counters:
            parts.append(self.counter_text())
        return f"{self.description}: " + ", ".join(parts)

    # -- updates ---------------------------------------------------------------------------------
    def advance(self, n: int = 1, **counters: int) -> None:
        """``n`` more items done; keywords add to counters (``cached=12``, ``failed=1``)."""
        self._update(n, counters, None)

    def count(self, **counters: int) -> None:
        """Add to counters without advancing (a retry, a cache hit counted apart)."""
        self._update(0, counters, None)

    def set(self, **values: int) -> None:
        """Set counters to values (gauges, e.g. ``retrying=3`` requests waiting to be retried)."""
        self._update(0, {}, values)

    def set_total(self, total: int | None) -> None:
        with self._lock:
            self.total = total
        self._draw()

    def describe(self, description: str) -> None:
        """A new description (``bm25 · Biology: retrieving``)."""
        with self._lock:
            self.description = description
        self._draw()

    def _update(self, n: int, add: dict[str, int], values: dict[str, int] | None) -> None:
        emit = None
        with self._lock:
            self.done += n
            for name, value in add.items():
                self.counters[name] = self.counters.get(name, 0) + value
            for name, value in (values or {}).items():
                self.counters[name] = value
            if self._mode == "log":
                emit = self._due()
        if emit:
            log.info("%s", emit)
        elif self._mode == "rich":
            self._draw()

    def _due(self) -> str | None:
        """The log line to print now, if one is due (called under the lock)."""
        now = _settings.clock()
        gap = now - self._last_line
        due = gap >= _settings.interval_s
        if not due and self.total and _settings.step > 0:
            step = math.floor(self.done / self.total / _settings.step + 1e-9)
            due = step > self._last_step and gap >= _settings.min_gap_s
        if not due:
            return None
        if self.total and _settings.step > 0:
            self._last_step = math.floor(self.done / self.total / _settings.step + 1e-9)
        self._last_line = now
        self._lines += 1
        return self._line()

    def _draw(self) -> None:
        if self._mode != "rich" or _display is None or self._rich_id is None:
            return
        with self._lock:
            count = self._count_text()
            rate = _rate_text(self.rate, self.unit) if self.rate and self.done else ""
            eta = f"ETA {duration(self.eta)}" if self.eta is not None else ""
            counters = self.counter_text()
            done, total, description = self.done, self.total, "  " * _depth(self) + self.description
        _display.update(
            self._rich_id,
            completed=done,
            total=total,
            description=description,
            count=count,
            rate=rate,
            eta=eta,
            counters=counters,
        )

    def _close(self, failed: bool) -> None:
        if self._mode == "log":
            with self._lock:
                long_enough = self._lines or self.elapsed >= _settings.min_gap_s
                text = self._line(final=True) if long_enough else None
            if text:
                log.info("%s%s", text, " (stopped by an error)" if failed else "")


_local = threading.local()


def _current() -> Progress | None:
    stack = getattr(_local, "stack", None)
    return stack[-1] if stack else None


def _rich_start() -> RichProgress:
    global _display
    if _display is None:
        console = _settings.console
        if console is None:
            console = Console(stderr=True)
        _display = RichProgress(
            TextColumn("{task.description}", style="bold", markup=False),
            BarColumn(),
            TextColumn("{task.fields[count]}", markup=False),
            TextColumn("{task.fields[rate]}", markup=False),
            TextColumn("{task.fields[eta]}", markup=False),
            TextColumn("{task.fields[counters]}", markup=False),
            console=console,
            transient=True,
        )
        _display.start()
    return _display


@contextlib.contextmanager
def task(
    description: str, total: int | None = None, unit: str = "items", counters: Iterable[str] = ()
) -> Iterator[Progress]:
    """Show the progress of one step while the block runs (see the module docstring).

    ``total``: items to do (None: unknown, no percentage or ETA); ``unit``: what an item is
    (``docs``, ``queries``, ``requests``); ``counters``: names shown from the start (at 0).
    A task opened inside another (same thread) is its child: nested rows on a terminal.
    """
    global _active, _display
    mode = _mode()
    parent = _current()
    p = Progress(description, total, unit, counters, mode, parent)
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    stack.append(p)
    if mode == "rich":
        with _lock:
            display = _rich_start()
            _active += 1
            p._rich_id = display.add_task(
                ("  " * _depth(p)) + description,
                total=total,
                count=p._count_text(),
                rate="",
                eta="",
                counters=p.counter_text(),
            )
    failed = False
    try:
        yield p
    except BaseException:
        failed = True
        raise
    finally:
        stack.remove(p)
        p._close(failed)
        if mode == "rich":
            with _lock:
                if _display is not None and p._rich_id is not None:
                    _display.remove_task(p._rich_id)
                _active -= 1
                if _active == 0 and _display is not None:
                    _display.stop()
                    _display = None


def _depth(p: Progress) -> int:
    depth, parent = 0, p.parent
    while parent is not None:
        depth, parent = depth + 1, parent.parent
    return depth


def track(items: Iterable[T], description: str, total: int | None = None, unit: str = "items") -> Iterator[T]:
    """``for item in track(items, "retrieving", unit="queries")``: advance by one per item."""
    if total is None:
        try:
            total = len(items)  # type: ignore[arg-type]
        except TypeError:
            total = None
    with task(description, total=total, unit=unit) as p:
        for item in items:
            yield item
            p.advance()
