"""One OpenAI-compatible LLM client for all of r2med (query expansion, LLM reranking).

It talks to any endpoint that speaks OpenAI's ``/v1/chat/completions`` (OpenAI, vLLM,
Ollama, llama.cpp server) through the ``openai`` package (extra ``llm``) and adds what a
benchmark run needs on top:

* **bounded concurrency** -- ``chat_many`` runs up to ``concurrency`` requests at once
  (threads; the openai client is thread-safe), results come back in input order;
* **retries** -- 408/409/425/429/5xx, timeouts and dropped connections are retried
  (:mod:`r2med.infra.retry`: exponential backoff with jitter, or the server's ``Retry-After`` /
  ``retry-after-ms``); 401/403/404 and an endpoint that never answered are fatal (:class:`LLMError`);
* **an on-disk request cache** -- every successful answer is appended (one JSON line,
  flushed and fsync'd) to ``cache_dir("llm")/<model>-<hash>.jsonl`` *before* it is
  returned, keyed by (model, messages, sampling params).  A re-run costs no request and
  an interrupted run resumes where it stopped; a torn last line (a crash mid-write) or a
  line whose ``text``/``usage`` is missing or of the wrong type is skipped on reload (with
  a warning), so its request is sent again.  Identical requests within one batch are sent once;
* **usage counters** -- requests, cache hits, retries, failures, prompt/completion tokens;
* **no credentials on disk** -- a ``base_url`` with userinfo (``https://user:key@host``) is
  used for requests but recorded and shown as ``https://***@host``.

API (stable; used by ``r2med.expansion`` and ``r2med.rerank``)::

    client = LLMClient("gpt-4o", base_url=None, api_key=None, concurrency=16, timeout=120,
                       max_retries=6, cache=True)
    results = client.chat_many([[{"role": "user", "content": "hi"}], ...], temperature=0.8)
    for r in results:
        r.ok, r.text, r.error, r.cached, r.attempts, r.usage
    client.usage.as_dict()

``chat_many`` never raises for one failed item: the item's ``Result`` carries ``error``.
It raises :class:`LLMError` (an ``R2MedError``) only for problems no retry can fix
(bad API key, unknown model, unreachable endpoint).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict
from urllib.parse import parse_qsl, urlsplit, urlunsplit

import httpx2

from ..errors import MissingExtraError, R2MedError
from .containment import refuse_links
from .deadline import deadline_http_client, request_deadline
from .home import cache_dir, contain, fingerprint, located, os_error_text
from .input_files import TooLong, bounded_lines, is_stream, kind_of, open_regular
from .json_types import JsonValue
from .llm_defaults import CONCURRENCY, MAX_RETRIES, TIMEOUT
from .redact import redact_url
from .retry import Cancelled, GaveUp, RetryPolicy, Transient, call_with_retries, parse_retry_after, retryable

if TYPE_CHECKING:
    import openai
    from openai.types.chat import ChatCompletion

log = logging.getLogger(__name__)

Message = Mapping[str, str]
Messages = Sequence[Message]
#: sampling parameters (``temperature``, ``top_p``, ``max_tokens``, ``seed``, ``stop`` ...): JSON values of the
#: request's body, sent as given (None: left out)
Sampling = Mapping[str, JsonValue]

FATAL_STATUS = {
    401: "the endpoint rejected the API key (401); set OPENAI_API_KEY or pass --api-key",
    403: "the endpoint refused access (403); check the API key's permissions",
    404: "the endpoint has no such model or route (404); check --model and --base-url",
}
CACHE_FORMAT = 1


class LLMError(R2MedError):
    """A problem no retry can fix (credentials, unknown model, unreachable endpoint)."""


@dataclass
class Result:
    """The outcome of one request: ``text`` when ``ok``, otherwise ``error`` (one line)."""

    text: str | None = None
    error: str | None = None
    cached: bool = False
    attempts: int = 0
    usage: dict[str, int] = field(default_factory=dict)
    finish_reason: str | None = None
    key: str = ""

    @property
    def ok(self) -> bool:
        return self.error is None and self.text is not None


@dataclass
class Usage:
    """Counters over the client's life (thread-safe updates through :meth:`add`)."""

    requests: int = 0  # HTTP requests sent (including retries)
    succeeded: int = 0  # answers received from the endpoint
    cache_hits: int = 0
    retries: int = 0
    failed: int = 0  # items given up on
    retrying: int = 0  # gauge: requests that met a transient error and are not finished yet
    prompt_tokens: int = 0
    completion_tokens: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, **counts: int) -> None:
        with self._lock:
            for name, value in counts.items():
                setattr(self, name, getattr(self, name) + value)

    def as_dict(self) -> dict[str, int]:
        with self._lock:
            return {f.name: getattr(self, f.name) for f in fields(self) if not f.name.startswith("_")}


def request_key(model: str, messages: Messages, sampling: Sampling) -> str:
    """Cache key of one request: (model, messages, sampling params), order-insensitive in the params."""
    return fingerprint(
        "chat",
        CACHE_FORMAT,
        model,
        [dict(m) for m in messages],
        {k: v for k, v in sorted(sampling.items()) if v is not None},
    )


class CachedAnswer(TypedDict):
    """One usable line of the answer cache, as it is read back (the line may hold more: ``time``, ``model``)."""

    key: str
    text: str
    usage: dict[str, int]
    finish_reason: str | None


class RequestCache:
    """Append-only JSONL store of answers: ``{"key", "text", "usage", "finish_reason"}`` per line.

    Appends are single ``write`` calls on an ``O_APPEND`` descriptor followed by ``fsync``,
    so concurrent writers (threads or processes) never interleave inside a line and a line
    that was returned to a caller survives a crash.  Unusable lines -- not JSON (a torn
    tail), or without a text ``key``, a text ``text`` and a ``usage`` object of counts --
    are skipped on load with one warning, so their requests are sent again; before the
    first append a missing final newline is restored so a torn fragment stays on its own line.
    """

    def __init__(self, path: str | os.PathLike[str]):
        self.path = contain(path)  # in the home: no folder on the way is a link
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise R2MedError(
                f"{self.path.parent}: cannot create the LLM answer cache ({exc.strerror or exc})"
            ) from None
        if self.path.is_symlink():  # appends would land in the link's target, outside the home
            refuse_links(self.path.parent, self.path, include_last=True)
        self._drop_if_not_a_file()
        target = self.path if self.path.exists() else self.path.parent
        if self.path.is_dir() or not os.access(target, os.W_OK):
            # found now, not as a failure of every request after the answers were paid for
            raise R2MedError(
                f"{self.path}: the LLM answer cache cannot be written; set R2MED_HOME to a "
                "writable folder (or pass --no-cache)"
            )
        self._lock = threading.Lock()
        self._entries: dict[str, CachedAnswer] = {}
        self._fd: int | None = None
        self.skipped_lines = 0
        self._load()

    def _drop_if_not_a_file(self) -> None:
        """A FIFO, a device or a socket where the cache goes is damage: reported and removed (the cache starts
        again), never read or appended to -- a FIFO would be waited on, ``/dev/zero`` read without end."""
        if is_stream(self.path):
            log.warning(
                "%s: is %s, not the LLM answer cache file; removed, the cache starts again",
                self.path,
                kind_of(os.stat(self.path).st_mode),
            )
            try:
                self.path.unlink()
            except OSError as exc:
                raise R2MedError(f"{self.path}: cannot remove it ({exc.strerror or exc})") from None

    def _load(self) -> None:
        if not self.path.exists():
            return
        first: tuple[int, str] | None = None
        with open_regular(self.path) as handle:
            lines = bounded_lines(handle, self.path)
            number = 0
            while True:
                try:
                    number, raw = next(lines)
                except StopIteration:
                    break
                except TooLong:  # a damaged tail: what follows it is not read
                    self.skipped_lines += 1
                    first = first or (number + 1, "longer than the longest line r2med reads")
                    break
                if not raw.strip():
                    continue
                read: CachedAnswer | str
                try:
                    entry: JsonValue = json.loads(raw)
                except (ValueError, RecursionError):  # incl. bad UTF-8: a torn or damaged line
                    read = "not a JSON line (an interrupted write?)"
                else:
                    read = read_entry(entry)
                if not isinstance(read, str):
                    self._entries[read["key"]] = read
                    continue
                problem = read
                self.skipped_lines += 1
                first = first or (number, problem)
        if first is not None:
            log.warning(
                "%s: skipped %d unusable line(s) (first: line %d: %s); their requests will be sent again",
                self.path,
                self.skipped_lines,
                *first,
            )

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: str) -> bool:
        return key in self._entries

    def get(self, key: str) -> CachedAnswer | None:
        return self._entries.get(key)

    def put(
        self,
        key: str,
        text: str,
        usage: Mapping[str, int] | None = None,
        finish_reason: str | None = None,
        **extra: JsonValue,
    ) -> None:
        """Append one answer (``extra``: more facts the line records, e.g. the ``model``)."""
        counts = dict(usage or {})
        entry = {
            "key": key,
            "text": text,
            "usage": counts,
            "finish_reason": finish_reason,
            "time": round(time.time(), 3),
            **extra,
        }
        data = (json.dumps(entry, ensure_ascii=False) + "\n").encode("utf-8")
        with self._lock:
            if self._fd is None:
                self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
                size = os.fstat(self._fd).st_size
                if size:
                    with open(self.path, "rb") as handle:
                        handle.seek(size - 1)
                        if handle.read(1) != b"\n":
                            os.write(self._fd, b"\n")
            try:
                os.write(self._fd, data)
                os.fsync(self._fd)
            except OSError as exc:  # e.g. a full disk: say which file; fatal for the batch (see chat_many)
                raise R2MedError(os_error_text(located(exc, self.path))) from exc
            self._entries[key] = CachedAnswer(key=key, text=text, usage=counts, finish_reason=finish_reason)

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None

    def __del__(self) -> None:  # pragma: no cover - best effort
        with contextlib.suppress(Exception):
            self.close()


def read_entry(entry: JsonValue) -> CachedAnswer | str:
    """A parsed cache line as an answer, or why it cannot be used as one (a ``finish_reason`` that is not text
    reads as None)."""
    if not isinstance(entry, dict):
        return f"expected an object, got {type(entry).__name__}"
    key = entry.get("key")
    if not isinstance(key, str) or not key:
        return "no text 'key'"
    text = entry.get("text")
    if not isinstance(text, str):
        return "missing 'text'" if "text" not in entry else f"'text' is {type(text).__name__}, not text"
    usage = entry.get("usage")
    if not isinstance(usage, dict):
        return "missing 'usage'" if "usage" not in entry else f"'usage' is {type(usage).__name__}, not an object"
    counts: dict[str, int] = {}
    for name, value in usage.items():
        if not (isinstance(value, int) and not isinstance(value, bool) and value >= 0):
            return f"usage {name!r} is {value!r}, not a count"
        counts[name] = value
    finish = entry.get("finish_reason")
    return CachedAnswer(key=key, text=text, usage=counts, finish_reason=finish if isinstance(finish, str) else None)


def arrived_usage(usage: object) -> dict[str, int]:
    """The token counts of a reply as the cache's reader accepts them (:func:`read_entry`), checked once
    on arrival: a count that is missing, negative, not an integer or absurd is left out (logged), so the
    answer is cached and used on resume instead of being skipped there and paid for again."""
    counts: dict[str, int] = {}
    if usage is None:
        return counts
    for name in ("prompt_tokens", "completion_tokens"):
        value = getattr(usage, name, None)
        if value is None:
            continue
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**53:
            counts[name] = value
        else:
            log.debug("the endpoint reported usage %s=%r, not a count; left out", name, value)
    return counts


def split_query(url: str | None) -> tuple[str | None, dict[str, str]]:
    """``http://h/v1?key=K`` -> (``http://h/v1``, ``{"key": "K"}``): the openai client joins routes to the
    base URL's path, so a query string (an ``api-version``, a key) is sent as its default query instead."""
    if url is None or "?" not in url:
        return url, {}

    parts = urlsplit(url)
    return urlunsplit(parts._replace(query="", fragment="")), dict(parse_qsl(parts.query, keep_blank_values=True))


def default_cache_path(model: str) -> Path:
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", model).strip("_")[:60] or "model"
    return cache_dir("llm") / f"{safe}-{fingerprint(model)[:8]}.jsonl"


class LLMClient:
    """An OpenAI-compatible chat client with bounded concurrency, retries and an on-disk cache.

    ``base_url=None`` means OpenAI itself (then an API key is required: ``api_key`` or
    ``$OPENAI_API_KEY``); a local endpoint (``http://localhost:8000/v1``) needs no key.
    ``cache`` is ``True`` (the default file for the model under the r2med home), ``False``
    (no cache) or a path.
    """

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        concurrency: int = CONCURRENCY,
        timeout: float = TIMEOUT,
        max_retries: int = MAX_RETRIES,
        cache: bool | str | os.PathLike[str] = True,
        backoff_base: float = 1.0,
        backoff_max: float = 60.0,
        seed: int | None = None,
    ):
        if not model:
            raise R2MedError("an LLM model name is required (--model)")
        if concurrency < 1:
            raise R2MedError("--concurrency must be at least 1")
        self.model = model
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL") or None  # used for requests only
        self.shown_url = redact_url(self.base_url) or "https://api.openai.com/v1"  # recorded and printed
        key = api_key or os.environ.get("OPENAI_API_KEY")
        if not key:
            if self.base_url is None:
                raise LLMError(
                    "no API key for the OpenAI API: set OPENAI_API_KEY or pass --api-key "
                    "(or --base-url for a local endpoint)"
                )
            key = "EMPTY"  # local servers (vLLM, Ollama, llama.cpp) ignore it
        self._api_key = key
        self.concurrency = int(concurrency)
        self.timeout = float(timeout)
        self.max_retries = int(max_retries)
        self.retry = RetryPolicy(self.max_retries, float(backoff_base), float(backoff_max), seed)
        self.usage = Usage()
        if cache is True:
            self.cache: RequestCache | None = RequestCache(default_cache_path(model))
        elif cache:
            self.cache = RequestCache(cache)
        else:
            self.cache = None
        self._client: openai.OpenAI | None = None
        self._client_lock = threading.Lock()
        self._ever_connected = False

    # -- the underlying openai client -------------------------------------------------------------
    def _openai(self) -> openai.OpenAI:
        with self._client_lock:
            if self._client is None:
                try:
                    import openai
                except ImportError:
                    raise MissingExtraError("openai", "llm", "LLM generation") from None

                base_url, query = split_query(self.base_url)
                self._client = openai.OpenAI(
                    api_key=self._api_key,
                    base_url=base_url,
                    default_query=query or None,
                    timeout=self.timeout,
                    max_retries=0,
                    http_client=deadline_http_client(self.timeout),
                )
            return self._client

    def describe(self) -> dict[str, str]:
        return {"model": self.model, "base_url": self.shown_url}

    # -- one request --------------------------------------------------------------------------------
    def key(self, messages: Messages, **sampling: JsonValue) -> str:
        return request_key(self.model, messages, sampling)

    def cached(self, messages: Messages, **sampling: JsonValue) -> Result | None:
        """The cached answer for a request, or None (no request is made)."""
        return self._cached_by_key(self.key(messages, **sampling))

    def _cached_by_key(self, key: str) -> Result | None:
        if self.cache is None:
            return None
        entry = self.cache.get(key)
        if entry is None:
            return None
        return Result(
            text=entry["text"],
            cached=True,
            usage=dict(entry["usage"]),
            finish_reason=entry["finish_reason"],
            key=key,
        )

    def chat(self, messages: Messages, **sampling: JsonValue) -> Result:
        """One chat request (cache, retries); raises :class:`LLMError` only for fatal problems."""
        return self.chat_many([messages], None, None, **sampling)[0]

    def _send(self, messages: Messages, sampling: Sampling) -> tuple[str, dict[str, int], str | None]:
        import openai

        # the SDK types each message role and sampling parameter apart; r2med sends the caller's plain role/content
        # messages and JSON sampling values as they are (the reply is a ChatCompletion: stream is never set)
        create: Callable[..., ChatCompletion] = self._openai().chat.completions.create
        params = {k: v for k, v in sampling.items() if v is not None}
        self.usage.add(requests=1)
        try:
            with request_deadline(self.timeout):  # the whole request, not each read (a dripping server)
                response = create(model=self.model, messages=[dict(m) for m in messages], **params)
        except openai.APITimeoutError:
            raise Transient(f"no complete answer within {self.timeout:g}s (--timeout)") from None
        except openai.APIConnectionError as exc:
            cause = exc.__cause__ or exc
            if _reached(cause):  # connected, then the answer broke off: not an unreachable endpoint
                self._ever_connected = True
                raise Transient(f"{self.describe()['base_url']} broke off its answer ({_short(cause)})") from None
            raise Transient(
                f"cannot connect to {self.describe()['base_url']} ({_short(cause)})", connect=True
            ) from None
        except openai.APIStatusError as exc:
            status = exc.status_code
            headers = dict(exc.response.headers) if exc.response is not None else {}
            self._ever_connected = True
            if status in FATAL_STATUS:
                raise LLMError(
                    f"{self.describe()['base_url']}: {FATAL_STATUS[status]} [model {self.model!r}]"
                ) from None
            detail = _short(exc.message)
            if retryable(status):
                raise Transient(f"HTTP {status}: {detail}", retry_after=parse_retry_after(headers)) from None
            raise _Permanent(f"HTTP {status}: {detail}") from None
        except openai.APIError as exc:  # e.g. a reply that is not a chat completion
            self._ever_connected = True
            raise Transient(f"bad reply from the endpoint ({type(exc).__name__}: {_short(exc)})") from None
        except RecursionError:  # the client's JSON parser on an answer nested deeper than it goes
            self._ever_connected = True
            raise Transient("bad reply from the endpoint (JSON nested too deeply)") from None
        self._ever_connected = True
        choice = response.choices[0] if response.choices else None
        text = getattr(getattr(choice, "message", None), "content", None) if choice else None
        if text is None:
            raise Transient("the endpoint returned no message content")
        if not isinstance(text, str):
            raise Transient(f"the endpoint returned message content of type {type(text).__name__}, not text")
        finish = getattr(choice, "finish_reason", None)
        return text, arrived_usage(getattr(response, "usage", None)), finish if isinstance(finish, str) else None

    def _run_one(
        self,
        messages: Messages,
        sampling: Sampling,
        key: str,
        on_retry: Callable[[str], None] | None,
        stop: threading.Event,
    ) -> Result:
        attempts = 0
        retrying = False

        def attempt() -> tuple[str, dict[str, int], str | None]:
            nonlocal attempts
            if stop.is_set():
                raise Cancelled()
            attempts += 1
            return self._send(messages, sampling)

        def on_transient(exc: Transient, tries: int, delay: float | None) -> None:
            nonlocal retrying
            if exc.connect and not self._ever_connected and tries >= min(self.max_retries + 1, 2):
                raise LLMError(f"LLM endpoint unreachable: {redact_url(str(exc))}; check --base-url")
            if delay is not None:
                self.usage.add(retries=1, retrying=0 if retrying else 1)
                retrying = True
                if on_retry is not None:
                    on_retry(str(exc))
                log.debug("retrying in %.2fs after: %s", delay, exc)

        try:
            text, usage, finish = call_with_retries(attempt, self.retry, on_transient, wait=stop.wait)
        except Cancelled:
            return Result(error="cancelled", attempts=attempts, key=key)
        except (_Permanent, GaveUp) as exc:
            self.usage.add(failed=1)
            return Result(error=str(exc), attempts=attempts, key=key)
        finally:
            if retrying:
                self.usage.add(retrying=-1)
        self.usage.add(
            succeeded=1,
            prompt_tokens=usage.get("prompt_tokens", 0),
            completion_tokens=usage.get("completion_tokens", 0),
        )
        if self.cache is not None:
            self.cache.put(key, text, usage, finish, model=self.model)  # before anyone uses it
        return Result(text=text, attempts=attempts, usage=usage, finish_reason=finish, key=key)

    # -- many requests ------------------------------------------------------------------------------
    def chat_many(
        self,
        batch: Sequence[Messages],
        on_result: Callable[[int, Result], None] | None = None,
        on_retry: Callable[[str], None] | None = None,
        **sampling: JsonValue,
    ) -> list[Result]:
        """Answer every message list in ``batch`` (same sampling), in input order.

        Cached answers come back without a request; identical requests are sent once.
        ``on_result(i, result)`` is called as each item finishes (cached ones first),
        ``on_retry(error)`` on each retry -- e.g. to drive a progress bar.
        """
        results: list[Result | None] = [None] * len(batch)
        pending: dict[str, list[int]] = {}
        for i, messages in enumerate(batch):
            key = self.key(messages, **sampling)
            hit = self._cached_by_key(key)
            if hit is not None:
                self.usage.add(cache_hits=1)
                results[i] = hit
                if on_result:
                    on_result(i, hit)
            else:
                pending.setdefault(key, []).append(i)
        if pending:
            stop = threading.Event()
            fatal: R2MedError | None = None  # an LLMError, or the answer cache that cannot be written
            with ThreadPoolExecutor(
                max_workers=min(self.concurrency, len(pending)), thread_name_prefix="r2med-llm"
            ) as pool:
                futures = {
                    pool.submit(self._run_one, batch[idx[0]], sampling, key, on_retry, stop): key
                    for key, idx in pending.items()
                }
                remaining = set(futures)
                try:
                    while remaining:
                        done, remaining = wait(remaining, return_when=FIRST_COMPLETED)
                        for fut in done:
                            key = futures[fut]
                            try:
                                res = fut.result()
                            except R2MedError as exc:
                                fatal = fatal or exc
                                stop.set()
                                continue
                            except Exception as exc:  # a bug or an odd reply must not lose the other items
                                log.debug("request failed", exc_info=True)
                                self.usage.add(failed=1)
                                res = Result(error=f"{type(exc).__name__}: {_short(exc)}", key=key)
                            for j, i in enumerate(pending[key]):
                                item = res if j == 0 else Result(**{**res.__dict__, "cached": res.ok})
                                results[i] = item
                                if on_result:
                                    on_result(i, item)
                except BaseException:
                    stop.set()
                    raise
            if fatal is not None:
                raise fatal
        return [r if r is not None else Result(error="cancelled") for r in results]

    def close(self) -> None:
        if self.cache is not None:
            self.cache.close()
        if self._client is not None:
            with contextlib.suppress(Exception):  # pragma: no cover
                self._client.close()

    def __enter__(self) -> LLMClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _reached(cause: BaseException) -> bool:
    """Whether a connection error happened after the endpoint was reached (a truncated or garbled answer)."""
    return isinstance(cause, (httpx2.RemoteProtocolError, httpx2.ReadError, httpx2.DecodingError)) and not isinstance(
        cause, httpx2.ConnectError
    )


class _Permanent(Exception):
    """A request the endpoint will never accept (e.g. HTTP 400): reported per item, not retried."""


def _short(text: object, limit: int = 200) -> str:
    one = " ".join(str(text).split())
    return one if len(one) <= limit else one[: limit - 1] + "…"
