"""Encoders against hand computation: pooling variants, EOS/left padding, MedCPT's two encoders,
token-budget batching (order restored), (query, expansion) averaging."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from r2med.errors import R2MedError
from r2med.retrieval.encoders import EncoderSettings, TransformersEncoder, make_encoder, plan_batches
from test_dense_fixtures import TEXTS, bert_dir, bert_dir_2, forward_one, llama_dir  # noqa: F401

pytest.importorskip("torch")


def _hand(
    folder: str, texts, pooling: str, max_length: int = 512, normalize: bool = False, prefix: str = ""
) -> np.ndarray:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(folder)
    rows = []
    for text in texts:
        ids = tok(prefix + text, truncation=True, max_length=max_length)["input_ids"]
        h = forward_one(folder, ids)
        v = h[0] if pooling == "cls" else h.mean(0) if pooling == "mean" else h[-1]
        rows.append(v / np.linalg.norm(v) if normalize else v)
    return np.stack(rows)


@pytest.mark.parametrize("pooling", ["cls", "mean"])
@pytest.mark.parametrize("normalize", [False, True])
def test_bert_pooling_matches_hand_computation(bert_dir, pooling, normalize):
    enc = TransformersEncoder(
        EncoderSettings(model=bert_dir, pooling=pooling, normalize=normalize, max_length=40), device="cpu", batch_size=3
    )
    got = enc.encode_corpus(TEXTS)
    want = _hand(bert_dir, TEXTS, pooling, max_length=40, normalize=normalize)
    assert got.dtype == np.float32 and got.shape == want.shape
    np.testing.assert_allclose(got, want, atol=2e-5)


def test_last_token_with_eos_and_left_padding_matches_hand_computation(llama_dir):
    from transformers import AutoTokenizer

    s = EncoderSettings(
        model=llama_dir, pooling="last-token", append_eos=True, max_length=24, doc_instruction="passage: "
    )
    enc = TransformersEncoder(s, device="cpu", batch_size=4)
    got = enc.encode_corpus(TEXTS)
    tok = AutoTokenizer.from_pretrained(llama_dir)
    want = []
    for text in TEXTS:  # BMRetriever: truncate to max_length - 1, append EOS, take the last state
        ids = tok("passage: " + text, truncation=True, max_length=23)["input_ids"] + [tok.eos_token_id]
        assert len(ids) <= 24
        want.append(forward_one(llama_dir, ids)[-1])
    np.testing.assert_allclose(got, np.stack(want), atol=2e-5)
    loaded_tok, _ = enc._models[llama_dir]
    assert loaded_tok.padding_side == "left"


def test_last_token_without_eos_right_or_left_padding(llama_dir):
    enc = TransformersEncoder(
        EncoderSettings(model=llama_dir, pooling="last-token", max_length=30), device="cpu", batch_size=8
    )
    np.testing.assert_allclose(enc.encode_corpus(TEXTS), _hand(llama_dir, TEXTS, "last", max_length=30), atol=2e-5)


def test_medcpt_style_two_encoders(bert_dir, bert_dir_2):
    """Queries go through the query model; docs through the doc model as ("" title, text) pairs."""
    from transformers import AutoTokenizer

    s = EncoderSettings(model=bert_dir, query_model=bert_dir_2, pooling="cls", doc_as_pair=True, max_length=32)
    enc = TransformersEncoder(s, device="cpu", batch_size=2)
    docs, queries = TEXTS[:4], TEXTS[4:]
    tok = AutoTokenizer.from_pretrained(bert_dir)
    want_docs = []
    for text in docs:
        e = tok("", text, truncation="longest_first", max_length=32)
        assert e["input_ids"][:2] == [tok.cls_token_id, tok.sep_token_id]  # [CLS] [SEP] text [SEP]
        want_docs.append(forward_one(bert_dir, e["input_ids"], e["token_type_ids"])[0])
    np.testing.assert_allclose(enc.encode_corpus(docs), np.stack(want_docs), atol=2e-5)
    np.testing.assert_allclose(enc.encode_queries(queries), _hand(bert_dir_2, queries, "cls", 32), atol=2e-5)
    # the published behaviour (Article encoder for queries too) is a settings switch
    from r2med.retrieval.presets import get_preset

    assert get_preset("medcpt").settings("Biology").query_model == "ncbi/MedCPT-Query-Encoder"
    assert get_preset("medcpt").settings("Biology", medcpt_published=True).query_model == "ncbi/MedCPT-Article-Encoder"


def test_query_expansion_pairs_are_averaged(bert_dir):
    s = EncoderSettings(model=bert_dir, pooling="mean", max_length=40, query_instruction="Q: ")
    enc = TransformersEncoder(s, device="cpu", batch_size=4)
    q, x = TEXTS[0], TEXTS[2]
    got = enc.encode_queries([(q, x), TEXTS[1]])
    a = _hand(bert_dir, [q, TEXTS[1]], "mean", 40, prefix="Q: ")
    b = _hand(bert_dir, [x], "mean", 40)  # expansions carry no instruction (published rule)
    np.testing.assert_allclose(got[0], (a[0] + b[0]) / 2, atol=2e-5)
    np.testing.assert_allclose(got[1], a[1], atol=2e-5)
    enc_q = TransformersEncoder(s.with_(expansion_instruction="query"), device="cpu")
    b_q = _hand(bert_dir, [x], "mean", 40, prefix="Q: ")
    np.testing.assert_allclose(enc_q.encode_queries([(q, x)])[0], (a[0] + b_q[0]) / 2, atol=2e-5)


def test_sentence_transformers_folder_matches_direct_encode():
    from sentence_transformers import SentenceTransformer

    from conftest import minilm_path

    path = minilm_path()
    enc = make_encoder(EncoderSettings(model=path, max_length=64), device="cpu", batch_size=2)
    model = SentenceTransformer(path, device="cpu")
    model.max_seq_length = 64
    np.testing.assert_allclose(enc.encode_corpus(TEXTS), model.encode(TEXTS), atol=1e-5)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(1, 300), min_size=1, max_size=80),
    st.integers(1, 16),
    st.one_of(st.none(), st.integers(50, 2000)),
)
def test_plan_batches_covers_every_text_once_within_budget(lengths, batch_size, budget):
    batches = plan_batches(lengths, batch_size, budget)
    flat = np.concatenate(batches)
    assert sorted(flat.tolist()) == list(range(len(lengths)))
    limit = budget or batch_size * max(lengths)
    for b in batches:
        padded = len(b) * max(lengths[i] for i in b)
        assert len(b) == 1 or padded <= limit
        assert len(b) <= 8 * batch_size
    longest = [max(lengths[i] for i in b) for b in batches]
    assert longest == sorted(longest, reverse=True)


def test_bad_settings_are_one_line_errors(tmp_path):
    with pytest.raises(R2MedError, match="pooling"):
        EncoderSettings(model="x", pooling="max")
    with pytest.raises(R2MedError, match="does not exist"):
        TransformersEncoder(EncoderSettings(model=str(tmp_path / "nope")), device="cpu").encode_corpus(["a"])


def test_the_recorded_pooling_is_the_one_that_runs(bert_dir, tmp_path, monkeypatch):
    """A sentence-transformers folder with CLS pooling, run as ``-r dense --model DIR``: before, metrics.json said
    ``pooling: mean`` (the settings' default, which the model's own Pooling module ignores) while CLS ran.  Now the
    loader that runs is recorded, the settings' pooling is not set, and the encoding facts say ``cls``; the vectors
    are the CLS states (checked against a direct forward pass)."""
    import json

    from sentence_transformers import SentenceTransformer
    from sentence_transformers.models import Pooling, Transformer
    from transformers import AutoTokenizer

    from conftest import run_r2med

    folder = tmp_path / "st-cls"
    SentenceTransformer(modules=[Transformer(bert_dir, max_seq_length=40), Pooling(32, "cls")], device="cpu").save(
        str(folder)
    )
    data = tmp_path / "data"
    data.mkdir()
    docs = {f"d{i}": text for i, text in enumerate(TEXTS)}
    (data / "corpus.jsonl").write_text("".join(json.dumps({"id": d, "text": t}) + "\n" for d, t in docs.items()))
    (data / "query.jsonl").write_text(json.dumps({"id": "q1", "text": TEXTS[0]}) + "\n")
    (data / "qrels.jsonl").write_text(json.dumps({"q_id": "q1", "p_id": "d0", "score": 1}) + "\n")
    monkeypatch.setenv("R2MED_HOME", str(tmp_path / "home"))
    res = run_r2med("evaluate", "-r", "dense", "--model", folder, "-d", data, "-o", tmp_path / "out", "--name", "st")
    assert res.returncode == 0, res.stderr
    (metrics_path,) = (tmp_path / "out" / "st").glob("*/metrics.json")
    record = json.loads(metrics_path.read_text())
    assert record["config"]["encoder"]["loader"] == "sentence-transformers"
    assert record["config"]["encoder"]["pooling"] is None
    assert record["encoding"]["pooling"] == "cls"
    tok = AutoTokenizer.from_pretrained(bert_dir)
    vec = SentenceTransformer(str(folder), device="cpu").encode([TEXTS[1]])[0]
    np.testing.assert_allclose(vec, forward_one(bert_dir, tok(TEXTS[1])["input_ids"])[0], atol=2e-5)


def test_left_padded_batch_gives_each_text_the_positions_it_has_alone(tmp_path):
    """A last-token batch is padded on the left: each text must still sit at positions 0..n-1, as alone (BRIGHT's
    batch-1 loop, the model cards' code).  transformers' default positions count the pads before a text, which an
    absolute-position decoder (GPT-2 here) turns into other vectors, and a rotary one (Qwen, Mistral) into bf16/fp16
    rounding that grows with the pad count (benchmarks/gpu_encode.py: cosine 0.9987 to the batch-1 vectors in bf16)."""
    import torch
    from transformers import AutoTokenizer, GPT2Config, GPT2Model

    from tiny_families import FAMILIES, family_tokenizer

    family = FAMILIES["qwen3"]  # <|endoftext|> 151643 PAD, <|im_end|> 151645 EOS, no BOS
    family_tokenizer(tmp_path, "qwen3")
    config = GPT2Config(
        vocab_size=family.vocab_size,
        n_embd=16,
        n_layer=2,
        n_head=2,
        n_positions=128,
        bos_token_id=None,
        eos_token_id=family.id("<|im_end|>"),
        pad_token_id=family.id("<|endoftext|>"),
        initializer_range=0.3,
    )
    torch.manual_seed(0)
    model = GPT2Model(config).eval()
    model.save_pretrained(tmp_path)
    texts = ["short", "Antibodies neutralise viruses.", "The heart pumps blood through the body and the lungs."]
    enc = TransformersEncoder(
        EncoderSettings(model=str(tmp_path), pooling="last-token", max_length=64), device="cpu", batch_size=8
    )
    got = enc.encode_corpus(texts)  # one batch: the shorter texts padded on the left
    tok = AutoTokenizer.from_pretrained(tmp_path)
    alone, shifted = [], []
    longest = max(len(tok(t)["input_ids"]) for t in texts)
    with torch.no_grad():
        for text in texts:
            ids = tok(text)["input_ids"]
            alone.append(model(input_ids=torch.tensor([ids])).last_hidden_state[0, -1].numpy())
            pads = longest - len(ids)  # the same text left-padded, default positions: what r2med computed before
            padded = torch.tensor([[family.id("<|endoftext|>")] * pads + ids])
            mask = torch.tensor([[0] * pads + [1] * len(ids)])
            shifted.append(model(input_ids=padded, attention_mask=mask).last_hidden_state[0, -1].numpy())
    np.testing.assert_allclose(got, np.stack(alone), atol=1e-5)
    assert np.abs(np.stack(shifted)[0] - np.stack(alone)[0]).max() > 1e-2  # the default positions do differ
