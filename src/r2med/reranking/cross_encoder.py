"""Pointwise cross-encoder rerankers: bge-reranker, monoBERT and any sequence-classification model.

A cross-encoder reads ``(query, document)`` together and outputs logits; the score is the
single logit of a one-label model (bge-reranker-v2-m3, sentence-transformers ``CrossEncoder``
folders) or the logit of the relevant class (index 1) of a two-label model (monoBERT), as the
R2MED paper scores them.  Inference is batched over pairs sorted by token length (little
padding), on the GPU when one is present, with a progress bar.  Precision: fp32 by default, as
the paper's code loads these models (``AutoModelForSequenceClassification.from_pretrained(path)``
with no dtype: R2MED ``src/utils.py`` line 866 at commit 45cbac5); ``dtype`` chooses fp16 / bf16,
or ``auto`` (half precision on a GPU, fp32 on CPU; RankLLaMA's default, as the paper loads its
base model in fp16, ``src/utils.py`` line 861).
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, NotRequired, Protocol, TypedDict

import numpy as np
from huggingface_hub import try_to_load_from_cache

from ..data.hub import HubUnavailable
from ..data.hub import probe as hub_probe
from ..errors import MissingExtraError, R2MedError
from ..infra import progress
from ..infra.json_types import JsonObject, JsonValue
from ..infra.weights import load_pretrained
from ..retrieval.encoders import FramingRecord, canonical_dtype, model_max_length, resolve_device, resolve_dtype
from ..retrieval.encoders.hf import WeightedModel, check_model_source, dtype_kwargs, weights_dtype
from ..typed.options import AnyCrossEncoderOptions, CrossEncoderOptions
from ..typed.parse import RerankerOptions
from .base import Candidates, RerankerMeta, options_or_keywords, register_reranker

if TYPE_CHECKING:
    import torch
    from transformers import PreTrainedTokenizerBase

log = logging.getLogger(__name__)


class ModelOutput(Protocol):
    """What a forward pass of a loaded model gives r2med: its logits (rows: the batch)."""

    logits: torch.Tensor


class ScoringModel(WeightedModel, Protocol):
    """What r2med calls on a loaded ``transformers`` model (a sequence classifier, a causal LM, a merged peft one):
    moved and put in eval mode once, its ``forward``'s parameters read, then called on each padded batch."""

    @property
    def forward(self) -> Callable[..., object]: ...

    # ``to`` and ``eval`` as read-only callables: transformers wraps ``to`` (``functools.wraps``, a signature the
    # checker cannot call) and torch leaves ``eval`` unannotated; r2med calls ``to(device=, dtype=)`` and ``eval()``
    @property
    def to(self) -> Callable[..., object]: ...

    @property
    def eval(self) -> Callable[[], object]: ...

    def __call__(self, **inputs: torch.Tensor | int) -> ModelOutput: ...


class CrossEncoderPreset(TypedDict):
    """A paper cross-encoder's checkpoint, input length and (when not its only logit) the relevant label."""

    model: str
    max_length: int
    label: NotRequired[int]


PRESETS: dict[str, CrossEncoderPreset] = {
    "bge-reranker": {"model": "BAAI/bge-reranker-v2-m3", "max_length": 512},
    "monobert": {"model": "castorini/monobert-large-msmarco", "max_length": 512, "label": 1},
}


def require_torch() -> ModuleType:
    """The torch module (transformers must import too), or a one-line error naming the extra."""
    try:
        import torch
        import transformers  # noqa: F401
    except ImportError as exc:
        raise MissingExtraError(exc.name or "torch", "dense", "cross-encoder reranking") from None
    return torch


def ensure_available(model: str, revision: str | None = None, probe: str = "config.json") -> None:
    """Fail at once, in one line, when ``model`` is neither a local folder, cached, nor downloadable."""

    if Path(model).expanduser().exists():
        return
    check_model_source(model)
    try:
        if isinstance(try_to_load_from_cache(model, probe, revision=revision), str):
            return
    except Exception:  # a malformed id: let the loader report it
        return

    try:  # one request through huggingface_hub (its offline mode, endpoint, proxies): fail fast when unreachable
        hub_probe(model, probe, revision, repo_type="model")
    except HubUnavailable as exc:
        raise R2MedError(
            f"model {model!r} is not in the Hugging Face cache and the hub cannot be reached "
            f"({exc.reason}); download it first (hf download {model}) or pass a local folder"
        ) from None


class PointwiseReranker:
    """Shared machinery: (query, doc) pairs -> tokenized -> length-sorted batches -> scores."""

    name = "pointwise"

    def __init__(self, *, max_length: int, batch_size: int, device: str | None, dtype: str, label: int | None = None):
        """The values each reranker resolved from its options (its own defaults: declared by each subclass)."""
        if batch_size < 1:
            raise R2MedError("--batch-size must be at least 1")
        self.max_length = int(max_length)
        self.batch_size = int(batch_size)
        self.device_option = device
        self.dtype_option = dtype
        self.label = label
        self._model: ScoringModel | None = None  # a transformers model and tokenizer, once loaded
        self._tokenizer: PreTrainedTokenizerBase | None = None
        self._dtype: torch.dtype | None = None  # the torch dtype the weights load in (resolved by load())
        #: what the scores were made with, for ``metrics.json``: the dtype read back from the loaded weights,
        #: the special tokens around each pair where r2med builds them
        self.used: JsonObject = {}

    @property
    def model(self) -> ScoringModel:
        """The loaded model (:meth:`load`)."""
        if self._model is None:
            raise R2MedError(f"{self.name}: the model is not loaded")
        return self._model

    @property
    def tokenizer(self) -> PreTrainedTokenizerBase:
        """The loaded tokenizer (:meth:`load`)."""
        if self._tokenizer is None:
            raise R2MedError(f"{self.name}: the tokenizer is not loaded")
        return self._tokenizer

    # -- subclasses provide these --------------------------------------------------------------
    def _load(self) -> tuple[ScoringModel, PreTrainedTokenizerBase]:  # pragma: no cover - abstract
        raise NotImplementedError

    def format_pair(self, query: str, doc: str) -> tuple[str, str]:
        return query, doc

    def encode_pairs(self, firsts: list[str], seconds: list[str]) -> dict[str, list[list[int]]]:
        """The token ids (and type ids) of each pair, unpadded: the tokenizer's own pair call by default."""
        encoded = self.tokenizer(firsts, seconds, truncation=True, max_length=self.max_length, padding=False)
        return {k: list(v) for k, v in encoded.items()}

    def load_kwargs(self) -> dict[str, torch.dtype | None]:
        """The precision keyword for ``from_pretrained`` (``dtype=``): every loader gets the one it runs in."""
        key = next(iter(dtype_kwargs("fp32")))
        return {key: self._dtype}

    # -- shared --------------------------------------------------------------------------------
    def load(self) -> None:
        if self._model is None:
            self.device = resolve_device(self.device_option)
            if self.dtype_option == "auto":  # half precision on a GPU (fp16: bf16's 8-bit mantissa ties more)
                dtype = require_torch().float16 if self.device.startswith("cuda") else require_torch().float32
            elif canonical_dtype(self.dtype_option) in ("fp16", "bf16", "fp32"):
                dtype = resolve_dtype(self.dtype_option, self.device)
            else:
                raise R2MedError(f"{self.name}: dtype {self.dtype_option!r} is not one of fp32, fp16, bf16, auto")
            self._dtype = dtype
            model, tokenizer = self._load()
            model.to(device=self.device, dtype=dtype)
            model.eval()
            loaded, wanted = weights_dtype(model), str(dtype).replace("torch.", "")
            if loaded != wanted:
                raise R2MedError(f"{self.name}: its weights are in {loaded}, not the {wanted} it runs in")
            self.used["weights"] = loaded
            self._model, self._tokenizer = model, tokenizer
            limit = model_max_length(model, tokenizer)
            if limit is not None and limit < self.max_length:
                log.info(
                    "%s: the model reads at most %d tokens; max_length %d lowered", self.name, limit, self.max_length
                )
                self.max_length = limit
            accepted = inspect.signature(model.forward).parameters
            self._input_keys = [k for k in ("input_ids", "attention_mask", "token_type_ids") if k in accepted]

    def _select(self, logits: torch.Tensor) -> torch.Tensor:
        """One score per row: the only logit, or the logit of the relevant class."""
        n = logits.shape[-1]
        if self.label is not None:
            if not 0 <= self.label < n:
                raise R2MedError(f"{self.name}: label {self.label} out of range for a model with {n} outputs")
            return logits[:, self.label]
        if n == 1:
            return logits[:, 0]
        if n == 2:
            return logits[:, 1]
        raise R2MedError(f"{self.name}: the model has {n} output labels; say which one means relevant (label=...)")

    def score_pairs(self, pairs: Sequence[tuple[str, str]], description: str | None = None) -> np.ndarray:
        """Scores of ``(query, doc)`` pairs, in the order given."""
        if not pairs:
            return np.zeros(0, dtype=np.float64)
        torch = require_torch()
        self.load()
        tok, model = self.tokenizer, self.model
        firsts, seconds = zip(*(self.format_pair(q, d) for q, d in pairs))
        encoded = self.encode_pairs(list(firsts), list(seconds))
        lengths = np.array([len(ids) for ids in encoded["input_ids"]])
        order = np.argsort(-lengths, kind="stable")  # longest first: a memory error shows up at once
        keys = [k for k in self._input_keys if k in encoded]
        scores = np.empty(len(pairs), dtype=np.float64)
        with progress.task(description or self.name, total=len(pairs), unit="pairs") as bar, torch.inference_mode():
            for start in range(0, len(order), self.batch_size):
                idx = order[start : start + self.batch_size]
                features = [{k: encoded[k][i] for k in keys} for i in idx]
                padded = tok.pad(features, padding=True, return_tensors="pt")
                batch = {k: v.to(self.device) for k, v in padded.items()}
                logits = model(**batch).logits
                scores[idx] = self._select(logits).float().cpu().numpy()
                bar.advance(len(idx))
        return scores

    def rerank(
        self, queries: Mapping[str, str], candidates: Candidates, corpus: Mapping[str, str]
    ) -> dict[str, dict[str, float]]:
        pairs, keys = [], []
        for qid, docs in candidates.items():
            for did, _ in docs:
                pairs.append((queries[qid], corpus[did]))
                keys.append((qid, did))
        scores = self.score_pairs(pairs, description=f"{self.name}: reranking")
        out: dict[str, dict[str, float]] = {qid: {} for qid in candidates}
        for (qid, did), s in zip(keys, scores):
            out[qid][did] = float(s)
        return out


class CrossEncoderReranker(PointwiseReranker):
    """A ``transformers`` sequence-classification model (hub id or local folder) as a reranker.

    Its options are :class:`~r2med.typed.options.CrossEncoderOptions`: ``options`` as parsed (what the registry's
    factory passes), or the keywords, parsed here once (``model`` required unless ``preset`` names one of
    :data:`PRESETS`, whose checkpoint, length and label stand for what is not set)."""

    def __init__(
        self,
        model: str | None = None,
        name: str | None = None,
        tokenizer: str | None = None,
        model_revision: str | None = None,
        max_length: int | None = None,
        batch_size: int | None = None,
        device: str | None = None,
        dtype: str | None = None,
        label: int | None = None,
        *,
        options: RerankerOptions | None = None,
        preset: str | None = None,
    ):
        if preset is not None and preset not in PRESETS:
            raise R2MedError(f"unknown cross-encoder preset {preset!r}; choose from: {', '.join(PRESETS)}")
        keywords = {
            "model": model,
            "tokenizer": tokenizer,
            "model_revision": model_revision,
            "max_length": max_length,
            "batch_size": batch_size,
            "device": device,
            "dtype": dtype,
            "label": label,
        }
        # keywords without a preset must name the model; an options object is read as any cross-encoder's
        kind = AnyCrossEncoderOptions if preset is None and options is None else CrossEncoderOptions
        o = options_or_keywords(kind, options, keywords, "CrossEncoderReranker()")
        own = PRESETS[preset] if preset is not None else None
        super().__init__(
            max_length=o.max_length if o.max_length is not None else own["max_length"] if own else 512,
            batch_size=o.batch_size if o.batch_size is not None else 32,
            device=o.device,
            dtype=o.dtype if o.dtype is not None else "fp32",
            label=o.label if o.label is not None else own.get("label") if own else None,
        )
        self.options = o
        self.model_id: str = o.model or (own["model"] if own else "")
        if not self.model_id:
            raise R2MedError("a cross-encoder needs model=<hub id or local folder>")
        self.tokenizer_id = o.tokenizer or self.model_id
        self.model_revision = o.model_revision  # the model's commit: from_pretrained(revision=...)
        self.name = name or preset or self.model_id

    def _load(self) -> tuple[ScoringModel, PreTrainedTokenizerBase]:
        require_torch()
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        ensure_available(self.model_id, self.model_revision)
        try:
            tokenizer = AutoTokenizer.from_pretrained(self.tokenizer_id, revision=self.model_revision)
            model = load_pretrained(
                AutoModelForSequenceClassification.from_pretrained,
                self.model_id,
                "reranker model",
                revision=self.model_revision,
                **self.load_kwargs(),
            )
        except (OSError, ValueError) as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise R2MedError(f"cannot load reranker model {self.model_id!r}: {first}") from None
        if tokenizer.pad_token is None:  # decoder-style classifiers (Llama, Qwen...) ship without one
            tokenizer.pad_token = tokenizer.unk_token or tokenizer.eos_token
            tokenizer.padding_side = "right"
        if getattr(model.config, "pad_token_id", None) is None:
            model.config.pad_token_id = tokenizer.pad_token_id
        return model, tokenizer

    def config(self) -> JsonObject:
        return {
            "reranker": self.name,
            "model": self.model_id,
            "tokenizer": self.tokenizer_id,
            "model_revision": self.model_revision,
            "max_length": self.max_length,
            "label": self.label,
            "dtype": self.dtype_option,
            "kind": "cross-encoder",
        }


def _preset(name: str) -> Callable[[RerankerOptions], CrossEncoderReranker]:
    def factory(options: RerankerOptions) -> CrossEncoderReranker:
        return CrossEncoderReranker(options=options, preset=name)

    return factory


#: The precision the paper's code ran its cross-encoders in: R2MED src/utils.py:866 loads bge-reranker and
#: monoBERT without a dtype, i.e. fp32.
#: Their pair framing is their tokenizers' own template, whose files agree (no add_eos_token setting to drift).
PAIR_FRAMING = {
    "bge-reranker": FramingRecord(
        "<s> {query} </s> </s> {document} </s>",
        "tokenizer",
        (
            "R2MED src/utils.py:866 (tokenizer(query, doc) pairs); the XLM-RoBERTa template of "
            "BAAI/bge-reranker-v2-m3: "
            "<s> query </s></s> doc </s>"
        ),
        checked=False,
    ),
    "monobert": FramingRecord(
        "[CLS] {query} [SEP] {document} [SEP]",
        "tokenizer",
        (
            "R2MED src/utils.py:866 (tokenizer(query, doc) pairs); the BERT template of "
            "castorini/monobert-large-msmarco: "
            "[CLS] query [SEP] doc [SEP]"
        ),
        checked=False,
    ),
}


def published_options(name: str) -> dict[str, JsonValue]:
    """What the paper ran preset ``name`` with (R2MED src/utils.py:866-880): its checkpoint and tokenizer, its
    length, and the logit scored -- a one-label model's single logit is label 0, monoBERT's relevant class 1."""
    preset = PRESETS[name]
    return {
        "model": preset["model"],
        "max_length": preset["max_length"],
        "tokenizer": preset["model"],
        "label": preset.get("label", 0),
    }


register_reranker(
    RerankerMeta(
        "bge-reranker",
        _preset("bge-reranker"),
        "BAAI/bge-reranker-v2-m3 cross-encoder (paper)",
        options=CrossEncoderOptions,
        paper_dtype="fp32",
        framing=PAIR_FRAMING["bge-reranker"],
        published_options=published_options("bge-reranker"),
    )
)
register_reranker(
    RerankerMeta(
        "monobert",
        _preset("monobert"),
        "castorini/monobert-large-msmarco, logit of the relevant class (paper)",
        options=CrossEncoderOptions,
        paper_dtype="fp32",
        framing=PAIR_FRAMING["monobert"],
        published_options=published_options("monobert"),
    )
)
register_reranker(
    RerankerMeta(
        "cross-encoder",
        lambda options: CrossEncoderReranker(options=options),
        "any sequence-classification model: model=<hub id or folder>",
        options=AnyCrossEncoderOptions,
    )
)
