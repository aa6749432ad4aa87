"""Tiny random-weight models for dense tests (built from configs, saved to tmp folders; no download).

Imported by the other ``test_dense*`` files; holds no tests itself.
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pytest

from conftest import minilm_path

TEXTS = [
    "Insulin resistance in skeletal muscle and the liver.",
    "The heart pumps blood through the body.",
    "A very long passage about kidney function, filtration, electrolytes, hormones, and the renal "
    "tubules that reabsorb water and sodium under the control of aldosterone and vasopressin. " * 3,
    "short",
    "Gene expression is regulated by transcription factors binding to promoters and enhancers.",
    "Antibodies neutralise viruses.",
    "Chronic obstructive pulmonary disease and smoking.",
]


def _tokenizer(eos: bool = False):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(minilm_path())
    if eos:
        tok.eos_token = "[SEP]"
    return tok


def tiny_bert(folder: Path, seed: int = 0) -> str:
    """A 2-layer BERT (hidden 32) with the MiniLM vocabulary, random weights, saved to ``folder``."""
    import torch
    from transformers import BertConfig, BertModel

    torch.manual_seed(seed)
    tok = _tokenizer()
    cfg = BertConfig(
        vocab_size=tok.vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=37,
        max_position_embeddings=512,
    )
    BertModel(cfg).eval().save_pretrained(folder)
    tok.save_pretrained(folder)
    return str(folder)


def tiny_llama(folder: Path, seed: int = 0) -> str:
    """A 2-layer decoder (Llama architecture, rotary positions) with an EOS token, random weights."""
    import torch
    from transformers import LlamaConfig, LlamaModel

    torch.manual_seed(seed)
    tok = _tokenizer(eos=True)
    cfg = LlamaConfig(
        vocab_size=tok.vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        intermediate_size=37,
        max_position_embeddings=512,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
    )
    LlamaModel(cfg).eval().save_pretrained(folder)
    tok.save_pretrained(folder)
    return str(folder)


@pytest.fixture(scope="session")
def bert_dir(tmp_path_factory) -> str:
    return tiny_bert(tmp_path_factory.mktemp("tiny_bert"))


@pytest.fixture(scope="session")
def bert_dir_2(tmp_path_factory) -> str:
    return tiny_bert(tmp_path_factory.mktemp("tiny_bert_2"), seed=1)


@pytest.fixture(scope="session")
def llama_dir(tmp_path_factory) -> str:
    return tiny_llama(tmp_path_factory.mktemp("tiny_llama"))


@functools.cache
def _model(folder: str):
    from transformers import AutoModel

    return AutoModel.from_pretrained(folder).eval()


def forward_one(folder: str, ids: list[int], token_type_ids: list[int] | None = None) -> np.ndarray:
    """Token states of one unpadded sequence: a direct forward pass, batch of one."""
    import torch

    model = _model(folder)
    kwargs = {"input_ids": torch.tensor([ids])}
    if token_type_ids is not None:
        kwargs["token_type_ids"] = torch.tensor([token_type_ids])
    with torch.no_grad():
        return model(**kwargs).last_hidden_state[0].float().numpy()
