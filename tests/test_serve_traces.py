"""An agent's trace from ``r2med serve``: the trace file's reader (torn lines), ``r2med score --trace`` against a hand
computation, and ``r2med import --trace`` filing the union as a system.

The scripted agent makes fixed searches (each query's text, its first and last words) through the server's HTTP
app in this process (httpx's ASGI transport: the same routes, the same trace writer).  The hand computation reads the
trace file as JSON lines itself, builds each query's union in order of first retrieval, and scores it with pytrec_eval
directly against judgments read from the data files themselves (medline-med's ``qrels.jsonl``; BRIGHT's examples rows:
``gold_ids`` at relevance 1, ``excluded_ids`` removed).
"""

from __future__ import annotations

import asyncio
import json

import pytest

from bright_hub import bright_files, fill_bright_cache, have_shared_bright, hub_path, read_parquet
from conftest import run_r2med
from test_serve import medline

pytest.importorskip("fastapi")
httpx = pytest.importorskip("httpx")


# --- the reader ---------------------------------------------------------------------------------------------------


def test_a_torn_last_line_is_counted_and_a_restart_marks_the_one_before_it(tmp_path):
    from r2med.errors import R2MedError
    from r2med.serve.traces import TraceWriter, read_trace

    path = tmp_path / "t.jsonl"
    writer = TraceWriter(path)
    writer.start({"task": "x"})
    writer.write({"event": "search", "query_id": "q1", "ids": ["a"], "scores": [1.0]})
    writer.close()
    with open(path, "ab") as f:
        f.write(b'{"event": "search", "ids": ["b"')  # a write cut short
    read = read_trace(path)
    assert (read.torn, len(read.searches), len(read.starts)) == (1, 1, 1)
    writer = TraceWriter(path)  # a restart ends the torn line and says so
    writer.start({"task": "x"})
    writer.write({"event": "search", "query_id": "q2", "ids": ["c"], "scores": [2.0]})
    writer.close()
    read = read_trace(path)
    assert (read.torn, [s["query_id"] for s in read.searches]) == (1, ["q1", "q2"])
    assert read.starts[1]["torn_before"] is True
    lines = path.read_bytes().split(b"\n")
    lines.insert(1, b"{broken")  # a bad line that no restart explains: an error naming the line
    path.write_bytes(b"\n".join(lines))
    with pytest.raises(R2MedError, match=r"t\.jsonl:2: not a trace record"):
        read_trace(path)


# --- a scripted agent ---------------------------------------------------------------------------------------------


def scripted_agent(task: str, data_dir: str | None, queries: dict[str, str], trace, k: int = 5):
    """Three fixed searches per query (its text, first 4 words, last 4 words), each naming the query, and one
    search naming none; through the server's HTTP routes."""
    from r2med.data import check_hub, resolve
    from r2med.jobs.serve import load
    from r2med.serve.http import http_app
    from r2med.steps import EvaluateStep

    [ref] = check_hub(resolve(task, data_dir))
    service = load(EvaluateStep.of("bm25"), ref, trace=trace)
    app = http_app(service)

    async def main():
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://agent") as client:
            for qid, text in queries.items():
                words = text.split()
                for search in (text, " ".join(words[:4]), " ".join(words[-4:])):
                    body = {"query": search, "top_n": k, "query_id": qid, "session": "agent-1"}
                    reply = await client.post("/search", json=body)
                    assert reply.status_code == 200, reply.text
            await client.post("/retrieve", json={"queries": ["unattributed search"], "topk": k})
        await service.close()

    asyncio.run(main())


def by_hand(trace, qrels, excluded=None):
    """Per query: searches, union (first-retrieval order, excluded removed), recall, recall per turn, nDCG@10."""
    import pytrec_eval

    turns: dict[str, list[list[str]]] = {}
    for line in trace.read_text().splitlines():
        record = json.loads(line)
        if record["event"] == "search" and record["query_id"] is not None:
            turns.setdefault(record["query_id"], []).append(record["ids"])
    out = {}
    for qid, searches in turns.items():
        banned = (excluded or {}).get(qid, set())
        relevant = {d for d, g in qrels[qid].items() if g > 0}
        union: list[str] = []
        per_turn = []
        for ids in searches:
            union += [d for d in ids if d not in union and d not in banned]
            per_turn.append(len(relevant & set(union)) / len(relevant))
        run = {qid: {d: float(len(union) - i) for i, d in enumerate(union)}}
        ndcg = pytrec_eval.RelevanceEvaluator({qid: qrels[qid]}, {"ndcg_cut.10"}).evaluate(run)[qid]["ndcg_cut_10"]
        removed = len({d for ids in searches for d in ids if d in banned})
        out[qid] = {"searches": len(searches), "distinct": len(union), "recall": per_turn[-1]}
        out[qid].update({"recall_by_turn": per_turn, "ndcg_cut_10": ndcg, "excluded_removed": removed})
    return out


def check_scores(scored, hand):
    assert set(scored["per_query"]) == set(hand)
    for qid, row in hand.items():
        got = scored["per_query"][qid]
        for key in ("searches", "distinct", "excluded_removed"):
            assert got[key] == row[key], (qid, key)
        for key in ("recall", "ndcg_cut_10"):
            assert got[key] == pytest.approx(row[key], abs=1e-12), (qid, key)
        assert got["recall_by_turn"] == pytest.approx(row["recall_by_turn"], abs=1e-12)
    for key in ("searches", "distinct", "recall", "ndcg_cut_10"):
        mean = sum(float(r[key]) for r in hand.values()) / len(hand)
        assert scored["average"][key] == pytest.approx(mean, abs=1e-12)


@pytest.mark.shared
def test_score_and_import_a_medline_trace_equal_a_hand_computation(tmp_path):
    data = medline()
    queries = {}
    with open(f"{data}/query.jsonl") as f:
        for line in f:
            row = json.loads(line)
            queries[row["id"]] = row["text"]
    qrels: dict[str, dict[str, int]] = {}
    with open(f"{data}/qrels.jsonl") as f:
        for line in f:
            row = json.loads(line)
            qrels.setdefault(row["q_id"], {})[row["p_id"]] = int(row["score"])
    picked = {q: queries[q] for q in sorted(queries)[:4]}
    trace = tmp_path / "agent.jsonl"
    scripted_agent("medline-med", data, picked, trace)

    res = run_r2med("score", "--trace", trace, "-t", "medline-med", "-d", data, "--format", "json", "--per-query")
    assert res.returncode == 0, res.stderr
    scored = json.loads(res.stdout)
    hand = by_hand(trace, qrels)
    check_scores(scored, hand)
    assert scored["unattributed_searches"] == 1 and scored["torn_lines"] == 0

    imported = run_r2med(
        "import", "--trace", trace, "-t", "medline-med", "-d", data, "--name", "agent", "-o", tmp_path / "runs"
    )
    assert imported.returncode == 0, imported.stderr
    metrics = json.loads((tmp_path / "runs" / "agent" / "medline-med" / "metrics.json").read_text())
    for qid, row in hand.items():
        assert metrics["per_query"][qid]["ndcg_cut_10"] == pytest.approx(row["ndcg_cut_10"], abs=1e-12)
    assert metrics["config"]["imported"]["trace"] is True
    assert run_r2med("report", tmp_path / "runs").returncode == 0
    shown = run_r2med("show", tmp_path / "runs", "--task", "medline-med", "--query", sorted(picked)[0])
    assert shown.returncode == 0, shown.stderr


@pytest.mark.shared
def test_score_a_bright_trace_with_exclusions_removed(tmp_path, hf_cache):
    if not have_shared_bright():
        pytest.skip("../shared/data/bright is not available")
    pytest.importorskip("pyarrow")
    files = bright_files(("leetcode",), queries=4, distractors=30)
    fill_bright_cache(hf_cache, files)
    rows = read_parquet(files[hub_path("examples", "leetcode")])
    qrels = {r["id"]: {g: 1 for g in r["gold_ids"]} for r in rows}
    excluded = {r["id"]: set(r["excluded_ids"]) - {"N/A"} for r in rows}
    trace = tmp_path / "agent.jsonl"
    scripted_agent("bright:leetcode", None, {r["id"]: r["query"] for r in rows}, trace, k=20)
    # a search as a server that ignores exclusions answers it (Search-R1's own, say): an excluded id returned
    victim = next(r for r in rows if excluded[r["id"]])
    leaked = sorted(excluded[victim["id"]])[0]
    record = {"event": "search", "query_id": victim["id"], "turn": 4, "query": "x", "ids": [leaked], "scores": [9.0]}
    with open(trace, "a") as f:
        f.write(json.dumps(record) + "\n")
    res = run_r2med("score", "--trace", trace, "-t", "bright:leetcode", "--format", "json", "--per-query")
    assert res.returncode == 0, res.stderr
    scored = json.loads(res.stdout)
    hand = by_hand(trace, qrels, excluded)
    check_scores(scored, hand)
    assert scored["per_query"][victim["id"]]["excluded_removed"] == 1
    for line in trace.read_text().splitlines()[:-1]:  # the server itself never returned an excluded id
        r = json.loads(line)
        if r["event"] == "search" and r["query_id"] is not None:
            assert not set(r["ids"]) & excluded[r["query_id"]]
            assert r["exclusions"] == "applied"
        elif r["event"] == "search":
            assert r["exclusions"] == "not applied"  # the unattributed search: said in the trace too
    wrong = run_r2med("score", "--trace", trace, "-t", "medline-med", "-d", medline())
    assert wrong.returncode == 2 and "bright:leetcode" in wrong.stderr  # another task's trace: one line
