"""A Search-R1-shaped retrieval server searched as a retriever (``r2med expand --retrieval-url URL``).

:class:`RemoteRetriever` has the one method r2med's agentic loop calls, ``search(queries, k) -> Run``: it posts
Search-R1's request (``{"queries", "topk", "return_scores": true}``; at most :data:`CHUNK` queries per request) to
``URL/retrieve`` and reads Search-R1's reply, keeping each document's text (``contents``) for the passages shown to
the LLM (:attr:`RemoteRetriever.texts`).  Against ``r2med serve`` over the same task and retriever, the agent sees the
same documents in the same order as with the in-process index (the server's scores are ``evaluate``'s, as its run
file stores them: the same order, ties included), so its prompts -- and the LLM cache -- are the same.

It sends only Search-R1's fields (no ``query_id``: the in-process loop applies no exclusions either), so any
Search-R1-compatible server answers it.  A failure is one line naming the URL.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypedDict

import httpx

from ..errors import R2MedError
from ..infra.json_types import JsonValue
from ..retrieval.base import QueryText, as_text
from ..runs.run import Run

#: Queries per request (r2med serve's default bound is 256).
CHUNK = 64


class SearchR1Request(TypedDict):
    """Search-R1's ``/retrieve`` request body."""

    queries: list[str]
    topk: int
    return_scores: bool


class RemoteRetriever:
    """``search`` over ``URL/retrieve`` (see the module)."""

    name = "remote"
    family = "lexical"

    def __init__(self, url: str, timeout: float = 300.0, token: str | None = None):
        self.url = url.rstrip("/")
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._client = httpx.Client(timeout=timeout, headers=headers)
        self.texts: dict[str, str] = {}

    def config(self) -> dict[str, str]:
        return {"retrieval_url": self.url}

    def _post(self, body: SearchR1Request) -> list[JsonValue]:
        try:
            reply = self._client.post(f"{self.url}/retrieve", json=body)
        except httpx.HTTPError as exc:
            raise R2MedError(f"--retrieval-url {self.url}: {type(exc).__name__}: {exc}") from None
        if reply.status_code != 200:
            raise R2MedError(f"--retrieval-url {self.url}/retrieve answered {reply.status_code}: {reply.text[:200]}")
        try:
            result: JsonValue = reply.json()["result"]
        except (ValueError, KeyError, TypeError):
            raise R2MedError(
                f"--retrieval-url {self.url}/retrieve: not Search-R1's reply ({reply.text[:100]!r})"
            ) from None
        if not isinstance(result, list) or len(result) != len(body["queries"]):
            raise R2MedError(f"--retrieval-url {self.url}/retrieve: {len(body['queries'])} queries, another count back")
        return result

    def search(self, queries: Mapping[str, QueryText], k: int = 100) -> Run:
        keys = list(queries)
        run: Run = {}
        for start in range(0, len(keys), CHUNK):
            part = keys[start : start + CHUNK]
            body: SearchR1Request = {"queries": [as_text(queries[q]) for q in part], "topk": k, "return_scores": True}
            for key, hits in zip(part, self._post(body)):
                if not isinstance(hits, list):
                    raise R2MedError(f"--retrieval-url {self.url}/retrieve: a query's result is not a list")
                docs: dict[str, float] = {}
                for rank, hit in enumerate(hits):
                    document = hit.get("document", hit) if isinstance(hit, dict) else None
                    if not isinstance(document, dict):
                        document = {}
                    doc_id = str(document.get("id", ""))
                    if not doc_id:
                        raise R2MedError(f"--retrieval-url {self.url}/retrieve: a document without an id")
                    self.texts[doc_id] = str(document.get("contents", ""))
                    score = hit.get("score") if isinstance(hit, dict) else None
                    docs[doc_id] = float(score) if isinstance(score, int | float) else float(len(hits) - rank)
                run[key] = docs
        return run

    def close(self) -> None:
        self._client.close()
