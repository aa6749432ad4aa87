"""``custom``: dense retrieval with your own encoder (``--encoder MODULE:OBJ``, or an object in Python).

The object's ``encode(texts, role)`` embeds one batch (:mod:`r2med.infra.user_code` states the contract); everything
else is r2med's dense retrieval (:class:`~r2med.retrieval.dense.DenseRetriever`): length-sorted batches,
the embedding cache (keyed by the object's declared ``name`` and ``revision``, its class and the sha256 of its
code, so an encoder edited in place never reads vectors its old code made; off, with a note, when it declares
no name or its code has no file to hash), (query, expansion) averaging, cosine or dot scoring, the progress
display.  Every batch is held to the contract (:func:`~r2med.infra.user_code.check_vectors`: real finite numbers,
one row per text, one width for all batches, queries and documents alike).  Packages'
encoders registered under the entry-point group ``r2med.retrievers`` become presets of their own name.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np

from ..infra.json_types import JsonObject, JsonValue
from ..infra.user_code import (
    RETRIEVER_GROUP,
    Encoder,
    EntryPointPreset,
    Loaded,
    as_loaded,
    call_user,
    check_vectors,
    code_sha256s,
    register_entry_points,
    text_lengths,
)
from ..typed.options import CustomEncoderOptions, EntryPointEncoderOptions
from ..typed.parse import RetrieverOptions
from .dense import BATCH_SIZE, DenseRetriever, check_similarity
from .encoders import EncoderSettings
from .encoders.base import BaseEncoder
from .registry import RETRIEVERS, RetrieverMeta, options_as, register_retriever

log = logging.getLogger(__name__)


class CustomEncoder(BaseEncoder):
    """A user object's ``encode(texts, role)`` behind r2med's encoder (batches of words, longest first)."""

    def __init__(self, loaded: Loaded[Encoder], settings: EncoderSettings, batch_size: int = 32):
        super().__init__(settings, batch_size=batch_size)
        self.loaded = loaded
        #: the width of the vectors the object gave first (every later batch, of either role, must have it)
        self.width: int | None = None

    def _embed(self, texts: Sequence[str], role: str, batch_size: int) -> np.ndarray:
        contract_role = "doc" if role == "doc" else "query"  # an expansion text is embedded as a query
        where = f"encoder {self.loaded.spec or type(self.loaded.obj).__name__}"

        def batch(idx: np.ndarray) -> np.ndarray:
            chunk = [texts[i] for i in idx]
            given = call_user(where, "encode()", self.loaded.obj.encode, chunk, contract_role)
            vectors: np.ndarray = check_vectors(given, len(chunk), where, self.width)
            self.width = vectors.shape[1]
            return vectors

        return self.in_length_order(text_lengths(texts), batch_size, batch, np.concatenate)


def make_custom(task: str | None, options: RetrieverOptions) -> DenseRetriever:
    """``custom``: the encoder its options name (:class:`~r2med.typed.options.CustomEncoderOptions` requires one)."""
    given = options_as(options, CustomEncoderOptions)
    return custom_retriever(given.encoder, given.batch_size, given.similarity, given.cache)


def custom_retriever(
    encoder: object, batch_size: int | None = None, similarity: str | None = None, cache: bool = True
) -> DenseRetriever:
    """Dense retrieval over ``encoder``: a spec the user typed (``MODULE:OBJ``), an object, or a loaded one;
    ``similarity`` None: the object's declared one, else cosine; ``batch_size`` None: 32."""
    loaded = as_loaded(encoder, "encoder", "--encoder")
    declared = loaded.attribute("similarity")
    chosen = check_similarity(str(similarity or declared or "cosine"))
    name = loaded.name
    code = code_sha256s(loaded)
    if name is None and cache:
        log.warning(
            "encoder %s declares no name: its embeddings are not cached (give it a `name` and a "
            "`revision` attribute to cache them)",
            loaded.spec or type(loaded.obj).__name__,
        )
        cache = False
    elif code is None and cache:
        log.warning(
            "encoder %s: its code has no source file to hash (defined in a notebook or the interpreter), so its "
            "embeddings are not cached: the cache is keyed by the code's sha256 (define it in a .py file to cache)",
            loaded.spec or type(loaded.obj).__name__,
        )
        cache = False
    settings = EncoderSettings(
        model=f"custom:{name or loaded.spec or type(loaded.obj).__qualname__}",
        model_revision=loaded.revision,
        extra={"custom": loaded.describe()},
    )
    # the embedding cache is keyed by the declared name and revision, the object's class and the sha256 of its
    # code: an encoder edited in place (same name and revision) makes new vectors, never reads the old ones
    custom_encoder = CustomEncoder(loaded, settings, batch_size=batch_size or BATCH_SIZE)
    retriever = DenseRetriever(
        settings,
        name="custom",
        batch_size=batch_size or BATCH_SIZE,
        cache=cache,
        encoder=custom_encoder,
        similarity=chosen,
    )
    key: JsonObject = {
        "model": settings.model,
        "model_revision": settings.model_revision,
        "class": type(loaded.obj).__qualname__,
        "code_sha256": None if code is None else list[JsonValue](code),
    }
    retriever._cache_config = lambda: key  # type: ignore[method-assign]
    return retriever


register_retriever(
    RetrieverMeta(
        "custom",
        make_custom,
        "your own encoder: --encoder MODULE:OBJ (encode(texts, role) -> array)",
        options=CustomEncoderOptions,
        tolerance="assumed",
        summary={"hub_id": "--encoder MODULE:OBJ", "similarity": "the object's own, else cosine (--similarity)"},
    )
)


def _entry_point_meta(preset: EntryPointPreset) -> None:
    def factory(task: str | None, options: RetrieverOptions) -> DenseRetriever:
        given = options_as(options, EntryPointEncoderOptions)
        return custom_retriever(preset.load("encoder"), given.batch_size, given.similarity, given.cache)

    register_retriever(
        RetrieverMeta(
            preset.name,
            factory,
            f"{preset.value} (entry point{' of ' + preset.dist if preset.dist else ''})",
            options=EntryPointEncoderOptions,
            tolerance="assumed",
            summary={"hub_id": preset.value},
        )
    )


def register_retriever_entry_points() -> None:
    """The ``r2med.retrievers`` entry points as retrievers (after the built-ins: a built-in name wins)."""
    register_entry_points(RETRIEVER_GROUP, _entry_point_meta, RETRIEVERS.records)


register_retriever_entry_points()
