"""Run folders as *systems*, and which published R2MED configuration each one is.

A system is one sub-folder of an ``r2med evaluate`` output (``OUT/<system>/<task>/metrics.json``).
:func:`load_systems` accepts any mix of output roots, system folders and single task
folders.  :func:`match_published` maps a system to the published configuration it
reproduces (``bm25`` -> (bm25, none, none); ``bm25+hyde-gpt4`` -> (bm25, hyde, gpt4)),
checking the stored configuration where it tells more than the name (BM25 with
non-paper ``k1``/``b`` or the standard flavour matches nothing; a dense preset with another
model, pooling, length, instruction or a similarity other than the paper's cosine matches
nothing).  A precision other than the paper's (``--dtype``) keeps the match: :func:`nonpaper_precision`
names it, and the leaderboard widens the tolerance instead.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from ..errors import R2MedError
from ..protocol import published_figures, published_ndcg10
from ..run import METRICS_FILE, RUN_FILE, Run, read_metrics, read_trec
from ..tasks import TASK_NAMES

PAPER_BM25 = {"k1": 0.9, "b": 0.4}
RERANK = "rerank:"
#: The published reranker rows rerank the first stage's top 10 (setting ``reranker_top_10``).
PUBLISHED_RERANK_DEPTH = 10


@dataclass(frozen=True)
class PublishedKey:
    """A published configuration: (retriever, expansion method, LLM), as in the figures CSV."""

    retriever: str
    expansion: str = "none"
    llm: str = "none"

    @property
    def label(self) -> str:
        if self.expansion == "none":
            return self.retriever
        if self.expansion.startswith(RERANK):  # as `r2med rerank` names its folders: <retriever>+<reranker>
            return f"{self.retriever}+{self.expansion[len(RERANK):]}"
        return f"{self.retriever}+{self.expansion}-{self.llm}"

    def figures(self) -> dict[str, float]:
        """Published nDCG@10 (x100) per task and ``Average`` (the paper's own rows first)."""
        return published_ndcg10(self.retriever, self.expansion, self.llm)

    def setting(self) -> str:
        found = {f.setting for f in published_figures()
                 if (f.retriever, f.expansion, f.llm) == (self.retriever, self.expansion, self.llm)}
        return sorted(found, key=lambda s: ("leaderboard" in s, "later" in s, s))[0] if found else ""

    def source(self) -> str:
        setting = self.setting()
        for f in published_figures():
            if (f.retriever, f.expansion, f.llm, f.setting) == (self.retriever, self.expansion, self.llm, setting):
                return f.source
        return ""


@dataclass
class TaskResults:
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


@dataclass
class System:
    name: str
    folder: Path
    tasks: dict[str, TaskResults]
    published: PublishedKey | None = None

    def measures(self) -> set[str]:
        out: set[str] = set()
        for t in self.tasks.values():
            out |= set(t.aggregate)
        return out


def _is_task_folder(p: Path) -> bool:
    return (p / METRICS_FILE).is_file()


def _system_folders(path: Path) -> list[Path]:
    """The system folders under ``path``: itself when it is a task or system folder, else every folder
    below it, at any depth, that holds task folders (e.g. ``runs/bm25``, ``runs/fused/rrf-bm25+dense``)."""
    if _is_task_folder(path):
        return [path]
    return sorted({m.parent.parent for m in path.rglob(METRICS_FILE) if _is_task_folder(m.parent)})


def load_system(folder: str | os.PathLike[str], name: str | None = None) -> System:
    folder = Path(folder)
    if _is_task_folder(folder):  # a single task folder: the system is its parent
        task_dirs = [folder]
        default_name = folder.parent.name or folder.name
    else:
        task_dirs = sorted(c for c in folder.iterdir() if c.is_dir() and _is_task_folder(c))
        default_name = folder.name
    tasks: dict[str, TaskResults] = {}
    for d in task_dirs:
        metrics = read_metrics(d)
        task = str(metrics.get("task") or d.name)
        tasks[task] = TaskResults(task, d, metrics)
    system = System(name or default_name, folder, tasks)
    system.published = match_published(system.name, [t.config for t in tasks.values()])
    return system


def load_systems(paths: Iterable[str | os.PathLike[str]], published: Mapping[str, str] | None = None) -> list[System]:
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
        found = _system_folders(path)
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
            raise R2MedError(f"--published {name}={label}: no system named {name!r}; systems: {', '.join(s.name for s in systems)}")
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


@cache
def _published_index() -> tuple[frozenset[str], frozenset[str], frozenset[tuple[str, str, str]]]:
    figs = published_figures()
    retrievers = frozenset(f.retriever for f in figs)
    methods = frozenset(f.expansion for f in figs if f.expansion != "none" and not f.expansion.startswith("rerank"))
    keys = frozenset((f.retriever, f.expansion, f.llm) for f in figs)
    return retrievers, methods, keys


def parse_label(label: str) -> PublishedKey | None:
    """``bm25`` / ``bm25+hyde-gpt4`` / ``nv+hyde:qwen_7b`` -> the published key, if figures exist for it."""
    retrievers, methods, keys = _published_index()
    base, plus, rest = label.strip().partition("+")
    if base not in retrievers:
        return None
    if not plus:
        return PublishedKey(base) if (base, "none", "none") in keys else None
    for method in sorted(methods, key=len, reverse=True):
        for sep in ("-", ":", "/"):
            if rest.startswith(method + sep):
                llm = rest[len(method) + 1:].replace("_", "-")
                if (base, method, llm) in keys:
                    return PublishedKey(base, method, llm)
    if (base, RERANK + rest, "none") in keys:  # a reranked first stage: nv+bge-reranker
        return PublishedKey(base, RERANK + rest, "none")
    return None


def _options(config: Mapping[str, Any]) -> Mapping[str, Any]:
    options = config.get("options")
    return options if isinstance(options, Mapping) else {}


def _paper_bm25(config: Mapping[str, Any]) -> bool:
    opts = {**_options(config), **config}
    if opts.get("flavour", "paper") != "paper":
        return False
    for name, paper in PAPER_BM25.items():
        value = opts.get(name, paper)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or abs(value - paper) >= 1e-12:
            return False  # another value (or not a number: a hand-edited file) is not the paper's BM25
    return True


def match_published(name: str, configs: Iterable[Mapping[str, Any]] = ()) -> PublishedKey | None:
    """The published configuration a system reproduces, from its name and stored configs."""
    configs = [c for c in configs if c]
    key = parse_label(name)
    if key is None:
        # an unlabelled folder whose config says plain paper BM25
        if configs and all(c.get("retriever") == "bm25" and c.get("queries", "plain") == "plain"
                           and _paper_bm25(c) for c in configs):
            key = PublishedKey("bm25")
        return key
    if key.retriever == "bm25" and configs and not all(_paper_bm25(c) for c in configs):
        return None
    if key.expansion.startswith(RERANK):
        if configs and not all(c.get("top_k") == PUBLISHED_RERANK_DEPTH for c in configs):
            return None
        return key
    if key.retriever != "bm25" and any(_changed_preset(c) for c in configs):
        return None
    return key


def paper_dtype(retriever: str) -> str | None:
    """The precision the paper's code ran a dense preset in (None: not a local preset)."""
    from ..retrieval.registry import RETRIEVERS

    meta = RETRIEVERS.get(retriever)
    return meta.paper_dtype if meta is not None else None


def _changed_preset(config: Mapping[str, Any]) -> bool:
    """A dense preset run with its model, pooling, length, instructions or similarity overridden is not
    the paper's (every paper retriever scores with cosine)."""
    from ..retrieval.presets import PRESET_OVERRIDES

    options = _options(config)
    if any(options.get(k) is not None for k in PRESET_OVERRIDES):
        return True
    return any(value not in (None, "cosine") for value in (config.get("similarity"), options.get("similarity")))


def nonpaper_precision(config: Mapping[str, Any]) -> str | None:
    """``"bf16 (paper: fp32)"`` when a run's recorded precision differs from the paper's, else None."""
    from ..retrieval.encoders import canonical_dtype

    found = []
    encoder = config.get("encoder")
    if isinstance(encoder, Mapping) and encoder.get("dtype") is not None:
        found.append((paper_dtype(str(config.get("retriever", ""))), encoder["dtype"]))
    reranker = config.get("reranker")
    if isinstance(reranker, Mapping) and reranker.get("dtype") is not None:
        from ..rerank.base import RERANKERS

        meta = RERANKERS.get(str(reranker.get("reranker", "")))
        found.append((meta.paper_dtype if meta is not None else None, reranker["dtype"]))
    for paper, used in found:
        try:
            if paper is not None and canonical_dtype(str(used)) != paper:
                return f"{canonical_dtype(str(used))} (paper: {paper})"
        except R2MedError:
            return f"{used} (paper: {paper})"
    return None
