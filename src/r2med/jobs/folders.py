"""Run folders: what a finished task folder holds, how a job finishes one, and when one is reused.

A run folder (``OUT/<system>/``) holds one task folder per task (``run.trec``, ``metrics.json``,
``r2med_results.json``; written by :func:`r2med.run.write_task_results`, atomically).

* :func:`finish_task` -- the one way a job (evaluate, rerank, fuse) ends a task: it scores the run
  *as written* (scores rounded as ``run.trec`` stores them), so ``metrics.json`` always equals a
  re-score of ``run.trec``, and writes the folder;
* :func:`reuse` -- a finished folder made with the same configuration on the same data (corpus
  fingerprint and hub revision) is read back instead of recomputed, so an interrupted job resumes;
* :func:`read_run_folder` -- the finished task folders of a run folder (:class:`TaskFolder`);
* :func:`find_systems` -- run folders as *systems* for reports, each matched to the published
  configuration it reproduces (:func:`r2med.published.match_published`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import platform
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import __version__
from ..data import Collection
from ..errors import R2MedError
from ..metrics import HEADLINE, Metrics, evaluate
from ..paths import task_folder
from ..published import PublishedKey, expansion_of, match_published, parse_label
from ..run import METRICS_FILE, RUN_FILE, Run, as_written, read_metrics, read_trec, write_task_results
from ..tasks import TASK_NAMES

log = logging.getLogger(__name__)


@dataclass
class TaskResult:
    """What a job did for one task: its measures, where it wrote them, and the configuration."""

    task: str
    metrics: Metrics
    folder: Path | None
    timing: dict[str, float] = field(default_factory=dict)
    reused: bool = False
    run: Run | None = None
    config: dict[str, Any] = field(default_factory=dict)

    @property
    def headline(self) -> float:
        """nDCG@10 when computed, else the first measure."""
        aggregate = self.metrics.aggregate
        return aggregate[HEADLINE] if HEADLINE in aggregate else aggregate[self.metrics.measures[0]]


def versions() -> dict[str, str]:
    import numpy
    import scipy

    out = {"r2med": __version__, "python": platform.python_version(), "numpy": numpy.__version__,
           "scipy": scipy.__version__}
    try:
        from importlib.metadata import version

        out["pytrec_eval"] = version("pytrec-eval-terrier")
    except Exception:  # pragma: no cover - metadata missing in odd installs
        pass
    return out


def _as_json(config: Mapping[str, Any]) -> dict[str, Any]:
    """The configuration as ``metrics.json`` stores it (paths and other objects as text)."""
    return json.loads(json.dumps(dict(config), default=str))


def metrics_payload(collection: Collection, name: str, config: Mapping[str, Any], metrics: Metrics,
                    timing: Mapping[str, float], count_missing: bool = False) -> dict[str, Any]:
    """The ``metrics.json`` of one task folder."""
    return {
        "task": collection.name,
        "retriever": name,
        "config": _as_json(config),
        "aggregate": metrics.aggregate,
        "per_query": metrics.per_query,
        "count_missing": count_missing,
        "timing": dict(timing),
        "versions": versions(),
        "dataset_fingerprint": collection.fingerprint,
        "source": collection.source,
        "revision": collection.revision,
    }


def finish_task(collection: Collection, name: str, run: Run, config: Mapping[str, Any], out: str | Path | None,
                measures: Iterable[str], count_missing: bool, timing: Mapping[str, float]) -> TaskResult:
    """Score ``run`` as ``run.trec`` will hold it and (with ``out``) write ``out/<task>/`` atomically.

    ``name`` is the result's name (the run tag and ``metrics.json``'s ``retriever``).
    """
    run = as_written(run)
    metrics = evaluate(run, collection.qrels, measures=measures, count_missing=count_missing)
    folder = task_folder(out, collection.name) if out is not None else None
    if folder is not None:
        payload = metrics_payload(collection, name, config, metrics, timing, count_missing)
        write_task_results(folder, run, payload, tag=name, root=out)
    return TaskResult(collection.name, metrics, folder, dict(timing), run=run, config=_as_json(config))


def reuse(out: str | Path | None, config: Mapping[str, Any], collection: Collection, measures: Iterable[str],
          count_missing: bool, overwrite: bool = False) -> TaskResult | None:
    """The finished results in ``out/<task>/`` if they were made with ``config`` on this collection, else None.

    Unreadable or foreign results are ignored (and replaced when the task is written).
    """
    if out is None or overwrite:
        return None
    folder = task_folder(out, collection.name)
    if not (folder / METRICS_FILE).exists():
        return None
    try:
        stored = read_metrics(folder)
        if (stored.get("config") != _as_json(config) or stored.get("dataset_fingerprint") != collection.fingerprint
                or stored.get("revision") != collection.revision):
            log.warning("%s: %s holds results of another configuration or data; they will be replaced "
                        "(use another --out to keep both)", collection.name, folder)
            return None
        run = read_trec(folder / RUN_FILE)
    except R2MedError:
        return None
    metrics = evaluate(run, collection.qrels, measures=measures, count_missing=count_missing)
    log.info("%s: reusing finished results in %s", collection.name, folder)
    return TaskResult(collection.name, metrics, folder, stored.get("timing", {}), reused=True, run=run,
                      config=stored["config"])


def file_fingerprint(path: str | os.PathLike[str]) -> str:
    """A content hash of a file (a run's ``run.trec``: what reranked or fused results were made from)."""
    h = hashlib.blake2b(digest_size=10)
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


# -- reading finished folders ---------------------------------------------------------------------

@dataclass
class TaskFolder:
    """One finished task folder: its ``metrics.json`` and (lazily) its run."""

    task: str
    folder: Path
    metrics: dict[str, Any]
    _run: Run | None = field(default=None, repr=False)

    @property
    def aggregate(self) -> dict[str, float]:
        return self.metrics.get("aggregate", {})

    @property
    def per_query(self) -> dict[str, dict[str, float]]:
        return self.metrics.get("per_query", {})

    @property
    def config(self) -> dict[str, Any]:
        return self.metrics.get("config", {}) or {}

    @property
    def expansion(self) -> dict[str, Any] | None:
        """The expansion its queries were built with (:func:`r2med.published.expansion_of`), or None."""
        return expansion_of(self.config)

    @property
    def name(self) -> str:
        """The result's name (``metrics.json``'s ``retriever``; the parent folder when absent)."""
        return str(self.metrics.get("retriever") or self.folder.parent.name)

    def value(self, measure: str) -> float | None:
        v = self.aggregate.get(measure)
        if v is None and self.per_query:
            vals = [q[measure] for q in self.per_query.values() if measure in q]
            v = sum(vals) / len(vals) if vals and len(vals) == len(self.per_query) else None
        return v

    def scores(self, measure: str) -> dict[str, float]:
        """Per-query values of ``measure`` (query id -> value)."""
        return {q: v[measure] for q, v in self.per_query.items() if measure in v}

    @property
    def run(self) -> Run:
        if self._run is None:
            path = self.folder / RUN_FILE
            self._run = read_trec(path) if path.exists() else {}
        return self._run


def is_task_folder(path: Path) -> bool:
    return (path / METRICS_FILE).is_file()


def task_folders(folder: str | os.PathLike[str]) -> list[Path]:
    """The finished task folders of a run folder (itself when it is one), sorted by name."""
    folder = Path(folder)
    if is_task_folder(folder):
        return [folder]
    return sorted(c for c in folder.iterdir() if c.is_dir() and is_task_folder(c)) if folder.is_dir() else []


def read_run_folder(folder: str | os.PathLike[str], tasks: set[str] | None = None) -> list[TaskFolder]:
    """Every finished task of a run folder (or a single task folder); ``tasks``: lowercased names to keep.

    Each ``metrics.json`` is checked (:func:`r2med.run.read_metrics`): a damaged one is an error naming it.
    """
    found = []
    for path in task_folders(folder):
        metrics = read_metrics(path)
        task = str(metrics.get("task") or path.name)
        if tasks is None or task.lower() in tasks:
            found.append(TaskFolder(task, path, metrics))
    return found


@dataclass
class System:
    """One run folder as a system of a report: its tasks and the published configuration it reproduces."""

    name: str
    folder: Path
    tasks: dict[str, TaskFolder]
    published: PublishedKey | None = None

    def measures(self) -> set[str]:
        out: set[str] = set()
        for t in self.tasks.values():
            out |= set(t.aggregate)
        return out


def system_folders(path: Path) -> list[Path]:
    """The system folders under ``path``: itself when it is a task or system folder, else every folder
    below it, at any depth, that holds task folders (e.g. ``runs/bm25``, ``runs/fused/rrf-bm25+dense``)."""
    if is_task_folder(path):
        return [path]
    return sorted({m.parent.parent for m in path.rglob(METRICS_FILE) if is_task_folder(m.parent)})


def load_system(folder: str | os.PathLike[str], name: str | None = None) -> System:
    folder = Path(folder)
    default_name = (folder.parent.name or folder.name) if is_task_folder(folder) else folder.name
    tasks = {t.task: t for t in read_run_folder(folder)}
    system = System(name or default_name, folder, tasks)
    system.published = match_published(system.name, [t.config for t in tasks.values()])
    return system


def find_systems(paths: Iterable[str | os.PathLike[str]], published: Mapping[str, str] | None = None) -> list[System]:
    """Systems from run folders; names made unique (``parent/name``) when two folders share one.

    ``published`` maps a system name to a published label (``bm25``, ``nv+hyde-gpt4``) to
    override the automatic match (``none`` to match nothing).
    """
    folders: list[Path] = []
    for p in paths:
        path = Path(p)
        if not path.exists():
            raise R2MedError(f"{path}: no such run folder")
        if not path.is_dir():
            raise R2MedError(f"{path}: not a folder; pass a run folder written by `r2med evaluate`")
        found = system_folders(path)
        if not found:
            raise R2MedError(f"{path}: no results found (expected <system>/<task>/{METRICS_FILE})")
        folders += [f for f in found if f not in folders]
    systems = [load_system(f) for f in folders]
    names = [s.name for s in systems]
    for s in systems:
        if names.count(s.name) > 1:
            s.name = f"{s.folder.parent.name}/{s.name}"
    for name, label in (published or {}).items():
        match = [s for s in systems if s.name == name]
        if not match:
            raise R2MedError(f"--published {name}={label}: no system named {name!r}; "
                             f"systems: {', '.join(s.name for s in systems)}")
        key = None if label.lower() == "none" else parse_label(label)
        if label.lower() != "none" and key is None:
            raise R2MedError(f"--published {name}={label}: no published figures for {label!r}")
        match[0].published = key
    return systems


def task_order(systems: Iterable[System]) -> list[str]:
    """R2MED's 8 tasks in the paper's order first, then any other task names in order of appearance."""
    seen: list[str] = []
    for s in systems:
        for t in s.tasks:
            if t not in seen:
                seen.append(t)
    return [t for t in TASK_NAMES if t in seen] + [t for t in seen if t not in TASK_NAMES]
