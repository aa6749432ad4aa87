"""Text encoders for dense retrieval: the ``Encoder`` protocol, its settings and implementations.

An encoder turns queries and documents into float32 vectors (``encode_queries``,
``encode_corpus``).  A query may be a tuple ``(query, expansion, ...)``: every part is
embedded and the vectors are averaged -- the R2MED paper's rule for generation-augmented
queries -- so the expansion code only supplies texts.

Implementations (all heavy imports happen inside methods):

* :class:`TransformersEncoder` -- plain ``AutoModel`` with ``cls`` / ``mean`` / ``last-token``
  pooling (optionally an EOS token appended and left padding, as BMRetriever does), and an
  optional separate query model (MedCPT's Query/Article encoders).
* :class:`SentenceTransformerEncoder` -- any sentence-transformers model (INSTRUCTOR models
  with the instruction excluded from pooling).
* :class:`RemoteCodeEncoder` -- ``trust_remote_code`` models that ship their own
  ``encode(texts, instruction=..., max_length=...)`` (NV-Embed-v2), behind an explicit opt-in.
* :class:`GritLMEncoder` -- GritLM through the ``gritlm`` package.
* API embedders (OpenAI, Voyage) live in :mod:`r2med.retrieval.api`.

Speed: texts are tokenized once, sorted by length and cut into batches by a token budget
(``batch_size * max_length`` padded tokens per batch), then results are put back in the
original order; outputs stay on the device until the end of a call (no per-batch copies).

Defaults come from the model itself (the loading library's defaults): a model with a
``modules.json`` (a folder, or a hub id found in the Hugging Face cache) is encoded as
``SentenceTransformer.encode_query`` / ``encode_document`` would (its max length, pooling,
normalisation and prompts); a plain ``AutoModel`` reads its max length from its tokenizer and
config; weights load in fp32 unless ``dtype`` says otherwise (see :data:`DTYPES`).
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ..errors import MissingExtraError, R2MedError

log = logging.getLogger(__name__)

POOLINGS = ("cls", "mean", "last-token")
#: Weight precision: ``fp32`` / ``fp16`` / ``bf16`` load the weights in that type; ``fp16-autocast``
#: keeps fp32 weights and runs the forward pass under CUDA fp16 autocast (BMRetriever in the
#: paper's code; a no-op on CPU, as ``torch.cuda.amp.autocast`` is); ``auto`` is the checkpoint's
#: own dtype (``from_pretrained(dtype="auto")``; GritLM in the paper's code).
DTYPES = ("fp32", "fp16", "bf16", "fp16-autocast", "auto")
_DTYPE_ALIASES = {"float32": "fp32", "float16": "fp16", "half": "fp16", "bfloat16": "bf16"}
LOADERS = ("auto", "transformers", "sentence-transformers", "remote-code", "gritlm", "openai", "voyage")
QueryInput = str | tuple[str, ...]


@dataclass(frozen=True)
class EncoderSettings:
    """Everything that changes a vector (the embedding cache is keyed by ``asdict(settings)``).

    Runtime knobs that do not change vectors (batch size, device) are not part of it.
    ``model`` encodes documents (and queries unless ``query_model`` is set).
    """

    model: str
    loader: str = "auto"
    query_model: str | None = None
    revision: str | None = None
    pooling: str = "mean"
    normalize: bool = False
    #: tokens per text; None: the model's own (sentence-transformers ``max_seq_length``, else the
    #: tokenizer's / config's limit)
    max_length: int | None = None
    query_max_length: int | None = None
    #: None: the model's own prompt (sentence-transformers ``prompts``), else none; "" forces none
    query_instruction: str | None = None
    doc_instruction: str | None = None
    #: instruction put before expansion texts of a (query, expansion) pair: "none" or "query"
    expansion_instruction: str = "none"
    append_eos: bool = False
    #: encode documents as a (empty title, text) pair, as MedCPT's Article encoder expects
    doc_as_pair: bool = False
    trust_remote_code: bool = False
    dtype: str = "fp32"
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.loader not in LOADERS:
            raise R2MedError(f"unknown encoder loader {self.loader!r}; choose from {', '.join(LOADERS)}")
        if self.pooling not in POOLINGS:
            raise R2MedError(f"unknown pooling {self.pooling!r}; choose from {', '.join(POOLINGS)}")
        if self.max_length is not None and self.max_length < 2:
            raise R2MedError(f"max_length must be at least 2 (got {self.max_length})")
        object.__setattr__(self, "dtype", canonical_dtype(self.dtype))
        if self.expansion_instruction not in ("none", "query"):
            raise R2MedError("expansion_instruction must be 'none' or 'query'")

    def key(self) -> dict[str, Any]:
        """The vector-defining settings as a JSON-able dict (for fingerprints and run configs)."""
        return asdict(self)

    def with_(self, **changes: Any) -> EncoderSettings:
        return replace(self, **changes)


@runtime_checkable
class Encoder(Protocol):
    """What dense retrieval (and the Ray scale-out) needs from a model.

    ``encode_corpus(texts)`` and ``encode_queries(queries)`` return ``float32`` arrays of
    shape ``(len(texts), dim)`` in input order; the document instruction / query instruction
    are added by the encoder.  ``config()`` is everything that changes a vector.
    """

    settings: EncoderSettings

    def encode_queries(self, queries: Sequence[QueryInput], batch_size: int | None = None) -> np.ndarray: ...

    def encode_corpus(self, texts: Sequence[str], batch_size: int | None = None) -> np.ndarray: ...

    def config(self) -> dict[str, Any]: ...


# -- helpers shared by encoders ------------------------------------------------------------------

def plan_batches(lengths: Sequence[int], batch_size: int, token_budget: int | None = None,
                 max_batch: int | None = None) -> list[np.ndarray]:
    """Cut texts into batches: longest first, each batch holding at most ``token_budget`` padded tokens.

    ``lengths`` are token counts; the budget defaults to ``batch_size * max(lengths)`` (so the
    longest texts go ``batch_size`` at a time and short ones in bigger batches, up to
    ``max_batch`` = ``8 * batch_size``).  Returns index arrays into the original order.
    """
    n = len(lengths)
    if n == 0:
        return []
    lens = np.maximum(np.asarray(lengths, dtype=np.int64), 1)
    budget = token_budget or int(batch_size * lens.max())
    cap = max_batch or 8 * batch_size
    order = np.argsort(-lens, kind="stable")
    batches, start = [], 0
    while start < n:
        longest = int(lens[order[start]])  # sorted: the first text of a batch is its longest
        size = max(1, min(cap, budget // longest, n - start))
        batches.append(order[start:start + size])
        start += size
    return batches


def fixed_batches(n: int, batch_size: int) -> list[np.ndarray]:
    """Batches in input order (what the paper's code does); for comparison and API calls."""
    return [np.arange(s, min(s + batch_size, n)) for s in range(0, n, batch_size)]


def average_parts(parts: list[np.ndarray]) -> np.ndarray:
    """The paper's rule for a (query, expansion) pair: the plain mean of the part embeddings."""
    return np.mean(np.stack(parts), axis=0).astype(np.float32)


def resolve_device(device: str | None = None) -> str:
    """``auto``/None -> ``cuda`` when a GPU is visible, else ``cpu``; anything else is passed to torch."""
    import torch

    if device in (None, "", "auto"):
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise R2MedError(f"--device {device} was asked for but no CUDA GPU is visible; use --device cpu")
    return device


def canonical_dtype(dtype: str) -> str:
    """``float16`` -> ``fp16`` etc.; an unknown name is a one-line error."""
    name = _DTYPE_ALIASES.get(str(dtype).lower(), str(dtype).lower())
    if name not in DTYPES:
        raise R2MedError(f"unknown dtype {dtype!r}; choose from {', '.join(DTYPES)}")
    return name


def resolve_dtype(dtype: str, device: str | None = None):
    """The ``dtype`` argument for ``from_pretrained``: a torch dtype, or ``"auto"`` (the checkpoint's).

    ``fp16-autocast`` loads fp32 weights (the autocast is :func:`autocast_context`'s job).
    """
    import torch

    name = canonical_dtype(dtype)
    if name == "auto":
        return "auto"
    return {"fp32": torch.float32, "fp16-autocast": torch.float32, "fp16": torch.float16,
            "bf16": torch.bfloat16}[name]


def autocast_context(dtype: str, device: str):
    """CUDA fp16 autocast for ``fp16-autocast`` on a GPU (as ``torch.cuda.amp.autocast()``), else nothing."""
    import contextlib

    if canonical_dtype(dtype) == "fp16-autocast" and str(device).startswith("cuda"):
        import torch

        return torch.autocast("cuda", dtype=torch.float16)
    return contextlib.nullcontext()


def model_max_length(model, tokenizer) -> int | None:
    """The most tokens the model can read: its tokenizer's limit and its position embeddings
    (RoBERTa-style models lose 2 positions to the padding offset); None when neither says."""
    limits = []
    positions = getattr(getattr(model, "config", None), "max_position_embeddings", None)
    if isinstance(positions, int) and positions > 0:
        offset = 2 if getattr(model.config, "model_type", "") in ("roberta", "xlm-roberta", "camembert") else 0
        limits.append(positions - offset)
    tok_limit = getattr(tokenizer, "model_max_length", None)
    if isinstance(tok_limit, int) and 0 < tok_limit < 1_000_000:
        limits.append(tok_limit)
    return min(limits) if limits else None


def check_model_source(model: str) -> None:
    """A path-looking model name must exist; a hub id (``org/name``) is checked when it is loaded."""
    if Path(model).expanduser().exists():
        return
    if model.startswith((".", "/", "~")) or model.count("/") > 1 or "\\" in model:
        raise R2MedError(f"model path {model!r} does not exist; pass an existing folder or a hub id")


def _load_error(model: str, exc: Exception) -> R2MedError:
    offline = os.environ.get("HF_HUB_OFFLINE") == "1"
    hint = ("the hub is offline (HF_HUB_OFFLINE=1): download it first or pass a local folder"
            if offline else "check the hub id / path and your network")
    return R2MedError(f"cannot load model {model!r} ({type(exc).__name__}): {hint}")


class _Progress:
    """Per-call progress, logged at DEBUG level.  (Rich bars cannot nest inside the CLI's live
    task bar, so long encodings report through the embedding cache's per-chunk INFO log.)"""

    def __init__(self, total: int, description: str):
        self.total, self.description, self.done = total, description, 0
        self.start = time.perf_counter()

    def __enter__(self) -> _Progress:
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.total and not exc[0]:
            log.debug("%s: %d in %.1fs", self.description, self.total, time.perf_counter() - self.start)

    def add_task(self, *args: Any, **kwargs: Any) -> int:
        return 0

    def advance(self, task: int, n: int) -> None:
        self.done += n


def _progress(total: int, description: str) -> _Progress:
    return _Progress(total, description)


class BaseEncoder:
    """Shared logic: instructions, (query, expansion) averaging; subclasses implement ``_embed``."""

    settings: EncoderSettings
    batch_size: int = 32

    def __init__(self, settings: EncoderSettings, device: str | None = None, batch_size: int = 32,
                 token_budget: int | None = None):
        self.settings = settings
        self.batch_size = batch_size
        self.token_budget = token_budget
        self.device = resolve_device(device)
        self._model = None
        self.texts_encoded = 0  # counter (tests, logs): texts that went through a model

    def config(self) -> dict[str, Any]:
        return self.settings.key()

    def _embed(self, texts: Sequence[str], role: str, batch_size: int) -> np.ndarray:
        """Embed texts (instruction already decided by ``role``: query / expansion / doc)."""
        raise NotImplementedError

    def instruction(self, role: str) -> str:
        """The text put before each text of ``role`` (``""`` when the settings give none)."""
        s = self.settings
        if role == "doc":
            return s.doc_instruction or ""
        if role == "expansion" and s.expansion_instruction == "none":
            return ""
        return s.query_instruction or ""

    def max_tokens(self, role: str) -> int | None:
        """The token limit for ``role`` (None: the model's own)."""
        s = self.settings
        return (s.query_max_length or s.max_length) if role != "doc" else s.max_length

    def encode_corpus(self, texts: Sequence[str], batch_size: int | None = None) -> np.ndarray:
        return self._embed(list(texts), "doc", batch_size or self.batch_size)

    def encode_queries(self, queries: Sequence[QueryInput], batch_size: int | None = None) -> np.ndarray:
        bs = batch_size or self.batch_size
        items = [q if isinstance(q, tuple) else (q,) for q in queries]
        if not items:
            return np.zeros((0, 0), dtype=np.float32)
        if any(len(q) == 0 for q in items):
            raise R2MedError("a query tuple is empty; give at least the query text")
        width = max(len(q) for q in items)
        if width == 1:
            return self._embed([q[0] for q in items], "query", bs)
        # embed every part (query with its instruction, expansions per `expansion_instruction`)
        first = self._embed([q[0] for q in items], "query", bs)
        out = first.astype(np.float64)
        counts = np.ones(len(items))
        for part in range(1, width):
            rows = [i for i, q in enumerate(items) if len(q) > part]
            emb = self._embed([items[i][part] for i in rows], "expansion", bs)
            out[rows] += emb
            counts[rows] += 1
        return (out / counts[:, None]).astype(np.float32)


# -- plain transformers --------------------------------------------------------------------------

class TransformersEncoder(BaseEncoder):
    """``AutoModel`` + pooling; a separate query model when ``settings.query_model`` is set."""

    def __init__(self, settings: EncoderSettings, device: str | None = None, batch_size: int = 32,
                 token_budget: int | None = None):
        super().__init__(settings, device, batch_size, token_budget)
        self._models: dict[str, tuple[Any, Any]] = {}
        self._limits: dict[str, int] = {}

    def _load(self, name: str) -> tuple[Any, Any]:
        if name in self._models:
            return self._models[name]
        try:
            import torch
            from transformers import AutoModel, AutoTokenizer
        except ImportError as exc:  # pragma: no cover - extra missing
            raise MissingExtraError(exc.name or "transformers", "dense", "dense retrieval") from exc
        check_model_source(name)
        s = self.settings
        kwargs = {"revision": s.revision, "trust_remote_code": s.trust_remote_code}
        try:
            tok = AutoTokenizer.from_pretrained(name, **kwargs)
            model = AutoModel.from_pretrained(name, dtype=resolve_dtype(s.dtype, self.device), **kwargs)
        except (OSError, ValueError) as exc:
            raise _load_error(name, exc) from exc
        if s.pooling == "last-token" or s.append_eos:
            if tok.pad_token is None:
                tok.pad_token = tok.eos_token
            tok.padding_side = "left"
        if s.append_eos and tok.eos_token_id is None:
            raise R2MedError(f"model {name!r} has no EOS token; it cannot be used with append_eos")
        limit = model_max_length(model, tok)
        if limit is None and s.max_length is None:
            raise R2MedError(f"model {name!r} states no maximum length (tokenizer or max_position_embeddings); "
                             "pass --max-length")
        self._limits[name] = limit or 0
        model.eval().to(self.device)
        if self.device == "cuda" and torch.cuda.device_count() > 1:
            model = torch.nn.DataParallel(model)
        self._models[name] = (tok, model)
        return tok, model

    def _tokenize(self, tok, texts: list[str], role: str, max_length: int) -> dict[str, list]:
        s = self.settings
        if role == "doc" and s.doc_as_pair:
            enc = tok([""] * len(texts), texts, truncation="longest_first", max_length=max_length,
                      padding=False, return_attention_mask=False)
        elif s.append_eos:
            enc = tok(texts, truncation=True, max_length=max_length - 1, padding=False,
                      return_attention_mask=False, return_token_type_ids=False)
            enc = {"input_ids": [ids + [tok.eos_token_id] for ids in enc["input_ids"]]}
        else:
            enc = tok(texts, truncation=True, max_length=max_length, padding=False, return_attention_mask=False)
        return {k: list(v) for k, v in enc.items()}

    def _embed(self, texts: Sequence[str], role: str, batch_size: int) -> np.ndarray:
        import torch

        s = self.settings
        name = s.query_model if (role != "doc" and s.query_model) else s.model
        tok, model = self._load(name)
        max_length = self.max_tokens(role) or self._limits[name]  # None: the model's own limit
        prefix = self.instruction(role)
        inputs = [prefix + t for t in texts] if prefix else list(texts)
        if not inputs:
            return np.zeros((0, 0), dtype=np.float32)
        enc = self._tokenize(tok, inputs, role, max_length)
        lengths = [len(ids) for ids in enc["input_ids"]]
        batches = plan_batches(lengths, batch_size, self.token_budget)
        outs: list[Any] = []
        with torch.inference_mode(), _progress(len(inputs), f"encoding {role}s") as progress:
            bar = progress.add_task(f"encoding {role}s", total=len(inputs))
            for idx in batches:
                feats = tok.pad({k: [v[i] for i in idx] for k, v in enc.items()}, padding=True,
                                return_tensors="pt")
                feats = {k: v.to(self.device) for k, v in feats.items()}
                with autocast_context(s.dtype, self.device):
                    hidden = model(**feats).last_hidden_state
                emb = pool(hidden, feats["attention_mask"], s.pooling)
                if s.normalize:
                    emb = torch.nn.functional.normalize(emb, dim=-1)
                outs.append(emb)
                progress.advance(bar, len(idx))
        order = np.concatenate(batches)
        stacked = torch.cat(outs).float().cpu().numpy()  # one device->host copy per call
        result = np.empty_like(stacked)
        result[order] = stacked
        self.texts_encoded += len(inputs)
        return result


def pool(hidden, mask, pooling: str):
    """Pool token states ``hidden`` (B, T, H) under ``mask`` (B, T), in float32.

    ``cls``: the first token; ``mean``: the mean over unmasked tokens; ``last-token``: the last
    unmasked token (works for left and right padding; BMRetriever/E5 style).
    """
    import torch

    hidden = hidden.float()
    if pooling == "cls":
        return hidden[:, 0]
    if pooling == "mean":
        m = mask.unsqueeze(-1).to(hidden.dtype)
        return (hidden * m).sum(1) / m.sum(1).clamp(min=1e-9)
    if pooling == "last-token":
        t = mask.shape[1]
        last = t - 1 - torch.argmax(torch.flip(mask, dims=[1]).int(), dim=1)
        return hidden[torch.arange(hidden.shape[0], device=hidden.device), last]
    raise R2MedError(f"unknown pooling {pooling!r}")


# -- sentence-transformers -----------------------------------------------------------------------

class SentenceTransformerEncoder(BaseEncoder):
    """A sentence-transformers model, encoded as its own ``encode_query`` / ``encode_document`` do.

    With no instruction in the settings the model's own prompts apply (its ``"query"`` prompt for
    queries; ``"document"`` / ``"passage"`` / ``"corpus"`` for documents), as do its
    ``max_seq_length``, pooling and normalisation; an instruction goes in as ``prompt`` (excluded
    from pooling for INSTRUCTOR models when ``settings.extra['exclude_prompt_from_pooling']``),
    ``max_length`` replaces ``max_seq_length`` and ``normalize`` adds a normalisation.
    """

    @property
    def model(self):
        if self._model is None:
            try:
                from sentence_transformers import SentenceTransformer
            except ImportError as exc:  # pragma: no cover
                raise MissingExtraError("sentence-transformers", "dense", "dense retrieval") from exc
            s = self.settings
            check_model_source(s.model)
            kwargs: dict[str, Any] = {}
            if s.dtype not in ("fp32", "fp16-autocast"):  # sentence-transformers loads fp32 by default
                kwargs["model_kwargs"] = {"torch_dtype": resolve_dtype(s.dtype)}
            try:
                model = SentenceTransformer(s.model, device=self.device, revision=s.revision,
                                            trust_remote_code=s.trust_remote_code, **kwargs)
            except (OSError, ValueError) as exc:
                raise _load_error(s.model, exc) from exc
            if s.max_length:
                model.max_seq_length = s.max_length
            if s.extra.get("exclude_prompt_from_pooling"):
                model.set_pooling_include_prompt(False)
            self._model = model
        return self._model

    def prompt(self, role: str) -> str | None:
        """The prompt passed for ``role``: None lets the model choose its own."""
        s = self.settings
        if role == "doc":
            return s.doc_instruction
        if role == "expansion" and s.expansion_instruction == "none":
            return ""
        return s.query_instruction

    def _effective_prompt(self, role: str) -> str:
        """The prompt text the model will put before each text (for length-sorted batching only)."""
        prompt = self.prompt(role)
        if prompt is not None:
            return prompt
        prompts = getattr(self.model, "prompts", None) or {}
        names = ["query"] if role != "doc" else ["document", "passage", "corpus"]
        for name in names:
            if name in prompts:
                return prompts[name]
        default = getattr(self.model, "default_prompt_name", None)
        return prompts.get(default, "") if default else ""

    def _embed(self, texts: Sequence[str], role: str, batch_size: int) -> np.ndarray:
        model = self.model
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        prompt = self.prompt(role)
        tok = model.tokenizer
        planned = self._effective_prompt(role)
        full = [planned + t for t in texts] if planned else list(texts)
        lengths = [len(ids) for ids in tok(full, truncation=True, max_length=model.max_seq_length,
                                           padding=False, return_attention_mask=False)["input_ids"]]
        batches = plan_batches(lengths, batch_size, self.token_budget)
        method = "encode_document" if role == "doc" else "encode_query"
        encode = getattr(model, method, model.encode)  # sentence-transformers < 5: plain encode
        outs = []
        with _progress(len(texts), f"encoding {role}s") as progress, autocast_context(self.settings.dtype,
                                                                                      self.device):
            bar = progress.add_task(f"encoding {role}s", total=len(texts))
            for idx in batches:
                outs.append(encode([texts[i] for i in idx], batch_size=len(idx), prompt=prompt,
                                   normalize_embeddings=self.settings.normalize,
                                   convert_to_tensor=True, show_progress_bar=False))
                progress.advance(bar, len(idx))
        import torch

        stacked = torch.cat(outs).float().cpu().numpy()
        result = np.empty_like(stacked)
        result[np.concatenate(batches)] = stacked
        self.texts_encoded += len(texts)
        return result


# -- trust_remote_code models with their own encode() ----------------------------------------------

class RemoteCodeEncoder(BaseEncoder):
    """A ``trust_remote_code`` model exposing ``encode(texts, instruction=..., max_length=...)``
    (NV-Embed-v2).  Needs ``trust_remote_code=True``: the model's own code runs on this machine."""

    def __init__(self, settings: EncoderSettings, device: str | None = None, batch_size: int = 8,
                 token_budget: int | None = None):
        if not settings.trust_remote_code:
            raise R2MedError(f"{settings.model} runs its own code from the hub; opt in with "
                             "--trust-remote-code (trust_remote_code=True)")
        super().__init__(settings, device, batch_size, token_budget)
        self._tok = None

    def _load(self):
        if self._model is None:
            from transformers import AutoModel, AutoTokenizer

            s = self.settings
            check_model_source(s.model)
            try:
                self._tok = AutoTokenizer.from_pretrained(s.model, revision=s.revision, trust_remote_code=True)
                self._model = AutoModel.from_pretrained(s.model, revision=s.revision, trust_remote_code=True,
                                                        dtype=resolve_dtype(s.dtype, self.device))
            except (OSError, ValueError) as exc:
                raise _load_error(s.model, exc) from exc
            self._model.eval().to(self.device)
            if not hasattr(self._model, "encode"):
                raise R2MedError(f"{s.model} has no encode() method; use --retriever dense with a pooling instead")
        return self._tok, self._model

    def _embed(self, texts: Sequence[str], role: str, batch_size: int) -> np.ndarray:
        import torch

        tok, model = self._load()
        s = self.settings
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        # NV-Embed-v2's own encode() appends EOS (always_add_eos); append_eos would add a second one
        eos = tok.eos_token or "" if s.append_eos else ""
        full = [t + eos for t in texts]
        max_length = self.max_tokens(role) or model_max_length(model, tok)
        if max_length is None:
            raise R2MedError(f"{s.model} states no maximum length; pass --max-length")
        lengths = [min(len(ids), max_length) for ids in tok(full, padding=False, return_attention_mask=False)["input_ids"]]
        batches = plan_batches(lengths, batch_size, self.token_budget)
        outs = []
        with torch.inference_mode():
            for idx in batches:
                emb = model.encode([full[i] for i in idx], instruction=self.instruction(role), max_length=max_length)
                emb = torch.as_tensor(emb).float()
                if s.normalize:
                    emb = torch.nn.functional.normalize(emb, dim=-1)
                outs.append(emb)
        stacked = torch.cat(outs).cpu().numpy()
        result = np.empty_like(stacked)
        result[np.concatenate(batches)] = stacked
        self.texts_encoded += len(texts)
        return result


class GritLMEncoder(BaseEncoder):
    """GritLM-7B through the ``gritlm`` package (``GritLM(..., mode="embedding").encode``)."""

    def __init__(self, settings: EncoderSettings, device: str | None = None, batch_size: int = 8,
                 token_budget: int | None = None):
        super().__init__(settings, device, batch_size, token_budget)

    def _embed(self, texts: Sequence[str], role: str, batch_size: int) -> np.ndarray:
        if self._model is None:
            try:
                from gritlm import GritLM
            except ImportError as exc:
                raise MissingExtraError("gritlm", "dense", "the grit preset") from exc
            s = self.settings
            self._model = GritLM(s.model, torch_dtype=resolve_dtype(s.dtype), mode="embedding",
                                 device_map="auto" if self.device == "cuda" else None)
        s = self.settings
        max_length = self.max_tokens(role) or 512
        emb = self._model.encode(list(texts), instruction=self.instruction(role), batch_size=batch_size,
                                 max_length=max_length)
        emb = np.asarray(emb, dtype=np.float32)
        if s.normalize:
            emb /= np.maximum(np.linalg.norm(emb, axis=1, keepdims=True), 1e-12)
        self.texts_encoded += len(texts)
        return emb


def is_sentence_transformers_folder(model: str) -> bool:
    return (Path(model).expanduser() / "modules.json").exists()


def _looks_like_hub_id(model: str) -> bool:
    return bool(model) and model.count("/") <= 1 and not model.startswith((".", "/", "~")) and "\\" not in model


def model_file(model: str, filename: str, revision: str | None = None) -> Path | None:
    """``filename`` of a model: from its folder, or for a hub id from the Hugging Face cache (or the
    hub, unless offline); None when the model has no such file or it cannot be found."""
    folder = Path(model).expanduser()
    if folder.is_dir():
        path = folder / filename
        return path if path.is_file() else None
    if not _looks_like_hub_id(model):
        return None
    try:
        from huggingface_hub import hf_hub_download, try_to_load_from_cache
        from huggingface_hub.constants import HF_HUB_OFFLINE

        cached = try_to_load_from_cache(model, filename, revision=revision)
        if isinstance(cached, str):
            return Path(cached)
        offline = HF_HUB_OFFLINE or os.environ.get("HF_HUB_OFFLINE", "").upper() in ("1", "ON", "YES", "TRUE")
        if cached is not None or offline:
            return None  # known absent, or not cached and we may not ask the hub
        return Path(hf_hub_download(model, filename, revision=revision))
    except Exception:  # not on the hub, no network, a malformed id: the loader reports it
        return None


def is_sentence_transformers_model(model: str, revision: str | None = None) -> bool:
    """A folder or hub id with a ``modules.json`` (hub ids are looked up in the HF cache first)."""
    return model_file(model, "modules.json", revision) is not None


def sentence_transformers_similarity(model: str, revision: str | None = None) -> str | None:
    """The model's own ``similarity_fn_name`` (``cosine`` when a sentence-transformers model names
    none, as sentence-transformers does); None for a model that is not a sentence-transformers one."""
    if not is_sentence_transformers_model(model, revision):
        return None
    path = model_file(model, "config_sentence_transformers.json", revision)
    try:
        config = json.loads(path.read_text(encoding="utf-8")) if path else {}
    except (OSError, ValueError):
        config = {}
    return str(config.get("similarity_fn_name") or "cosine")


EncoderFactory = Callable[..., Encoder]


def make_encoder(settings: EncoderSettings, device: str | None = None, batch_size: int = 32,
                 token_budget: int | None = None, **api_options: Any) -> Encoder:
    """The encoder implementation for ``settings.loader`` (``auto``: a sentence-transformers model
    -- a folder or a cached hub id with ``modules.json`` -- through sentence-transformers, anything
    else through plain transformers with pooling)."""
    loader = settings.loader
    if loader == "auto":
        st = is_sentence_transformers_model(settings.model, settings.revision)
        loader = "sentence-transformers" if st else "transformers"
    if loader in ("openai", "voyage"):
        from .api import make_api_encoder

        return make_api_encoder(settings, batch_size=batch_size, **api_options)
    if api_options:
        raise R2MedError(f"option(s) {', '.join(sorted(api_options))} only apply to API embedders")
    cls = {"transformers": TransformersEncoder, "sentence-transformers": SentenceTransformerEncoder,
           "remote-code": RemoteCodeEncoder, "gritlm": GritLMEncoder}[loader]
    return cls(settings, device=device, batch_size=batch_size, token_budget=token_budget)
