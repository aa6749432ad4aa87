"""``r2med serve``: a task's exact index served to agents over HTTP (Search-R1's and FlashRAG's shapes) and MCP.

* :mod:`.index` -- the one loaded index and how a batch of searches is answered from it (exclusions, depth, texts);
* :mod:`.limits` -- the bounds every request is held to, and the JSON refusal naming the one it broke;
* :mod:`.batching` -- requests arriving together searched together;
* :mod:`.traces` -- the trace file: one complete JSON line per reply (writer and the one reader);
* :mod:`.http` -- the FastAPI app (``/retrieve``, ``/search``, ``/batch_search``, ``/fetch``, ``/health``, OpenAPI);
* :mod:`.mcp_tools` -- the MCP server (``search`` and ``fetch`` tools; stdio and streamable HTTP);
* :mod:`.trace_score` -- what an agent's trace retrieved, scored per query (``r2med score --trace``);
* :mod:`.client` -- a Search-R1-shaped server searched as a retriever (``r2med expand --retrieval-url``).
"""
