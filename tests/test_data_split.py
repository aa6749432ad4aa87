"""BEIR splits (``--split test|dev|train``) and errors that name the layout the folder was read as."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import pytrec_eval

from conftest import run_r2med
from r2med.data import load_folder, resolve
from r2med.errors import DataError, R2MedError

DOCS = {
    "d1": "aspirin reduces fever and pain",
    "d2": "insulin treats diabetes mellitus",
    "d3": "statins lower blood cholesterol",
    "d4": "antibiotics treat bacterial infection",
    "d5": "vaccines prevent viral disease",
}
QUERIES = {"t1": "fever pain", "t2": "diabetes insulin", "v1": "cholesterol statins", "v2": "bacterial infection"}
TEST_QRELS = [("t1", "d1", 1), ("t2", "d2", 2), ("t2", "d5", 0)]
DEV_QRELS = [("v1", "d3", 1), ("v2", "d4", 1), ("v2", "d1", 1)]


def make_beir(root: Path) -> Path:
    (root / "qrels").mkdir(parents=True)
    with open(root / "corpus.jsonl", "w") as f:
        for did, text in DOCS.items():
            f.write(json.dumps({"_id": did, "title": "", "text": text}) + "\n")
    with open(root / "queries.jsonl", "w") as f:
        for qid, text in QUERIES.items():
            f.write(json.dumps({"_id": qid, "text": text}) + "\n")
    for split, rows in (("test", TEST_QRELS), ("dev", DEV_QRELS)):
        (root / "qrels" / f"{split}.tsv").write_text(
            "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t{g}\n" for q, d, g in rows)
        )
    return root


def test_load_folder_reads_the_split(tmp_path):
    root = make_beir(tmp_path / "mini")
    test, dev = load_folder(root), load_folder(root, split="dev")
    assert (test.split, sorted(test.queries)) == ("test", ["t1", "t2"])
    assert (dev.split, sorted(dev.queries)) == ("dev", ["v1", "v2"])
    assert dev.qrels == {"v1": {"d3": 1}, "v2": {"d4": 1, "d1": 1}}
    assert test.fingerprint == dev.fingerprint  # one corpus: its indexes are shared
    assert test.dataset_fingerprint == test.fingerprint  # the test split keeps the fingerprint recorded before
    assert dev.dataset_fingerprint != test.dataset_fingerprint  # results of two splits never pass for each other


def test_split_errors(tmp_path):
    root = make_beir(tmp_path / "mini")
    with pytest.raises(DataError, match=r"no judgments for --split train; it has: dev, test"):
        load_folder(root, split="train")
    with pytest.raises(R2MedError, match="--split must be one of test, dev, train, got 'validation'"):
        load_folder(root, split="validation")
    r2med_folder = Path(__file__).parent.parent / "src" / "r2med" / "demo_data"
    with pytest.raises(R2MedError, match=r"R2MED layout \(query.jsonl found\), which has one split"):
        load_folder(r2med_folder, split="dev")
    with pytest.raises(R2MedError, match=r"hub tasks \(R2MED's and BRIGHT's\) have one split"):
        resolve("all", None, None, split="dev")


def test_layout_named_in_data_errors(tmp_path):
    root = make_beir(tmp_path / "mini")
    (root / "corpus.jsonl").write_text(json.dumps({"id": "d1", "text": "x"}) + "\n")
    with pytest.raises(DataError) as info:
        load_folder(root)
    assert str(info.value).startswith("BEIR layout (queries.jsonl found): ")
    assert f"{root / 'corpus.jsonl'}:1: missing field '_id'" in str(info.value)
    r2 = tmp_path / "r2"
    r2.mkdir()
    (r2 / "query.jsonl").write_text(json.dumps({"id": "q1", "text": "x"}) + "\n")
    (r2 / "corpus.jsonl").write_text(json.dumps({"_id": "d1", "text": "x"}) + "\n")
    (r2 / "qrels.jsonl").write_text(json.dumps({"q_id": "q1", "p_id": "d1", "score": 1}) + "\n")
    with pytest.raises(DataError, match=r"^R2MED layout \(query.jsonl found\): .*corpus.jsonl:1: missing field 'id'"):
        load_folder(r2)


def _pytrec_ndcg10(run_path: Path, qrels: list[tuple[str, str, int]]) -> dict[str, float]:
    judged: dict[str, dict[str, int]] = {}
    for q, d, g in qrels:
        judged.setdefault(q, {})[d] = g
    run: dict[str, dict[str, float]] = {}
    for line in run_path.read_text().splitlines():
        q, _, d, _, score, _ = line.split()
        run.setdefault(q, {})[d] = float(score)
    scores = pytrec_eval.RelevanceEvaluator(judged, {"ndcg_cut_10"}).evaluate(run)
    return {q: v["ndcg_cut_10"] for q, v in scores.items()}


def test_cli_evaluate_split_recorded_and_not_mixed(tmp_path):
    root = make_beir(tmp_path / "mini")
    out = tmp_path / "runs"
    dev = run_r2med("evaluate", "-d", root, "--split", "dev", "-o", out, "--name", "bm25-dev")
    assert dev.returncode == 0, dev.stderr
    payload = json.loads((out / "bm25-dev" / "mini" / "metrics.json").read_text())
    assert payload["split"] == "dev" and payload["config"]["split"] == "dev"
    expected = _pytrec_ndcg10(out / "bm25-dev" / "mini" / "run.trec", DEV_QRELS)
    assert {q: v["ndcg_cut_10"] for q, v in payload["per_query"].items()} == pytest.approx(expected)
    assert set(expected) == {"v1", "v2"}
    test = run_r2med("evaluate", "-d", root, "-o", out, "--name", "bm25-test")
    assert test.returncode == 0, test.stderr
    test_payload = json.loads((out / "bm25-test" / "mini" / "metrics.json").read_text())
    assert test_payload["split"] == "test" and set(test_payload["per_query"]) == {"t1", "t2"}
    assert test_payload["dataset_fingerprint"] != payload["dataset_fingerprint"]
    # the dev folder asked again for the test split is recomputed, not reused
    again = run_r2med("evaluate", "-d", root, "-o", out, "--name", "bm25-dev")
    assert again.returncode == 0, again.stderr
    assert json.loads((out / "bm25-dev" / "mini" / "metrics.json").read_text())["split"] == "test"
    # fusing a dev run with a test run is refused
    run_r2med("evaluate", "-d", root, "--split", "dev", "-o", out, "--name", "bm25-dev")
    fused = run_r2med("fuse", out / "bm25-dev", out / "bm25-test", "-o", out)
    assert fused.returncode == 2 and "different splits (dev, test)" in fused.stderr
    # rerank/fuse find the recorded split: a dev run's fusion with itself is scored on dev judgments
    other = run_r2med("evaluate", "-d", root, "--split", "dev", "--k1", "1.5", "-o", out, "--name", "bm25-dev-b")
    assert other.returncode == 0, other.stderr
    alone = run_r2med("fuse", out / "bm25-dev", out / "bm25-dev-b", "-o", out, "--name", "dev2")
    assert alone.returncode == 0, alone.stderr
    assert set(json.loads((out / "dev2" / "mini" / "metrics.json").read_text())["per_query"]) == {"v1", "v2"}


def test_cli_split_refused(tmp_path):
    bad = run_r2med("evaluate", "-d", make_beir(tmp_path / "mini"), "--split", "val", "-o", tmp_path / "o")
    assert bad.returncode == 2 and "--split must be one of test, dev, train, got 'val'" in bad.stderr


def test_score_takes_a_beir_folders_split(tmp_path):
    """``r2med score FOLDER RUN --split dev`` scores against qrels/dev.tsv (pytrec_eval's figures)."""
    root = make_beir(tmp_path / "mini")
    out = tmp_path / "runs"
    assert run_r2med("evaluate", "-d", root, "--split", "dev", "-o", out, "--name", "bm25").returncode == 0
    run = out / "bm25" / "mini" / "run.trec"
    res = run_r2med("score", root, run, "--split", "dev", "-m", "nDCG@10", "-p", "--format", "json")
    assert res.returncode == 0, res.stderr
    payload = json.loads(res.stdout)
    expected = _pytrec_ndcg10(run, DEV_QRELS)
    assert payload["queries"] == 2
    assert payload["aggregate"]["ndcg_cut_10"] == pytest.approx(sum(expected.values()) / len(expected))
    # the test split judges other queries than the dev run answers: trec_eval's num_q 0 is one line, exit 2 (before:
    # "num_q 0" and 0.0000, exit 0)
    default = run_r2med("score", root, run, "-m", "nDCG@10", "--format", "json")
    assert default.returncode == 2 and default.stdout == "" and len(default.stderr.splitlines()) == 1, default.stderr
    assert "have none in common: nothing to score" in default.stderr and "--split test" in default.stderr
    bad = run_r2med("score", root, run, "--split", "valid")
    assert bad.returncode == 2 and "test, dev, train" in bad.stderr
