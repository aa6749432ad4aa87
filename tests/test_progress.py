"""Progress: the non-terminal log lines (fake clock, hand-computed figures), quiet, nesting, threads, rich rows."""

from __future__ import annotations

import io
import logging
import subprocess
import sys
import threading

import pytest

from r2med.infra import progress


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now

    def at(self, seconds: float) -> None:
        self.now = 100.0 + seconds


@pytest.fixture(autouse=True)
def _fresh():
    progress.reset()
    yield
    progress.reset()
    assert progress._display is None


@pytest.fixture
def clock():
    c = Clock()
    progress.configure(mode="log", clock=c)
    return c


def _lines(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "r2med.infra.progress"]


def test_log_lines_every_step_and_interval(clock, caplog):
    caplog.set_level(logging.INFO, logger="r2med.infra.progress")
    with progress.task("encoding docs", total=100, unit="docs", counters=("cached",)) as p:
        clock.at(1.0)
        p.advance(5)  # 5%, 1 s: nothing due
        clock.at(2.0)
        p.advance(5)  # 10% reached, 2 s since start: a line
        clock.at(3.0)
        p.advance(5, cached=3)  # still the 10% step, 1 s since the last line: nothing
        clock.at(12.5)
        p.advance(1)  # 10.5 s since the last line: a line
        clock.at(13.0)
    assert _lines(caplog) == [
        "encoding docs: 10/100 (10.0%), 5.00 docs/s, ETA 18 s, 0 cached",  # 10 in 2 s; 90 left at 5/s
        "encoding docs: 16/100 (16.0%), 1.28 docs/s, ETA 66 s, 3 cached",  # 16/12.5 s; 84/1.28 = 65.6 s
        "encoding docs: 16/100 (16.0%), 1.23 docs/s, took 13 s, 3 cached",  # closing line: 16/13 s
    ]
    assert all(r.levelno == logging.INFO for r in caplog.records if r.name == "r2med.infra.progress")


def test_the_figures_of_one_line(clock):
    with progress.task("encoding docs", total=61379, unit="docs", counters=("cached",)) as p:
        clock.at(4096 / 812)
        p.advance(4096)
        assert p.line() == "encoding docs: 4,096/61,379 (6.7%), 812 docs/s, ETA 71 s, 0 cached"
        assert p.eta == pytest.approx((61379 - 4096) / 812)
        p.describe("encoding docs (Biology)")
        p.set_total(None)
        assert p.line() == "encoding docs (Biology): 4,096 docs, 812 docs/s, 0 cached"


def test_short_steps_print_nothing_and_errors_say_so(clock, caplog):
    caplog.set_level(logging.INFO, logger="r2med.infra.progress")
    with progress.task("quick", total=3) as p:
        for i in range(3):
            clock.at(0.5 * (i + 1))
            p.advance()
    assert _lines(caplog) == []
    with pytest.raises(RuntimeError), progress.task("reranking", total=10, unit="queries") as p:  # starts at 1.5 s
        clock.at(5.5)
        p.advance(4)
        raise RuntimeError("boom")
    assert _lines(caplog) == [
        "reranking: 4/10 (40.0%), 1.00 queries/s, ETA 6.0 s",
        "reranking: 4/10 (40.0%), 1.00 queries/s, took 4.0 s (stopped by an error)",
    ]


def test_counters_add_and_gauges_set(clock):
    with progress.task("expansion requests", total=10, unit="requests", counters=("failed", "retrying")) as p:
        p.advance(2, failed=1)
        p.count(failed=1)
        p.set(retrying=3)
        p.advance(1)
        p.set(retrying=0)
    assert (p.done, p.counters) == (3, {"failed": 2, "retrying": 0})


def test_quiet_silences_everything_but_keeps_counts(clock, caplog):
    caplog.set_level(logging.INFO, logger="r2med.infra.progress")
    progress.set_quiet()
    assert progress.is_quiet()
    with progress.task("bm25 index", total=10, unit="docs") as p:
        for i in range(10):
            clock.at(20.0 * (i + 1))
            p.advance()
    assert _lines(caplog) == [] and p.done == 10
    progress.set_quiet(False)
    with progress.task("bm25 index", total=10, unit="docs") as p:
        clock.at(300.0)
        p.advance(10)
    assert len(_lines(caplog)) == 2


def test_nested_steps_log_on_their_own(clock, caplog):
    caplog.set_level(logging.INFO, logger="r2med.infra.progress")
    with progress.task("tasks", total=2, unit="tasks") as outer:
        for n, name in enumerate(("Biology", "MedQA-Diag")):
            with progress.task(f"{name}: encoding", total=4, unit="docs") as inner:
                assert inner.parent is outer and progress._current() is inner
                clock.at(10.0 * n + 5.0)
                inner.advance(4)
            assert progress._current() is outer
            outer.advance()
    assert progress._current() is None
    lines = _lines(caplog)
    assert lines[:2] == [
        "Biology: encoding: 4/4 (100.0%), 0.80 docs/s, ETA 0.0 s",
        "Biology: encoding: 4/4 (100.0%), 0.80 docs/s, took 5.0 s",
    ]
    assert "tasks: 1/2 (50.0%), 0.20 tasks/s, ETA 5.0 s" in lines
    assert lines[-1] == "tasks: 2/2 (100.0%), 0.13 tasks/s, took 15 s"
    assert outer.done == 2


def test_advance_from_many_threads(caplog):
    progress.configure(mode="log", interval_s=0.0, min_gap_s=0.0)  # a line at every call: lock and log race
    caplog.set_level(logging.INFO, logger="r2med.infra.progress")
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        with progress.task("listwise", total=8 * 2000, unit="windows", counters=("failed",)) as p:

            def work():
                for _ in range(2000):
                    p.advance(1, failed=1)

            threads = [threading.Thread(target=work) for _ in range(8)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
    finally:
        sys.setswitchinterval(old)
    assert (p.done, p.counters["failed"]) == (16000, 16000)
    assert _lines(caplog)[-1].startswith("listwise: 16,000/16,000 (100.0%)")


def test_track_and_durations(clock):
    assert list(progress.track(range(5), "retrieving", unit="queries")) == [0, 1, 2, 3, 4]
    assert [progress.duration(s) for s in (0.25, 12.4, 71, 725, 7380)] == [
        "0.2 s",
        "12 s",
        "71 s",
        "12 min 05 s",
        "2 h 03 min",
    ]
    with pytest.raises(ValueError, match="progress mode"):
        progress.configure(mode="loud")


def test_terminal_display_nests_rows_and_goes_away(clock):
    from rich.console import Console

    buffer = io.StringIO()
    progress.configure(mode="auto", console=Console(file=buffer, force_terminal=True, width=120))
    with progress.task("tasks", total=2, unit="tasks") as outer:
        assert len(progress._display.tasks) == 1
        with progress.task("encoding", total=8, unit="docs", counters=("cached",)) as inner:
            clock.at(2.0)
            inner.advance(4, cached=1)
            rows = {t.description: t for t in progress._display.tasks}
            assert set(rows) == {"tasks", "  encoding"}
            row = rows["  encoding"]
            assert (row.completed, row.total) == (4, 8)
            assert row.fields["counters"] == "1 cached" and row.fields["rate"] == "2.00 docs/s"
            assert row.fields["eta"] == "ETA 2.0 s"
        assert [t.description for t in progress._display.tasks] == ["tasks"]
        outer.advance()
    assert progress._display is None
    assert "encoding" in buffer.getvalue()


def test_not_a_terminal_means_log_lines(caplog):
    from rich.console import Console

    progress.configure(console=Console(file=io.StringIO(), force_terminal=False))
    with progress.task("x", total=1) as p:
        assert p._mode == "log" and progress._display is None
    progress.set_quiet()
    with progress.task("x", total=1) as p:
        assert p._mode == "off"


def test_importing_progress_loads_no_scientific_stack():
    """Every retriever and reranker imports the progress module: it costs rich (the command line's own, imported at
    the top since issue 35's imports-at-the-top), never numpy, torch, transformers or an HTTP client."""
    wanted = ("numpy", "torch", "transformers", "httpx2", "httpx")
    code = f"import sys, r2med.infra.progress; print([m for m in {wanted!r} if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
