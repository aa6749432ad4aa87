"""Containment: names that become path parts, and folders the user named.

r2med writes only under folders the user named (``--out``, ``R2MED_HOME``).  Names that
come from files or options (a task read from ``metrics.json``, a retriever label, ``--name``)
become path parts only through :func:`plain_name`, and task folders are made only through
:func:`task_folder`, which also checks (:func:`ensure_within`) that the result stays under
the named root.  Nothing is written, replaced or deleted *through* a symbolic link below the named
root (:func:`refuse_links`): a linked folder on the way is refused in one line; a link at the very
place a file or folder is written is replaced itself (the atomic rename), never its target.  A system
folder (``OUT/<system>``) is a :class:`SystemFolder`, never a link: the one writer of task folders
(:func:`r2med.runs.run.write_task_results`) refuses a task folder whose system folder is one, whatever root it is
given, so no command can name ``OUT/<system>`` as a root of its own and write through a link there.
:func:`check_output_dir` / :func:`check_output_file` find an unwritable destination before any
compute starts.
"""

from __future__ import annotations

import os
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from ..errors import DataError, OptionError, R2MedError, shown
from .input_files import is_stream

_SEPARATORS = {"/", "\\", os.sep} | ({os.altsep} if os.altsep else set())


def path_argument(value: object, what: str) -> Path:
    """A path given to the Python API as a :class:`~pathlib.Path`: text or a path-like, not empty, no NUL (no file
    name holds one); anything else is an OptionError naming ``what`` -- never a ``TypeError`` from ``os``."""
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if not isinstance(value, str) or not value:
        raise OptionError(f"{what}: expected a path (text or a Path), got {shown(value)}")
    if "\0" in value:
        raise OptionError(f"{what}: {shown(value)} holds a NUL, which no file name holds")
    return Path(value)


def _control(ch: str) -> bool:
    return unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp")


def name_problem(name: object, run_name: bool = False) -> str | None:
    """Why ``name`` cannot be a path part (or a TREC run tag when ``run_name``), or None if it can."""
    if not isinstance(name, str):
        return f"must be text, got {type(name).__name__}"
    if not name:
        return "is empty"
    if name in (".", ".."):
        return f"{name!r} names a folder, not a plain name"
    if len(name) > 200 or len(name.encode("utf-8")) > 200:  # first: the checks below scan the whole name
        return f"{shown(name, 40)} is longer than 200 bytes"
    if any(sep in name for sep in _SEPARATORS):
        return f"{shown(name)} contains a path separator"
    if any(_control(ch) for ch in name):
        return f"{shown(name)} contains a control character"
    if name != name.strip():
        return f"{shown(name)} starts or ends with whitespace"
    if run_name and any(ch.isspace() for ch in name):
        return f"{shown(name)} contains whitespace (a TREC run's tag column cannot hold it)"
    return None


def plain_name(name: object, what: str, source: str | os.PathLike[str] | None = None, run_name: bool = False) -> str:
    """``name`` if it is a plain name (no separator, not ``.``/``..``, no control character, not empty).

    ``what`` says what the name is (``"task"``, ``"--name"``); ``source`` is the file it was read
    from (then the error is a :class:`DataError` naming it).  ``run_name`` also rejects whitespace,
    which a TREC run's tag column cannot hold.
    """
    problem = name_problem(name, run_name=run_name)
    if problem is None:
        return name  # type: ignore[return-value]
    if source is not None:
        raise DataError(source, None, f"{what} {problem}; refusing to use it as a folder name")
    raise R2MedError(f"{what} {problem}; use a plain name (letters, digits, . _ - +)")


def linked_part(root: str | os.PathLike[str], path: str | os.PathLike[str], include_last: bool = False) -> Path | None:
    """The first existing part of ``path`` below ``root`` that is a symbolic link (``path`` itself only with
    ``include_last``), or None.  ``root`` itself (the folder the user named) may be a link."""
    base = Path(os.path.normpath(os.path.abspath(root)))
    full = Path(os.path.normpath(os.path.abspath(path)))
    try:
        parts = full.relative_to(base).parts
    except ValueError:
        return None
    probe = base
    for i, part in enumerate(parts):
        probe = probe / part
        if i == len(parts) - 1 and not include_last:
            break
        if probe.is_symlink():
            return probe
        if not probe.exists():
            break  # nothing deeper exists yet, so no link either
    return None


def refuse_links(root: str | os.PathLike[str], path: str | os.PathLike[str], include_last: bool = False) -> Path:
    """``path`` unless a part of it below ``root`` is a symbolic link (``path`` itself too with ``include_last``):
    then a one-line R2MedError, before anything is written, replaced or deleted through the link."""
    link = linked_part(root, path, include_last)
    if link is not None:
        try:
            target = os.readlink(link)
        except OSError:
            target = "?"
        raise R2MedError(
            f"refusing to write {os.path.abspath(path)}: {link} is a link (to {target}), and r2med "
            f"writes nothing through a link below {os.path.abspath(root)}; remove the link (its target "
            "is left alone) or name the folder it points to"
        )
    return Path(path)


def ensure_within(root: str | os.PathLike[str], path: str | os.PathLike[str]) -> Path:
    """``path`` if it lies under ``root`` (compared as absolute, normalised paths) and no folder between them is a
    link (:func:`refuse_links`; ``path`` itself may be one: writers replace it, never follow it), else an R2MedError."""
    base = os.path.normpath(os.path.abspath(root))
    full = os.path.normpath(os.path.abspath(path))
    if full == base or os.path.commonpath([base, full]) != base:
        raise R2MedError(f"refusing to write {full}: it is outside {base}, the folder results go to")
    refuse_links(base, full)
    return Path(path)


@dataclass(frozen=True)
class SystemFolder:
    """``ROOT/<name>``: a system folder under a results root -- the only kind of folder task folders are written
    into (:func:`r2med.results.folders.finish_task`, :func:`r2med.runs.run.write_task_results`).

    Made by :func:`system_folder` (a results root the user named and a result's name) or :func:`as_system_folder`
    (a path: its parent is the root).  :meth:`task` checks again, each time a task folder is named, that the system
    folder is no link: its task folders are written, replaced and deleted inside it, so a link there would have
    them written, replaced and deleted in its target."""

    root: Path
    name: str

    @property
    def path(self) -> Path:
        return self.root / self.name

    def checked(self) -> Path:
        """The folder, unless it (or a folder between the root and it) is a link: then a one-line R2MedError."""
        return refuse_links(self.root, self.path, include_last=True)

    def task(self, task: str, source: str | os.PathLike[str] | None = None) -> Path:
        """``ROOT/<name>/<task>`` for a plain task name (:func:`task_folder`), the system folder checked first."""
        return task_folder(self.checked(), task, source)

    def __str__(self) -> str:
        return str(self.path)


def system_folder(root: str | os.PathLike[str], name: str) -> SystemFolder:
    """``root/<name>``: a system folder under the results root the user named, refused now (one line, before any
    work) when it is a link -- and again whenever a task folder is written into it (:meth:`SystemFolder.task`)."""
    folder = SystemFolder(Path(root), plain_name(name, "result name"))
    folder.checked()
    return folder


def as_system_folder(out: SystemFolder | str | os.PathLike[str]) -> SystemFolder:
    """``out`` as a :class:`SystemFolder`: a path names one whose root is its parent (``runs/bm25``: the system
    ``bm25`` of ``runs``), so a system folder given as a path is held to the same rule -- never a link."""
    if isinstance(out, SystemFolder):
        return out
    full = Path(os.path.normpath(os.path.abspath(out)))
    return system_folder(full.parent, full.name)


def task_folder_name(task: str) -> str:
    """The folder a task's results go in: its name, with ``:`` as ``-`` (``bright:biology`` -> ``bright-biology``:
    a colon is no part of a portable file name, and ``scp`` or ``rsync`` read ``a:b`` as a host).  The task's name
    itself is in the folder's ``metrics.json``."""
    return task.replace(":", "-")


def task_folder(out: str | os.PathLike[str], task: str, source: str | os.PathLike[str] | None = None) -> Path:
    """``out/<task>`` for a plain task name (:func:`task_folder_name`), checked to stay under ``out``."""
    folder = Path(out) / task_folder_name(plain_name(task, "task", source))
    return ensure_within(out, folder)


def check_output_dir(path: str | os.PathLike[str], what: str = "--out") -> Path:
    """Fail now (one line) if ``path`` cannot become a writable folder: it is a file, or the nearest
    existing folder above it is not writable.  Nothing is created."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise R2MedError(f"{what} {path}: is a file, not a folder")
    probe = Path(os.path.abspath(path))
    while not probe.exists():
        if probe.is_symlink():
            raise R2MedError(f"{what} {path}: {probe} is a broken link")
        probe = probe.parent
    if not probe.is_dir():
        raise R2MedError(f"{what} {path}: {probe} is a file, so the folder cannot be made")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise R2MedError(f"{what} {path}: {probe} is not writable")
    return path


def check_output_file(path: str | os.PathLike[str], what: str = "--output") -> Path:
    """Fail now (one line) if ``path`` cannot be written as a file (a folder, or an unwritable place)."""
    path = Path(path)
    if path.is_dir():
        raise R2MedError(f"{what} {path}: is a folder; name a file")
    if is_stream(path):  # a device or a pipe (/dev/null, >(cmd)): written as a stream, no temp beside it
        if not os.access(path, os.W_OK):
            raise R2MedError(f"{what} {path}: not writable")
        return path
    check_output_dir(path.parent, what)  # written as a temp file beside it, then renamed
    return path


def check_input_file(path: str | os.PathLike[str], what: str) -> Path:
    """Fail now (one line) unless ``path`` is a readable file."""
    path = Path(path)
    if not path.exists():
        raise R2MedError(f"{what} {path}: no such file")
    if path.is_dir():
        raise R2MedError(f"{what} {path}: is a folder, not a file")
    if not os.access(path, os.R_OK):
        raise R2MedError(f"{what} {path}: not readable")
    return path
