"""No excluded id ever appears in a run: each query's excluded documents are removed inside the top-k search, before
the cut, by every retriever -- and the run is the exact top k of the other documents.

Reference: a brute force over the full score matrix (every document scored, the excluded ones popped, a stable
descending sort, the first k: BRIGHT's retrievers.py:111-127 rule), against which every retriever is checked on
random corpora, exclusions and depths (hypothesis): ``bm25``, ``bm25-standard``, dense retrieval with the offline
MiniLM model (exact blocked search with small blocks, FAISS, and the embedding cache's second run), the sharded
BM25 and dense search of :mod:`r2med.scale` in-process and on Ray.  Then the jobs: a retriever that cannot exclude
is refused, one that leaks is an error, reranking never surfaces an excluded id.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from r2med.data.exclusion_cells import excluded_cells
from r2med.data.exclusions import Exclusions

WORDS = "heart kidney liver lung brain blood bone skin nerve gene cell insulin".split()


def corpus_of(seed: int, n_docs: int, n_queries: int) -> tuple[dict[str, str], dict[str, str]]:
    rng = np.random.default_rng(seed)
    docs = {f"d{i}": " ".join(rng.choice(WORDS, size=int(rng.integers(1, 6)))) for i in range(n_docs)}
    queries = {f"q{i}": " ".join(rng.choice(WORDS, size=2)) for i in range(n_queries)}
    return docs, queries


def exclusions_of(seed: int, queries, doc_ids, share: float) -> Exclusions:
    rng = np.random.default_rng(seed + 1)
    picked = {q: [d for d in doc_ids if rng.random() < share] for q in queries}
    picked[next(iter(queries))].append("not-a-document")  # an id the corpus lacks: nothing to remove
    picked[next(iter(queries))].append("N/A")  # BRIGHT's "none"
    return Exclusions.of(picked)


def brute_force(scores: np.ndarray, qids, doc_ids, exclusions: Exclusions, k: int) -> dict[str, dict[str, float]]:
    """Every document scored, the excluded popped, a stable descending sort, the first k (BRIGHT's rule)."""
    out = {}
    for row, qid in enumerate(qids):
        kept = {d: float(s) for d, s in zip(doc_ids, scores[row]) if d not in exclusions.get(qid)}
        out[qid] = dict(sorted(kept.items(), key=lambda x: x[1], reverse=True)[:k])
    return out


def assert_exact(run, ref, exclusions: Exclusions, tol: float = 1e-5) -> None:
    """No excluded id; as many documents as the reference; the same ranking up to ties (scores agree)."""
    assert set(run) == set(ref)
    for qid, expected in ref.items():
        got = run[qid]
        assert not set(got) & exclusions.get(qid), qid
        assert len(got) == len(expected), qid
        for did, score in got.items():
            if did in expected:
                assert score == pytest.approx(expected[did], abs=tol)
        for a, b in zip(got, expected):
            if a != b:  # a tie: the two hold the same score
                assert got[a] == pytest.approx(expected[b], abs=tol), (qid, a, b)
        if expected:
            cut = list(expected.values())[-1]
            for did in set(got) ^ set(expected):
                assert got.get(did, cut) == pytest.approx(cut, abs=tol)


CASES = st.tuples(
    st.integers(0, 10_000),  # seed
    st.integers(1, 40),  # documents
    st.integers(1, 6),  # queries
    st.sampled_from([0.0, 0.2, 0.6, 1.0]),  # share of documents each query excludes
    st.integers(1, 50),  # k
)


@pytest.mark.parametrize("flavour", ["paper", "standard"])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=CASES)
def test_bm25_is_the_exact_top_k_after_exclusion(flavour, case):
    from r2med import BM25

    seed, n_docs, n_queries, share, k = case
    docs, queries = corpus_of(seed, n_docs, n_queries)
    excl = exclusions_of(seed, queries, list(docs), share)
    bm25 = BM25(flavour=flavour, cache=False).index(docs)
    ref = brute_force(bm25.score_matrix(list(queries.values())), list(queries), list(docs), excl, k)
    assert_exact(bm25.search(queries, k=k, exclusions=excl), ref, excl)


@settings(max_examples=30, deadline=None)
@given(case=CASES, shards=st.integers(1, 5))
def test_sharded_bm25_in_process_is_the_exact_top_k_after_exclusion(case, shards):
    from r2med import BM25
    from r2med.scale import ShardedBM25

    seed, n_docs, n_queries, share, k = case
    docs, queries = corpus_of(seed, n_docs, n_queries)
    excl = exclusions_of(seed, queries, list(docs), share)
    ref_scores = BM25(cache=False).index(docs).score_matrix(list(queries.values()))
    ref = brute_force(ref_scores, list(queries), list(docs), excl, k)
    sharded = ShardedBM25(shards=shards).index(docs)
    assert_exact(sharded.search(queries, k=k, exclusions=excl), ref, excl)


@pytest.fixture(scope="module")
def minilm_corpus():
    """The MiniLM vectors of one corpus (encoded once), and its queries'."""
    from conftest import minilm_path
    from r2med.retrieval.registry import make_retriever

    docs, queries = corpus_of(7, 40, 5)
    retriever = make_retriever("dense", model=minilm_path(), cache=False, batch_size=16)
    retriever.index(docs)
    q = retriever.embed_queries(list(queries.values()))
    return docs, queries, retriever, q


def dense_reference(minilm_corpus, excl, k):
    docs, queries, retriever, q = minilm_corpus
    qn = q / np.linalg.norm(q, axis=1, keepdims=True)
    d = retriever.embeddings / np.linalg.norm(retriever.embeddings, axis=1, keepdims=True)
    return brute_force(qn @ d.T, list(queries), list(docs), excl, k)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 1000), share=st.sampled_from([0.0, 0.3, 0.9, 1.0]), k=st.integers(1, 45))
def test_dense_exact_blocked_search_is_the_exact_top_k_after_exclusion(minilm_corpus, seed, share, k):
    docs, queries, retriever, _ = minilm_corpus
    excl = exclusions_of(seed, queries, list(docs), share)
    ref = dense_reference(minilm_corpus, excl, k)
    retriever.search_chunk = 7  # blocks of 7 documents: exclusions that straddle blocks
    assert_exact(retriever.search(queries, k=k, exclusions=excl), ref, excl)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 1000), share=st.sampled_from([0.0, 0.3, 0.9]), k=st.integers(1, 30))
def test_dense_faiss_flat_is_the_exact_top_k_after_exclusion(minilm_corpus, seed, share, k):
    pytest.importorskip("faiss")
    docs, queries, retriever, _ = minilm_corpus
    excl = exclusions_of(seed, queries, list(docs), share)
    ref = dense_reference(minilm_corpus, excl, k)
    retriever.faiss = "Flat"
    try:
        assert_exact(retriever.search(queries, k=k, exclusions=excl), ref, excl, tol=1e-4)
    finally:
        retriever.faiss = None


def test_dense_through_the_embedding_cache_excludes_too():
    """The second run reads every vector from the embedding cache (nothing encoded) and excludes as the first."""
    from conftest import minilm_path
    from r2med.retrieval.registry import make_retriever

    docs, queries = corpus_of(11, 30, 4)
    excl = exclusions_of(11, queries, list(docs), 0.5)
    runs = []
    for _ in range(2):
        retriever = make_retriever("dense", model=minilm_path(), batch_size=16)
        retriever.index(docs)
        runs.append(retriever.search(queries, k=25, exclusions=excl))
    assert retriever.docs_encoded == 0 and retriever.queries_encoded == 0
    assert runs[0] == runs[1]
    for qid, docs_ in runs[1].items():
        assert not set(docs_) & excl.get(qid)


@settings(max_examples=20, deadline=None)
@given(case=CASES, shards=st.integers(1, 4))
def test_sharded_dense_in_process_is_the_exact_top_k_after_exclusion(case, shards):
    from r2med.scale.dense import ShardedDenseIndex

    seed, n_docs, n_queries, share, k = case
    rng = np.random.default_rng(seed)
    vectors = rng.normal(size=(n_docs, 8)).astype(np.float32)
    queries = rng.normal(size=(n_queries, 8)).astype(np.float32)
    doc_ids = [f"d{i}" for i in range(n_docs)]
    qids = [f"q{i}" for i in range(n_queries)]
    excl = exclusions_of(seed, qids, doc_ids, share)
    bounds = np.linspace(0, n_docs, min(shards, n_docs) + 1).astype(int)
    index = ShardedDenseIndex.from_arrays(doc_ids, [vectors[a:b] for a, b in zip(bounds[:-1], bounds[1:])])
    ref = brute_force(queries @ vectors.T, qids, doc_ids, excl, k)
    run = index.search(queries, qids, k=k, ignore_identical_ids=False, exclusions=excl)
    assert_exact(run, ref, excl, tol=1e-4)


@pytest.fixture
def ray_cluster():
    """A private Ray cluster for one test, shut down after it (another module's cluster fixture starts its own)."""
    ray = pytest.importorskip("ray")
    if ray.is_initialized():  # one another test left running in this process: used as it is
        yield ray
        return
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


@pytest.mark.slow(seconds=40)
def test_ray_sharded_bm25_and_dense_exclude_before_the_cut(ray_cluster):
    from r2med import BM25
    from r2med.scale import ShardedBM25
    from r2med.scale.dense import ShardedDenseIndex

    docs, queries = corpus_of(3, 60, 5)
    excl = exclusions_of(3, queries, list(docs), 0.4)
    ref = brute_force(
        BM25(cache=False).index(docs).score_matrix(list(queries.values())), list(queries), list(docs), excl, 30
    )
    sharded = ShardedBM25(shards=3, ray=True).index(docs)
    assert_exact(sharded.search(queries, k=30, exclusions=excl), ref, excl)

    rng = np.random.default_rng(3)
    vectors = rng.normal(size=(60, 8)).astype(np.float32)
    qv = rng.normal(size=(5, 8)).astype(np.float32)
    index = ShardedDenseIndex.from_arrays(list(docs), [vectors[:20], vectors[20:45], vectors[45:]])
    ref = brute_force(qv @ vectors.T, list(queries), list(docs), excl, 30)
    run = index.search(qv, list(queries), k=30, ignore_identical_ids=False, ray=True, exclusions=excl)
    assert_exact(run, ref, excl, tol=1e-4)


def test_exclusions_are_typed_and_frozen():
    excl = Exclusions.of({"q1": ["a", "b", "N/A", "a"], "q2": ["N/A"], "q3": []})
    assert len(excl) == 1 and excl.get("q1") == frozenset({"a", "b"}) and excl.get("q2") == frozenset()
    assert excl.pairs == 2 and excl.record()["pairs"] == 2 and Exclusions.of({}).fingerprint is None
    with pytest.raises(TypeError):
        excl.by_query["q9"] = frozenset({"x"})  # type: ignore[index]
    with pytest.raises(AttributeError):
        excl.by_query = {}  # type: ignore[misc]
    run = {"q1": {"a": 3.0, "c": 2.0, "b": 1.0}, "q2": {"a": 1.0}}
    assert excl.drop_from(run) == ({"q1": {"c": 2.0}, "q2": {"a": 1.0}}, 2)


# -- the jobs -------------------------------------------------------------------------------------------------


def _collection(exclusions: Exclusions):
    from r2med.data import Collection

    docs, queries = corpus_of(5, 20, 3)
    qrels = {q: {"d1": 1} for q in queries}
    return Collection("t", docs, queries, qrels, exclusions=exclusions)


def test_a_retriever_that_cannot_exclude_is_refused():
    from r2med.errors import R2MedError
    from r2med.jobs.evaluate import check_excludes
    from r2med.retrieval.base import as_retriever

    class Plain:  # the protocol's minimum: no ``excludes``, as the registry builds it (its default: False)
        name = "plain"
        family = "lexical"

        def index(self, corpus, corpus_fingerprint=None):
            return self

        def search(self, queries, k=100):
            return {}

        def config(self):
            return {}

    coll = _collection(Exclusions.of({"q0": ["d1"]}))
    with pytest.raises(R2MedError, match=r"cannot do inside its search"):
        check_excludes(as_retriever(Plain(), "plain"), coll)
    check_excludes(as_retriever(Plain(), "plain"), _collection(Exclusions()))  # nothing to exclude: nothing to refuse


def test_a_run_that_leaks_an_excluded_id_is_an_error_not_a_result():
    from r2med.errors import R2MedError
    from r2med.jobs.evaluate import search

    class Leaky:
        name = "leaky"
        excludes = True

        def search(self, queries, k=100, exclusions=None):
            return {q: {"d1": 1.0, "d2": 0.5} for q in queries}

    coll = _collection(Exclusions.of({"q0": ["d1"]}))
    with pytest.raises(R2MedError, match=r"returned 1 excluded"):
        search(Leaky(), coll.queries, 10, coll)


def test_rerank_never_surfaces_an_excluded_id(tmp_path, monkeypatch):
    """A first-stage run that holds excluded documents (a released run, written by hand here) is reranked without
    them: the reranker never sees them, the reranked run never holds them."""
    from r2med.data.resolve import TaskRef
    from r2med.jobs import rerank as jobs
    from r2med.results.folders import finish_task
    from r2med.steps import RerankStep

    coll = _collection(Exclusions.of({"q0": ["d1", "d2"], "q1": ["d3"]}))
    first = {q: {d: 20.0 - i for i, d in enumerate(coll.corpus)} for q in coll.queries}  # excluded ones on top
    finish_task(coll, "first", first, {"step": "evaluate", "retriever": "first"}, tmp_path / "first", (), False, {})
    monkeypatch.setattr(TaskRef, "load", lambda self, corpus=True: coll)
    monkeypatch.setattr(jobs, "locate", lambda *a, **k: TaskRef("t", "demo"))

    class Longest:
        name = "longest"

        def score(self, query, docs):
            return [1.0 + len(d) for d in docs]

    [system] = jobs.rerank_folder(RerankStep.of(tmp_path / "first", Longest(), top_k=10, out=tmp_path))
    run = system.results[0].run
    assert run is not None and set(run) == set(coll.queries)
    for qid, docs in run.items():
        assert not set(docs) & coll.exclusions.get(qid), qid
        assert len(docs) == len(coll.corpus) - len(coll.exclusions.get(qid))  # the others all kept


def test_the_torch_products_path_masks_the_same_cells():
    """The products a CUDA device computes go through torch (here torch on the CPU): the same masked top k."""
    pytest.importorskip("torch")
    from r2med.retrieval.dense import exact_top_k

    rng = np.random.default_rng(5)
    docs, queries = rng.normal(size=(50, 8)).astype(np.float32), rng.normal(size=(4, 8)).astype(np.float32)
    doc_ids, qids = [f"d{i}" for i in range(50)], [f"q{i}" for i in range(4)]
    excl = exclusions_of(5, qids, doc_ids, 0.5)
    cells = excluded_cells(excl, qids, {d: i for i, d in enumerate(doc_ids)})
    for torch_products in (False, True):
        scores, idx = exact_top_k(queries, docs, 20, chunk=9, device="cpu", torch_products=torch_products, cells=cells)
        run = {q: {doc_ids[j]: float(s) for s, j in zip(scores[r], idx[r]) if j >= 0} for r, q in enumerate(qids)}
        assert_exact(run, brute_force(queries @ docs.T, qids, doc_ids, excl, 20), excl, tol=1e-4)
