"""Round axis ticks for charts (the HTML report's bars): ``0, 0.25, 0.5, 0.75, 1`` rather than ``0.26, 0.53...``.

:func:`nice_ticks` picks the smallest step of the form 1, 2, 2.5 or 5 × 10^k that covers ``[lo, hi]``
with at most ``n`` ticks (3 if the range crosses 0 and ``n`` is 2), all multiples of the step (so 0 is a tick
whenever the range crosses it).
"""

from __future__ import annotations

import math

MANTISSAS = (1.0, 2.0, 2.5, 5.0)


def _decimals(mantissa: float, exponent: int) -> int:
    return max(0, -exponent + (1 if mantissa == 2.5 else 0))


def _snap(q: float) -> float:
    """``q`` as the whole number it is within float noise of (``0.3 / 0.1`` -> 3), else ``q``."""
    nearest = round(q)
    return float(nearest) if abs(q - nearest) <= 1e-12 * max(1.0, abs(q)) else q


def nice_step(lo: float, hi: float, n: int) -> tuple[float, int]:
    """``(step, decimals)``: the smallest round step giving at most ``n`` ticks over ``[lo, hi]``
    (at least 3 when the range crosses 0, which is always a tick)."""
    if n < 2:
        raise ValueError(f"need at least 2 ticks, got n={n}")
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise ValueError(f"tick range must be finite, got {lo}..{hi}")
    if lo > hi:
        raise ValueError(f"tick range {lo}..{hi} is reversed")
    if lo < 0 < hi:
        n = max(n, 3)
    span = hi - lo
    exponent = math.floor(math.log10(span / (n - 1))) - 1 if span > 0 else 0
    while True:
        for mantissa in MANTISSAS:
            step = mantissa * 10.0**exponent
            first = math.floor(_snap(lo / step))
            last = math.ceil(_snap(hi / step))
            if last - first + 1 <= n:
                return step, _decimals(mantissa, exponent)
        exponent += 1


def nice_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    """Round ticks covering ``[lo, hi]`` (first <= lo, last >= hi), at most ``n`` of them.

    ``nice_ticks(0, 1, 5) == [0.0, 0.25, 0.5, 0.75, 1.0]``; ``nice_ticks(0, 1, 6)`` steps by 0.2;
    an empty range (``lo == hi``) widens to ``[lo, lo + 1]`` at 0, else to the value's own scale.
    """
    if lo == hi:
        width = 1.0 if lo == 0 else 10.0 ** math.floor(math.log10(abs(lo)))
        lo, hi = (lo, lo + width) if lo >= 0 else (lo - width, lo)
    step, decimals = nice_step(lo, hi, n)
    first = math.floor(_snap(lo / step))
    last = math.ceil(_snap(hi / step))
    return [round(i * step, decimals) + 0.0 for i in range(first, last + 1)]


def tick_labels(ticks: list[float]) -> list[str]:
    """The ticks as text with one number of decimals (``0.00, 0.25, 0.50``; ``0, 25, 50``)."""
    decimals = 0
    for t in ticks:
        text = repr(float(t))
        if "e" not in text and "." in text:
            decimals = max(decimals, len(text.split(".")[1].rstrip("0")))
    return [f"{t:.{decimals}f}" for t in ticks]
