"""Hub files through the standard HF cache, found at their revision before any is downloaded; R2MED's tasks on it.

The general part takes a repository (id, type), a revision and paths, for any dataset or model repo (BRIGHT's
tasks use it from :mod:`.bright`):
:func:`resolve_files` (every file a command needs, found at one commit before any download), :func:`download`
(one file, verified), :func:`hub_error` (every failure as one line).  The R2MED part (``R2MED/<Task>``):
which revision a task loads at (:func:`task_revision`), its files (:func:`load_from_hub`,
:func:`download_expansion`) and the line that refuses a missing one with the way forward (:func:`refusal`).
The task files are plain JSONL (``corpus.jsonl``, ``query.jsonl``, ``qrels.jsonl`` and
``<method>/<llm>/query_with_hydoc.jsonl``), fetched with ``huggingface_hub.hf_hub_download`` and parsed by
r2med's own validated readers.

* **Revisions.** Each task loads at the commit pinned in the task registry
  (:attr:`r2med.data.tasks.TaskSpec.revision`, MTEB's pins) unless ``--revision`` says otherwise:
  ``main`` (or any branch, tag or commit) for every task, or ``TASK=REV[,TASK=REV...]``; an expansion
  recorded as held by another commit (``protocol/r2med_expansion_commits.json``) loads its task there.
  The three task files and its expansion files all come from one resolved commit, which
  the collection records (``Collection.revision``) and every ``metrics.json`` keeps.
* **Before any download.** Every file a command needs (the task files of every task, the expansion files)
  is found at its revision first (:func:`resolve_files`, one metadata request per file not cached at a
  commit; none offline).  A missing one is refused in one line before a byte is downloaded, saying where it
  is (the repository's head, on the hub or in the cache), the ``--revision`` that reads it from there, and
  what results made so record.
* **Cache.** Files live in the standard Hugging Face cache (``HF_HUB_CACHE`` / ``HF_HOME``, as
  ``huggingface_hub`` resolves them), so ``hf download R2MED/<Task> --repo-type dataset`` on
  an offline node fills it and ``HF_HUB_OFFLINE=1`` reads it.  A file cached at a pinned
  commit is read without any request.  The r2med home holds none of it.
* **Network.** ``huggingface_hub`` decides everything: offline mode, ``HF_ENDPOINT``,
  proxies (``HTTPS_PROXY``...), tokens.  The metadata requests go through ``huggingface_hub`` with no
  retries and a few seconds at most, so an unreachable hub fails at once instead of after
  ``hf_hub_download``'s ~23 s of retries; every failure becomes one line saying which it was
  (:func:`hub_error`): offline mode, connection/proxy/timeout, repo/file/revision not found,
  or access denied.
* **Integrity.** Every file r2med takes from the cache is checked against the content hash it is stored
  under (:mod:`.hub_integrity`); a damaged one is downloaded afresh where the hub can be reached, else it is
  a one-line error naming it.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import re
import shlex
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

# huggingface_hub loads a function's module on first use (its own lazy attributes): named through the package, its
# HTTP client is imported when a file is fetched, not when the CLI starts
import huggingface_hub
from huggingface_hub import constants

from ..errors import DataError, R2MedError, shown
from ..expansion_name import ExpansionName
from ..infra.home import ENV_HOME, write_text_atomic
from ..infra.input_files import NotRegularFile, read_regular
from ..protocol import expansion_commits, hub_configs
from .collection import Collection
from .hub_integrity import remember_fingerprint, verify_cached
from .loaders import EXPANSION_FILE, load_r2med_files, load_r2med_judgments
from .names import hub_task
from .tasks import TASK_NAMES, TASKS, get_task

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
    ``"Biology=abc,MedQA-Diag=main,bright:biology=main"`` -> those tasks at those revisions, the others pinned
    (keys are the hub tasks, in r2med's spelling: a BRIGHT task's long-document setting reads its task's revision).
    """
    spec = (spec or "").strip()
    if not spec:
        return None, {}
    parts = [p.strip() for p in spec.split(",") if p.strip()]
    if not any("=" in p for p in parts):
        if len(parts) != 1:
            raise R2MedError(f"--revision {shown(spec)}: give one revision (main or a commit) or TASK=REV pairs")
        return check_revision(parts[0]), {}
    per_task = {}
    for part in parts:
        task, sep, rev = (x.strip() for x in part.partition("="))
        if not sep or not task or not rev:
            raise R2MedError(f"--revision {shown(spec)}: {shown(part)} is not TASK=REV (e.g. Biology=main)")
        per_task[hub_task(task)] = check_revision(rev)
    return None, per_task


#: What no branch, tag or commit name holds (git check-ref-format): ``..`` (a path out of the cache's ``refs/``,
#: which the revision becomes part of), control characters, whitespace, ``~^:?*[\``, ``@{``, an empty part.
_BAD_REVISION = re.compile(r"\.\.|@\{|//|[\x00-\x20\x7f-\x9f\u2028\u2029~^:?*\[\\]|^/|/$|\.lock$|^\.|/\.|\.$")


def revision_problem(revision: str) -> str | None:
    """Why ``revision`` cannot be a branch, tag or commit name (git's rules for ref names), or None: the words
    every check of a revision uses -- the data's (:func:`check_revision`) and a model's (``model_revision``)."""
    found = _BAD_REVISION.search(revision)
    return None if found is None else f"not a branch, tag or commit name (it holds {found.group()!a})"


def check_revision(revision: str) -> str:
    """``revision`` if it can be a branch, tag or commit (git's rules for ref names), else a one-line error: it
    becomes a path below the Hugging Face cache (``refs/<revision>``), read and written by huggingface_hub and
    r2med, so ``../../x`` would name a file outside it."""
    problem = revision_problem(revision)
    if problem is not None:
        raise R2MedError(
            f"--revision {shown(revision)} is {problem}; --revision takes main, a commit, or TASK=REV pairs"
        )
    return revision


def revision_for(task: str, spec: str | None = None) -> str:
    """The hub revision ``task`` is loaded at: ``--revision``'s word for it, else its pinned commit."""
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
    return constants.ENDPOINT


def _offline() -> bool:
    check = getattr(constants, "is_offline_mode", None)
    return bool(check() if check else constants.HF_HUB_OFFLINE)


def hf_cache_dir() -> Path:
    """The Hugging Face hub cache in use (``HF_HUB_CACHE``, else ``HF_HOME/hub``), as huggingface_hub resolves it."""
    return Path(constants.HF_HUB_CACHE)


def legacy_cache_hint(repo_id: str, repo_type: str = "dataset") -> str:
    """A hint when an older r2med kept this repo under ``$R2MED_HOME/hub`` (r2med now uses the HF cache)."""
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
            fix += local_copy_hint(repo_id, repo_type).removeprefix(",")
        else:
            message = f"hub: {reason}"
        fix = fix.strip().rstrip(",")
        err = cls(message + (f"; {fix}" if fix else ""))
        err.reason = reason
        return err

    download = fill_command(repo_id, revision, repo_type, [filename] if filename else [])
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


# -- files at a revision, found before any is downloaded ------------------------------------------

HEAD = "main"
"""The branch that is a repository's head (``--revision main``)."""
_COMMIT = re.compile(r"[0-9a-f]{40}")
#: (repo type, repo id, commit, path) the hub said it holds, asked in this process (a commit never changes).
_PRESENT: set[tuple[str, str, str, str]] = set()
#: (repo type, repo id, commit) -> the branches and tags this process resolved to it: once a file of that commit
#: is downloaded they are written to the cache's ``refs/``, as huggingface_hub does, so offline runs find them.
_RESOLVED: dict[tuple[str, str, str], set[str]] = {}


def is_commit(revision: str | None) -> bool:
    """A full commit hash (40 hex digits): it names the same files forever, where a branch or tag may move."""
    return revision is not None and _COMMIT.fullmatch(revision) is not None


def cached_file(repo_id: str, filename: str, revision: str | None = None, repo_type: str = "dataset") -> Path | None:
    """The cached copy of a hub file at ``revision`` (a commit, or a branch the cache has a ref for), if any."""
    found = huggingface_hub.try_to_load_from_cache(repo_id, filename, revision=revision, repo_type=repo_type)
    return Path(found) if isinstance(found, str) else None


def _cached_ref(repo_id: str, ref: str, repo_type: str) -> str | None:
    """The commit the cache's ``refs/<ref>`` names (``ref`` itself when it is a commit), if any."""
    if is_commit(ref):
        return ref
    path = hf_cache_dir() / f"{repo_type}s--{repo_id.replace('/', '--')}" / "refs" / ref

    try:
        commit = read_regular(path, limit=4096).decode("utf-8").strip()  # never waits on a FIFO, never reads /dev/zero
    except NotRegularFile as exc:
        log.warning("%s %s: damaged, read as no ref (written again once the hub answers)", path, exc.strerror)
        return None
    except (OSError, ValueError):
        return None
    return commit if is_commit(commit) else None


def _probe_timeout() -> float:
    try:
        return float(os.environ.get("HF_HUB_ETAG_TIMEOUT") or PROBE_TIMEOUT)
    except ValueError:
        return PROBE_TIMEOUT


def _metadata(repo_id: str, filename: str, revision: str | None, repo_type: str) -> object:
    """One metadata request (HEAD) through huggingface_hub, no retries: raises what it raises."""
    url = huggingface_hub.hf_hub_url(repo_id, filename, repo_type=repo_type, revision=revision)
    return huggingface_hub.get_hf_file_metadata(url, timeout=_probe_timeout())


def probe(repo_id: str, filename: str, revision: str | None = None, repo_type: str = "dataset") -> None:
    """One metadata request for a hub file through huggingface_hub (no retries); a classified error if it fails."""
    try:
        _metadata(repo_id, filename, revision, repo_type)
    except Exception as exc:  # huggingface_hub's errors and its HTTP backend's come in many types
        raise hub_error(exc, repo_id, filename, revision, repo_type) from None


def _missing_entry(exc: BaseException) -> bool:
    """Whether the hub answered that the file is not there (404 EntryNotFound), as opposed to any other failure."""
    names = set().union(*(_names(e) for e in _cause_chain(exc)))
    return "RemoteEntryNotFoundError" in names or (
        "EntryNotFoundError" in names and "LocalEntryNotFoundError" not in names
    )


def _answered_commit(exc: BaseException) -> str | None:
    """The commit a 404 answer named (``X-Repo-Commit``: the hub resolves the revision before looking)."""
    for link in _cause_chain(exc):
        headers = getattr(getattr(link, "response", None), "headers", None)
        commit = headers.get("X-Repo-Commit") if headers is not None else None
        if isinstance(commit, str) and is_commit(commit):
            return commit
    return None


#: Up to this many missing files are named one by one in the ``hf download`` command; more are one
#: ``--include 'CONFIG/*'`` per folder (BRIGHT's 12 tasks of a config).
DOWNLOAD_FILES_NAMED = 6


def _download_command(repo_id: str, revision: str | None, repo_type: str, files: Sequence[str] = ()) -> str:
    """The ``hf download`` command that fills the cache with ``files`` (none given: the whole repository): what
    is missing and no more -- not a whole dataset for one task's reasoning set (issue 39)."""
    command = (
        f"hf download {repo_id}"
        + (f" --repo-type {repo_type}" if repo_type != "model" else "")
        + (f" --revision {revision}" if revision and revision != HEAD else "")
    )
    if len(files) <= DOWNLOAD_FILES_NAMED:
        return command + "".join(f" --include {shlex.quote(f)}" for f in files)
    folders = dict.fromkeys(f.rpartition("/")[0] for f in files)
    return command + "".join(f" --include {shlex.quote(f'{d}/*' if d else '*')}" for d in folders)


def one_task_repo(repo_id: str, repo_type: str = "dataset") -> bool:
    """Whether ``repo_id`` is one R2MED task's dataset repository (the whole of it is that task; a local folder in
    its layout can stand for it), unlike BRIGHT's one repository of every task and configuration."""
    return repo_type == "dataset" and repo_id in {spec.hub_id for spec in TASKS.values()}


def fill_command(repo_id: str, revision: str | None, repo_type: str, files: Sequence[str]) -> str:
    """The command that fills the cache: one task's repository whole (R2MED's), else only ``files`` (of BRIGHT's
    many configurations, the one a command needs: ``--include 'gpt4_reason/*'``)."""
    return _download_command(repo_id, revision, repo_type, () if one_task_repo(repo_id, repo_type) else files)


def local_copy_hint(repo_id: str, repo_type: str = "dataset") -> str:
    """``, or pass --data-dir with a local copy`` where a local folder can stand for ``repo_id``: an R2MED task's
    repository only (a BRIGHT task is read from its hub, never from a folder: no --data-dir is its task)."""
    if not one_task_repo(repo_id, repo_type):
        return ""
    return f", or pass --data-dir with a local copy{legacy_cache_hint(repo_id, repo_type)}"


@dataclass(frozen=True)
class HubFiles:
    """Files of one hub repository found at one revision, before any of them is downloaded."""

    repo_id: str
    revision: str
    commit: str
    """What ``revision`` resolved to (the revision itself where the hub named no commit): download every file at
    it, so they all come from one commit."""
    files: tuple[str, ...]
    repo_type: str = "dataset"


@dataclass(frozen=True)
class Missing:
    """Files one revision of a repository lacks (the hub answered 404), or, offline, that the cache lacks at it;
    and whether the repository's head holds every file asked for (on the hub, or offline in the cache)."""

    repo_id: str
    revision: str
    commit: str | None
    """What ``revision`` resolved to, where that is known."""
    files: tuple[str, ...]
    """The missing ones."""
    wanted: tuple[str, ...]
    """Every file asked for."""
    head: str = HEAD
    head_commit: str | None = None
    """The head's commit, where it was asked (None: not asked, or it could not be)."""
    head_has_all: bool = False
    """The head (at another commit than ``commit``) holds every file of ``wanted``."""
    offline: bool = False
    repo_type: str = "dataset"

    def names(self) -> str:
        return ", ".join(repr(f) for f in self.files)

    def what(self, why: str = "") -> str:
        """The first clause: which files, at which revision (``why``: whose revision that is)."""
        whose = f", {why}" if why else ""
        if self.offline:
            return (
                f"hub: offline mode is set (HF_HUB_OFFLINE), and {self.repo_id} {self.names()} @ {self.revision}"
                f"{whose}{',' if why else ''} {'is' if len(self.files) == 1 else 'are'} not in the Hugging Face "
                f"cache ({hf_cache_dir()})"
            )
        at = f"revision {self.revision}" + (
            f" (commit {self.commit})" if self.commit and self.commit != self.revision else ""
        )
        files = "file" if len(self.files) == 1 else "files"
        return f"hub: {self.repo_id} has no {files} {self.names()} at {at} (HTTP 404){whose}"

    def where_else(self) -> str:
        """Where they are: the repository's head, when it holds every file asked for (or that it does not)."""
        if self.head_commit is None:
            return ""
        where = "the cache holds" if self.offline else "the repository's head"
        if self.head_has_all:
            them = "it" if len(self.wanted) == 1 else f"all {len(self.wanted)} files"
            if self.offline:
                return f"; the cache holds {them} at {self.head} (commit {self.head_commit})"
            return f"; {where} ({self.head}, commit {self.head_commit}) has {them}"
        if self.offline:
            return ""
        return f"; nor has {where} ({self.head}, commit {self.head_commit})"

    def remedy(self) -> str:
        """Offline: how to fill the cache; online: nothing (the files are not on the hub at this revision)."""
        if not self.offline:
            return ""
        command = fill_command(self.repo_id, self.revision, self.repo_type, self.files)
        fill = f"; fill the cache first ({command}) where the hub can be reached"
        return fill + local_copy_hint(self.repo_id, self.repo_type)

    def describe(self, why: str = "") -> str:
        return self.what(why) + self.where_else() + self.remedy()


class FilesMissing(HubError):
    """Files a revision lacks on the hub (HTTP 404), found before any download; ``missing`` says which."""

    def __init__(self, missing: Missing, message: str | None = None):
        super().__init__(message or missing.describe())
        self.missing = missing
        self.reason = f"{missing.repo_id} has no file {missing.names()} at revision {missing.revision}"


class FilesNotCached(HubUnavailable):
    """Offline: files the cache does not hold at the revision, found before any is read; ``missing`` says which."""

    def __init__(self, missing: Missing, message: str | None = None):
        super().__init__(message or missing.describe())
        self.missing = missing
        self.reason = "offline mode is set (HF_HUB_OFFLINE)"


def _ask(repo_id: str, files: tuple[str, ...], revision: str, repo_type: str) -> tuple[str | None, list[str]]:
    """(the commit ``revision`` resolved to, the files it lacks), asking the hub only about files not cached at a
    commit; any failure but a missing file is :func:`hub_error`'s one line."""
    commit = revision if is_commit(revision) else None
    missing = []
    for name in files:
        if commit is not None and (
            (repo_type, repo_id, commit, name) in _PRESENT or cached_file(repo_id, name, commit, repo_type)
        ):
            continue
        at = commit or revision
        try:
            meta = _metadata(repo_id, name, at, repo_type)
        except Exception as exc:  # huggingface_hub's errors and its HTTP backend's come in many types
            if not _missing_entry(exc):
                raise hub_error(exc, repo_id, name, at, repo_type) from None
            missing.append(name)
            commit = commit or _answered_commit(exc)
            continue
        found = getattr(meta, "commit_hash", None)
        commit = commit or (found if isinstance(found, str) and is_commit(found) else None)
        if commit is not None:
            _PRESENT.add((repo_type, repo_id, commit, name))
    if commit is not None and commit != revision:
        _RESOLVED.setdefault((repo_type, repo_id, commit), set()).add(revision)
    return commit, missing


def _write_refs(repo_id: str, commit: str, repo_type: str) -> None:
    """The cache's ``refs/<branch>`` for each branch this process resolved to ``commit`` (best effort)."""
    refs = hf_cache_dir() / f"{repo_type}s--{repo_id.replace('/', '--')}" / "refs"
    for ref in sorted(_RESOLVED.pop((repo_type, repo_id, commit), ())):
        if ".." in Path(ref).parts or Path(ref).is_absolute() or _cached_ref(repo_id, ref, repo_type) == commit:
            continue
        try:
            write_text_atomic(refs / ref, commit)
        except (OSError, R2MedError) as exc:
            log.debug("cannot record %s's %s -> %s in the cache: %s", repo_id, ref, commit, exc)


def _in_cache(repo_id: str, files: tuple[str, ...], revision: str, repo_type: str) -> tuple[str | None, list[str]]:
    """Offline: (the commit ``revision`` names in the cache, the files the cache lacks there)."""
    found = {name: cached_file(repo_id, name, revision, repo_type) for name in files}
    commit = next((snapshot_commit(p) for p in found.values() if p is not None), None)
    return commit or _cached_ref(repo_id, revision, repo_type), [n for n, p in found.items() if p is None]


def resolve_files(
    repo_id: str,
    filenames: Iterable[str],
    revision: str | None = None,
    repo_type: str = "dataset",
    head: str = HEAD,
) -> HubFiles:
    """Every file of ``filenames`` found at ``revision`` (default: the head) before any is downloaded.

    A branch or tag is resolved to its commit on the first request, and the other files are asked for at that
    commit; a file cached at a commit (or already found at it in this process) costs no request, so a command
    whose files are all cached makes none.  Offline, the cache answers.  Files the revision lacks raise
    :class:`FilesMissing` (offline: :class:`FilesNotCached`), after asking whether the repository's head holds
    every file (nothing is downloaded either way); any other failure is :func:`hub_error`'s one line.
    """
    wanted = tuple(dict.fromkeys(filenames))
    revision = check_revision(revision or head)  # a revision read from a file (metrics.json) too
    look = _in_cache if _offline() else _ask
    commit, missing = look(repo_id, wanted, revision, repo_type)
    if not missing:
        return HubFiles(repo_id, revision, commit or revision, wanted, repo_type)
    head_commit: str | None = None
    head_missing: list[str] = []
    if revision != head:
        try:
            head_commit, head_missing = look(repo_id, wanted, head, repo_type)
        except HubError:
            head_commit = None  # the head cannot be asked: say nothing of it
    found = Missing(
        repo_id,
        revision,
        commit,
        tuple(missing),
        wanted,
        head,
        head_commit,
        head_commit is not None and not head_missing and head_commit != commit,
        _offline(),
        repo_type,
    )
    raise FilesNotCached(found) if found.offline else FilesMissing(found)


def download(repo_id: str, filename: str, revision: str | None = None, repo_type: str = "dataset") -> Path:
    """One file of a hub repo through the standard HF cache (no request when cached at a commit), verified
    against the content hash the cache stores it under (:func:`~.hub_integrity.verify_cached`; a damaged copy
    is fetched again where the hub can be reached)."""
    if revision is not None:
        check_revision(revision)
    if (
        not _offline()
        and (repo_type, repo_id, revision or "", filename) not in _PRESENT
        and cached_file(repo_id, filename, revision, repo_type) is None
    ):
        probe(repo_id, filename, revision, repo_type)  # fail fast, in one line, when the hub is unreachable
    try:
        with quiet_hub_logs():  # its retries' warnings: r2med says what happened in one line
            path = Path(
                huggingface_hub.hf_hub_download(
                    repo_id=repo_id, filename=filename, repo_type=repo_type, revision=revision
                )
            )
    except Exception as exc:
        raise hub_error(exc, repo_id, filename, revision, repo_type) from None
    damage = verify_cached(path)
    if damage is None:
        if not _offline() and revision is not None:
            _write_refs(repo_id, revision, repo_type)
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
            huggingface_hub.hf_hub_download(
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


# -- R2MED's tasks: which revision, which files, and the way forward when one is missing ------------


def expansion_commit(task: str, name: ExpansionName) -> str | None:
    """The hub commit recorded as holding the expansions ``name`` of ``task`` (the LLM in either spelling:
    ``qwen_7b``, ``qwen-7b``; ``protocol/r2med_expansion_commits.json``), or None where none is known."""
    entry = expansion_commits()["expansions"].get(name._replace(llm=name.llm.replace("_", "-")).text)
    commit = entry.get("commits", {}).get(task) if isinstance(entry, dict) else None
    return commit if is_commit(commit) else None


def task_revision(task: str, spec: str | None = None, expansions: Sequence[ExpansionName] = ()) -> tuple[str, str]:
    """(the revision ``task`` is loaded at, whose revision it is): ``--revision``'s word for it (``""``), else
    the commit recorded as holding all its hub ``expansions`` where one is, else the task's pinned commit."""
    task_spec = get_task(task)
    every, per_task = parse_revision(spec)
    asked = per_task.get(task_spec.name) or every
    if asked:
        return asked, ""
    known = {e: c for e in expansions if (c := expansion_commit(task_spec.name, e))}
    if len(set(known.values())) > 1:
        raise R2MedError(
            f"{task_spec.name}: the expansions {', '.join(e.text for e in known)} are held by different hub commits "
            f"({', '.join(f'{e.text} {c[:12]}' for e, c in known.items())}); run them apart, or pass "
            f"--revision {task_spec.name}=<commit> to choose one"
        )
    if known:
        label, commit = next(iter(known.items()))
        return commit, f"the commit recorded as holding {label.text} for {task_spec.name}"
    return task_spec.revision, f"the commit r2med pins for {task_spec.name} (MTEB's)"


def revision_option(spec: str | None, tasks: Sequence[str], moved: Mapping[str, str]) -> str:
    """The ``--revision`` value that keeps what ``spec`` said of ``tasks`` and puts the ``moved`` ones at their new
    revision: ``Biology=main`` (a per-task pair for each task not at its default)."""
    every, per_task = parse_revision(spec)
    pairs = []
    for task in tasks:
        rev = moved.get(task) or per_task.get(task) or every
        if rev:
            pairs.append(f"{task}={rev}")
    return ",".join(pairs)


Problem = tuple[str, str, FilesMissing | FilesNotCached]
"""(task, whose revision it was -- :func:`task_revision`, the files it lacks there)."""


def refusal(problems: Sequence[Problem], spec: str | None, tasks: Sequence[str]) -> HubError:
    """One line for the hub files missing at the revisions of one or more tasks of a command, found before any
    download: the first task's files and revision, where they are (the repository's head), the ``--revision``
    that reads every such task from there, and what results made so record and how they are graded."""
    task, why, first = problems[0]
    missing = first.missing
    line = missing.what(why) + missing.where_else()
    others = [t for t, _, _ in problems[1:]]
    if others:
        one = len(others) == 1
        line += f"; {', '.join(others)} lack{'s' if one else ''} files at {'its' if one else 'their'} revision too"
    forward = all(p.missing.head_has_all for _, _, p in problems)
    if forward:
        moved = {t: p.missing.head for t, _, p in problems}
        commits = {t: str(p.missing.head_commit) for t, _, p in problems}
        names = ", ".join(moved)
        where = (
            ("that cached commit" if len(moved) == 1 else "those cached commits")
            if missing.offline
            else ("that commit" if len(moved) == 1 else "those commits")
        )
        recorded = (
            f"commit {commits[task]}"
            if len(commits) == 1
            else "the commit each came from (" + ", ".join(f"{t} {c[:12]}" for t, c in commits.items()) + ")"
        )
        line += (
            f": --revision {revision_option(spec, tasks, moved)} loads {names} from {where} (data and expansions "
            f"alike); results made so record {recorded}, and a published figure grades them only where their data "
            "matches the figure's (the task's published query and document counts)"
        )
    elif not missing.offline and any(f.endswith(f"/{EXPANSION_FILE}") for f in missing.files):
        line += "; generate the expansions with `r2med expand`, or pass --expansion-file"
    # the cache-filling command fetches what every task of the line lacks (one repository, one revision)
    at = (missing.repo_id, missing.revision)
    same = [p.missing for _, _, p in problems if (p.missing.repo_id, p.missing.revision) == at]
    remedy = replace(missing, files=tuple(dict.fromkeys(f for m in same for f in m.files))).remedy()
    line += remedy.replace("; fill the cache first", "; or fill the cache first", 1) if forward else remedy
    if not missing.offline:
        line += "; nothing was downloaded"
    return type(first)(missing, line)


def load_from_hub(task: str, revision: str | None = None, strict: bool = False, corpus: bool = True) -> Collection:
    """Task ``task`` at ``revision_for(task, revision)``: its three files found at one commit before any is
    downloaded (a missing one is :func:`refusal`'s line), then read from that commit, recorded on the collection.
    ``corpus``: False reads the queries and judgments only (``import``, ``score``: no documents downloaded)."""
    spec = get_task(task)
    wanted, why = task_revision(spec.name, revision)
    names = tuple(f for f in TASK_FILES if corpus or f != "corpus.jsonl")
    try:
        found = resolve_files(spec.hub_id, names, wanted)
    except (FilesMissing, FilesNotCached) as exc:
        raise refusal([(spec.name, why, exc)], revision, [spec.name]) from None
    commit = found.commit
    files = {name: download(spec.hub_id, name, commit) for name in names}
    source = f"hf://datasets/{spec.hub_id}@{commit}"
    if not corpus:
        coll = load_r2med_judgments(
            files["query.jsonl"], files["qrels.jsonl"], spec.name, source=source, revision=commit, strict=strict
        )
    else:
        coll = load_r2med_files(
            files["corpus.jsonl"],
            files["query.jsonl"],
            files["qrels.jsonl"],
            spec.name,
            source=source,
            revision=commit,
            strict=strict,
        )
    log.info("%s: hub data at commit %s%s", spec.name, commit, "" if wanted == commit else f" ({wanted})")
    return coll


def download_expansion(task: str, method: str, split: str, revision: str | None = None) -> Path:
    """A hub expansion file of ``task``; ``revision`` is a ``--revision`` spec or the data's resolved commit."""
    spec = get_task(task)
    path = expansion_path(method, split)
    wanted, why = task_revision(spec.name, revision)
    try:
        found = resolve_files(spec.hub_id, [path], wanted)
    except (FilesMissing, FilesNotCached) as exc:
        raise refusal([(spec.name, why, exc)], revision, [spec.name]) from None
    local = download(spec.hub_id, path, found.commit)
    remember_fingerprint(spec.hub_id, found.commit, path, local)  # what an expansion file given by hand is graded by
    return local
