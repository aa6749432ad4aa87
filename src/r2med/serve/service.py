"""What every protocol of ``r2med serve`` calls: bounded, batched, traced searches and document fetches.

The HTTP routes (:mod:`.http`) and the MCP tools (:mod:`.mcp_tools`) only translate shapes; each search goes
through :meth:`Service.search`: the request's bounds checked (:mod:`.limits`), a named benchmark query checked to be
the task's, the searches handed to the batcher (:mod:`.batching`), and each answered query appended to the trace
(:mod:`.traces`) before the reply leaves.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import R2MedError
from .batching import Batcher
from .index import NOT_APPLIED, Hits, Search, ServedIndex
from .limits import Limits, Refused, check_queries
from .traces import TraceWriter


class Service:
    """One loaded index served under ``limits``, traced to ``trace`` (None: no trace)."""

    def __init__(self, index: ServedIndex, limits: Limits | None = None, trace: TraceWriter | None = None):
        self.index, self.limits, self.trace = index, limits or Limits(), trace
        self.batcher = Batcher(index, max_batch=max(self.limits.max_queries, 64))

    @property
    # the served system's record (open JSON: each family's facts) that jobs/serve.describe reads by its known keys
    def served(self) -> dict[str, Any]:
        return {**self.index.served, "limits": self.limits.record()}

    async def search(
        self,
        queries: Sequence[str],
        k: int,
        query_ids: Sequence[str | None] | None = None,
        session: str | None = None,
        endpoint: str = "",
    ) -> list[Hits]:
        """The top ``k`` of each query (see the module); ``query_ids``: the benchmark query each serves, or None."""
        queries = list(queries)
        check_queries(self.limits, queries, k)
        ids: list[str | None] = list(query_ids) if query_ids is not None else [None] * len(queries)
        if len(ids) != len(queries):
            raise Refused(400, f"query_ids has {len(ids)} entries for {len(queries)} queries")
        for qid in ids:
            if qid is not None and len(qid) > self.limits.max_query_chars:
                raise Refused(413, "a query_id is too long", "max_query_chars", self.limits.max_query_chars)
            try:
                self.index.check_query_id(qid)
            except R2MedError as exc:
                raise Refused(400, str(exc)) from None
        if session is not None and len(session) > self.limits.max_query_chars:
            raise Refused(413, "session is too long", "max_query_chars", self.limits.max_query_chars)
        hits = await self.batcher.submit([Search(q, k, qid) for q, qid in zip(queries, ids)])
        if self.trace is not None:
            for text, qid, found in zip(queries, ids, hits):
                self.trace.write(
                    {
                        "event": "search",
                        "endpoint": endpoint,
                        "session": session,
                        "query_id": qid,
                        "turn": self.trace.next_turn(session or "", qid or ""),
                        "query": text,
                        "k": k,
                        "ids": found.ids,
                        "scores": found.scores,
                        "exclusions": found.exclusions,
                    }
                )
        return hits

    def fetch(self, doc_id: str) -> str:
        """A document's text by id (a 404 naming it when the corpus has none)."""
        if len(doc_id) > self.limits.max_query_chars:
            raise Refused(413, "the document id is too long", "max_query_chars", self.limits.max_query_chars)
        text = self.index.document(doc_id)
        if text is None:
            raise Refused(404, f"no document {doc_id!r} in {self.index.collection.name}")
        return text

    @staticmethod
    def not_applied(hits: Sequence[Hits]) -> bool:
        return any(h.exclusions == NOT_APPLIED for h in hits)

    async def close(self) -> None:
        await self.batcher.close()
        if self.trace is not None:
            self.trace.close()
