"""Published rows by label across families (issue 39, item 2): BRIGHT's rows reachable from ``report
--with-published`` as R2MED's are, ``--published SYSTEM=LABEL`` working or refused in one line, and a delta beyond
its tolerance marked ``!`` in ``evaluate``'s table as in ``report``'s.

References: the figures CSVs read here with the csv module (``protocol/bright_published.csv``: BRIGHT's BM25 row of
the paper; ``protocol/r2med_published_ndcg10.csv``: R2MED's), the tolerance classes' table
(``infra/registry.py``'s ``TOLERANCES``: BM25 is ``lexical``), and each run's own ``metrics.json``.
"""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest

from bright_hub import bright_files, fill_bright_cache, have_shared_bright
from conftest import run_r2med

PROTOCOL = Path(__file__).resolve().parents[1] / "src" / "r2med" / "protocol"
DEMO = Path(__file__).resolve().parents[1] / "src" / "r2med" / "demo_data"


def csv_rows(name: str) -> list[dict[str, str]]:
    with open(PROTOCOL / name, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def brights_bm25(task: str) -> float:
    (row,) = [
        r
        for r in csv_rows("bright_published.csv")
        if (r["setting"], r["retriever"], r["queries"], r["reranker"], r["documents"], r["measure"], r["task"])
        == ("paper", "bm25", "original", "none", "short", "nDCG@10", task)
    ]
    return float(row["value"])


def r2meds_bm25_biology() -> float:
    """The paper's own BM25 figure on Biology (setting ``base``: the R2MED repository's results)."""
    (row,) = [
        r
        for r in csv_rows("r2med_published_ndcg10.csv")
        if (r["setting"], r["retriever"], r["expansion"], r["task"]) == ("base", "bm25", "none", "Biology")
    ]
    return float(row["ndcg10"])


@pytest.fixture
def bright_runs(hf_cache, tmp_path):
    if not have_shared_bright():
        pytest.skip("../shared/data/bright is not available")
    pytest.importorskip("pyarrow")
    fill_bright_cache(hf_cache, bright_files(("biology", "pony"), queries=3))
    out = tmp_path / "out"
    res = run_r2med("evaluate", "-r", "bm25", "--tasks", "bright:biology,bright:pony", "-o", str(out))
    assert res.returncode == 0, res.stderr
    return out


def test_with_published_bm25_on_brights_tasks_shows_brights_bm25(bright_runs):
    tasks = "bright:biology,bright:pony"
    res = run_r2med("report", str(bright_runs), "--with-published", "bm25", "--format", "json", "--tasks", tasks)
    assert res.returncode == 0, res.stderr
    rows = {s["name"]: s for s in json.loads(res.stdout)["systems"]}
    reference = rows["paper: BRIGHT bm25"]
    assert reference["reference"] is True
    for task in ("biology", "pony"):
        assert reference["cells"][f"bright:{task}"]["value"] == pytest.approx(brights_bm25(task))
    assert reference["cells"]["Average"]["value"] == pytest.approx((brights_bm25("biology") + brights_bm25("pony")) / 2)


def test_a_label_of_both_families_gives_a_row_per_family_over_mixed_tasks(bright_runs, tmp_path):
    """``bm25`` over R2MED's Biology and BRIGHT's biology: R2MED's BM25 row and BRIGHT's, each with its own figures."""
    shutil.copytree(DEMO, tmp_path / "Biology")
    res = run_r2med("evaluate", "-r", "bm25", "-d", str(tmp_path / "Biology"), "-o", str(bright_runs))
    assert res.returncode == 0, res.stderr
    res = run_r2med("report", str(bright_runs), "--with-published", "bm25", "--format", "json")
    assert res.returncode == 0, res.stderr
    rows = {s["name"]: s for s in json.loads(res.stdout)["systems"]}
    assert rows["paper: bm25"]["cells"]["Biology"]["value"] == pytest.approx(r2meds_bm25_biology())
    assert rows["paper: bm25"]["cells"]["bright:biology"]["value"] is None
    assert rows["paper: BRIGHT bm25"]["cells"]["bright:biology"]["value"] == pytest.approx(brights_bm25("biology"))
    assert rows["paper: BRIGHT bm25"]["cells"]["Biology"]["value"] is None


def test_an_unknown_label_names_both_families_labels(bright_runs):
    res = run_r2med("report", str(bright_runs), "--with-published", "nosuch")
    assert res.returncode != 0
    (line,) = [x for x in res.stderr.splitlines() if x.startswith("error")]
    assert "no published figures for 'nosuch'" in line and "nv" in line and "sfr+reason-gpt4" in line


def test_published_label_without_a_figure_for_the_systems_tasks_is_refused(tmp_path):
    shutil.copytree(DEMO, tmp_path / "mine")
    out = tmp_path / "out"
    assert run_r2med("evaluate", "-r", "bm25", "-d", str(tmp_path / "mine"), "-o", str(out)).returncode == 0
    res = run_r2med("report", str(out), "--published", "bm25=bm25")
    assert res.returncode != 0 and "Traceback" not in res.stderr
    (line,) = [x for x in res.stderr.splitlines() if x.startswith("error")]
    assert "--published bm25=bm25: bm25 has no published figure for bm25's tasks (mine)" in line


def test_evaluate_marks_a_delta_beyond_its_tolerance(tmp_path, monkeypatch):
    """The demo collection filed as R2MED's Biology, with the hub task's counts made its own (as tests/test_report.py
    does): graded against the paper's BM25, whose delta here is far beyond BM25's tolerance (0.5, ``lexical``)."""
    from dataclasses import replace

    from r2med.data.tasks import TASKS

    shutil.copytree(DEMO, tmp_path / "Biology")
    queries = sum(1 for line in (DEMO / "query.jsonl").read_text().splitlines() if line.strip())
    docs = sum(1 for line in (DEMO / "corpus.jsonl").read_text().splitlines() if line.strip())
    monkeypatch.setitem(TASKS, "Biology", replace(TASKS["Biology"], queries=queries, docs=docs))
    out = tmp_path / "out"
    res = run_r2med("evaluate", "-r", "bm25", "-d", str(tmp_path / "Biology"), "-o", str(out))
    assert res.returncode == 0, res.stderr
    value = 100 * json.loads((out / "bm25" / "Biology" / "metrics.json").read_text())["aggregate"]["ndcg_cut_10"]
    delta = value - r2meds_bm25_biology()
    assert abs(delta) > 0.5
    line = next(x for x in res.stdout.splitlines() if "Biology" in x)
    assert f"{delta:+.2f} !" in line  # as `report` writes a flagged delta
