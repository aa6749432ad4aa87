"""Embedding APIs (OpenAI ``text-embedding-3-large``, Voyage ``voyage-3``) as encoders.

Both speak JSON over HTTPS (``POST {base_url}/embeddings``) and are called with the standard
library, so no SDK is needed.  Texts are truncated to the preset's token limit (OpenAI:
6,000 ``cl100k_base`` tokens, as the paper did; Voyage: the API's own truncation), sent in
batches, and retried through :mod:`r2med.infra.retry` (exponential backoff, or the server's
``Retry-After``) on 408/409/425/429/5xx, connection errors, broken answers and a request that took
longer than ``timeout`` in all (:mod:`r2med.infra.deadline`).  Keys come from ``OPENAI_API_KEY`` /
``VOYAGE_API_KEY`` or ``api_key=``; ``base_url`` points at any compatible endpoint (a local server in the tests).
``extra["text_form"]`` says how a text is sent: ``plain`` (the default: newlines as spaces, then cut), ``json-quoted``
(BRIGHT's OpenAI code, ``retrievers.py:56``: cut to the token limit, newlines as spaces, then ``json.dumps``'ed --
quoted and escaped, the quotes part of what is embedded) or ``as-is`` (BRIGHT's Voyage code: the text itself).

Cohere's embed API (BRIGHT's ``cohere``) is not spoken here: it answers ``POST /v1/embed`` with ``texts`` and
``input_type`` and returns ``embeddings``, not the ``POST /embeddings`` ``input`` -> ``data[].embedding`` exchange
of the two providers above.
"""

from __future__ import annotations

import http.client
import json
import logging
import os
import urllib.error
import urllib.request
from collections.abc import Sequence
from functools import cache
from typing import TYPE_CHECKING, TypedDict

import numpy as np

from ...errors import R2MedError, shown
from ...infra.deadline import DeadlinePassed, urlopen_within
from ...infra.home import parse_json
from ...infra.json_types import JsonObject, JsonValue
from ...infra.optional import required_module
from ...infra.redact import redact_url
from ...infra.retry import GaveUp, RetryPolicy, Transient, call_with_retries, parse_retry_after, retryable
from .base import BaseEncoder, EncoderSettings

if TYPE_CHECKING:
    import tiktoken

log = logging.getLogger(__name__)

PROVIDERS = {
    "openai": {"env": "OPENAI_API_KEY", "base_url": "https://api.openai.com/v1", "base_env": "OPENAI_BASE_URL"},
    "voyage": {"env": "VOYAGE_API_KEY", "base_url": "https://api.voyageai.com/v1", "base_env": "VOYAGE_BASE_URL"},
}


#: How a text is sent (``EncoderSettings.extra["text_form"]``).
TEXT_FORMS = ("plain", "json-quoted", "as-is")


class EmbeddingAPIError(R2MedError):
    """The embedding endpoint refused the request for good (bad key, bad model, retries exhausted)."""


@cache
def token_encoding(encoding: str = "cl100k_base") -> tiktoken.Encoding | None:
    """tiktoken's ``encoding``, or None when tiktoken is missing or its BPE file cannot be had (offline)."""
    try:
        found: tiktoken.Encoding = required_module("tiktoken", "llm", "counting API tokens").get_encoding(encoding)
        return found
    except Exception as exc:  # not installed, or its BPE file cannot be downloaded offline
        log.warning(
            "tiktoken %s is unavailable (%s); truncating by an estimate of 0.75 words per token",
            encoding,
            type(exc).__name__,
        )
        return None


def _items(data: JsonValue) -> list[JsonObject]:
    """The objects of an embeddings answer's ``data`` list (one per text)."""
    return [item for item in data if isinstance(item, dict)] if isinstance(data, list) else []


def _index(item: JsonObject) -> int:
    """Which text of the request an answer's item embeds (its ``index``; none: the first)."""
    index = item.get("index", 0)
    return index if isinstance(index, int) else 0


def truncate_tokens(text: str, limit: int | None) -> str:
    """Cut ``text`` to ``limit`` ``cl100k_base`` tokens (an estimate without tiktoken)."""
    if not limit:
        return text
    enc = token_encoding()
    if enc is not None:
        ids = enc.encode(text, disallowed_special=())
        return text if len(ids) <= limit else enc.decode(ids[:limit])
    words = text.split(" ")
    keep = max(1, int(limit * 0.75))
    return text if len(words) <= keep else " ".join(words[:keep])


class ApiOptions(TypedDict, total=False):
    """An embedding API's client settings (:class:`APIEncoder`'s arguments beside the encoder settings)."""

    api_key: str | None
    base_url: str | None
    timeout: float
    max_retries: int
    backoff_base: float
    backoff_max: float
    seed: int | None


class APIEncoder(BaseEncoder):
    """An embedding API as an :class:`~r2med.retrieval.encoders.base.Encoder`."""

    def __init__(
        self,
        settings: EncoderSettings,
        api_key: str | None = None,
        base_url: str | None = None,
        batch_size: int = 128,
        timeout: float = 60.0,
        max_retries: int = 6,
        backoff_base: float = 1.0,
        backoff_max: float = 60.0,
        seed: int | None = None,
    ):
        provider = settings.loader
        if provider not in PROVIDERS:
            raise R2MedError(f"unknown embedding API {provider!r}; choose from {', '.join(PROVIDERS)}")
        super().__init__(settings, batch_size)
        spec = PROVIDERS[provider]
        self.provider = provider
        self.base_url = (base_url or os.environ.get(spec["base_env"]) or spec["base_url"]).rstrip("/")
        self.shown_url = redact_url(self.base_url)  # in messages: never the URL's credentials
        self.api_key = api_key or os.environ.get(spec["env"])
        if not self.api_key:
            raise R2MedError(f"the {provider} embedding API needs a key: set {spec['env']} (or pass api_key)")
        self.timeout = timeout
        self.retry = RetryPolicy(max_retries, backoff_base, backoff_max, seed)
        self.requests = 0  # HTTP requests sent (including retries)

    def config(self) -> JsonObject:
        return {**self.settings.key(), "provider": self.provider}

    def _payload(self, texts: list[str], role: str) -> JsonObject:
        body: JsonObject = {"input": list[JsonValue](texts), "model": self.settings.model}
        if self.provider == "voyage":
            body["input_type"] = "document" if role == "doc" else "query"
            body["truncation"] = True
        else:
            body["encoding_format"] = "float"
        return body

    def _post(self, body: JsonObject) -> JsonObject:
        data = json.dumps(body).encode("utf-8")

        def attempt() -> JsonObject:
            req = urllib.request.Request(
                f"{self.base_url}/embeddings",
                data=data,
                method="POST",
                headers={"Content-Type": "application/json", "Authorization": f"Bearer {self.api_key}"},
            )
            self.requests += 1
            try:
                body = urlopen_within(req, self.timeout)  # the whole request within --timeout, not each read
            except DeadlinePassed as exc:
                raise Transient(str(exc)) from None
            except urllib.error.HTTPError as exc:
                status = exc.code
                detail = exc.read()[:200].decode("utf-8", "replace")
                if status in (401, 403):
                    raise EmbeddingAPIError(
                        f"{self.shown_url}: the API key was refused (HTTP {status}); "
                        f"check {PROVIDERS[self.provider]['env']}"
                    ) from None
                if not retryable(status):
                    raise EmbeddingAPIError(f"{self.shown_url}: HTTP {status}: {detail}") from None
                raise Transient(f"HTTP {status}", parse_retry_after(dict(exc.headers or {}))) from None
            except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
                raise Transient(f"connection problem ({getattr(exc, 'reason', exc)})") from None
            except http.client.HTTPException as exc:  # e.g. IncompleteRead: the answer broke off
                raise Transient(f"the answer broke off ({type(exc).__name__}: {exc})") from None
            try:  # one reader for JSON from outside: bad UTF-8, malformed or nested too deeply is a ValueError
                answer = parse_json(body)
            except ValueError as exc:
                raise Transient(f"the answer is not JSON r2med reads ({shown(str(exc))})") from None
            if not isinstance(answer, dict):
                raise Transient(f"the answer is JSON, but not an object ({type(answer).__name__})")
            return answer

        def on_transient(exc: Transient, attempts: int, delay: float | None) -> None:
            if delay is not None:
                log.info("%s embeddings: %s; retrying in %.1fs", self.provider, exc, delay)

        try:
            return call_with_retries(attempt, self.retry, on_transient)
        except GaveUp as exc:
            raise EmbeddingAPIError(f"{self.shown_url}: giving up after {exc.attempts} attempts ({exc.last})") from None

    def _embed(self, texts: Sequence[str], role: str, batch_size: int) -> np.ndarray:
        prefix = self.instruction(role)
        given = self.settings.extra.get("truncate_tokens") if self.provider == "openai" else None
        limit = given if isinstance(given, int) else None
        form = self.settings.extra.get("text_form", "plain")
        if form == "json-quoted":  # BRIGHT's retrievers.py:56: cut first, then sent JSON-quoted
            inputs = [json.dumps(truncate_tokens(prefix + t, limit).replace("\n", " ")) for t in texts]
        elif form == "as-is":  # BRIGHT's voyage (retrievers.py:445, 475): the text itself
            inputs = [truncate_tokens(prefix + t, limit) or " " for t in texts]
        elif form == "plain":
            inputs = [truncate_tokens((prefix + t).replace("\n", " ") or " ", limit) for t in texts]
        else:
            raise R2MedError(f"unknown text_form {form!r} of the {self.provider} embedder; choose from {TEXT_FORMS}")
        rows: list[np.ndarray] = []
        for start in range(0, len(inputs), batch_size):
            batch = inputs[start : start + batch_size]
            out = self._post(self._payload(batch, role))
            data = sorted(_items(out.get("data")), key=_index)
            if len(data) != len(batch):
                raise EmbeddingAPIError(f"{self.shown_url}: asked for {len(batch)} embeddings, got {len(data)}")
            rows.append(np.asarray([d["embedding"] for d in data], dtype=np.float32))
            self.batch_done(len(batch))
        emb = np.concatenate(rows) if rows else np.zeros((0, 0), dtype=np.float32)
        if self.settings.normalize and len(emb):
            emb /= np.maximum(np.linalg.norm(emb, axis=1, keepdims=True), 1e-12)
        return emb
