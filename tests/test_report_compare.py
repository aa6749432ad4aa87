"""`compare`: per-task paired statistics from real run folders, checked against the stored per-query values."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats as sps

from conftest import run_r2med
from r2med.report import compare_many, compare_systems, render_comparisons
from r2med.results.folders import find_systems as load_systems
from r2med.runs.record import read_record
from test_report import make_runs


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("compare_runs")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("R2MED_HOME", str(root / "home"))
        out, _ = make_runs(root)
    return out


def _per_query(folder):
    return {q: v["ndcg_cut_10"] for q, v in read_record(folder).to_json()["per_query"].items()}


def test_per_task_lines_match_stored_per_query_values(runs):
    a, b = load_systems([runs / "bm25", runs / "bm25-standard"])
    comparison = compare_systems(a, b, n_permutations=5000)
    tasks = [line.task for line in comparison.rows]
    assert tasks == ["Biology", "MedQA-Diag", "all queries (pooled)"]
    pooled_a, pooled_b = [], []
    for line in comparison.rows[:2]:
        qa = _per_query(runs / "bm25" / line.task)
        qb = _per_query(runs / "bm25-standard" / line.task)
        qids = sorted(qa)
        x = np.array([qa[q] for q in qids])
        y = np.array([qb[q] for q in qids])
        pooled_a += list(x)
        pooled_b += list(y)
        assert line.stats.n == len(qids)
        assert line.stats.diff == pytest.approx((y - x).mean(), abs=1e-12)
        assert line.stats.wins == int((y > x + 1e-9).sum()) and line.stats.losses == int((y < x - 1e-9).sum())
        if np.ptp(y - x) > 0:
            assert line.stats.p_ttest == pytest.approx(sps.ttest_rel(y, x).pvalue, abs=1e-9)
    # Holm across the two tasks, by hand
    p = [line.stats.p_randomization for line in comparison.rows[:2]]
    lo, hi = sorted(range(2), key=lambda i: p[i])
    expected = {lo: min(1.0, 2 * p[lo])}
    expected[hi] = max(expected[lo], min(1.0, p[hi]))
    for i in range(2):
        assert comparison.rows[i].p_rand_holm == pytest.approx(expected[i])
    pooled = comparison.rows[2].stats
    assert pooled.n == len(pooled_a)
    assert pooled.diff == pytest.approx(np.mean(np.array(pooled_b) - np.array(pooled_a)), abs=1e-12)


def test_identical_systems_are_never_significant(runs):
    a = load_systems([runs / "bm25"])[0]
    b = load_systems([runs / "bm25"])[0]
    b.name = "bm25-copy"
    comparison = compare_systems(a, b, n_permutations=1000)
    for line in comparison.rows:
        assert line.stats.diff == 0 and line.stats.p_randomization == 1.0 and line.stats.p_ttest == 1.0
        assert not comparison.significant(line)
        assert line.stats.ties == line.stats.n


def test_renderings(runs):
    systems = load_systems([runs / "bm25", runs / "bm25-standard"])
    comparisons = compare_many(systems, n_permutations=1000)
    recs = json.loads(render_comparisons(comparisons, "json"))
    assert [r["task"] for r in recs] == ["Biology", "MedQA-Diag", "all queries (pooled)"]
    assert {"p_ttest", "p_randomization", "p_randomization_holm", "ci_low", "ci_high", "wins"} <= set(recs[0])
    md = render_comparisons(comparisons, "markdown")
    assert "### bm25-standard vs bm25" in md and "| **all queries (pooled)** |" in md
    csv_text = render_comparisons(comparisons, "csv")
    assert csv_text.splitlines()[0].startswith("baseline,system,measure,task,n,")
    assert r"\begin{tabular}" in render_comparisons(comparisons, "latex")


def test_cli_compare(runs):
    ok = run_r2med("compare", str(runs / "bm25"), str(runs / "bm25-standard"), "--permutations", "1000")
    assert ok.returncode == 0, ok.stderr
    assert "bm25-standard vs bm25" in ok.stdout and "all queries" in ok.stdout
    one = run_r2med("compare", str(runs / "bm25"))
    assert one.returncode == 2 and "at least two systems" in one.stderr


def test_per_query_changes(runs):
    a, b = load_systems([runs / "bm25", runs / "bm25-standard"])
    comparison = compare_systems(a, b, n_permutations=500)
    every = comparison.changes()
    assert len(every) == sum(line.stats.n for line in comparison.rows if line.task != comparison.ALL)
    diffs = [r["diff"] for r in every]
    assert diffs == sorted(diffs, reverse=True)
    for r in every:
        qa = _per_query(runs / "bm25" / r["task"])[r["qid"]]
        qb = _per_query(runs / "bm25-standard" / r["task"])[r["qid"]]
        assert (r["a"], r["b"]) == (qa, qb) and r["diff"] == pytest.approx(qb - qa)
    top = comparison.changes(1)
    gains = [r for r in top if r["diff"] > 0]
    losses = [r for r in top if r["diff"] < 0]
    assert len(gains) <= 1 and len(losses) <= 1 and len(gains) + len(losses) >= 1
    if gains:
        assert gains[0]["diff"] == max(diffs)
    if losses:
        assert losses[0]["diff"] == min(diffs)
