"""Weights that do not cover what runs are refused (r2med.infra.weights): cross-encoders, RankLLaMA (peft),
Qwen3-Reranker and dense encoders (transformers and sentence-transformers loaders), through the CLI too.

The reference for "what is missing" is the checkpoint itself: each broken folder is built to lack known
tensors (a bi-encoder has no classifier head; a config asking for one layer more than the weights hold; a
base model without the causal-LM head), and the error must name exactly those.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

pytest.importorskip("torch")

from conftest import minilm_path, run_r2med
from r2med.infra.weights import IncompleteWeights, allowing_random_init
from test_rerank import _tiny_bert
from test_rerank_cli import first_stage  # noqa: F401


def _bigger_config(folder: Path, layers: int) -> Path:
    """The folder's config asks for ``layers`` layers; its weights hold fewer (the extra ones would be random)."""
    config = json.loads((folder / "config.json").read_text())
    config["num_hidden_layers"] = layers
    (folder / "config.json").write_text(json.dumps(config))
    return folder


def _bert_layer_tensors(layer: int) -> set[str]:
    from transformers import BertConfig, BertModel

    model = BertModel(
        BertConfig(
            vocab_size=10, hidden_size=8, num_hidden_layers=layer + 1, num_attention_heads=2, intermediate_size=8
        )
    )
    return {k for k in model.state_dict() if k.startswith(f"encoder.layer.{layer}.")}


def _error_lines(stderr: str) -> list[str]:
    """The error lines of a CLI's stderr (beside progress bars and INFO records); transformers' own load
    report, with its table of MISSING tensors, is not printed beside r2med's one line."""
    assert "LOAD REPORT" not in stderr and "MISSING" not in stderr, stderr
    return [line for line in stderr.splitlines() if line.startswith("error:")]


# -- cross-encoders ----------------------------------------------------------------------------------


def test_bi_encoder_folder_is_refused_as_a_cross_encoder():
    from r2med.reranking.cross_encoder import CrossEncoderReranker

    reranker = CrossEncoderReranker(minilm_path(), device="cpu")
    with pytest.raises(IncompleteWeights) as caught:
        reranker.load()
    message = str(caught.value)
    assert "\n" not in message and minilm_path() in message
    assert "lacks 2 tensor(s)" in message and "(classifier.bias, classifier.weight)" in message


def test_complete_cross_encoder_loads_and_allowing_random_init_loads_the_bi_encoder(tmp_path, caplog):
    from r2med.reranking.cross_encoder import CrossEncoderReranker

    CrossEncoderReranker(str(_tiny_bert(tmp_path / "ce", 1, seed=0)), device="cpu").load()  # saved whole: fine
    with allowing_random_init(), caplog.at_level(logging.WARNING):
        CrossEncoderReranker(minilm_path(), device="cpu").load()
    assert any(
        "initialised at random (allowed)" in r.getMessage() and "classifier.weight" in r.getMessage()
        for r in caplog.records
    )


def test_cli_rerank_with_a_bi_encoder_folder_is_refused_and_writes_nothing(first_stage, tmp_path):
    """Before: nDCG@10 from a random classifier head (61.01 on all of medline-med's BM25 top 10; other
    figures on a re-run).  Now: exit 2, one line, no folder."""
    runs, _, _ = first_stage
    out = tmp_path / "out"
    res = run_r2med("rerank", "--run", str(runs / "bm25"), "--reranker", minilm_path(), "--top-k", "5", "-o", str(out))
    assert res.returncode == 2, res.stderr
    errors = _error_lines(res.stderr)
    assert len(errors) == 1, res.stderr
    assert minilm_path() in errors[0] and "classifier.bias, classifier.weight" in errors[0]
    assert not out.exists()
    allowed = run_r2med(
        "--allow-random-init",
        "rerank",
        "--run",
        str(runs / "bm25"),
        "--reranker",
        minilm_path(),
        "--top-k",
        "5",
        "-o",
        str(out),
    )
    assert allowed.returncode == 0, allowed.stderr
    assert "initialised at random (allowed)" in allowed.stderr
    assert list(out.glob("*/*/run.trec"))


# -- RankLLaMA (base model + peft adapter) --------------------------------------------------------------


def _llama_base(folder: Path, head: bool) -> None:
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForSequenceClassification, LlamaModel

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
    )
    (LlamaForSequenceClassification(config) if head else LlamaModel(config)).save_pretrained(folder)
    tok.save_pretrained(folder)


def _adapter(base: Path, folder: Path, with_score: bool) -> None:
    import peft
    from transformers import LlamaForSequenceClassification

    with allowing_random_init():  # a base without the head: the adapter is trained from that (random) head
        model = LlamaForSequenceClassification.from_pretrained(base, num_labels=1)
    config = peft.LoraConfig(
        task_type="SEQ_CLS" if with_score else None,
        r=4,
        lora_alpha=8,
        target_modules=["q_proj", "v_proj"],
        init_lora_weights=False,
    )
    peft.get_peft_model(model, config).save_pretrained(folder)


def test_rankllama_score_head_must_come_from_the_base_or_the_adapter(tmp_path):
    pytest.importorskip("peft")
    from r2med.reranking.base import make_reranker

    _llama_base(tmp_path / "headless", head=False)  # as Llama-2-7b-hf: no sequence-classification head
    _adapter(tmp_path / "headless", tmp_path / "with-score", with_score=True)  # as RankLLaMA's: it holds the head
    _adapter(tmp_path / "headless", tmp_path / "lora-only", with_score=False)
    make_reranker("rankllama", base=str(tmp_path / "headless"), lora=str(tmp_path / "with-score"), device="cpu").load()
    reranker = make_reranker(
        "rankllama", base=str(tmp_path / "headless"), lora=str(tmp_path / "lora-only"), device="cpu"
    )
    with pytest.raises(IncompleteWeights, match=r"lacks 1 tensor\(s\) .*\(score\.weight\)") as caught:
        reranker.load()
    assert str(tmp_path / "lora-only") in str(caught.value) and str(tmp_path / "headless") in str(caught.value)


# -- Qwen3-Reranker ----------------------------------------------------------------------------------


def test_qwen3_reranker_without_its_lm_head_is_refused(tmp_path):
    from r2med.reranking.qwen3 import Qwen3Reranker
    from tiny_lm import tiny_model

    tiny_model(tmp_path / "whole", "qwen3", causal_lm=True, seed=1)
    Qwen3Reranker(model=str(tmp_path / "whole"), device="cpu").load()
    tiny_model(tmp_path / "base", "qwen3", causal_lm=False, seed=1)  # untied: lm_head.weight is its own tensor
    with pytest.raises(IncompleteWeights, match=r"Qwen3-Reranker model .* lacks 1 tensor\(s\) .*\(lm_head\.weight\)"):
        Qwen3Reranker(model=str(tmp_path / "base"), device="cpu").load()


# -- dense encoders ------------------------------------------------------------------------------------


@pytest.mark.parametrize("loader", ["transformers", "sentence-transformers"])
def test_dense_encoder_with_fewer_layers_than_its_config_is_refused(tmp_path, loader):
    from r2med.retrieval.dense import DenseRetriever
    from r2med.retrieval.encoders import EncoderSettings
    from test_dense_fixtures import tiny_bert

    folder = Path(tiny_bert(tmp_path / "bert"))
    settings = EncoderSettings(model=str(folder), pooling="mean", max_length=32, loader=loader)
    corpus = {"d1": "insulin lowers glucose", "d2": "aspirin inhibits cox"}
    DenseRetriever(settings, device="cpu", cache=False).index(corpus)  # whole: fine
    _bigger_config(folder, 3)
    expected = sorted(_bert_layer_tensors(2))
    with pytest.raises(IncompleteWeights) as caught:
        DenseRetriever(settings, device="cpu", cache=False).index(corpus)
    message = str(caught.value)
    assert f"embedding model {str(folder)!r} lacks {len(expected)} tensor(s)" in message
    assert ", ".join(expected[:4]) in message and f"and {len(expected) - 4} more" in message


def test_cli_evaluate_with_an_incomplete_dense_model_exits_2_and_writes_nothing(tmp_path):
    from test_data import make_r2med
    from test_dense_fixtures import tiny_bert

    folder = _bigger_config(Path(tiny_bert(tmp_path / "bert")), 3)
    data = make_r2med(tmp_path / "c")
    out = tmp_path / "out"
    res = run_r2med(
        "evaluate",
        "-r",
        "dense",
        "--model",
        str(folder),
        "--pooling",
        "mean",
        "-d",
        str(data),
        "-o",
        str(out),
        "--no-cache",
    )
    assert res.returncode == 2 and "encoder.layer.2." in res.stderr, res.stderr
    assert len(_error_lines(res.stderr)) == 1, res.stderr
    assert not list(out.rglob("metrics.json"))
