"""Metrics against a brute-force implementation of trec_eval's definitions (independent of pytrec_eval)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from r2med.errors import NothingToScore, R2MedError
from r2med.evaluation.metrics import CUTOFFS, DEFAULT_MEASURES, canonical, evaluate


def trec_order(docs: dict[str, float]) -> list[str]:
    # trec_eval: score descending, ties broken by docno descending (strcmp).
    return [d for d, _ in sorted(docs.items(), key=lambda x: (-x[1], tuple(-ord(c) for c in x[0]) + (1,)))]


def brute_force(run_q: dict[str, float], qrels_q: dict[str, int]) -> dict[str, float]:
    ranking = trec_order(run_q)
    rel = {d for d, g in qrels_q.items() if g > 0}
    num_rel = len(rel)
    out: dict[str, float] = {}
    for k in CUTOFFS:
        top = ranking[:k]
        hits = [d in rel for d in top]
        out[f"P_{k}"] = sum(hits) / k
        out[f"recall_{k}"] = sum(hits) / num_rel if num_rel else 0.0
        ap, found = 0.0, 0
        for i, h in enumerate(hits, start=1):
            if h:
                found += 1
                ap += found / i
        out[f"map_cut_{k}"] = ap / num_rel if num_rel else 0.0
        dcg = sum(max(qrels_q.get(d, 0), 0) / math.log2(i + 1) for i, d in enumerate(top, start=1))
        ideal = sorted((g for g in qrels_q.values() if g > 0), reverse=True)[:k]
        idcg = sum(g / math.log2(i + 1) for i, g in enumerate(ideal, start=1))
        out[f"ndcg_cut_{k}"] = dcg / idcg if idcg else 0.0
    rr = 0.0
    for i, d in enumerate(ranking, start=1):
        if d in rel:
            rr = 1.0 / i
            break
    out["recip_rank"] = rr
    return out


doc_ids = st.sampled_from([f"d{i}" for i in range(40)] + ["D7", "a", "zz", "10", "9"])


@st.composite
def run_and_qrels(draw):
    queries = draw(st.lists(st.sampled_from([f"q{i}" for i in range(8)]), min_size=1, max_size=6, unique=True))
    qrels, run = {}, {}
    for q in queries:
        judged = draw(st.dictionaries(doc_ids, st.integers(0, 2), min_size=1, max_size=15))
        qrels[q] = judged
        # Few distinct score values -> many ties, exercising trec_eval's tie order.
        run[q] = draw(st.dictionaries(doc_ids, st.sampled_from([0.5, 1.0, 1.5, 2.25, 3.0]), max_size=40))
    # Sometimes a judged query is missing from the run entirely.
    if draw(st.booleans()) and len(queries) > 1:
        run.pop(queries[0])
    return run, qrels


@settings(max_examples=150, deadline=None)
@given(run_and_qrels())
def test_matches_brute_force_trec_eval(data):
    run, qrels = data
    answered = [q for q in qrels if run.get(q)]
    if not answered:  # trec_eval's num_q 0: no figure, one error (not an average of 0.0 over no query)
        with pytest.raises(NothingToScore, match="nothing to score"):
            evaluate(run, qrels)
        return
    metrics = evaluate(run, qrels)
    assert sorted(metrics.per_query) == sorted(answered)
    for q in answered:
        expected = brute_force(run[q], qrels[q])
        for m in DEFAULT_MEASURES:
            assert metrics.per_query[q][m] == pytest.approx(expected[m], abs=1e-9), (q, m)
    for m in DEFAULT_MEASURES:
        mean = sum(brute_force(run[q], qrels[q])[m] for q in answered) / len(answered)
        assert metrics.aggregate[m] == pytest.approx(mean, abs=1e-9)
    # And the same numbers as calling pytrec_eval directly.
    import pytrec_eval

    direct = pytrec_eval.RelevanceEvaluator(
        qrels,
        {
            "ndcg_cut.1,10,25,50,100",
            "map_cut.1,10,25,50,100",
            "recall.1,10,25,50,100",
            "P.1,10,25,50,100",
            "recip_rank",
        },
    ).evaluate({q: d for q, d in run.items() if d})
    for q, values in direct.items():
        for m in DEFAULT_MEASURES:
            assert metrics.per_query[q][m] == pytest.approx(values[m], abs=1e-9)


@settings(max_examples=50, deadline=None)
@given(run_and_qrels())
def test_count_missing_averages_over_all_judged_queries(data):
    run, qrels = data
    if not any(run.get(q) for q in qrels):  # zeros for every judged query would read as a score: refused too
        with pytest.raises(NothingToScore):
            evaluate(run, qrels, measures=["ndcg_cut_10"], count_missing=True)
        return
    metrics = evaluate(run, qrels, measures=["ndcg_cut_10"], count_missing=True)
    total = sum(brute_force(run[q], qrels[q])["ndcg_cut_10"] if run.get(q) else 0.0 for q in qrels)
    assert metrics.aggregate["ndcg_cut_10"] == pytest.approx(total / len(qrels), abs=1e-9)


def test_graded_relevance_hand_computed():
    qrels = {"q": {"a": 2, "b": 1, "c": 0}}
    run = {"q": {"b": 3.0, "a": 2.0, "x": 1.0}}
    dcg = 1 / math.log2(2) + 2 / math.log2(3)
    idcg = 2 / math.log2(2) + 1 / math.log2(3)
    m = evaluate(run, qrels, measures=["nDCG@10", "MRR", "P@1", "R@100"])
    assert m["ndcg_cut_10"] == pytest.approx(dcg / idcg, abs=1e-12)
    assert m["MRR"] == 1.0 and m["P@1"] == 1.0 and m["R@100"] == 1.0


def test_measure_names():
    assert canonical("nDCG@10") == "ndcg_cut_10"
    assert canonical("ndcg_cut.100") == "ndcg_cut_100"
    assert canonical("R@100") == "recall_100"
    assert canonical("P_10") == "P_10"
    assert canonical("map@10") == "map_cut_10"
    assert canonical("MRR") == "recip_rank"
    with pytest.raises(R2MedError):
        canonical("bogus@x")


def test_agrees_with_ir_measures():
    ir_measures = pytest.importorskip("ir_measures")
    qrels = {"1": {"a": 1, "b": 2, "c": 0}, "2": {"x": 1}}
    run = {"1": {"a": 0.2, "c": 0.9, "b": 0.1, "z": 0.5}, "2": {"y": 1.0, "x": 0.5}}
    ours = evaluate(run, qrels, measures=["nDCG@10", "R@100", "MRR"]).aggregate
    theirs = ir_measures.calc_aggregate([ir_measures.nDCG @ 10, ir_measures.R @ 100, ir_measures.RR], qrels, run)
    assert ours["ndcg_cut_10"] == pytest.approx(theirs[ir_measures.nDCG @ 10], abs=1e-9)
    assert ours["recall_100"] == pytest.approx(theirs[ir_measures.R @ 100], abs=1e-9)
    assert ours["recip_rank"] == pytest.approx(theirs[ir_measures.RR], abs=1e-9)
