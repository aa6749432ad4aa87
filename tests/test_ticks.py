"""Round axis ticks: hand cases (the HTML report's 0..1 bars), and properties checked against a brute-force search."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from r2med.report.ticks import nice_step, nice_ticks, tick_labels


@pytest.mark.parametrize(
    "lo, hi, n, expected",
    [
        (0, 1, 5, [0.0, 0.25, 0.5, 0.75, 1.0]),
        (0, 1, 6, [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]),
        (0, 1, 3, [0.0, 0.5, 1.0]),
        (0, 1.05, 5, [0.0, 0.5, 1.0, 1.5]),  # the report's padded axis: no 0.26/0.53/0.79/1.05
        (0, 0.8, 5, [0.0, 0.2, 0.4, 0.6, 0.8]),
        (0, 100, 5, [0, 25, 50, 75, 100]),
        (-0.05, 0.12, 5, [-0.05, 0.0, 0.05, 0.1, 0.15]),
        (0.3217, 0.3312, 4, [0.32, 0.325, 0.33, 0.335]),
        (0, 0, 5, [0.0, 0.25, 0.5, 0.75, 1.0]),
        (0.4, 0.4, 3, [0.4, 0.45, 0.5]),
        (-1, 1, 2, [-1.0, 0.0, 1.0]),
    ],
)
def test_hand_cases(lo, hi, n, expected):
    assert nice_ticks(lo, hi, n) == expected


def test_labels_and_bad_input():
    assert tick_labels([0.0, 0.25, 0.5, 0.75, 1.0]) == ["0.00", "0.25", "0.50", "0.75", "1.00"]
    assert tick_labels([0, 25, 50]) == ["0", "25", "50"]
    assert tick_labels(nice_ticks(0, 1, 6)) == ["0.0", "0.2", "0.4", "0.6", "0.8", "1.0"]
    for args in ((0, 1, 1), (1, 0, 5), (0, math.inf, 5), (math.nan, 1, 5)):
        with pytest.raises(ValueError):
            nice_ticks(*args)


def _brute_step(lo: float, hi: float, n: int) -> Fraction:
    """Every 1/2/2.5/5 x 10^k step from 1e-8 up, in exact arithmetic; the first with at most n ticks."""
    lo_f, hi_f = Fraction(repr(lo)), Fraction(repr(hi))  # the decimal values as written
    for k in range(-8, 12):
        for m in (Fraction(1), Fraction(2), Fraction(5, 2), Fraction(5)):
            step = m * Fraction(10) ** k
            count = math.ceil(hi_f / step) - math.floor(lo_f / step) + 1
            if count <= n:
                return step
    raise AssertionError("no step")


@settings(max_examples=300, deadline=None)
@given(st.floats(-1e3, 1e3), st.floats(1e-3, 1e3), st.integers(2, 12))
def test_properties(lo, span, n):
    lo = round(lo, 4)
    hi = round(lo + span, 4)
    if hi <= lo:
        return
    ticks = nice_ticks(lo, hi, n)
    step, _ = nice_step(lo, hi, n)
    if lo < 0 < hi:
        n = max(n, 3)  # 0 is a tick between the ends
    assert 2 <= len(ticks) <= n
    assert ticks[0] <= lo + 1e-9 * max(1, abs(lo)) and ticks[-1] >= hi - 1e-9 * max(1, abs(hi))
    for a, b in zip(ticks, ticks[1:]):
        assert b - a == pytest.approx(step, rel=1e-9)
    for t in ticks:  # every tick a whole multiple of the step
        assert abs(t / step - round(t / step)) < 1e-6
    assert Fraction(step).limit_denominator(10**9) == _brute_step(lo, hi, n)
