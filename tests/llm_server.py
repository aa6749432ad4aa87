"""A small OpenAI-compatible HTTP server on 127.0.0.1 for tests and benchmarks (no mocks of the client).

Reusable by every test that needs an LLM endpoint (expansion, LLM reranking)::

    from llm_server import LLMServer, Faults, default_reply

    with LLMServer() as server:                       # background thread, free port
        client = LLMClient("test-model", base_url=server.base_url)
        ...
        server.requests                               # HTTP requests seen (all endpoints)
        server.completions                            # 200 answers given
        server.prompts                                # last user message of each request, in order
        server.queries                                # query string of each completion request

Behaviour
---------
* ``POST /v1/chat/completions`` and ``POST /v1/completions`` answer deterministically from
  the prompt: ``default_reply(prompt)`` (a pure function tests can call to know the
  expected text), or ``responder(messages, body) -> str`` when given, or the next entry of
  ``script`` (a list of strings consumed in order; when it runs out, the default reply).
  ``usage`` counts whitespace tokens of prompt and reply.  ``GET /v1/models`` lists the model.
* Fault injection (``Faults``): a share of requests gets 429 with ``Retry-After``, 500, a
  hang longer than the client's timeout, or a slow answer; ``latency`` delays every answer.
  Which request fails is decided by a seeded RNG, and one prompt is faulted at most
  ``max_faults_per_prompt`` times, so a client that retries always finishes.
* Broken bodies (``Faults``, every answer): ``drip_s`` sends the body one byte every ``drip_s`` seconds
  (headers at once: a server that never lets a per-read timeout fire); ``truncate`` sends the headers
  and half the body, then closes the connection.  ``usage`` overrides fields of the reported usage
  (e.g. ``{"prompt_tokens": -5}``).
* ``api_key`` makes the server demand ``Authorization: Bearer <api_key>`` (else 401).
* ``wait_for(n)`` blocks until ``n`` requests arrived (for kill-half-way tests).

Run it standalone (for the benchmark or by hand): ``python tests/llm_server.py --port 8011 --latency 0.2``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

WORDS = (
    "cell",
    "protein",
    "gene",
    "insulin",
    "receptor",
    "therapy",
    "patient",
    "diagnosis",
    "enzyme",
    "membrane",
    "virus",
    "antibody",
    "neuron",
    "kidney",
    "liver",
    "heart",
    "lung",
    "blood",
    "tissue",
    "pathway",
    "mutation",
    "dose",
    "symptom",
    "infection",
    "hormone",
    "signal",
    "drug",
    "trial",
)


def prompt_of(messages: list[dict[str, Any]]) -> str:
    """The text the default reply is derived from: the last user message (or the whole prompt)."""
    for message in reversed(messages):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):  # content parts
                return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
            return str(content)
    return ""


def default_reply(prompt: str) -> str:
    """A deterministic pseudo-passage for a prompt: 'passage <hash>: ' + 12 words chosen by the hash."""
    digest = hashlib.sha256(prompt.encode("utf-8")).hexdigest()
    rng = random.Random(digest)
    return f"passage {digest[:12]}: " + " ".join(rng.choice(WORDS) for _ in range(12))


@dataclass
class Faults:
    """Shares (0..1) of requests that fail in each way, decided by a seeded RNG in arrival order."""

    rate_429: float = 0.0
    retry_after: float = 0.05  # seconds sent in Retry-After with a 429
    rate_500: float = 0.0
    rate_hang: float = 0.0
    hang_s: float = 5.0  # how long a hung request sleeps before answering (set above the client timeout)
    rate_slow: float = 0.0
    slow_s: float = 0.3
    latency: float = 0.0  # added to every answer
    max_faults_per_prompt: int = 2
    seed: int = 0
    drip_s: float = 0.0  # >0: every answer body is sent one byte per drip_s seconds
    truncate: bool = False  # every answer: headers and half its body, then the connection is closed
    body: bytes | None = None  # every answer: these bytes as its body (status 200), e.g. JSON nested too deeply


class LLMServer:
    """Start with ``start()`` (or a ``with`` block); ``base_url`` is ``http://127.0.0.1:<port>/v1``."""

    def __init__(
        self,
        faults: Faults | None = None,
        responder: Callable[[list[dict], dict], str] | None = None,
        script: list[str] | None = None,
        api_key: str | None = None,
        model: str = "test-model",
        port: int = 0,
        usage: dict[str, Any] | None = None,
    ):
        self.faults = faults or Faults()
        self.responder = responder
        self.script = list(script or [])
        self.api_key = api_key
        self.model = model
        self.usage_override = dict(usage or {})
        self._port = port
        self._lock = threading.Lock()
        self._arrived = threading.Condition(self._lock)
        self._closing = threading.Event()
        self._rng = random.Random(self.faults.seed)
        self._faulted: dict[str, int] = {}
        self.requests = 0
        self.completions = 0
        self.inflight = 0
        self.max_inflight = 0  # most requests handled at once (checks a client's concurrency bound)
        self.faults_sent = {"429": 0, "500": 0, "hang": 0, "slow": 0}
        self.prompts: list[str] = []
        self.bodies: list[dict[str, Any]] = []
        self.queries: list[str] = []  # the query string of each completion request ("" without one)
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle --------------------------------------------------------------------------------
    @property
    def port(self) -> int:
        assert self._httpd is not None, "start() first"
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> LLMServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/models"):
                    self._json(200, {"object": "list", "data": [{"id": server.model, "object": "model"}]})
                else:
                    self._json(404, {"error": {"message": f"no route {self.path}"}})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                with server._lock:
                    server.inflight += 1
                    server.max_inflight = max(server.max_inflight, server.inflight)
                try:
                    server._handle(self, raw)
                finally:
                    with server._lock:
                        server.inflight -= 1

            def _json(
                self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None, broken: bool = False
            ) -> None:
                data = json.dumps(payload).encode("utf-8")
                if broken and server.faults.body is not None:
                    data = server.faults.body
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for k, v in (headers or {}).items():
                        self.send_header(k, v)
                    self.end_headers()
                    if broken and server.faults.truncate:
                        self.wfile.write(data[: len(data) // 2])
                        self.wfile.flush()
                        self.close_connection = True
                    elif broken and server.faults.drip_s > 0:
                        for i in range(len(data)):
                            if server._closing.wait(server.faults.drip_s):
                                break
                            self.wfile.write(data[i : i + 1])
                            self.wfile.flush()
                    else:
                        self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout): fine

        self._httpd = ThreadingHTTPServer(("127.0.0.1", self._port), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="llm-server", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._closing.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> LLMServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def wait_for(self, n: int, timeout: float = 30.0) -> bool:
        """Block until at least ``n`` requests arrived; False on timeout."""
        deadline = time.monotonic() + timeout
        with self._arrived:
            while self.requests < n:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._arrived.wait(left)
        return True

    def count(self, prompt: str) -> int:
        """How many requests carried this prompt."""
        with self._lock:
            return sum(1 for p in self.prompts if p == prompt)

    # -- request handling ------------------------------------------------------------------------
    def _fault(self, prompt: str) -> str | None:
        f = self.faults
        with self._lock:
            if self._faulted.get(prompt, 0) >= f.max_faults_per_prompt:
                return None
            x = self._rng.random()
            kind = None
            for name, rate in (("429", f.rate_429), ("500", f.rate_500), ("hang", f.rate_hang), ("slow", f.rate_slow)):
                if x < rate:
                    kind = name
                    break
                x -= rate
            if kind is not None:
                self.faults_sent[kind] += 1
                if kind != "slow":
                    self._faulted[prompt] = self._faulted.get(prompt, 0) + 1
            return kind

    def _handle(self, handler: Any, raw: bytes) -> None:
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            handler._json(400, {"error": {"message": "malformed JSON"}})
            return
        route = handler.path.split("?", 1)[0].rstrip("/")  # a query string (?api-version=...) is not the route
        self.queries.append(handler.path.split("?", 1)[1] if "?" in handler.path else "")
        chat = route.endswith("/chat/completions")
        if not chat and not route.endswith("/completions"):
            handler._json(404, {"error": {"message": f"no route {handler.path}"}})
            return
        messages = body.get("messages") or [{"role": "user", "content": body.get("prompt", "")}]
        prompt = prompt_of(messages)
        with self._arrived:
            self.requests += 1
            self.prompts.append(prompt)
            self.bodies.append(body)
            self._arrived.notify_all()
        if self.api_key is not None and handler.headers.get("Authorization") != f"Bearer {self.api_key}":
            handler._json(401, {"error": {"message": "invalid api key", "type": "invalid_request_error"}})
            return
        if body.get("model") != self.model:
            handler._json(404, {"error": {"message": f"model {body.get('model')!r} not found"}})
            return
        fault = self._fault(prompt)
        if fault == "429":
            handler._json(
                429, {"error": {"message": "rate limited"}}, headers={"Retry-After": f"{self.faults.retry_after:g}"}
            )
            return
        if fault == "500":
            handler._json(500, {"error": {"message": "internal error (injected)"}})
            return
        if fault == "hang":
            self._closing.wait(self.faults.hang_s)
            handler._json(500, {"error": {"message": "hung (injected)"}})
            return
        delay = self.faults.latency + (self.faults.slow_s if fault == "slow" else 0.0)
        if delay:
            self._closing.wait(delay)
        with self._lock:
            scripted = self.script.pop(0) if self.script else None
        if scripted is not None:
            text = scripted
        elif self.responder is not None:
            text = self.responder(messages, body)
        else:
            text = default_reply(prompt)
        with self._lock:
            self.completions += 1
        usage = {
            "prompt_tokens": len(" ".join(str(m.get("content", "")) for m in messages).split()),
            "completion_tokens": len(text.split()),
        }
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        usage.update(self.usage_override)
        created = int(time.time())
        if chat:
            payload = {
                "id": f"chatcmpl-{self.requests}",
                "object": "chat.completion",
                "created": created,
                "model": self.model,
                "usage": usage,
                "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
            }
        else:
            payload = {
                "id": f"cmpl-{self.requests}",
                "object": "text_completion",
                "created": created,
                "model": self.model,
                "usage": usage,
                "choices": [{"index": 0, "finish_reason": "stop", "text": text, "logprobs": None}],
            }
        handler._json(200, payload, broken=True)


def main() -> None:  # pragma: no cover - manual use
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8011)
    parser.add_argument("--model", default="test-model")
    parser.add_argument("--latency", type=float, default=0.0)
    args = parser.parse_args()
    server = LLMServer(Faults(latency=args.latency), model=args.model, port=args.port).start()
    print(f"serving {server.base_url} (model {args.model!r}); Ctrl-C to stop", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.stop()


if __name__ == "__main__":
    main()
