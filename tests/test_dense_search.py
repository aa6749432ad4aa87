"""Exact top-k search against brute force, FAISS against exact, ignore_identical_ids, registry errors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from r2med.errors import R2MedError
from r2med.retrieval import make_retriever
from r2med.retrieval.dense import DenseRetriever, exact_top_k
from r2med.retrieval.encoders import EncoderSettings
from test_dense_fixtures import bert_dir  # noqa: F401


def brute(q: np.ndarray, d: np.ndarray, k: int, exclude=None):
    s = q.astype(np.float64) @ d.astype(np.float64).T
    if exclude is not None:
        for r, j in enumerate(exclude):
            if j >= 0:
                s[r, j] = -np.inf
    order = np.argsort(-s, axis=1, kind="stable")[:, :k]
    return np.take_along_axis(s, order, 1), order


@settings(max_examples=40, deadline=None)
@given(
    st.integers(1, 12),
    st.integers(1, 300),
    st.integers(1, 60),
    st.integers(1, 97),
    st.integers(0, 10_000),
    st.booleans(),
)
def test_exact_top_k_matches_brute_force(n_q, n_d, k, chunk, seed, with_exclude):
    rng = np.random.default_rng(seed)
    q = rng.normal(size=(n_q, 8)).astype(np.float32)
    d = rng.normal(size=(n_d, 8)).astype(np.float32)
    exclude = rng.integers(-1, n_d, size=n_q) if with_exclude else None
    s, i = exact_top_k(q, d, k, exclude=exclude, chunk=chunk, device="cpu")
    bs, bi = brute(q, d, k, exclude)
    kk = min(k, n_d)
    assert s.shape == (n_q, kk)
    valid = ~np.isneginf(bs)
    np.testing.assert_array_equal(np.where(valid, i, -1), np.where(valid, bi, -1))
    np.testing.assert_allclose(s[valid], bs[valid], rtol=1e-5, atol=1e-5)
    if exclude is not None:
        for r, j in enumerate(exclude):
            assert j < 0 or j not in i[r]


def test_faiss_flat_agrees_with_exact(bert_dir):
    pytest.importorskip("faiss")
    rng = np.random.default_rng(0)
    words = "heart lung kidney liver blood insulin gene virus cell drug".split()
    corpus = {f"d{j}": " ".join(rng.choice(words, 6)) for j in range(80)}
    queries = {"q1": "heart blood", "d5": "kidney drug gene", "q3": "virus cell"}  # d5 is also a doc id
    s = EncoderSettings(model=bert_dir, pooling="mean", max_length=32)
    exact = DenseRetriever(s, device="cpu").index(corpus)
    run_exact = exact.search(queries, k=10)
    flat = DenseRetriever(s, device="cpu", faiss="Flat").index(corpus)
    run_flat = flat.search(queries, k=10)
    for qid in queries:
        assert list(run_exact[qid]) == list(run_flat[qid])
        np.testing.assert_allclose(list(run_exact[qid].values()), list(run_flat[qid].values()), atol=1e-5)
    assert "d5" not in run_exact["d5"] and "d5" not in run_flat["d5"] and len(run_exact["d5"]) == 10


def test_ignore_identical_ids_is_on_by_default_and_can_be_turned_off(bert_dir):
    corpus = {"a": "insulin and the liver", "b": "heart failure", "c": "kidney stones"}
    queries = {"a": "insulin and the liver"}  # a query whose id is a doc id (BEIR self-retrieval)
    s = EncoderSettings(model=bert_dir, pooling="mean", max_length=32)
    on = DenseRetriever(s, device="cpu").index(corpus).search(queries, k=3)
    assert list(on["a"]) and "a" not in on["a"] and len(on["a"]) == 2
    off = DenseRetriever(s, device="cpu", ignore_identical_ids=False).index(corpus).search(queries, k=3)
    assert next(iter(off["a"])) == "a"  # identical text: the best match


def test_tuple_queries_average_embeddings_end_to_end(bert_dir):
    corpus = {f"d{j}": t for j, t in enumerate(["heart blood", "kidney", "gene expression", "virus"])}
    r = DenseRetriever(EncoderSettings(model=bert_dir, pooling="mean", max_length=32), device="cpu").index(corpus)
    run = r.search({"q": ("heart", "gene expression")}, k=4)
    e = r.encoder
    # the paper's rule: average the raw part vectors, then score with cosine (BEIR cos_sim)
    qv = (e.encode_queries(["heart"])[0] + e.encode_corpus(["gene expression"])[0]) / 2
    qv = qv / np.linalg.norm(qv)
    d = np.asarray(r.embeddings)
    d = d / np.linalg.norm(d, axis=1, keepdims=True)
    want = {f"d{j}": float(d[j] @ qv) for j in np.argsort(-(d @ qv), kind="stable")}
    assert list(run["q"]) == list(want)
    np.testing.assert_allclose(list(run["q"].values()), list(want.values()), atol=1e-5)


def test_registry_errors_are_one_line(tmp_path):
    with pytest.raises(R2MedError, match="unknown retriever"):
        make_retriever("not-a-model")
    with pytest.raises(R2MedError, match="needs --model"):
        make_retriever("dense")
    with pytest.raises(R2MedError, match="unknown option"):
        make_retriever("bge", k1=0.9)
    with pytest.raises(R2MedError, match="trust-remote-code"):
        make_retriever("nv", task="Biology")
    with pytest.raises(R2MedError, match="make_retriever\\('bge'\\): unknown option 'medcpt_published'"):
        make_retriever("bge", medcpt_published=True)  # an option of medcpt's type only
    from conftest import minilm_path

    assert make_retriever("dense", model=minilm_path()).settings.loader == "sentence-transformers"  # its own pooling
    assert make_retriever("dense", model=minilm_path(), pooling="cls").settings.loader == "transformers"
    from r2med.typed.parse import SpecError

    with pytest.raises(SpecError, match=r"model: model path .* does not exist"):  # by the parse, before any work
        make_retriever("dense", model=str(tmp_path / "missing"))


def test_presets_carry_the_paper_settings():
    from r2med.protocol import protocol
    from r2med.retrieval.presets import DENSE_PRESETS, get_preset

    assert len(DENSE_PRESETS) == 14  # + bm25 = the paper's 15 retrievers
    e5 = get_preset("e5").settings("PMC-Clinical")
    assert e5.model == "intfloat/e5-mistral-7b-instruct" and e5.pooling == "last-token" and e5.normalize
    assert e5.query_instruction == protocol()["query_instruction"]["e5"]["PMC-Clinical"]
    bmr = get_preset("bmr-7b").settings("Biology")
    assert bmr.append_eos and bmr.max_length == 2048 and bmr.doc_instruction == "Represent this passage\npassage: "
    bge = get_preset("bge").settings("Biology")
    assert bge.pooling == "cls" and bge.normalize and bge.query_instruction.startswith("Represent this sentence")
    assert (
        get_preset("inst-xl").settings("IIYi-Clinical").doc_instruction == "Represent the Clinical Case for retrieval: "
    )
    with pytest.raises(R2MedError, match="unknown dense preset"):
        get_preset("nope")
