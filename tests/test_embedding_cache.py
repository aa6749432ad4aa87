"""Embedding cache: reuse (zero docs encoded), keys, SIGKILL part-way + resume == uninterrupted run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from test_dense_fixtures import bert_dir  # noqa: F401

from r2med.retrieval.dense import DenseRetriever
from r2med.retrieval.embedding_cache import EmbeddingCache
from r2med.retrieval.encoders import EncoderSettings

pytest.importorskip("torch")

WORDS = "cell protein gene insulin receptor therapy patient diagnosis enzyme membrane virus kidney".split()


def corpus(n: int = 60, seed: int = 0) -> dict[str, str]:
    rng = np.random.default_rng(seed)
    return {f"d{i}": " ".join(rng.choice(WORDS, size=int(rng.integers(2, 30)))) for i in range(n)}


def test_second_index_encodes_zero_docs_and_reads_a_memmap(bert_dir):
    docs = corpus()
    s = EncoderSettings(model=bert_dir, pooling="mean", max_length=32)
    first = DenseRetriever(s, batch_size=8, device="cpu", chunk_size=16).index(docs)
    assert first.docs_encoded == len(docs)
    second = DenseRetriever(s, batch_size=8, device="cpu", chunk_size=16).index(docs)
    assert second.docs_encoded == 0
    assert second.encoder.texts_encoded == 0  # the model never ran
    assert isinstance(second.embeddings, np.memmap)
    np.testing.assert_array_equal(np.asarray(first.embeddings), np.asarray(second.embeddings))
    # --no-cache: always encodes, writes nothing new
    third = DenseRetriever(s, batch_size=8, device="cpu", cache=False).index(docs)
    assert third.docs_encoded == len(docs)


def test_key_changes_with_every_vector_setting(bert_dir):
    base = EncoderSettings(model=bert_dir, pooling="mean", max_length=32)
    keys = {EmbeddingCache(s.key(), "fp", 10).key for s in [
        base, base.with_(doc_instruction="passage: "), base.with_(max_length=31), base.with_(pooling="cls"),
        base.with_(normalize=True), base.with_(revision="abc")]}
    keys.add(EmbeddingCache(base.key(), "other-corpus", 10).key)
    assert len(keys) == 7
    # an instruction change re-encodes instead of silently reusing stale vectors (the paper's bug)
    docs = corpus(20)
    DenseRetriever(base, device="cpu").index(docs)
    again = DenseRetriever(base.with_(doc_instruction="passage: "), device="cpu").index(docs)
    assert again.docs_encoded == 20


KILL_SCRIPT = textwrap.dedent("""
    import json, os, signal, sys
    import numpy as np
    from r2med.retrieval import embedding_cache
    from r2med.retrieval.dense import DenseRetriever
    from r2med.retrieval.encoders import EncoderSettings

    model, kill_after, docs_file = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    docs = json.load(open(docs_file))
    written = []
    original = embedding_cache.EmbeddingCache.write_chunk

    def write_then_maybe_die(self, i, emb):
        original(self, i, emb)
        written.append(i)
        if len(written) == kill_after:
            os.kill(os.getpid(), signal.SIGKILL)  # no cleanup, no atexit

    embedding_cache.EmbeddingCache.write_chunk = write_then_maybe_die
    DenseRetriever(EncoderSettings(model=model, pooling="mean", max_length=32), batch_size=4,
                   device="cpu", chunk_size=10).index(docs)
""")


def test_sigkill_part_way_then_resume_gives_identical_embeddings(bert_dir, tmp_path, r2med_home):
    docs = corpus(55, seed=3)
    docs_file = tmp_path / "docs.json"
    docs_file.write_text(json.dumps(docs))
    script = tmp_path / "kill.py"
    script.write_text(KILL_SCRIPT)
    env = {**os.environ, "R2MED_HOME": str(r2med_home)}
    proc = subprocess.run([sys.executable, str(script), bert_dir, "3", str(docs_file)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == -9, proc.stderr[-2000:]

    s = EncoderSettings(model=bert_dir, pooling="mean", max_length=32)
    entry = next((r2med_home / "embeddings").iterdir())
    assert not (entry / "embeddings.npy").exists()  # no final file from a crashed run
    chunks = sorted((entry / "chunks").glob("*.npy"))
    assert [c.name for c in chunks] == ["00000.npy", "00001.npy", "00002.npy"]
    for c in chunks:  # every file that survived is complete and readable
        assert np.load(c).shape == (10, 32)
    assert not [p for p in entry.rglob("*") if p.name.endswith(".tmp")]

    resumed = DenseRetriever(s, batch_size=4, device="cpu", chunk_size=10).index(docs)
    assert resumed.docs_encoded == 25  # chunks 3, 4, 5 only
    assert resumed.encoder.texts_encoded == 25
    uninterrupted = DenseRetriever(s, batch_size=4, device="cpu", cache=False).index(docs)
    chunked = np.concatenate([uninterrupted.encoder.encode_corpus(list(docs.values())[lo:lo + 10])
                              for lo in range(0, 55, 10)])
    np.testing.assert_array_equal(np.asarray(resumed.embeddings), chunked)
    np.testing.assert_allclose(np.asarray(resumed.embeddings), uninterrupted.embeddings, atol=1e-5)
    assert not (entry / "chunks").exists()


def test_unreadable_final_file_is_rebuilt(bert_dir, r2med_home):
    docs = corpus(12)
    s = EncoderSettings(model=bert_dir, pooling="mean", max_length=32)
    DenseRetriever(s, device="cpu").index(docs)
    final = next((r2med_home / "embeddings").iterdir()) / "embeddings.npy"
    final.write_bytes(b"garbage")
    again = DenseRetriever(s, device="cpu").index(docs)
    assert again.docs_encoded == 12 and np.load(final).shape == (12, 32)


def test_cache_cli_lists_and_removes(bert_dir, r2med_home):
    from typer.testing import CliRunner

    from r2med.cli import app

    DenseRetriever(EncoderSettings(model=bert_dir, max_length=32), device="cpu").index(corpus(8))
    (r2med_home / "llm").mkdir()
    (r2med_home / "llm" / "m.jsonl").write_text('{"a": 1}\n{"b": 2}\n')
    runner = CliRunner()
    out = runner.invoke(app, ["cache", "ls", "--json"])
    assert out.exit_code == 0, out.output
    entries = json.loads(out.output)
    assert {e["kind"] for e in entries} == {"embeddings", "llm"}
    emb = next(e for e in entries if e["kind"] == "embeddings")
    assert "8 docs" in emb["detail"] and "complete" in emb["detail"]
    from r2med.errors import R2MedError

    for args in (["cache", "rm", "embeddings"], ["cache", "rm", "embeddings", "nope"]):  # names or --all needed
        assert isinstance(runner.invoke(app, args).exception, R2MedError)
    out = runner.invoke(app, ["cache", "rm", "embeddings", emb["name"]])
    assert out.exit_code == 0 and not Path(emb["path"]).exists()
    assert runner.invoke(app, ["cache", "rm", "llm", "--all"]).exit_code == 0
    assert not list((r2med_home / "llm").iterdir())


def test_two_writers_of_one_entry_both_finish():
    """Two processes encoding the same entry: whoever finalizes second reads the first one's file."""
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(25, 4)).astype(np.float32)
    a = EmbeddingCache({"model": "m"}, "fp", 25, chunk_size=10)
    b = EmbeddingCache({"model": "m"}, "fp", 25, chunk_size=10)
    for cache in (a, b):
        cache.start()
        for i in range(cache.n_chunks):
            lo, hi = cache.chunk_range(i)
            cache.write_chunk(i, vectors[lo:hi])
    np.testing.assert_array_equal(a.finalize(), vectors)  # removes the chunks b also wrote
    np.testing.assert_array_equal(b.finalize(), vectors)
