"""What recording the ties at the depth cut costs the searches: BM25's ``search`` and dense exact search
(``exact_top_k_cut``), each with r2med's top-k rule as it is (which also returns the documents the cut dropped while
tied with each query's last one) against the baseline, the rule as it was before (commit f116424: the same
selection without the dropped ties; copied below as ``baseline_*``), swapped in side by side in one run.

Synthetic collection: ``--docs`` documents of 5-60 words from a 20,000-word Zipf vocabulary, 200 queries of 4 words
(every query matches thousands of documents: nothing ties at the cut) and 200 queries of one rare word (they
match a handful of documents, so each is filled with zeros and the cut drops tens of thousands of tied zeros:
the most the recording ever costs, 1,000 ids a query); dense: 384-wide random vectors, exact search in numpy
chunks.  Wall time, the best of ``--repeats`` alternated calls::

    PYTHONPATH=src python benchmarks/ties_cut_speed.py [--docs 50000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence
from unittest import mock

import numpy as np

from r2med.retrieval import bm25 as bm25_module
from r2med.retrieval import dense as dense_module
from r2med.retrieval.bm25 import BM25
from r2med.retrieval.dense import exact_top_k_cut
from r2med.retrieval.topk import CutPositions

# -- the baseline: the top-k rule of f116424 ----------------------------------------------------------


def baseline_top_k_indices(row: np.ndarray, k: int) -> np.ndarray:
    k = min(k, row.shape[0])
    if k <= 0:
        return np.zeros(0, dtype=np.int64)
    chosen = []
    for tier in (row > 0, row == 0, row < 0):
        found = np.flatnonzero(tier)
        if len(found) >= k:
            chosen.append(_baseline_best(found, row, k))
            break
        chosen.append(found)
        k -= len(found)
    picked = np.concatenate(chosen)
    return picked[np.lexsort((picked, -row[picked]))]


def _baseline_best(candidates: np.ndarray, row: np.ndarray, k: int) -> np.ndarray:
    values = row[candidates]
    m = len(values)
    if k >= m:
        return candidates
    kth = np.partition(values, m - k)[m - k]
    above = candidates[values > kth]
    return np.concatenate([above, candidates[values == kth][: k - len(above)]])


def baseline_top_k_rows(scores: np.ndarray, k: int, offset: int = 0) -> tuple[np.ndarray, np.ndarray, CutPositions]:
    n_rows, n_cols = scores.shape
    k = min(k, n_cols)
    positions = np.empty((n_rows, k), dtype=np.int64)
    values = np.empty((n_rows, k), dtype=scores.dtype)
    for r in range(n_rows):
        order = baseline_top_k_indices(scores[r], k)
        positions[r] = order + offset
        values[r] = scores[r, order]
    return positions, values, {}


def baseline_merge(
    parts: Sequence[tuple[np.ndarray, np.ndarray, CutPositions]], k: int
) -> tuple[np.ndarray, np.ndarray, CutPositions]:
    positions = np.concatenate([p for p, _, _ in parts], axis=1)
    scores = np.concatenate([s for _, s, _ in parts], axis=1)
    order = np.lexsort((positions, -scores), axis=-1)[:, :k]
    return np.take_along_axis(positions, order, axis=1), np.take_along_axis(scores, order, axis=1), {}


# -- the measurement ----------------------------------------------------------------------------------


def best_of(calls: dict[str, Callable[[], object]], repeats: int) -> dict[str, float]:
    """The best wall time of each call, the calls alternated so a busy machine slows both alike."""
    times: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(repeats):
        for name, call in calls.items():
            start = time.perf_counter()
            call()
            times[name].append(time.perf_counter() - start)
    return {name: min(t) for name, t in times.items()}


def report(what: str, timed: dict[str, float]) -> None:
    base, now = timed["baseline"], timed["now"]
    print(f"{what:<44} baseline {base * 1000:8.1f} ms   now {now * 1000:8.1f} ms   now/baseline {now / base:5.3f}")


def bm25_case(retriever: BM25, name: str, queries: dict[str, str], k: int, repeats: int) -> None:
    runs = {}

    def now() -> None:
        runs["now"] = retriever.search(queries, k=k)

    def baseline() -> None:
        with mock.patch.object(bm25_module, "top_k_rows_cut", baseline_top_k_rows):
            runs["baseline"] = retriever.search(queries, k=k)

    report(name, best_of({"baseline": baseline, "now": now}, repeats))
    assert runs["now"] == runs["baseline"]
    retriever.search(queries, k=k)
    tied = retriever.cut_ties or {}
    print(f"  queries whose cut dropped ties: {len(tied)}, ids recorded: {sum(len(c.ids) for c in tied.values())}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=50_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--k", type=int, default=100)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    vocab = np.array([f"w{i}" for i in range(20_000)])
    weights = 1.0 / np.arange(1, len(vocab) + 1)
    weights /= weights.sum()
    corpus = {f"d{i}": " ".join(rng.choice(vocab, size=int(rng.integers(5, 60)), p=weights)) for i in range(args.docs)}
    common = {f"c{q}": " ".join(rng.choice(vocab[:200], size=4)) for q in range(200)}
    rare = {f"r{q}": str(vocab[19_000 + q]) for q in range(200)}
    retriever = BM25(cache=False).index(corpus)
    for name, queries in (
        ("BM25, 200 queries matching many documents", common),
        ("BM25, 200 one-rare-word queries", rare),
    ):
        bm25_case(retriever, name, queries, args.k, args.repeats)
    docs = rng.standard_normal((args.docs, 384)).astype(np.float32)
    queries_v = rng.standard_normal((200, 384)).astype(np.float32)
    out: dict[str, tuple[np.ndarray, np.ndarray, CutPositions]] = {}

    def dense_now() -> None:
        out["now"] = exact_top_k_cut(queries_v, docs, args.k, chunk=8192, device="cpu")

    def dense_baseline() -> None:
        with (
            mock.patch.object(dense_module, "top_k_rows_cut", baseline_top_k_rows),
            mock.patch.object(dense_module, "merge_top_k_cut", baseline_merge),
        ):
            out["baseline"] = exact_top_k_cut(queries_v, docs, args.k, chunk=8192, device="cpu")

    report("dense exact, 200 queries x 384 dims", best_of({"baseline": dense_baseline, "now": dense_now}, args.repeats))
    assert np.array_equal(out["now"][1], out["baseline"][1])


if __name__ == "__main__":
    main()
