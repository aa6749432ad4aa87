"""How r2med's cost grows with corpus size: BM25 build, BM25 query latency, dense exact search.

Synthetic corpora with R2MED's shape -- documents of ~155 words (log-normal lengths) drawn from a
Zipfian vocabulary (s = 1.07, 200K word types), 100 queries of ~230 words -- at 10K, 100K, 1M and 3M
documents (BM25 up to ``--bm25-max``, 1M by default, to stay within ~20 minutes on 2 cores).  Per size it measures

* ``bm25 build``      -- ``BM25(cache=False).index(corpus)``: analysis (the pure-Python Lucene-style
  analyzer) + BM25 weights, and the index's size in memory;
* ``bm25 query``      -- ``BM25.search`` of the 100 queries at k=100, ms per query;
* ``dense encode``    -- a cheap deterministic stand-in encoder (hashed bag-of-words projected
  to 384 dims, L2-normalised) so the figures measure the pipeline, not a model;
  with the dense matrix's size;
* ``dense search``    -- exact top-100 (``r2med.retrieval.dense.exact_top_k``) of 100 queries over
  the float32 matrix, ms per query, with the matrix size and the search's peak extra memory
  (``tracemalloc``, which sees numpy buffers);
* the peak resident memory of the BM25 stages and of the dense stages, each run in a fresh
  process for each size;

then fits ``time ~ N^alpha`` per stage (least squares in log-log over all sizes, and the exponent
between the two largest sizes, where fixed costs no longer dominate) and prints a table.  The
baseline of each ratio is the smallest size measured in the same process.

    .venv/bin/python benchmarks/scaling.py                 # 10K..3M (~15 min on 2 cores)
    .venv/bin/python benchmarks/scaling.py --sizes 10000,100000 --json out.json
    .venv/bin/python benchmarks/scaling.py --sharded-bm25 300000   # ShardedBM25 on Ray vs BM25
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import resource
import sys
import time
import tracemalloc

import numpy as np

DIM = 384
VOCAB = 200_000
ZIPF_S = 1.07
DOC_WORDS = 155
QUERY_WORDS = 230
N_QUERIES = 100


def words(n: int) -> list[str]:
    """``n`` distinct pronounceable pseudo-words (letters only, so the analyzer keeps them whole)."""
    cons, vows = "bcdfghjklmnprstvz", "aeiou"
    syll = [c + v for c in cons for v in vows]  # 85 syllables
    out = []
    i = 0
    while len(out) < n:
        j, w = i, []
        while True:
            w.append(syll[j % len(syll)])
            j //= len(syll)
            if j == 0:
                break
        out.append("".join(w) + "x")  # the suffix keeps Porter stemming from merging words
        i += 1
    return out


def zipf_ids(rng: np.random.Generator, n: int, step: int = 20_000_000) -> np.ndarray:
    ranks = np.arange(1, VOCAB + 1, dtype=np.float64)
    cdf = np.cumsum(ranks**-ZIPF_S)
    cdf /= cdf[-1]
    out = np.empty(n, dtype=np.int32)
    for lo in range(0, n, step):  # bounded temporaries even at billions of tokens
        out[lo : lo + step] = np.searchsorted(cdf, rng.random(min(step, n - lo)))
    return out


def synthetic(n_docs: int, seed: int = 0):
    """(term ids, doc lengths, query term ids), deterministic for a seed."""
    rng = np.random.default_rng(seed)
    lengths = np.maximum(5, rng.lognormal(math.log(DOC_WORDS) - 0.18, 0.6, n_docs)).astype(np.int64)
    ids = zipf_ids(rng, int(lengths.sum()))
    q_ids = zipf_ids(rng, N_QUERIES * QUERY_WORDS).reshape(N_QUERIES, QUERY_WORDS)
    return ids, lengths, q_ids


def as_texts(ids: np.ndarray, lengths: np.ndarray, vocab: list[str]) -> list[str]:
    vocab_arr = np.asarray(vocab, dtype=object)
    bounds = np.concatenate([[0], np.cumsum(lengths)])
    return [" ".join(vocab_arr[ids[a:b]]) for a, b in zip(bounds[:-1], bounds[1:])]


class HashEncoder:
    """Deterministic stand-in encoder: each word type has a fixed random vector (a rank-64 table
    expanded to ``dim``); a text is the L2-normalised sum of its words' vectors, computed from
    term ids as sparse products in chunks of documents."""

    def __init__(self, dim: int = DIM, rank: int = 64, seed: int = 1):
        rng = np.random.default_rng(seed)
        self.sketch = rng.standard_normal((VOCAB, rank)).astype(np.float32)
        self.expand = rng.standard_normal((rank, dim)).astype(np.float32)

    def encode_ids(self, ids: np.ndarray, lengths: np.ndarray, chunk: int = 200_000) -> np.ndarray:
        import scipy.sparse as sp

        out = np.empty((len(lengths), self.expand.shape[1]), dtype=np.float32)
        bounds = np.concatenate([[0], np.cumsum(lengths)])
        for lo in range(0, len(lengths), chunk):
            hi = min(lo + chunk, len(lengths))
            part = lengths[lo:hi]
            rows = np.repeat(np.arange(hi - lo, dtype=np.int32), part)
            counts = sp.csr_matrix(
                (np.ones(len(rows), np.float32), (rows, ids[bounds[lo] : bounds[hi]])), shape=(hi - lo, VOCAB)
            )
            block = np.asarray(counts @ self.sketch, dtype=np.float32) @ self.expand
            block /= np.maximum(np.linalg.norm(block, axis=1, keepdims=True), 1e-12)
            out[lo:hi] = block
        return out


def measure_bm25(n_docs: int) -> dict[str, float]:
    """BM25 build + query latency for ``n_docs`` (run in a fresh process, so its peak RSS is its own)."""
    from r2med.retrieval.bm25 import BM25

    vocab = words(VOCAB)
    row: dict[str, float] = {}
    ids, lengths, q_ids = synthetic(n_docs)
    corpus = {f"d{i}": text for i, text in enumerate(as_texts(ids, lengths, vocab))}
    queries = {f"q{i}": text for i, text in enumerate(as_texts(q_ids.ravel(), np.full(N_QUERIES, QUERY_WORDS), vocab))}
    del ids
    t = time.perf_counter()
    index = BM25(cache=False).index(corpus)
    row["bm25_build_s"] = time.perf_counter() - t
    w = index.weights_t
    row["bm25_index_mb"] = (w.data.nbytes + w.indices.nbytes + w.indptr.nbytes) / 2**20
    index.search(dict(list(queries.items())[:5]), k=100)  # warm-up (analyzer memo)
    t = time.perf_counter()
    index.search(queries, k=100)
    row["bm25_query_ms"] = 1000 * (time.perf_counter() - t) / len(queries)
    row["bm25_peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return row


def measure_dense(n_docs: int) -> dict[str, float]:
    """Stand-in encoding + exact search for ``n_docs`` (in a fresh process)."""
    from r2med.retrieval.dense import exact_top_k

    row: dict[str, float] = {}
    t = time.perf_counter()
    ids, lengths, q_ids = synthetic(n_docs)
    row["generate_s"] = time.perf_counter() - t
    row["tokens"] = float(lengths.sum())
    encoder = HashEncoder()
    t = time.perf_counter()
    docs = encoder.encode_ids(ids, lengths)
    q = encoder.encode_ids(q_ids.ravel(), np.full(N_QUERIES, QUERY_WORDS))
    row["dense_encode_s"] = time.perf_counter() - t
    row["dense_matrix_mb"] = docs.nbytes / 2**20
    del ids
    gc.collect()
    exact_top_k(q[:2], docs, 100, device="cpu")  # warm-up
    tracemalloc.start()
    t = time.perf_counter()
    exact_top_k(q, docs, 100, device="cpu")
    row["dense_search_ms"] = 1000 * (time.perf_counter() - t) / N_QUERIES
    row["dense_search_peak_mb"] = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    row["dense_peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return row


def measure_sharded_bm25(n_docs: int, shards: int = 8) -> dict[str, float]:
    """ShardedBM25 on a local Ray cluster (2 CPUs): build + query time and the driver's peak RSS,
    and whether its top-100 scores equal the unsharded index's (run in a fresh process)."""
    import ray

    from r2med.scale import ShardedBM25

    vocab = words(VOCAB)
    ids, lengths, q_ids = synthetic(n_docs)
    corpus = {f"d{i}": text for i, text in enumerate(as_texts(ids, lengths, vocab))}
    queries = {f"q{i}": text for i, text in enumerate(as_texts(q_ids.ravel(), np.full(N_QUERIES, QUERY_WORDS), vocab))}
    del ids
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    row: dict[str, float] = {}
    t = time.perf_counter()
    index = ShardedBM25(shards=shards, ray=True).index(corpus)
    row["sharded_build_s"] = time.perf_counter() - t
    t = time.perf_counter()
    run = index.search(queries, k=100)
    row["sharded_query_ms"] = 1000 * (time.perf_counter() - t) / len(queries)
    row["sharded_driver_peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    ray.shutdown()
    del index
    gc.collect()
    from r2med.retrieval.bm25 import BM25

    ref = BM25(cache=False).index(corpus).search(queries, k=100)
    row["same_scores"] = float(all(list(run[q].values()) == list(ref[q].values()) for q in queries))
    return row


def in_fresh_process(fn, n_docs: int) -> dict[str, float]:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn")) as pool:
        return pool.submit(fn, n_docs).result()


STAGES = [
    ("bm25_build_s", "BM25 build (s)"),
    ("bm25_query_ms", "BM25 query (ms/q)"),
    ("dense_encode_s", "stand-in encode (s)"),
    ("dense_search_ms", "dense exact search (ms/q)"),
]
MEMORY = [
    ("bm25_index_mb", "BM25 index (MB)"),
    ("bm25_peak_rss_mb", "BM25 build+query peak RSS (MB)"),
    ("dense_matrix_mb", "dense matrix (MB)"),
    ("dense_search_peak_mb", "search peak extra (MB)"),
    ("dense_peak_rss_mb", "dense encode+search peak RSS (MB)"),
]


def growth(rows: list[dict[str, float]], key: str) -> float:
    """Least-squares slope of log(value) on log(docs) over the sizes that measured it: value ~ docs^alpha."""
    rows = [r for r in rows if key in r]
    x = np.log([r["docs"] for r in rows])
    y = np.log([max(r[key], 1e-9) for r in rows])
    return float(np.polyfit(x, y, 1)[0]) if len(rows) > 1 else float("nan")


def last_step(rows: list[dict[str, float]], key: str) -> float:
    """Growth exponent between the two largest sizes that measured ``key`` (the asymptotic trend)."""
    rows = [r for r in rows if key in r][-2:]
    if len(rows) < 2:
        return float("nan")
    return math.log(max(rows[1][key], 1e-9) / max(rows[0][key], 1e-9)) / math.log(rows[1]["docs"] / rows[0]["docs"])


def table(rows: list[dict[str, float]]) -> str:
    head = ["stage"] + [f"{int(r['docs']):,} docs" for r in rows] + ["x vs smallest", "fit N^a", "last step N^a"]
    lines = [head]
    for key, label in STAGES + MEMORY:
        vals = [r.get(key) for r in rows]
        got = [v for v in vals if v is not None]
        ratio = got[-1] / got[0] if got and got[0] else float("nan")
        lines.append(
            [label]
            + [f"{v:,.2f}" if v is not None else "-" for v in vals]
            + [f"{ratio:,.1f}x", f"{growth(rows, key):.2f}", f"{last_step(rows, key):.2f}"]
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    out = []
    for j, line in enumerate(lines):
        out.append("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(line, widths))))
        if j == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000,1000000,3000000", help="comma-separated corpus sizes")
    parser.add_argument(
        "--bm25-max",
        type=int,
        default=1_000_000,
        help="measure BM25 only up to this size (the pure-Python analysis is the slow part)",
    )
    parser.add_argument("--json", help="also write the measurements as JSON here")
    parser.add_argument(
        "--sharded-bm25",
        type=int,
        metavar="N",
        help="instead: ShardedBM25 (8 shards, local Ray, 2 CPUs) at N docs vs the single-process "
        "BM25 at N docs (time, driver peak RSS, score equality)",
    )
    args = parser.parse_args(argv)
    if args.sharded_bm25:
        single = in_fresh_process(measure_bm25, args.sharded_bm25)
        sharded = in_fresh_process(measure_sharded_bm25, args.sharded_bm25)
        print(f"BM25 at {args.sharded_bm25:,} docs (baseline: single-process BM25, same corpus)")
        print(
            f"  build   {single['bm25_build_s']:8.1f} s   sharded on Ray {sharded['sharded_build_s']:8.1f} s   "
            f"({sharded['sharded_build_s'] / single['bm25_build_s']:.2f}x)"
        )
        print(
            f"  query   {single['bm25_query_ms']:8.1f} ms  sharded on Ray {sharded['sharded_query_ms']:8.1f} ms  "
            f"({sharded['sharded_query_ms'] / single['bm25_query_ms']:.2f}x)"
        )
        print(
            f"  peak RSS {single['bm25_peak_rss_mb']:7.0f} MB  "
            f"sharded driver {sharded['sharded_driver_peak_rss_mb']:7.0f} MB  "
            f"({sharded['sharded_driver_peak_rss_mb'] / single['bm25_peak_rss_mb']:.2f}x)"
        )
        print(f"  top-100 scores identical to the unsharded index: {bool(sharded['same_scores'])}")
        return 0
    sizes = [int(s) for s in args.sizes.split(",")]
    rows = []
    start = time.perf_counter()
    for n in sizes:
        t = time.perf_counter()
        row = {"docs": float(n)}
        if n <= args.bm25_max:
            row.update(in_fresh_process(measure_bm25, n))
        row.update(in_fresh_process(measure_dense, n))
        rows.append(row)
        print(
            f"[{n:,} docs measured in {time.perf_counter() - t:.0f}s] "
            + json.dumps({k: round(v, 3) for k, v in rows[-1].items()}),
            file=sys.stderr,
            flush=True,
        )
    print(
        f"r2med cost growth on synthetic R2MED-shaped corpora ({N_QUERIES} queries of {QUERY_WORDS} words, "
        f"docs of ~{DOC_WORDS} words, Zipf s={ZIPF_S}, dense dim {DIM}); baseline = {sizes[0]:,} docs"
    )
    print(table(rows))
    print(f"total {time.perf_counter() - start:.0f}s")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(
                {
                    "rows": rows,
                    "growth": {k: growth(rows, k) for k, _ in STAGES + MEMORY},
                    "last_step": {k: last_step(rows, k) for k, _ in STAGES + MEMORY},
                },
                fh,
                indent=1,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
