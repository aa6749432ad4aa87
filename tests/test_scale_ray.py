"""Scale-out on a local Ray cluster (2 CPUs, started once for this module).

* sharded BM25 as Ray tasks == the same in-process (itself == the unsharded index, test_scale.py);
* a (retriever x task) matrix as Ray tasks == ``run_collection`` in this process;
* distributed encoding with the offline MiniLM (CLI and API) == one ``encode_corpus`` call here
  (to 1e-6), resumable, and surviving an actor killed with SIGKILL mid-job.
"""

from __future__ import annotations

import numpy as np
import pytest

from conftest import run_r2med, shared_collection
from r2med import load_folder
from r2med.data.loaders import load_demo
from r2med.jobs.evaluate import run_task
from r2med.steps import EvaluateStep

ray = pytest.importorskip("ray")

pytestmark = pytest.mark.slow(seconds=15)  # a local cluster starts per module; the tests stay together


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


def test_matrix_on_ray_equals_sequential(cluster, tmp_path, r2med_home):
    from r2med.jobs.ray import MatrixJob, evaluate_matrix

    path = shared_collection("medline-med")
    loaders = {"medline-med": lambda: load_folder(path), "demo": load_demo}
    cells = [
        MatrixJob.of(EvaluateStep.of(r, top_k=50, out=tmp_path), t, load)
        for r in ("bm25", "bm25-standard")
        for t, load in loaders.items()
    ]
    assert all(c.step() == EvaluateStep.of(c.retriever, top_k=50, out=tmp_path) for c in cells)  # rebuilt alike
    finished = []
    results = evaluate_matrix(cells, on_done=lambda c, r: finished.append((c.retriever, c.task)))
    assert sorted(finished) == sorted((c.retriever, c.task) for c in cells)
    # The tasks used this test's r2med home (forwarded by the driver) for their BM25 indexes.
    assert len(list((r2med_home / "bm25").iterdir())) == 2  # one per corpus, shared by both flavours
    for cell, result in zip(cells, results):
        expected = run_task(cell.load(), EvaluateStep.of(cell.retriever, top_k=50))
        assert result.task == expected.task
        assert result.run == expected.run
        assert result.metrics.aggregate == expected.metrics.aggregate
        assert (tmp_path / cell.retriever / result.task / "metrics.json").exists()
    # A second run finds every cell's results on disk.
    again = evaluate_matrix(cells)
    assert all(r.reused for r in again)


@pytest.fixture(scope="module")
def small_corpus():
    coll = load_folder(shared_collection("medline-med"))
    return dict(list(coll.corpus.items())[:60])


@pytest.fixture(scope="module")
def settings(tmp_path_factory):
    """A tiny random BERT through plain transformers: what is tested is the sharding, restarts and cache, and
    each actor process then starts in a second or two (sentence-transformers alone takes ~6 s to import)."""
    from r2med.retrieval.encoders import EncoderSettings
    from test_dense_fixtures import tiny_bert

    return EncoderSettings(
        model=tiny_bert(tmp_path_factory.mktemp("tiny_bert")), pooling="mean", max_length=64, loader="transformers"
    )  # as the CLI builds them from --pooling mean


@pytest.fixture(scope="module")
def reference(small_corpus, settings):
    """The single-process path: one ``encode_corpus`` call over the whole corpus."""
    from r2med.retrieval.encoders import make_encoder

    return make_encoder(settings, device="cpu").encode_corpus(list(small_corpus.values()))


def test_killed_actor_job_completes_with_every_shard_once(cluster, small_corpus, settings, reference, tmp_path):
    from r2med.scale.encode import KILL_MARKER_ENV, encode_distributed, load_shards
    from r2med.scale.store import ShardStore

    marker = tmp_path / "killed"
    dest = f"file://{tmp_path / 'store'}"
    store = ShardStore(dest)
    # Shard 2 is already there (as after an interrupted job): the job must encode only the others.
    store.write_shard(2, reference[24:36])
    result = encode_distributed(
        small_corpus,
        settings,
        dest=dest,
        shard_size=12,
        actors=1,
        runtime_env={"env_vars": {KILL_MARKER_ENV: str(marker)}},
    )
    assert marker.exists(), "the fault was not injected"
    killed_pid = int(marker.read_text())
    assert killed_pid in result.actor_pids  # the first shard came from the process that was killed
    assert len(result.actor_pids) == 2  # ...and the rest from its restarted replacement
    assert result.encoded_shards == [0, 1, 3, 4] and result.reused_shards == [2]
    assert store.finished() == {0, 1, 2, 3, 4}
    names = sorted(p.name for p in (tmp_path / "store" / "shards").iterdir())
    assert names == [f"{i:05d}.npy" for i in range(5)]  # exactly once each, no temp files left
    doc_ids, shards = load_shards(dest)
    assert doc_ids == list(small_corpus)
    np.testing.assert_allclose(np.concatenate(shards), reference, atol=1e-6, rtol=0)

    # Sharded exact search as Ray tasks reading the store == one search over the whole matrix.
    from r2med.scale.dense import ShardedDenseIndex

    embeddings = np.concatenate(load_shards(dest)[1])
    qids = [f"q{i}" for i in range(5)]
    on_ray = ShardedDenseIndex.from_store(dest).search(reference[10:15], qids, k=10, ray=True)
    whole = ShardedDenseIndex.from_arrays(doc_ids, [embeddings]).search(reference[10:15], qids, k=10)
    for qid in qids:
        assert list(on_ray[qid]) == list(whole[qid])
        np.testing.assert_allclose(list(on_ray[qid].values()), list(whole[qid].values()), atol=1e-6)
    assert next(iter(on_ray["q0"])) == doc_ids[10]  # a doc's own embedding is its best match


def _write_folder(folder, corpus, queries):
    import json

    folder.mkdir(parents=True)
    (folder / "corpus.jsonl").write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in corpus.items()))
    (folder / "query.jsonl").write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in queries.items()))
    qrels = [{"q_id": q, "p_id": next(iter(corpus)), "score": 1} for q in queries]
    (folder / "qrels.jsonl").write_text("".join(json.dumps(r) + "\n" for r in qrels))


def test_cli_evaluate_matrix_and_encode_on_ray(cluster, tmp_path, small_corpus, settings, reference):
    from r2med.retrieval.dense import DenseRetriever
    from r2med.runs.run import read_trec

    medline = shared_collection("medline-med")
    out = tmp_path / "runs"
    res = run_r2med("evaluate", "--ray", "-r", "bm25,bm25-standard", "-d", str(medline), "-o", str(out))
    assert res.returncode == 0, res.stderr
    for retriever in ("bm25", "bm25-standard"):
        expected = run_task(load_folder(medline), EvaluateStep.of(retriever, top_k=100)).run
        got = read_trec(out / retriever / "medline-med" / "run.trec")
        assert got.keys() == expected.keys()
        for qid in got:
            assert got[qid].keys() == expected[qid].keys()
            assert all(abs(got[qid][d] - expected[qid][d]) < 1e-5 for d in got[qid])  # 6 decimals in TREC files

    # `r2med encode --ray` (2 actors, 4 shards) == the single-process path, into the embedding cache
    # that the single-process dense retriever then reads without encoding anything.
    folder = tmp_path / "small"
    _write_folder(folder, small_corpus, {"q1": "blood pressure"})
    args = [
        "encode",
        "--ray",
        "-r",
        "dense",
        "--model",
        settings.model,
        "--pooling",
        "mean",
        "--max-length",
        "64",
        "-d",
        str(folder),
        "--shard-size",
        "16",
        "--actors",
        "2",
    ]
    res = run_r2med(*args)
    assert res.returncode == 0, res.stderr
    coll = load_folder(folder)
    dense = DenseRetriever(settings).index(coll.corpus, corpus_fingerprint=coll.fingerprint)
    assert dense.docs_encoded == 0
    np.testing.assert_allclose(np.asarray(dense.embeddings), reference, atol=1e-6, rtol=0)
    from r2med.scale.encode import encode_distributed

    again = encode_distributed(coll.corpus, settings, corpus_fingerprint=coll.fingerprint, shard_size=16)
    assert again.encoded_shards == [] and len(again.reused_shards) == 4
    # Bad input: --dest without --ray; a lexical retriever.
    assert (
        run_r2med(
            "encode", "-r", "dense", "--model", settings.model, "-d", str(folder), "--dest", str(tmp_path / "x")
        ).returncode
        != 0
    )
    assert run_r2med("encode", "-r", "bm25", "-d", str(folder)).returncode != 0
