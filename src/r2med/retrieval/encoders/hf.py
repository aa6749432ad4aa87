"""Encoders for models run on this machine with torch: transformers, sentence-transformers, remote code, GritLM.

* :class:`TransformersEncoder` -- plain ``AutoModel`` with ``cls`` / ``mean`` / ``last-token``
  pooling (optionally an EOS token appended and left padding, as BMRetriever does), and an
  optional separate query model (MedCPT's Query/Article encoders).
* :class:`SentenceTransformerEncoder` -- any sentence-transformers model (INSTRUCTOR models
  with the instruction excluded from pooling).
* :class:`RemoteCodeEncoder` -- ``trust_remote_code`` models that ship their own
  ``encode(texts, instruction=..., max_length=...)`` (NV-Embed-v2), behind an explicit opt-in.
* :class:`GritLMEncoder` -- GritLM through the ``gritlm`` package.

Speed: texts are tokenized once, sorted by length and cut into batches by a token budget
(:meth:`~r2med.retrieval.encoders.base.BaseEncoder.in_length_order`); outputs stay on the device
until the end of a call (one device-to-host copy).

Defaults come from the model itself (the loading library's defaults): a model with a
``modules.json`` (a folder, or a hub id found in the Hugging Face cache) is encoded as
``SentenceTransformer.encode_query`` / ``encode_document`` would (its max length, pooling,
normalisation and prompts); a plain ``AutoModel`` reads its max length from its tokenizer and
config; weights load in fp32 unless ``dtype`` says otherwise (see :data:`.base.DTYPES`).
The helpers here (device, dtype, model limits, model files) serve the rerankers too.
"""

from __future__ import annotations

import contextlib
import inspect
import logging
import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol, TypeGuard

import numpy as np
from huggingface_hub import try_to_load_from_cache

from ...errors import MissingExtraError, R2MedError
from ...infra.home import read_json
from ...infra.json_shapes import as_object
from ...infra.json_types import JsonObject
from ...infra.optional import required_module
from ...infra.weights import load_pretrained, recording_loads
from ...typed.model_source import missing_model_path
from .base import TOKENIZER_FRAMING, BaseEncoder, EncoderSettings, canonical_dtype
from .files import model_file
from .framing import (
    check_ids,
    described,
    framed_ids,
    note_files,
    resolve,
    resolve_framing,
    settled,
    tokenizer_alone,
)

if TYPE_CHECKING:
    import torch
    from sentence_transformers import SentenceTransformer
    from transformers import PreTrainedTokenizerBase

log = logging.getLogger(__name__)


def resolve_device(device: str | None = None) -> str:
    """``auto``/None -> ``cuda`` when a GPU is visible, else ``cpu``; anything else is passed to torch."""
    import torch

    if device in (None, "", "auto"):
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise R2MedError(f"--device {device} was asked for but no CUDA GPU is visible; use --device cpu")
    return device


def resolve_dtype(dtype: str, device: str | None = None) -> torch.dtype | Literal["auto"]:
    """The ``dtype`` argument for ``from_pretrained``: a torch dtype, or ``"auto"`` (the checkpoint's).

    ``fp16-autocast`` loads fp32 weights (the autocast is :func:`autocast_context`'s job).
    """
    import torch

    name = canonical_dtype(dtype)
    if name == "auto":
        return "auto"
    return {"fp32": torch.float32, "fp16-autocast": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[name]


#: The torch dtype name each precision's weights load in (``auto``: the checkpoint's, whatever it is).
WEIGHT_DTYPES = {"fp32": "float32", "fp16-autocast": "float32", "fp16": "float16", "bf16": "bfloat16"}


def dtype_kwargs(dtype: str, device: str | None = None) -> dict[str, torch.dtype | Literal["auto"]]:
    """The ``from_pretrained`` keyword for precision ``dtype``: ``dtype=`` (transformers >= 4.56), else
    ``torch_dtype=`` -- passed for every precision, fp32 included (transformers 5 otherwise loads the
    checkpoint's own precision: an fp16 checkpoint comes up fp16)."""
    import transformers

    major, minor = (int(part) for part in transformers.__version__.split(".")[:2])
    key = "dtype" if (major, minor) >= (4, 56) else "torch_dtype"
    return {key: resolve_dtype(dtype, device)}


class WeightedModel(Protocol):
    """What r2med reads of a loaded model's weights (a ``torch.nn.Module`` has it): their tensors, its submodules."""

    def parameters(self) -> Iterable[torch.nn.Parameter]: ...

    def modules(self) -> Iterable[object]: ...


def weights_dtype(model: WeightedModel) -> str:
    """The dtype a loaded model's weights are in (``float32``): its ``dtype``, else its first floating tensor's."""
    import torch

    dtype = getattr(model, "dtype", None)
    if not isinstance(dtype, torch.dtype):
        dtype = next((p.dtype for p in model.parameters() if p.is_floating_point()), None)
    return str(dtype).replace("torch.", "")


def declared_dtype(name: str, revision: str | None = None) -> str | None:
    """The precision a checkpoint's ``config.json`` declares (``dtype``, or ``torch_dtype`` before transformers 4.56:
    ``bfloat16``), read from the file itself -- what ``torch_dtype="auto"`` loads it in; a loaded model's config holds
    the precision it was loaded in instead.  None: it declares none (or the file cannot be read)."""
    from transformers import PretrainedConfig

    try:
        raw, _ = PretrainedConfig.get_config_dict(name, revision=revision)
    except (OSError, ValueError):
        return None
    value = raw.get("dtype") or raw.get("torch_dtype")
    return value.replace("torch.", "") if isinstance(value, str) else None


def checkpoint_commit(model: WeightedModel, name: str, revision: str | None = None) -> str | None:
    """The hub commit a loaded model's files came from: transformers' ``config._commit_hash`` where it kept one,
    else the snapshot a Hugging Face cache resolves for the hub id ``name`` (or holds the folder ``name``); None for
    a folder outside any cache."""
    for module in model.modules():
        commit = getattr(getattr(module, "config", None), "_commit_hash", None)
        if isinstance(commit, str) and commit:
            return commit
    path = Path(name)
    if not path.exists():
        try:
            found = try_to_load_from_cache(name, "config.json", revision=revision)
        except Exception:  # not a hub id at all
            found = None
        path = Path(found) if isinstance(found, str) else path
    parts = Path(os.path.abspath(path)).parts  # not resolved: a snapshot's files link into blobs/
    for i in range(len(parts) - 1, 1, -1):
        if parts[i - 1] == "snapshots" and parts[i - 2].startswith("models--") and len(parts[i]) == 40:
            return parts[i]
    return None


def check_weights_dtype(model_name: str, dtype: str, loaded: str) -> None:
    """The precision read back from the loaded weights against the one asked for: a mismatch is a one-line error
    (a record must never say fp32 for vectors an fp16 forward pass made)."""
    expected = WEIGHT_DTYPES.get(canonical_dtype(dtype))
    if expected is not None and loaded != expected:
        raise R2MedError(
            f"model {model_name!r}: its weights loaded in {loaded}, not the {expected} that dtype {dtype} asks "
            "for (the loader ignored the precision); nothing was encoded"
        )


def autocast_context(dtype: str, device: str) -> contextlib.AbstractContextManager[object]:
    """CUDA fp16 autocast for ``fp16-autocast`` on a GPU (as ``torch.cuda.amp.autocast()``), else nothing."""
    if canonical_dtype(dtype) == "fp16-autocast" and str(device).startswith("cuda"):
        import torch

        return torch.autocast("cuda", dtype=torch.float16)
    return contextlib.nullcontext()


def model_max_length(model: object, tokenizer: object) -> int | None:
    """The most tokens the model can read: its tokenizer's limit and its position embeddings
    (RoBERTa-style models lose 2 positions to the padding offset); None when neither says."""
    limits: list[int] = []
    config = getattr(model, "config", None)
    positions = getattr(config, "max_position_embeddings", None)
    if isinstance(positions, int) and positions > 0:
        offset = 2 if getattr(config, "model_type", "") in ("roberta", "xlm-roberta", "camembert") else 0
        limits.append(positions - offset)
    tok_limit = getattr(tokenizer, "model_max_length", None)
    if isinstance(tok_limit, int) and 0 < tok_limit < 1_000_000:
        limits.append(tok_limit)
    return min(limits) if limits else None


def check_model_source(model: str) -> None:
    """A path-looking model name must exist; a hub id (``org/name``) is checked when it is loaded."""
    problem = missing_model_path(model)
    if problem:
        raise R2MedError(problem)


def _load_error(model: str, exc: Exception) -> R2MedError:
    offline = os.environ.get("HF_HUB_OFFLINE") == "1"
    hint = (
        "the hub is offline (HF_HUB_OFFLINE=1): download it first or pass a local folder"
        if offline
        else "check the hub id / path and your network"
    )
    return R2MedError(f"cannot load model {model!r} ({type(exc).__name__}): {hint}")


def _torch_stack(outs: list[torch.Tensor]) -> np.ndarray:
    """Batch outputs (device tensors) as one float32 host array: one device-to-host copy per call."""
    import torch

    return torch.cat(outs).float().cpu().numpy()


class TorchEncoder(BaseEncoder):
    """An encoder whose model runs here, on ``device`` (``auto``: the GPU when one is visible)."""

    def __init__(
        self,
        settings: EncoderSettings,
        device: str | None = None,
        batch_size: int = 32,
        token_budget: int | None = None,
    ):
        super().__init__(settings, batch_size, token_budget)
        self.device = resolve_device(device)

    def _loaded(self, name: str, model: WeightedModel, dtype: str) -> str:
        """Record what a model loaded in (``used``: its weights' precision, the one its checkpoint declares, the
        commit) and check the precision against the one asked for; the weights' precision."""
        s = self.settings
        weights = weights_dtype(model)
        self.used["weights"] = weights
        self.used["declared_dtype"] = declared_dtype(name, s.model_revision)
        check_weights_dtype(name, dtype, weights)
        return weights


# -- plain transformers --------------------------------------------------------------------------

#: a model's framing, resolved once: its template, the ids before and after the text, what its tokenizer's files say
_Frame = tuple[str, list[int], list[int], JsonObject]


class TransformersEncoder(TorchEncoder):
    """``AutoModel`` + pooling; a separate query model when ``settings.query_model`` is set."""

    def __init__(
        self,
        settings: EncoderSettings,
        device: str | None = None,
        batch_size: int = 32,
        token_budget: int | None = None,
    ):
        super().__init__(settings, device, batch_size, token_budget)
        self._models: dict[str, tuple[PreTrainedTokenizerBase, torch.nn.Module]] = {}
        self._limits: dict[str, int] = {}
        #: per model: whether its forward takes ``position_ids`` (given for left-padded batches, see _embed)
        self._positions: dict[str, bool] = {}
        self._frames: dict[str, _Frame] = {}

    def _load(self, name: str) -> tuple[PreTrainedTokenizerBase, torch.nn.Module]:
        if name in self._models:
            return self._models[name]
        try:
            import torch
            from transformers import AutoModel, AutoTokenizer
        except ImportError as exc:  # pragma: no cover - extra missing
            raise MissingExtraError(exc.name or "transformers", "dense", "dense retrieval") from exc
        check_model_source(name)
        s = self.settings
        kwargs = {"revision": s.model_revision, "trust_remote_code": s.trust_remote_code}
        try:
            tok: PreTrainedTokenizerBase = AutoTokenizer.from_pretrained(name, **kwargs)
            model: torch.nn.Module = load_pretrained(
                AutoModel.from_pretrained, name, "embedding model", **dtype_kwargs(s.dtype, self.device), **kwargs
            )
        except ImportError as exc:  # a model's own code (trust_remote_code) written for another transformers
            raise R2MedError(f"cannot load model {name!r}: its own code does not import here ({exc})") from exc
        except (OSError, ValueError) as exc:
            raise _load_error(name, exc) from exc
        if s.pooling == "last-token" or s.append_eos:
            if tok.pad_token is None:  # padding only (masked out); which token it is changes no vector
                tok.pad_token = tok.eos_token
            tok.padding_side = "left"
        limit = model_max_length(model, tok)
        if limit is None and s.max_length is None:
            raise R2MedError(
                f"model {name!r} states no maximum length (tokenizer or max_position_embeddings); pass --max-length"
            )
        self._limits[name] = limit or 0
        self._positions[name] = "position_ids" in inspect.signature(model.forward).parameters
        model.eval().to(self.device)
        autocast = canonical_dtype(s.dtype) == "fp16-autocast" and str(self.device).startswith("cuda")
        weights = self._loaded(name, model, s.dtype)
        commits = self.used.setdefault("model_commit", {})
        if isinstance(commits, dict):  # this encoder's own: name -> commit
            commits[name] = checkpoint_commit(model, name, s.model_revision)
        self.used["compute"] = "fp16 (autocast)" if autocast else weights
        self.used["device"] = self.device
        self.used["pooling"] = str(s.pooling)
        if self.device == "cuda" and torch.cuda.device_count() > 1:
            model = torch.nn.DataParallel(model)
        self._models[name] = (tok, model)
        return tok, model

    def _tokenize(
        self, tok: PreTrainedTokenizerBase, texts: list[str], role: str, max_length: int, name: str | None = None
    ) -> dict[str, list[list[int]]]:
        s = self.settings
        name = name or s.model
        if role == "doc" and s.doc_as_pair:
            enc = tok(
                [""] * len(texts),
                texts,
                truncation="longest_first",
                max_length=max_length,
                padding=False,
                return_attention_mask=False,
            )
            return {k: list(v) for k, v in enc.items()}
        frame = self._frame(name, tok)
        if frame is not None:
            template, before, after, _ = frame
            ids = framed_ids(tok, texts, before, after, max_length, template)
        elif s.append_eos:  # the tokenizer's own framing, then its EOS (by the text it names), as BMRetriever's code
            if not tok.eos_token:
                raise R2MedError(f"model {name!r} has no EOS token; it cannot be used with append_eos")
            eos = resolve(name, tok, f"{{text}} {tok.eos_token}", [tok.eos_token])
            plain = tok(
                texts,
                truncation=True,
                max_length=max_length - 1,
                padding=False,
                return_attention_mask=False,
                return_token_type_ids=False,
            )["input_ids"]
            ids = [[*one, *eos] for one in plain]
        else:
            enc = tok(texts, truncation=True, max_length=max_length, padding=False, return_attention_mask=False)
            if texts and "framing" not in self.used:
                self._record_framing(name, tok, texts[0], None)
            return {k: list(v) for k, v in enc.items()}  # token_type_ids too (BERT-style models)
        if texts and "framing" not in self.used:
            self._record_framing(name, tok, texts[0], frame)
        return {"input_ids": ids}

    def _frame(self, name: str, tok: PreTrainedTokenizerBase) -> _Frame | None:
        """The framing ``name``'s texts get (its template, the ids before / after the text, what the tokenizer's
        files say), resolved once per model: the settings' tokens by text, or the tokenizer's own where its
        files agree (``framing="tokenizer"``); None: no framing of r2med's (the tokenizer's, unchecked)."""
        if self.settings.framing is None:
            return None
        if name not in self._frames:
            template, files = settled(name, tok, self.settings.framing, self.settings.model_revision)
            before, after = resolve_framing(name, tok, template)
            self._frames[name] = (template, before, after, files)
        return self._frames[name]

    def _record_framing(self, name: str, tok: PreTrainedTokenizerBase, text: str, frame: _Frame | None) -> None:
        """What the texts were framed with, and what the tokenizer alone would have added (``used['framing']``,
        for ``metrics.json``): both by token text and id."""
        s = self.settings
        own = tokenizer_alone(tok, text)
        if frame is None:
            if s.append_eos:
                eos = resolve(name, tok, f"{{text}} {tok.eos_token}", [tok.eos_token])
                own_before, own_after = own.ids
                built = described(tok, own_before, own_after + eos)
                self.used["framing"] = {
                    "framing": "tokenizer's own + its EOS (append_eos)",
                    "tokens": built.describe(),
                    "tokenizer_alone": own.describe(),
                    "built_by": "tokenizer, then r2med",
                }
            else:
                self.used["framing"] = {
                    "framing": "tokenizer's own",
                    "tokenizer_alone": own.describe(),
                    "tokenizer_files": note_files(name, tok, s.model_revision).describe(),
                    "built_by": "tokenizer",
                }
            return
        template, before, after, files = frame
        if own.framing != template:
            log.info(
                "%s: its tokenizer alone frames texts as %r; r2med builds %r (%s)",
                name,
                own.framing,
                template,
                "the tokenizer's files" if s.framing == TOKENIZER_FRAMING else "the preset's framing",
            )
        self.used["framing"] = {
            "framing": s.framing,
            "tokens": described(tok, before, after).describe(),
            "tokenizer_alone": own.describe(),
            "tokenizer_files": files,
            "built_by": "r2med",
        }

    def _embed(self, texts: Sequence[str], role: str, batch_size: int) -> np.ndarray:
        import torch

        s = self.settings
        name = s.query_model if (role != "doc" and s.query_model) else s.model
        tok, model = self._load(name)
        max_length = self.max_tokens(role, self._limits[name])
        assert max_length is not None  # _load raised when neither the model nor the settings give a limit
        self.note_max_length(role, max_length)
        prefix = self.instruction(role)
        enc = self._tokenize(tok, [prefix + t for t in texts] if prefix else list(texts), role, max_length, name)

        left = tok.padding_side == "left" and self._positions[name]

        def encode_batch(idx: np.ndarray) -> torch.Tensor:
            feats = tok.pad({k: [v[i] for i in idx] for k, v in enc.items()}, padding=True, return_tensors="pt")
            if left:  # each text's own positions 0..n-1, as unpadded (the default counts the pads before it)
                feats["position_ids"] = (feats["attention_mask"].cumsum(-1) - 1).clamp(min=0)
            on_device = {k: v.to(self.device) for k, v in feats.items()}
            with autocast_context(s.dtype, self.device):
                hidden = model(**on_device).last_hidden_state
            emb = pool(hidden, on_device["attention_mask"], s.pooling)
            return torch.nn.functional.normalize(emb, dim=-1) if s.normalize else emb

        with torch.inference_mode():
            return self.in_length_order([len(ids) for ids in enc["input_ids"]], batch_size, encode_batch, _torch_stack)


def pool(hidden: torch.Tensor, mask: torch.Tensor, pooling: str) -> torch.Tensor:
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


class SentenceTransformerEncoder(TorchEncoder):
    """A sentence-transformers model, encoded as its own ``encode_query`` / ``encode_document`` do.

    With no instruction in the settings the model's own prompts apply (its ``"query"`` prompt for
    queries; ``"document"`` / ``"passage"`` / ``"corpus"`` for documents), as do its
    ``max_seq_length``, pooling and normalisation; an instruction goes in as ``prompt`` (excluded
    from pooling for INSTRUCTOR models when ``settings.extra['exclude_prompt_from_pooling']``),
    ``max_length`` replaces ``max_seq_length`` and ``normalize`` adds a normalisation.
    """

    def __init__(
        self,
        settings: EncoderSettings,
        device: str | None = None,
        batch_size: int = 32,
        token_budget: int | None = None,
    ):
        super().__init__(settings, device, batch_size, token_budget)
        self._model: SentenceTransformer | None = None  # loaded on first use

    @property
    def model(self) -> SentenceTransformer:
        if self._model is None:
            try:
                from sentence_transformers import SentenceTransformer
            except ImportError as exc:  # pragma: no cover
                raise MissingExtraError("sentence-transformers", "dense", "dense retrieval") from exc
            s = self.settings
            check_model_source(s.model)
            # the precision is passed whatever it is: with none, transformers 5 loads the checkpoint's own
            try:
                with recording_loads(s.model, "embedding model"):
                    model = SentenceTransformer(
                        s.model,
                        device=self.device,
                        revision=s.model_revision,
                        trust_remote_code=s.trust_remote_code,
                        model_kwargs=dtype_kwargs(s.dtype, self.device),
                    )
            except (OSError, ValueError) as exc:
                raise _load_error(s.model, exc) from exc
            weights = self._loaded(s.model, model, s.dtype)
            self.used["model_commit"] = {s.model: checkpoint_commit(model, s.model, s.model_revision)}
            autocast = canonical_dtype(s.dtype) == "fp16-autocast" and str(self.device).startswith("cuda")
            self.used["compute"] = "fp16 (autocast)" if autocast else weights
            self.used["device"] = self.device
            if s.max_length:
                model.max_seq_length = s.max_length
            if s.extra.get("exclude_prompt_from_pooling"):
                model.set_pooling_include_prompt(False)
            self.used["pooling"] = sentence_transformers_pooling(model)
            self._model = model
        return self._model

    def _check_framing(self, tok: PreTrainedTokenizerBase, text: str, ids: list[int]) -> None:
        """sentence-transformers tokenizes: r2med cannot build the ids, only check the first text's against the
        framing (its tokens by text, or the tokenizer's own once its files agree) and record them."""
        s = self.settings
        own = tokenizer_alone(tok, text)
        if s.framing is None:
            self.used["framing"] = {
                "framing": "tokenizer's own",
                "tokenizer_alone": own.describe(),
                "tokenizer_files": note_files(s.model, tok, s.model_revision).describe(),
                "built_by": "tokenizer",
            }
            return
        template, files = settled(s.model, tok, s.framing, s.model_revision)
        before, after = resolve_framing(s.model, tok, template)
        check_ids(s.model, ids, before, after, template, [i for side in own.ids for i in side])
        self.used["framing"] = {
            "framing": s.framing,
            "tokens": described(tok, before, after).describe(),
            "tokenizer_alone": own.describe(),
            "tokenizer_files": files,
            "built_by": "tokenizer (checked)",
        }

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
        prompts: dict[str, str] = getattr(self.model, "prompts", None) or {}
        names = ["query"] if role != "doc" else ["document", "passage", "corpus"]
        for name in names:
            if name in prompts:
                return prompts[name]
        default = getattr(self.model, "default_prompt_name", None)
        return prompts.get(default, "") if default else ""

    def _embed(self, texts: Sequence[str], role: str, batch_size: int) -> np.ndarray:
        import torch

        model = self.model
        prompt = self.prompt(role)
        planned = self._effective_prompt(role)
        full = [planned + t for t in texts] if planned else list(texts)
        self.note_max_length(role, model.max_seq_length)
        ids = model.tokenizer(
            full, truncation=True, max_length=model.max_seq_length, padding=False, return_attention_mask=False
        )["input_ids"]
        lengths = [len(one) for one in ids]
        if "framing" not in self.used:
            self._check_framing(model.tokenizer, full[0], list(ids[0]))
        # ST < 5: encode
        encode: Callable[..., object] = getattr(
            model, "encode_document" if role == "doc" else "encode_query", model.encode
        )

        def encode_batch(idx: np.ndarray) -> torch.Tensor:
            embeddings = encode(
                [texts[i] for i in idx],
                batch_size=len(idx),
                prompt=prompt,
                normalize_embeddings=self.settings.normalize,
                convert_to_tensor=True,
                show_progress_bar=False,
            )
            if not isinstance(embeddings, torch.Tensor):  # convert_to_tensor: one tensor for the batch
                raise R2MedError(f"{self.settings.model}: sentence-transformers gave no tensor for a batch")
            return embeddings

        with autocast_context(self.settings.dtype, self.device):
            return self.in_length_order(lengths, batch_size, encode_batch, _torch_stack)


# -- trust_remote_code models with their own encode() ----------------------------------------------


class _OwnEncode(WeightedModel, Protocol):
    """What r2med calls of a ``trust_remote_code`` model with its own ``encode`` (NV-Embed-v2's code)."""

    def eval(self) -> torch.nn.Module: ...

    def encode(self, texts: list[str], instruction: str, max_length: int) -> object: ...


def _has_own_encode(model: object) -> TypeGuard[_OwnEncode]:
    """Whether a loaded ``trust_remote_code`` model ships its own ``encode`` (NV-Embed-v2's code does)."""
    return hasattr(model, "encode")


class _GritLM(Protocol):
    """What r2med calls of the ``gritlm`` package's model (``GritLM(..., mode="embedding")``)."""

    def encode(self, texts: list[str], instruction: str, batch_size: int, max_length: int | None) -> object: ...


class RemoteCodeEncoder(TorchEncoder):
    """A ``trust_remote_code`` model exposing ``encode(texts, instruction=..., max_length=...)``
    (NV-Embed-v2).  Needs ``trust_remote_code=True``: the model's own code runs on this machine."""

    def __init__(
        self, settings: EncoderSettings, device: str | None = None, batch_size: int = 8, token_budget: int | None = None
    ):
        if not settings.trust_remote_code:
            raise R2MedError(
                f"{settings.model} runs its own code from the hub; opt in with "
                "--trust-remote-code (trust_remote_code=True)"
            )
        super().__init__(settings, device, batch_size, token_budget)
        self._tok: PreTrainedTokenizerBase | None = None
        self._model: _OwnEncode | None = None  # loaded on first use, with its tokenizer

    def _load(self) -> tuple[PreTrainedTokenizerBase, _OwnEncode]:
        if self._tok is None or self._model is None:
            from transformers import AutoModel, AutoTokenizer

            s = self.settings
            check_model_source(s.model)
            try:
                tok: PreTrainedTokenizerBase = AutoTokenizer.from_pretrained(
                    s.model, revision=s.model_revision, trust_remote_code=True
                )
                loaded = load_pretrained(
                    AutoModel.from_pretrained,
                    s.model,
                    "embedding model",
                    revision=s.model_revision,
                    trust_remote_code=True,
                    **dtype_kwargs(s.dtype, self.device),
                )
            except (OSError, ValueError) as exc:
                raise _load_error(s.model, exc) from exc
            if not _has_own_encode(loaded):
                raise R2MedError(f"{s.model} has no encode() method; use --retriever dense with a pooling instead")
            model = loaded
            model.eval().to(self.device)
            self.used["compute"] = self._loaded(s.model, model, s.dtype)
            self.used["model_commit"] = {s.model: checkpoint_commit(model, s.model, s.model_revision)}
            self.used["device"] = self.device
            self._tok, self._model = tok, model
        return self._tok, self._model

    def _embed(self, texts: Sequence[str], role: str, batch_size: int) -> np.ndarray:
        import torch

        tok, model = self._load()
        s = self.settings
        # NV-Embed-v2's own encode() appends EOS (always_add_eos); append_eos would add a second one
        eos = (tok.eos_token or "") if s.append_eos else ""
        full = [t + eos for t in texts]
        if "framing" not in self.used:
            self.used["framing"] = {"framing": "the model's own encode()", "appended_text": eos, "built_by": "model"}
        max_length = self.max_tokens(role, model_max_length(model, tok))
        self.note_max_length(role, max_length)
        if max_length is None:
            raise R2MedError(f"{s.model} states no maximum length; pass --max-length")
        lengths = [
            min(len(ids), max_length) for ids in tok(full, padding=False, return_attention_mask=False)["input_ids"]
        ]

        def encode_batch(idx: np.ndarray) -> torch.Tensor:
            emb = torch.as_tensor(
                model.encode([full[i] for i in idx], instruction=self.instruction(role), max_length=max_length)
            ).float()
            return torch.nn.functional.normalize(emb, dim=-1) if s.normalize else emb

        with torch.inference_mode():
            return self.in_length_order(lengths, batch_size, encode_batch, _torch_stack)


class GritLMEncoder(TorchEncoder):
    """GritLM-7B through the ``gritlm`` package (``GritLM(..., mode="embedding").encode``, which batches itself)."""

    def __init__(
        self, settings: EncoderSettings, device: str | None = None, batch_size: int = 8, token_budget: int | None = None
    ):
        super().__init__(settings, device, batch_size, token_budget)
        self._model: _GritLM | None = None  # loaded on first use

    def _embed(self, texts: Sequence[str], role: str, batch_size: int) -> np.ndarray:
        if self._model is None:
            GritLM = required_module("gritlm", "dense", "the grit preset").GritLM
            s = self.settings
            self._model = GritLM(
                s.model,
                torch_dtype=resolve_dtype(s.dtype),
                mode="embedding",
                device_map="auto" if self.device == "cuda" else None,
            )
            inner = getattr(self._model, "model", None)
            if inner is not None and hasattr(inner, "parameters"):
                self.used["compute"] = self._loaded(s.model, inner, s.dtype)
                self.used["model_commit"] = {s.model: checkpoint_commit(inner, s.model, s.model_revision)}
            self.used["framing"] = {"framing": "the gritlm package's encode()", "built_by": "model"}
        max_length = self.max_tokens(role, 512)
        self.note_max_length(role, max_length)
        emb = self._model.encode(
            list(texts), instruction=self.instruction(role), batch_size=batch_size, max_length=max_length
        )
        self.batch_done(len(texts))
        emb = np.asarray(emb, dtype=np.float32)
        if self.settings.normalize:
            emb /= np.maximum(np.linalg.norm(emb, axis=1, keepdims=True), 1e-12)
        return emb


def sentence_transformers_pooling(model: Iterable[object]) -> str:
    """The pooling a loaded sentence-transformers model runs: its ``Pooling`` module's mode (``cls``, ``mean``,
    ``lasttoken``...), or ``"the model's own"`` when it has no such module (its own ``encode``)."""
    modes = []
    for module in model:
        if type(module).__name__ != "Pooling":
            continue
        mode = getattr(module, "pooling_mode", None)  # sentence-transformers 6; 5 and earlier: a method
        mode_str = getattr(module, "get_pooling_mode_str", None)
        if mode is None and callable(mode_str):
            mode = mode_str()
        modes.append(str(mode))
    return "+".join(modes) if modes else "the model's own"


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
        config = as_object(read_json(path)) if path else {}
    except (OSError, ValueError):
        config = {}
    return str(config.get("similarity_fn_name") or "cosine")
