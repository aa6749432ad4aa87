"""``r2med serve`` under faults: 64 concurrent clients, one request in ten malformed, the server SIGKILLed mid-load and
restarted on the same port.

Every good request is answered right (``r2med evaluate``'s run for its query: ids, order, scores; a request cut off by
the kill is sent again once the server is back), every bad one gets a 4xx whose body is one JSON line with an
``error`` (never a traceback), the trace reads back whole with its torn line counted, and nothing is written outside
the trace's folder and R2MED_HOME (the server's working folder stays empty).

A kill -9 between two writes leaves no torn line; when the kill left none, the test appends what a write cut short
by the kill leaves (a line's head, no newline) before the restart -- the restarted server must end it and mark it,
and the reader must count and skip it.
"""

from __future__ import annotations

import asyncio
import os
import socket

import pytest

from serve_process import ServeProcess
from test_containment import snapshot
from test_serve import evaluate_run, medline, top

pytest.importorskip("fastapi")
httpx = pytest.importorskip("httpx")

pytestmark = [pytest.mark.shared, pytest.mark.slow(seconds=25)]

CLIENTS, PER_CLIENT, KILL_AFTER = 64, 5, 120
TEN_MB = b'{"query": "' + b"a" * 10_000_000 + b'"}'
BAD = [
    (b'{"queries": "heart", "topk": 3}', "/retrieve"),  # wrong type
    (b'{"queries": ["heart"], "topk": 1000000000}', "/retrieve"),  # huge topk
    (TEN_MB, "/search"),  # 10 MB body
    (b'{"query": "heart \xff\xfe failure"}', "/search"),  # invalid UTF-8
    (b'{"query": "heart", "top_n": 3, "sneaky": "field"}', "/search"),  # unknown field
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_kill_9_mid_load_then_restart(tmp_path):
    run, collection = evaluate_run("medline-med", medline())
    qids = sorted(collection.queries)
    home = os.environ["R2MED_HOME"]
    trace_dir = tmp_path / "traces"
    trace = trace_dir / "agent.jsonl"
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    (tmp_path / "mine.txt").write_text("the user's own file")
    before = snapshot(tmp_path)
    port = free_port()
    args = ("-d", medline(), "-t", "medline-med", "--port", port, "--trace", trace, "--no-mcp")
    servers = [ServeProcess(*args, cwd=cwd)]
    url = servers[0].url
    state = {"answered": 0, "restarted": asyncio.Event(), "tore": False}
    good_replies: list[tuple[str, list[str]]] = []

    async def send(client, path, content):
        while True:
            try:
                return await client.post(path, content=content, headers={"content-type": "application/json"})
            except httpx.TransportError:  # the server was killed under this request: send it again
                await asyncio.sleep(0.2)

    async def worker(c, client):
        for i in range(PER_CLIENT):
            n = c * PER_CLIENT + i
            if n % 10 == 9:
                body, path = BAD[(n // 10) % len(BAD)]
                reply = await send(client, path, body)
                assert 400 <= reply.status_code < 500, (body[:50], reply.status_code, reply.text[:200])
                assert reply.text.count("\n") == 0 and "Traceback" not in reply.text
                assert isinstance(reply.json()["error"], str)
            else:
                q, k = qids[n % len(qids)], 1 + n % 10
                body = {"queries": [collection.queries[q]], "topk": k, "return_scores": True, "session": f"c{c}"}
                reply = await send(client, "/retrieve", httpx.Request("POST", "/", json=body).content)
                assert reply.status_code == 200, reply.text
                hits = reply.json()["result"][0]
                got = [(h["document"]["id"], h["score"]) for h in hits]
                assert got == top(run[q], collection, k)
                good_replies.append((collection.queries[q], [d for d, _ in got]))
            state["answered"] += 1

    async def killer():
        while state["answered"] < KILL_AFTER:
            await asyncio.sleep(0.01)
        servers[0].kill()
        data = trace.read_bytes()
        if not data.endswith(b"\n"):
            state["tore"] = True  # the kill tore the last line itself
        else:
            with open(trace, "ab") as f:
                f.write(b'{"time": 1.5, "event": "search", "session": "c1", "query_id": null, "turn": 2, "que')
        servers.append(await asyncio.to_thread(ServeProcess, *args, cwd=cwd))

    async def main():
        limits = httpx.Limits(max_connections=CLIENTS)
        async with httpx.AsyncClient(base_url=url, timeout=120, limits=limits) as client:
            await asyncio.gather(killer(), *(worker(c, client) for c in range(CLIENTS)))

    try:
        asyncio.run(main())
    finally:
        code = servers[-1].stop()  # SIGTERM: graceful
        for s in servers:
            s.kill()
    assert code == 0, servers[-1].stderr
    assert "Traceback" not in servers[-1].stderr
    assert len(servers) == 2 and state["answered"] == CLIENTS * PER_CLIENT

    from r2med.serve.traces import read_trace

    read = read_trace(trace)
    assert read.torn == 1
    assert len(read.starts) == 2 and read.starts[1]["torn_before"] is True
    traced = {(r["query"], tuple(r["ids"])) for r in read.searches}
    assert all((q, tuple(ids)) in traced for q, ids in good_replies)  # every reply a client got was traced first
    assert sum(1 for _ in good_replies) == CLIENTS * PER_CLIENT - CLIENTS * PER_CLIENT // 10

    after = snapshot(tmp_path)
    changed = {p for p in set(before) | set(after) if before.get(p) != after.get(p)}
    assert all(p.startswith(("traces", "cwd")) for p in changed), changed
    assert list(cwd.iterdir()) == []
    assert changed == {"traces/agent.jsonl"}
    assert not str(trace).startswith(home)
