"""Tiny random-weight decoder models (Qwen3 / Qwen2 / Llama) and byte-level tokenizers, built offline.

Shared by the later-work tests (tests/test_later_*.py).  The tokenizer maps every UTF-8 byte to one
token (a byte-level BPE with no merges), so an ASCII text of ``n`` characters is ``n`` tokens and a
newline or a space is a token of its own: a template that lost its ``\\n`` gives other ids.  Flavours
mimic what the real tokenizers add around a text:

* ``plain``      -- nothing (Qwen2/Qwen3 base tokenizers);
* ``eos``        -- ``<|endoftext|>`` appended (Qwen3-Embedding's hub tokenizer);
* ``bos``        -- ``<|begin_of_text|>`` prepended (Llama 3.1).

Chat-template markers (``<|im_start|>``, ``<|im_end|>``) are special tokens and ``<think>`` /
``</think>`` added tokens, as in Qwen3; ``yes`` and ``no`` are whole-word tokens (for the reranker).
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

EOS = "<|endoftext|>"
BOS = "<|begin_of_text|>"


def byte_tokenizer(folder: Path, flavour: str = "plain"):
    """Save a byte-level tokenizer in ``folder``; return it loaded back with ``AutoTokenizer``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors
    from transformers import AutoTokenizer, PreTrainedTokenizerFast

    vocab = {ch: i for i, ch in enumerate(sorted(pre_tokenizers.ByteLevel.alphabet()))}
    for word in ("yes", "no"):
        vocab[word] = len(vocab)
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([EOS, BOS, "<|im_start|>", "<|im_end|>"])
    tok.add_tokens(["<think>", "</think>"])
    if flavour == "eos":
        tok.post_processor = processors.TemplateProcessing(
            single=f"$A {EOS}", special_tokens=[(EOS, tok.token_to_id(EOS))]
        )
    elif flavour == "bos":
        tok.post_processor = processors.TemplateProcessing(
            single=f"{BOS} $A", special_tokens=[(BOS, tok.token_to_id(BOS))]
        )
    elif flavour != "plain":
        raise ValueError(flavour)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token=EOS, pad_token=EOS, bos_token=BOS if flavour == "bos" else None
    )
    fast.save_pretrained(folder)
    return AutoTokenizer.from_pretrained(folder)


def tiny_config(arch: str, vocab_size: int, seed: int = 0):
    """A 2-layer config of ``arch`` (qwen3 / qwen2 / llama) with grouped-query attention."""
    from transformers import LlamaConfig, Qwen2Config, Qwen3Config

    common = dict(
        vocab_size=vocab_size,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=4096,
        initializer_range=0.3,
        tie_word_embeddings=False,
    )
    if arch == "qwen3":
        return Qwen3Config(head_dim=8, **common)
    if arch == "qwen2":
        return Qwen2Config(**common)
    if arch == "llama":
        return LlamaConfig(head_dim=8, **common)
    raise ValueError(arch)


def tiny_model(folder: Path, arch: str, flavour: str = "plain", causal_lm: bool = False, seed: int = 0):
    """Save a random ``arch`` model (base model, or ``*ForCausalLM``) and its tokenizer in ``folder``.

    Returns ``(model, tokenizer)`` in eval mode, fp32.
    """
    import torch
    from transformers import AutoModel, AutoModelForCausalLM

    tokenizer = byte_tokenizer(folder, flavour)
    config = tiny_config(arch, len(tokenizer))
    torch.manual_seed(seed)
    model = (AutoModelForCausalLM if causal_lm else AutoModel).from_config(config)
    model.eval()
    model.save_pretrained(folder)
    return model, tokenizer


# -- a Mistral whose tokenizer files disagree, as intfloat/e5-mistral-7b-instruct's do (issue 20) ------------

UNK, MISTRAL_BOS, MISTRAL_EOS = "<unk>", "<s>", "</s>"  # ids 0, 1, 2, as in Mistral's vocabulary


def mistral_tokenizer(folder: Path, post_processor_adds_eos: bool) -> None:
    """Save a byte-level tokenizer with Mistral's special tokens (``<unk>`` 0, ``<s>`` 1, ``</s>`` 2; byte
    ``i`` of the alphabet is id ``3 + i``) whose ``tokenizer_config.json`` says ``add_bos_token`` and
    ``add_eos_token`` true, as e5-mistral-7b-instruct's does; its ``tokenizer.json`` post-processor adds
    ``<s> $A </s>`` (``post_processor_adds_eos``: what transformers < 5 rebuilt from the config) or only
    ``<s> $A`` (e5-mistral's file as it is, which transformers >= 5 takes as it is)."""
    import json

    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    vocab = {UNK: 0, MISTRAL_BOS: 1, MISTRAL_EOS: 2}
    for ch in sorted(pre_tokenizers.ByteLevel.alphabet()):
        vocab[ch] = len(vocab)
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[], unk_token=UNK))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([UNK, MISTRAL_BOS, MISTRAL_EOS])
    single = f"{MISTRAL_BOS} $A {MISTRAL_EOS}" if post_processor_adds_eos else f"{MISTRAL_BOS} $A"
    tok.post_processor = processors.TemplateProcessing(
        single=single, pair=f"{MISTRAL_BOS} $A {MISTRAL_BOS} $B", special_tokens=[(MISTRAL_BOS, 1), (MISTRAL_EOS, 2)]
    )
    PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token=MISTRAL_BOS, eos_token=MISTRAL_EOS, unk_token=UNK
    ).save_pretrained(folder)
    path = Path(folder) / "tokenizer_config.json"
    config = json.loads(path.read_text())
    config.update({"add_bos_token": True, "add_eos_token": True, "legacy": True, "pad_token": MISTRAL_EOS})
    path.write_text(json.dumps(config))


def mistral_byte_ids(text: str) -> list[int]:
    """Hand-built ids of ``text`` for :func:`mistral_tokenizer` (no special tokens): one id per UTF-8 byte."""
    from tokenizers import pre_tokenizers

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    byte_to_char = {b: c for b, c in _gpt2_bytes().items()}
    return [3 + alphabet.index(byte_to_char[b]) for b in text.encode("utf-8")]


def _gpt2_bytes() -> dict[int, str]:
    """GPT-2's byte -> printable character table (the ByteLevel pre-tokenizer's alphabet)."""
    printable = (
        list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    )
    chars, extra = list(printable), 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            chars.append(256 + extra)
            extra += 1
    return {b: chr(c) for b, c in zip(printable, chars)}


def tiny_mistral(folder: Path, post_processor_adds_eos: bool, seed: int = 0) -> Path:
    """A 2-layer random Mistral (``MistralModel``) with :func:`mistral_tokenizer` in ``folder``; the same
    ``seed`` gives the same weights whichever tokenizer."""
    import torch
    from transformers import MistralConfig, MistralModel

    folder = Path(folder)
    mistral_tokenizer(folder, post_processor_adds_eos)
    config = MistralConfig(
        vocab_size=3 + 256,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=8,
        max_position_embeddings=4096,
        initializer_range=0.3,
        bos_token_id=1,
        eos_token_id=2,
        tie_word_embeddings=False,
        sliding_window=None,
    )
    torch.manual_seed(seed)
    MistralModel(config).eval().save_pretrained(folder)
    return folder
