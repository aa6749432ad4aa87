"""Issue 39 item 9: the pictures of a study that mixes R2MED and BRIGHT, checked as drawn -- the HTML page and the
bars figure opened in headless Chromium (tests/test_html_report.py's driver), the page's layout measured there and
its screenshot taken at 1,400 px.

The rules: panels that compare share one axis (x100, round ticks); the Average panel only when it holds values; the
"all tasks" scatter colours each task; nothing overflows sideways at 1,400 px; the title names the benchmarks shown;
"Average" everywhere (never "Avg"); the bars figure marks what ``compare`` finds significant.  References: the
values written into the run folders (the axis top and each bar's length are computed here from them), the page's
own DOM geometry.
"""

from __future__ import annotations

import random
import re
import struct
from pathlib import Path

import pytest

from conftest import run_r2med, unavailable
from r2med.report.ticks import nice_ticks
from r2med.runs.run import write_task_results
from test_html_report import BROWSER_MISSING, Browser

R2MED_TASKS = [
    "Biology", "Bioinformatics", "Medical-Sciences", "MedXpertQA-Exam",
    "MedQA-Diag", "PMC-Treatment", "PMC-Clinical", "IIYi-Clinical",
]  # fmt: skip
BRIGHT_TASKS = [
    f"bright:{t}"
    for t in (
        "biology", "earth_science", "economics", "psychology", "robotics", "stackoverflow", "sustainable_living",
        "leetcode", "pony", "aops", "theoremqa_theorems", "theoremqa_questions",
    )
]  # fmt: skip
QUERIES = 12
FILLS = "return Array.from(document.querySelectorAll('#scatter-svg circle.pt')).map(c => c.getAttribute('fill'))"


def _values(seed: int, tasks: list[str]) -> dict[str, dict[str, float]]:
    """Per-query nDCG@10 as a reasoning benchmark gives them: many queries at 0 or 1, the rest between."""
    rng = random.Random(seed)
    return {t: {f"q{i}": rng.choice([0.0, 0.0, 1.0, round(rng.random(), 3)]) for i in range(QUERIES)} for t in tasks}


def _write(root: Path, name: str, values: dict[str, dict[str, float]]) -> None:
    for task, per_query in values.items():
        payload = {
            "task": task,
            "retriever": name,
            "config": {"retriever": "bm25", "flavour": "standard", "queries": "plain"},
            "aggregate": {"ndcg_cut_10": sum(per_query.values()) / len(per_query)},
            "per_query": {q: {"ndcg_cut_10": v} for q, v in per_query.items()},
        }
        run = {q: {"d1": 2.0, "d2": 1.0} for q in per_query}
        write_task_results(root / name / task.replace(":", "-"), run, payload, tag=name)


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """A combined study: one system on all 20 tasks, one on R2MED's 8, one on BRIGHT's 12 (a long name too)."""
    root = tmp_path_factory.mktemp("study")
    bm25 = _values(2, R2MED_TASKS)
    lifted = {t: {q: min(1.0, v + 0.5) for q, v in per_query.items()} for t, per_query in bm25.items()}
    systems = {  # the first is well above bm25 on every query it can be: significant on each R2MED task
        "my-reasoning-retriever-v2": {**lifted, **_values(1, BRIGHT_TASKS)},
        "bm25": bm25,
        "bm25-bright": _values(3, BRIGHT_TASKS),
    }
    for name, values in systems.items():
        _write(root / "all", name, values)
    for name in ("bm25", "bm25-bright"):  # no system has every task: no Average anywhere
        _write(root / "partial", name, systems[name])
    pages = {}
    for which in ("all", "partial"):
        page = root / f"{which}.html"
        res = run_r2med("report", str(root / which), "--html", str(page))
        assert res.returncode == 0, res.stderr
        pages[which] = page
    figure = root / "bars.svg"
    pytest.importorskip("matplotlib")
    res = run_r2med("plot", str(root / "all"), "-b", "my-reasoning-retriever-v2", "-o", str(figure))
    assert res.returncode == 0, res.stderr
    return {"root": root, "systems": systems, "pages": pages, "figure": figure}


def _panels(text: str) -> list[tuple[str, str]]:
    """(title, axis top) of every bar panel of a page."""
    return re.findall(r'<svg class="bars"[^>]*aria-label="([^"]+)" data-axis-max="([^"]+)"', text)


def test_one_axis_across_the_panels_and_the_average_only_with_values(study):
    systems = study["systems"]
    text = study["pages"]["all"].read_text(encoding="utf-8")
    panels = _panels(text)
    # each benchmark's Average, then the table's (issue 39 item 5: an Average per benchmark in every format)
    assert [t for t, _ in panels] == [*R2MED_TASKS, *BRIGHT_TASKS, "Average R2MED", "Average BRIGHT", "Average"]
    top = max(100 * sum(v.values()) / QUERIES for tasks in systems.values() for v in tasks.values())
    axis = nice_ticks(0.0, top, 4)[-1]  # from the written values, on the x100 scale the table shows
    assert {float(m) for _, m in panels} == {axis}  # before: each panel its own axis, the Average 0-1
    partial = _panels(study["pages"]["partial"].read_text(encoding="utf-8"))
    titles = [t for t, _ in partial]  # each system has one benchmark's tasks: their Averages hold values, the
    assert "Average" not in titles and titles[20:] == ["Average R2MED", "Average BRIGHT"]  # table's none (empty before)


def test_the_title_names_the_benchmarks_shown(study):
    text = study["pages"]["all"].read_text(encoding="utf-8")
    assert "<title>R2MED and BRIGHT results</title>" in text and "<h1>R2MED and BRIGHT results</h1>" in text
    res = run_r2med("report", str(study["root"] / "all" / "bm25-bright"), "--html", str(study["root"] / "b.html"))
    bright = (study["root"] / "b.html").read_text()
    assert res.returncode == 0 and "<h1>BRIGHT results</h1>" in bright
    # where the texts come from: never a --data-dir for a BRIGHT task
    note = re.search(r'<p class="note">(.*?)</p>', bright).group(1)
    assert "<code>--hub</code>" in note and "--data-dir" not in note
    assert "<code>--data-dir</code> (your collections) and <code>--hub</code>" in text


def test_the_bars_figure_says_average_and_marks_significance(study):
    svg = study["figure"].read_text(encoding="utf-8")
    assert "Average" in svg and "Avg" not in svg
    assert "†" in svg and re.search(r'id="sig:[^"]+"', svg) and "differs from my-reasoning-retriever-v2" in svg


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


@pytest.fixture
def browser(tmp_path):
    if BROWSER_MISSING:
        unavailable(BROWSER_MISSING)
    b = Browser(tmp_path / "chrome-profile")
    yield b
    b.close()


def test_the_page_in_chromium_at_1400_px(study, browser, tmp_path):
    browser.get(study["pages"]["all"].as_uri())
    assert [e for e in browser.console() if e.get("level") == "SEVERE"] == []
    width = browser.js("return window.innerWidth")
    assert width == 1400
    # no horizontal overflow: the page is no wider than the window (the wide leaderboard scrolls in its own box)
    assert browser.js("return document.documentElement.scrollWidth") <= width
    assert browser.js("return document.body.scrollWidth") <= width
    # one axis: a bar's drawn length over its value is the same in every panel (measured on screen)
    ratios = browser.js(
        "return Array.from(document.querySelectorAll('svg.bars rect')).map(r => "
        "r.getBoundingClientRect().width / parseFloat(r.querySelector('title').textContent.split(': ')[1]))"
    )
    finite = [r for r in ratios if r == r and r not in (float("inf"),)]
    assert len(finite) > 40 and max(finite) - min(finite) < 0.02 * max(finite)
    last_ticks = browser.js(
        "return Array.from(document.querySelectorAll('svg.bars')).map(s => "
        "Array.from(s.querySelectorAll('text.tick')).map(t => t.textContent).join(' '))"
    )
    assert len(set(last_ticks)) == 1
    # the all-tasks scatter of bm25 against the system on every task: a colour per task, a legend naming each
    # by default, y is the next system that ran a task of the first (bm25-bright shares none of bm25's)
    assert browser.js(
        "return [document.getElementById('scatter-x').value, document.getElementById('scatter-y').value]"
    ) == ["bm25", "my-reasoning-retriever-v2"]
    browser.click('#scatter-x option[value="bm25"]')
    browser.click('#scatter-y option[value="my-reasoning-retriever-v2"]')
    browser.click('#scatter-task option[value="__all__"]')
    fills = browser.js(FILLS)
    keys = browser.js("return Array.from(document.querySelectorAll('#scatter-legend .key')).map(k => k.dataset.task)")
    assert len(fills) == len(R2MED_TASKS) * QUERIES  # the tasks both ran
    assert len(set(fills)) == len(R2MED_TASKS) and keys == R2MED_TASKS  # before: one colour
    browser.click('#scatter-task option[value="Biology"]')
    assert len(set(browser.js(FILLS))) == 1  # one task: the system's colour
    assert browser.js("return document.querySelectorAll('#scatter-legend .key').length") == 0
    # the screenshot: the page as a reader sees it, 1,400 px wide, with the bar panels in view
    browser.js("document.getElementById('sec-bars').scrollIntoView()")
    shot = tmp_path / "study.png"
    browser.screenshot(shot)
    assert _png_size(shot)[0] == width
    assert browser.js("return document.documentElement.scrollWidth") <= width


def test_the_bars_figure_in_chromium(study, browser):
    """The figure as a browser draws it: every label inside the image (no text cut at its edges)."""
    browser.get(study["figure"].as_uri())
    box = browser.js("const s = document.querySelector('svg').getBBox(); return [s.x, s.y, s.width, s.height]")
    texts = browser.js(
        "return Array.from(document.querySelectorAll('text')).map(t => { const b = t.getBBox(); "
        "return [t.textContent, b.x, b.y, b.width, b.height]; })"
    )
    assert any(t[0] == "Average" for t in texts) and any("†" in t[0] for t in texts)
    x0, _, w, _ = box
    for text, x, _, tw, _ in texts:
        assert x >= x0 - 1 and x + tw <= x0 + w + 1, text
