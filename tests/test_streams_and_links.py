"""Where and how r2med reads and writes (issue 40, items 1, 3, 4 and 11).

* a link inside ``R2MED_HOME`` is never written through (the rule of every atomic write, ``infra/home.contain``);
* a destination that is a device or a pipe is written as a stream, never replaced by a regular file;
* an input given as a stream (a pipe, a FIFO) is read once: the format sniff, the reader and the recorded sha256
  see the same bytes (references: the same file scored as a regular file, ``hashlib.sha256`` of the bytes sent);
* every line reader bounds a line (``/dev/zero`` is refused at once, with bounded memory), and a cache entry that
  is not a regular file (a FIFO, ``/dev/zero`` linked there) is damage: reported and rebuilt, never waited on.

The commands run as real processes where a hang or a memory blow-up is the failure (a timeout and an address-space
limit turn either into a failed test, never a stuck suite).
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import resource
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from conftest import run_r2med
from test_data import make_r2med

#: a child's address space: far above what scoring a small run takes, far below what reading /dev/zero whole takes
_MEMORY_LIMIT = 3 << 30


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (_MEMORY_LIMIT, _MEMORY_LIMIT))


def r2med_process(*args: object, timeout: float = 90, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """``python -m r2med ARGS`` as a process with a timeout and an address-space limit."""
    return subprocess.run(
        [sys.executable, "-m", "r2med", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        preexec_fn=_limited,
        cwd=cwd,
    )


def collection(root: Path, queries: int = 40, docs: int = 30) -> Path:
    """A small collection whose run file is longer than 4,096 bytes (the form sniff reads that much)."""
    make_r2med(
        root,
        corpus=[{"id": f"d{i}", "text": f"text {i}"} for i in range(docs)],
        queries=[{"id": f"q{j}", "text": f"query {j}"} for j in range(queries)],
        qrels=[{"q_id": f"q{j}", "p_id": f"d{(j * 7) % docs}", "score": 1} for j in range(queries)],
    )
    return root


def run_bytes(queries: int = 40, docs: int = 30) -> bytes:
    """A TREC run: query j ranks its judged document at rank 1 + j % 4 (reciprocal ranks 1, 1/2, 1/3, 1/4)."""
    lines = []
    for j in range(queries):
        judged = (j * 7) % docs
        order = [d for d in range(docs) if d != judged]
        order.insert(j % 4, judged)
        lines += [f"q{j} Q0 d{d} {r + 1} {100 - r} sys" for r, d in enumerate(order[:10])]
    return ("\n".join(lines) + "\n").encode()


def feed_fifo(path: Path, data: bytes) -> threading.Thread:
    """A writer that opens the FIFO ``path`` once, writes ``data`` and closes it (as ``<(cat file)`` does)."""

    def write() -> None:
        with open(path, "wb") as handle:
            handle.write(data)

    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    return thread


# ---------------------------------------------------------------- item 4: a stream is read once


def test_a_stream_run_is_scored_as_the_same_file(tmp_path):
    data_dir = collection(tmp_path / "coll")
    data = run_bytes()
    assert len(data) > 4096
    regular = tmp_path / "run.trec"
    regular.write_bytes(data)
    expected = r2med_process("score", data_dir, regular, "-m", "MRR", "-m", "nDCG@10")
    assert expected.returncode == 0, expected.stderr
    assert "recip_rank      \tall\t0.5208" in expected.stdout  # (1 + 1/2 + 1/3 + 1/4) / 4, by hand
    fifo = tmp_path / "run.fifo"
    os.mkfifo(fifo)
    feed_fifo(fifo, data)
    streamed = r2med_process("score", data_dir, fifo, "-m", "MRR", "-m", "nDCG@10", timeout=60)
    assert streamed.returncode == 0, streamed.stderr
    assert streamed.stdout == expected.stdout


def test_an_imported_stream_records_the_hash_of_what_was_read(tmp_path):
    data_dir = collection(tmp_path / "coll")
    data = run_bytes()
    fifo = tmp_path / "run.fifo"
    os.mkfifo(fifo)
    feed_fifo(fifo, data)
    res = r2med_process("import", fifo, "-d", data_dir, "--out", tmp_path / "out", "--name", "s", timeout=60)
    assert res.returncode == 0, res.stderr
    (metrics,) = (tmp_path / "out" / "s").glob("*/metrics.json")
    record = json.loads(metrics.read_text())
    assert hashlib.sha256(data).hexdigest() in json.dumps(record)
    run = (metrics.parent / "run.trec").read_text()
    assert len(run.splitlines()) == 400  # every line, not what followed the first 4,096 bytes


def test_a_stream_qrels_is_read_once_and_hashed_as_read(tmp_path):
    data_dir = collection(tmp_path / "coll")
    qrels = "".join(f"q{j} 0 d{(j * 7) % 30} 1\n" for j in range(40)).encode()
    fifo = tmp_path / "qrels.fifo"
    os.mkfifo(fifo)
    feed_fifo(fifo, qrels)
    run = tmp_path / "run.trec"
    run.write_bytes(run_bytes())
    res = r2med_process("import", run, "-d", data_dir, "--qrels", fifo, "--out", tmp_path / "o", "--name", "s")
    assert res.returncode == 0, res.stderr
    (metrics,) = (tmp_path / "o" / "s").glob("*/metrics.json")
    assert hashlib.sha256(qrels).hexdigest() in metrics.read_text()


def test_a_stream_of_jsonl_judgments_is_read_as_jsonl(tmp_path):
    """A stream has no extension to tell its form: its first ``{`` does (before: read as TREC, 'not a number')."""
    from r2med.data.files import read_qrels
    from r2med.infra.input_files import forget_streams

    fifo = tmp_path / "qrels"
    os.mkfifo(fifo)
    forget_streams()
    feed_fifo(fifo, b'{"q_id": "q1", "p_id": "d1", "score": 2}\n{"q_id": "q2", "p_id": "d 3", "score": 1}\n')
    assert read_qrels(fifo) == {"q1": {"d1": 2}, "q2": {"d 3": 1}}


# ---------------------------------------------------------------- item 11: bounded lines, regular cache entries


@pytest.mark.parametrize("role", ["run", "qrels", "--qrels"])
def test_dev_zero_as_an_input_is_one_line_with_bounded_memory(tmp_path, role):
    data_dir = collection(tmp_path / "coll")
    run = tmp_path / "run.trec"
    run.write_bytes(run_bytes())
    if role == "run":
        res = r2med_process("score", data_dir, "/dev/zero", timeout=60)
    elif role == "qrels":
        res = r2med_process("score", "/dev/zero", run, timeout=60)
    else:
        res = r2med_process(
            "import", run, "-d", data_dir, "--qrels", "/dev/zero", "--out", tmp_path / "o", "--name", "s"
        )
    assert res.returncode == 2, res.stderr
    assert res.stderr.strip().splitlines()[-1].startswith("error: /dev/zero: cannot be read")
    assert "longer than 64 MiB" in res.stderr and "Traceback" not in res.stderr


def test_a_line_longer_than_the_bound_is_refused_at_that_line(tmp_path, monkeypatch):
    from r2med.data.files import read_qrels_trec
    from r2med.errors import DataError
    from r2med.infra import input_files

    monkeypatch.setattr(input_files, "MAX_LINE_BYTES", 100)
    monkeypatch.setattr(input_files, "_BLOCK", 16)  # the long line spans many blocks: found before it is whole
    path = tmp_path / "qrels.txt"
    path.write_text("q1 0 d1 1\n" + "q2 0 " + "x" * 500 + " 1\n")
    with pytest.raises(DataError, match=r"qrels.txt: cannot be read: line 2 is longer than"):
        read_qrels_trec(path, strict=False)


def _finishes(call, seconds: float = 20.0):
    """``call()``'s result, or a failed test when it has not returned within ``seconds`` (it waits on a FIFO)."""
    box: dict[str, object] = {}

    def target() -> None:
        try:
            box["value"] = call()
        except BaseException as exc:  # handed to the test
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        pytest.fail(f"still waiting after {seconds} s (a FIFO read or written as a file?)")
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box.get("value")


def test_a_fifo_as_the_collections_label_is_damage_replaced(r2med_home):
    from r2med.infra.home import COLLECTIONS_DIR, collection_of, remember_collection

    (r2med_home / COLLECTIONS_DIR).mkdir()
    fifo = r2med_home / COLLECTIONS_DIR / "abc123.json"
    os.mkfifo(fifo)
    assert _finishes(lambda: collection_of("abc123")) is None
    _finishes(lambda: remember_collection("abc123", "medline-med"))
    assert stat.S_ISREG(os.lstat(fifo).st_mode)  # replaced by the rename: damage rebuilt
    assert collection_of("abc123") == "medline-med"


def test_refs_main_as_a_fifo_or_dev_zero_is_no_ref(hf_cache, caplog):
    from r2med.data.hub import _cached_ref

    refs = hf_cache / "datasets--org--repo" / "refs"
    refs.mkdir(parents=True)
    os.mkfifo(refs / "main")
    assert _finishes(lambda: _cached_ref("org/repo", "main", "dataset")) is None
    assert "FIFO" in caplog.text
    (refs / "main").unlink()
    (refs / "main").symlink_to("/dev/zero")
    assert _finishes(lambda: _cached_ref("org/repo", "main", "dataset")) is None


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_an_llm_answer_cache_that_is_not_a_file_is_damage_restarted(tmp_path, r2med_home, caplog, kind):
    from r2med.infra.llm import RequestCache

    path = r2med_home / "llm" / "answers.jsonl"
    path.parent.mkdir()
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")
    if kind == "dev-zero":  # a link at the very place: refused (never appended through), as before
        from r2med.errors import R2MedError

        with pytest.raises(R2MedError, match="is a link"):
            _finishes(lambda: RequestCache(path))
        return
    cache = _finishes(lambda: RequestCache(path))
    assert len(cache) == 0 and "not the LLM answer cache file" in caplog.text
    cache.put("k", "answer")
    assert RequestCache(path).get("k")["text"] == "answer"


@pytest.mark.parametrize("name", ["params.json", "vocab.json"])
def test_a_fifo_in_a_bm25_index_is_damage_rebuilt(tmp_path, caplog, name):
    from r2med.data import load_folder
    from r2med.retrieval.bm25 import BM25

    coll = load_folder(collection(tmp_path / "coll"))
    first = BM25().index(coll.corpus)
    (folder,) = [p for p in (Path(os.environ["R2MED_HOME"]) / "bm25").iterdir() if p.is_dir()]
    (folder / name).unlink()
    os.mkfifo(folder / name)
    again = _finishes(lambda: BM25().index(coll.corpus))
    assert "damaged or unreadable" in caplog.text and not again.built_from_cache
    assert again.vocab == first.vocab
    assert stat.S_ISREG(os.stat(folder / name).st_mode)


# ---------------------------------------------------------------- item 1: links inside the home


def test_a_link_inside_the_home_is_never_written_through(tmp_path, r2med_home):
    victim = tmp_path / "victim"
    victim.mkdir()
    (r2med_home / ".collections").symlink_to(victim)
    data_dir = collection(tmp_path / "coll")
    res = run_r2med("evaluate", "-r", "bm25", "-d", data_dir, "-o", tmp_path / "out")
    assert res.returncode == 0, res.stderr
    assert list(victim.iterdir()) == []
    assert "is a link" in res.stderr  # the label is not recorded, and the warning says why


def test_every_atomic_write_in_the_home_refuses_a_linked_folder(tmp_path, r2med_home):
    from r2med.errors import R2MedError
    from r2med.infra.home import atomic_dir, write_json_atomic, write_text_atomic

    victim = tmp_path / "victim"
    victim.mkdir()
    (r2med_home / "bm25").mkdir()
    (r2med_home / "bm25" / "key").symlink_to(victim)
    with pytest.raises(R2MedError, match="is a link"):
        write_json_atomic(r2med_home / "bm25" / "key" / "params.json", {})
    with pytest.raises(R2MedError, match="is a link"):
        write_text_atomic(r2med_home / "bm25" / "key" / "sub" / "x.txt", "x")
    with pytest.raises(R2MedError, match="is a link"), atomic_dir(r2med_home / "bm25" / "key" / "index"):
        pass
    assert list(victim.iterdir()) == []


def test_the_hugging_face_cache_is_held_to_the_same_rule(tmp_path, hf_cache, monkeypatch):
    from r2med.data import hub

    victim = tmp_path / "victim"
    victim.mkdir()
    repo = hf_cache / "datasets--org--repo"
    repo.mkdir(parents=True)
    (repo / "refs").symlink_to(victim)
    monkeypatch.setitem(hub._RESOLVED, ("dataset", "org/repo", "a" * 40), {"main"})  # this process resolved main
    hub._write_refs("org/repo", "a" * 40, "dataset")  # best effort: refused, nothing written
    assert list(victim.iterdir()) == []
    (repo / "refs").unlink()
    monkeypatch.setitem(hub._RESOLVED, ("dataset", "org/repo", "a" * 40), {"main"})
    hub._write_refs("org/repo", "a" * 40, "dataset")  # without the link: written, as huggingface_hub writes it
    assert (repo / "refs" / "main").read_text() == "a" * 40


# ---------------------------------------------------------------- item 3: devices and pipes written as streams


def _char_device(path: Path, minor: int = 3) -> Path:
    """A character device node in the test's folder: the null device (1, 3) or the full device (1, 7), numbers as
    Linux's Documentation/admin-guide/devices.txt gives them.  Never the machine's own /dev/null: a writer that
    replaced it would break every process on the machine."""
    if os.geteuid() != 0:
        pytest.skip("making a device node needs root")
    os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, minor))
    return path


@pytest.fixture
def results(tmp_path) -> Path:
    data_dir = collection(tmp_path / "coll")
    out = tmp_path / "out"
    for name in ("bm25", "other"):
        res = run_r2med("evaluate", "-r", "bm25", "-d", data_dir, "-o", out, "--name", name)
        assert res.returncode == 0, res.stderr
    return out


#: Every option naming a file a command writes (enumerated from the CLI below), with a run onto a device node.
DEVICE_CASES = {
    "report -o": ("report", "{out}", "-o", "{dest}"),
    "report --html": ("report", "{out}", "--html", "{dest}"),
    "report -f latex -o": ("report", "{out}", "--format", "latex", "-o", "{dest}"),
    "compare -o": ("compare", "{out}/bm25", "{out}/other", "-o", "{dest}"),
    "plot -o": ("plot", "{out}", "-o", "{dest}"),
}


def test_every_file_destination_option_has_a_device_case():
    """The options naming a file (``output``, ``html``) of every command, read from the typer app: each is run onto
    a device node below, so a new command writing a file is covered (folders, ``--out``, are refused as devices by
    the one folder writer, ``atomic_dir``)."""
    import typer.main

    from r2med.cli import app

    found: set[str] = set()

    def walk(path: list[str], command: object) -> None:
        subs = getattr(command, "commands", None)
        for name, sub in (subs or {}).items():
            walk([*path, name], sub)
        for param in getattr(command, "params", []) if not subs else []:
            if param.name in ("output", "html"):
                found.add(f"{' '.join(path)} {min(param.opts, key=len)}")

    walk([], typer.main.get_command(app))
    covered = {" ".join(case.split()[:1] + case.split()[-1:]) for case in DEVICE_CASES}
    assert found <= covered, f"give each a DEVICE_CASES entry: {sorted(found - covered)}"


@pytest.mark.parametrize("args", list(DEVICE_CASES.values()), ids=list(DEVICE_CASES))
def test_a_device_destination_stays_a_device(tmp_path, results, args):
    if args[0] == "plot":
        pytest.importorskip("matplotlib")
    node = _char_device(tmp_path / ("null.png" if args[0] == "plot" else "null"))  # plot: the suffix names the format
    os.chmod(node, 0o666)  # as /dev/null is: writable by everyone
    res = run_r2med(*(a.format(out=results, dest=node) for a in args))
    assert res.returncode == 0, res.stderr
    assert stat.S_ISCHR(os.lstat(node).st_mode)
    assert stat.S_IMODE(os.lstat(node).st_mode) == 0o666  # its permissions untouched too
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".null")] == []  # no temp beside it


def test_a_full_device_is_one_line_and_stays_a_device(tmp_path, results):
    full = _char_device(tmp_path / "full", minor=7)  # what /dev/full is: every write fails with ENOSPC
    res = run_r2med("report", results, "-o", full)
    assert stat.S_ISCHR(os.lstat(full).st_mode)
    assert res.returncode == 2 and f"error: {full}: No space left on device" in res.stderr


def test_a_fifo_destination_receives_the_report(tmp_path, results):
    fifo = tmp_path / "report.fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    res = run_r2med("report", results, "-o", fifo)
    reader.join(20)
    assert res.returncode == 0, res.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert b"| system |" in got[0]


def test_a_device_named_as_a_results_folder_is_refused(tmp_path):
    from r2med.errors import R2MedError
    from r2med.infra.home import atomic_dir

    node = _char_device(tmp_path / "null")
    with pytest.raises(R2MedError, match="character device, not a folder"), atomic_dir(node):
        pass
    assert stat.S_ISCHR(os.lstat(node).st_mode)


# ---------------------------------------------------------------- house rules, enumerated from the code

SRC = Path(__file__).resolve().parents[1] / "src" / "r2med"

#: Reads that do not go through r2med.infra.input_files, each with why (module, function, call).
READS_ELSEWHERE = {
    ("data/hub_integrity.py", "_read_small", "os.open"): "O_NOFOLLOW | O_NONBLOCK, read up to a limit: the memo",
    ("infra/llm.py", "put", "open"): "one byte at the end of the answer cache _load already checked is a file",
    ("infra/user_code.py", "_load_file", "read_bytes"): "the user's module: hashed, then imported from the path",
    ("jobs/cache_entries.py", "_answers", "open"): "`cache ls`: only after entry.is_file() (a regular file)",
    ("retrieval/analyzer.py", "_standalone_nltk_module", "open"): "a module file of an installed package",
    ("retrieval/embedding_cache.py", "_load_verified", "np.load"): "memory-mapped after _regular() checked it",
    ("retrieval/embedding_cache.py", "_stored_width", "np.load"): "memory-mapped after _regular() checked it",
    ("retrieval/embedding_cache.py", "read_chunk", "np.load"): "from the handle open_regular opened",
    ("scale/store.py", "read_shard", "np.load"): "a shard store's files (its manifest checks them)",
    ("scale/store.py", "read_shard", "read_bytes"): "ShardStore.read_bytes (read_regular, or the remote store)",
    ("scale/store.py", "read_manifest", "read_bytes"): "ShardStore.read_bytes (read_regular, or the remote store)",
    ("scale/encode.py", "load_shards", "read_bytes"): "ShardStore.read_bytes (read_regular, or the remote store)",
}
#: Writes that do not go through r2med.infra.home's atomic writer, each with why.
WRITES_ELSEWHERE = {
    ("cli/__init__.py", "main", "os.open"): "stdout onto /dev/null after a broken pipe",
    ("data/hub_integrity.py", "_make_key", "os.open"): "a 0600 key made with O_EXCL, then renamed into place",
    ("data/hub_integrity.py", "_make_key", "os.replace"): "that key's rename",
    ("export/mteb.py", "_write_results", "os.replace"): "moves files inside an atomic_dir temp",
    ("infra/llm.py", "put", "os.open"): "the append-only answer cache (contained, a non-file there is removed)",
    ("serve/traces.py", "__init__", "os.open"): "the append-only trace: one os.write of one whole line a record, "
    "O_NOFOLLOW (a torn last line is ended when it is opened again)",
    ("jobs/expand.py", "claim_llm_folder", "write_text"): "a claim made by os.link of a temp (create-if-absent)",
    ("scale/encode.py", "_fault_injection", "write_text"): "the fault-injection marker of the tests",
    ("scale/store.py", "write_bytes", "write_bytes"): "a shard store's temp, renamed by the store",
    ("scale/encode.py", "encode_distributed", "write_bytes"): "ShardStore.write_bytes (a temp and a rename)",
    ("scale/store.py", "write_shard", "write_bytes"): "ShardStore.write_bytes (a temp and a rename)",
    ("scale/store.py", "write_manifest", "write_bytes"): "ShardStore.write_bytes (a temp and a rename)",
    ("scale/store.py", "write_shard", "np.save"): "into an in-memory buffer",
    ("retrieval/embedding_cache.py", "write_chunk", "np.save"): "into a handle on an atomic_path temp",
}
_WRITE_MODES = set("wax+")


def _file_calls() -> list[tuple[str, str, str, str, ast.Call, set[str]]]:
    """(module, function, kind, "read"/"write", the call, the names bound by `with atomic_path/atomic_dir as`)."""
    found = []
    for path in sorted(SRC.rglob("*.py")):
        module = path.relative_to(SRC).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        functions = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        owner: dict[int, ast.AST] = {}
        for fn in sorted(functions, key=lambda f: f.lineno):  # innermost last: it wins
            for node in ast.walk(fn):
                owner[id(node)] = fn
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            text = ast.unparse(node.func)
            kind = {"open": "open", "os.open": "os.open", "os.replace": "os.replace", "os.rename": "os.rename"}.get(
                text
            )
            if kind is None and isinstance(node.func, ast.Attribute):
                attr = node.func.attr
                if attr in ("read_bytes", "read_text", "write_text", "write_bytes") and "resources" not in text:
                    kind = attr
                elif attr == "open" and not text.startswith(("opener", "os.")):
                    kind = "open"
                elif text in ("np.load", "np.save"):
                    kind = text
            if kind is None:
                continue
            fn = owner.get(id(node))
            name = getattr(fn, "name", "<module>")
            atomic = set()
            if fn is not None:
                for w in ast.walk(fn):
                    if isinstance(w, ast.With):
                        for item in w.items:
                            call = ast.unparse(item.context_expr)
                            if call.startswith(("atomic_path(", "atomic_dir(")) and item.optional_vars is not None:
                                atomic.add(ast.unparse(item.optional_vars))
            code = ast.unparse(node)
            if kind in ("open", "os.open"):
                mode = ast.unparse(node.args[1]) if len(node.args) > 1 else ""
                mode += " ".join(ast.unparse(k.value) for k in node.keywords if k.arg == "mode")
                if kind == "open" and isinstance(node.func, ast.Attribute) and node.args:  # Path.open(mode)
                    mode = ast.unparse(node.args[0])
                writes = bool(_WRITE_MODES & set(mode.strip("'\""))) if kind == "open" else "O_WR" in code
            else:
                writes = kind in ("write_text", "write_bytes", "os.replace", "os.rename", "np.save")
            found.append((module, name, kind, "write" if writes else "read", node, atomic))
    return found


def test_every_read_goes_through_the_input_or_cache_opener():
    """Every file r2med reads is opened by r2med.infra.input_files (an input: a stream read once, lines bounded; a
    cache entry: a regular file only, never waited on) or is listed above with why; a new reader must choose."""
    stray = [
        f"{module}:{call.lineno} {name}: {ast.unparse(call)[:80]}"
        for module, name, kind, what, call, _ in _file_calls()
        if what == "read" and module != "infra/input_files.py" and (module, name, kind) not in READS_ELSEWHERE
    ]
    assert stray == [], (
        "read through r2med.infra.input_files (open_input / open_regular / read_regular):\n" + "\n".join(stray)
    )


def test_every_write_goes_through_the_contained_atomic_writer():
    """Every file r2med writes is written by r2med.infra.home's atomic writer (contained in its own roots, streams
    for devices), into a temp it hands out (``with atomic_path(...) as tmp``), or is listed above with why."""
    stray = []
    for module, name, kind, what, call, atomic in _file_calls():
        if what != "write" or module == "infra/home.py" or (module, name, kind) in WRITES_ELSEWHERE:
            continue
        target = ast.unparse(call.args[0]) if call.args and kind in ("open", "np.save") else ast.unparse(call.func)
        if any(target == a or target.startswith((f"({a} /", f"{a}.", f"{a} /")) for a in atomic):
            continue
        stray.append(f"{module}:{call.lineno} {name}: {ast.unparse(call)[:80]}")
    assert stray == [], "write through r2med.infra.home (atomic_path / write_text_atomic / atomic_dir):\n" + "\n".join(
        stray
    )


def test_the_lists_name_only_calls_that_exist():
    """A listed exception that no longer exists is dropped from the list (no stale permission)."""
    seen = {(module, name, kind) for module, name, kind, *_ in _file_calls()}
    assert set(READS_ELSEWHERE) - seen == set()
    assert set(WRITES_ELSEWHERE) - seen == set()
