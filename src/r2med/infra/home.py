"""The r2med home folder, content fingerprints and atomic file writes.

Every expensive artifact (BM25 index, embeddings, LLM answers, runs) lives under
the r2med home (``$R2MED_HOME``, default ``~/.cache/r2med``), in a folder named
by a fingerprint of everything that changes it.  Files are written to a temp
file in the same folder and renamed into place, so a crash never leaves a
half-written file under its final name.

Temp names carry the writer's process id and host (``.<name>.<pid>@<host>.<random>.tmp``):
the next write of the same name removes the temps of writers on this host that are no
longer running (a SIGKILL leaves them behind), and ``r2med cache ls`` lists them.
Folders are swapped into place so that concurrent writers of one folder never fail:
the last complete folder wins.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import logging
import os
import re
import shutil
import socket
import stat
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import R2MedError
from .containment import check_output_dir, refuse_links
from .input_files import is_stream, kind_of, read_regular
from .json_shapes import text_object

if TYPE_CHECKING:  # pydantic's JsonValue: the type checker's only (r2med --help reads JSON, loads no pydantic)
    from .json_types import JsonValue

ENV_HOME = "R2MED_HOME"


def home_path() -> Path:
    """Where the r2med home is (not created)."""
    return Path(os.environ.get(ENV_HOME) or Path.home() / ".cache" / "r2med").expanduser()


def home() -> Path:
    """The r2med home folder (created on first use); an unusable one is a one-line R2MedError."""
    path = home_path()
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise R2MedError(
            f"r2med home {path} (${ENV_HOME}) cannot be used: {exc.strerror or exc}; "
            f"set {ENV_HOME} to a writable folder"
        ) from None
    return path


def check_home() -> Path:
    """Fail now, before any compute, if the home cannot hold new cache entries."""
    path = home_path()
    check_output_dir(path, f"r2med home (${ENV_HOME})")
    if path.is_dir() and not os.access(path, os.W_OK | os.X_OK):
        raise R2MedError(
            f"r2med home {path} (${ENV_HOME}) is not writable; set {ENV_HOME} to a writable folder (or pass --no-cache)"
        )
    return path


def cache_dir(kind: str) -> Path:
    """A sub-folder of the home for one kind of artifact (``bm25``, ``embeddings``, ``llm``...); a linked one is
    refused (:func:`r2med.infra.containment.refuse_links`: nothing is written outside the home through it)."""
    root = home()
    path = refuse_links(root, root / kind, include_last=True)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise R2MedError(f"{path}: cannot create the cache folder ({exc.strerror or exc})") from None
    return path


def fingerprint(*parts: object) -> str:
    """A short stable hash of JSON-serialisable parts (settings, ids, other fingerprints; anything else by its
    ``str``)."""
    h = hashlib.blake2b(digest_size=10)
    for part in parts:
        h.update(json.dumps(part, sort_keys=True, default=str).encode("utf-8"))
        h.update(b"\x1f")
    return h.hexdigest()


def fingerprint_texts(items: Iterable[tuple[str, str]]) -> str:
    """Fingerprint of an ordered sequence of (id, text) pairs, e.g. a corpus."""
    h = hashlib.blake2b(digest_size=10)
    for key, text in items:
        h.update(key.encode("utf-8"))
        h.update(b"\x1f")
        h.update(text.encode("utf-8"))
        h.update(b"\x1e")
    return h.hexdigest()


_HOST = re.sub(r"[^A-Za-z0-9-]", "-", socket.gethostname()) or "host"
_TEMP_TAIL = re.compile(r"(\d+)@([A-Za-z0-9-]*)\.[^/]*\.tmp")


def _temp_prefix(target: Path) -> str:
    return f".{target.name}.{os.getpid()}@{_HOST}."


def temp_owner(name: str) -> tuple[str, int, str] | None:
    """``(target name, pid, host)`` of an r2med temp file or folder name, else None."""
    if not (name.startswith(".") and name.endswith(".tmp")):
        return None
    for m in re.finditer(r"\.(\d+)@", name):
        tail = _TEMP_TAIL.fullmatch(name, m.start() + 1)
        if tail is not None and m.start() > 1:
            return name[1 : m.start()], int(tail.group(1)), tail.group(2)
    return None


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        return True
    return True


def temp_is_stale(name: str) -> bool | None:
    """True if ``name`` is an r2med temp of a dead writer on this host, False if its writer may be
    running (or runs elsewhere), None if it is not an r2med temp name."""
    owner = temp_owner(name)
    if owner is None:
        return None
    return owner[2] == _HOST and not _alive(owner[1])


def clean_stale_temps(target: str | os.PathLike[str]) -> int:
    """Remove temps left beside ``target`` by writers of the same name that died (e.g. SIGKILL)."""
    target = Path(target)
    removed = 0
    try:
        names = os.listdir(target.parent)
    except OSError:
        return 0
    for name in names:
        owner = temp_owner(name)
        if owner is None or owner[0] != target.name or not temp_is_stale(name):
            continue
        path = target.parent / name
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                path.unlink()
        removed += 1
    return removed


def own_roots() -> list[Path]:
    """The folders r2med keeps for itself: the r2med home and the Hugging Face cache.  Inside them nothing is
    written through a link (:func:`contain`), and what is not a regular file where a file goes is damage, replaced."""
    roots = [home_path()]
    hub = os.environ.get("HF_HUB_CACHE") or (
        str(Path(os.environ["HF_HOME"]) / "hub") if os.environ.get("HF_HOME") else None
    )
    roots.append(Path(hub) if hub else Path.home() / ".cache" / "huggingface" / "hub")
    return [Path(os.path.abspath(root)) for root in roots]


def _root_of(target: Path) -> Path | None:
    full = os.path.normpath(os.path.abspath(target))
    for root in own_roots():
        base = str(root)
        if full != base and os.path.commonpath([base, full]) == base:
            return root
    return None


def contain(target: str | os.PathLike[str]) -> Path:
    """``target`` unless it lies in one of r2med's own roots (:func:`own_roots`) below a folder that is a link: then
    a one-line R2MedError, before anything is written (a link inside ``R2MED_HOME``, e.g. ``.collections`` ->
    ``VICTIM``, would have the write land in ``VICTIM``).  Where the user named the root (``--out``), the commands'
    own checks hold it (:mod:`r2med.infra.containment`)."""
    target = Path(target)
    root = _root_of(target)
    if root is not None:
        refuse_links(root, target)
    return target


def _streamed(target: Path) -> bool:
    """Whether ``target`` is written as a stream: it exists, outside r2med's own roots, as something that is
    neither a regular file nor a folder (``/dev/null``, ``/dev/stdout``, a FIFO, ``>(cmd)``), which a rename would
    replace.  In r2med's own roots such a thing where a file goes is damage: replaced by the rename."""
    return is_stream(target) and _root_of(target) is None


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str], suffix: str = "") -> Iterator[Path]:
    """Yield a temp path beside ``path``; rename it onto ``path`` only if the block succeeds.

    Atomic replace is for regular files only: a destination that is a device or a pipe (``-o /dev/null``,
    ``/dev/stdout``, a FIFO) outside r2med's own roots is written as a stream -- the block writes it directly, and
    nothing is created, renamed or replaced beside it.  Inside r2med's own roots no folder on the way may be a link
    (:func:`contain`)."""
    target = contain(path)
    if _streamed(target):
        try:
            yield target
        except OSError as exc:
            if exc.filename is None:
                raise located(exc, target) from exc
            raise
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    clean_stale_temps(target)
    fd, tmp = tempfile.mkstemp(prefix=_temp_prefix(target), suffix=suffix + ".tmp", dir=target.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        os.chmod(tmp_path, 0o666 & ~_umask())  # mkstemp makes 0600; give the usual permissions
        os.replace(tmp_path, target)
    except BaseException as exc:
        with contextlib.suppress(FileNotFoundError):
            tmp_path.unlink()
        if isinstance(exc, OSError) and exc.filename is None:
            raise located(exc, target) from exc
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_text_atomic(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` to ``path`` via a synced temp file and a rename."""
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        try:
            os.fsync(handle.fileno())
        except OSError:
            if tmp != Path(path):  # a stream (a pipe, a terminal, /dev/null) cannot be synced
                raise


def write_json_atomic(path: str | os.PathLike[str], obj: object, indent: int | None = 1) -> None:
    write_text_atomic(path, json.dumps(obj, indent=indent, ensure_ascii=False) + "\n")


#: How deep JSON r2med reads may nest (its own files and every format it reads nest a few levels).  Deeper values
#: are refused even where Python's parser takes them: the code that walks, prints or writes them back (``repr``,
#: ``json.dumps``, a recursive check) recurses once per level and would raise ``RecursionError`` there instead.
MAX_JSON_DEPTH = 100


def nested_deeper_than(value: object, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether ``value`` (parsed JSON) holds lists or objects nested more than ``limit`` deep (walked without
    recursion)."""
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False


def parse_json(data: str | bytes) -> JsonValue:
    """JSON parsed: a file r2med wrote to its home or a cache, or anything from outside (an endpoint's answer, a
    shard store's file, an option's value); a fault is a ``ValueError`` saying what it is, which every caller
    turns into its own one line (or treats as damage): bad UTF-8, malformed JSON, or values nested more than
    :data:`MAX_JSON_DEPTH` deep (deeper than Python's parser goes, ``json`` raises ``RecursionError``, which no
    reader expects: a damaged file must read as damaged, not crash)."""
    try:
        value = json.loads(data.decode("utf-8") if isinstance(data, bytes) else data)
    except RecursionError:
        raise ValueError("nested too deeply") from None
    if nested_deeper_than(value):
        raise ValueError(f"nested more than {MAX_JSON_DEPTH} levels deep")
    parsed: JsonValue = value  # json.loads gives JSON values only (its return is untyped)
    return parsed


def read_json(path: str | os.PathLike[str]) -> JsonValue:
    """:func:`parse_json` of a file r2med wrote (a cache entry, a record): a regular file only, never waited on
    (:func:`r2med.infra.input_files.read_regular`: a FIFO or a device there is an ``OSError``, read as damage)."""
    return parse_json(read_regular(path))


@contextlib.contextmanager
def atomic_dir(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Build a folder under a temp name and rename it into place when the block succeeds.

    If ``path`` already exists it is replaced.  On failure the temp folder is removed,
    so no half-built folder is ever visible under ``path``.  Temps of killed writers of
    the same ``path`` are removed first.
    """
    target = contain(path)
    if _streamed(target):
        raise R2MedError(f"{target}: is {kind_of(os.stat(target).st_mode)}, not a folder; name a folder")
    target.parent.mkdir(parents=True, exist_ok=True)
    clean_stale_temps(target)
    tmp = Path(tempfile.mkdtemp(prefix=_temp_prefix(target), suffix=".tmp", dir=target.parent))
    try:
        yield tmp
        os.chmod(tmp, 0o777 & ~_umask())  # mkdtemp makes 0700
        _swap_in(tmp, target)
    except BaseException as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(exc, OSError) and exc.filename is None:
            raise located(exc, target) from exc
        raise


def os_error_text(exc: OSError) -> str:
    """An OSError as one line naming its file(s): ``out/bm25: No space left on device``."""
    reason = exc.strerror or " ".join(str(exc).split()) or type(exc).__name__
    if exc.filename is None:
        return reason
    where = str(exc.filename) + (f" -> {exc.filename2}" if exc.filename2 is not None else "")
    return f"{where}: {reason}"


def located(exc: OSError, path: str | os.PathLike[str]) -> OSError:
    """``exc`` naming ``path`` (a failed write raises without the file: ``[Errno 28] No space left on device``),
    and a short write without an errno (numpy's ``72785 requested and 8160 written``) said as what it is."""
    if exc.errno is None and exc.strerror is None:
        reason = f"only part of the data could be written ({' '.join(str(exc).split())}); is the disk full?"
        return OSError(errno.EIO, reason, str(path))
    return OSError(exc.errno, exc.strerror or str(exc), str(path))


def _swap_in(tmp: Path, target: Path) -> None:
    """Rename the folder ``tmp`` onto ``target``, replacing what is there.

    Another process may be swapping its own folder in at the same time: when the rename meets a
    folder, that folder is moved aside to a fresh temp name (a rename that only one writer can win)
    and deleted, and the rename is tried again, so every writer finishes and ``target`` always ends
    as one writer's complete folder.
    """
    for _ in range(10_000):
        try:
            os.rename(tmp, target)  # onto a missing or empty folder: atomic
            return
        except OSError as exc:
            if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOTDIR):
                raise
        try:
            mode = os.lstat(target).st_mode  # one look: another writer may swap the target meanwhile
        except FileNotFoundError:
            continue
        if not stat.S_ISDIR(mode):
            # a link or file named like the folder: replaced, never followed (a folder that another
            # writer renamed in since the look is left for the next round)
            with contextlib.suppress(FileNotFoundError, IsADirectoryError):
                target.unlink()
            continue
        old = Path(tempfile.mkdtemp(prefix=_temp_prefix(target), suffix=".old.tmp", dir=target.parent))
        try:
            os.replace(target, old)  # a folder onto an empty folder
        except FileNotFoundError:  # another writer moved it first
            old.rmdir()
            continue
        except OSError as exc:
            old.rmdir()
            if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                raise
            continue
        shutil.rmtree(old, ignore_errors=True)
    raise R2MedError(f"{target}: could not replace it (other processes keep writing it)")


def dir_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


#: Hidden folder of the home (not a kind ``cache ls`` lists): which collection each corpus fingerprint is.
COLLECTIONS_DIR = ".collections"


def _recorded_collections(corpus_fingerprint: str) -> list[dict[str, str]]:
    try:
        record = read_json(home_path() / COLLECTIONS_DIR / f"{corpus_fingerprint}.json")
    except (OSError, ValueError):
        return []
    found = record.get("collections") if isinstance(record, dict) else None
    texts = [text_object(c) for c in found] if isinstance(found, list) else []
    return [c for c in texts if c is not None and isinstance(c.get("name"), str)]


def remember_collection(corpus_fingerprint: str, name: str, source: str = "") -> None:
    """Record that ``corpus_fingerprint`` (the key of the indexes and embeddings built on a corpus) is the corpus
    of the collection ``name`` (from ``source``), so ``r2med cache ls`` can say what each entry belongs to (a
    corpus several collections share lists them all).  One small file per fingerprint, written atomically; a
    home that cannot take it only loses the label."""
    known = _recorded_collections(corpus_fingerprint)
    if any(c["name"] == name for c in known):
        return
    try:
        path = home_path() / COLLECTIONS_DIR / f"{corpus_fingerprint}.json"
        write_json_atomic(
            path, {"corpus_fingerprint": corpus_fingerprint, "collections": [*known, {"name": name, "source": source}]}
        )
    except (OSError, R2MedError) as exc:  # e.g. .collections is a link: refused (contain), never followed
        reason = exc if isinstance(exc, R2MedError) else os_error_text(exc)
        logging.getLogger(__name__).warning(
            "the label of cache entry %s is not recorded: %s", corpus_fingerprint, reason
        )
        return


def collection_of(corpus_fingerprint: object) -> str | None:
    """The collection name(s) :func:`remember_collection` recorded for a corpus fingerprint (``a, b``), or None."""
    if not isinstance(corpus_fingerprint, str) or not corpus_fingerprint.isalnum():
        return None
    names = [c["name"] for c in _recorded_collections(corpus_fingerprint)]
    return ", ".join(names) if names else None
