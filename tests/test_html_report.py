"""The HTML report: self-contained, and working in headless Chromium (driven over chromedriver's W3C HTTP API).

Needs the Debian packages ``chromium`` and ``chromium-driver`` (``.ci/run`` installs them); when either is
missing the browser tests skip with that reason -- and fail with it under ``CI=true``
(:func:`conftest.unavailable`), so a CI run never loses the only real-browser check without a word.
"""

from __future__ import annotations

import base64
import json
import re
import shutil
import socket
import subprocess
import threading
import urllib.request
from pathlib import Path
from typing import IO

import pytest

from conftest import unavailable
from r2med.data.loaders import load_folder
from r2med.expansion.precomputed import ExpansionQueries
from r2med.jobs.evaluate import Plan, run_task
from r2med.jobs.report import expansion_texts, task_texts
from r2med.measures import Measure
from r2med.report import build_leaderboard
from r2med.report.html import write_html
from r2med.results.folders import find_systems as load_systems
from r2med.runs.run import read_trec
from r2med.steps import EvaluateStep
from test_report import QUERIES, make_runs

HYDOC = {
    "q1": "insulin and potassium for ketoacidosis",
    "q2": "corticosteroids for asthma",
    "q3": "amoxicillin for community acquired pneumonia",
    "q4": "triptans for migraine",
}

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
BROWSER_MISSING = (
    None
    if CHROMIUM and CHROMEDRIVER
    else "headless browser test needs Debian packages chromium and chromium-driver "
    f"(missing: {', '.join(n for n, p in (('chromium', CHROMIUM), ('chromedriver', CHROMEDRIVER)) if not p)}; "
    "apt-get install chromium chromium-driver)"
)


@pytest.fixture
def needs_browser():
    """Skip (fail under CI=true) when the browser or its driver is missing."""
    if BROWSER_MISSING:
        unavailable(BROWSER_MISSING)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("html_runs")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("R2MED_HOME", str(root / "home"))
        # the hand-written Biology counts as the hub task (its published counts patched), so bm25's cell is graded
        # and the page shows published figures (the HyDE system's local expansion file is not the hub's: issue 30)
        from dataclasses import replace

        from r2med.data.tasks import TASKS
        from test_report import DOCS

        mp.setitem(TASKS, "Biology", replace(TASKS["Biology"], queries=len(QUERIES), docs=len(DOCS)))
        out, data = make_runs(root)
        # a third system: BM25 with HyDE expansions from a reasoning LLM (its trace must be stripped)
        exp = data / "Biology" / "hyde" / "r1-qwen-32b"
        exp.mkdir(parents=True)
        (exp / "query_with_hydoc.jsonl").write_text(
            "".join(
                json.dumps({"id": q, "text": t, "hy_doc": f"<think>secret reasoning {q}</think> {HYDOC[q]}"}) + "\n"
                for q, t in QUERIES.items()
            )
        )
        run_task(
            load_folder(data / "Biology"),
            Plan(EvaluateStep.of("bm25", top_k=10), "bm25+hyde-r1-qwen-32b", ExpansionQueries("hyde", "r1-qwen-32b")),
            out / "bm25+hyde-r1-qwen-32b",
        )
        systems = load_systems([out])
        board = build_leaderboard(systems)
        texts = task_texts(board.tasks, data)
        page = write_html(
            root / "report.html", systems, collections=texts, board=board, expansions=expansion_texts(systems, texts)
        )
        bare = write_html(root / "bare.html", systems, board=board)
    return {"out": out, "data": data, "page": page, "bare": bare, "board": board}


def _embedded(page: Path) -> dict:
    text = page.read_text(encoding="utf-8")
    m = re.search(r'<script id="report-data" type="application/json">(.*?)</script>', text, re.S)
    return json.loads(m.group(1))


def test_page_is_self_contained(built):
    text = built["page"].read_text(encoding="utf-8")
    assert "<link" not in text and not re.search(r"<script[^>]+src=", text)
    urls = set(re.findall(r"https?://[^\s\"'<>)]+", text))
    assert urls <= {"http://www.w3.org/2000/svg"}, urls
    data = _embedded(built["page"])
    assert data["systems"] == ["bm25", "bm25+hyde-r1-qwen-32b", "bm25-standard"]
    # the inspector gets the expansion as the retriever used it: reasoning trace stripped
    assert data["queries"]["Biology"]["q3"]["expansion"] == {"bm25+hyde-r1-qwen-32b": HYDOC["q3"]}
    assert "expansion" not in data["queries"]["MedQA-Diag"]["q3"]
    assert data["queries"]["Biology"]["q1"]["text"] == "treatment of diabetic ketoacidosis with insulin"
    assert data["queries"]["Biology"]["q2"]["gold"] == [["d5", 2], ["d4", 1]]
    assert text.count('<svg class="bars"') == 3  # two tasks + average
    bare = _embedded(built["bare"])
    assert "text" not in bare["queries"]["Biology"]["q1"] and bare["hasTexts"] == {
        "Biology": False,
        "MedQA-Diag": False,
    }


def test_counts_hint_and_round_ticks(built, tmp_path):
    from r2med.report.ticks import nice_ticks, tick_labels

    text = built["page"].read_text(encoding="utf-8")
    assert "3 systems · 2 tasks" in text
    assert "black ticks: published figures" in text  # bm25 is matched to its published row
    data = _embedded(built["page"])
    top = max(v for tasks in data["perQuery"].values() for values in tasks.values() for v in values.values())
    # the scatter is x100, as the bars and the leaderboard (the page says so on both axes)
    assert data["scatterScale"] == 100
    assert data["scatterTicks"] == nice_ticks(0, 100 * top, 5) and data["scatterTicks"][-1] >= 100 * top
    labels = re.findall(r'class="tick">([^<]+)<', text)
    assert labels and all(len(label.split(".")[-1]) <= 1 or label.endswith(("0", "5")) for label in labels)
    # one system on one task, no published figures: no plural slip, no hint about ticks that are not there
    from test_report import write_collection

    coll = load_folder(write_collection(tmp_path / "data", "mine"))
    run_task(coll, EvaluateStep.of("bm25-standard", top_k=10), tmp_path / "runs" / "solo")
    systems = load_systems([tmp_path / "runs"])
    page = write_html(tmp_path / "solo.html", systems, board=build_leaderboard(systems)).read_text(encoding="utf-8")
    assert "1 system · 1 task ·" in page and "1 tasks" not in page and "1 systems" not in page
    assert "black ticks" not in page and "Bars: this report's systems, every panel on one axis (nDCG@10 x100)." in page
    bars = re.findall(r'class="tick">([^<]+)<', page)
    value = build_leaderboard(systems).rows[0].cells["mine"].value
    assert bars == 2 * tick_labels(nice_ticks(0, value, 4))  # the task's chart and the Average's


def test_facet_selector_in_the_page(tmp_path):
    """`report --by`: the page's per-group tables, one per facet, the asked one shown first."""
    from r2med.jobs.report import facet_collections, html_facets
    from test_report import write_collection

    data = tmp_path / "data"
    folder = write_collection(data, "Biology")
    rows = [json.loads(line) for line in (folder / "query.jsonl").read_text().splitlines()]
    systems_of = ["respiratory", "respiratory", "endocrine", "endocrine"]
    (folder / "query.jsonl").write_text(
        "".join(
            json.dumps({**r, "body_system": b}) + "\n" for r, b in zip(sorted(rows, key=lambda r: r["id"]), systems_of)
        )
    )
    coll = load_folder(folder)
    run_task(coll, EvaluateStep.of("bm25", top_k=10), tmp_path / "runs" / "bm25")
    systems = load_systems([tmp_path / "runs"])
    collections = facet_collections(systems)  # the source the run recorded
    facets = html_facets(systems, Measure.parse("ndcg_cut_10"), collections, by="body_system")
    assert list(facets) == ["scenario", "body_system"]
    page = write_html(
        tmp_path / "f.html",
        systems,
        collections=collections,
        board=build_leaderboard(systems),
        facets=facets,
        facet="body_system",
    ).read_text(encoding="utf-8")
    assert '<option value="body_system" selected>' in page
    shown = re.findall(r'<div class="facet" data-key="([^"]+)"( hidden)?>', page)
    assert shown == [("scenario", " hidden"), ("body_system", "")]
    per_query = systems[0].tasks["Biology"].scores(Measure.parse("ndcg_cut_10"))
    ids = sorted(per_query)
    respiratory = 100 * (per_query[ids[0]] + per_query[ids[1]]) / 2
    assert f"<td class=sys>respiratory</td><td>2</td><td>{respiratory:.2f}</td>" in page
    if BROWSER_MISSING:
        unavailable(BROWSER_MISSING)  # the checks above ran; the browser part below cannot
    else:  # the selector switches tables; the scatter's axis labels are round
        from r2med.report.ticks import tick_labels

        b = Browser(tmp_path / "chrome-profile")
        try:
            b.get((tmp_path / "f.html").as_uri())
            visible = (
                "return Array.from(document.querySelectorAll('div.facet')).filter(d => !d.hidden)"
                ".map(d => d.dataset.key)"
            )
            assert b.js(visible) == ["body_system"]
            b.click('#facet-key option[value="scenario"]')
            assert b.js(visible) == ["scenario"]
            axis = b.js("return Array.from(document.querySelectorAll('#scatter-svg text')).map(t => t.textContent)")
            ticks = _embedded(tmp_path / "f.html")["scatterTicks"]
            assert axis[: 2 * len(ticks) : 2] == tick_labels(ticks)
            assert sum(t.endswith("(nDCG@10 x100)") for t in axis) == 2  # both axes say the scale
            assert [e for e in b.console() if e.get("level") == "SEVERE"] == []
        finally:
            b.close()


class Browser:
    """A minimal W3C WebDriver client for chromedriver (urllib only)."""

    def __init__(self, user_data: Path):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        self.proc = subprocess.Popen(
            [CHROMEDRIVER, f"--port={port}"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
        )
        listening = threading.Event()

        def watch(lines: IO[str]) -> None:  # chromedriver says so once it listens; read on so it never blocks
            for line in lines:
                if "started successfully" in line:
                    listening.set()

        assert self.proc.stdout is not None
        threading.Thread(target=watch, args=(self.proc.stdout,), daemon=True).start()
        if not listening.wait(timeout=30):
            self.proc.kill()
            raise RuntimeError(f"{CHROMEDRIVER} did not start listening on port {port} within 30 s")
        self.base = f"http://127.0.0.1:{port}"
        args = [
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            f"--user-data-dir={user_data}",
            "--window-size=1400,1800",
        ]
        caps = {
            "capabilities": {
                "alwaysMatch": {
                    "browserName": "chrome",
                    "goog:loggingPrefs": {"browser": "ALL"},
                    "goog:chromeOptions": {"binary": CHROMIUM, "args": args},
                }
            }
        }
        self.sid = self._call("POST", "/session", caps)["sessionId"]

    def _call(self, method: str, path: str, body: dict | None = None):
        req = urllib.request.Request(
            self.base + path,
            method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(req, timeout=60) as r:
            return json.loads(r.read())["value"]

    def s(self, method: str, path: str, body: dict | None = None):
        return self._call(method, f"/session/{self.sid}{path}", body)

    def get(self, url: str) -> None:
        self.s("POST", "/url", {"url": url})

    def js(self, script: str, *args):
        return self.s("POST", "/execute/sync", {"script": script, "args": list(args)})

    def click(self, css: str) -> None:
        element = self.s("POST", "/element", {"using": "css selector", "value": css})
        self.s("POST", f"/element/{next(iter(element.values()))}/click", {})

    def text(self, css: str) -> str:
        element = self.s("POST", "/element", {"using": "css selector", "value": css})
        return self.s("GET", f"/element/{next(iter(element.values()))}/text")

    def console(self) -> list[dict]:
        return self.s("POST", "/se/log", {"type": "browser"})

    def screenshot(self, path: Path) -> None:
        path.write_bytes(base64.b64decode(self.s("GET", "/screenshot")))

    def close(self) -> None:
        try:
            self.s("DELETE", "")
        finally:
            self.proc.terminate()
            self.proc.wait(timeout=10)


@pytest.fixture
def browser(tmp_path, needs_browser):
    b = Browser(tmp_path / "chrome-profile")
    yield b
    b.close()


def _row_order(browser: Browser) -> list[str]:
    return browser.js(
        "return Array.from(document.querySelectorAll('#leaderboard tbody tr'))"
        ".map(r => r.cells[0].getAttribute('data-value'))"
    )


def test_report_in_headless_chromium(built, browser, tmp_path):
    board = built["board"]
    browser.get(built["page"].as_uri())
    assert browser.js("return typeof window.r2medReport") == "object"
    errors = [e for e in browser.console() if e.get("level") == "SEVERE"]
    assert errors == []

    # sorting: a click on the MedQA-Diag header sorts descending, a second click ascending
    values = {r.system: r.cells["MedQA-Diag"].value for r in board.rows if r.cells["MedQA-Diag"].value is not None}
    assert len(values) == 2 and len(set(values.values())) == 2
    browser.click('#leaderboard th[data-col="2"]')
    assert _row_order(browser) == sorted(values, key=lambda s: -values[s]) + ["bm25+hyde-r1-qwen-32b"]  # empty last
    browser.click('#leaderboard th[data-col="2"]')
    assert _row_order(browser) == sorted(values, key=lambda s: values[s]) + ["bm25+hyde-r1-qwen-32b"]
    browser.click('#leaderboard th[data-col="0"]')
    assert _row_order(browser)[0] == "bm25"

    # scatter: one point per query both systems answered (bm25+hyde ran Biology only)
    assert browser.js("return document.querySelectorAll('#scatter-svg circle.pt').length") == 4
    browser.click('#scatter-y option[value="bm25-standard"]')
    assert browser.js("return document.querySelectorAll('#scatter-svg circle.pt').length") == 16

    # the inspector shows a chosen query: task, text, gold docs with their ranks in each system
    browser.click('#inspect-task option[value="MedQA-Diag"]')
    browser.click('#inspect-task option[value="Biology"]')
    browser.click('#inspect-query option[value="q3"]')
    assert browser.text("#inspect-title") == "Biology / q3"
    assert browser.text("#inspect-text") == "fever cough pneumonia antibiotic"
    gold_rows = browser.js(
        "return Array.from(document.querySelectorAll('#gold-table tr')).slice(1)"
        ".map(r => Array.from(r.cells).slice(0, 5).map(c => c.textContent))"
    )
    qrels = load_folder(built["data"] / "Biology").qrels["q3"]
    expected = []
    for doc in sorted(qrels, key=lambda d: (-qrels[d], d)):
        ranks = []
        for system in ("bm25", "bm25+hyde-r1-qwen-32b", "bm25-standard"):
            run = read_trec(built["out"] / system / "Biology" / "run.trec")["q3"]
            order = [d for d, _ in sorted(run.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)]
            ranks.append(str(order.index(doc) + 1) if doc in order else "–")
        expected.append([doc, str(qrels[doc]), *ranks])
    assert gold_rows == expected
    assert "Expansion used by bm25+hyde-r1-qwen-32b" in browser.text("#inspector")
    assert HYDOC["q3"] in browser.text("#inspector .exp") and "secret reasoning" not in browser.text("#inspector")
    marked = browser.js("return document.querySelectorAll('.sysrun tr.rel').length")
    assert marked == sum(1 for r in expected for rank in r[2:] if rank != "–" and int(rank) <= 10)

    # clicking a scatter point opens that query
    browser.js(
        'document.querySelector(\'#scatter-svg circle.pt[data-task="MedQA-Diag"][data-qid="q3"]\')'
        ".dispatchEvent(new MouseEvent('click', {bubbles: true}))"
    )
    assert browser.text("#inspect-title") == "MedQA-Diag / q3"
    browser.js("document.getElementById('sec-board').scrollIntoView()")
    shot = tmp_path / "report.png"
    browser.screenshot(shot)
    assert shot.stat().st_size > 10_000
    assert [e for e in browser.console() if e.get("level") == "SEVERE"] == []
    # the console channel really reports errors (so the empty lists above mean something)
    browser.js("console.error('probe')")
    assert any("probe" in e.get("message", "") for e in browser.console())


def test_report_without_texts_degrades_to_ids(built, browser):
    browser.get(built["bare"].as_uri())
    assert [e for e in browser.console() if e.get("level") == "SEVERE"] == []
    assert "query text unavailable" in browser.text("#inspect-text")
    assert browser.js("return document.querySelectorAll('.sysrun').length") == 3


# -- data that looks like the template's placeholders; malformed links ---------------------------------

HOSTILE_QUERIES = {
    "q1": "insulin {{BARS}} ketoacidosis",
    "q2": "asthma {{DATA}} children </script>",
    "q3": "fever {{JS}} {{TITLE}} pneumonia",
    "q4": "headache {{LEADERBOARD}}",
}


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    from test_report import QRELS, write_collection

    root = tmp_path_factory.mktemp("hostile_html")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("R2MED_HOME", str(root / "home"))
        data = root / "data"
        write_collection(data, "Biology", queries=HOSTILE_QUERIES, qrels=QRELS)
        coll = load_folder(data / "Biology")
        for name in ("bm25", "{{BARS}}"):
            run_task(coll, EvaluateStep.of("bm25", top_k=10), root / "runs" / name)
    systems = load_systems([root / "runs"])
    board = build_leaderboard(systems)
    page = write_html(
        root / "report.html", systems, collections=task_texts(board.tasks, data), board=board, title="{{META}} title"
    )
    return {"page": page, "board": board}


def test_placeholders_in_the_data_stay_text(hostile):
    text = hostile["page"].read_text(encoding="utf-8")
    data = _embedded(hostile["page"])  # still one well-formed JSON block
    assert {q: e["text"] for q, e in data["queries"]["Biology"].items()} == HOSTILE_QUERIES
    assert data["systems"] == ["bm25", "{{BARS}}"] and data["title"] == "{{META}} title"
    assert text.count('<script id="report-data"') == 1
    assert text.count('<svg class="bars"') == len(hostile["board"].columns)
    assert text.count("r2medReport") == 1  # the script was inserted once, not again inside the data
    assert "<title>{{META}} title</title>" in text


def test_fill_template_is_one_pass():
    from r2med.report.html import fill_template

    assert fill_template("{{A}}|{{B}}", {"{{A}}": "{{B}}", "{{B}}": "x"}) == "{{B}}|x"
    with pytest.raises(ValueError, match="C"):
        fill_template("{{C}}", {})


def test_report_with_hostile_data_and_a_malformed_link(hostile, browser):
    browser.get(hostile["page"].as_uri() + "#q=%E0%A4%A")
    assert browser.js("return typeof window.r2medReport") == "object"
    assert [e for e in browser.console() if e.get("level") == "SEVERE"] == []
    assert browser.text("#inspect-title") == "Biology / q1"  # the default query is shown
    assert browser.text("#inspect-text") == HOSTILE_QUERIES["q1"]
    assert browser.js("return document.querySelectorAll('#leaderboard tbody tr').length") == 2
    browser.get(hostile["page"].as_uri() + "#q=Biology/q3")
    browser.js("location.reload()")
    assert browser.text("#inspect-title") == "Biology / q3"
    assert [e for e in browser.console() if e.get("level") == "SEVERE"] == []


def test_malformed_link_hash_opens_the_default_query(built, browser):
    browser.get(built["page"].as_uri() + "#q=%E0%A4%A")
    assert [e for e in browser.console() if e.get("level") == "SEVERE"] == []
    assert browser.js("return typeof window.r2medReport") == "object"
    assert browser.text("#inspect-title").startswith("Biology / ")
