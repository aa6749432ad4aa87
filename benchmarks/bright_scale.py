"""BRIGHT's largest corpora at their size: BM25, dense search and exclusions on a synthetic corpus of LeetCode's shape.

BRIGHT's LeetCode has 413,932 documents and 142 queries, each excluding 9 to 1,119 documents (236 on average); aops
and theoremqa_questions have 188,177.  This script builds ``synthetic.leetcode_like`` at that size, with each
query's gold and excluded counts those of the real examples (``../shared/data/bright/examples/leetcode.jsonl.gz``;
the log-normal of ``synthetic.LEETCODE`` when absent), written once as BRIGHT's hub files
(``examples/`` and ``documents/`` parquet) in a Hugging Face cache, so ``r2med evaluate --tasks bright:leetcode``
reads it offline as it reads the real task.  Every measurement is one fresh process (its own peak memory), the
systems interleaved over ``--rounds`` rounds (rotating order: other users' load spreads over all of them); the
tables show min and median seconds, ratios of medians against the named baseline, and peak memory:
``RSS`` the largest resident set of one process (``wait4``'s ``ru_maxrss``: forked workers are not added),
``tree PSS`` the largest sum of the proportional set sizes of the process and all its descendants (forked
workers, Ray's raylet and workers), sampled every 0.25 s.  Depth 1000 after exclusion everywhere.

1. BM25, baseline bm25s 0.3 (``method="lucene"``, k1=0.9, b=0.4, its own tokenizer: ``bm25s.tokenize`` with
   English stop words and PyStemmer; its default numpy backend, ``n_threads=2``), excluded documents removed
   the way a bm25s user would: retrieve k + the most any query excludes, drop each query's excluded ids, keep 1000.

   * in-process: index the corpus and search every query (the texts already in memory, not timed):
     ``BM25(cache=False).index(docs).search(queries, k=1000, exclusions=...)`` vs bm25s's tokenize + index +
     retrieve + filter; also bm25s on r2med's tokens (``bm25s.tokenization.Tokenized`` from r2med's analyzer,
     made before the timer: bm25s's index + retrieve + filter alone, a lower bound of bm25s);
   * whole process: ``r2med evaluate -r bm25 --tasks bright:leetcode`` cold (empty ``R2MED_HOME``) and warm (its
     index cached; a fresh output folder, so the run is recomputed) vs a bm25s script doing what it must to give
     the same answer: read the same parquet files (``hf_hub_download`` offline + pyarrow), tokenize, index,
     retrieve, filter, write ``run.trec``, score BRIGHT's measures with pytrec_eval, write the metrics.

2. Dense exact search with exclusions, 142 queries x 413,932 unit vectors (384-d and 768-d float32; random,
   except each query's gold and excluded documents, pulled towards it so the exclusions bite), top 1000,
   baseline plain numpy (one ``Q @ D.T``, ``argpartition`` of the k + most-excluded best, sort, drop the
   excluded, keep 1000) vs r2med's ``DenseRetriever.search`` (blocked products with the excluded cells set to
   ``-inf`` in each block: no per-query list of all documents) exact and with ``faiss="Flat"`` (FAISS asked for
   k + the most excluded, then filtered).  The vectors come from a stand-in encoder (not timed); ``dot``
   similarity.  ids compared with the baseline's.

3. Ray (a private local cluster, ``num_cpus=2``, a 2 GiB object store): ``ShardedBM25(shards=4, ray=True)``
   index + search with exclusions, and ``ShardedDenseIndex`` (4 shards, 384-d) search with exclusions; each run's
   ids, order and scores compared with the in-process run of the same round.

    .venv/bin/python benchmarks/bright_scale.py --workdir /tmp/bright-scale      # full size, 3 rounds
    .venv/bin/python benchmarks/bright_scale.py --small                           # smoke run: 20,000 docs, 1 round
    .venv/bin/python benchmarks/bright_scale.py --only bm25,cli --rounds 5 --json out.json

``--workdir`` keeps the generated collection (about 1 GB at full size) between runs; without it a temporary
folder is used and removed.  The run exits 1 when any check fails (a depth other than 1000, an excluded id
returned, runs that should agree and do not: BM25 byte for byte, dense up to float32 rounding).

Measured (2026-12-01, full size, 1 round, 2 shared cores at load ~5-8; every figure and its context in
docs/scaling.md, "BRIGHT's largest corpora"): BM25 whole process ``r2med evaluate -r bm25`` cold 114.8 s, warm
56.2 s, bm25s 389.3 s (0.295x and 0.144x; CPU 36.6 / 17.2 / 137.1 s; a second ``--only cli`` round: 72.7 / 31.6 /
184.0 s, 0.395x and 0.172x, CPU 37.9 / 17.7 / 127.8 s); in-process r2med 63.8 s vs bm25s 412.2 s
(0.155x); peak RSS 1.9-2.1 GB (r2med), 2.2-2.8 GB (bm25s); Ray ShardedBM25 55.8 s, equal to the in-process run;
dense exact search 5.1 s (384-d) / 5.5 s (768-d) vs numpy 4.3 / 3.1 s, 130 MB above the vectors.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import pickle
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"
sys.path.insert(0, str(HERE))

import synthetic  # noqa: E402

DEPTH = 1000
TASK = "bright:leetcode"
PARTS = ("bm25", "cli", "dense", "ray")
#: BRIGHT's measures as r2med stores them (docs/bright.md: k = 1, 5, 10, 25, 50, 100, MRR, and R@1000)
CUTS = "1,5,10,25,50,100"


# -- the collection ----------------------------------------------------------------------------------------------


def prepare(work: Path, n_docs: int, n_queries: int, seed: int = 0) -> dict[str, Any]:
    """Generate the collection into ``work`` once (``corpus.pkl``, ``exclusions.json``, the hub cache ``hub/``);
    a folder already holding the same size and seed is reused."""
    meta_path = work / "meta.json"
    want = {"docs": n_docs, "queries": n_queries, "seed": seed, "format": 1}
    if meta_path.exists():
        meta = json.loads(meta_path.read_text())
        if {k: meta.get(k) for k in want} == want:
            return meta
    work.mkdir(parents=True, exist_ok=True)
    t = time.perf_counter()
    if synthetic.LEETCODE_EXAMPLES.exists():
        gold, excluded = synthetic.leetcode_counts()
        counts = f"the real examples' ({synthetic.LEETCODE_EXAMPLES.name})"
        n_queries = min(n_queries, len(gold))
    else:
        gold = excluded = None
        counts = "log-normal (the real examples are absent)"
    corpus = synthetic.leetcode_like(
        n_docs=n_docs, n_queries=n_queries, seed=seed, gold_counts=gold, excluded_counts=excluded
    )
    with open(work / "corpus.pkl.tmp", "wb") as fh:
        pickle.dump(corpus, fh, protocol=pickle.HIGHEST_PROTOCOL)
    os.replace(work / "corpus.pkl.tmp", work / "corpus.pkl")
    position = {d: i for i, d in enumerate(corpus.docs)}
    small = {
        "n_docs": n_docs,
        "queries": list(corpus.queries),
        "excluded": {q: [position[d] for d in ids] for q, ids in corpus.excluded.items()},
        "gold": {q: [position[d] for d in ids] for q, ids in corpus.qrels.items()},
    }
    (work / "exclusions.json").write_text(json.dumps(small))
    shutil.rmtree(work / "hub", ignore_errors=True)
    synthetic.write_bright_hub(work / "hub", corpus)
    pairs = [len(v) for v in corpus.excluded.values()]
    meta = {
        **want,
        "queries": len(corpus.queries),
        "counts": counts,
        "excluded_pairs": sum(pairs),
        "excluded_per_query": [min(pairs), round(sum(pairs) / len(pairs), 1), max(pairs)],
        "gold": sum(len(v) for v in corpus.qrels.values()),
        "chars_per_doc": round(sum(map(len, corpus.docs.values())) / n_docs, 1),
        "words_per_doc": round(sum(len(t.split()) for t in corpus.docs.values()) / n_docs, 1),
        "generated_s": round(time.perf_counter() - t, 1),
    }
    meta_path.write_text(json.dumps(meta, indent=1))
    return meta


def load_corpus(work: Path) -> synthetic.ExclusionCorpus:
    with open(work / "corpus.pkl", "rb") as fh:
        corpus: synthetic.ExclusionCorpus = pickle.load(fh)
    return corpus


def hub_env(work: Path, home: Path | None = None) -> dict[str, str]:
    """The environment of a process reading the emulated hub offline (and r2med's home ``home``)."""
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "HF_HUB_CACHE": str(work / "hub"),
        "HF_HUB_DISABLE_PROGRESS_BARS": "1",
        "PYTHONPATH": os.pathsep.join([str(SRC), *filter(None, [os.environ.get("PYTHONPATH")])]),
    }
    if home is not None:
        env["R2MED_HOME"] = str(home)
    return env


# -- runs compared -----------------------------------------------------------------------------------------------


def digest(run: Mapping[str, Mapping[str, float]], scores: bool = False) -> str:
    """A hash of each query's ranked ids (and scores, as float32 ``repr``), queries in their given order."""
    h = hashlib.sha256()
    for qid, docs in run.items():
        h.update(qid.encode() + b"\t")
        for did, score in docs.items():
            h.update(did.encode() + (f"={float(np.float32(score))!r}" if scores else "").encode() + b" ")
        h.update(b"\n")
    return h.hexdigest()[:16]


def run_facts(
    run: Mapping[str, Mapping[str, float]], excluded: Mapping[str, Sequence[str]], ranked: bool = False
) -> dict[str, Any]:
    """What every run must show: its depth per query and no excluded id; its digests (``trec``: of the run as
    ``r2med evaluate`` writes ``run.trec``, ties in trec_eval's order); ``ranked``: also every id (as its corpus
    position) and score, for overlaps and score differences."""
    from r2med.runs.run import format_trec

    leaked = sum(1 for q, docs in run.items() for d in excluded.get(q, ()) if d in docs)
    depths = [len(docs) for docs in run.values()]
    facts: dict[str, Any] = {
        "ids": digest(run),
        "scored": digest(run, scores=True),
        "trec": hashlib.sha256(format_trec(run, tag="bm25").encode()).hexdigest()[:16],
        "depth": [min(depths), max(depths)],
        "leaked": leaked,
        "top10": {q: list(docs)[:10] for q, docs in run.items()},
    }
    if ranked:
        facts["ranked"] = {q: [[position(d), s] for d, s in docs.items()] for q, docs in run.items()}
    return facts


def position(did: str) -> int:
    return int(did.rsplit("_", 1)[1].split(".")[0])  # synthetic.leetcode_like's ids: leetcode/leetcode_<i>.txt


def read_trec(path: Path) -> dict[str, dict[str, float]]:
    """A TREC run in file order (the ids here hold no spaces)."""
    run: dict[str, dict[str, float]] = {}
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            qid, _, did, _, score, _ = line.split()
            run.setdefault(qid, {})[did] = float(score)
    return run


def excluded_ids(work: Path) -> dict[str, list[str]]:
    small = json.loads((work / "exclusions.json").read_text())
    return {q: [doc_id(i) for i in pos] for q, pos in small["excluded"].items()}


def doc_id(i: int) -> str:
    return f"leetcode/leetcode_{i}.txt"  # synthetic.leetcode_like's ids


# -- the systems, each run as a child process (``--child KIND WORKDIR ...``) -------------------------------------


def _rss_now_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def child_bm25_r2med(work: Path) -> dict[str, Any]:
    from r2med import BM25
    from r2med.data.exclusions import Exclusions

    corpus = load_corpus(work)
    t = time.perf_counter()
    index = BM25(cache=False).index(corpus.docs)
    t_index = time.perf_counter() - t
    run = index.search(corpus.queries, k=DEPTH, exclusions=Exclusions.of(corpus.excluded))
    return {"s": time.perf_counter() - t, "index_s": t_index, **run_facts(run, corpus.excluded)}


def _bm25s_filtered(retriever: Any, query_tokens: Any, doc_ids: list[str], qids: list[str], excluded: Any) -> Any:
    """bm25s's top k + the most any query excludes, each query's excluded ids dropped, the first 1000 kept."""
    extra = max((len(v) for v in excluded.values()), default=0)
    docs, scores = retriever.retrieve(query_tokens, k=DEPTH + extra, show_progress=False, n_threads=2)
    run = {}
    for row, qid in enumerate(qids):
        banned = set(excluded.get(qid, ()))
        kept: dict[str, float] = {}
        for i, s in zip(docs[row].tolist(), scores[row].tolist()):
            did = doc_ids[i]
            if did not in banned:
                kept[did] = s
                if len(kept) == DEPTH:
                    break
        run[qid] = kept
    return run


def _bm25s_index(texts: list[str]) -> tuple[Any, Any]:
    import bm25s
    import Stemmer

    stemmer = Stemmer.Stemmer("english")
    tokens = bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False)
    retriever = bm25s.BM25(method="lucene", k1=0.9, b=0.4)
    retriever.index(tokens, show_progress=False)
    return retriever, stemmer


def child_bm25_bm25s(work: Path) -> dict[str, Any]:
    import bm25s

    corpus = load_corpus(work)
    t = time.perf_counter()
    retriever, stemmer = _bm25s_index(list(corpus.docs.values()))
    t_index = time.perf_counter() - t
    qids = list(corpus.queries)
    q_tokens = bm25s.tokenize([corpus.queries[q] for q in qids], stopwords="en", stemmer=stemmer, show_progress=False)
    run = _bm25s_filtered(retriever, q_tokens, list(corpus.docs), qids, corpus.excluded)
    return {"s": time.perf_counter() - t, "index_s": t_index, **run_facts(run, corpus.excluded)}


def child_bm25_bm25s_tokens(work: Path) -> dict[str, Any]:
    """bm25s given r2med's tokens (made before the timer): its index + retrieve + filter alone."""
    import bm25s
    from bm25s.tokenization import Tokenized

    from r2med.retrieval.analyzer import EnglishAnalyzer, encode_corpus

    corpus = load_corpus(work)
    analyzer = EnglishAnalyzer()
    terms, ids, lengths = encode_corpus(analyzer, list(corpus.docs.values()))
    vocab = {t: i for i, t in enumerate(terms)}
    bounds = np.concatenate([[0], np.cumsum(lengths)])
    doc_tokens = Tokenized(ids=[ids[a:b].tolist() for a, b in zip(bounds[:-1], bounds[1:])], vocab=vocab)
    qids = list(corpus.queries)
    q_tokens = [analyzer.tokenize(corpus.queries[q]) for q in qids]  # strings: bm25s maps them to its vocab
    del ids
    t = time.perf_counter()
    retriever = bm25s.BM25(method="lucene", k1=0.9, b=0.4)
    retriever.index(doc_tokens, show_progress=False)
    t_index = time.perf_counter() - t
    run = _bm25s_filtered(retriever, q_tokens, list(corpus.docs), qids, corpus.excluded)
    return {"s": time.perf_counter() - t, "index_s": t_index, **run_facts(run, corpus.excluded)}


def child_bm25s_cli(work: Path, out: str) -> dict[str, Any]:
    """The bm25s user's whole job: read BRIGHT's files from the (emulated) hub, retrieve, filter, write, score."""
    import bm25s
    import pyarrow.parquet as pq
    import pytrec_eval
    from huggingface_hub import hf_hub_download

    def read(config: str, columns: list[str]) -> dict[str, list[Any]]:
        path = hf_hub_download(
            synthetic.BRIGHT_REPO,
            f"{config}/leetcode-00000-of-00001.parquet",
            repo_type="dataset",
            revision=synthetic.BRIGHT_PIN,
        )
        table = pq.read_table(path, columns=columns)
        return {c: table.column(c).to_pylist() for c in columns}

    docs = read("documents", ["id", "content"])
    examples = read("examples", ["id", "query", "excluded_ids", "gold_ids"])
    qids = [str(q) for q in examples["id"]]
    excluded = {q: [e for e in ex if e != "N/A"] for q, ex in zip(qids, examples["excluded_ids"])}
    qrels = {q: {g: 1 for g in gold} for q, gold in zip(qids, examples["gold_ids"])}
    retriever, stemmer = _bm25s_index(docs["content"])
    q_tokens = bm25s.tokenize(examples["query"], stopwords="en", stemmer=stemmer, show_progress=False)
    run = _bm25s_filtered(retriever, q_tokens, docs["id"], qids, excluded)
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "run.trec", "w", encoding="utf-8") as fh:
        for qid, ranked in run.items():
            for rank, (did, score) in enumerate(ranked.items(), start=1):
                fh.write(f"{qid} Q0 {did} {rank} {score:.9g} bm25s\n")
    measures = {f"ndcg_cut.{CUTS}", f"map_cut.{CUTS}", f"recall.{CUTS},1000", f"P.{CUTS}", "recip_rank"}
    per_query = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
    names = next(iter(per_query.values())).keys()
    aggregate = {m: sum(v[m] for v in per_query.values()) / len(per_query) for m in names}
    (folder / "metrics.json").write_text(json.dumps({"aggregate": aggregate, "per_query": per_query}))
    return {"ndcg_cut_10": aggregate["ndcg_cut_10"]}


def _vectors(work: Path, dim: int, seed: int = 7) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """Unit vectors for the documents and queries; each query's gold and excluded documents pulled towards it."""
    small = json.loads((work / "exclusions.json").read_text())
    n_docs, qids = small["n_docs"], small["queries"]
    rng = np.random.default_rng(seed)
    docs = np.empty((n_docs, dim), dtype=np.float32)
    for lo in range(0, n_docs, 65536):  # in float32 blocks: no float64 copy of the whole matrix
        block = rng.standard_normal((min(65536, n_docs - lo), dim), dtype=np.float32)
        docs[lo : lo + len(block)] = block / np.linalg.norm(block, axis=1, keepdims=True)
    queries = rng.standard_normal((len(qids), dim), dtype=np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    for row, qid in enumerate(qids):
        near = small["gold"][qid] + small["excluded"][qid]
        pulled = queries[row] + rng.standard_normal((len(near), dim), dtype=np.float32) * (1.0 / np.sqrt(dim))
        docs[near] = pulled / np.linalg.norm(pulled, axis=1, keepdims=True)
    return docs, queries, small


class _Given:
    """A stand-in encoder that hands out precomputed vectors (the search is what is timed, not a model)."""

    def __init__(self, docs: np.ndarray, queries: np.ndarray):
        from r2med.retrieval.encoders import EncoderSettings

        self.settings = EncoderSettings(model="custom:given-vectors")
        self.docs, self.queries = docs, queries

    def encode_corpus(self, texts: Sequence[str], batch_size: int | None = None) -> np.ndarray:
        return self.docs

    def encode_queries(self, queries: Sequence[Any], batch_size: int | None = None) -> np.ndarray:
        return self.queries

    def config(self) -> dict[str, Any]:
        return {"model": "given-vectors"}


def child_dense(work: Path, impl: str, dim: str) -> dict[str, Any]:
    docs, queries, small = _vectors(work, int(dim))
    qids = small["queries"]
    ids = [doc_id(i) for i in range(small["n_docs"])]
    excluded = {q: [doc_id(i) for i in pos] for q, pos in small["excluded"].items()}
    if impl != "numpy":
        import torch  # noqa: F401  (a real dense run has it imported by its model; r2med asks it for a GPU)
    before = _rss_now_mb()
    t = time.perf_counter()
    if impl == "numpy":
        run = _numpy_search(docs, queries, ids, qids, excluded)
    else:
        from r2med.data.exclusions import Exclusions
        from r2med.retrieval.dense import DenseRetriever

        retriever = DenseRetriever(
            _Given(docs, queries).settings,
            encoder=_Given(docs, queries),  # type: ignore[arg-type]
            cache=False,
            similarity="dot",
            faiss="Flat" if impl == "faiss" else None,
        )
        retriever.index(dict.fromkeys(ids, ""))
        run = retriever.search(dict.fromkeys(qids, ""), k=DEPTH, exclusions=Exclusions.of(excluded))
    secs = time.perf_counter() - t
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    facts = run_facts(run, excluded, ranked=True)
    return {"s": secs, "extra_mb": peak - before, "vectors_mb": docs.nbytes / 2**20, **facts}


def _numpy_search(
    docs: np.ndarray, queries: np.ndarray, ids: list[str], qids: list[str], excluded: Mapping[str, Sequence[str]]
) -> dict[str, dict[str, float]]:
    """The plain recipe: all scores at once, the k + most-excluded best by argpartition, sorted, filtered."""
    position = {d: i for i, d in enumerate(ids)}
    extra = max((len(v) for v in excluded.values()), default=0)
    scores = queries @ docs.T
    run = {}
    for row, qid in enumerate(qids):
        s = scores[row]
        top = np.argpartition(-s, DEPTH + extra)[: DEPTH + extra]
        top = top[np.lexsort((top, -s[top]))]  # best first, ties by corpus order (r2med's rule)
        banned = {position[d] for d in excluded.get(qid, ())}
        kept = [int(i) for i in top if int(i) not in banned][:DEPTH]
        run[qid] = {ids[i]: float(s[i]) for i in kept}
    return run


def child_ray_bm25(work: Path) -> dict[str, Any]:
    from r2med.data.exclusions import Exclusions
    from r2med.scale import ShardedBM25, connect

    corpus = load_corpus(work)
    ray = connect("local", num_cpus=2, object_store_memory=2 * 2**30)
    try:
        t = time.perf_counter()
        index = ShardedBM25(shards=4, ray=True).index(corpus.docs)
        t_index = time.perf_counter() - t
        run = index.search(corpus.queries, k=DEPTH, exclusions=Exclusions.of(corpus.excluded))
        secs = time.perf_counter() - t
    finally:
        ray.shutdown()
    return {"s": secs, "index_s": t_index, **run_facts(run, corpus.excluded)}


def child_ray_dense(work: Path, dim: str) -> dict[str, Any]:
    from r2med.data.exclusions import Exclusions
    from r2med.scale import connect
    from r2med.scale.dense import ShardedDenseIndex

    docs, queries, small = _vectors(work, int(dim))
    qids = small["queries"]
    ids = [doc_id(i) for i in range(small["n_docs"])]
    excluded = {q: [doc_id(i) for i in pos] for q, pos in small["excluded"].items()}
    ray = connect("local", num_cpus=2, object_store_memory=2 * 2**30)
    try:
        t = time.perf_counter()
        index = ShardedDenseIndex.from_arrays(ids, np.array_split(docs, 4))
        run = index.search(queries, qids, k=DEPTH, ray=True, exclusions=Exclusions.of(excluded))
        secs = time.perf_counter() - t
    finally:
        ray.shutdown()
    return {"s": secs, **run_facts(run, excluded, ranked=True)}


CHILDREN: dict[str, Callable[..., dict[str, Any]]] = {
    "bm25-r2med": child_bm25_r2med,
    "bm25-bm25s": child_bm25_bm25s,
    "bm25-bm25s-tokens": child_bm25_bm25s_tokens,
    "bm25s-cli": child_bm25s_cli,
    "dense": child_dense,
    "ray-bm25": child_ray_bm25,
    "ray-dense": child_ray_dense,
    "prepare": lambda work, docs, queries: prepare(work, int(docs), int(queries)),
}


# -- the harness -------------------------------------------------------------------------------------------------


def _descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo += children.get(pid, [])
    return out


def _pss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as fh:
            for line in fh:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def run_process(cmd: list[str], env: Mapping[str, str]) -> dict[str, Any]:
    """Run ``cmd`` to its end: wall seconds, peak RSS of its largest process, peak PSS of its process tree,
    its CPU seconds (user + system, descendants included), and the JSON its last stdout line holds (if any)."""
    with tempfile.TemporaryFile(mode="w+") as out, tempfile.TemporaryFile(mode="w+") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, env=dict(env), stdout=out, stderr=err)
        peak = [0.0]
        done = threading.Event()

        def sample() -> None:
            while not done.wait(0.25):
                peak[0] = max(peak[0], sum(_pss_mb(p) for p in _descendants(proc.pid)))

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        done.set()
        sampler.join()
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    if proc.returncode != 0:
        raise SystemExit(f"failed ({proc.returncode}): {' '.join(cmd)}\n{stdout[-2000:]}\n{stderr[-4000:]}")
    lines = [line for line in stdout.splitlines() if line.startswith("{")]
    result = json.loads(lines[-1]) if lines else {}
    return {
        "wall": wall,
        "rss_mb": usage.ru_maxrss / 1024,
        "pss_mb": peak[0],
        "cpu": usage.ru_utime + usage.ru_stime,
        **result,
    }


class Bench:
    def __init__(self, work: Path, rounds: int):
        self.work, self.rounds = work, rounds
        self.results: dict[str, list[dict[str, Any]]] = {}
        self.failures: list[str] = []
        self.py = sys.executable

    def child(self, kind: str, *args: str, env: Mapping[str, str] | None = None) -> dict[str, Any]:
        cmd = [self.py, str(Path(__file__).resolve()), "--child", kind, str(self.work), *args]
        return run_process(cmd, env or hub_env(self.work))

    def r2med_cli(self, warm: bool, tag: str) -> dict[str, Any]:
        home = self.work / "home-cli"
        if not warm:
            shutil.rmtree(home, ignore_errors=True)
        out = self.work / f"out-{tag}"
        shutil.rmtree(out, ignore_errors=True)
        cmd = [self.py, "-m", "r2med", "evaluate", "-r", "bm25", "--tasks", TASK, "-o", str(out)]
        result = run_process(cmd, hub_env(self.work, home))
        trec = next(out.rglob("run.trec"))
        metrics = json.loads(next(out.rglob("metrics.json")).read_text())
        facts = run_facts(read_trec(trec), excluded_ids(self.work))
        facts["trec"] = hashlib.sha256(trec.read_bytes()).hexdigest()[:16]  # the file itself
        return {**result, "s": result["wall"], "ndcg_cut_10": metrics["aggregate"]["ndcg_cut_10"], **facts}

    def bm25s_cli(self) -> dict[str, Any]:
        out = self.work / "out-bm25s"
        shutil.rmtree(out, ignore_errors=True)
        result = self.child("bm25s-cli", str(out))
        run = read_trec(out / "run.trec")
        return {**result, "s": result["wall"], **run_facts(run, excluded_ids(self.work))}

    def record(self, name: str, result: dict[str, Any]) -> None:
        self.results.setdefault(name, []).append(result)
        extra = f"  inner {result['s']:.2f}s" if "s" in result and result["s"] != result["wall"] else ""
        print(
            f"  {name:<38} wall {result['wall']:8.2f}s{extra}  RSS {result['rss_mb']:7.0f} MB  "
            f"tree PSS {result['pss_mb']:7.0f} MB  load {os.getloadavg()[0]:.1f}",
            file=sys.stderr,
            flush=True,
        )

    def run(self, units: list[list[tuple[str, Callable[[], dict[str, Any]]]]]) -> None:
        for rnd in range(self.rounds):
            print(f"round {rnd + 1}/{self.rounds}", file=sys.stderr, flush=True)
            turn = units[rnd % len(units) :] + units[: rnd % len(units)]
            for unit in turn:
                for name, fn in unit:
                    self.record(name, fn())


def _stats(values: list[float]) -> tuple[float, float]:
    return min(values), statistics.median(values)


def table(bench: Bench, names: list[str], baseline: str, title: str, key: str = "s") -> list[str]:
    """One table: min and median seconds, median ratio against ``baseline``, the process's CPU seconds (user +
    system, reaped workers included; medians: the figure other users' load moves least), peak RSS and tree PSS."""
    lines = [
        title,
        f"{'system':<44}{'min s':>9}{'median s':>10}{'x ' + baseline:>22}{'CPU s':>9}{'RSS MB':>9}{'tree PSS MB':>13}",
    ]
    base = statistics.median(r[key] for r in bench.results[baseline])
    for name in names:
        rows = bench.results.get(name)
        if not rows:
            continue
        lo, med = _stats([r[key] for r in rows])
        rss = statistics.median(r["rss_mb"] for r in rows)
        pss = statistics.median(r["pss_mb"] for r in rows)
        cpu = statistics.median(r["cpu"] for r in rows)
        lines.append(f"{name:<44}{lo:>9.2f}{med:>10.2f}{med / base:>22.3f}{cpu:>9.1f}{rss:>9.0f}{pss:>13.0f}")
    return lines


AGREE = {
    "ids": "ids and order",
    "scored": "ids, order and scores",
    "trec": "run.trec byte for byte, as r2med writes it",
    "rounding": f"ids, order and scores up to float32 rounding ({1e-6:g}): only near-ties swap",
}
#: largest score difference allowed by ``"rounding"`` (float32 sums of products in other orders: another blocking)
ROUNDING = 1e-6


def same_up_to_rounding(x: Mapping[str, list[list[float]]], y: Mapping[str, list[list[float]]]) -> bool:
    """Whether two ranked runs (``run_facts(ranked=True)``) agree but for rounding: per query the same depth, the
    scores position by position within :data:`ROUNDING`, each document both return scored within it, and each
    one returns alone scored within it of the other's last score (a near-tie at the cut)."""
    for q in x:
        a, b = x[q], y.get(q, [])
        if len(a) != len(b) or any(abs(sa - sb) > ROUNDING for (_, sa), (_, sb) in zip(a, b)):
            return False
        da, db = dict((int(d), s) for d, s in a), dict((int(d), s) for d, s in b)
        if any(abs(s - db[d]) > ROUNDING for d, s in da.items() if d in db):
            return False
        for mine, theirs, last in ((da, db, b[-1][1] if b else 0.0), (db, da, a[-1][1] if a else 0.0)):
            if any(abs(s - last) > ROUNDING for d, s in mine.items() if d not in theirs):
                return False
    return True


def agreement(bench: Bench, pairs: list[tuple[str, str, str]]) -> list[str]:
    """For each (a, b, what): whether a's runs and b's agree on ``what`` (:data:`AGREE`) in every round; a
    disagreement is a failure of the benchmark."""
    lines = []
    for a, b, what in pairs:
        if a not in bench.results or b not in bench.results:
            continue
        if what == "rounding":
            same = all(
                same_up_to_rounding(x["ranked"], y["ranked"]) for x, y in zip(bench.results[a], bench.results[b])
            )
        else:
            same = all(x[what] == y[what] for x, y in zip(bench.results[a], bench.results[b]))
        lines.append(f"  {a} == {b} ({AGREE[what]}, every round): {same}")
        if not same:
            bench.failures.append(f"{a} != {b}")
    return lines


def closeness(bench: Bench, a: str, b: str) -> str:
    """How close a's ranked lists are to b's (first round): queries with identical ids in order, the mean top-1000
    overlap, and the largest score difference of a document both return."""
    if a not in bench.results or b not in bench.results:
        return ""
    x, y = bench.results[a][0]["ranked"], bench.results[b][0]["ranked"]
    same = sum(1 for q in x if [d for d, _ in x[q]] == [d for d, _ in y[q]])
    overlap = np.mean([len({d for d, _ in x[q]} & {d for d, _ in y[q]}) / max(len(y[q]), 1) for q in x])
    diff = 0.0
    for q in x:
        theirs = dict(y[q])  # once per query: a lookup per document
        diff = max([diff, *(abs(s - theirs.get(d, s)) for d, s in x[q])])
    return (
        f"  {a} vs {b}: identical ids in order on {same} of {len(x)} queries, top-{DEPTH} overlap {overlap:.5f}, "
        f"largest score difference {diff:.2e}"
    )


def top10_overlap(bench: Bench, a: str, b: str) -> float:
    x, y = bench.results[a][0]["top10"], bench.results[b][0]["top10"]
    return float(np.mean([len(set(x[q]) & set(y[q])) / 10 for q in x]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    parser.add_argument("--small", action="store_true", help="a quick smoke run: 20,000 docs, 1 round")
    parser.add_argument("--docs", type=int, default=synthetic.LEETCODE["docs"])
    parser.add_argument("--queries", type=int, default=synthetic.LEETCODE["queries"])
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds of every system (min, median)")
    parser.add_argument("--only", default=",".join(PARTS), help=f"comma-separated parts among {', '.join(PARTS)}")
    parser.add_argument("--dims", default="384,768", help="dense vector widths")
    parser.add_argument("--workdir", type=Path, help="keep the generated collection here (default: a temp folder)")
    parser.add_argument("--json", type=Path, help="also write every measurement here")
    args = parser.parse_args(argv)
    if args.child:
        kind, work, *rest = args.child
        print(json.dumps(CHILDREN[kind](Path(work), *rest)))
        return 0
    if args.small:
        args.docs, args.rounds = min(args.docs, 20_000), 1 if args.rounds == 3 else args.rounds
    parts = [p.strip() for p in args.only.split(",") if p.strip()]
    unknown = set(parts) - set(PARTS)
    if unknown:
        parser.error(f"--only: unknown part(s) {', '.join(sorted(unknown))}; choose among {', '.join(PARTS)}")
    dims = [d.strip() for d in args.dims.split(",") if d.strip()]
    work = args.workdir or Path(tempfile.mkdtemp(prefix="r2med-bright-scale-"))
    print(f"preparing {args.docs:,} docs x {args.queries} queries in {work}", file=sys.stderr, flush=True)
    bench = Bench(work, args.rounds)
    # in a child: this process stays small, and a child's peak RSS starts from its parent's (kept across exec)
    meta = bench.child("prepare", str(args.docs), str(args.queries))
    units: list[list[tuple[str, Callable[[], dict[str, Any]]]]] = []
    if "bm25" in parts:
        units += [
            [("r2med bm25 in-process", lambda: bench.child("bm25-r2med"))],
            [("bm25s in-process", lambda: bench.child("bm25-bm25s"))],
            [("bm25s in-process on r2med's tokens", lambda: bench.child("bm25-bm25s-tokens"))],
        ]
    if "cli" in parts:
        units += [
            [
                ("r2med evaluate -r bm25 cold", lambda: bench.r2med_cli(False, "cold")),
                ("r2med evaluate -r bm25 warm", lambda: bench.r2med_cli(True, "warm")),
            ],
            [("bm25s whole process", bench.bm25s_cli)],
        ]
    if "dense" in parts:
        for dim in dims:
            units += [
                [(f"numpy {dim}-d", lambda d=dim: bench.child("dense", "numpy", d))],
                [(f"r2med exact {dim}-d", lambda d=dim: bench.child("dense", "exact", d))],
                [(f"r2med faiss Flat {dim}-d", lambda d=dim: bench.child("dense", "faiss", d))],
            ]
    if "ray" in parts:
        units += [
            [("ray ShardedBM25", lambda: bench.child("ray-bm25"))],
            [(f"ray ShardedDenseIndex {dims[0]}-d", lambda: bench.child("ray-dense", dims[0]))],
        ]
        if "bm25" not in parts:
            units.append([("r2med bm25 in-process", lambda: bench.child("bm25-r2med"))])
        if "dense" not in parts:
            units.append([(f"r2med exact {dims[0]}-d", lambda: bench.child("dense", "exact", dims[0]))])
    t0 = time.perf_counter()
    bench.run(units)
    load = os.getloadavg()

    import bm25s

    out = [
        "",
        f"synthetic BRIGHT LeetCode: {meta['docs']:,} docs ({meta['words_per_doc']} words, {meta['chars_per_doc']} "
        f"chars each on average), {meta['queries']} queries, {meta['gold']} gold ids, {meta['excluded_pairs']:,} "
        f"excluded (query, doc) pairs ({meta['excluded_per_query'][0]} / {meta['excluded_per_query'][1]} / "
        f"{meta['excluded_per_query'][2]} per query: {meta['counts']}); depth {DEPTH} after exclusion",
        f"{os.cpu_count()} CPUs, {args.rounds} interleaved rounds; load average (1, 5, 15 min) at the end: "
        f"{load[0]:.1f}, {load[1]:.1f}, {load[2]:.1f}; bm25s {bm25s.__version__}",
    ]
    if "bm25" in parts:
        out += [""] + table(
            bench,
            ["r2med bm25 in-process", "bm25s in-process", "bm25s in-process on r2med's tokens"],
            "bm25s in-process",
            "BM25 in-process (index + search all queries with exclusions; texts in memory, not timed)",
        )
    if "cli" in parts:
        out += [""] + table(
            bench,
            ["r2med evaluate -r bm25 cold", "r2med evaluate -r bm25 warm", "bm25s whole process"],
            "bm25s whole process",
            "BM25 whole process (start to exit: read the hub files, index, search, write, score)",
        )
        ndcg = {
            n: bench.results[n][0].get("ndcg_cut_10") for n in ("r2med evaluate -r bm25 cold", "bm25s whole process")
        }
        out.append("  nDCG@10 (synthetic judgments): " + ", ".join(f"{n} {v:.4f}" for n, v in ndcg.items() if v))
    if "dense" in parts:
        for dim in dims:
            out += [""] + table(
                bench,
                [f"numpy {dim}-d", f"r2med exact {dim}-d", f"r2med faiss Flat {dim}-d"],
                f"numpy {dim}-d",
                f"dense search with exclusions, {dim}-d float32 (time: search only; RSS includes the vectors)",
            )
            names = [f"numpy {dim}-d", f"r2med exact {dim}-d", f"r2med faiss Flat {dim}-d"]
            extra = {n: statistics.median(r["extra_mb"] for r in bench.results[n]) for n in names}
            mb = bench.results[f"numpy {dim}-d"][0]["vectors_mb"]
            out.append(
                f"  vectors {mb:.0f} MB; peak memory above them during the search (median): "
                + ", ".join(f"{n} {v:.0f} MB" for n, v in extra.items())
            )
    if "ray" in parts:
        out += ["", "Ray (local cluster, num_cpus=2, 2 GiB object store)"]
        for name in ("ray ShardedBM25", f"ray ShardedDenseIndex {dims[0]}-d"):
            lo, med = _stats([r["s"] for r in bench.results[name]])
            rss = statistics.median(r["rss_mb"] for r in bench.results[name])
            pss = statistics.median(r["pss_mb"] for r in bench.results[name])
            out.append(f"  {name:<40} min {lo:.2f}s median {med:.2f}s; driver RSS {rss:.0f} MB, tree PSS {pss:.0f} MB")
        sharded = statistics.median(r["s"] for r in bench.results["ray ShardedBM25"])
        single = statistics.median(r["s"] for r in bench.results["r2med bm25 in-process"])
        out.append(f"  ShardedBM25 on Ray / BM25 in-process (medians): {sharded / single:.2f}")
    out += ["", "checks (every run of every round):"]
    for name, rows in bench.results.items():
        depths = {tuple(r["depth"]) for r in rows if "depth" in r}
        leaked = sum(r.get("leaked", 0) for r in rows)
        if depths:
            out.append(f"  {name:<44} depth {sorted(depths)}, excluded ids returned: {leaked}")
            if leaked:
                bench.failures.append(f"{name} returned excluded ids")
    out += agreement(
        bench,
        [
            ("r2med evaluate -r bm25 cold", "r2med bm25 in-process", "trec"),
            ("r2med evaluate -r bm25 warm", "r2med bm25 in-process", "trec"),
            ("ray ShardedBM25", "r2med bm25 in-process", "scored"),
            *[(f"r2med exact {d}-d", f"numpy {d}-d", "rounding") for d in dims],
            (f"ray ShardedDenseIndex {dims[0]}-d", f"r2med exact {dims[0]}-d", "rounding"),
            *[(f"r2med faiss Flat {d}-d", f"numpy {d}-d", "rounding") for d in dims],
        ],
    )
    for d in dims:
        out.append(closeness(bench, f"r2med exact {d}-d", f"numpy {d}-d"))
        out.append(closeness(bench, f"r2med faiss Flat {d}-d", f"numpy {d}-d"))
    out.append(closeness(bench, f"ray ShardedDenseIndex {dims[0]}-d", f"r2med exact {dims[0]}-d"))
    out = [line for line in out if line]
    if "bm25" in parts:
        out.append(
            "  top-10 overlap, r2med bm25 vs bm25s (other scoring and tokenizer): "
            f"{top10_overlap(bench, 'r2med bm25 in-process', 'bm25s in-process'):.3f}"
        )
    out.append(f"total {time.perf_counter() - t0:.0f}s")
    print("\n".join(out))
    if args.json:
        kept = {
            n: [{k: v for k, v in r.items() if k not in ("ranked", "top10")} for r in rows]
            for n, rows in bench.results.items()
        }
        args.json.write_text(json.dumps({"meta": meta, "load": load, "results": kept}, indent=1))
    if not args.workdir:
        shutil.rmtree(work, ignore_errors=True)
    if bench.failures:
        print("FAILED: " + "; ".join(bench.failures), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
