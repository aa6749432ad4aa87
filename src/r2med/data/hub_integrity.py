"""Integrity of the files r2med takes from the Hugging Face cache: each checked against the hash it is stored under.

The cache stores each file under its content hash (``blobs/<git blob SHA-1>``, or ``blobs/<SHA-256>`` for LFS
files; the snapshot path links to it).  :func:`verify_cached` hashes a blob and compares the result with its name.

What was verified is remembered in ``$R2MED_HOME/hub-verified.json`` (:data:`VERIFIED_FILE`), so an unchanged
blob is hashed once.  An entry is trusted only when all of these hold:

* **it is r2med's own**: the entry carries an HMAC-SHA256 over its fields, keyed by a random secret kept beside
  it (``hub-verified.key``, :data:`KEY_FILE`, mode 0600).  An entry written or edited by anything else (an
  edited memo vouching for a blob it never hashed) fails the seal and the blob is hashed again;
* **the blob is still the file that was hashed**: its size, modification time, *change time*, inode and device
  all equal what r2med saw just before hashing it (and again just after).  ``touch -r`` restores a modification
  time but not the change time (the kernel sets it on every write and every ``utime``), and a file replaced
  under the same name has another inode, so an edit in place with its date restored is hashed again;
* **the check was not racy**: the blob's change time was at least :data:`RACY_NS` older than the check (as git
  treats "racily clean" index entries), so an edit within the same timestamp tick as the last change before the
  check cannot hide behind an equal change time.  A fresh download is therefore hashed on its first two loads.

A memo that cannot be read as r2med writes it (malformed, nested too deeply for Python's parser, another shape,
too large) is discarded with a warning and rebuilt by the next verification; it is never a crash and never
vouches for anything.  The home being unwritable only costs a re-hash.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import logging
import os
import re
import secrets
import stat
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TypedDict, cast

from ..errors import R2MedError
from ..infra.file_hash import HashAlgorithm, file_fingerprint, file_hash
from ..infra.home import home, home_path, parse_json, write_json_atomic
from ..infra.json_shapes import text_object

log = logging.getLogger(__name__)

#: Where the files already checked are remembered (under the r2med home).
VERIFIED_FILE = "hub-verified.json"
#: The secret that seals the memo's entries (under the r2med home, beside it).
KEY_FILE = "hub-verified.key"
#: The content fingerprints of the hub files r2med downloaded and verified (under the r2med home), sealed with
#: the same key: :func:`remember_fingerprint`, :func:`hub_fingerprints`.
FINGERPRINTS_FILE = "hub-fingerprints.json"
FINGERPRINTS_FORMAT = 1
#: The memo's layout; a memo of another (older) layout is set aside without a warning.
MEMO_FORMAT = 2
#: A blob changed less than this before it was checked is checked again next time (filesystem timestamps are
#: coarse: a jiffy on Linux, 1-2 s on some filesystems).
RACY_NS = 2_000_000_000
#: A memo larger than this is not read (it is damaged: r2med writes about 300 bytes per blob).
MAX_MEMO_BYTES = 64 << 20
_KEY_BYTES = 32
_now_ns = time.time_ns  # the clock the racy rule reads (tests set it)
_BLOB_NAME = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


class Observed(TypedDict):
    """What r2med sees of one cached blob (its ``stat``) and the hash its name says."""

    size: int
    mtime_ns: int
    ctime_ns: int
    ino: int
    dev: int
    hash: str


class VerifiedBlob(Observed):
    """What r2med saw of one cached blob when it hashed it, the hash it matched, and the entry's seal."""

    checked_ns: int
    mac: str


_FIELDS = ("size", "mtime_ns", "ctime_ns", "ino", "dev", "checked_ns")


def _home() -> Path:
    return home_path()


# -- the key ----------------------------------------------------------------------------------------


def _read_small(path: Path, limit: int) -> bytes:
    """A regular file's bytes, at most ``limit`` (more is a ValueError); a link, a FIFO or a device is an OSError
    or a ValueError, never a hang on ``/dev/zero`` or a pipe."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise ValueError("not a regular file")
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise ValueError(f"more than {limit:,} bytes, more than r2med ever writes")
    return data


def _read_key() -> bytes | None:
    try:
        key = _read_small(_home() / KEY_FILE, _KEY_BYTES)
    except (OSError, ValueError):
        return None
    return key if len(key) == _KEY_BYTES else None


def _make_key() -> bytes | None:
    """A new key, written 0600 and put in place only where none is (two processes racing keep the first one's);
    None when the home cannot hold it."""
    try:
        folder = home()
    except R2MedError:
        return None
    target = folder / KEY_FILE
    tmp = folder / f".{KEY_FILE}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(secrets.token_bytes(_KEY_BYTES))
            handle.flush()
            os.fsync(handle.fileno())
        if (target.exists() or target.is_symlink()) and _read_key() is None:
            target.unlink()  # a damaged key: replaced (the entries it sealed are hashed again)
        try:
            os.link(tmp, target)  # create-if-absent, with its whole content
        except FileExistsError:
            pass
        except OSError:  # a filesystem without hard links
            os.replace(tmp, target)
    except OSError as exc:
        log.debug("cannot write the hub memo's key in %s: %s", folder, exc)
        return None
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()
    return _read_key()


def _seal(key: bytes, path: str, record: Mapping[str, object]) -> str:
    message = json.dumps([path, record["hash"], *(record[f] for f in _FIELDS)])
    return hmac.new(key, message.encode("utf-8"), hashlib.sha256).hexdigest()


# -- the memo ---------------------------------------------------------------------------------------


def _is_entry(value: object) -> bool:
    return (
        isinstance(value, dict)
        and all(type(value.get(f)) is int for f in _FIELDS)
        and isinstance(value.get("hash"), str)
        and _is_seal(value.get("mac"))
    )


def _is_seal(value: object) -> bool:
    """A seal as r2med writes it (hex text): ``hmac.compare_digest`` raises TypeError on text that is not ASCII."""
    return isinstance(value, str) and value.isascii()


def _read_memo() -> dict[str, VerifiedBlob]:
    """The memo's well-formed entries (not yet checked against their seal); a damaged memo is discarded with a
    warning (the next verification rewrites it)."""
    path = _home() / VERIFIED_FILE
    try:
        data = parse_json(_read_small(path, MAX_MEMO_BYTES))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        return _discard(path, str(exc))
    if isinstance(data, dict) and "format" not in data and "blobs" not in data:
        log.debug("%s is of an older r2med; the hub files it listed are hashed again", path)
        return {}
    blobs = data.get("blobs") if isinstance(data, dict) and data.get("format") == MEMO_FORMAT else None
    if not isinstance(blobs, dict):
        return _discard(path, "not the layout r2med writes")
    entries = {str(k): v for k, v in blobs.items() if _is_entry(v)}
    if len(entries) != len(blobs):
        log.warning(
            "%s: %d malformed entries ignored (their hub files are hashed again)", path, len(blobs) - len(entries)
        )
    return cast(dict[str, VerifiedBlob], entries)  # each checked by _is_entry


def _discard(path: Path, why: str) -> dict[str, VerifiedBlob]:
    """A damaged memo: said once, removed (the next verification writes a new one), trusted for nothing."""
    log.warning("%s is damaged (%s); discarded: the hub files it listed are hashed again", path, why)
    with contextlib.suppress(OSError):
        path.unlink()
    return {}


def _trusted(path: str, observed: Observed) -> bool:
    """Whether the memo vouches, with r2med's seal, for the blob at ``path`` as it is now (``observed``)."""
    entry = _read_memo().get(path)
    key = _read_key()
    if entry is None or key is None:
        return False
    if not hmac.compare_digest(entry["mac"], _seal(key, path, entry)):
        log.warning("%s: the entry for %s does not carry r2med's seal (edited?); hashing the file", VERIFIED_FILE, path)
        return False
    seen: Mapping[str, object] = entry
    now: Mapping[str, object] = observed
    same = seen["hash"] == now["hash"] and all(seen[f] == now[f] for f in _FIELDS if f != "checked_ns")
    return same and entry["ctime_ns"] + RACY_NS <= entry["checked_ns"]


def _remember(path: str, observed: Observed, checked_ns: int) -> None:
    """Add a verified blob to the memo, sealed; best effort (an unwritable home only costs a re-hash next time)."""
    key = _read_key() or _make_key()
    if key is None:
        return
    known: dict[str, VerifiedBlob] = {}
    for name, entry in _read_memo().items():
        if os.path.exists(name) and hmac.compare_digest(entry["mac"], _seal(key, name, entry)):
            known[name] = entry  # entries of other blobs: kept only when sealed (an edit is not carried forward)
    record: VerifiedBlob = {**observed, "checked_ns": checked_ns, "mac": ""}
    record["mac"] = _seal(key, path, record)
    known[path] = record
    try:
        write_json_atomic(home() / VERIFIED_FILE, {"format": MEMO_FORMAT, "blobs": known})
    except (OSError, R2MedError) as exc:
        log.debug("cannot remember verified hub files in %s: %s", _home() / VERIFIED_FILE, exc)


# -- hashing ----------------------------------------------------------------------------------------


def content_hash(path: str | os.PathLike[str], algorithm: HashAlgorithm) -> str:
    """``path``'s hash as the hub names files: ``"git-sha1"`` (SHA-1 of ``blob <size>\\0`` + content) or
    ``"sha256"`` (of the content, LFS files) -- :func:`r2med.infra.file_hash.file_hash`."""
    return file_hash(path, algorithm)


def _observe(blob: Path) -> Observed:
    info = blob.stat()
    if not stat.S_ISREG(info.st_mode):
        raise OSError(f"{blob} is not a regular file")
    return {
        "size": info.st_size,
        "mtime_ns": info.st_mtime_ns,
        "ctime_ns": info.st_ctime_ns,
        "ino": info.st_ino,
        "dev": info.st_dev,
        "hash": blob.name,
    }


def verify_cached(path: str | os.PathLike[str]) -> str | None:
    """None if the cached file ``path`` holds what its blob name says (or has no blob name to check), else
    what is wrong, in a few words.  A blob the memo vouches for (see the module docstring) is not read again."""
    blob = Path(os.path.realpath(path))
    if blob.parent.name != "blobs" or not _BLOB_NAME.fullmatch(blob.name):
        return None  # a copy in the snapshot (no links): nothing names its content
    try:
        before = _observe(blob)
    except OSError as exc:
        return f"it cannot be read ({exc.strerror or exc})"
    if _trusted(str(blob), before):
        return None
    algorithm: HashAlgorithm = "git-sha1" if len(blob.name) == 40 else "sha256"
    checked_ns = _now_ns()
    try:
        actual = content_hash(blob, algorithm)
        after = _observe(blob)
    except OSError as exc:
        return f"it cannot be read ({exc.strerror or exc})"
    if actual != blob.name:
        what = "git blob SHA-1" if algorithm == "git-sha1" else "SHA-256"
        return (
            f"its content ({before['size']:,} bytes, {what} {actual[:12]}...) does not match "
            f"the hash it is stored under ({blob.name[:12]}...)"
        )
    if after == before:  # not changed while it was read: what was hashed is the file as observed
        _remember(str(blob), before, checked_ns)
    return None


# -- the fingerprints of the hub files r2med verified --------------------------------------------------------


def _fingerprint_seal(key: bytes, name: str, fingerprint: str) -> str:
    message = json.dumps(["fingerprint", name, fingerprint])
    return hmac.new(key, message.encode("utf-8"), hashlib.sha256).hexdigest()


def _fingerprint_name(repo_id: str, commit: str, filename: str) -> str:
    return f"{repo_id}@{commit}:{filename}"


def _read_fingerprints() -> dict[str, dict[str, str]]:
    """The fingerprint memo's well-formed entries (not yet checked against their seal); a damaged memo is ignored
    with a warning (the next download rewrites it)."""
    path = _home() / FINGERPRINTS_FILE
    try:
        data = parse_json(_read_small(path, MAX_MEMO_BYTES))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        log.warning("%s is damaged (%s); the hub files it listed are not vouched for", path, exc)
        return {}
    files = data.get("files") if isinstance(data, dict) and data.get("format") == FINGERPRINTS_FORMAT else None
    if not isinstance(files, dict):
        log.warning("%s is not the layout r2med writes; the hub files it listed are not vouched for", path)
        return {}
    entries = {str(name): text_object(entry) for name, entry in files.items()}
    return {
        name: entry
        for name, entry in entries.items()
        if entry is not None and isinstance(entry.get("fingerprint"), str) and _is_seal(entry.get("mac"))
    }


def remember_fingerprint(
    repo_id: str, commit: str, filename: str, path: str | os.PathLike[str], repo_type: str = "dataset"
) -> str | None:
    """Record the content fingerprint (:func:`r2med.infra.file_hash.file_fingerprint`) of the hub file ``filename``
    of ``repo_id`` at ``commit``, downloaded to ``path`` and verified by :func:`verify_cached` -- only a blob of the
    cache, whose name is its content hash, is (a plain copy in a snapshot names nothing: not recorded).  Sealed with
    the memo's key in ``$R2MED_HOME/hub-fingerprints.json`` (:data:`FINGERPRINTS_FILE`): what grading compares an
    expansion file given by hand with (:func:`hub_fingerprints`).  Best effort; the fingerprint, or None."""

    blob = Path(os.path.realpath(path))
    if repo_type != "dataset" or blob.parent.name != "blobs" or not _BLOB_NAME.fullmatch(blob.name):
        return None
    try:
        fingerprint = file_fingerprint(blob)
    except OSError:
        return None
    key = _read_key() or _make_key()
    if key is None:
        return fingerprint
    name = _fingerprint_name(repo_id, commit, filename)
    known = {
        n: e
        for n, e in _read_fingerprints().items()
        if hmac.compare_digest(e["mac"], _fingerprint_seal(key, n, e["fingerprint"]))
    }
    if known.get(name, {}).get("fingerprint") == fingerprint:
        return fingerprint
    known[name] = {"fingerprint": fingerprint, "mac": _fingerprint_seal(key, name, fingerprint)}
    try:
        write_json_atomic(home() / FINGERPRINTS_FILE, {"format": FINGERPRINTS_FORMAT, "files": known})
    except (OSError, R2MedError) as exc:
        log.debug("cannot remember hub fingerprints in %s: %s", _home() / FINGERPRINTS_FILE, exc)
    return fingerprint


def hub_fingerprints(repo_id: str, commit: str, filename: str) -> set[str]:
    """The content fingerprints r2med recorded of hub file ``filename`` of ``repo_id`` at ``commit`` when it
    downloaded and verified it (:func:`remember_fingerprint`): those carrying r2med's seal (an entry written or
    edited by anything else vouches for nothing)."""
    key = _read_key()
    if key is None:
        return set()
    name = _fingerprint_name(repo_id, commit, filename)
    entry = _read_fingerprints().get(name)
    if entry is None:
        return set()
    if not hmac.compare_digest(entry["mac"], _fingerprint_seal(key, name, entry["fingerprint"])):
        log.warning("%s: the entry for %s does not carry r2med's seal (edited?); ignored", FINGERPRINTS_FILE, name)
        return set()
    return {entry["fingerprint"]}
