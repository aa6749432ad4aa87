"""Tiny tokenizers (and random models) with the special tokens of each decoder family r2med runs, as its hub
files carry them: the token texts, their ids, their roles (BOS / EOS / PAD / UNK, which differ where the
real ones do), ``tokenizer_config.json``'s ``tokenizer_class`` and ``add_bos_token`` / ``add_eos_token``
keys, and ``tokenizer.json``'s post-processor -- so a test sees what transformers makes of the real files.

The vocabulary is tiny but the special ids are the real ones (filler tokens fill the gap below them), and an
ASCII text is one token per character: byte-level families (Qwen, Llama 3, GPT-NeoX) map every byte to a
token; SentencePiece families (Llama 2, Mistral, Gemma) spell ``▁`` + characters, with byte fallback.  Where
the tokens of a family come from (the hub files as others printed them; r2med cannot reach the hub):

* ``qwen3-embedding`` -- Qwen/Qwen3-Embedding-*: ``<|endoftext|>`` 151643 (PAD, and the token its
  ``tokenizer.json`` TemplateProcessing appends), ``<|im_start|>`` 151644, ``<|im_end|>`` 151645 (EOS), no BOS
  (QwenLM/Qwen3-Embedding issue #122; huggingface/sentence-transformers issue #3563; ggml-org/llama.cpp pull
  request #14314: "sets a different EOS token than defined in tokenizer_config.json using TemplateProcessing");
  ``add_bos_token: false`` as Qwen2.5 / Qwen3 configs carry it;
* ``qwen3`` -- the Qwen3 base tokenizers (ReasonEmbed's backbones): the same tokens, a post-processor adding none;
* ``gte-qwen2`` -- Alibaba-NLP/gte-Qwen2-7B-instruct: ``<|endoftext|>`` 151643 EOS and PAD, no BOS,
  ``tokenizer_config.json`` ``add_eos_token: true`` with its own ``tokenization_qwen.Qwen2TokenizerFast``
  (the config as copied by FINGU-AI/FingU7b); its ``tokenizer.json`` post-processor is not known here, so
  ``gte_post_processor_appends`` chooses (a plain Qwen2 ByteLevel one disagrees with the config);
* ``llama3`` -- meta-llama/Llama-3.1-8B: ``<|begin_of_text|>`` 128000 BOS (prepended by its
  TemplateProcessing), ``<|end_of_text|>`` 128001 EOS, ``<|eot_id|>`` 128009, no PAD, no add_* keys;
* ``llama2`` -- meta-llama/Llama-2-7b-hf (RankLLaMA's base): ``<unk>`` 0, ``<s>`` 1, ``</s>`` 2,
  ``add_bos_token: true``, ``add_eos_token: false``, ``<s> $A`` / pair ``<s> $A <s> $B``; no PAD;
* ``mistral`` -- Mistral-7B tokenizers (BioMistral, SFR's): the same ids and keys as Llama 2;
* ``e5-mistral`` -- intfloat/e5-mistral-7b-instruct: ``add_eos_token: true`` but ``tokenizer.json`` adds only
  ``<s>`` (mteb pull request #5237), the files disagreeing;
* ``gemma`` -- google/gemma-2b (BMRetriever-2B's base): ``<pad>`` 0, ``<eos>`` 1, ``<bos>`` 2, ``<unk>`` 3,
  ``add_bos_token: true``, ``add_eos_token: false``, ``<bos> $A``;
* ``pythia`` -- EleutherAI/pythia-410m (BMRetriever-410M's base): ``<|endoftext|>`` 0 as BOS, EOS and UNK,
  ``<|padding|>`` 1, GPTNeoXTokenizer, a post-processor adding none.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pytest

pytest.importorskip("transformers")


@dataclass(frozen=True)
class Family:
    """One family's tokenizer files, as data."""

    tokenizer_class: str
    kind: str  # "bytelevel" | "sentencepiece"
    specials: dict[str, int]  # token text -> its real id
    roles: dict[str, str | None]  # bos / eos / pad / unk -> token text
    config: dict[str, bool] = field(default_factory=dict)  # add_bos_token / add_eos_token as the hub config says
    single: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())  # the post-processor: tokens before / after $A
    pair_middle: tuple[str, ...] = ()  # the post-processor's tokens between $A and $B (pairs: before $A $B after)
    sp_prefix: bool = True  # a SentencePiece family that puts "▁" before a text (Gemma's does not)

    def id(self, token: str) -> int:
        return self.specials[token]

    @property
    def vocab_size(self) -> int:
        vocab = _bytelevel_vocab(self) if self.kind == "bytelevel" else _sp_vocab(self)
        return max(len(vocab), max(self.specials.values()) + 1)


_QWEN = {"<|endoftext|>": 151643, "<|im_start|>": 151644, "<|im_end|>": 151645}
_LLAMA3 = {"<|begin_of_text|>": 128000, "<|end_of_text|>": 128001, "<|eot_id|>": 128009}
_LLAMA2 = {"<unk>": 0, "<s>": 1, "</s>": 2}

FAMILIES: dict[str, Family] = {
    "qwen3-embedding": Family(
        "Qwen2Tokenizer",
        "bytelevel",
        _QWEN,
        {"bos": None, "eos": "<|im_end|>", "pad": "<|endoftext|>", "unk": None},
        {"add_bos_token": False},
        ((), ("<|endoftext|>",)),
        ("<|endoftext|>",),
    ),
    "qwen3": Family(
        "Qwen2Tokenizer",
        "bytelevel",
        _QWEN,
        {"bos": None, "eos": "<|im_end|>", "pad": "<|endoftext|>", "unk": None},
        {"add_bos_token": False},
    ),
    "gte-qwen2": Family(
        "Qwen2Tokenizer",
        "bytelevel",
        _QWEN,
        {"bos": None, "eos": "<|endoftext|>", "pad": "<|endoftext|>", "unk": None},
        {"add_eos_token": True},
    ),
    "gte-qwen2-appending": Family(  # the same, its tokenizer.json appending <|endoftext|> as its config says
        "Qwen2Tokenizer",
        "bytelevel",
        _QWEN,
        {"bos": None, "eos": "<|endoftext|>", "pad": "<|endoftext|>", "unk": None},
        {"add_eos_token": True},
        ((), ("<|endoftext|>",)),
        ("<|endoftext|>",),
    ),
    "llama3": Family(
        "PreTrainedTokenizerFast",
        "bytelevel",
        _LLAMA3,
        {"bos": "<|begin_of_text|>", "eos": "<|end_of_text|>", "pad": None, "unk": None},
        {},
        (("<|begin_of_text|>",), ()),
        ("<|begin_of_text|>",),
    ),
    "llama2": Family(
        "LlamaTokenizer",
        "sentencepiece",
        _LLAMA2,
        {"bos": "<s>", "eos": "</s>", "pad": None, "unk": "<unk>"},
        {"add_bos_token": True, "add_eos_token": False},
        (("<s>",), ()),
        ("<s>",),
    ),
    "mistral": Family(
        "LlamaTokenizer",
        "sentencepiece",
        _LLAMA2,
        {"bos": "<s>", "eos": "</s>", "pad": None, "unk": "<unk>"},
        {"add_bos_token": True, "add_eos_token": False},
        (("<s>",), ()),
        ("<s>",),
    ),
    "e5-mistral": Family(
        "LlamaTokenizer",
        "sentencepiece",
        _LLAMA2,
        {"bos": "<s>", "eos": "</s>", "pad": "</s>", "unk": "<unk>"},
        {"add_bos_token": True, "add_eos_token": True},
        (("<s>",), ()),
        ("<s>",),
    ),
    "gemma": Family(
        "GemmaTokenizer",
        "sentencepiece",
        {"<pad>": 0, "<eos>": 1, "<bos>": 2, "<unk>": 3},
        {"bos": "<bos>", "eos": "<eos>", "pad": "<pad>", "unk": "<unk>"},
        {"add_bos_token": True, "add_eos_token": False},
        (("<bos>",), ()),
        ("<bos>",),
        sp_prefix=False,
    ),
    "pythia": Family(
        "GPTNeoXTokenizer",
        "bytelevel",
        {"<|endoftext|>": 0, "<|padding|>": 1},
        {"bos": "<|endoftext|>", "eos": "<|endoftext|>", "pad": None, "unk": "<|endoftext|>"},
    ),
}


def _byte_chars() -> list[str]:
    from tokenizers import pre_tokenizers

    return sorted(pre_tokenizers.ByteLevel.alphabet())


def _sp_vocab(family: Family) -> dict[str, int]:
    vocab = dict(family.specials)
    for b in range(256):
        vocab[f"<0x{b:02X}>"] = len(vocab)
    for piece in ["▁", *(chr(c) for c in range(33, 127))]:
        vocab[piece] = len(vocab)
    return vocab


def _bytelevel_vocab(family: Family) -> dict[str, int]:
    """Bytes first (after any special below them), then fillers up to the first special id above them."""
    low = {t: i for t, i in family.specials.items() if i < 256}
    vocab = dict(low)
    for ch in _byte_chars():
        vocab[ch] = len(vocab)
    first_high = min((i for i in family.specials.values() if i >= len(vocab)), default=len(vocab))
    for i in range(len(vocab), first_high):
        vocab[f"<|filler_{i}|>"] = i
    return vocab


def _template(family: Family) -> dict | None:
    before, after = family.single
    if not before and not after:
        return None
    single = " ".join((*before, "$A", *after))
    pair = " ".join((*before, "$A", *family.pair_middle, "$B:1", *(f"{t}:1" for t in after)))
    tokens = sorted({*before, *after, *family.pair_middle})
    return {"single": single, "pair": pair, "special_tokens": [(t, family.id(t)) for t in tokens]}


def family_tokenizer(folder: Path, name: str) -> Path:
    """Save ``name``'s tokenizer files (``tokenizer.json``, ``tokenizer_config.json``) in ``folder``."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

    family = FAMILIES[name]
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    if family.kind == "bytelevel":
        tok = Tokenizer(models.BPE(vocab=_bytelevel_vocab(family), merges=[]))
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
        tok.decoder = decoders.ByteLevel()
        base_processor = processors.ByteLevel(trim_offsets=False)
    else:
        unk = family.roles["unk"]
        tok = Tokenizer(models.BPE(vocab=_sp_vocab(family), merges=[], unk_token=unk, byte_fallback=True))
        tok.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
        tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse()])
        base_processor = None
    specials = sorted(family.specials, key=family.specials.get)
    if name.startswith("llama3"):  # Llama 3's reserved specials between 128001 and 128009
        reserved = [f"<|reserved_special_token_{i}|>" for i in range(7)]
        specials = ["<|begin_of_text|>", "<|end_of_text|>", *reserved, "<|eot_id|>"]
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in specials])
    for text, wanted in family.specials.items():
        assert tok.token_to_id(text) == wanted, (name, text, tok.token_to_id(text), wanted)
    template = _template(family)
    if template is not None:
        tp = processors.TemplateProcessing(**template)
        tok.post_processor = processors.Sequence([base_processor, tp]) if base_processor else tp
    elif base_processor is not None:
        tok.post_processor = base_processor
    tok.save(str(folder / "tokenizer.json"))
    config: dict = {"tokenizer_class": family.tokenizer_class, "model_max_length": 131072, **family.config}
    for role in ("bos", "eos", "pad", "unk"):
        config[f"{role}_token"] = family.roles[role]
    config["added_tokens_decoder"] = {
        str(i): {
            "content": t,
            "lstrip": False,
            "normalized": False,
            "rstrip": False,
            "single_word": False,
            "special": True,
        }
        for t, i in family.specials.items()
    }
    (folder / "tokenizer_config.json").write_text(json.dumps(config, indent=1))
    return folder


def load(folder: Path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(folder))


def text_ids(family_name: str, text: str) -> list[int]:
    """Hand-built ids of ``text`` without special tokens, from the family's vocabulary (ASCII text only)."""
    family = FAMILIES[family_name]
    if family.kind == "bytelevel":
        vocab = _bytelevel_vocab(family)
        table = _gpt2_bytes()
        return [vocab[table[b]] for b in text.encode("utf-8")]
    vocab = _sp_vocab(family)
    return [vocab[piece] for piece in ("▁" if family.sp_prefix else "") + text.replace(" ", "▁")]


def _gpt2_bytes() -> dict[int, str]:
    """GPT-2's byte -> printable character table (the ByteLevel alphabet)."""
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


def family_model(folder: Path, name: str, arch: str, seed: int = 0, dtype: str = "float32"):
    """A 2-layer random ``arch`` base model (qwen3 / qwen2 / llama / mistral / gemma / gpt_neox) with ``name``'s
    tokenizer in ``folder``, its vocabulary as large as the family's highest special id; returns the model."""
    import torch
    from transformers import AutoConfig, AutoModel

    family_tokenizer(folder, name)
    family = FAMILIES[name]
    common = dict(
        vocab_size=family.vocab_size,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=2048,
        initializer_range=0.3,
        tie_word_embeddings=False,
    )
    if arch in ("qwen3", "llama", "mistral", "gemma"):
        common["head_dim"] = 8
    if arch == "gpt_neox":
        common.pop("num_key_value_heads")
        common.pop("tie_word_embeddings")
    for role in ("bos", "eos", "pad"):
        token = family.roles[role]
        common[f"{role}_token_id"] = family.id(token) if token else None
    config = AutoConfig.for_model(arch, **common)
    torch.manual_seed(seed)
    model = AutoModel.from_config(config).eval()
    model.to(getattr(torch, dtype)).save_pretrained(folder)
    return model.float()
