"""The bounds every request to ``r2med serve`` is held to, and the refusal that names the one a request broke.

A refusal is one JSON object on one line, ``{"error": "<what>", "limit": "<name>", "value": <bound>}`` with a 4xx
status -- never a traceback, never a stack.  The bounds are the server's options (``r2med serve --max-...``).
"""

from __future__ import annotations

from dataclasses import dataclass

#: The largest request body read by default (bytes).
MAX_BODY_BYTES = 1_000_000


@dataclass(frozen=True)
class Limits:
    """Bounds of one server: body size (bytes), queries per request, documents per query, characters per query."""

    max_body_bytes: int = MAX_BODY_BYTES
    max_queries: int = 256
    max_topk: int = 100
    max_query_chars: int = 8_192

    def record(self) -> dict[str, int]:
        return {
            "max_body_bytes": self.max_body_bytes,
            "max_queries": self.max_queries,
            "max_topk": self.max_topk,
            "max_query_chars": self.max_query_chars,
        }


class Refused(Exception):
    """A request refused: ``status`` (4xx), a one-line message, the limit's name and bound when one was broken."""

    def __init__(self, status: int, message: str, limit: str | None = None, value: int | None = None):
        super().__init__(message)
        self.status, self.message, self.limit, self.value = status, " ".join(message.split()), limit, value

    def body(self) -> dict[str, str | int | None]:
        out: dict[str, str | int | None] = {"error": self.message}
        if self.limit is not None:
            out["limit"], out["value"] = self.limit, self.value
        return out


def check_queries(limits: Limits, queries: list[str], k: int) -> None:
    """Refuse a request over a bound (how many queries, its depth, a query's length), naming the bound."""
    if not queries:
        raise Refused(400, "no query given")
    if len(queries) > limits.max_queries:
        raise Refused(413, f"{len(queries)} queries in one request", "max_queries", limits.max_queries)
    if k < 1:
        raise Refused(400, f"topk {k} is below 1", "topk", 1)
    if k > limits.max_topk:
        raise Refused(400, f"topk {k} is above the server's bound", "max_topk", limits.max_topk)
    for i, q in enumerate(queries):
        if len(q) > limits.max_query_chars:
            raise Refused(413, f"query {i} has {len(q)} characters", "max_query_chars", limits.max_query_chars)
