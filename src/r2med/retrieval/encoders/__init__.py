"""Text encoders for dense retrieval: settings and shared logic (:mod:`.base`), models run here with
torch (:mod:`.hf`), embedding APIs (:mod:`.api`), and :func:`make_encoder`, which picks one.

An encoder turns queries and documents into float32 vectors (``encode_queries``,
``encode_corpus``).  A query may be a tuple ``(query, expansion, ...)``: every part is
embedded and the vectors are averaged -- the R2MED paper's rule for generation-augmented
queries -- so the expansion code only supplies texts.  Heavy libraries (torch, transformers,
sentence-transformers) are imported inside the methods that need them.
"""

from __future__ import annotations

from typing import Unpack

from ...errors import R2MedError
from .api import APIEncoder, ApiOptions, EmbeddingAPIError
from .base import (
    API_LOADERS,
    DTYPES,
    LOADERS,
    POOLINGS,
    BaseEncoder,
    Encoder,
    EncoderSettings,
    Framing,
    FramingRecord,
    canonical_dtype,
    framing_template,
    framing_tokens,
    plan_batches,
)
from .hf import (
    GritLMEncoder,
    RemoteCodeEncoder,
    SentenceTransformerEncoder,
    TorchEncoder,
    TransformersEncoder,
    is_sentence_transformers_model,
    model_max_length,
    pool,
    resolve_device,
    resolve_dtype,
    sentence_transformers_similarity,
)

__all__ = [
    "API_LOADERS",
    "DTYPES",
    "LOADERS",
    "POOLINGS",
    "APIEncoder",
    "BaseEncoder",
    "EmbeddingAPIError",
    "Encoder",
    "EncoderSettings",
    "Framing",
    "FramingRecord",
    "GritLMEncoder",
    "RemoteCodeEncoder",
    "SentenceTransformerEncoder",
    "TorchEncoder",
    "TransformersEncoder",
    "canonical_dtype",
    "framing_template",
    "framing_tokens",
    "is_sentence_transformers_model",
    "make_encoder",
    "model_max_length",
    "plan_batches",
    "pool",
    "resolve_device",
    "resolve_dtype",
    "sentence_transformers_similarity",
]

_LOCAL = {
    "transformers": TransformersEncoder,
    "sentence-transformers": SentenceTransformerEncoder,
    "remote-code": RemoteCodeEncoder,
    "gritlm": GritLMEncoder,
}


def make_encoder(
    settings: EncoderSettings,
    device: str | None = None,
    batch_size: int = 32,
    token_budget: int | None = None,
    **api_options: Unpack[ApiOptions],
) -> Encoder:
    """The encoder implementation for ``settings.loader`` (``auto``: a sentence-transformers model
    -- a folder or a cached hub id with ``modules.json`` -- through sentence-transformers, anything
    else through plain transformers with pooling); ``api_options`` (key, URL, retries) go to APIs."""
    loader = settings.loader
    if loader == "auto":
        st = is_sentence_transformers_model(settings.model, settings.model_revision)
        loader = "sentence-transformers" if st else "transformers"
    if loader in API_LOADERS:
        return APIEncoder(settings, batch_size=batch_size, **api_options)
    if api_options:
        raise R2MedError(f"option(s) {', '.join(sorted(api_options))} only apply to API embedders")
    return _LOCAL[loader](settings, device=device, batch_size=batch_size, token_budget=token_budget)
