"""Validation of numeric command-line options, shared by every command.

Each numeric option names its range with one of the callbacks below
(``typer.Option(0.9, "--k1", callback=NONNEGATIVE)``), so a non-finite value (``nan``,
``inf``, ``1e999``) or one out of range is refused while the command line is parsed, before
any data is loaded: a one-line error naming the option, exit code 2.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import click

from ..errors import R2MedError


def _fmt(x: float) -> str:
    return f"{x:g}"


def describe(lo: float | None = None, hi: float | None = None, lo_open: bool = False,
             hi_open: bool = False, integer: bool = False) -> str:
    """The accepted range in words: ``a finite number between 0 and 1``, ``an integer of at least 1``."""
    kind = "an integer" if integer else "a finite number"
    if lo is not None and hi is not None:
        if not lo_open and not hi_open:
            return f"{kind} between {_fmt(lo)} and {_fmt(hi)}"
        left, right = ("(" if lo_open else "["), (")" if hi_open else "]")
        return f"{kind} in {left}{_fmt(lo)}, {_fmt(hi)}{right}"
    if lo is not None:
        return f"{kind} {'above' if lo_open else 'of at least'} {_fmt(lo)}"
    if hi is not None:
        return f"{kind} {'below' if hi_open else 'of at most'} {_fmt(hi)}"
    return kind


def check_number(value: Any, what: str, lo: float | None = None, hi: float | None = None,
                 lo_open: bool = False, hi_open: bool = False) -> Any:
    """``value`` if it is finite and within the range, else a one-line :class:`R2MedError` naming ``what``."""
    integer = isinstance(value, int) and not isinstance(value, bool)
    ok = (isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
          and (lo is None or (value > lo if lo_open else value >= lo))
          and (hi is None or (value < hi if hi_open else value <= hi)))
    if not ok:
        raise R2MedError(f"{what} must be {describe(lo, hi, lo_open, hi_open, integer)}, got {value!r}")
    return value


def _option_name(param: click.Parameter) -> str:
    opts = [o for o in getattr(param, "opts", []) if o.startswith("--")] or list(getattr(param, "opts", []))
    return max(opts, key=len) if opts else str(param.name)


def number(lo: float | None = None, hi: float | None = None, lo_open: bool = False,
           hi_open: bool = False) -> Callable[..., Any]:
    """A typer callback accepting a finite value in the range (``None``, an unset option, passes)."""

    def callback(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        if value is None or ctx.resilient_parsing:
            return value
        return check_number(value, _option_name(param), lo, hi, lo_open, hi_open)

    return callback


AT_LEAST_1 = number(lo=1)
"""Counts: top-k, batch size, concurrency, turns..."""
AT_LEAST_0 = number(lo=0)
"""Non-negative: BM25 k1, RRF k, retries, seeds, tolerances."""
POSITIVE = number(lo=0, lo_open=True)
"""Strictly positive: timeouts, CPUs per actor."""
UNIT = number(lo=0, hi=1)
"""A share in [0, 1]: BM25 b."""
OPEN_UNIT = number(lo=0, hi=1, lo_open=True, hi_open=True)
"""A probability strictly between 0 and 1: significance level."""
TOP_P = number(lo=0, hi=1, lo_open=True)
"""Nucleus sampling mass in (0, 1]."""
TEMPERATURE = number(lo=0, hi=2)
"""Sampling temperature in [0, 2] (the OpenAI API's range)."""


def at_least(lo: float) -> Callable[..., Any]:
    return number(lo=lo)


def finite_json(value: Any, what: str) -> Any:
    """A value read from ``key=value`` JSON (``--set``): numbers must be finite (``NaN``/``Infinity`` parse)."""
    if isinstance(value, float) and not math.isfinite(value):
        raise R2MedError(f"{what} must be a finite number, got {value!r}")
    if isinstance(value, list):
        return [finite_json(v, what) for v in value]
    if isinstance(value, dict):
        return {k: finite_json(v, what) for k, v in value.items()}
    return value
