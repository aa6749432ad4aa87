"""RankLLaMA: a LoRA adapter (peft) on a Llama base model with a one-logit classification head.

As in castorini/rankllama-v1-7b-lora-passage: the base model (meta-llama/Llama-2-7b-hf) is loaded
as a sequence-classification model with one label, the adapter is applied and merged, and each
pair is fed as ``"query: {q}"`` / ``"document: {d}"`` (max 1024 tokens); the score is the logit.
The pad token is Llama's ``unk`` (Llama has none of its own), padding on the right, so the
classification head reads the last real token.

The pair's ids are built by r2med, as the R2MED paper's ``tokenizer(q, p, max_length=1024)`` made them
(``src/utils.py:910-915``: with no ``truncation`` argument transformers truncates ``longest_first``): each
segment tokenized without special tokens, the longer one cut first, and the special tokens of the
tokenizer's pair template put around them -- read from its files, which must agree (``<s> q <s> d`` for
Llama-2: ``add_bos_token`` true, ``add_eos_token`` false, and a post-processor saying the same), named by
text and checked against the tokenizer's own call on the first pair.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, TypedDict

from ..errors import MissingExtraError, R2MedError
from ..infra.json_types import JsonObject, JsonValue
from ..infra.weights import load_adapter, pretrained_with_gaps
from ..retrieval.encoders.base import FramingRecord
from ..retrieval.encoders.framing import pair_ids, settled_pair
from ..typed.options import RankLlamaOptions
from ..typed.parse import RerankerOptions
from .base import RerankerMeta, options_or_keywords, register_reranker
from .cross_encoder import PointwiseReranker, ScoringModel, ensure_available, require_torch

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

log = logging.getLogger(__name__)

#: The special tokens around each (query, document) pair in the paper's run: the Llama-2 tokenizer's own pair
#: template (ASSUMED: r2med uses the tokenizer's, read from its files, which must agree).
FRAMING = FramingRecord(
    "<s> {query} <s> {document}",
    "tokenizer",
    (
        "R2MED src/utils.py:906-915 tokenizer(f'query: {q}', f'document: {p}', max_length=1024) (longest_first "
        "truncation, the tokenizer's special tokens); ASSUMED: the meta-llama/Llama-2-7b-hf template <s> q <s> d, "
        "no EOS (its tokenizer_config.json add_bos_token true, add_eos_token false; tokenizer.json pair template "
        "the same); r2med uses the template the tokenizer's files agree on and stops where they disagree"
    ),
)


class RankLlamaDefaults(TypedDict):
    """The checkpoint pair and input length RankLLaMA's model card uses."""

    base: str
    lora: str
    max_length: int


DEFAULTS: RankLlamaDefaults = {
    "base": "meta-llama/Llama-2-7b-hf",
    "lora": "castorini/rankllama-v1-7b-lora-passage",
    "max_length": 1024,
}


class RankLlamaReranker(PointwiseReranker):
    """RankLLaMA (see the module docstring).  Its options are :class:`~r2med.typed.options.RankLlamaOptions`:
    ``options`` as parsed (what the registry's factory passes), or the keywords, parsed here once; the model
    card's checkpoints and length (:data:`DEFAULTS`), batch 8, precision ``auto`` and a merged adapter stand for
    what is not set."""

    def __init__(
        self,
        base: str | None = None,
        lora: str | None = None,
        tokenizer: str | None = None,
        name: str = "rankllama",
        max_length: int | None = None,
        batch_size: int | None = None,
        device: str | None = None,
        dtype: str | None = None,
        merge: bool | None = None,
        *,
        options: RerankerOptions | None = None,
    ):
        keywords = {
            "base": base,
            "lora": lora,
            "tokenizer": tokenizer,
            "max_length": max_length,
            "batch_size": batch_size,
            "device": device,
            "dtype": dtype,
            "merge": merge,
        }
        o = options_or_keywords(RankLlamaOptions, options, keywords, "RankLlamaReranker()")
        super().__init__(
            max_length=o.max_length if o.max_length is not None else DEFAULTS["max_length"],
            batch_size=o.batch_size if o.batch_size is not None else 8,
            device=o.device,
            dtype=o.dtype if o.dtype is not None else "auto",
            label=0,
        )
        self.options = o
        self.base, self.lora = o.base or DEFAULTS["base"], o.lora or DEFAULTS["lora"]
        self.tokenizer_id = o.tokenizer or self.base
        self.name = name
        self.merge = o.merge if o.merge is not None else True
        self._pair: tuple[str, tuple[list[int], list[int], list[int]]] | None = None
        self._checked = False
        self._library_reads_files = False

    def format_pair(self, query: str, doc: str) -> tuple[str, str]:
        return f"query: {query}", f"document: {doc}"

    def encode_pairs(self, firsts: list[str], seconds: list[str]) -> dict[str, list[list[int]]]:
        """The pairs' ids, built by r2med from the tokenizer's pair template (its files agreeing), checked on the
        first pair against the tokenizer's own call ``tokenizer(q, p, truncation=True, max_length=...)``."""
        tok = self.tokenizer
        if self._pair is None:
            template, tokens, files = settled_pair(self.tokenizer_id, tok, FRAMING.tokens, FRAMING.follows_tokenizer)
            self._pair = (template, tokens)
            self.used["framing"] = {
                "framing": template,
                "tokens": {k: list[JsonValue](v) for k, v in zip(("before", "between", "after"), tokens)},
                "tokenizer_files": files.describe(),
                "built_by": "r2med",
            }
            self._library_reads_files = files.loaded == template
        template, tokens = self._pair
        ids = pair_ids(tok, list(zip(firsts, seconds)), tokens, self.max_length, template)
        if ids and not self._checked:
            self._check_first(firsts[0], seconds[0], ids[0])
        return {"input_ids": ids}

    def _check_first(self, first: str, second: str, built: Sequence[int]) -> None:
        """The first pair's ids against the tokenizer's own call: equal wherever this library reads the files'
        template (elsewhere the files' ids are built, as the published run's library did; noted)."""
        own = list(self.tokenizer(first, second, truncation=True, max_length=self.max_length)["input_ids"])
        self._checked = True
        if own == list(built):
            return
        if self._library_reads_files:
            raise R2MedError(
                f"{self.name}: r2med's ids of the first pair differ from the tokenizer's own call "
                f"({len(built)} vs {len(own)} tokens); not scored"
            )
        log.info("%s: this transformers frames pairs otherwise; r2med builds %s (the files')", self.name, self._pair)

    def _load(self) -> tuple[ScoringModel, PreTrainedTokenizerBase]:
        require_torch()
        try:
            from peft import PeftModel
        except ImportError:
            raise MissingExtraError("peft", "rerank", "RankLLaMA reranking") from None
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        ensure_available(self.base)
        ensure_available(self.lora, probe="adapter_config.json")
        try:
            tokenizer = AutoTokenizer.from_pretrained(self.tokenizer_id)
            base, base_gaps = pretrained_with_gaps(
                AutoModelForSequenceClassification.from_pretrained, self.base, num_labels=1, **self.load_kwargs()
            )
        except (OSError, ValueError) as exc:
            raise R2MedError(f"cannot load RankLLaMA base model {self.base!r}: {_first_line(exc)}") from None
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.unk_token or tokenizer.eos_token
        tokenizer.padding_side = "right"
        base.config.pad_token_id = tokenizer.pad_token_id
        try:
            model = load_adapter(
                self.lora,
                f"RankLLaMA (base {self.base!r}) adapter",
                base_gaps,
                lambda: PeftModel.from_pretrained(base, self.lora),
            )
        except (OSError, ValueError) as exc:
            raise R2MedError(f"cannot load RankLLaMA adapter {self.lora!r}: {_first_line(exc)}") from None
        if self.merge:
            model = model.merge_and_unload()
        return model, tokenizer

    def config(self) -> JsonObject:
        return {
            "reranker": self.name,
            "base": self.base,
            "lora": self.lora,
            "tokenizer": self.tokenizer_id,
            "max_length": self.max_length,
            "kind": "rankllama",
        }


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


#: The paper loads RankLLaMA's base model in fp16 (R2MED src/utils.py:861): r2med's ``auto`` on a GPU.
register_reranker(
    RerankerMeta(
        "rankllama",
        lambda options: RankLlamaReranker(options=options),
        "castorini/rankllama-v1-7b-lora-passage on Llama-2-7b (peft LoRA; paper)",
        options=RankLlamaOptions,
        packages=("torch", "transformers", "peft"),
        needs_gpu="7B",
        paper_dtype="auto",
        weights=(("base", "config.json"), ("lora", "adapter_config.json")),
        framing=FRAMING,
        published_options={  # the model card's, as the paper ran it
            "base": DEFAULTS["base"],
            "lora": DEFAULTS["lora"],
            "max_length": DEFAULTS["max_length"],
            "tokenizer": DEFAULTS["base"],
        },
    )
)
