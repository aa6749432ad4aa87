"""The one way from task names and folders to collections.

A :class:`TaskRef` names a task and where its data is: the Hugging Face hub (at a ``--revision``
spec), a local folder, or the built-in demo.  Every command finds its collections here:

* :func:`resolve` -- the tasks a command runs on (``evaluate``, ``expand``, ``encode``...):
  ``--data-dir`` as one collection folder (its name is the task), a folder holding one
  sub-folder per task, or (no ``--data-dir``) R2MED's tasks from the hub;
* :func:`locate` -- one task that results were filed under (``rerank``, ``fuse``, report texts,
  ``reproduce``): ``--data-dir`` when given, else the built-in demo, the source folder a run
  recorded, or the hub (R2MED's tasks, at the recorded commit unless ``--revision`` says otherwise);
* :func:`load_task` -- the Python API's loader by name.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import R2MedError
from ..tasks import TASK_NAMES, get_task, parse_tasks
from .collection import Collection
from .loaders import DEMO_SOURCE, load_demo, load_folder

HUB = "hub"
DEMO = "demo"


@dataclass(frozen=True)
class TaskRef:
    """A task and where its data is: ``source`` is ``"hub"``, ``"demo"`` or a folder."""

    name: str
    source: str
    revision: str | None = None  # hub tasks: the --revision spec (None: the pinned commit)

    def load(self) -> Collection:
        if self.source == DEMO:
            return load_demo()
        if self.source == HUB:
            from .hub import load_from_hub

            return load_from_hub(self.name, revision=self.revision)
        return load_folder(self.source, name=self.name)


def is_collection(folder: Path) -> bool:
    """A folder holding a collection (``corpus.jsonl``, R2MED or BEIR layout)."""
    return (folder / "corpus.jsonl").is_file()


def _root(data_dir: str | os.PathLike[str]) -> Path:
    # absolute: the folder is recorded as the results' source, usable from anywhere
    return Path(os.path.normpath(Path(data_dir).expanduser().absolute()))


def resolve(tasks: str | Iterable[str] | None = "all", data_dir: str | os.PathLike[str] | None = None,
            revision: str | None = None) -> list[TaskRef]:
    """The tasks to run: ``data_dir`` as one collection folder (``tasks`` then does not apply), a
    folder of task folders (``<data_dir>/<Task>``), or the hub.  Names and ``revision`` are checked
    here, before anything is loaded."""
    from .hub import parse_revision

    parse_revision(revision)
    if data_dir is not None:
        root = _root(data_dir)
        if is_collection(root):
            return [TaskRef(root.name, str(root))]
        return [TaskRef(name, str(root / name if (root / name).is_dir() else root)) for name in parse_tasks(tasks)]
    return [TaskRef(name, HUB, revision) for name in parse_tasks(tasks)]


def locate(task: str, data_dir: str | os.PathLike[str] | None = None, revision: str | None = None, *,
           recorded: Mapping[str, Any] | None = None, hub: bool = True, alone: bool = False) -> TaskRef | None:
    """Where the collection of ``task`` (a name results are filed under) is, or None.

    With ``data_dir``: the folder ``<data_dir>/<task>``, or ``data_dir`` itself when it is one collection
    folder named ``task`` (any name when ``alone``: the only task asked for).  Then the built-in
    demo (``task == "demo"`` or a recorded demo source); without ``data_dir``, the folder a run
    recorded as its ``source`` (``recorded``: its metrics.json); last, when ``hub`` allows, the
    hub for R2MED's tasks, at ``revision`` or else the commit the run recorded.
    """
    recorded = recorded or {}
    if data_dir is not None:
        root = _root(data_dir)
        names = [task] + ([get_task(task).name] if task.lower() in _lowered() else [])
        for name in names:
            if (root / name).is_dir():
                return TaskRef(task, str(root / name))
        if is_collection(root) and (alone or root.name == task):
            return TaskRef(task, str(root))
    source = str(recorded.get("source") or "")
    if task == DEMO or source == DEMO_SOURCE:
        return TaskRef(DEMO, DEMO)
    if data_dir is None and source and Path(source).is_dir():
        return TaskRef(task, source)
    if hub and task.lower() in _lowered():
        stored = recorded.get("revision")
        return TaskRef(get_task(task).name, HUB, revision or (stored if isinstance(stored, str) else None))
    return None


def _lowered() -> set[str]:
    return {t.lower() for t in TASK_NAMES}


def task_filter(spec: str | None) -> set[str] | None:
    """``--tasks`` as a filter over tasks found in run folders: None for ``all``, else the lowercased names."""
    if not spec or spec.strip().lower() == "all":
        return None
    return {part.strip().lower() for part in spec.split(",") if part.strip()}


def load_task(task: str, source: str | os.PathLike[str] | None = None, revision: str | None = None) -> Collection:
    """Load an R2MED task by name.

    ``source`` is ``None``/``"hub"`` for the Hugging Face hub (through the standard HF cache, at
    the task's pinned commit unless ``revision`` -- ``main``, a commit, or ``TASK=REV`` pairs --
    says otherwise), a folder holding one sub-folder per task (``<source>/<Task>/corpus.jsonl``),
    or one collection folder. ``"demo"`` loads the built-in demo collection.
    """
    if task == DEMO or source == DEMO:
        return load_demo()
    if source is None or str(source) == HUB:
        return TaskRef(get_task(task).name, HUB, revision).load()
    root = _root(source)
    name = get_task(task).name if task.lower() in _lowered() else task
    for folder in (root / task, root / name):
        if folder.is_dir():
            return load_folder(folder, name=name)
    return load_folder(root, name=task)  # one collection folder (or the reader's error naming it)


def require(ref: TaskRef | None, task: str, recorded: Mapping[str, Any] | None = None) -> TaskRef:
    """``ref``, or a one-line error saying that the collection of ``task`` cannot be found."""
    if ref is not None:
        return ref
    source = str((recorded or {}).get("source") or "")
    where = f" (recorded source {source!r} is gone)" if source else ""
    raise R2MedError(f"cannot find the collection of task {task!r}{where}; pass --data-dir")
