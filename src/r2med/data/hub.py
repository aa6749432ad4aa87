"""Loading R2MED tasks from the Hugging Face hub (``R2MED/<Task>``) at pinned commits, via the standard HF cache.

The task files are plain JSONL (``corpus.jsonl``, ``query.jsonl``, ``qrels.jsonl`` and
``<method>/<llm>/query_with_hydoc.jsonl``), so they are fetched with
``huggingface_hub.hf_hub_download`` and parsed by r2med's own validated readers.

* **Revisions.** Each task loads at the commit pinned in the task registry
  (:attr:`r2med.data.tasks.TaskSpec.revision`, MTEB's pins) unless ``--revision`` says otherwise:
  ``main`` (or any branch, tag or commit) for every task, or ``TASK=REV[,TASK=REV...]``.
  The three task files and its expansion files all come from one resolved commit, which
  the collection records (``Collection.revision``) and every ``metrics.json`` keeps.
* **Cache.** Files live in the standard Hugging Face cache (``HF_HUB_CACHE`` / ``HF_HOME``, as
  ``huggingface_hub`` resolves them), so ``hf download R2MED/<Task> --repo-type dataset`` on
  an offline node fills it and ``HF_HUB_OFFLINE=1`` reads it.  A file cached at a pinned
  commit is read without any request.  The r2med home holds none of it.
* **Network.** ``huggingface_hub`` decides everything: offline mode, ``HF_ENDPOINT``,
  proxies (``HTTPS_PROXY``...), tokens.  Before downloading a file that is not cached, r2med
  asks once for its metadata (one HEAD through ``huggingface_hub``, no retries, a few
  seconds at most), so an unreachable hub fails at once instead of after
  ``hf_hub_download``'s ~23 s of retries; every failure becomes one line saying which it was
  (:func:`hub_error`): offline mode, connection/proxy/timeout, repo/file/revision not found,
  or access denied.
* **Integrity.** The cache stores each file under its content hash (``blobs/<git blob SHA-1>``, or
  ``blobs/<SHA-256>`` for LFS files; the snapshot path links to it).  Every file r2med takes from the
  cache is checked against that name before use (:func:`verify_cached`); what was verified is remembered
  by path, size and modification time in ``$R2MED_HOME/hub-verified.json``, so an unchanged file is
  hashed once.  A file whose content does not match is downloaded afresh where the hub can be reached,
  else it is a one-line error naming it.  (A cache without links, where huggingface_hub copies files into
  the snapshot, has no hash to check against: those files are used as they are.)
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import logging
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import TypedDict, cast

from ..errors import DataError, R2MedError
from ..protocol import hub_configs
from .collection import Collection
from .loaders import load_r2med_files

log = logging.getLogger(__name__)

#: Seconds the metadata request of a file not yet cached may take (``HF_HUB_ETAG_TIMEOUT`` overrides).
PROBE_TIMEOUT = 5.0

TASK_FILES = ("query.jsonl", "corpus.jsonl", "qrels.jsonl")


class HubError(R2MedError):
    """The hub answered, but not with the file: missing repo, revision or file, or access denied."""

    reason = ""


class HubUnavailable(HubError):
    """The hub cannot be reached (offline mode, connection, proxy, timeout) and the file is not cached."""


# -- revisions ------------------------------------------------------------------------------------


def parse_revision(spec: str | None) -> tuple[str | None, dict[str, str]]:
    """``--revision`` -> (one revision for every task or None, per-task overrides).

    ``None``/``""`` -> pinned commits; ``"main"`` or a commit/tag -> that for every task;
    ``"Biology=abc,MedQA-Diag=main"`` -> those tasks at those revisions, the others pinned.
    """
    from .tasks import get_task

    spec = (spec or "").strip()
    if not spec:
        return None, {}
    parts = [p.strip() for p in spec.split(",") if p.strip()]
    if not any("=" in p for p in parts):
        if len(parts) != 1:
            raise R2MedError(f"--revision {spec!r}: give one revision (main or a commit) or TASK=REV pairs")
        return parts[0], {}
    per_task = {}
    for part in parts:
        task, sep, rev = (x.strip() for x in part.partition("="))
        if not sep or not task or not rev:
            raise R2MedError(f"--revision {spec!r}: {part!r} is not TASK=REV (e.g. Biology=main)")
        per_task[get_task(task).name] = rev
    return None, per_task


def revision_for(task: str, spec: str | None = None) -> str:
    """The hub revision ``task`` is loaded at: ``--revision``'s word for it, else its pinned commit."""
    from .tasks import get_task

    spec_task = get_task(task)
    every, per_task = parse_revision(spec)
    return per_task.get(spec_task.name) or every or spec_task.revision


def snapshot_commit(path: str | os.PathLike[str]) -> str | None:
    """The commit of a file in the HF cache (``.../snapshots/<commit>/<file>``), None elsewhere."""
    parts = Path(path).parts
    for i in range(len(parts) - 2, -1, -1):
        if parts[i] == "snapshots" and i + 1 < len(parts):
            return parts[i + 1]
    return None


def expansion_path(method: str, split: str) -> str:
    """The file path of a hub expansion config/split, e.g. ``("hyde", "qwen_7b")`` -> ``hyde/qwen-7b/...``."""
    configs = hub_configs()["configs"]
    if method not in configs or method in ("corpus", "query", "qrels"):
        methods = [m for m in configs if m not in ("corpus", "query", "qrels")]
        raise R2MedError(f"unknown expansion method {method!r}; choose from: {', '.join(methods)}")
    splits = configs[method]
    key = split.replace("-", "_")
    if key not in splits:
        raise R2MedError(f"unknown {method} split {split!r}; choose from: {', '.join(splits)}")
    path: str = splits[key]
    return path


# -- errors ---------------------------------------------------------------------------------------


def _endpoint() -> str:
    from huggingface_hub import constants

    return constants.ENDPOINT


def _offline() -> bool:
    from huggingface_hub import constants

    check = getattr(constants, "is_offline_mode", None)
    return bool(check() if check else constants.HF_HUB_OFFLINE)


def hf_cache_dir() -> Path:
    """The Hugging Face hub cache in use (``HF_HUB_CACHE``, else ``HF_HOME/hub``), as huggingface_hub resolves it."""
    from huggingface_hub import constants

    return Path(constants.HF_HUB_CACHE)


def legacy_cache_hint(repo_id: str, repo_type: str = "dataset") -> str:
    """A hint when an older r2med kept this repo under ``$R2MED_HOME/hub`` (r2med now uses the HF cache)."""
    from ..infra.home import ENV_HOME

    root = Path(os.environ.get(ENV_HOME) or Path.home() / ".cache" / "r2med").expanduser() / "hub"
    if (root / f"{repo_type}s--{repo_id.replace('/', '--')}").is_dir() and root.resolve() != hf_cache_dir().resolve():
        return (
            f"; an older r2med downloaded it to {root}: HF_HUB_CACHE={root} reuses that copy "
            f"(with --revision main if it is not at the pinned commit)"
        )
    return ""


def _names(exc: BaseException) -> set[str]:
    return {cls.__name__ for cls in type(exc).__mro__}


def _cause_chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    link: BaseException | None = exc
    while link is not None and id(link) not in seen:
        seen.add(id(link))
        yield link
        link = link.__cause__ or link.__context__


def hub_error(
    exc: BaseException, repo_id: str, filename: str | None, revision: str | None, repo_type: str = "dataset"
) -> HubError:
    """One line saying why ``huggingface_hub`` could not deliver ``repo_id/filename@revision``.

    Classified by exception names (they are stable across huggingface_hub versions and its
    HTTP backends): offline mode, proxy, timeout, connection -> :class:`HubUnavailable`;
    repo / revision / file not found, access denied, other HTTP statuses -> :class:`HubError`.
    The short cause is kept as ``.reason``.
    """
    what = f"{repo_id}" + (f" {filename}" if filename else "") + (f" @ {revision}" if revision else "")
    chain = list(_cause_chain(exc))
    names = set().union(*(_names(e) for e in chain))
    status = next(
        (
            getattr(getattr(e, "response", None), "status_code", None)
            for e in chain
            if getattr(getattr(e, "response", None), "status_code", None) is not None
        ),
        None,
    )
    root = chain[-1] if chain else exc
    detail = f"{type(root).__name__}: {str(root).splitlines()[0]}" if str(root) else type(root).__name__

    def failed(cls: type[HubError], reason: str, fix: str = "") -> HubError:
        if cls is HubUnavailable:
            message = f"hub: {reason}, and {what} is not in the Hugging Face cache ({hf_cache_dir()})"
            if repo_type == "dataset":
                fix += f" or pass --data-dir with a local copy{legacy_cache_hint(repo_id, repo_type)}"
        else:
            message = f"hub: {reason}"
        fix = fix.strip().rstrip(",")
        err = cls(message + (f"; {fix}" if fix else ""))
        err.reason = reason
        return err

    download = f"hf download {repo_id}" + (f" --repo-type {repo_type}" if repo_type != "model" else "")
    download += f" --revision {revision}" if revision and revision != "main" else ""
    if "OfflineModeIsEnabled" in names or (_offline() and "LocalEntryNotFoundError" in names):
        return failed(
            HubUnavailable,
            "offline mode is set (HF_HUB_OFFLINE)",
            f"fill the cache first ({download}) where the hub can be reached,",
        )
    if "GatedRepoError" in names or (status in (401, 403) and "RepositoryNotFoundError" not in names):
        return failed(
            HubError,
            f"access to {repo_id} was denied (HTTP {status or 403})",
            "log in with `hf auth login` or set HF_TOKEN",
        )
    if "RevisionNotFoundError" in names:
        return failed(
            HubError,
            f"{repo_id} has no revision {revision!r} at {_endpoint()} (HTTP {status or 404})",
            "--revision takes main, a commit, or TASK=REV pairs",
        )
    if "RepositoryNotFoundError" in names:
        return failed(
            HubError,
            f"repository {repo_id} not found at {_endpoint()} (HTTP {status or 404})",
            "a private or gated repo answers so too: log in with `hf auth login` or set HF_TOKEN",
        )
    if "RemoteEntryNotFoundError" in names or (
        "EntryNotFoundError" in names and "LocalEntryNotFoundError" not in names
    ):
        return failed(HubError, f"{repo_id} has no file {filename!r} at revision {revision} (HTTP {status or 404})")
    if "ProxyError" in names:
        return failed(
            HubUnavailable,
            f"the proxy failed on the way to {_endpoint()} ({detail})",
            "check HTTPS_PROXY / HTTP_PROXY,",
        )
    if any("Timeout" in n for n in names):
        return failed(
            HubUnavailable,
            f"no answer from {_endpoint()} in time ({detail})",
            "check the network, or set HF_HUB_OFFLINE=1 with a filled cache,",
        )
    if "FileMetadataError" in names:
        return failed(
            HubUnavailable,
            f"{_endpoint()} does not answer like a Hugging Face hub ({detail})",
            "check HF_ENDPOINT and the proxy settings,",
        )
    if status is not None:
        return failed(HubError, f"{_endpoint()} answered HTTP {status} for {what}")
    if names & {"ConnectError", "ConnectionError", "NetworkError", "LocalEntryNotFoundError", "OSError"}:
        return failed(
            HubUnavailable,
            f"cannot connect to {_endpoint()} ({detail})",
            "check the network and proxy (HTTPS_PROXY), or set HF_HUB_OFFLINE=1 with a filled cache,",
        )
    if names & {"RemoteProtocolError", "IncompleteRead", "ChunkedEncodingError"}:
        return failed(
            HubError,
            f"the download of {what} from {_endpoint()} broke off ({detail})",
            "run it again, or check the network and proxy",
        )
    return failed(HubError, f"cannot fetch {what} ({detail})")


# -- files ----------------------------------------------------------------------------------------


def cached_file(repo_id: str, filename: str, revision: str | None = None, repo_type: str = "dataset") -> Path | None:
    """The cached copy of a hub file at ``revision`` (a commit, or a branch the cache has a ref for), if any."""
    from huggingface_hub import try_to_load_from_cache

    found = try_to_load_from_cache(repo_id, filename, revision=revision, repo_type=repo_type)
    return Path(found) if isinstance(found, str) else None


def probe(repo_id: str, filename: str, revision: str | None = None, repo_type: str = "dataset") -> None:
    """One metadata request for a hub file through huggingface_hub (no retries); a classified error if it fails."""
    from huggingface_hub import get_hf_file_metadata, hf_hub_url

    try:
        timeout = float(os.environ.get("HF_HUB_ETAG_TIMEOUT") or PROBE_TIMEOUT)
    except ValueError:
        timeout = PROBE_TIMEOUT
    try:
        get_hf_file_metadata(hf_hub_url(repo_id, filename, repo_type=repo_type, revision=revision), timeout=timeout)
    except Exception as exc:  # huggingface_hub's errors and its HTTP backend's come in many types
        raise hub_error(exc, repo_id, filename, revision, repo_type) from None


def download(repo_id: str, filename: str, revision: str | None = None, repo_type: str = "dataset") -> Path:
    """One file of a hub repo through the standard HF cache (no request when cached at a commit), verified
    against the content hash the cache stores it under (:func:`verify_cached`; a damaged copy is fetched again
    where the hub can be reached)."""
    from huggingface_hub import hf_hub_download

    if not _offline() and cached_file(repo_id, filename, revision, repo_type) is None:
        probe(repo_id, filename, revision, repo_type)  # fail fast, in one line, when the hub is unreachable
    try:
        with quiet_hub_logs():  # its retries' warnings: r2med says what happened in one line
            path = Path(hf_hub_download(repo_id=repo_id, filename=filename, repo_type=repo_type, revision=revision))
    except Exception as exc:
        raise hub_error(exc, repo_id, filename, revision, repo_type) from None
    damage = verify_cached(path)
    if damage is None:
        return path
    fix = (
        f"hf download {repo_id}"
        + (f" --repo-type {repo_type}" if repo_type != "model" else "")
        + (f" --revision {revision}" if revision else "")
        + f" {filename} --force-download"
    )
    if _offline():
        raise DataError(
            path,
            None,
            f"damaged in the Hugging Face cache: {damage}; download it again ({fix}) where "
            "the hub can be reached, or unset HF_HUB_OFFLINE",
        )
    log.warning("%s: damaged in the Hugging Face cache (%s); downloading it again", path, damage)
    try:
        path = Path(
            hf_hub_download(
                repo_id=repo_id, filename=filename, repo_type=repo_type, revision=revision, force_download=True
            )
        )
    except Exception as exc:
        reason = hub_error(exc, repo_id, filename, revision, repo_type).reason
        raise DataError(
            path,
            None,
            f"damaged in the Hugging Face cache ({damage}), and downloading it again failed ({reason}); {fix}",
        ) from None
    damage = verify_cached(path)
    if damage is not None:
        raise DataError(path, None, f"damaged even as downloaded again from {_endpoint()}: {damage}")
    return path


# -- integrity of cached files --------------------------------------------------------------------

#: Where the files already checked are remembered (under the r2med home): blob path -> size, mtime, hash.
VERIFIED_FILE = "hub-verified.json"
_BLOB_NAME = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


class VerifiedBlob(TypedDict):
    """What was checked of one cached blob: its size and modification time then, and the hash it matched."""

    size: int
    mtime_ns: int
    hash: str


def _verified_path() -> Path:
    from ..infra.home import home_path

    return home_path() / VERIFIED_FILE


def _read_verified() -> dict[str, VerifiedBlob]:
    try:
        data = json.loads(_verified_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {
        str(k): cast(VerifiedBlob, v)
        for k, v in data.items()
        if isinstance(v, dict)
        and isinstance(v.get("size"), int)
        and isinstance(v.get("mtime_ns"), int)
        and isinstance(v.get("hash"), str)
    }


def _remember_verified(blob: Path, record: VerifiedBlob) -> None:
    """Add ``blob`` to the verified list; best effort (an unwritable home only costs a re-hash next time)."""
    from ..infra.home import home, write_json_atomic

    known = {k: v for k, v in _read_verified().items() if os.path.exists(k)}
    known[str(blob)] = record
    try:
        write_json_atomic(home() / VERIFIED_FILE, known)
    except (OSError, R2MedError) as exc:
        log.debug("cannot remember verified hub files in %s: %s", _verified_path(), exc)


def content_hash(path: str | os.PathLike[str], algorithm: str) -> str:
    """``path``'s hash as the hub names files: ``"git-sha1"`` (SHA-1 of ``blob <size>\\0`` + content) or
    ``"sha256"`` (of the content, LFS files)."""
    size = os.path.getsize(path)
    h = hashlib.sha1(b"blob %d\0" % size) if algorithm == "git-sha1" else hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def verify_cached(path: str | os.PathLike[str]) -> str | None:
    """None if the cached file ``path`` holds what its blob name says (or has no blob name to check), else
    what is wrong, in a few words.  A blob already verified with the same size and mtime is not read again."""
    blob = Path(os.path.realpath(path))
    if blob.parent.name != "blobs" or not _BLOB_NAME.fullmatch(blob.name):
        return None  # a copy in the snapshot (no links): nothing names its content
    try:
        info = blob.stat()
    except OSError as exc:
        return f"it cannot be read ({exc.strerror or exc})"
    record: VerifiedBlob = {"size": info.st_size, "mtime_ns": info.st_mtime_ns, "hash": blob.name}
    if _read_verified().get(str(blob)) == record:
        return None
    algorithm = "git-sha1" if len(blob.name) == 40 else "sha256"
    try:
        actual = content_hash(blob, algorithm)
    except OSError as exc:
        return f"it cannot be read ({exc.strerror or exc})"
    if actual != blob.name:
        what = "git blob SHA-1" if algorithm == "git-sha1" else "SHA-256"
        return (
            f"its content ({info.st_size:,} bytes, {what} {actual[:12]}...) does not match "
            f"the hash it is stored under ({blob.name[:12]}...)"
        )
    _remember_verified(blob, record)
    return None


@contextlib.contextmanager
def quiet_hub_logs() -> Iterator[None]:
    """``huggingface_hub``'s warnings (``Error while downloading ... Trying to resume download...``, one
    pair per retry, on its own handler too) held back during a download unless debug logging is on (-v);
    its failure becomes r2med's one-line error."""
    hub_log = logging.getLogger("huggingface_hub")
    if logging.getLogger().isEnabledFor(logging.DEBUG):
        yield
        return
    before = hub_log.level
    hub_log.setLevel(logging.ERROR)
    try:
        yield
    finally:
        hub_log.setLevel(before)


@functools.lru_cache(maxsize=1)
def hub_problem() -> str | None:
    """Why the hub cannot serve R2MED data here (one line), or None when it answers; asked once per process."""
    from .tasks import TASK_NAMES, get_task

    spec = get_task(TASK_NAMES[0])
    if _offline():
        return "offline mode is set (HF_HUB_OFFLINE)"
    try:
        probe(spec.hub_id, "query.jsonl", spec.revision)
    except HubUnavailable as exc:
        return str(exc)
    except HubError:
        return None  # it answered
    return None


def load_from_hub(task: str, revision: str | None = None, strict: bool = False) -> Collection:
    """Task ``task`` at ``revision_for(task, revision)``: its three files from one commit, recorded on the
    collection."""
    from .tasks import get_task

    spec = get_task(task)
    wanted = revision_for(spec.name, revision)
    first = download(spec.hub_id, TASK_FILES[0], wanted)
    commit = snapshot_commit(first) or wanted  # a branch resolved once: the other files come from the same commit
    files = {TASK_FILES[0]: first, **{name: download(spec.hub_id, name, commit) for name in TASK_FILES[1:]}}
    coll = load_r2med_files(
        files["corpus.jsonl"],
        files["query.jsonl"],
        files["qrels.jsonl"],
        spec.name,
        source=f"hf://datasets/{spec.hub_id}@{commit}",
        revision=commit,
        strict=strict,
    )
    log.info("%s: hub data at commit %s%s", spec.name, commit, "" if wanted == commit else f" ({wanted})")
    return coll


def download_expansion(task: str, method: str, split: str, revision: str | None = None) -> Path:
    """A hub expansion file of ``task``; ``revision`` is a ``--revision`` spec or the data's resolved commit."""
    from .tasks import get_task

    return download(get_task(task).hub_id, expansion_path(method, split), revision_for(task, revision))
