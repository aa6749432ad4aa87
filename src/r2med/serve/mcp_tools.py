"""The MCP server of ``r2med serve`` (the ``mcp`` SDK's ``MCPServer``): a ``search`` tool and a ``fetch`` tool.

``search(query, topk, query_id, session)`` answers through the same bounded, batched, traced path as the HTTP
routes (:class:`~r2med.serve.service.Service`); ``query_id`` names the benchmark query the search serves (BRIGHT's
excluded ids for it are then never returned); without it, on a task with exclusions, the result says they were not
applied.  ``fetch(id)`` returns a document's text.  Served over stdio (``r2med serve --mcp-stdio``) or streamable
HTTP at ``/mcp`` beside the HTTP routes.
"""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from .index import NOT_APPLIED, NOT_APPLIED_NOTE
from .limits import Refused
from .service import Service


def mcp_server(service: Service, instructions: str | None = None) -> MCPServer[object]:
    """An ``MCPServer`` with ``search`` and ``fetch`` over ``service``."""

    served = service.served
    task = served.get("task", "the task")
    server: MCPServer[object] = MCPServer(
        name="r2med",
        instructions=instructions
        or f"Search {task}'s corpus with r2med's index ({served.get('retriever', '')}); fetch a document by id.",
    )

    @server.tool(
        name="search",
        description=f"Search {task}'s corpus. Returns the top documents (id, score, text), best first. "
        "query_id: the benchmark query this search serves (its excluded documents are then never returned); "
        "session: your agent's session id (traces group searches by it).",
    )
    # the tool's return annotation is its published output schema: an open object (results, exclusions, note)
    async def search(
        query: str, topk: int = 10, query_id: str | None = None, session: str | None = None
    ) -> dict[str, Any]:
        try:
            [hits] = await service.search([query], topk, [query_id], session, endpoint="mcp:search")
        except Refused as exc:
            raise ToolError(exc.message + (f" (limit {exc.limit}={exc.value})" if exc.limit else "")) from None
        results = [
            {"id": d, "score": s, "text": service.index.document(d) or ""} for d, s in zip(hits.ids, hits.scores)
        ]
        out: dict[str, object] = {"results": results, "exclusions": hits.exclusions}
        if hits.exclusions == NOT_APPLIED:
            out["note"] = NOT_APPLIED_NOTE
        return out

    @server.tool(name="fetch", description=f"A document of {task}'s corpus by its id: its full text.")
    # the argument's name is what clients send; the return annotation is the published output schema: an open object
    async def fetch(id: str) -> dict[str, Any]:
        try:
            return {"id": id, "text": service.fetch(id)}
        except Refused as exc:
            raise ToolError(exc.message) from None

    return server
