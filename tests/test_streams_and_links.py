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


def test_the_hugging_face_cache_is_held_to_the_same_rule(tmp_path, hf_cache):
    from r2med.data.hub import _write_refs

    victim = tmp_path / "victim"
    victim.mkdir()
    repo = hf_cache / "datasets--org--repo"
    repo.mkdir(parents=True)
    (repo / "refs").symlink_to(victim)
    _write_refs("org/repo", "a" * 40, "dataset")  # best effort: refused, nothing written
    assert list(victim.iterdir()) == []


# ---------------------------------------------------------------- item 3: devices and pipes written as streams


def _char_device(path: Path) -> Path:
    if os.geteuid() != 0:
        pytest.skip("making a device node needs root")
    os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # the null device's numbers (Linux devices.txt)
    return path


@pytest.fixture
def results(tmp_path) -> Path:
    data_dir = collection(tmp_path / "coll")
    out = tmp_path / "out"
    for name in ("bm25", "other"):
        res = run_r2med("evaluate", "-r", "bm25", "-d", data_dir, "-o", out, "--name", name)
        assert res.returncode == 0, res.stderr
    return out


@pytest.mark.parametrize(
    "args",
    [
        ("report", "{out}", "-o", "{dest}"),
        ("report", "{out}", "--html", "{dest}"),
        ("report", "{out}", "--format", "latex", "-o", "{dest}"),
        ("compare", "{out}/bm25", "{out}/other", "-o", "{dest}"),
    ],
    ids=["report-o", "report-html", "report-latex", "compare-o"],
)
def test_a_device_destination_stays_a_device(tmp_path, results, args):
    node = _char_device(tmp_path / "null")
    res = run_r2med(*(a.format(out=results, dest=node) for a in args))
    assert res.returncode == 0, res.stderr
    assert stat.S_ISCHR(os.lstat(node).st_mode)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".null")] == []  # no temp beside it


def test_dev_null_and_dev_full_stay_devices(results):
    for device in ("/dev/null", "/dev/full"):
        res = run_r2med("report", results, "-o", device)
        assert stat.S_ISCHR(os.lstat(device).st_mode)
        if device == "/dev/full":
            assert res.returncode == 2 and "error: /dev/full: No space left on device" in res.stderr
        else:
            assert res.returncode == 0, res.stderr


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
