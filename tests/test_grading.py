"""A run is graded only against the configuration it recorded, on the hub task's data, and runs are paired
only when made on the same data (issue 20, part 2): the CLI end to end, for each defect measured before."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from conftest import minilm_path, run_r2med, shared_collection
from test_report import DOCS, QRELS, QUERIES, synthetic, write_collection


def hub_sized(monkeypatch, task: str, queries: int, docs: int) -> None:
    """The published counts of ``task`` made those of a tiny collection (so it counts as the hub task)."""
    from r2med.data.tasks import TASKS

    monkeypatch.setitem(TASKS, task, replace(TASKS[task], queries=queries, docs=docs))


def ok(*args: str) -> str:
    res = run_r2med(*args)
    assert res.returncode == 0, res.stderr + res.stdout
    return res.stdout


def one_line_error(*args: str) -> str:
    res = run_r2med(*args)
    assert res.returncode == 2, res.stdout + res.stderr
    lines = [line for line in res.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, res.stderr
    return lines[0]


def report_json(*paths: Path) -> dict:
    return json.loads(ok("report", *map(str, paths), "--format", "json"))


@pytest.fixture
def biology(tmp_path, monkeypatch) -> Path:
    """A local folder named Biology whose counts are (patched to be) the hub task's."""
    hub_sized(monkeypatch, "Biology", len(QUERIES), len(DOCS))
    return write_collection(tmp_path / "data", "Biology")


def test_a_bm25_run_named_contriever_is_graded_as_bm25(biology, tmp_path):
    out = ok("evaluate", "-r", "bm25", "--name", "contriever", "-d", str(biology), "--out", str(tmp_path / "runs"))
    assert "contriever" in out
    system = report_json(tmp_path / "runs")["systems"][0]
    assert system["name"] == "contriever" and system["published"]["label"] == "bm25"
    assert system["cells"]["Biology"]["published"] == 19.19  # BM25's figure, not contriever's 9.15


def test_a_minilm_run_named_bm25_is_not_graded(biology, tmp_path):
    ok(
        "evaluate",
        "-r",
        "dense",
        "--model",
        minilm_path(),
        "--name",
        "bm25",
        "-d",
        str(biology),
        "--out",
        str(tmp_path / "runs"),
    )
    system = report_json(tmp_path / "runs")["systems"][0]
    assert system["name"] == "bm25" and system["published"] is None
    assert system["cells"]["Biology"]["published"] is None
    table = ok("report", str(tmp_path / "runs"), "--format", "markdown")
    assert "19.19" not in table and "published" not in table


@pytest.mark.parametrize("name", ["nv", "bm25+hyde-gpt4", "bm25"])
def test_a_fused_run_is_graded_against_no_row_whatever_its_name(biology, tmp_path, name):
    runs = tmp_path / "runs"
    ok("evaluate", "-r", "bm25", "-d", str(biology), "--out", str(runs))
    ok("evaluate", "-r", "bm25-standard", "-d", str(biology), "--out", str(runs))
    ok(
        "fuse",
        str(runs / "bm25"),
        str(runs / "bm25-standard"),
        "--name",
        name,
        "-d",
        str(biology),
        "--out",
        str(tmp_path / "fused"),
    )
    system = report_json(tmp_path / "fused")["systems"][0]
    assert system["name"] == name and system["published"] is None
    assert system["cells"]["Biology"]["published"] is None


def test_a_local_folder_with_other_data_under_a_task_name_is_not_graded(tmp_path):
    data = tmp_path / "data" / "Biology"
    shutil.copytree(shared_collection("medline-med"), data)  # 30 queries, 1,033 docs: not the hub's Biology
    out = ok("evaluate", "-r", "bm25", "-d", str(data), "--out", str(tmp_path / "runs"))
    assert "19.19" not in out
    assert (
        "no published bm25 figure: Biology: data from a local folder has 30 queries and 1033 docs, "
        "the hub task 103 and 57359" in " ".join(out.split())
    )
    payload = report_json(tmp_path / "runs")
    cell = payload["systems"][0]["cells"]["Biology"]
    assert cell["published"] is None and cell["delta"] is None
    assert (
        cell["ungraded"] == "Biology: data from a local folder has 30 queries and 1033 docs, the hub task 103 and 57359"
    )
    assert any("no published figure for bm25: Biology: data from a local folder" in line for line in payload["legend"])
    table = ok("report", str(tmp_path / "runs"), "--format", "markdown")
    assert "19.19" not in table and "30 queries and 1033 docs" in table


def test_a_local_folder_with_the_hub_counts_is_graded(biology, tmp_path):
    ok("evaluate", "-r", "bm25", "-d", str(biology), "--out", str(tmp_path / "runs"))
    cell = report_json(tmp_path / "runs")["systems"][0]["cells"]["Biology"]
    assert cell["published"] == 19.19 and cell["ungraded"] is None


def test_a_run_that_recorded_no_counts_is_not_graded(tmp_path):
    from r2med.runs.run import write_task_results

    payload = {
        "task": "Biology",
        "retriever": "bm25",
        "config": {"retriever": "bm25"},
        "aggregate": {"ndcg_cut_10": 0.2},
        "per_query": {"q1": {"ndcg_cut_10": 0.2}},
    }
    write_task_results(tmp_path / "runs" / "bm25" / "Biology", {"q1": {"d1": 1.0}}, payload)
    cell = report_json(tmp_path / "runs")["systems"][0]["cells"]["Biology"]
    assert cell["published"] is None and "no recorded counts" in cell["ungraded"]


def two_runs_on_different_judgments(tmp_path: Path, monkeypatch) -> tuple[Path, Path]:
    """``bm25`` on Biology and ``bm25-standard`` on another Biology: same corpus, unrelated judgments."""
    docs, queries, qrels = synthetic()
    other = {q: {d: 1 for d in list(docs)[i % 7 * 5 : i % 7 * 5 + 3]} for i, q in enumerate(qrels)}
    first = write_collection(tmp_path / "a", "Biology", docs, queries, qrels)
    second = write_collection(tmp_path / "b", "Biology", docs, queries, other)
    ok("evaluate", "-r", "bm25", "-d", str(first), "--out", str(tmp_path / "runs"))
    ok("evaluate", "-r", "bm25-standard", "-d", str(second), "--out", str(tmp_path / "runs"))
    return tmp_path / "runs" / "bm25", tmp_path / "runs" / "bm25-standard"


def test_compare_refuses_runs_on_different_data(tmp_path, monkeypatch):
    a, b = two_runs_on_different_judgments(tmp_path, monkeypatch)
    line = one_line_error("compare", str(a), str(b))
    assert "Biology: bm25 and bm25-standard were made on different data (another queries or judgments" in line
    line = one_line_error("report", str(a), str(b), "--baseline", "bm25")
    assert "made on different data" in line
    ok("report", str(a), str(b))  # no pairing asked for: the table itself is fine


def test_compare_refuses_runs_on_different_corpora(tmp_path):
    first = write_collection(tmp_path / "a", "Biology")
    second = write_collection(tmp_path / "b", "Biology", {**DOCS, "d11": "another document"}, QUERIES, QRELS)
    ok("evaluate", "-r", "bm25", "-d", str(first), "--out", str(tmp_path / "runs"))
    ok("evaluate", "-r", "bm25-standard", "-d", str(second), "--out", str(tmp_path / "runs"))
    line = one_line_error("compare", str(tmp_path / "runs" / "bm25"), str(tmp_path / "runs" / "bm25-standard"))
    assert "another corpus" in line


def test_fuse_refuses_runs_on_different_data(tmp_path, monkeypatch):
    a, b = two_runs_on_different_judgments(tmp_path, monkeypatch)
    line = one_line_error("fuse", str(a), str(b), "--out", str(tmp_path / "fused"))
    assert "made on different data" in line
    assert not (tmp_path / "fused").exists() or not any((tmp_path / "fused").rglob("metrics.json"))


def test_runs_on_the_same_data_still_compare(tmp_path):
    data = write_collection(tmp_path / "data", "Biology")
    ok("evaluate", "-r", "bm25", "-d", str(data), "--out", str(tmp_path / "runs"))
    ok("evaluate", "-r", "bm25-standard", "-d", str(data), "--out", str(tmp_path / "runs"))
    ok("compare", str(tmp_path / "runs" / "bm25"), str(tmp_path / "runs" / "bm25-standard"))


def test_a_reranked_run_keeps_its_first_stage_record_and_is_graded_by_it(biology, tmp_path):
    """``rerank`` keeps the first stage's recorded configuration; a BM25 first stage named ``nv`` reranked by
    monobert's record is not the published nv+monobert row (no reranked BM25 row is published)."""
    pytest.importorskip("torch")
    from r2med.results.published import PublishedKey, match_published
    from test_rerank import _tiny_bert

    runs = tmp_path / "runs"
    ok("evaluate", "-r", "bm25", "--name", "nv", "-d", str(biology), "--out", str(runs))
    model = _tiny_bert(tmp_path / "model", 1, seed=5)
    ok("rerank", "--run", str(runs / "nv"), "--reranker", str(model), "-d", str(biology), "--name", "nv+monobert")
    first = json.loads((runs / "nv" / "Biology" / "metrics.json").read_text())["config"]
    config = json.loads((runs / "nv+monobert" / "Biology" / "metrics.json").read_text())["config"]
    assert config["first_stage"]["config"] == first
    assert match_published([config]) is None  # a random cross-encoder under the name nv+monobert
    as_monobert = {**config, "reranker": {"reranker": "monobert"}}
    assert match_published([as_monobert]) is None  # its first stage ran BM25, whatever it was named
    nv_first = {**as_monobert, "first_stage": {**config["first_stage"], "config": {"retriever": "nv", "options": {}}}}
    assert match_published([nv_first]) == PublishedKey("nv", "rerank:monobert")
    system = report_json(runs / "nv+monobert")["systems"][0]
    assert system["published"] is None
