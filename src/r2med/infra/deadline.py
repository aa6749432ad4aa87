"""A whole-request deadline for r2med's HTTP clients (a server dripping one byte a second cannot hold a run).

A socket timeout bounds each read, not a request: a server that sends a byte before every read times
out keeps the request alive for as long as it likes.  Here every request gets a total deadline of
``timeout`` seconds (connect, send, headers and body together); when it passes, the request fails as
a timeout (retried like one).

* The LLM client (``openai``, over ``httpx2``): :func:`deadline_http_client` is an ``httpx2.Client``
  whose connections read and write through :class:`DeadlineBackend`, which cuts every socket
  operation's timeout to what is left of the deadline :func:`request_deadline` set for the calling
  thread (threads of one client each have their own).
* The embedding APIs (``urllib``): :func:`urlopen_within` reads a whole response within a deadline,
  shutting the socket down when it passes (a drip in the headers too).
"""

from __future__ import annotations

import contextlib
import http.client
import socket
import ssl
import threading
import time
import urllib.request
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

import httpcore2
import httpx2

if TYPE_CHECKING:
    import openai

_current = threading.local()


class DeadlinePassed(TimeoutError):
    """The whole request took longer than its deadline."""


@contextlib.contextmanager
def request_deadline(seconds: float) -> Iterator[None]:
    """Within the block, this thread's requests through :class:`DeadlineBackend` end ``seconds`` from now."""
    before = getattr(_current, "deadline", None)
    _current.deadline = time.monotonic() + seconds
    try:
        yield
    finally:
        _current.deadline = before


def time_left(timeout: float | None) -> float | None:
    """``timeout`` cut to what is left of this thread's deadline (none set: ``timeout`` as it is)."""
    deadline: float | None = getattr(_current, "deadline", None)
    if deadline is None:
        return timeout
    left = deadline - time.monotonic()
    return max(left, 0.0) if timeout is None else max(min(timeout, left), 0.0)


class DeadlineStream(httpcore2.NetworkStream):
    """A network stream whose every read and write ends by the thread's deadline."""

    def __init__(self, inner: httpcore2.NetworkStream):
        self._inner = inner

    def _left(self, timeout: float | None, error: type[Exception]) -> float | None:
        left = time_left(timeout)
        if left is not None and left <= 0:
            raise error("the request's total deadline passed")
        return left

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, self._left(timeout, httpcore2.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, self._left(timeout, httpcore2.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self, ssl_context: ssl.SSLContext, server_hostname: str | None = None, timeout: float | None = None
    ) -> DeadlineStream:
        return DeadlineStream(
            self._inner.start_tls(ssl_context, server_hostname, self._left(timeout, httpcore2.ConnectTimeout))
        )

    def get_extra_info(self, info: str) -> object:
        return self._inner.get_extra_info(info)


class DeadlineBackend:
    """An ``httpcore2`` network backend (the default one inside) whose streams keep the thread's deadline."""

    def __init__(self) -> None:
        self._inner = httpcore2.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore2.SOCKET_OPTION] | None = None,
    ) -> DeadlineStream:
        return DeadlineStream(self._inner.connect_tcp(host, port, time_left(timeout), local_address, socket_options))

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[httpcore2.SOCKET_OPTION] | None = None
    ) -> DeadlineStream:
        return DeadlineStream(self._inner.connect_unix_socket(path, time_left(timeout), socket_options))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


def deadline_http_client(timeout: float) -> openai.DefaultHttpxClient:
    """An ``httpx2.Client`` (openai's defaults) whose requests keep :func:`request_deadline`.

    httpx2 offers no way to hand its transport a network backend, so the transport's connection pool
    gets it after construction (its ``_network_backend``); where that attribute is missing (another
    httpx2 version), the client is returned without it and only per-read timeouts apply.
    """
    import openai

    transport = httpx2.HTTPTransport()
    pool = getattr(transport, "_pool", None)
    if pool is not None and hasattr(pool, "_network_backend"):
        pool._network_backend = DeadlineBackend()
    return openai.DefaultHttpxClient(transport=transport, timeout=timeout)


def urlopen_within(request: urllib.request.Request, timeout: float) -> bytes:
    """The body of ``request`` read in full within ``timeout`` seconds in all, else :class:`DeadlinePassed`.

    Each socket operation also times out after ``timeout``; a watchdog shuts the connection down when
    the total passes, which ends a read that a dripping server keeps alive.
    """
    sockets: list[socket.socket] = []
    lock = threading.Lock()
    passed = threading.Event()

    def remember(conn: http.client.HTTPConnection) -> None:
        with lock:
            if conn.sock is not None:
                sockets.append(conn.sock)
                if passed.is_set():
                    _shut(conn.sock)

    class WatchedHTTP(http.client.HTTPConnection):
        def connect(self) -> None:
            super().connect()
            remember(self)

    class WatchedHTTPS(http.client.HTTPSConnection):
        def connect(self) -> None:
            super().connect()
            remember(self)

    class HTTPHandler(urllib.request.HTTPHandler):
        def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
            return self.do_open(WatchedHTTP, req)

    class HTTPSHandler(urllib.request.HTTPSHandler):
        def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
            return self.do_open(WatchedHTTPS, req)

    def expire() -> None:
        with lock:
            passed.set()
            for sock in sockets:
                _shut(sock)

    watchdog = threading.Timer(timeout, expire)
    watchdog.daemon = True
    watchdog.start()
    opener = urllib.request.build_opener(HTTPHandler, HTTPSHandler)
    try:
        with opener.open(request, timeout=timeout) as response:
            body: bytes = response.read()
    except Exception:
        if passed.is_set():
            raise DeadlinePassed(f"no complete answer within {timeout:g}s") from None
        raise
    finally:
        watchdog.cancel()
    if passed.is_set():
        raise DeadlinePassed(f"no complete answer within {timeout:g}s")
    return body


def _shut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
