"""RankLLaMA: a LoRA adapter (peft) on a Llama base model with a one-logit classification head.

As in castorini/rankllama-v1-7b-lora-passage: the base model (meta-llama/Llama-2-7b-hf) is loaded
as a sequence-classification model with one label, the adapter is applied and merged, and each
pair is fed as ``"query: {q}"`` / ``"document: {d}"`` (max 1024 tokens); the score is the logit.
The pad token is Llama's ``unk`` (Llama has none of its own), padding on the right, so the
classification head reads the last real token.
"""

from __future__ import annotations

from typing import Any, TypedDict

from ..errors import MissingExtraError, R2MedError
from ..infra.weights import load_adapter, pretrained_with_gaps
from ..retrieval.encoders.base import FramingRecord
from ..spec.options import RankLlamaOptions
from .base import RerankerMeta, register_reranker
from .cross_encoder import PointwiseReranker, ensure_available, require_torch


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
    def __init__(
        self,
        base: str = DEFAULTS["base"],
        lora: str = DEFAULTS["lora"],
        tokenizer: str | None = None,
        name: str = "rankllama",
        max_length: int = DEFAULTS["max_length"],
        batch_size: int = 8,
        device: str | None = None,
        dtype: str = "auto",
        merge: bool = True,
    ):
        super().__init__(max_length=max_length, batch_size=batch_size, device=device, dtype=dtype, label=0)
        self.base, self.lora, self.tokenizer_id = base, lora, tokenizer or base
        self.name = name
        self.merge = merge

    def format_pair(self, query: str, doc: str) -> tuple[str, str]:
        return f"query: {query}", f"document: {doc}"

    def _load(self) -> tuple[Any, Any]:
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
            base, base_gaps = pretrained_with_gaps(AutoModelForSequenceClassification, self.base, num_labels=1)
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

    def config(self) -> dict[str, Any]:
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
        lambda **o: RankLlamaReranker(**o),
        "castorini/rankllama-v1-7b-lora-passage on Llama-2-7b (peft LoRA; paper)",
        options=RankLlamaOptions,
        packages=("torch", "transformers", "peft"),
        needs_gpu="7B",
        paper_dtype="auto",
        weights=(("base", "config.json"), ("lora", "adapter_config.json")),
        framing=FramingRecord(
            True,
            False,
            "tokenizer",
            (
                "R2MED src/utils.py:861 (the pair tokenized as is); ASSUMED: the Llama-2 template "
                "<s> query: q <s> document: d, no EOS (meta-llama/Llama-2-7b-hf: add_bos_token true, "
                "add_eos_token false, as its tokenizer.json; whether the castorini card ends the "
                "document with a literal </s> was not checked here)"
            ),
            checked=False,
        ),
    )
)
