"""``repr(Metrics)`` is one short line (``print(metrics)`` used to dump every per-query value)."""

from __future__ import annotations

import math

from r2med.evaluation.metrics import evaluate


def test_repr_is_short_and_names_the_headline_measures():
    qrels = {f"q{i}": {"d1": 1, "d2": 0} for i in range(500)}
    run = {f"q{i}": {"d1": 1.0 if i % 2 else 0.0, "d2": 0.5} for i in range(499)}  # q499 unanswered
    metrics = evaluate(run, qrels)
    text = repr(metrics)
    ndcg = (249 * 1 + 250 / math.log2(3)) / 499  # 249 queries rank d1 first, 250 second
    rr = (249 * 1 + 250 * 0.5) / 499
    assert text == (
        f"Metrics(499 queries, ndcg_cut_10={ndcg:.4f}, recall_100=1.0000, recip_rank={rr:.4f}, "
        "+18 measures, 1 judged queries without results)"
    )
    assert "q1" not in text and len(text) < 200
    assert str(metrics) == text
    few = evaluate(run, qrels, measures=["P@10"])
    assert repr(few) == "Metrics(499 queries, P_10=0.1000, 1 judged queries without results)"
