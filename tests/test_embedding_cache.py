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

from conftest import run_r2med
from r2med.retrieval.dense import DenseRetriever
from r2med.retrieval.embedding_cache import EmbeddingCache
from r2med.retrieval.encoders import EncoderSettings
from test_dense_fixtures import bert_dir  # noqa: F401

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
    keys = {
        EmbeddingCache(s.key(), "fp", 10).key
        for s in [
            base,
            base.with_(doc_instruction="passage: "),
            base.with_(max_length=31),
            base.with_(pooling="cls"),
            base.with_(normalize=True),
            base.with_(model_revision="abc"),
        ]
    }
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


@pytest.mark.slow
def test_sigkill_part_way_then_resume_gives_identical_embeddings(bert_dir, tmp_path, r2med_home):
    docs = corpus(55, seed=3)
    docs_file = tmp_path / "docs.json"
    docs_file.write_text(json.dumps(docs))
    script = tmp_path / "kill.py"
    script.write_text(KILL_SCRIPT)
    env = {**os.environ, "R2MED_HOME": str(r2med_home)}
    proc = subprocess.run(
        [sys.executable, str(script), bert_dir, "3", str(docs_file)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
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
    chunked = np.concatenate(
        [uninterrupted.encoder.encode_corpus(list(docs.values())[lo : lo + 10]) for lo in range(0, 55, 10)]
    )
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

    DenseRetriever(EncoderSettings(model=bert_dir, max_length=32), device="cpu").index(corpus(8))
    (r2med_home / "llm").mkdir()
    (r2med_home / "llm" / "m.jsonl").write_text('{"a": 1}\n{"b": 2}\n')
    out = run_r2med("cache", "ls", "--json")
    assert out.returncode == 0, out.stderr
    entries = json.loads(out.stdout)
    assert {e["kind"] for e in entries} == {"embeddings", "llm"}
    emb = next(e for e in entries if e["kind"] == "embeddings")
    assert "8 docs" in emb["detail"] and "complete" in emb["detail"]

    for args in (["cache", "rm", "embeddings"], ["cache", "rm", "embeddings", "nope"]):  # names or --all needed
        assert run_r2med(*args).returncode == 2
    out = run_r2med("cache", "rm", "embeddings", emb["name"])
    assert out.returncode == 0 and not Path(emb["path"]).exists()
    assert run_r2med("cache", "rm", "llm", "--all").returncode == 0
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


# -- integrity: checksums on every load ----------------------------------------------------------


def fake_vectors(texts, dim: int = 16) -> np.ndarray:
    """Deterministic vectors per text (no model), counting calls."""
    import zlib

    fake_vectors.calls += len(texts)
    return np.stack([np.random.default_rng(zlib.crc32(str(t).encode())).normal(size=dim) for t in texts]).astype(
        np.float32
    )


fake_vectors.calls = 0


def _entry(cache: EmbeddingCache, texts, chunk_size=10):
    fake_vectors.calls = 0
    return cache.get_or_encode(texts, fake_vectors)


def test_final_file_damaged_in_place_is_detected_and_only_its_chunks_reencoded(caplog):
    texts = [f"text {i}" for i in range(95)]
    want = fake_vectors(texts)
    cache = EmbeddingCache({"model": "m"}, "fp", len(texts), chunk_size=10)
    np.testing.assert_array_equal(_entry(cache, texts), want)
    assert (cache.path / "checksums.json").exists() and not cache.chunk_dir.exists()
    # overwrite rows 23..41 (chunks 2, 3 and 4) with other bytes, keeping the file's size
    data = bytearray(cache.final_path.read_bytes())
    header = len(data) - want.nbytes
    lo, hi = header + 23 * 16 * 4, header + 42 * 16 * 4
    data[lo:hi] = np.random.default_rng(0).bytes(hi - lo)
    cache.final_path.write_bytes(bytes(data))
    assert cache.load() is None  # the public loader never hands out damaged rows
    again = EmbeddingCache({"model": "m"}, "fp", len(texts), chunk_size=10)
    with caplog.at_level("WARNING"):
        got = _entry(again, texts)
    assert "fail their checksum" in caplog.text
    assert fake_vectors.calls == 30 and again.encoded_docs == 30 and again.reused_docs == 65
    np.testing.assert_array_equal(got, want)
    assert EmbeddingCache({"model": "m"}, "fp", len(texts), chunk_size=10).load() is not None


def test_truncated_or_damaged_chunk_is_dropped_and_reencoded_not_an_error(caplog):
    texts = [f"doc {i}" for i in range(45)]
    cache = EmbeddingCache({"model": "m"}, "fp2", len(texts), chunk_size=10)

    def encode_then_crash(chunk):
        if fake_vectors.calls >= 30:
            raise KeyboardInterrupt  # the run stops after 3 finished chunks
        return fake_vectors(chunk)

    fake_vectors.calls = 0
    with pytest.raises(KeyboardInterrupt):
        cache.get_or_encode(texts, encode_then_crash)
    assert sorted(p.name for p in cache.chunk_dir.glob("*.npy")) == ["00000.npy", "00001.npy", "00002.npy"]
    # chunk 1 truncated (a full disk, a bad copy), chunk 2 overwritten with other bytes of the same size
    c1 = cache.chunk_path(1)
    c1.write_bytes(c1.read_bytes()[: c1.stat().st_size // 2])
    c2 = cache.chunk_path(2)
    data = bytearray(c2.read_bytes())
    data[-40:] = bytes(40)
    c2.write_bytes(bytes(data))
    with caplog.at_level("WARNING"):
        got = _entry(EmbeddingCache({"model": "m"}, "fp2", len(texts), chunk_size=10), texts)
    assert "truncated" in caplog.text and "fails its checksum" in caplog.text
    assert fake_vectors.calls == 35  # chunks 1 and 2 again, 3 and 4 for the first time; chunk 0 reused
    np.testing.assert_array_equal(got, fake_vectors(texts))


def test_final_file_without_checksums_is_reencoded(caplog):
    texts = [f"t{i}" for i in range(12)]
    cache = EmbeddingCache({"model": "m"}, "fp3", len(texts), chunk_size=5)
    _entry(cache, texts)
    (cache.path / "checksums.json").unlink()
    with caplog.at_level("WARNING"):
        _entry(EmbeddingCache({"model": "m"}, "fp3", len(texts), chunk_size=5), texts)
    assert fake_vectors.calls == 12 and "cannot be verified" in caplog.text


def test_home_json_nested_too_deeply_reads_as_damaged_not_a_traceback(caplog):
    """Python's json raises RecursionError (no ValueError) past about 1,000 levels; each JSON file r2med reads back
    from its home takes that for damage (issue 27, item 11): an entry's checksums.json and meta.json, the
    collection record behind `r2med cache ls`."""
    from r2med.infra.home import COLLECTIONS_DIR, collection_of, home_path, remember_collection

    deep = "[" * 200_000 + "]" * 200_000
    texts = [f"t{i}" for i in range(12)]
    cache = EmbeddingCache({"model": "m"}, "fpdeep", len(texts), chunk_size=5)
    _entry(cache, texts)
    remember_collection("fpdeep", "mine", "/data/mine")
    assert collection_of("fpdeep") == "mine"
    (home_path() / COLLECTIONS_DIR / "fpdeep.json").write_text(deep)
    assert collection_of("fpdeep") is None
    (cache.path / "checksums.json").write_text(deep)
    with caplog.at_level("WARNING"):
        _entry(EmbeddingCache({"model": "m"}, "fpdeep", len(texts), chunk_size=5), texts)
    assert fake_vectors.calls == 12 and "cannot be verified" in caplog.text
    (cache.path / "meta.json").write_text(deep)
    res = run_r2med("cache", "ls", "--json")
    assert res.returncode == 0 and "Traceback" not in res.stderr, res.stderr
    np.testing.assert_array_equal(
        _entry(EmbeddingCache({"model": "m"}, "fpdeep", len(texts), chunk_size=5), texts), fake_vectors(texts)
    )


def test_the_one_json_reader_refuses_what_later_code_could_not_walk():
    """``parse_json`` (every reader of JSON from outside, and of the home): 100 levels are read; 101 are refused
    though Python's parser takes them (a walk, ``repr`` or ``json.dumps`` of them recursed past the limit in the
    code that used them), 200,000 are refused without a RecursionError; a facet label of such text is the text."""
    from r2med.evaluation.facets import facet_label
    from r2med.infra.home import MAX_JSON_DEPTH, parse_json

    assert MAX_JSON_DEPTH == 100
    assert parse_json("[" * 100 + "]" * 100) == json.loads("[" * 100 + "]" * 100)  # Python's parser: the reference
    assert parse_json(b'{"a": [{"b": 1}]}') == {"a": [{"b": 1}]}
    for text, said in (
        ("[" * 101 + "]" * 101, "nested more than 100 levels deep"),
        ('{"a":' * 150 + "1" + "}" * 150, "nested more than 100 levels deep"),
        ("[" * 200_000 + "]" * 200_000, "nested too deeply"),
        (b"\xff", "utf-8"),
        ("{", "expecting"),
    ):
        with pytest.raises(ValueError) as info:
            parse_json(text)
        assert said in str(info.value).lower(), info.value
    deep = "[" * 5000 + "]" * 5000
    assert facet_label(deep, max_len=10_000) == deep


def _wide_bert(folder: Path) -> str:
    """A 2-layer random BERT with 128 dims, so medline-med's 1,033 doc vectors take 529 KB."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    from conftest import minilm_path

    torch.manual_seed(7)
    tok = AutoTokenizer.from_pretrained(minilm_path())
    BertModel(
        BertConfig(
            vocab_size=tok.vocab_size,
            hidden_size=128,
            num_hidden_layers=2,
            num_attention_heads=2,
            intermediate_size=64,
            max_position_embeddings=512,
        )
    ).eval().save_pretrained(folder)
    tok.save_pretrained(folder)
    return str(folder)


@pytest.mark.shared
def test_overwriting_400kb_of_cached_embeddings_gives_the_correct_ndcg(tmp_path, r2med_home, caplog):
    """The hardening report's case: 400 KB of a cached embeddings file overwritten, same size."""
    from conftest import shared_collection
    from r2med.data.loaders import load_folder
    from r2med.evaluation.metrics import evaluate
    from r2med.jobs.evaluate import run_task
    from r2med.steps import EvaluateStep

    collection = load_folder(shared_collection("medline-med"))
    model = _wide_bert(tmp_path / "wide_bert")
    options = {"model": model, "pooling": "mean", "max_length": 128, "device": "cpu"}
    clean = run_task(collection, EvaluateStep.of("dense", **options), tmp_path / "clean").metrics.aggregate[
        "ndcg_cut_10"
    ]
    docs = [
        e
        for e in (r2med_home / "embeddings").iterdir()
        if json.loads((e / "meta.json").read_text())["role"] == "documents"
    ]
    final = docs[0] / "embeddings.npy"
    size = final.stat().st_size
    assert size > 500_000
    data = bytearray(final.read_bytes())
    data[100_000:500_000] = np.random.default_rng(1).normal(size=100_000).astype(np.float32).tobytes()
    final.write_bytes(bytes(data))
    assert final.stat().st_size == size
    damaged = np.load(final)
    with caplog.at_level("WARNING"):
        repaired = run_task(collection, EvaluateStep.of("dense", **options), tmp_path / "again")
    assert "fail their checksum" in caplog.text
    assert repaired.metrics.aggregate["ndcg_cut_10"] == clean
    # the damage matters: the same search over the damaged rows scores far off
    r = make_dense_over(damaged, collection, options)
    wrong = evaluate(r.search(collection.queries, k=100), collection.qrels).aggregate["ndcg_cut_10"]
    assert abs(wrong - clean) > 0.05, (wrong, clean)
    print(
        f"medline-med, random 128-dim BERT: nDCG@10 clean {clean:.4f}, repaired "
        f"{repaired.metrics.aggregate['ndcg_cut_10']:.4f}, damaged rows used as is {wrong:.4f}"
    )


def make_dense_over(embeddings, collection, options):
    from r2med.retrieval import make_retriever

    r = make_retriever("dense", **options)
    r.doc_ids, r.embeddings = list(collection.corpus), embeddings
    return r


# -- query embeddings are cached too -------------------------------------------------------------


def test_rerun_with_the_same_queries_encodes_nothing(bert_dir):
    docs = corpus(20)
    queries = {"q1": "insulin receptor", "q2": "kidney virus", "q3": ("gene", "a hypothetical gene passage")}
    s = EncoderSettings(model=bert_dir, pooling="mean", max_length=32)
    first = DenseRetriever(s, device="cpu").index(docs)
    run1 = first.search(queries, k=5)
    assert first.queries_encoded == 3 and first.encoder.texts_encoded == 20 + 4  # q3 has two parts
    second = DenseRetriever(s, device="cpu").index(docs)
    run2 = second.search(queries, k=5)
    assert second.docs_encoded == 0 and second.queries_encoded == 0
    assert second.encoder.texts_encoded == 0  # the model never ran
    assert run2 == run1
    # another query text, another instruction: encoded again (keyed by texts and settings)
    third = DenseRetriever(s, device="cpu").index(docs)
    third.search({**queries, "q2": "kidney stones"}, k=5)
    assert third.queries_encoded == 3
    fourth = DenseRetriever(s.with_(query_instruction="Q: "), device="cpu").index(docs)
    fourth.search(queries, k=5)
    assert fourth.queries_encoded == 3
    # --no-cache: always encodes
    fifth = DenseRetriever(s, device="cpu", cache=False).index(docs)
    fifth.search(queries, k=5)
    assert fifth.queries_encoded == 3
