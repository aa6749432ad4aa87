"""API embedders against a local HTTP embeddings server: batching, retry on 429/500, truncation,
Voyage input types, key errors."""

from __future__ import annotations

import hashlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from r2med.errors import R2MedError
from r2med.retrieval import make_retriever
from r2med.retrieval.encoders import EmbeddingAPIError
from r2med.retrieval.encoders.api import token_encoding


def vector(text: str, dim: int = 8) -> list[float]:
    """The server's deterministic embedding of a text (what the client must hand back, in order)."""
    h = hashlib.blake2b(text.encode("utf-8"), digest_size=dim * 2).digest()
    return [(int.from_bytes(h[2 * i : 2 * i + 2], "little") - 32768) / 32768 for i in range(dim)]


class EmbeddingServer:
    """POST /v1/embeddings -> {"data": [{"index", "embedding"}]}; the first ``fail`` requests get
    429 (Retry-After: 0) or 500 alternately; ``key`` is required as a Bearer token; ``drip_s`` sends
    each answer one byte per ``drip_s`` seconds (``drip_headers``: the status line and headers too); ``body``: every
    answer's bytes instead."""

    def __init__(
        self,
        fail: int = 0,
        key: str = "test-key",
        drip_s: float = 0.0,
        drip_headers: bool = False,
        body: bytes | None = None,
    ):
        self.fail, self.key = fail, key
        self.body = body  # every answer's body instead (status 200), e.g. JSON nested too deeply
        self.drip_s, self.drip_headers = drip_s, drip_headers
        self.closing = threading.Event()
        self.bodies: list[dict] = []
        self.statuses: list[int] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.bodies.append(body)
                if self.headers.get("Authorization") != f"Bearer {outer.key}":
                    return self._send(401, {"error": {"message": "bad key"}})
                if len(outer.bodies) <= outer.fail:
                    return self._send(
                        429 if len(outer.bodies) % 2 else 500, {"error": {"message": "busy"}}, {"Retry-After": "0"}
                    )
                data = [{"index": i, "embedding": vector(t)} for i, t in enumerate(body["input"])]
                data.reverse()  # the client must order by index
                self._send(200, {"data": data, "model": body["model"]})

            def _send(self, status, payload, headers=None):
                raw = json.dumps(payload).encode() if outer.body is None or status != 200 else outer.body
                if outer.drip_headers:  # everything, byte by byte
                    head = (
                        f"HTTP/1.0 {status} OK\r\nContent-Type: application/json\r\nContent-Length: {len(raw)}\r\n\r\n"
                    ).encode()
                    self._drip(head + raw)
                    return
                self.send_response(status)
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                if outer.drip_s:
                    self._drip(raw)
                else:
                    self.wfile.write(raw)
                outer.statuses.append(status)

            def _drip(self, data):
                try:
                    for i in range(len(data)):
                        if outer.closing.wait(outer.drip_s):
                            return
                        self.wfile.write(data[i : i + 1])
                        self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.closing.set()
        self.httpd.shutdown()
        self.httpd.server_close()


CORPUS = {
    "d1": "insulin\nresistance",
    "d2": "heart failure",
    "d3": "kidney stones",
    "d4": "gene therapy",
    "d5": "viral load",
}


def test_openai_embedder_batches_retries_and_orders(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with EmbeddingServer(fail=3) as server:
        r = make_retriever("openai", task="Biology", base_url=server.base_url, api_key="test-key", batch_size=2)
        r.index(CORPUS)
        # retried until it worked (concurrent requests: the order the failures were answered in may vary)
        assert sorted(server.statuses[:3]) == [429, 429, 500]
        sent = [t for b in server.bodies for t in b["input"]]
        assert "insulin resistance" in sent  # newlines replaced, as the paper did
        assert all(len(b["input"]) <= 2 for b in server.bodies)
        want = np.array([vector(t.replace("\n", " ")) for t in CORPUS.values()], dtype=np.float32)
        np.testing.assert_allclose(np.asarray(r.embeddings), want, atol=1e-7)
        run = r.search({"q": "heart"}, k=5)
        qv = np.array(vector("heart"))
        cos = {d: float(want[i] @ qv) / np.linalg.norm(want[i]) for i, d in enumerate(CORPUS)}  # the paper's cos_sim
        best = max(CORPUS, key=cos.get)
        assert next(iter(run["q"])) == best
        assert server.bodies[-1]["model"] == "text-embedding-3-large"


def test_openai_truncates_long_texts():
    long = " ".join(["word"] * 20000)
    with EmbeddingServer() as server:
        r = make_retriever("openai", base_url=server.base_url, api_key="test-key")
        r.index({"d": long})
        sent = server.bodies[0]["input"][0]
        enc = token_encoding()
        if enc is not None:  # the paper's cut: 6,000 cl100k_base tokens
            assert 5990 <= len(enc.encode(sent, disallowed_special=())) <= 6000
        else:  # offline, tiktoken's BPE file unavailable: 0.75 words per token
            assert len(sent.split()) == 4500
        assert len(sent) < len(long)


def test_voyage_sends_input_types(monkeypatch):
    with EmbeddingServer() as server:
        monkeypatch.setenv("VOYAGE_API_KEY", "test-key")
        monkeypatch.setenv("VOYAGE_BASE_URL", server.base_url)
        r = make_retriever("voyage", task="Biology")
        r.index(CORPUS)
        r.search({"q": "heart"}, k=2)
        assert server.bodies[0]["input_type"] == "document" and server.bodies[-1]["input_type"] == "query"
        assert server.bodies[0]["model"] == "voyage-3"


def test_missing_or_refused_key_is_a_one_line_error(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    r = make_retriever("openai")
    with pytest.raises(R2MedError, match="OPENAI_API_KEY"):
        r.index(CORPUS)
    with EmbeddingServer() as server:
        r = make_retriever("openai", base_url=server.base_url, api_key="wrong")
        with pytest.raises(EmbeddingAPIError, match="refused"):
            r.index(CORPUS)


@pytest.mark.parametrize("drip_headers", [False, True], ids=["body", "headers"])
def test_a_dripping_server_cannot_hold_a_request_past_its_timeout(drip_headers):
    """--timeout bounds the whole request: one byte every 0.1 s never lets a per-read timeout of 1 s fire,
    yet each attempt ends after 1 s (two attempts: about 2 s, where the drip alone takes over 10 s)."""
    import time

    with EmbeddingServer(drip_s=0.1, drip_headers=drip_headers) as server:
        r = make_retriever(
            "openai", base_url=server.base_url, api_key="test-key", timeout=1.0, max_retries=1, backoff_base=0.01
        )
        start = time.monotonic()
        with pytest.raises(EmbeddingAPIError, match=r"giving up after 2 attempts.*within 1s"):
            r.index({"d": "insulin"})
        took = time.monotonic() - start
    assert took < 5.0, took


@pytest.mark.parametrize(
    "body, said",
    [
        (b'{"data": ' + b"[" * 200_000 + b"]" * 200_000 + b"}", "nested too deeply"),
        (b'{"data": ' + b"[" * 500 + b"]" * 500 + b"}", "nested more than 100 levels deep"),
        (b"[1, 2]", "not an object (list)"),
    ],
    ids=["200000-deep", "500-deep", "a-list"],
)
def test_an_answer_nested_too_deeply_or_not_an_object_is_one_line(body, said):
    """The endpoint's answer is read by the one JSON reader (``r2med.infra.home.parse_json``): nested 200,000 deep
    (``json`` raises RecursionError: a traceback before), 500 deep (parsed, then walked recursively), or not an
    object (``.get`` on a list: AttributeError before) is retried, then one line naming the endpoint."""
    with EmbeddingServer(body=body) as server:
        r = make_retriever("openai", base_url=server.base_url, api_key="test-key", max_retries=1, backoff_base=0.0)
        with pytest.raises(EmbeddingAPIError) as info:
            r.index(CORPUS)
    message = str(info.value)
    assert message.startswith(server.base_url) and "giving up after 2 attempts" in message and said in message
    assert "\n" not in message and len(message) < 300
