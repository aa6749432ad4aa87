"""Issue 39 item 3: ``--ties listed`` -- the run's own listed order breaks ties (as BRIGHT's and RaDeR's code cut
their lists) -- recorded in ``metrics.json``, never graded against figures made by trec_eval's rule, and the
published figure's place inside the tie range shown.

References: hand computations (nDCG@10 of a relevant document at rank 1 is 1, at rank 2 1/log2(3)), pytrec_eval
scoring the run.trec r2med writes (``r2med score``: trec_eval's rule), and the tie ranges of docs/ties.md.
"""

from __future__ import annotations

import json
import math

import pytest

from conftest import recorded, run_r2med


def _collection(root):
    root.mkdir()
    (root / "corpus.jsonl").write_text(
        "".join(json.dumps({"id": f"d{i}", "text": f"doc {i}"}) + "\n" for i in range(6))
    )
    (root / "query.jsonl").write_text(
        json.dumps({"id": "q1", "text": "one"}) + "\n" + json.dumps({"id": "q2", "text": "two"}) + "\n"
    )
    (root / "qrels.jsonl").write_text(
        json.dumps({"q_id": "q1", "p_id": "d1", "score": 1})
        + "\n"
        + json.dumps({"q_id": "q2", "p_id": "d5", "score": 1})
        + "\n"
    )
    return root


# q1 lists d1 before d3 at the same score: listed order puts the relevant d1 first; trec_eval's rule (doc id
# descending) puts d3 first.  q2 has no tie deciding anything (d5 alone at the top).
RUN = "q1 Q0 d1 1 1.0 t\nq1 Q0 d3 2 1.0 t\nq1 Q0 d2 3 0.5 t\nq2 Q0 d5 1 2.0 t\nq2 Q0 d4 2 1.0 t\n"
LISTED = (1.0 + 1.0) / 2  # both relevant documents at rank 1
TREC_EVAL = (1 / math.log2(3) + 1.0) / 2  # q1's relevant document at rank 2


def test_listed_order_scores_the_runs_own_order_and_trec_eval_the_ids(tmp_path):
    from r2med.evaluation.ties import evaluate_with_ties, listed_order

    run = {"q1": {"d1": 1.0, "d3": 1.0, "d2": 0.5}, "q2": {"d5": 2.0, "d4": 1.0}}
    qrels = {"q1": {"d1": 1}, "q2": {"d5": 1}}
    assert listed_order(run)["q1"] == {"d1": 3.0, "d3": 2.0, "d2": 1.0}
    listed = evaluate_with_ties(run, qrels, measures=["nDCG@10"], rule="listed")
    plain = evaluate_with_ties(run, qrels, measures=["nDCG@10"])
    assert listed.aggregate["ndcg_cut_10"] == pytest.approx(LISTED)
    assert plain.aggregate["ndcg_cut_10"] == pytest.approx(TREC_EVAL)
    # the ranges are the run's own: both figures are orders of its ties, so both lie within the same range
    for m in (listed, plain):
        r = m.ties.aggregate["ndcg_cut_10"]
        assert (r.worst, r.best) == (pytest.approx(TREC_EVAL), pytest.approx(LISTED))


def test_import_records_the_rule_and_its_run_trec_rescores_to_the_stored_figure(tmp_path, r2med_home):
    data = _collection(tmp_path / "col")
    run = tmp_path / "mine.trec"
    run.write_text(RUN)
    out = tmp_path / "out"
    said = {}
    for name, extra in (("listed", ["--ties", "listed"]), ("plain", [])):
        res = run_r2med("import", str(run), "-d", str(data), "--name", name, "-o", str(out), *extra)
        assert res.returncode == 0, res.stderr
        said[name] = res.stderr
    assert "note: equal scores ranked as each file lists them (--ties listed" in said["listed"]
    assert "--ties listed" not in said["plain"]
    listed = json.loads((out / "listed" / "col" / "metrics.json").read_text())
    plain = json.loads((out / "plain" / "col" / "metrics.json").read_text())
    assert listed["config"]["ties"] == "listed" and "ties" not in plain["config"]
    assert listed["aggregate"]["ndcg_cut_10"] == pytest.approx(LISTED)
    assert plain["aggregate"]["ndcg_cut_10"] == pytest.approx(TREC_EVAL)
    block = listed["ties"]["measures"]["ndcg_cut_10"]
    assert (block["worst"], block["best"]) == (pytest.approx(TREC_EVAL), pytest.approx(LISTED))
    # the written run.trec is the ranking that was scored: trec_eval's rule on it gives the stored figure
    rescored = run_r2med("score", str(data), str(out / "listed" / "col" / "run.trec"), "-m", "nDCG@10", "--json")
    assert rescored.returncode == 0, rescored.stderr
    assert json.loads(rescored.stdout)["aggregate"]["ndcg_cut_10"] == pytest.approx(LISTED)
    # score takes the rule too, and a JSON score file's key order is its listed order
    as_json = tmp_path / "mine.json"
    as_json.write_text(json.dumps({"q1": {"d1": 1.0, "d3": 1.0, "d2": 0.5}, "q2": {"d5": 2.0, "d4": 1.0}}))
    for path in (run, as_json):
        res = run_r2med("score", str(data), str(path), "-m", "nDCG@10", "--ties", "listed", "--json")
        assert res.returncode == 0, res.stderr
        payload = json.loads(res.stdout)
        assert payload["aggregate"]["ndcg_cut_10"] == pytest.approx(LISTED) and payload["tie_rule"] == "listed"
    text = run_r2med("score", str(data), str(run), "-m", "nDCG@10", "--ties", "listed")
    assert f"ndcg_cut_10     \tall\t{LISTED:.4f}" in text.stdout and "(--ties listed)" in text.stderr
    # the rule is part of what a finished folder was made with: the same name under the other rule is recomputed
    again = run_r2med("import", str(run), "-d", str(data), "--name", "listed", "-o", str(out))
    assert again.returncode == 0, again.stderr
    redone = json.loads((out / "listed" / "col" / "metrics.json").read_text())
    assert redone["aggregate"]["ndcg_cut_10"] == pytest.approx(TREC_EVAL) and "ties" not in redone["config"]
    bad = run_r2med("import", str(run), "-d", str(data), "--name", "x", "-o", str(out), "--ties", "file")
    assert bad.returncode == 2 and "--ties" in bad.stderr and "listed" in bad.stderr


def test_a_listed_run_is_not_graded_against_trec_eval_figures():
    from r2med.results.grading import Grade, _with_ties, require_labels

    key = require_labels("bm25")[0]
    assert _with_ties(Grade(key, key), recorded({"step": "evaluate"})).key == key
    graded = _with_ties(Grade(key, key), recorded({"step": "evaluate", "ties": "listed"}))
    assert graded.key is None and graded.row == key and "--ties listed" in (graded.reason or "")
    first = {"step": "rerank", "first_stage": {"config": {"step": "import", "ties": "listed"}}}
    assert _with_ties(Grade(key, key), recorded(first)).key is None  # a reranked import scored so


def test_the_published_figures_place_in_the_tie_range():
    from r2med.report.board import BoardCell, _range
    from r2med.report.ties import published_place, published_place_text

    inside = BoardCell(value=31.8, published=39.2, ties=(24.2, 50.3))
    assert published_place(inside) == pytest.approx((39.2 - 24.2) / (50.3 - 24.2))
    assert published_place_text(inside) == " (published 39.20: 57% of the way from worst to best)"
    above = BoardCell(value=31.8, published=55.0, ties=(24.2, 50.3))
    assert "above it, no order of the tied documents gives it" in published_place_text(above)
    assert published_place_text(BoardCell(value=31.8, ties=(24.2, 50.3))) == ""
    assert _range((24.2, 50.3), 39.2)["published_place"] == pytest.approx(0.574713, abs=1e-6)
    from r2med.report.ties import tie_mark_html

    assert "24.20–50.30 over the orders of tied documents (published 39.20: 57% of the way" in tie_mark_html(inside)
