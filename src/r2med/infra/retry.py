"""Retrying a request: which HTTP failures are worth another try, how long to wait, and the loop.

Every HTTP client of r2med retries through :func:`call_with_retries`: the LLM chat client
(:mod:`r2med.infra.llm`) and the embedding APIs (:mod:`r2med.retrieval.encoders.api`).

* A failure another attempt may cure is raised as :class:`Transient` by the caller's request
  function: HTTP 408/409/425/429 and any 5xx (:func:`retryable`), timeouts, dropped connections.
* The wait before attempt ``n + 1`` is the server's ``Retry-After`` when it sent one (honoured
  exactly, also beyond the cap), else exponential backoff with jitter: uniform in ``[d/2, d]`` with
  ``d = min(cap, base * 2**n)``.
* After ``max_retries`` retries the loop raises :class:`GaveUp` with the last failure.
"""

from __future__ import annotations

import email.utils
import random
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

T = TypeVar("T")

RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 520, 522, 524, 529})


def retryable(status: int) -> bool:
    """Whether an HTTP status is worth another attempt (408/409/425/429 and every 5xx)."""
    return status in RETRY_STATUS or status >= 500


def parse_retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` / ``Retry-After`` (seconds or an HTTP date), if given."""
    if not headers:
        return None
    lower = {k.lower(): v for k, v in headers.items()}
    if "retry-after-ms" in lower:
        try:
            return max(0.0, float(lower["retry-after-ms"]) / 1000.0)
        except ValueError:
            pass
    value = lower.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def backoff_delay(attempt: int, base: float, cap: float, rng: random.Random) -> float:
    """Exponential backoff with jitter: uniform in [d/2, d] where d = min(cap, base * 2**attempt)."""
    d: float = min(cap, base * (2**attempt))  # int ** int is typed Any (a negative power is a float)
    return d * (0.5 + 0.5 * rng.random())


class Transient(Exception):
    """A failed attempt that another attempt may cure; ``retry_after`` is the server's wish, if any."""

    def __init__(self, message: str, retry_after: float | None = None, connect: bool = False):
        super().__init__(message)
        self.retry_after = retry_after
        self.connect = connect  # the endpoint could not be reached at all


class GaveUp(Exception):
    """Every attempt failed: ``attempts`` made, ``last`` the last failure."""

    def __init__(self, last: Transient, attempts: int):
        super().__init__(f"gave up after {attempts} attempts: {last}")
        self.last, self.attempts = last, attempts


class Cancelled(Exception):
    """The caller stopped the loop while it waited (see ``wait`` of :func:`call_with_retries`)."""


@dataclass
class RetryPolicy:
    """How often and how long to retry; the jitter's random source is seeded and thread-safe."""

    max_retries: int = 6
    backoff_base: float = 1.0
    backoff_max: float = 60.0
    seed: int | None = None
    _rng: random.Random = field(init=False, repr=False)
    _lock: threading.Lock = field(init=False, repr=False, default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        """Seconds to wait after failed attempt ``attempt`` (0-based)."""
        if retry_after is not None:
            return retry_after
        with self._lock:
            return backoff_delay(attempt, self.backoff_base, self.backoff_max, self._rng)


def _sleep(seconds: float) -> bool:
    time.sleep(seconds)
    return False


def call_with_retries(
    call: Callable[[], T],
    policy: RetryPolicy,
    on_transient: Callable[[Transient, int, float | None], None] | None = None,
    wait: Callable[[float], bool] = _sleep,
) -> T:
    """``call()`` until it returns, retrying :class:`Transient` failures as ``policy`` says.

    ``on_transient(error, attempts, delay)`` runs after each transient failure, with the wait to
    come, or ``None`` when the loop gives up; it may raise to stop (a failure no retry can fix).
    ``wait(seconds)`` waits and returns True when the caller cancelled (then :class:`Cancelled`).
    Other exceptions of ``call`` propagate at once.
    """
    attempts = 0
    while True:
        attempts += 1
        try:
            return call()
        except Transient as exc:
            if attempts > policy.max_retries:
                if on_transient is not None:
                    on_transient(exc, attempts, None)
                raise GaveUp(exc, attempts) from None
            delay = policy.delay(attempts - 1, exc.retry_after)
            if on_transient is not None:
                on_transient(exc, attempts, delay)
            if wait(delay):
                raise Cancelled() from None
