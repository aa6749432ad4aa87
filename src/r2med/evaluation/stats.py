"""Paired significance testing of two systems' per-query scores.

Owns: the paired t-test (scipy), the paired randomisation (sign-flip) test --
seeded, vectorised, 10,000 permutations by default --, the bootstrap 95%
confidence interval of the mean difference (scipy), Holm-Bonferroni correction
across a family of tests, wins/ties/losses, and :func:`compare_paired`, which
aligns two ``qid -> score`` mappings and runs all of them.

Differences are always ``b - a``: a positive mean difference means ``b`` scores
higher than ``a`` (the baseline).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np
from scipy import stats

from ..infra.json_types import JsonObject

DEFAULT_PERMUTATIONS = 10_000
DEFAULT_RESAMPLES = 10_000
DEFAULT_SEED = 42
_CHUNK = 2_000_000  # sign-matrix entries per vectorised block (bounded memory)


_EPS = 1e-12

#: One score per query, for a paired test (a list or a 1-d numpy array).
PairedSamples = Sequence[float] | np.ndarray


def _constant(d: np.ndarray) -> bool:
    """All differences equal up to float noise (then t-test and bootstrap are degenerate)."""
    return bool(np.ptp(d) <= _EPS * max(1.0, float(np.abs(d).max())))


def _diffs(a: PairedSamples, b: PairedSamples) -> np.ndarray:
    x = np.asarray(a, dtype=float)
    y = np.asarray(b, dtype=float)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"paired samples must be 1-d and of equal length, got {x.shape} and {y.shape}")
    differences: np.ndarray = y - x
    return differences


def paired_ttest(a: PairedSamples, b: PairedSamples) -> tuple[float, float]:
    """Two-sided paired t-test of ``b`` against ``a`` (scipy's ``ttest_rel``): ``(t, p)``.

    When every difference is identical the test is undefined; r2med then reports
    ``p = 1`` for all-zero differences and ``p = 0`` for a constant non-zero shift.
    """
    d = _diffs(a, b)
    if d.size < 2:
        return math.nan, 1.0
    if _constant(d):
        return (0.0, 1.0) if abs(d[0]) <= _EPS else (math.copysign(math.inf, d[0]), 0.0)
    result = stats.ttest_rel(np.asarray(b, dtype=float), np.asarray(a, dtype=float))
    return float(result.statistic), float(result.pvalue)


def randomization_test(
    a: PairedSamples, b: PairedSamples, n_permutations: int = DEFAULT_PERMUTATIONS, seed: int = DEFAULT_SEED
) -> float:
    """Two-sided paired randomisation test (Fisher's sign-flip test) of the mean difference.

    Under the null hypothesis each query's pair of scores is exchangeable, so the
    sign of each difference is flipped at random; the p-value is the share of
    ``n_permutations`` seeded random flips whose ``|mean|`` reaches the observed
    ``|mean|`` (with the observed assignment counted, ``(c + 1) / (n + 1)``, so
    it is never 0).  Vectorised in blocks: a random ±1 matrix times the diffs.
    """
    d = _diffs(a, b)
    n = d.size
    if n == 0 or n_permutations < 1:
        return 1.0
    observed = abs(d.mean())
    if observed <= _EPS:
        return 1.0
    rng = np.random.default_rng(seed)
    tol = 1e-12 * max(1.0, float(np.abs(d).max()))
    count = 0
    rows_per_block = max(1, _CHUNK // n)
    done = 0
    while done < n_permutations:
        rows = min(rows_per_block, n_permutations - done)
        signs = rng.integers(0, 2, size=(rows, n), dtype=np.int8) * 2 - 1
        means = np.abs(signs @ d) / n
        count += int(np.count_nonzero(means >= observed - tol))
        done += rows
    return (count + 1) / (n_permutations + 1)


def bootstrap_ci(
    a: PairedSamples,
    b: PairedSamples,
    confidence: float = 0.95,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> tuple[float, float]:
    """Percentile bootstrap confidence interval of the mean difference ``b - a`` (scipy's ``bootstrap``)."""
    d = _diffs(a, b)
    if d.size == 0:
        return math.nan, math.nan
    if d.size == 1 or _constant(d):
        return float(d[0]), float(d[0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = stats.bootstrap(
            (d,),
            np.mean,
            confidence_level=confidence,
            n_resamples=n_resamples,
            method="percentile",
            vectorized=True,
            random_state=np.random.default_rng(seed),
        )
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm-Bonferroni adjusted p-values (step-down, monotone, capped at 1), in the input order.

    NaN p-values are left out of the family and stay NaN.
    """
    p = np.asarray(pvalues, dtype=float)
    out = np.full(p.shape, np.nan)
    valid = np.flatnonzero(~np.isnan(p))
    m = valid.size
    adjusted: list[float]
    if m == 0:
        adjusted = out.tolist()
        return adjusted
    order = valid[np.argsort(p[valid], kind="stable")]
    running = 0.0
    for i, idx in enumerate(order):
        running = max(running, min(1.0, (m - i) * p[idx]))
        out[idx] = running
    adjusted = out.tolist()
    return adjusted


def wins_ties_losses(a: PairedSamples, b: PairedSamples, tie_tolerance: float = 1e-9) -> tuple[int, int, int]:
    """Queries where ``b`` beats ``a``, ties with it (within ``tie_tolerance``), loses to it."""
    d = _diffs(a, b)
    wins = int(np.count_nonzero(d > tie_tolerance))
    losses = int(np.count_nonzero(d < -tie_tolerance))
    return wins, d.size - wins - losses, losses


@dataclass
class PairedComparison:
    """All paired statistics of ``b`` against baseline ``a`` over their common queries."""

    n: int
    mean_a: float
    mean_b: float
    diff: float
    t: float
    p_ttest: float
    p_randomization: float
    ci_low: float
    ci_high: float
    wins: int
    ties: int
    losses: int
    only_a: int = 0
    only_b: int = 0
    p_holm: float | None = None
    extra: dict[str, object] = field(default_factory=dict)

    def to_dict(self) -> JsonObject:
        return asdict(self)


def compare_paired(
    a: Mapping[str, float],
    b: Mapping[str, float],
    n_permutations: int = DEFAULT_PERMUTATIONS,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    confidence: float = 0.95,
) -> PairedComparison:
    """Compare two ``query id -> score`` mappings on the queries both have."""
    common = sorted(set(a) & set(b))
    x = np.array([a[q] for q in common], dtype=float)
    y = np.array([b[q] for q in common], dtype=float)
    if not common:
        nan = math.nan
        return PairedComparison(0, nan, nan, nan, nan, 1.0, 1.0, nan, nan, 0, 0, 0, only_a=len(a), only_b=len(b))
    t, p_t = paired_ttest(x, y)
    p_r = randomization_test(x, y, n_permutations=n_permutations, seed=seed)
    lo, hi = bootstrap_ci(x, y, confidence=confidence, n_resamples=n_resamples, seed=seed)
    w, ti, lo_ = wins_ties_losses(x, y)
    return PairedComparison(
        n=len(common),
        mean_a=float(x.mean()),
        mean_b=float(y.mean()),
        diff=float((y - x).mean()),
        t=t,
        p_ttest=p_t,
        p_randomization=p_r,
        ci_low=lo,
        ci_high=hi,
        wins=w,
        ties=ti,
        losses=lo_,
        only_a=len(set(a) - set(b)),
        only_b=len(set(b) - set(a)),
    )
