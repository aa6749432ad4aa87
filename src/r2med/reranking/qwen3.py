"""Qwen3-Reranker (0.6B / 4B / 8B): pointwise yes/no next-token scoring with a causal LM.

As the model card's Transformers code does (prompt strings and defaults are protocol data,
``protocol/later_models.json``, each with its source): every (query, document) pair becomes

    prefix + tokenizer(pair)[: max_length - len(prefix) - len(suffix)] + suffix

where ``pair`` is ``"<Instruct>: {instruction}\\n<Query>: {query}\\n<Document>: {doc}"`` (tokenized with
``truncation='longest_first'``, so an over-long pair loses the end of its document), the prefix is the
system turn ending in ``<|im_start|>user\\n`` and the suffix opens the assistant turn with an empty
think block.  Batches are padded on the left; the score is the probability of ``yes`` against ``no``
at the last position, ``exp(log_softmax([logit(no), logit(yes)])[1])``.  Only the last position's
logits are computed (``logits_to_keep=1`` where the model accepts it), in float32 for the softmax.

Pairs are batched by length (longest first) as the other pointwise rerankers are; left padding does
not move the scores beyond float error (RoPE attention sees relative positions only).
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..errors import R2MedError
from ..infra import progress
from ..infra.json_types import JsonObject
from ..infra.weights import load_pretrained
from ..protocol.later_models import RerankerSettings, later_reranker, needs_gpu, provenance
from ..retrieval.encoders.base import FramingRecord
from ..typed.options import Qwen3Options
from ..typed.parse import RerankerOptions
from .base import RerankerMeta, options_or_keywords, register_reranker
from .cross_encoder import PointwiseReranker, ScoringModel, ensure_available, require_torch

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

log = logging.getLogger(__name__)

PRESETS = ("qwen3-reranker-0.6b", "qwen3-reranker-4b", "qwen3-reranker-8b")


def card_settings(preset: str = "qwen3-reranker-0.6b") -> RerankerSettings:
    """The model card's settings for ``preset`` (from ``later_models.json``)."""
    settings: RerankerSettings = later_reranker(preset)["settings"]
    return settings


class Qwen3Reranker(PointwiseReranker):
    """A Qwen3-Reranker checkpoint (hub id or folder) scored as its model card does.

    Its options are :class:`~r2med.typed.options.Qwen3Options`: ``options`` as parsed (what the registry's factory
    passes), or the keywords, parsed here once; the card of ``preset`` stands for what is not set."""

    family = "qwen3-reranker"

    def __init__(
        self,
        model: str | None = None,
        preset: str = "qwen3-reranker-0.6b",
        name: str | None = None,
        tokenizer: str | None = None,
        model_revision: str | None = None,
        instruction: str | None = None,
        max_length: int | None = None,
        batch_size: int | None = None,
        device: str | None = None,
        dtype: str | None = None,
        *,
        options: RerankerOptions | None = None,
    ):
        keywords = {
            "model": model,
            "tokenizer": tokenizer,
            "model_revision": model_revision,
            "instruction": instruction,
            "max_length": max_length,
            "batch_size": batch_size,
            "device": device,
            "dtype": dtype,
        }
        o = options_or_keywords(Qwen3Options, options, keywords, "Qwen3Reranker()")
        card = card_settings(preset)
        super().__init__(
            max_length=o.max_length if o.max_length is not None else card["max_length"],
            batch_size=o.batch_size if o.batch_size is not None else card["batch_size"],
            device=o.device,
            dtype=o.dtype if o.dtype is not None else card["dtype"],
        )
        self.options = o
        self.preset = preset
        self.model_id = o.model or card["hub_id"]
        self.tokenizer_id = o.tokenizer or self.model_id
        self.model_revision = o.model_revision  # the model's commit: from_pretrained(revision=...)
        self.name = name or preset
        self.instruction = card["default_instruction"] if o.instruction is None else o.instruction
        self.prefix, self.suffix, self.pair_template = card["prefix"], card["suffix"], card["pair_template"]
        self.yes_token, self.no_token = card["yes_token"], card["no_token"]
        self._prefix_ids: list[int] = []
        self._suffix_ids: list[int] = []
        self._yes_no: tuple[int, int] = (-1, -1)
        self._keep_last = False

    def pair_text(self, query: str, doc: str) -> str:
        """The middle part of the prompt for one pair (the card's ``format_instruction``)."""
        text: str = self.pair_template.format(instruction=self.instruction, query=query, doc=doc)
        return text

    def _load(self) -> tuple[ScoringModel, PreTrainedTokenizerBase]:
        require_torch()
        from transformers import AutoModelForCausalLM, AutoTokenizer

        ensure_available(self.model_id, self.model_revision)
        try:
            tokenizer = AutoTokenizer.from_pretrained(
                self.tokenizer_id, revision=self.model_revision, padding_side="left"
            )
            model = load_pretrained(
                AutoModelForCausalLM.from_pretrained,
                self.model_id,
                "Qwen3-Reranker model",
                revision=self.model_revision,
                **self.load_kwargs(),
            )
        except (OSError, ValueError) as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise R2MedError(f"cannot load Qwen3-Reranker model {self.model_id!r}: {first}") from None
        tokenizer.padding_side = "left"
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
        ids = []
        for token in (self.no_token, self.yes_token):
            tid = tokenizer.convert_tokens_to_ids(token)  # one token: an int (or None), not the list form
            if not isinstance(tid, int) or (tokenizer.unk_token_id is not None and tid == tokenizer.unk_token_id):
                raise R2MedError(f"{self.model_id}: the tokenizer has no {token!r} token; it is not a Qwen3-Reranker")
            ids.append(int(tid))
        self._yes_no = (ids[1], ids[0])
        self._prefix_ids = tokenizer.encode(self.prefix, add_special_tokens=False)
        self._suffix_ids = tokenizer.encode(self.suffix, add_special_tokens=False)
        self._keep_last = "logits_to_keep" in inspect.signature(model.forward).parameters
        return model, tokenizer

    def load(self) -> None:
        super().load()
        if len(self._prefix_ids) + len(self._suffix_ids) >= self.max_length:
            raise R2MedError(
                f"{self.name}: max_length {self.max_length} leaves no room between the prompt's "
                f"{len(self._prefix_ids) + len(self._suffix_ids)} fixed tokens"
            )

    def input_ids(self, pairs: Sequence[tuple[str, str]]) -> list[list[int]]:
        """Token ids of each pair, as the card's ``process_inputs`` builds them (before padding)."""
        self.load()
        budget = self.max_length - len(self._prefix_ids) - len(self._suffix_ids)
        texts = [self.pair_text(q, d) for q, d in pairs]
        # no special tokens around the pair, whatever the tokenizer's post-processor adds (the card's Qwen3
        # tokenizer adds none; Qwen3-Embedding's appends <|endoftext|>): the prompt is the whole frame
        middle = self.tokenizer(
            texts,
            padding=False,
            truncation="longest_first",
            return_attention_mask=False,
            max_length=budget,
            add_special_tokens=False,
        )["input_ids"]
        return [self._prefix_ids + list(ids) + self._suffix_ids for ids in middle]

    def score_pairs(self, pairs: Sequence[tuple[str, str]], description: str | None = None) -> np.ndarray:
        if not pairs:
            return np.zeros(0, dtype=np.float64)
        torch = require_torch()
        encoded = self.input_ids(pairs)
        lengths = np.array([len(ids) for ids in encoded])
        order = np.argsort(-lengths, kind="stable")
        yes, no = self._yes_no
        extra = {"logits_to_keep": 1} if self._keep_last else {}
        scores = np.empty(len(pairs), dtype=np.float64)
        tok, model = self.tokenizer, self.model
        with progress.task(description or self.name, total=len(pairs), unit="pairs") as bar, torch.inference_mode():
            for start in range(0, len(order), self.batch_size):
                idx = order[start : start + self.batch_size]
                padded = tok.pad({"input_ids": [encoded[i] for i in idx]}, padding=True, return_tensors="pt")
                batch = {k: v.to(self.device) for k, v in padded.items() if k in ("input_ids", "attention_mask")}
                last = model(**batch, **extra).logits[:, -1, :]
                two = torch.stack([last[:, no], last[:, yes]], dim=1).float()
                p_yes = torch.nn.functional.log_softmax(two, dim=1)[:, 1].exp()
                scores[idx] = p_yes.cpu().numpy()
                bar.advance(len(idx))
        return scores

    def config(self) -> JsonObject:
        return {
            "reranker": self.name,
            "kind": "qwen3-reranker",
            "model": self.model_id,
            "tokenizer": self.tokenizer_id,
            "model_revision": self.model_revision,
            "instruction": self.instruction,
            "max_length": self.max_length,
            "dtype": self.dtype_option,
            "padding_side": "left",
            "pair_template": self.pair_template,
        }


def _preset(name: str) -> Callable[[RerankerOptions], Qwen3Reranker]:
    def factory(options: RerankerOptions) -> Qwen3Reranker:
        return Qwen3Reranker(preset=name, options=options)

    return factory


#: The card's inputs: its chat prompt around the pair and no BOS / EOS (r2med builds them: prefix + pair + suffix).
CARD_FRAMING = FramingRecord(
    "{text}",
    "r2med",
    (
        "the Qwen3-Reranker model card's process_inputs (fenghaitao/Qwen3-Embedding README.md@14f0f21; QwenLM/"
        "Qwen3-Embedding README.md@f4ad0c4): prefix ids + tokenizer(pair) + suffix ids, the Qwen3-Reranker "
        "tokenizer adding nothing (no TemplateProcessing was added to it: ggml-org/llama.cpp issue #14252, unlike "
        "Qwen3-Embedding's, which appends <|endoftext|>); r2med tokenizes the pair text without special tokens"
    ),
)


for _name in PRESETS:
    _entry = later_reranker(_name)
    register_reranker(
        RerankerMeta(
            _name,
            _preset(_name),
            f"{_entry['settings']['hub_id']}: yes/no logit scoring (model card)",
            options=Qwen3Options,
            install="pip install 'r2med[dense]'",
            needs_gpu=needs_gpu(_entry),
            hub_id=_entry["settings"]["hub_id"],
            later=True,
            provenance=provenance(_entry),
            framing=CARD_FRAMING,
        )
    )
register_reranker(
    RerankerMeta(
        "qwen3-reranker",
        lambda options: Qwen3Reranker(options=options),
        "any Qwen3-Reranker checkpoint: model=<hub id or folder> (yes/no logit scoring, model card)",
        options=Qwen3Options,
        install="pip install 'r2med[dense]'",
        later=True,
    )
)
