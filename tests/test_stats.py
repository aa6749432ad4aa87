"""Significance tests against hand computation, exact enumeration and textbook formulas."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import special

from r2med.evaluation.stats import (
    bootstrap_ci,
    compare_paired,
    holm,
    paired_ttest,
    randomization_test,
    wins_ties_losses,
)


def _hand_ttest(a, b):
    d = np.asarray(b, float) - np.asarray(a, float)
    n = d.size
    mean = d.sum() / n
    sd = math.sqrt(((d - mean) ** 2).sum() / (n - 1))
    t = mean / (sd / math.sqrt(n))
    df = n - 1
    # two-sided Student-t tail through the regularised incomplete beta function
    p = special.betainc(df / 2, 0.5, df / (df + t * t))
    return t, p


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_ttest_matches_hand_computation(seed):
    rng = np.random.default_rng(seed)
    a = rng.uniform(0, 1, 15)
    b = np.clip(a + rng.normal(0.05, 0.2, 15), 0, 1)
    t, p = paired_ttest(a, b)
    t_ref, p_ref = _hand_ttest(a, b)
    assert t == pytest.approx(t_ref, abs=1e-9)
    assert p == pytest.approx(p_ref, abs=1e-9)


def test_ttest_degenerate_cases():
    assert paired_ttest([0.1, 0.2, 0.3], [0.1, 0.2, 0.3]) == (0.0, 1.0)
    t, p = paired_ttest([0.1, 0.2, 0.3], [0.2, 0.3, 0.4])
    assert p == 0.0 and t > 0


def _exact_randomization(a, b):
    d = np.asarray(b, float) - np.asarray(a, float)
    observed = abs(d.mean())
    hits = total = 0
    for signs in itertools.product((1, -1), repeat=d.size):
        total += 1
        if abs(np.dot(signs, d) / d.size) >= observed - 1e-12:
            hits += 1
    return hits / total


@pytest.mark.parametrize("seed", [3, 4])
def test_randomization_within_monte_carlo_error_of_exact(seed):
    rng = np.random.default_rng(seed)
    a = rng.uniform(0, 1, 12)
    b = a + rng.normal(0.08, 0.25, 12)
    exact = _exact_randomization(a, b)
    n = 10_000
    p = randomization_test(a, b, n_permutations=n, seed=seed)
    se = math.sqrt(exact * (1 - exact) / n)
    assert abs(p - exact) <= 4 * se + 2 / n, (p, exact)
    # seeded: the same seed gives the same p-value
    assert randomization_test(a, b, n_permutations=n, seed=seed) == p


def test_randomization_obvious_cases():
    a = np.zeros(30)
    assert randomization_test(a, a.copy()) == 1.0
    # a constant positive shift over 30 queries: only the all-plus/all-minus flips reach it
    p = randomization_test(a, a + 0.5, n_permutations=10_000)
    assert p == pytest.approx(1 / 10_001, abs=2 / 10_001)


def test_bootstrap_ci_close_to_t_interval_for_normal_data():
    rng = np.random.default_rng(7)
    a = rng.uniform(0, 1, 400)
    b = a + rng.normal(0.1, 0.3, 400)
    lo, hi = bootstrap_ci(a, b)
    d = b - a
    half = 1.96 * d.std(ddof=1) / math.sqrt(d.size)
    assert lo == pytest.approx(d.mean() - half, abs=0.15 * half)
    assert hi == pytest.approx(d.mean() + half, abs=0.15 * half)
    assert lo < d.mean() < hi


def test_bootstrap_ci_matches_plain_numpy_percentile_bootstrap():
    rng = np.random.default_rng(11)
    a = rng.uniform(0, 1, 60)
    b = a + rng.normal(0.0, 0.2, 60)
    d = b - a
    idx = np.random.default_rng(99).integers(0, d.size, size=(20_000, d.size))
    means = d[idx].mean(axis=1)
    ref = np.percentile(means, [2.5, 97.5])
    lo, hi = bootstrap_ci(a, b)
    spread = d.std(ddof=1) / math.sqrt(d.size)
    assert lo == pytest.approx(ref[0], abs=0.1 * spread)
    assert hi == pytest.approx(ref[1], abs=0.1 * spread)


def test_holm_by_hand():
    # sorted: 0.005*4=0.02, 0.01*3=0.03, 0.03*2=0.06, 0.04*1=0.04 -> monotone 0.06
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])
    out = holm([0.01, float("nan"), 0.02])
    assert out[0] == pytest.approx(0.02) and math.isnan(out[1]) and out[2] == pytest.approx(0.02)


def test_wins_ties_losses_by_hand():
    a = [0.1, 0.5, 0.3, 0.0, 1.0]
    b = [0.2, 0.5, 0.1, 0.0, 0.9]
    assert wins_ties_losses(a, b) == (1, 2, 2)


def test_compare_paired_aligns_on_common_queries():
    a = {"q1": 0.2, "q2": 0.4, "q3": 0.6, "only_a": 1.0}
    b = {"q3": 0.7, "q2": 0.4, "q1": 0.5, "only_b": 0.0}
    c = compare_paired(a, b, n_permutations=2000)
    assert c.n == 3 and c.only_a == 1 and c.only_b == 1
    assert c.mean_a == pytest.approx(0.4) and c.mean_b == pytest.approx(1.6 / 3)
    assert c.diff == pytest.approx((0.3 + 0.0 + 0.1) / 3)
    assert (c.wins, c.ties, c.losses) == (2, 1, 0)
    _t_ref, p_ref = _hand_ttest([0.2, 0.4, 0.6], [0.5, 0.4, 0.7])
    assert c.p_ttest == pytest.approx(p_ref, abs=1e-9)
