"""Scale-out on a local Ray cluster (2 CPUs, started once for this module).

* sharded BM25 as Ray tasks == the same in-process (itself == the unsharded index, test_scale.py);
* a (retriever x task) matrix as Ray tasks == ``run_collection`` in this process;
* distributed encoding with the offline MiniLM == one ``encode_corpus`` call in this process
  (to 1e-6), resumable, and surviving an actor killed with SIGKILL mid-job.
"""

from __future__ import annotations

import numpy as np
import pytest

from r2med import load_folder
from r2med.data.loaders import load_demo
from r2med.pipeline import run_collection

from conftest import minilm_path, shared_collection

ray = pytest.importorskip("ray")

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cluster():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


def test_sharded_bm25_on_ray_equals_in_process(cluster):
    from r2med.scale import ShardedBM25

    coll = load_folder(shared_collection("medline-med"))
    local = ShardedBM25(shards=3).index(coll.corpus).search(coll.queries, k=100)
    on_ray = ShardedBM25(shards=3, ray=True).index(coll.corpus).search(coll.queries, k=100)
    assert on_ray == local
    assert all(list(on_ray[q].items()) == list(local[q].items()) for q in local)


def test_matrix_on_ray_equals_sequential(cluster, tmp_path):
    from r2med.scale.matrix import Cell, evaluate_matrix

    path = shared_collection("medline-med")
    loaders = {"medline-med": lambda: load_folder(path), "demo": load_demo}
    cells = [Cell(r, t, load) for r in ("bm25", "bm25-standard") for t, load in loaders.items()]
    finished = []
    results = evaluate_matrix(cells, k=50, out=tmp_path, on_done=lambda c, r: finished.append((c.retriever, c.task)))
    assert sorted(finished) == sorted((c.retriever, c.task) for c in cells)
    for cell, result in zip(cells, results):
        expected = run_collection(cell.load(), cell.retriever, {}, k=50)
        assert result.task == expected.task
        assert result.run == expected.run
        assert result.metrics.aggregate == expected.metrics.aggregate
        assert (tmp_path / cell.retriever / result.task / "metrics.json").exists()
    # A second run finds every cell's results on disk.
    again = evaluate_matrix(cells, k=50, out=tmp_path)
    assert all(r.reused for r in again)


@pytest.fixture(scope="module")
def small_corpus():
    coll = load_folder(shared_collection("medline-med"))
    return dict(list(coll.corpus.items())[:60])


@pytest.fixture(scope="module")
def settings():
    from r2med.retrieval.encoders import EncoderSettings

    return EncoderSettings(model=minilm_path(), max_length=64)


@pytest.fixture(scope="module")
def reference(small_corpus, settings):
    """The single-process path: one ``encode_corpus`` call over the whole corpus."""
    from r2med.retrieval.encoders import make_encoder

    return make_encoder(settings, device="cpu").encode_corpus(list(small_corpus.values()))


def test_distributed_encoding_equals_single_process(cluster, small_corpus, settings, reference):
    from r2med.retrieval.embedding_cache import EmbeddingCache
    from r2med.scale.encode import encode_distributed

    result = encode_distributed(small_corpus, settings, shard_size=16, actors=2)
    assert result.n_shards == 4 and result.encoded_shards == [0, 1, 2, 3]
    np.testing.assert_allclose(np.asarray(result.embeddings), reference, atol=1e-6, rtol=0)
    # It filled the embedding cache the single-process dense path reads...
    from r2med.cache import fingerprint_texts

    cache = EmbeddingCache(settings.key(), fingerprint_texts(small_corpus.items()), len(small_corpus))
    np.testing.assert_array_equal(cache.load(), result.embeddings)
    # ...so a second job encodes nothing.
    again = encode_distributed(small_corpus, settings, shard_size=16, actors=2)
    assert again.encoded_shards == [] and again.reused_shards == [0, 1, 2, 3]


def test_killed_actor_job_completes_with_every_shard_once(cluster, small_corpus, settings, reference, tmp_path):
    from r2med.scale.encode import KILL_MARKER_ENV, encode_distributed, load_shards
    from r2med.scale.store import ShardStore

    marker = tmp_path / "killed"
    dest = f"file://{tmp_path / 'store'}"
    store = ShardStore(dest)
    result = encode_distributed(small_corpus, settings, dest=dest, shard_size=12, actors=1,
                                runtime_env={"env_vars": {KILL_MARKER_ENV: str(marker)}})
    assert marker.exists(), "the fault was not injected"
    killed_pid = int(marker.read_text())
    assert killed_pid in result.actor_pids  # the first shard came from the process that was killed
    assert len(result.actor_pids) == 2  # ...and the rest from its restarted replacement
    assert result.encoded_shards == [0, 1, 2, 3, 4]
    assert store.finished() == {0, 1, 2, 3, 4}
    names = sorted(p.name for p in (tmp_path / "store" / "shards").iterdir())
    assert names == [f"{i:05d}.npy" for i in range(5)]  # exactly once each, no temp files left
    doc_ids, shards = load_shards(dest)
    assert doc_ids == list(small_corpus)
    np.testing.assert_allclose(np.concatenate(shards), reference, atol=1e-6, rtol=0)

    # Resume: delete two shards, the next job encodes exactly those.
    (tmp_path / "store" / "shards" / "00001.npy").unlink()
    (tmp_path / "store" / "shards" / "00003.npy").unlink()
    resumed = encode_distributed(small_corpus, settings, dest=dest, shard_size=12, actors=1)
    assert resumed.encoded_shards == [1, 3] and resumed.reused_shards == [0, 2, 4]
    np.testing.assert_allclose(np.concatenate(load_shards(dest)[1]), reference, atol=1e-6, rtol=0)
