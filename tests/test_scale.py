"""Sharding without Ray: shard plans, deterministic top-k and its merge, sharded BM25 vs the unsharded index.

References are computed independently: a full-row lexicographic sort for top-k, and the
unsharded :class:`r2med.retrieval.bm25.BM25` (itself checked against gensim) for BM25.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import shared_collection
from r2med import load_folder
from r2med.errors import R2MedError
from r2med.retrieval.bm25 import BM25
from r2med.retrieval.topk import merge_top_k, top_k_rows
from r2med.scale import ShardedBM25
from r2med.scale.shards import plan_shards


def reference_topk(scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Brute force: sort every row fully by (score desc, position asc)."""
    order = np.array([sorted(range(len(row)), key=lambda i: (-row[i], i))[:k] for row in scores], dtype=np.int64)
    return order, np.take_along_axis(scores, order, axis=1)


@given(n=st.integers(1, 500), shards=st.integers(1, 40), size=st.none() | st.integers(1, 60))
def test_plan_covers_corpus_contiguously(n, shards, size):
    plan = plan_shards(n, shards=shards, shard_size=size)
    assert plan[0].start == 0 and plan[-1].stop == n
    assert all(a.stop == b.start for a, b in zip(plan, plan[1:]))
    assert all(len(s) > 0 for s in plan)
    if size is None:
        assert len(plan) == min(shards, n)
        assert max(map(len, plan)) - min(map(len, plan)) <= 1


def test_plan_rejects_bad_input():
    with pytest.raises(R2MedError):
        plan_shards(0, 2)
    with pytest.raises(R2MedError):
        plan_shards(10, shard_size=0)


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    n_docs=st.integers(1, 120),
    k=st.integers(1, 40),
    shards=st.integers(1, 9),
    levels=st.integers(1, 6),
)
def test_sharded_topk_equals_full_sort(seed, n_docs, k, shards, levels):
    rng = np.random.default_rng(seed)
    # Few distinct values -> many ties, also at the cut-off.
    scores = rng.integers(0, levels, size=(5, n_docs)).astype(np.float32) * 0.5
    ref_pos, ref_val = reference_topk(scores, k)
    pos, val = top_k_rows(scores, k)
    np.testing.assert_array_equal(pos, ref_pos)
    np.testing.assert_array_equal(val, ref_val)
    parts = [top_k_rows(scores[:, s.start : s.stop], k, offset=s.start) for s in plan_shards(n_docs, shards)]
    mpos, mval = merge_top_k(parts, k)
    np.testing.assert_array_equal(mpos, ref_pos)
    np.testing.assert_array_equal(mval, ref_val)


@pytest.fixture(scope="module", params=["nfcorpus-test", "medline-med"])
def collection(request):
    return load_folder(shared_collection(request.param))


@pytest.mark.parametrize("flavour", ["paper", "standard"])
def test_sharded_bm25_equals_unsharded(collection, flavour):
    ref = BM25(flavour=flavour, cache=False).index(collection.corpus)
    qids = list(collection.queries)
    texts = [collection.queries[q] for q in qids]
    full = ref.score_matrix(texts)
    ref_pos, ref_val = reference_topk(full, 100)
    unsharded_run = ref.search(collection.queries, k=100)
    doc_ids = list(collection.corpus)

    for shards in (2, 7):
        sb = ShardedBM25(flavour=flavour, shards=shards).index(collection.corpus)
        # Collection-wide statistics are the unsharded index's.
        assert list(sb.head.vocab) == list(ref.vocab)
        np.testing.assert_array_equal(sb.head.idf, ref.idf)
        assert sb.head.avgdl == ref.avgdl
        # Each shard's weights are exactly the unsharded columns of its documents.
        for w, s in zip(sb.shards, sb.plan):
            diff = w - ref.weights_t[:, s.start : s.stop]
            assert diff.count_nonzero() == 0
        run = sb.search(collection.queries, k=100)
        for row, qid in enumerate(qids):
            got = list(run[qid].items())
            # Same docs, order and scores as a full sort of the unsharded scores (ties by corpus order)...
            assert [d for d, _ in got] == [doc_ids[i] for i in ref_pos[row]], qid
            assert [s for _, s in got] == [float(v) for v in ref_val[row]], qid
            # ...and exactly BM25.search's list: both break ties by corpus order.
            assert got == list(unsharded_run[qid].items()), qid


def test_sharded_bm25_rejects_misuse():
    with pytest.raises(R2MedError):
        ShardedBM25().index({})
    with pytest.raises(R2MedError):
        ShardedBM25().search({"q": "x"})


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    n_docs=st.integers(1, 90),
    k=st.integers(1, 30),
    shards=st.integers(1, 7),
    identical=st.booleans(),
)
def test_sharded_dense_search_equals_brute_force(seed, n_docs, k, shards, identical):
    from r2med.scale.dense import ShardedDenseIndex

    rng = np.random.default_rng(seed)
    # Small integer vectors: products are exact in float32 and ties are common.
    docs = rng.integers(-2, 3, size=(n_docs, 4)).astype(np.float32)
    queries = rng.integers(-2, 3, size=(6, 4)).astype(np.float32)
    doc_ids = [f"d{i}" for i in range(n_docs)]
    same = [f"d{i}" for i in rng.permutation(n_docs)[:6]] if identical else []
    qids = same + [f"q{i}" for i in range(6 - len(same))]  # distinct; some equal to doc ids
    index = ShardedDenseIndex.from_arrays(doc_ids, [docs[s.start : s.stop] for s in plan_shards(n_docs, shards)])
    run = index.search(queries, qids, k=k, ignore_identical_ids=True)
    full = queries.astype(np.float64) @ docs.T.astype(np.float64)
    for r, qid in enumerate(qids):
        allowed = [i for i in range(n_docs) if doc_ids[i] != qid]
        best = sorted(allowed, key=lambda i: (-full[r, i], i))[:k]
        assert list(run[qid]) == [doc_ids[i] for i in best]
        assert list(run[qid].values()) == [float(full[r, i]) for i in best]


@pytest.mark.parametrize("kind", ["path", "file-uri", "fsspec-memory"])
def test_shard_store_round_trip(tmp_path, kind):
    from r2med.scale.store import ShardStore

    location = {
        "path": str(tmp_path / "s"),
        "file-uri": f"file://{tmp_path / 's'}",
        "fsspec-memory": f"memory://r2med-test-{tmp_path.name}/s",
    }[kind]
    store = ShardStore(location)
    assert store.read_manifest() is None and store.finished() == set()
    rng = np.random.default_rng(0)
    arrays = {i: rng.standard_normal((3 + i, 5)).astype(np.float32) for i in (0, 2, 11)}
    for i, arr in arrays.items():
        store.write_shard(i, arr)
    store.write_manifest({"n_docs": 3})
    import pickle

    again = pickle.loads(pickle.dumps(store))  # what Ray ships to the actors
    assert again.finished() == {0, 2, 11} and again.has_shard(2) and not again.has_shard(1)
    for i, arr in arrays.items():
        np.testing.assert_array_equal(again.read_shard(i), arr)
    assert again.read_manifest() == {"n_docs": 3}
    if kind != "fsspec-memory":  # only complete files carry a shard's name; no temp files remain
        assert sorted(p.name for p in (tmp_path / "s" / "shards").iterdir()) == ["00000.npy", "00002.npy", "00011.npy"]


@pytest.mark.parametrize(
    "doc_ids, said",
    [
        (b"[" * 200_000 + b"]" * 200_000, "nested too deeply"),
        (b"[" * 500 + b"]" * 500, "nested more than 100 levels deep"),
        (b'{"d0": 1}', "a list of document ids"),
        (b"\xff", "utf-8"),
    ],
    ids=["200000-deep", "500-deep", "an-object", "not-utf8"],
)
def test_a_stores_doc_ids_json_that_r2med_did_not_write_is_one_line(tmp_path, doc_ids, said):
    """``doc_ids.json`` of a shard store (``encode --ray --dest``, read back by ``ShardedDenseIndex.from_store``)
    goes through the one JSON reader: nested 200,000 deep was a RecursionError traceback, an object a list of its
    keys, bad UTF-8 a UnicodeDecodeError; each is now one line naming the store."""
    from r2med.scale.encode import load_shards
    from r2med.scale.store import ShardStore

    store = ShardStore(str(tmp_path / "s"))
    store.write_shard(0, np.ones((1, 4), dtype=np.float32))
    store.write_manifest({"n_docs": 1, "shard_size": 1})
    store.write_bytes("doc_ids.json", doc_ids)
    with pytest.raises(R2MedError) as info:
        load_shards(str(tmp_path / "s"))
    message = str(info.value)
    assert message.startswith(f"{tmp_path / 's'}: doc_ids.json is not what r2med writes") and said in message.lower()
    assert len(message) < 300


@pytest.mark.parametrize(
    "manifest, said",
    [(b"[1, 2]", "manifest.json is not what r2med writes (a json object)"), (b'{"n_docs": "3"}', "no n_docs")],
    ids=["a-list", "no-counts"],
)
def test_a_stores_manifest_that_r2med_did_not_write_is_one_line(tmp_path, manifest, said):
    """A shard store's ``manifest.json`` that is not an object (it was read as one: a list had no ``get``), or
    holds no whole ``n_docs`` and ``shard_size``, is one line naming the store."""
    from r2med.scale.encode import load_shards
    from r2med.scale.store import ShardStore

    store = ShardStore(str(tmp_path / "s"))
    store.write_shard(0, np.ones((1, 4), dtype=np.float32))
    store.write_bytes("doc_ids.json", b'["d0"]')
    store.write_bytes("manifest.json", manifest)
    with pytest.raises(R2MedError) as info:
        load_shards(str(tmp_path / "s"))
    message = str(info.value)
    assert message.startswith(f"{tmp_path / 's'}: ") and said in message.lower() and "\n" not in message


def test_matrix_resource_requests():
    from r2med.jobs.ray import default_resources

    assert default_resources("bm25", gpus_available=4) == {"num_cpus": 1.0}
    assert default_resources("bge", gpus_available=4) == {"num_cpus": 1.0, "num_gpus": 1.0}
    assert default_resources("bge", gpus_available=0) == {"num_cpus": 1.0}  # CPU-only cluster


def test_merge_statistics_across_shards_by_hand():
    """Collection-wide statistics merged from shards, checked against hand computation."""
    from r2med.scale import ShardedBM25

    corpus = {"a": "heart attack", "b": "heart failure heart", "c": "kidney failure", "d": "liver"}
    sb = ShardedBM25(shards=3).index(corpus)
    assert list(sb.head.vocab) == ["heart", "attack", "failur", "kidnei", "liver"]  # first seen, Porter-stemmed
    df = {"heart": 2, "attack": 1, "failur": 2, "kidnei": 1, "liver": 1}
    expected_idf = [np.log(5) - np.log(df[t] + 0.5) for t in sb.head.vocab]  # ln((N+1)/(df+0.5)), N=4
    np.testing.assert_allclose(sb.head.idf, expected_idf, rtol=1e-12)
    assert sb.head.avgdl == (2 + 3 + 2 + 1) / 4


def test_driver_env_forwards_the_environment_and_keeps_the_callers_env_vars(monkeypatch):
    """The ``runtime_env`` Ray tasks get: :data:`FORWARDED_ENV` from this process, the caller's ``env_vars`` over
    them, the caller's other keys kept; ``env_vars`` that are not an object are one line."""
    from r2med.scale.cluster import FORWARDED_ENV, driver_env

    for name in FORWARDED_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("R2MED_HOME", "/shared/home")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert driver_env() == {"env_vars": {"R2MED_HOME": "/shared/home", "HF_HUB_OFFLINE": "1"}}
    given = {"pip": ["x"], "env_vars": {"HF_HUB_OFFLINE": "0", "OTHER": "y"}}
    assert driver_env(given) == {
        "pip": ["x"],
        "env_vars": {"R2MED_HOME": "/shared/home", "HF_HUB_OFFLINE": "0", "OTHER": "y"},
    }
    with pytest.raises(R2MedError, match=r"^runtime_env's env_vars must be an object of name -> text, got str$"):
        driver_env({"env_vars": "R2MED_HOME=/x"})
