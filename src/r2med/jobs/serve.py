"""``r2med serve``: load one task's index once (as ``evaluate`` builds it) and serve it over HTTP and MCP.

* :func:`load` -- an :class:`~r2med.steps.EvaluateStep` and one task made a :class:`~r2med.serve.service.Service`:
  the retriever ``evaluate`` would make for that task (same options, same cached index and embeddings), indexed
  once, and what is served as ``evaluate`` records it (task, source, data commit, retriever config, protocol);
* :func:`serve_http` -- uvicorn on a socket bound here (``127.0.0.1`` unless told; any other host needs a token),
  the MCP server at ``/mcp``; SIGTERM/SIGINT shut it down gracefully, the trace closed whole;
* :func:`serve_stdio` -- the MCP server over stdin/stdout.

A fused system (several steps and a :class:`~r2med.steps.FuseStep`) and a reranked one (a
:class:`~r2med.steps.RerankStep`) are recomputed per query: every member searched, its lists fused as ``fuse`` fuses
their runs, the (fused) first stage reranked as ``rerank`` reranks it (:class:`~r2med.serve.index.System`); what is
served records each member, the fusion and the reranker as those commands record them.
"""

from __future__ import annotations

import logging
import signal
import socket
from collections.abc import Callable, Sequence
from pathlib import Path

import anyio
import uvicorn

from ..data import TaskRef
from ..data.benchmarks import protocol_of
from ..errors import R2MedError
from ..infra.home import remember_collection
from ..infra.json_shapes import json_object
from ..infra.json_types import JsonObject
from ..reranking.base import make_reranker, reranker_meta
from ..retrieval.base import index_collection
from ..retrieval.registry import make_retriever
from ..runs.fusion import check_weights
from ..serve.http import http_app
from ..serve.index import Fusion, Rerank, ServedIndex, System
from ..serve.limits import Limits
from ..serve.mcp_tools import mcp_server
from ..serve.service import Service
from ..serve.traces import TraceWriter
from ..steps import EvaluateStep, FuseStep, RerankStep
from .evaluate import check_excludes, plan
from .fuse import system_name as fused_name
from .rerank import system_name as reranked_name

log = logging.getLogger(__name__)

#: The signals that stop a server gracefully.
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)

#: Hosts a server may bind without a token: this machine only.
LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")


def check_host(host: str, token: str | None) -> None:
    """Refuse, in one line, a server reachable from other machines without a bearer token."""
    if host not in LOCAL_HOSTS and not token:
        raise R2MedError(
            f"--host {host} makes the server reachable from other machines: give --token (clients send "
            "'Authorization: Bearer <token>'), or keep the default 127.0.0.1"
        )


def load(
    step: EvaluateStep | Sequence[EvaluateStep],
    ref: TaskRef,
    limits: Limits | None = None,
    trace: str | Path | None = None,
    fusion: FuseStep | None = None,
    rerank: RerankStep | None = None,
) -> Service:
    """The service of one task (see the module); ``trace``: the trace file appended to (None: no trace); several
    ``step``: fused as ``fusion`` says (its ``systems`` unused); ``rerank``: the reranker applied to the first stage
    (its ``runs`` unused)."""

    steps = [step] if isinstance(step, EvaluateStep) else list(step)
    if not steps:
        raise R2MedError("serve needs a retriever")
    if len(steps) > 1 and fusion is None:
        raise R2MedError(f"{len(steps)} retrievers and no fusion: give --fuse rrf|combsum|combmnz, or one -r")
    if len(steps) == 1 and fusion is not None:
        raise R2MedError("--fuse fuses two or more retrievers (-r A -r B); one is given")
    if any(s.expansion or s.expansion_file or s.expansion_dir for s in steps):
        raise R2MedError("serve answers the agent's own query texts: expansions are not served")
    jobs = [plan(s) for s in steps]
    if len({j.name for j in jobs}) < len(jobs):
        raise R2MedError(f"the fused retrievers must differ; given: {', '.join(j.name for j in jobs)}")
    if fusion is not None:
        check_weights(len(steps), fusion.options.weights)  # the rest FusionOptions checked; how many runs: not it
    if rerank is not None:
        reranker_meta(rerank.reranker_name)  # an unknown name refused before the index is built
    writer = TraceWriter(trace) if trace is not None else None  # checked before the index is built
    collection = ref.load()
    protocol = protocol_of(collection)
    depth = steps[0].depth(protocol.depth)
    members = []
    for s, job in zip(steps, jobs):
        retriever = make_retriever(s.retriever, task=collection.name, options=s.options)
        check_excludes(retriever, collection)
        member_depth = s.depth(protocol.depth)
        if member_depth != depth:
            raise R2MedError(f"the fused retrievers search to one depth; {job.name}: {member_depth}, not {depth}")
        members.append((s, job.name, retriever))
    if any(s.options.cache for s in steps):
        remember_collection(collection.fingerprint, collection.name, collection.source)
    for _, _, retriever in members:
        index_collection(retriever, collection)
    served: JsonObject = {
        "task": collection.name,
        "source": collection.source,
        "revision": collection.revision,
        "dataset_fingerprint": collection.dataset_fingerprint,
    }
    records: list[JsonObject] = [
        {"system": name, "retriever": s.retriever, "config": json_object({**s.record(depth), **r.config()})}
        for s, name, r in members
    ]
    system = System()
    if fusion is None:
        served.update(records[0])
        name = members[0][1]
    else:
        name = fused_name(fusion, [n for _, n, _ in members])
        fused_depth = fusion.depth(protocol.depth)
        served.update(
            system=name,
            retriever="+".join(s.retriever for s in steps),
            fusion=json_object(fusion.record(protocol.depth)),
            members=[*records],
        )
        system = System(tuple(r for _, _, r in members[1:]), Fusion(fusion.options, fused_depth))
    if rerank is not None:
        reranker = make_reranker(reranker_meta(rerank.reranker_name).name, options=rerank.options)
        name = reranked_name(rerank, name)
        served["rerank"] = {**json_object(rerank.record()), "reranker": reranker.config()}
        served["system"] = name
        system = System(system.others, system.fusion, Rerank(reranker, rerank.depth(), rerank.keep_tail))
    served.update(
        protocol=protocol.record(collection), documents=len(collection.corpus), queries=len(collection.queries)
    )
    limits = limits or Limits()
    most = system.depth(depth)
    if limits.max_topk > most:
        limits = Limits(limits.max_body_bytes, limits.max_queries, most, limits.max_query_chars)
    service = Service(ServedIndex(collection, members[0][2], depth, served, system), limits, writer)
    if writer is not None:
        writer.start(service.served)
    return service


def describe(service: Service) -> str:
    """One line saying what is served: task, data commit, system, protocol (as ``evaluate`` records them)."""
    s = service.served
    revision = s.get("revision") or "local folder"
    protocol = s.get("protocol") or {}
    excl = protocol.get("exclusions")
    exclusions = f"exclusions on {excl['queries']} queries ({excl['pairs']} pairs)" if excl else "no exclusions"
    how = s["retriever"]
    if "fusion" in s:
        how = f"{s['fusion']['fusion']} fusion of " + ", ".join(m["system"] for m in s["members"])
    if "rerank" in s:
        r = s["rerank"]
        how += f", reranked top {r['top_k']}" + ("" if r["keep_tail"] else " only")
    return (
        f"serving {s['task']} (data {revision}; {s['documents']:,} documents, {s['queries']:,} queries) with "
        f"{s['system']} ({how}), protocol {protocol.get('family') or 'local'}: depth up to "
        f"{service.limits.max_topk}, {exclusions}"
    )


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (port 0: one the system picks)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise R2MedError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.listen(2048)
    return sock


def serve_http(
    service: Service,
    host: str = "127.0.0.1",
    port: int = 8000,
    token: str | None = None,
    default_topk: int = 3,
    mcp: bool = True,
    on_listening: Callable[[str], None] | None = None,
) -> None:
    """Serve until SIGTERM/SIGINT (graceful: requests in flight answered, the trace closed whole)."""

    check_host(host, token)
    app = http_app(service, default_topk, token, mcp_server(service) if mcp else None, host=host)
    sock = bind(host, port)
    where = sock.getsockname()
    url = f"http://{'[' + where[0] + ']' if ':' in where[0] else where[0]}:{where[1]}"
    if on_listening is not None:
        on_listening(url)
    config = uvicorn.Config(
        app, log_level="warning", timeout_graceful_shutdown=10, lifespan="on", access_log=False, server_header=False
    )
    server = uvicorn.Server(config)
    stopped: list[int] = []
    # uvicorn shuts down gracefully on SIGTERM/SIGINT, then raises the signal again under the handlers it found:
    # these take it, so the command ends normally (exit 0) once the trace is closed whole
    before = {sig: signal.signal(sig, lambda signum, frame: stopped.append(signum)) for sig in STOP_SIGNALS}
    try:
        server.run(sockets=[sock])
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)
        sock.close()
        if service.trace is not None:
            service.trace.close()
    if stopped:
        log.info("stopped by signal %d after answering the requests in flight; the trace is closed", stopped[0])


def serve_stdio(service: Service) -> None:
    """The MCP server over stdin/stdout until the client closes it."""

    server = mcp_server(service)

    async def main() -> None:
        try:
            await server.run_stdio_async()
        finally:
            await service.close()

    anyio.run(main)
