"""Models that are not presets are encoded with their own settings unless flags say otherwise.

* a sentence-transformers model (a folder, or a hub id found in the Hugging Face cache through its
  ``modules.json``) exactly as ``SentenceTransformer.encode_query`` / ``encode_document`` would: its
  ``max_seq_length``, pooling, normalisation and prompts;
* a plain transformers model with the max length its tokenizer / config state.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from conftest import minilm_path
from r2med.retrieval import make_retriever
from r2med.retrieval.encoders import (
    EncoderSettings,
    SentenceTransformerEncoder,
    TransformersEncoder,
    is_sentence_transformers_model,
    make_encoder,
)
from test_dense_fixtures import TEXTS, bert_dir  # noqa: F401

pytest.importorskip("sentence_transformers")

LONG = " ".join(["insulin resistance and the liver"] * 90)  # ~450 tokens: cut at 256 by MiniLM's own limit
HUB_ID = "sentence-transformers/all-MiniLM-L6-v2"


def hf_cache_with(root: Path, repo_id: str, folder: str, revision: str = "c" * 40) -> Path:
    """A Hugging Face hub cache (``models--org--name/snapshots/<rev>``, ``refs/main``) holding ``folder``'s
    files as symlinks, as ``hf download`` leaves it on an offline node."""
    repo = root / f"models--{repo_id.replace('/', '--')}"
    snapshot = repo / "snapshots" / revision
    for src in Path(folder).rglob("*"):
        if src.is_file():
            dst = snapshot / src.relative_to(folder)
            dst.parent.mkdir(parents=True, exist_ok=True)
            dst.symlink_to(src)
    (repo / "refs").mkdir(parents=True, exist_ok=True)
    (repo / "refs" / "main").write_text(revision)
    return root


@pytest.fixture
def hf_cache(tmp_path, monkeypatch, bert_dir):
    root = hf_cache_with(tmp_path / "hub", HUB_ID, minilm_path())
    hf_cache_with(root, "someone/tiny-bert", bert_dir)
    import huggingface_hub.constants as constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(root))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)  # read at import; the hub is unreachable here
    monkeypatch.setenv("HF_HUB_CACHE", str(root))
    return root


def test_hub_ids_are_recognised_from_the_hf_cache_offline(hf_cache):
    assert is_sentence_transformers_model(HUB_ID)
    assert not is_sentence_transformers_model("someone/tiny-bert")  # no modules.json
    assert not is_sentence_transformers_model("someone/not-cached")
    assert isinstance(make_encoder(EncoderSettings(model=HUB_ID), device="cpu"), SentenceTransformerEncoder)
    assert isinstance(make_encoder(EncoderSettings(model="someone/tiny-bert"), device="cpu"), TransformersEncoder)
    # the hub id loads from the cache and encodes as the folder does
    from sentence_transformers import SentenceTransformer

    enc = make_retriever("dense", model=HUB_ID, device="cpu").encoder
    np.testing.assert_allclose(
        enc.encode_corpus(TEXTS[:3]), SentenceTransformer(minilm_path(), device="cpu").encode(TEXTS[:3]), atol=1e-5
    )


def test_a_hub_models_resolved_commit_is_recorded(hf_cache, bert_dir):
    """A hub id's vectors say which commit of the repository made them (the snapshot the cache resolved: refs/main
    names ``c`` * 40 here), through sentence-transformers and transformers alike; a plain folder has none."""
    for model in (HUB_ID, "someone/tiny-bert"):
        r = make_retriever("dense", model=model, device="cpu")
        r.index({"d1": TEXTS[0], "d2": TEXTS[1]})
        assert r.encoding_facts()["model_commit"] == {model: "c" * 40}, model
    r = make_retriever("dense", model=bert_dir, device="cpu", pooling="mean")
    r.index({"d1": TEXTS[0]})
    assert r.encoding_facts()["model_commit"] == {bert_dir: None}


def test_sentence_transformers_model_keeps_its_own_max_length_and_normalisation():
    from sentence_transformers import SentenceTransformer

    path = minilm_path()
    r = make_retriever("dense", model=path, device="cpu")
    assert r.settings.max_length is None and r.settings.loader == "sentence-transformers"  # known: recorded so
    enc = r.encoder
    model = SentenceTransformer(path, device="cpu")
    assert model.max_seq_length == 256 and enc.model.max_seq_length == 256  # not overridden
    texts = [LONG, *TEXTS[:3]]
    got = enc.encode_corpus(texts)
    np.testing.assert_allclose(got, model.encode(texts), atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)  # its Normalize module
    # --max-length overrides the model's own
    short = make_retriever("dense", model=path, device="cpu", max_length=32).encoder.encode_corpus([LONG])
    model.max_seq_length = 32
    np.testing.assert_allclose(short, model.encode([LONG]), atol=1e-5)
    assert not np.allclose(short, got[:1], atol=1e-3)


def test_sentence_transformers_prompts_are_the_models_own_unless_given(tmp_path):
    from sentence_transformers import SentenceTransformer

    folder = tmp_path / "prompted"
    shutil.copytree(minilm_path(), folder)
    cfg_path = folder / "config_sentence_transformers.json"
    cfg = json.loads(cfg_path.read_text())
    cfg_path.write_text(json.dumps({**cfg, "prompts": {"query": "query: ", "document": "passage: "}}))
    model = SentenceTransformer(str(folder), device="cpu")
    enc = make_retriever("dense", model=str(folder), device="cpu").encoder
    queries, docs = ["insulin and glucose", "kidney stones"], TEXTS[:3]
    np.testing.assert_allclose(enc.encode_queries(queries), model.encode_query(queries), atol=1e-5)
    np.testing.assert_allclose(enc.encode_corpus(docs), model.encode_document(docs), atol=1e-5)
    assert not np.allclose(enc.encode_queries(queries), model.encode(queries, prompt=""), atol=1e-3)
    # an instruction given replaces the model's prompt ("" = none)
    mine = make_retriever("dense", model=str(folder), device="cpu", query_instruction="Q: ").encoder
    np.testing.assert_allclose(mine.encode_queries(queries), model.encode(queries, prompt="Q: "), atol=1e-5)
    none = make_retriever("dense", model=str(folder), device="cpu", doc_instruction="").encoder
    np.testing.assert_allclose(none.encode_corpus(docs), model.encode(docs, prompt=""), atol=1e-5)


def test_plain_transformers_model_reads_its_max_length_from_its_config(tmp_path):
    """A model with 40 positions and a tokenizer that states no limit: cut at 40 (512 would crash it)."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    folder = tmp_path / "short_bert"
    torch.manual_seed(0)
    tok = AutoTokenizer.from_pretrained(minilm_path())
    tok.model_max_length = int(1e30)
    BertModel(
        BertConfig(
            vocab_size=tok.vocab_size,
            hidden_size=32,
            num_hidden_layers=1,
            num_attention_heads=2,
            intermediate_size=37,
            max_position_embeddings=40,
        )
    ).eval().save_pretrained(folder)
    tok.save_pretrained(folder)
    enc = make_retriever("dense", model=str(folder), pooling="mean", device="cpu").encoder
    got = enc.encode_corpus([LONG, "short text"])
    model = BertModel.from_pretrained(folder).eval()
    want = []
    for text in (LONG, "short text"):
        ids = tok(text, truncation=True, max_length=40)["input_ids"]
        with torch.no_grad():
            want.append(model(input_ids=torch.tensor([ids])).last_hidden_state[0].mean(0).numpy())
    np.testing.assert_allclose(got, np.stack(want), atol=2e-5)
