"""The HTTP face of ``r2med serve`` (FastAPI): Search-R1's and FlashRAG's request shapes, ``/fetch``, ``/health``.

* ``POST /retrieve`` -- Search-R1's ``search_r1/search/retrieval_server.py``: ``{"queries": [...], "topk": k,
  "return_scores": true}`` -> ``{"result": [[{"document": {"id", "contents"}, "score"}, ...], ...]}`` (without
  ``return_scores``: the documents alone);
* ``POST /search`` -- FlashRAG's retrieval server: ``{"query", "top_n", "return_score"}`` -> ``[documents, scores]``
  (without ``return_score``: the documents); ``POST /batch_search``: ``{"query": [...], ...}`` -> ``[[documents per
  query], [scores per query]]``; ``GET /health`` -> ``{"status": "healthy", ...}``;
* ``POST /fetch`` ``{"id"}`` -> ``{"id", "contents"}``; the OpenAPI page at ``/docs`` (``/openapi.json``); the MCP
  server's streamable HTTP at ``/mcp`` (:mod:`.mcp_tools`).

Every search request may add ``query_id`` (``query_ids`` for several queries: the benchmark query each serves) and
``session``; other fields are refused.  On a task with exclusions, a reply to a search that named no benchmark query
carries the header ``X-R2MED-Exclusions: not applied`` (and, in Search-R1's dict, ``"r2med": {"exclusions": ...}``).

Safety: the body is read up to ``max_body_bytes`` (more: 413 naming the limit), must be UTF-8 JSON matching the
route's schema exactly (types strict, unknown fields refused), and every refusal or failure is one JSON line
``{"error": ...}`` -- never a traceback.  With a token, every route needs ``Authorization: Bearer <token>``.
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, TypedDict, TypeVar

import orjson
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..errors import R2MedError
from ..infra.json_types import JsonObject
from .index import NOT_APPLIED, NOT_APPLIED_NOTE, Hits
from .limits import Refused
from .service import Service

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

log = logging.getLogger(__name__)

EXCLUSIONS_HEADER = "X-R2MED-Exclusions"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class RetrieveRequest(_Strict):
    """Search-R1's request (``query_ids``, ``session``: r2med's optional additions)."""

    queries: list[str]
    topk: int | None = Field(None, description="Documents per query (default: the server's --topk).")
    return_scores: bool = False
    query_ids: list[str | None] | None = Field(None, description="The benchmark query each query serves.")
    session: str | None = Field(None, description="Your agent's session id (the trace groups searches by it).")


class SearchRequest(_Strict):
    """FlashRAG's ``/search`` request (``query_id``, ``session``: r2med's optional additions)."""

    query: str
    top_n: int = 10
    return_score: bool = False
    query_id: str | None = None
    session: str | None = None


class BatchSearchRequest(_Strict):
    """FlashRAG's ``/batch_search`` request (``query_ids``, ``session``: r2med's optional additions)."""

    query: list[str]
    top_n: int = 10
    return_score: bool = False
    query_ids: list[str | None] | None = None
    session: str | None = None


class FetchRequest(_Strict):
    id: str


M = TypeVar("M", bound=BaseModel)


def refusal(exc: Refused) -> JSONResponse:
    return JSONResponse(exc.body(), status_code=exc.status)


def _validation_line(exc: ValidationError) -> str:
    first = exc.errors(include_url=False, include_input=False)[0]
    where = ".".join(str(p) for p in first.get("loc", ())) or "body"
    more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    return f"{where}: {first.get('msg', 'invalid')}{more}"


async def parse(request: Request, model: type[M], max_bytes: int) -> M:
    """The request's body as ``model``: at most ``max_bytes``, UTF-8, JSON, the schema exactly (else a refusal)."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > max_bytes:
        raise Refused(413, f"the body has {int(declared)} bytes", "max_body_bytes", max_bytes)
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > max_bytes:
            raise Refused(413, "the body is too large", "max_body_bytes", max_bytes)
    try:
        text = bytes(body).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Refused(400, f"the body is not UTF-8 (byte {exc.start})") from None
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise Refused(400, f"the body is not JSON ({exc.msg} at character {exc.pos})") from None
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        raise Refused(422, _validation_line(exc)) from None


class Document(TypedDict):
    """A document as Search-R1 and FlashRAG answer it."""

    id: str
    contents: str


class ScoredDocument(TypedDict):
    """Search-R1's document with its score (``return_scores``)."""

    document: Document
    score: float


def _document(service: Service, doc_id: str) -> Document:
    return {"id": doc_id, "contents": service.index.document(doc_id) or ""}


def _headers(hits: list[Hits]) -> dict[str, str]:
    return {EXCLUSIONS_HEADER: NOT_APPLIED} if Service.not_applied(hits) else {}


class Guard:
    """ASGI middleware around everything: the bearer token (when set) and a last answer for any failure that
    escaped a route -- one JSON line, never a traceback."""

    def __init__(self, app: ASGIApp, token: str | None):
        self.app, self.token = app, token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if self.token is not None:
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(given, b"Bearer " + self.token.encode()):
                await JSONResponse({"error": "missing or wrong bearer token"}, status_code=401)(scope, receive, send)
                return
        started = False

        async def sending(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, sending)
        except Exception:
            log.exception("request failed")
            if not started:
                await JSONResponse({"error": "internal error (logged by the server)"}, status_code=500)(
                    scope, receive, send
                )


def http_app(
    service: Service,
    default_topk: int = 3,
    token: str | None = None,
    mcp: MCPServer[object] | None = None,
    host: str = "127.0.0.1",
) -> Guard:
    """The FastAPI app over ``service`` (``mcp``: an ``MCPServer`` whose streamable HTTP is mounted at ``/mcp``),
    wrapped in :class:`Guard`."""
    limits = service.limits

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        if mcp is None:
            yield
        else:
            async with mcp.session_manager.run():
                yield
        await service.close()

    app = FastAPI(
        title="r2med serve",
        description=f"r2med's index of {service.served.get('task')} ({service.served.get('retriever')}).",
        lifespan=lifespan,
    )

    @app.exception_handler(Refused)
    async def _refused(_: Request, exc: Refused) -> JSONResponse:
        return refusal(exc)

    @app.exception_handler(R2MedError)
    async def _r2med(_: Request, exc: R2MedError) -> JSONResponse:
        return JSONResponse({"error": " ".join(str(exc).split())}, status_code=400)

    def body_schema(model: type[BaseModel]) -> JsonObject:
        schema: JsonObject = {"application/json": {"schema": model.model_json_schema()}}
        return {"requestBody": {"content": schema, "required": True}}

    @app.post("/retrieve", openapi_extra=body_schema(RetrieveRequest))
    async def retrieve(request: Request) -> Response:
        """Search-R1's retrieval request."""
        req = await parse(request, RetrieveRequest, limits.max_body_bytes)
        k = req.topk if req.topk is not None else default_topk
        hits = await service.search(req.queries, k, req.query_ids, req.session, endpoint="retrieve")
        result: list[list[Document] | list[ScoredDocument]] = []
        for h in hits:
            docs = [_document(service, d) for d in h.ids]
            scored: list[ScoredDocument] = [{"document": d, "score": s} for d, s in zip(docs, h.scores)]
            result.append(scored if req.return_scores else docs)
        payload: dict[str, object] = {"result": result}
        if Service.not_applied(hits):
            payload["r2med"] = {"exclusions": NOT_APPLIED, "note": NOT_APPLIED_NOTE}
        return JSONResponse(payload, headers=_headers(hits))

    @app.post("/search", openapi_extra=body_schema(SearchRequest))
    async def search(request: Request) -> Response:
        """FlashRAG's single search."""
        req = await parse(request, SearchRequest, limits.max_body_bytes)
        [h] = await service.search([req.query], req.top_n, [req.query_id], req.session, endpoint="search")
        docs = [_document(service, d) for d in h.ids]
        return JSONResponse([docs, h.scores] if req.return_score else docs, headers=_headers([h]))

    @app.post("/batch_search", openapi_extra=body_schema(BatchSearchRequest))
    async def batch_search(request: Request) -> Response:
        """FlashRAG's batch search."""
        req = await parse(request, BatchSearchRequest, limits.max_body_bytes)
        hits = await service.search(req.query, req.top_n, req.query_ids, req.session, endpoint="batch_search")
        docs = [[_document(service, d) for d in h.ids] for h in hits]
        body = [docs, [h.scores for h in hits]] if req.return_score else docs
        return JSONResponse(body, headers=_headers(hits))

    @app.post("/fetch", openapi_extra=body_schema(FetchRequest))
    async def fetch(request: Request) -> Response:
        """A document by id."""
        req = await parse(request, FetchRequest, limits.max_body_bytes)
        return JSONResponse({"id": req.id, "contents": service.fetch(req.id)})

    @app.get("/health")
    # the annotation is the route's published schema: an open object (``served`` is the served system's record)
    async def health() -> dict[str, Any]:
        """FlashRAG's health answer, and what is served."""
        return {"status": "healthy", "retrievers": {"total": 1, "available": 1}, "served": service.served}

    if mcp is not None:
        app.router.routes.extend(
            mcp.streamable_http_app(
                streamable_http_path="/mcp", host=host, max_request_body_size=limits.max_body_bytes
            ).routes
        )
    return Guard(app, token)
