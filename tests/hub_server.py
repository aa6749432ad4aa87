"""A small Hugging Face hub emulator and an HTTP forwarding proxy on 127.0.0.1 (no mocks of huggingface_hub).

The emulator answers what ``huggingface_hub.hf_hub_download`` asks of a hub (checked against
huggingface_hub 2.4's ``file_download.py``: ``HEAD`` for the metadata, then ``GET`` for the
bytes)::

    from hub_server import HubEmulator, ForwardingProxy, r2med_task_files, fill_hf_cache

    with HubEmulator() as hub:                              # background thread, free port
        hub.add("R2MED/Biology", files, commit, refs=("main",))
        env["HF_ENDPOINT"] = hub.url                        # then run r2med / huggingface_hub
        hub.requests                                        # [(method, path)] seen, in order
        hub.body_bytes                                      # bytes of file content sent (GET bodies)

``HEAD|GET /datasets/<owner>/<name>/resolve/<revision>/<path>`` answers like the real hub:

* a branch (``main``) or a commit as the revision: ``HEAD .../resolve/main/<path>`` is how r2med asks
  where the head is and whether it holds a file (one metadata request, as huggingface_hub makes it);
* found -> 200 with ``X-Repo-Commit`` (the commit the revision resolves to), ``ETag`` (the git
  blob sha1 of the file, quoted, as the hub sends for non-LFS files), ``Content-Length`` and,
  for ``GET``, the bytes;
* no such repo -> 401 ``X-Error-Code: RepoNotFound`` (the hub answers anonymous callers so);
  a gated repo (``gated=True``) -> 403 ``X-Error-Code: GatedRepo``;
* no such revision -> 404 ``X-Error-Code: RevisionNotFound``;
* no such file at that commit -> 404 ``X-Error-Code: EntryNotFound`` with ``X-Repo-Commit``;
* a path in ``truncated`` -> ``GET`` sends half its bytes under the full ``Content-Length`` and closes;
* ``GET /api/agent-harnesses`` (a registry huggingface_hub 2.x fetches once a day into ``HF_HOME``)
  -> an empty registry.

``ForwardingProxy`` is a plain HTTP proxy (absolute-URI requests, as clients send them to
``HTTP_PROXY``) that forwards to the target and records what it forwarded.

``r2med_task_files()`` gives real R2MED-layout files to serve: ``../shared/data/r2med-biology-demo``
(with its ``hyde/qwen-7b`` expansion) when present, else r2med's built-in demo collection.
``fill_hf_cache`` lays files out by hand as huggingface_hub's cache does
(``datasets--<owner>--<name>/blobs/<git blob sha1>``, linked from ``snapshots/<commit>/...``, + ``refs/<ref>``).
"""

from __future__ import annotations

import hashlib
import http.client
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

SHARED_DEMO = Path(__file__).resolve().parents[2] / "shared" / "data" / "r2med-biology-demo"
EXPANSION = "hyde/qwen-7b/query_with_hydoc.jsonl"


def r2med_task_files() -> dict[str, bytes]:
    """Hub path -> bytes of one R2MED task: the shared Biology demo when present, else the built-in demo."""
    if (SHARED_DEMO / "corpus.jsonl").exists():
        root, expansion = SHARED_DEMO, SHARED_DEMO / EXPANSION
    else:
        root = Path(__file__).resolve().parents[1] / "src" / "r2med" / "demo_data"
        expansion = root / "hyde" / "demo-llm" / "query_with_hydoc.jsonl"
    files = {name: (root / name).read_bytes() for name in ("corpus.jsonl", "query.jsonl", "qrels.jsonl")}
    files[EXPANSION] = expansion.read_bytes()
    return files


def git_blob_sha1(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def fill_hf_cache(
    cache: str | Path,
    repo_id: str,
    files: dict[str, bytes],
    commit: str,
    refs: tuple[str, ...] = ("main",),
    repo_type: str = "dataset",
    links: bool = True,
) -> Path:
    """Lay ``files`` out by hand in a Hugging Face hub cache at ``commit``; returns the snapshot folder.

    As huggingface_hub does: each file's bytes in ``blobs/<git blob sha1>`` and a relative link to it at
    ``snapshots/<commit>/<path>``; ``links=False``: the bytes in the snapshot itself (a cache on a
    file system without links).
    """
    repo = Path(cache) / f"{repo_type}s--{repo_id.replace('/', '--')}"
    snap = repo / "snapshots" / commit
    for rel, data in files.items():
        target = snap / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if not links:
            target.write_bytes(data)
            continue
        blob = repo / "blobs" / git_blob_sha1(data)
        blob.parent.mkdir(parents=True, exist_ok=True)
        blob.write_bytes(data)
        target.unlink(missing_ok=True)
        target.symlink_to(os.path.relpath(blob, target.parent))
    (repo / "refs").mkdir(parents=True, exist_ok=True)
    for ref in refs:
        (repo / "refs" / ref).write_text(commit)
    return snap


class HubEmulator:
    """Serves dataset repos ``{repo_id: {commit: {path: bytes}}}`` with refs, recording every request."""

    def __init__(self) -> None:
        self.repos: dict[str, dict[str, dict[str, bytes]]] = {}
        self.refs: dict[str, dict[str, str]] = {}
        self.gated: set[str] = set()
        self.truncated: set[str] = set()  # file paths whose GET sends half the body, then closes
        self.requests: list[tuple[str, str]] = []
        self.body_bytes = 0  # file content sent in GET bodies of resolve URLs: what was downloaded
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def add(
        self, repo_id: str, files: dict[str, bytes], commit: str, refs: tuple[str, ...] = (), gated: bool = False
    ) -> None:
        self.repos.setdefault(repo_id, {})[commit] = dict(files)
        for ref in refs:
            self.refs.setdefault(repo_id, {})[ref] = commit
        if gated:
            self.gated.add(repo_id)

    @property
    def url(self) -> str:
        assert self._server is not None, "start the emulator first"
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def paths(self, method: str | None = None) -> list[str]:
        with self._lock:
            return [p for m, p in self.requests if method is None or m == method]

    def _answer(self, method: str, path: str) -> tuple[int, dict[str, str], bytes]:
        if path == "/api/agent-harnesses":  # huggingface_hub >= 2 fetches this registry once a day (HF_HOME)
            return 200, {"Content-Type": "application/json"}, b'{"standardEnvVars": [], "harnesses": {}}'
        parts = path.split("/")
        # /datasets/<owner>/<name>/resolve/<revision>/<path...>
        if len(parts) < 7 or parts[1] != "datasets" or parts[4] != "resolve":
            return 404, {}, b"not a resolve url"
        repo_id, revision, rel = f"{parts[2]}/{parts[3]}", unquote(parts[5]), unquote("/".join(parts[6:]))
        if repo_id not in self.repos:
            return 401, {"X-Error-Code": "RepoNotFound", "X-Error-Message": "Repository not found"}, b""
        if repo_id in self.gated:
            return 403, {"X-Error-Code": "GatedRepo", "X-Error-Message": "Access to this repo is restricted"}, b""
        commit = self.refs.get(repo_id, {}).get(revision, revision)
        if commit not in self.repos[repo_id]:
            return 404, {"X-Error-Code": "RevisionNotFound", "X-Error-Message": "Invalid rev id"}, b""
        files = self.repos[repo_id][commit]
        if rel not in files:
            return (
                404,
                {"X-Error-Code": "EntryNotFound", "X-Error-Message": "Entry not found", "X-Repo-Commit": commit},
                b"",
            )
        data = files[rel]
        return (
            200,
            {"X-Repo-Commit": commit, "ETag": f'"{git_blob_sha1(data)}"', "Content-Type": "text/plain; charset=utf-8"},
            data,
        )

    def __enter__(self) -> HubEmulator:
        emulator = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _serve(self, method: str) -> None:
                path = urlsplit(self.path).path
                with emulator._lock:
                    emulator.requests.append((method, path))
                status, headers, body = emulator._answer(method, path)
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if method == "GET" and any(path.endswith("/" + rel) for rel in emulator.truncated):
                    body = body[: len(body) // 2]  # Content-Length says more: a broken download
                    self.close_connection = True
                if method == "GET":
                    self.wfile.write(body)
                    self.wfile.flush()
                    with emulator._lock:
                        emulator.body_bytes += len(body) if status == 200 and "/resolve/" in path else 0

            def do_HEAD(self) -> None:
                self._serve("HEAD")

            def do_GET(self) -> None:
                self._serve("GET")

            def log_message(self, *args) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()


class ForwardingProxy:
    """A plain HTTP forwarding proxy on 127.0.0.1 that records ``(method, absolute url)`` of what it forwards."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []
        self._server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self._server is not None, "start the proxy first"
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> ForwardingProxy:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _forward(self, method: str) -> None:
                proxy.seen.append((method, self.path))
                target = urlsplit(self.path)  # absolute-URI form: http://host:port/path
                if not target.hostname:
                    self.send_error(400, "a proxy wants absolute URLs")
                    return
                conn = http.client.HTTPConnection(target.hostname, target.port or 80, timeout=30)
                headers = {
                    k: v
                    for k, v in self.headers.items()
                    if k.lower() not in ("proxy-connection", "connection", "keep-alive")
                }
                path = target.path + (f"?{target.query}" if target.query else "")
                conn.request(method, path, headers=headers)
                response = conn.getresponse()
                body = response.read()
                self.send_response(response.status)
                for key, value in response.getheaders():
                    if key.lower() not in ("connection", "keep-alive", "transfer-encoding", "content-length"):
                        self.send_header(key, value)
                self.send_header("Content-Length", response.getheader("Content-Length") or str(len(body)))
                self.end_headers()
                if method != "HEAD":
                    self.wfile.write(body)
                conn.close()

            def do_HEAD(self) -> None:
                self._forward("HEAD")

            def do_GET(self) -> None:
                self._forward("GET")

            def log_message(self, *args) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
