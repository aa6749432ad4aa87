"""Cross-encoder and RankLLaMA rerankers against direct forward passes of the same random models."""

from __future__ import annotations

import functools
import inspect
from pathlib import Path

import numpy as np
import pytest

from conftest import minilm_path
from r2med.errors import R2MedError
from r2med.reranking import make_reranker, rerank
from r2med.runs.run import ranked

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

CORPUS = {
    "d1": "Aspirin reduces the risk of myocardial infarction in adults with cardiovascular disease.",
    "d2": "Insulin resistance is a hallmark of type 2 diabetes.",
    "d3": "The patient presented with fever, cough and shortness of breath for three days before admission.",
    "d4": "Statins lower LDL cholesterol.",
    "d5": "Migraine is often accompanied by nausea, photophobia and phonophobia; triptans relieve attacks.",
    "d6": "Vitamin D deficiency is associated with osteoporosis and fractures in elderly women.",
    "d7": "Antibiotics do not help viral infections.",
}
QUERIES = {
    "q1": "What drug prevents heart attacks?",
    "q2": "A woman over seventy has brittle bones and low sun exposure; which deficiency explains her fractures?",
}
RUN = {
    "q1": {"d1": 9.0, "d2": 8.0, "d3": 7.5, "d4": 7.0, "d5": 3.0, "d6": 2.0},
    "q2": {"d6": 5.0, "d7": 4.0, "d1": 3.0, "d2": 2.5, "d3": 1.0},
}


def _tiny_bert(folder: Path, num_labels: int, seed: int) -> Path:
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    tok = AutoTokenizer.from_pretrained(minilm_path())
    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=tok.vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
        num_labels=num_labels,
        initializer_range=0.2,
    )
    model = BertForSequenceClassification(config).eval()
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def bert_one(tmp_path_factory) -> Path:
    return _tiny_bert(tmp_path_factory.mktemp("bert1"), 1, seed=1)


@pytest.fixture(scope="module")
def bert_two(tmp_path_factory) -> Path:
    return _tiny_bert(tmp_path_factory.mktemp("bert2"), 2, seed=2)


@functools.lru_cache(maxsize=8)
def _load(folder: Path):
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    return AutoTokenizer.from_pretrained(folder), AutoModelForSequenceClassification.from_pretrained(folder).eval()


def _direct_scores(folder: Path, pairs, label: int, max_length: int = 512, fmt=lambda q, d: (q, d), model=None):
    """One pair at a time, no padding, no sorting: the reference."""
    tok, plain = _load(Path(folder))
    model = model or plain
    out = []
    with torch.no_grad():
        for q, d in pairs:
            a, b = fmt(q, d)
            enc = tok(a, b, truncation=True, max_length=max_length, return_tensors="pt")
            if "token_type_ids" not in inspect.signature(model.forward).parameters:
                enc.pop("token_type_ids", None)
            out.append(float(model(**enc).logits[0, label]))
    return np.array(out)


@pytest.mark.parametrize("labels", [1, 2])
def test_cross_encoder_scores_equal_direct_forward_pass(labels, bert_one, bert_two):
    folder = bert_one if labels == 1 else bert_two
    pairs = [(QUERIES[q], CORPUS[d]) for q in QUERIES for d in CORPUS]
    reranker = make_reranker(str(folder), batch_size=3, max_length=40)  # truncation exercised too
    got = reranker.score_pairs(pairs)
    expected = _direct_scores(folder, pairs, label=labels - 1, max_length=40)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)
    assert len(set(np.round(got, 6))) == len(pairs)  # random model, distinct scores: a real ordering test


def test_rerank_run_orders_head_and_appends_tail(bert_two):
    reranker = make_reranker("cross-encoder", model=str(bert_two), batch_size=4)
    out = rerank(RUN, QUERIES, CORPUS, reranker, top_k=3)
    for qid, docs in RUN.items():
        first = [d for d, _ in ranked(docs)]
        head, tail = first[:3], first[3:]
        ref = _direct_scores(bert_two, [(QUERIES[qid], CORPUS[d]) for d in head], label=1)
        expected_head = [head[i] for i in np.argsort(-ref)]
        got = [d for d, _ in ranked(out[qid])]
        assert got == expected_head + tail
        assert set(out[qid]) == set(docs)
        for d, s in zip(head, ref):
            assert out[qid][d] == pytest.approx(s, abs=1e-5)
        assert max(out[qid][d] for d in tail) < min(out[qid][d] for d in head) if tail else True


def test_rerank_run_top_k_only_and_short_lists(bert_one):
    reranker = make_reranker(str(bert_one))
    out = rerank(RUN, QUERIES, CORPUS, reranker, top_k=4, keep_tail=False)
    assert {q: set(d) for q, d in out.items()} == {q: {d for d, _ in ranked(docs)[:4]} for q, docs in RUN.items()}
    deep = rerank(RUN, QUERIES, CORPUS, reranker, top_k=100)  # k beyond the list: everything reranked
    for qid in RUN:
        ref = _direct_scores(bert_one, [(QUERIES[qid], CORPUS[d]) for d in RUN[qid]], label=0)
        assert [d for d, _ in ranked(deep[qid])] == [list(RUN[qid])[i] for i in np.argsort(-ref)]


def test_rerank_run_skips_queries_without_text(bert_one, caplog):
    reranker = make_reranker(str(bert_one))
    run = {**RUN, "q9": {"d1": 1.0}}
    out = rerank(run, QUERIES, CORPUS, reranker, top_k=2)
    assert set(out) == {"q1", "q2"}
    assert "1 run query have no query text" in caplog.text


def test_unknown_reranker_is_a_one_line_error():
    with pytest.raises(R2MedError, match=r"unknown reranker 'nonsense'.*bge-reranker.*monobert.*rankllama"):
        make_reranker("nonsense")


def test_unreachable_hub_model_fails_fast_in_one_line():
    import time

    reranker = make_reranker("no-such-org/no-such-model")
    start = time.monotonic()
    with pytest.raises(R2MedError, match="'no-such-org/no-such-model'"):
        reranker.score_pairs([("q", "d")])
    assert time.monotonic() - start < 30
    with pytest.raises(R2MedError, match="does not exist"):
        make_reranker("./no/such/folder/model").score_pairs([("q", "d")])


def test_unloadable_model_is_a_one_line_error(tmp_path):
    reranker = make_reranker(str(tmp_path))  # a folder without a model in it
    with pytest.raises(R2MedError, match="cannot load reranker model"):
        reranker.score_pairs([("q", "d")])


def test_presets_name_the_papers_models():
    assert make_reranker("bge-reranker").config()["model"] == "BAAI/bge-reranker-v2-m3"
    mono = make_reranker("monobert")
    assert mono.config()["model"] == "castorini/monobert-large-msmarco" and mono.label == 1
    llama = make_reranker("rankllama").config()
    assert (llama["base"], llama["lora"], llama["max_length"]) == (
        "meta-llama/Llama-2-7b-hf",
        "castorini/rankllama-v1-7b-lora-passage",
        1024,
    )


def test_rankllama_equals_unmerged_peft_forward_pass(tmp_path):
    peft = pytest.importorskip("peft")
    from transformers import AutoTokenizer, LlamaConfig, LlamaForSequenceClassification

    tok = AutoTokenizer.from_pretrained(minilm_path())
    torch.manual_seed(3)
    config = LlamaConfig(
        vocab_size=tok.vocab_size,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=256,
        num_labels=1,
        pad_token_id=tok.pad_token_id,
        initializer_range=0.2,
    )
    base = LlamaForSequenceClassification(config).eval()
    base.save_pretrained(tmp_path / "base")
    tok.save_pretrained(tmp_path / "base")
    lora_cfg = peft.LoraConfig(
        task_type="SEQ_CLS", r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], init_lora_weights=False
    )
    peft.get_peft_model(LlamaForSequenceClassification.from_pretrained(tmp_path / "base"), lora_cfg).save_pretrained(
        tmp_path / "lora"
    )

    pairs = [(QUERIES[q], CORPUS[d]) for q in QUERIES for d in CORPUS]
    reranker = make_reranker("rankllama", base=str(tmp_path / "base"), lora=str(tmp_path / "lora"), batch_size=5)
    got = reranker.score_pairs(pairs)

    reference = peft.PeftModel.from_pretrained(
        LlamaForSequenceClassification.from_pretrained(tmp_path / "base", num_labels=1), str(tmp_path / "lora")
    ).eval()
    fmt = lambda q, d: (f"query: {q}", f"document: {d}")  # noqa: E731
    expected = _direct_scores(tmp_path / "base", pairs, label=0, max_length=1024, fmt=fmt, model=reference)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)
    base_only = _direct_scores(tmp_path / "base", pairs, label=0, max_length=1024, fmt=fmt)
    assert np.abs(base_only - expected).max() > 1e-3  # the adapter really changes the scores


class _Recorder:
    """A reranker that records the candidates it is given and scores them all equal."""

    name = "recorder"

    def __init__(self):
        self.seen = {}

    def rerank(self, queries, candidates, corpus):
        self.seen = {qid: [did for did, _ in cands] for qid, cands in candidates.items()}
        return {qid: {did: 0.0 for did, _ in cands} for qid, cands in candidates.items()}

    def config(self):
        return {"name": self.name}


def test_rerank_candidates_tied_in_score_keep_corpus_order():
    """The paper takes the first stage's top k from a stable sort over the corpus: ties in corpus order."""
    corpus = {"m": "t", "z": "t", "a": "t", "k": "t", "b": "t"}  # corpus order differs from id order both ways
    run = {"q1": {"a": 1.0, "z": 1.0, "b": 2.0, "m": 1.0, "k": 0.5}}
    # the paper's code (src/eval_BM25.py save_topk_docs, src/eval_reranker.py): sorted(..., reverse=True) over
    # the corpus-ordered scores, then topk_pids[:top_k]
    paper = [
        d
        for d, _ in sorted(
            ((d, run["q1"][d]) for d in corpus if d in run["q1"]), key=lambda item: item[1], reverse=True
        )
    ]
    assert paper == ["b", "m", "z", "a", "k"]
    recorder = _Recorder()
    for k in (2, 3, 5):
        out = rerank(run, {"q1": "query"}, corpus, recorder, top_k=k, keep_tail=True)
        assert recorder.seen["q1"] == paper[:k]
        # the tail follows in the same first-stage order, below the reranked head
        tail = sorted((d for d in out["q1"] if d not in paper[:k]), key=lambda d: -out["q1"][d])
        assert tail == paper[k:]
    assert [d for d, _ in ranked(run["q1"])][:3] == ["b", "z", "m"]  # trec_eval's tie order would have taken z
