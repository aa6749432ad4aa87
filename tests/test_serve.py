"""``r2med serve`` end to end: a real server on 127.0.0.1 driven by real clients (plain HTTP in Search-R1's and
FlashRAG's shapes, the ``mcp`` SDK's client over stdio and streamable HTTP).

References: ``r2med evaluate``'s run for the same queries (the job itself, in this process: ids, order and scores
must be equal); BRIGHT's ``excluded_ids`` read from the emulated hub's examples rows (tests/bright_hub.py: BRIGHT's
real rows), never from r2med; the request shapes as Search-R1's ``search_r1/search/retrieval_request.py`` sends them
(``{"queries", "topk", "return_scores"}`` -> ``{"result": [[{"document": {"id", "contents"}, "score"}]]}``) and as
FlashRAG's retrieval server takes them (``{"query", "top_n", "return_score"}`` -> ``[documents, scores]``).
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from bright_hub import bright_files, fill_bright_cache, have_shared_bright, hub_path, read_parquet
from conftest import SHARED_DATA
from serve_process import ServeProcess

pytest.importorskip("fastapi")
pytest.importorskip("mcp")
httpx = pytest.importorskip("httpx")

pytestmark = [pytest.mark.shared, pytest.mark.slow(seconds=15)]

MEDLINE = SHARED_DATA / "medline-med"


def medline() -> str:
    if not (MEDLINE / "corpus.jsonl").exists():
        pytest.skip("../shared/data/medline-med is not available")
    return str(MEDLINE)


_RUNS: dict = {}


def evaluate_run(task: str, data_dir: str | None = None):
    """``r2med evaluate -r bm25``'s run of the task and its collection (the job itself, nothing written; once per
    module and task)."""
    if (task, data_dir) not in _RUNS:
        _RUNS[task, data_dir] = _evaluate_run(task, data_dir)
    return _RUNS[task, data_dir]


def _evaluate_run(task: str, data_dir: str | None = None):
    from r2med.data import check_hub, resolve
    from r2med.jobs.evaluate import run_task
    from r2med.steps import EvaluateStep

    [ref] = check_hub(resolve(task, data_dir))
    collection = ref.load()
    result = run_task(collection, EvaluateStep.of("bm25"))
    return result.run, collection


def top(run_docs, collection, k):
    """evaluate's run for one query, best first (its run.trec's order: score, then corpus position)."""
    from r2med.runs.run import ranked

    position = {d: i for i, d in enumerate(collection.corpus)}
    return ranked(run_docs, position)[:k]


@pytest.fixture(scope="module")
def medline_server(tmp_path_factory):
    home = tmp_path_factory.mktemp("serve_home")
    import os

    before = os.environ.get("R2MED_HOME")
    os.environ["R2MED_HOME"] = str(home)
    try:
        trace = home / "trace.jsonl"
        with ServeProcess("-d", medline(), "-t", "medline-med", "--trace", trace) as server:
            yield server, trace
    finally:
        if before is None:
            os.environ.pop("R2MED_HOME", None)
        else:
            os.environ["R2MED_HOME"] = before


def test_search_r1_and_flashrag_shapes_answer_evaluates_run(medline_server):
    server, _ = medline_server
    run, collection = evaluate_run("medline-med", medline())
    qids = sorted(collection.queries)
    with httpx.Client(base_url=server.url, timeout=60) as client:
        body = {"queries": [collection.queries[q] for q in qids], "topk": 10, "return_scores": True}
        reply = client.post("/retrieve", json=body)
        assert reply.status_code == 200, reply.text
        result = reply.json()
        assert set(result) == {"result"}  # Search-R1's shape, nothing added on a task without exclusions
        for qid, hits in zip(qids, result["result"]):
            want = top(run[qid], collection, 10)
            assert [(h["document"]["id"], h["score"]) for h in hits] == want
            assert all(h["document"]["contents"] == collection.corpus[h["document"]["id"]] for h in hits)
        plain = client.post("/retrieve", json={"queries": [collection.queries[qids[0]]], "topk": 3}).json()
        assert [d["id"] for d in plain["result"][0]] == [d for d, _ in top(run[qids[0]], collection, 3)]
        assert set(plain["result"][0][0]) == {"id", "contents"}

        q = qids[1]
        docs, scores = client.post(
            "/search", json={"query": collection.queries[q], "top_n": 5, "return_score": True}
        ).json()
        assert list(zip([d["id"] for d in docs], scores)) == top(run[q], collection, 5)
        only_docs = client.post("/search", json={"query": collection.queries[q], "top_n": 2}).json()
        assert [d["id"] for d in only_docs] == [d for d, _ in top(run[q], collection, 2)]
        batch = client.post(
            "/batch_search", json={"query": [collection.queries[x] for x in qids[:3]], "top_n": 4, "return_score": True}
        ).json()
        docs_lists, score_lists = batch
        for x, docs, scores in zip(qids[:3], docs_lists, score_lists):
            assert list(zip([d["id"] for d in docs], scores)) == top(run[x], collection, 4)
        health = client.get("/health").json()
        assert health["status"] == "healthy" and health["served"]["task"] == "medline-med"
        assert health["served"]["config"]["retriever"] == "bm25" and health["served"]["protocol"]["depth"] == 100
        assert "/retrieve" in client.get("/openapi.json").json()["paths"]
        assert client.get("/docs").status_code == 200
        fetched = client.post("/fetch", json={"id": qids and top(run[q], collection, 1)[0][0]}).json()
        assert fetched["contents"] == collection.corpus[fetched["id"]]
    assert "serving medline-med" in server.stderr and "protocol local" in server.stderr


def test_concurrent_requests_are_searched_together_and_each_answered_right(medline_server):
    """32 requests at once: each gets its own query's list (batched inside, never mixed up)."""
    server, _ = medline_server
    run, collection = evaluate_run("medline-med", medline())
    qids = sorted(collection.queries)

    async def main():
        async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:

            async def one(i):
                q = qids[i % len(qids)]
                r = await client.post(
                    "/search", json={"query": collection.queries[q], "top_n": 1 + i % 7, "return_score": True}
                )
                return q, 1 + i % 7, r.json()

            return await asyncio.gather(*(one(i) for i in range(32)))

    for q, k, (docs, scores) in asyncio.run(main()):
        assert list(zip([d["id"] for d in docs], scores)) == top(run[q], collection, k)


def mcp_payload(result) -> dict:
    assert not result.is_error, result
    if getattr(result, "structured_content", None):
        return result.structured_content
    return json.loads(result.content[0].text)


def test_mcp_over_streamable_http_and_stdio(medline_server, tmp_path):
    import os

    from mcp import Client, StdioServerParameters

    server, _ = medline_server
    run, collection = evaluate_run("medline-med", medline())
    q = sorted(collection.queries)[2]
    want = top(run[q], collection, 5)

    async def drive(target):
        async with Client(target) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert {"search", "fetch"} <= names
            found = mcp_payload(
                await client.call_tool("search", {"query": collection.queries[q], "topk": 5, "query_id": q})
            )
            got = [(r["id"], r["score"]) for r in found["results"]]
            fetched = mcp_payload(await client.call_tool("fetch", {"id": got[0][0]}))
            bad = await client.call_tool("search", {"query": "x", "topk": 100_000})
            return got, fetched, found, bad

    got, fetched, found, bad = asyncio.run(drive(server.url + "/mcp"))
    assert got == want and fetched["text"] == collection.corpus[want[0][0]] and found["exclusions"] == "none"
    assert bad.is_error and "max_topk" in bad.content[0].text

    import r2med

    # over stdio the mcp SDK starts the server as a real process itself
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "r2med", "-q", "serve", "-d", medline(), "-t", "medline-med", "--mcp-stdio"],
        env={**os.environ, "PYTHONPATH": str(Path(r2med.__file__).parents[1])},
    )
    got, fetched, _, _ = asyncio.run(drive(params))
    assert got == want and fetched["text"] == collection.corpus[want[0][0]]


def test_refusals_are_one_json_line_naming_the_limit(medline_server):
    server, _ = medline_server
    with httpx.Client(base_url=server.url, timeout=60) as client:
        cases = [
            (b'{"queries": "not a list"}', "/retrieve", None),
            (b'{"queries": ["a"], "topk": 100000}', "/retrieve", "max_topk"),
            (b'{"queries": ["a"], "topk": 3, "mystery": 1}', "/retrieve", None),
            (b'{"query": "\xff\xfe"}', "/search", None),
            (b"{not json", "/search", None),
            (json.dumps({"queries": ["a"] * 1000}).encode(), "/retrieve", "max_queries"),
            (json.dumps({"query": "a" * 9000}).encode(), "/search", "max_query_chars"),
            (b"x" * 2_000_000, "/search", "max_body_bytes"),
            (b'{"query": "a", "query_id": "no-such-query"}', "/search", None),
        ]
        for body, path, limit in cases:
            reply = client.post(path, content=body, headers={"content-type": "application/json"})
            assert 400 <= reply.status_code < 500, (body[:40], reply.status_code, reply.text)
            assert "\n" not in reply.text.strip() and "Traceback" not in reply.text
            payload = reply.json()
            assert isinstance(payload["error"], str) and payload["error"]
            if limit is not None:
                assert payload["limit"] == limit, payload


def test_another_host_needs_a_token_and_the_token_is_checked(tmp_path):
    from conftest import run_r2med

    res = run_r2med("serve", "-d", medline(), "-t", "medline-med", "--host", "0.0.0.0")
    assert res.returncode == 2 and "--token" in res.stderr
    server = ServeProcess("-d", medline(), "-t", "medline-med", "--token", "s3cret", "--no-mcp")
    with server, httpx.Client(base_url=server.url, timeout=60) as client:
        body = {"queries": ["heart"], "topk": 1}
        assert client.post("/retrieve", json=body).status_code == 401
        assert client.post("/retrieve", json=body, headers={"Authorization": "Bearer wrong"}).status_code == 401
        ok = client.post("/retrieve", json=body, headers={"Authorization": "Bearer s3cret"})
        assert ok.status_code == 200 and len(ok.json()["result"][0]) == 1


# --- BRIGHT: exclusions per named query ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def leetcode(tmp_path_factory):
    if not have_shared_bright():
        pytest.skip("../shared/data/bright is not available")
    pytest.importorskip("pyarrow")
    files = bright_files(("leetcode",), queries=4, distractors=30)
    rows = read_parquet(files[hub_path("examples", "leetcode")])
    return files, rows


def test_brights_excluded_ids_never_returned_for_a_named_query(leetcode, hf_cache):
    files, rows = leetcode
    fill_bright_cache(hf_cache, files)
    run, collection = evaluate_run("bright:leetcode")
    with ServeProcess("-t", "bright:leetcode") as server, httpx.Client(base_url=server.url, timeout=60) as client:
        assert "exclusions on" in server.stderr and "protocol bright" in server.stderr
        named = 0
        for row in rows:
            banned = set(row["excluded_ids"]) - {"N/A"}
            named += bool(banned)
            body = {"queries": [row["query"]], "topk": 50, "return_scores": True, "query_ids": [row["id"]]}
            reply = client.post("/retrieve", json=body)
            assert EXCLUSIONS_HEADER not in reply.headers and "r2med" not in reply.json()
            hits = reply.json()["result"][0]
            assert not banned & {h["document"]["id"] for h in hits}
            assert [(h["document"]["id"], h["score"]) for h in hits] == top(run[row["id"]], collection, 50)
            docs = client.post("/search", json={"query": row["query"], "top_n": 50, "query_id": row["id"]}).json()
            assert not banned & {d["id"] for d in docs}
            # without the query named: the reply says exclusions were not applied (and the lexical emulator's
            # excluded documents, which repeat the query's words, come back)
            free = client.post("/retrieve", json={"queries": [row["query"]], "topk": 1000})
            assert free.headers[EXCLUSIONS_HEADER] == "not applied"
            assert free.json()["r2med"]["exclusions"] == "not applied"
            if banned:
                assert banned & {d["id"] for d in free.json()["result"][0]}
            flash = client.post("/search", json={"query": row["query"], "top_n": 5})
            assert flash.headers[EXCLUSIONS_HEADER] == "not applied"
        assert named >= 2


EXCLUSIONS_HEADER = "x-r2med-exclusions"


def test_expand_through_a_running_server_replays_the_in_process_runs_cache(tmp_path):
    """``r2med expand --method search-r1`` first with the index built in-process, then with ``--retrieval-url`` on
    ``r2med serve`` over the same folder: the LLM sees the same prompts (every request answered from the first run's
    cache: the scripted LLM gets no new request) and the expansion file is the same, searches included."""
    pytest.importorskip("openai")
    from llm_server import LLMServer
    from test_expansion import run_cli
    from test_expansion_agentic import CORPUS, QUESTION

    root = tmp_path / "Biology"
    root.mkdir()
    (root / "corpus.jsonl").write_text("".join(json.dumps({"id": d, "text": t}) + "\n" for d, t in CORPUS.items()))
    (root / "query.jsonl").write_text(json.dumps({"id": "q1", "text": QUESTION}) + "\n")
    (root / "qrels.jsonl").write_text(json.dumps({"q_id": "q1", "p_id": "d2", "score": 1}) + "\n")
    script = ["<search>potassium acidosis insulin</search>", "<search>ketoacidosis</search>", "<answer>fluids</answer>"]
    common = ["expand", "--method", "search-r1", "--model", "test-model", "--data-dir", root, "--search-k", "3"]
    with LLMServer(script=list(script)) as llm:
        first = run_cli(*map(str, common), "--base-url", llm.base_url, "--out", str(tmp_path / "a"))
        assert first.returncode == 0, first.stderr
        assert llm.requests == 3
        with ServeProcess("-d", root, "-t", "Biology", "--no-mcp") as server:
            again = run_cli(
                *map(str, common),
                "--base-url",
                llm.base_url,
                "--out",
                str(tmp_path / "b"),
                "--retrieval-url",
                server.url,
            )
        assert again.returncode == 0, again.stderr
        assert llm.requests == 3  # the same prompts: all from the cache
    read = lambda out: json.loads((out / "Biology" / "search-r1" / "test-model" / "query_with_hydoc.jsonl").read_text())  # noqa: E731
    a, b = read(tmp_path / "a"), read(tmp_path / "b")
    assert a == b and len(a["searches"]) == 2 and a["hy_doc"] == "fluids"
    bad = run_cli(
        *map(str, common),
        "--base-url",
        "http://127.0.0.1:9",
        "--out",
        str(tmp_path / "c"),
        "--method",
        "hyde",
        "--retrieval-url",
        "http://127.0.0.1:9",
    )
    assert bad.returncode == 2 and "agentic" in bad.stderr
