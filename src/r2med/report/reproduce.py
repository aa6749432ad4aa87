"""The reproduction matrix: every published retriever x expansion x task, run where it can be, checked.

In the spirit of pyserini's two-click reproductions: the expected figures and
their tolerances are data (``protocol/r2med_published_ndcg10.csv``, the paper's
own ``base``, ``gar``, ``lrm_agentic`` and ``reranker_top_10`` settings; tolerances from
:data:`r2med.report.leaderboard.TOLERANCES`).  A reranker cell reranks its first stage's
top 10 (the ``OUT/<retriever>/<task>/`` run, shared with that retriever's own cell) and
scores the reranked list only (``r2med rerank --top-k 10 --top-k-only``), as the paper's
``src/eval_reranker.py`` does.  :func:`plan` says for each cell
whether it can run on this machine and, if not, every reason why (no GPU, no API
key, missing extra, retriever not installed, no data or expansions locally or on
the hub, model weights not cached).  :func:`run_matrix` runs the runnable cells
through :func:`r2med.pipeline.run_collection` into ``OUT/<label>/<task>/`` --
finished cells are reused -- and grades each against its published figure.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from ..errors import R2MedError
from ..metrics import HEADLINE
from ..protocol import published_figures
from ..tasks import TASK_NAMES, get_task
from .leaderboard import default_tolerance
from .systems import RERANK, PublishedKey

log = logging.getLogger(__name__)

#: The paper's own settings: retriever x expansion configurations, and rerankers over a first stage.
SETTINGS = ("base", "gar", "lrm_agentic", "reranker_top_10")
#: Rerank depth of the paper's reranker rows; only the reranked list is scored (``src/eval_reranker.py``).
RERANK_DEPTH = 10


@dataclass(frozen=True)
class Cell:
    """One published figure to reproduce."""

    key: PublishedKey
    setting: str
    task: str
    published: float
    source: str

    @property
    def label(self) -> str:
        return self.key.label


@dataclass
class Planned:
    cell: Cell
    runnable: bool
    reasons: list[str] = field(default_factory=list)
    data: str = ""  # where the task data comes from

    @property
    def reason(self) -> str:
        return "; ".join(self.reasons) if self.reasons else f"ready ({self.data})"


@dataclass
class Outcome:
    cell: Cell
    status: str  # pass | fail | skip | error
    value: float | None = None
    tolerance: float | None = None
    reused: bool = False
    detail: str = ""

    @property
    def delta(self) -> float | None:
        return None if self.value is None else self.value - self.cell.published

    def to_dict(self) -> dict[str, Any]:
        return {"config": self.cell.label, "setting": self.cell.setting, "task": self.cell.task,
                "published": self.cell.published, "value": self.value, "delta": self.delta,
                "tolerance": self.tolerance, "status": self.status, "reused": self.reused, "detail": self.detail,
                "source": self.cell.source}


def cells(settings: Iterable[str] = SETTINGS, retrievers: Iterable[str] | None = None,
          tasks: Iterable[str] | None = None) -> list[Cell]:
    """The published per-task figures of the chosen settings (Average rows left out)."""
    settings = tuple(settings)
    unknown = [s for s in settings if s not in {f.setting for f in published_figures()}]
    if unknown:
        raise R2MedError(f"unknown setting {unknown[0]!r}; choose from: {', '.join(SETTINGS)}")
    wanted_r = set(retrievers) if retrievers else None
    wanted_t = {get_task(t).name for t in tasks} if tasks else None
    out = []
    for f in published_figures():
        if f.setting not in settings or f.task not in TASK_NAMES:
            continue
        if wanted_r is not None and f.retriever not in wanted_r:
            continue
        if wanted_t is not None and f.task not in wanted_t:
            continue
        out.append(Cell(PublishedKey(f.retriever, f.expansion, f.llm), f.setting, f.task, f.ndcg10, f.source))
    if wanted_r and not out:
        known = sorted({f.retriever for f in published_figures() if f.setting in settings})
        raise R2MedError(f"no published figures for {', '.join(sorted(wanted_r))} in {', '.join(settings)}; "
                         f"retrievers: {', '.join(known)}")
    return out


class Environment:
    """What this machine offers, probed once and lazily: GPU, API keys, packages, data, hub, weights."""

    def __init__(self, data_dir: str | os.PathLike[str] | None = None, force_cpu: bool = False,
                 revision: str | None = None):
        self.data_dir = Path(data_dir) if data_dir else None
        self.force_cpu = force_cpu
        self.revision = revision

    @staticmethod
    def has_module(name: str) -> bool:
        try:
            return importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):
            return False

    @cached_property
    def gpu(self) -> str | None:
        if not self.has_module("torch"):
            return None
        import torch

        return torch.cuda.get_device_name(0) if torch.cuda.is_available() else None

    @cached_property
    def hub(self) -> bool:
        """Whether huggingface_hub can reach the hub from here (its offline mode, endpoint and proxies decide)."""
        from ..data.hub import hub_problem

        return hub_problem() is None

    @cached_property
    def retrievers(self) -> dict[str, Any]:
        from ..retrieval.registry import all_retrievers

        try:
            return all_retrievers()
        except Exception as exc:  # a broken optional module must not hide the others
            log.warning("listing retrievers failed: %s", exc)
            return {}

    def task_folder(self, task: str) -> Path | None:
        if self.data_dir is None:
            return None
        for cand in (self.data_dir / task, self.data_dir):
            if (cand / "corpus.jsonl").exists() and (cand.name == task or cand == self.data_dir / task):
                return cand
        return None

    def hub_cached(self, task: str, filename: str) -> bool:
        from ..data.hub import cached_file, revision_for

        return cached_file(get_task(task).hub_id, filename, revision_for(task, self.revision)) is not None

    def data_source(self, task: str) -> tuple[str | None, str]:
        """(where the task comes from, or None) and a reason when it cannot be had."""
        folder = self.task_folder(task)
        if folder is not None:
            return str(folder), ""
        if all(self.hub_cached(task, f) for f in ("corpus.jsonl", "query.jsonl", "qrels.jsonl")):
            return "hub cache", ""
        if self.hub:
            return "hub", ""
        where = f"not in {self.data_dir}, " if self.data_dir else ""
        hint = "" if self.data_dir else " (pass --data-dir)"
        return None, f"no data: {where}not cached and the hub is unreachable{hint}"

    def expansion_source(self, task: str, method: str, llm: str) -> tuple[str | None, str]:
        from ..data.hub import expansion_path
        from ..data.loaders import EXPANSION_FILE

        folder = self.task_folder(task)
        if folder is not None and (folder / method / llm / EXPANSION_FILE).exists():
            return str(folder / method / llm), ""
        try:
            path = expansion_path(method, llm)
        except R2MedError:
            return None, f"no expansions: the hub has no {method} split for {llm}"
        if self.hub_cached(task, path):
            return "hub cache", ""
        if self.hub:
            return "hub", ""
        return None, f"no expansions: {method}/{llm} not local, not cached and the hub is unreachable"


    def model_weights(self, hub_id: str, probe: str = "config.json") -> str:
        """A reason when a hub model is neither in the Hugging Face cache nor downloadable, else ''."""
        from huggingface_hub import try_to_load_from_cache

        if isinstance(try_to_load_from_cache(hub_id, probe), str) or self.hub:
            return ""
        return f"no weights: {hub_id} is not in the Hugging Face cache and the hub is unreachable"


def _requirements(key: PublishedKey, env: Environment) -> list[str]:
    """Reasons independent of the task (GPU, key, packages, retriever installed, weights)."""
    if key.expansion.startswith(RERANK):  # the first stage's needs, then the reranker's
        return _requirements(PublishedKey(key.retriever), env) + _reranker_requirements(key.expansion[len(RERANK):], env)
    meta = env.retrievers.get(key.retriever)
    if meta is None:
        return [f"retriever {key.retriever!r} is not available in this install"]
    reasons = []
    if meta.extra is not None:
        modules, install = meta.extra
        missing = [m for m in modules if not env.has_module(m)]
        if missing:
            reasons.append(f"missing extra: {install} ({', '.join(missing)})")
    if meta.api_key_env and not os.environ.get(meta.api_key_env):
        reasons.append(f"no API key: set {meta.api_key_env}")
    if meta.needs_gpu and not env.gpu and not env.force_cpu:
        reasons.append(f"no GPU: {meta.name} ({meta.needs_gpu} parameters) is impractical on CPU (--force-cpu to try)")
    if not reasons and meta.hub_id:
        reasons += [r for r in [env.model_weights(meta.hub_id)] if r]
    return reasons


def _reranker_requirements(name: str, env: Environment) -> list[str]:
    """Reasons a published reranker cannot run here (packages, GPU, weights)."""
    from ..rerank.base import make_reranker, reranker_meta

    try:
        meta = reranker_meta(name)
    except R2MedError as exc:
        return [str(exc)]
    missing = [m for m in meta.packages if not env.has_module(m)]
    if missing:
        return [f"missing extra: {meta.install} ({', '.join(missing)})"]
    if meta.needs_gpu and not env.gpu and not env.force_cpu:
        return [f"no GPU: {name} ({meta.needs_gpu} parameters) is impractical on CPU (--force-cpu to try)"]
    try:
        settings = make_reranker(name).config()
    except R2MedError as exc:
        return [str(exc)]
    for key, probe in meta.weights:
        model = settings.get(key)
        if model and not Path(str(model)).expanduser().exists():
            why = env.model_weights(str(model), probe)
            if why:
                return [why]
    return []


def plan(matrix: list[Cell], env: Environment) -> list[Planned]:
    """Whether each cell can run here, and why not."""
    by_key: dict[PublishedKey, list[str]] = {}
    out = []
    for cell in matrix:
        if cell.key not in by_key:
            by_key[cell.key] = _requirements(cell.key, env)
        reasons = list(by_key[cell.key])
        source, why = env.data_source(cell.task)
        if source is None:
            reasons.append(why)
        if cell.key.expansion != "none" and not cell.key.expansion.startswith(RERANK):
            exp, why = env.expansion_source(cell.task, cell.key.expansion, cell.key.llm)
            if exp is None:
                reasons.append(why)
        out.append(Planned(cell, not reasons, reasons, source or ""))
    return out


def _load(task: str, env: Environment):
    from ..data import load_task
    from ..data.loaders import load_folder

    folder = env.task_folder(task)
    if folder is not None:
        return load_folder(folder, name=task)
    return load_task(task, revision=env.revision)


def _rerank_cell(cell: Cell, coll, out: Path, rerankers: dict[str, Any], overwrite: bool):
    """First stage (``OUT/<retriever>/<task>``, reused when finished), then its top 10 reranked, scored alone."""
    from ..pipeline import run_collection
    from ..rerank import make_reranker
    from ..rerank.folders import TaskInput, _file_fingerprint, rerank_inputs
    from ..run import RUN_FILE, read_metrics, read_trec

    run_collection(coll, cell.key.retriever, {}, k=100, out=out / cell.key.retriever, overwrite=overwrite)
    folder = out / cell.key.retriever / coll.name
    item = TaskInput(coll.name, folder, read_trec(folder / RUN_FILE), read_metrics(folder), coll,
                     _file_fingerprint(folder / RUN_FILE))
    name = cell.key.expansion[len(RERANK):]
    if name not in rerankers:  # one model per reranker for the whole matrix (loaded lazily, on first use)
        rerankers[name] = make_reranker(name)
    [result] = rerank_inputs([item], rerankers[name], cell.label, out / cell.label, top_k=RERANK_DEPTH,
                             keep_tail=False, overwrite=overwrite)
    return result


def run_matrix(planned: list[Planned], out: str | os.PathLike[str], env: Environment,
               tolerance: float | None = None, overwrite: bool = False,
               progress: Callable[[Planned], None] | None = None) -> list[Outcome]:
    """Run the runnable cells (reusing finished ones) and grade them; others are ``skip`` with their reason."""
    from ..pipeline import run_collection

    out = Path(out)
    outcomes: list[Outcome] = []
    collections: dict[str, Any] = {}
    rerankers: dict[str, Any] = {}
    for p in planned:
        cell = p.cell
        tol = tolerance if tolerance is not None else default_tolerance(cell.key)
        if not p.runnable:
            outcomes.append(Outcome(cell, "skip", tolerance=tol, detail=p.reason))
            continue
        if progress:
            progress(p)
        try:
            if cell.task not in collections:
                collections.clear()  # one task in memory at a time
                collections[cell.task] = _load(cell.task, env)
            coll = collections[cell.task]
            builder = None
            if cell.key.expansion != "none" and not cell.key.expansion.startswith(RERANK):
                from ..expansion.precomputed import ExpansionQueries

                folders = [env.data_dir] if env.data_dir else []
                builder = ExpansionQueries(cell.key.expansion, cell.key.llm, folders=folders, revision=env.revision)
            options = {"k1": 0.9, "b": 0.4} if cell.key.retriever == "bm25" else {}
            label = cell.label
            if cell.key.expansion.startswith(RERANK):
                result = _rerank_cell(cell, coll, out, rerankers, overwrite)
            else:
                result = run_collection(coll, cell.key.retriever, options, k=100, out=out / label,
                                        label=label if builder else None, query_builder=builder,
                                        overwrite=overwrite)
            value = 100 * result.metrics.aggregate[HEADLINE]
            status = "pass" if abs(value - cell.published) <= tol + 1e-9 else "fail"
            outcomes.append(Outcome(cell, status, value, tol, reused=result.reused))
        except R2MedError as exc:
            outcomes.append(Outcome(cell, "error", tolerance=tol, detail=str(exc)))
        except Exception as exc:  # one broken cell must not stop the matrix
            log.exception("%s on %s failed", cell.label, cell.task)
            outcomes.append(Outcome(cell, "error", tolerance=tol, detail=f"{type(exc).__name__}: {exc}"))
    return outcomes


# -- presentation ---------------------------------------------------------------------------------

def plan_rows(planned: list[Planned]) -> list[dict[str, Any]]:
    """One row per configuration: tasks runnable, and the reasons for the others (grouped)."""
    groups: dict[tuple[str, str], list[Planned]] = {}
    for p in planned:
        groups.setdefault((p.cell.setting, p.cell.label), []).append(p)
    rows = []
    for (setting, label), items in groups.items():
        ready = [p.cell.task for p in items if p.runnable]
        reasons: dict[str, list[str]] = {}
        for p in items:
            for r in p.reasons:
                reasons.setdefault(r, []).append(p.cell.task)
        text = []
        for r, tasks in reasons.items():
            text.append(r if len(tasks) == len(items) else f"{r} [{', '.join(tasks)}]")
        rows.append({"setting": setting, "config": label, "tasks": len(items), "runnable": len(ready),
                     "can_run": len(ready) == len(items), "reason": "; ".join(dict.fromkeys(text)) or
                     f"ready ({', '.join(sorted({p.data for p in items}))})"})
    return rows


def plan_table(planned: list[Planned]):
    from rich.markup import escape
    from rich.table import Table

    rows = plan_rows(planned)
    ok = sum(r["can_run"] for r in rows)
    table = Table(title=f"R2MED reproduction matrix (dry run): {ok} of {len(rows)} configurations can run here",
                  show_lines=False)
    for col in ("setting", "configuration", "tasks", "can run", "why / data"):
        table.add_column(col, justify="right" if col in ("tasks",) else "left", overflow="fold")
    for r in rows:
        mark = "[green]yes[/]" if r["can_run"] else "[yellow]partly[/]" if r["runnable"] else "[red]no[/]"
        table.add_row(r["setting"], escape(r["config"]), f"{r['runnable']}/{r['tasks']}", mark, escape(r["reason"]))
    return table


def outcome_table(outcomes: list[Outcome]):
    from rich.markup import escape
    from rich.table import Table

    counts = {s: sum(o.status == s for o in outcomes) for s in ("pass", "fail", "error", "skip")}
    table = Table(title="R2MED reproduction: nDCG@10 x100 against the published figures "
                        f"({counts['pass']} pass, {counts['fail']} fail, {counts['error']} error, "
                        f"{counts['skip']} skipped)")
    for col in ("configuration", "task", "published", "ours", "delta", "tol", "result"):
        table.add_column(col, justify="left" if col in ("configuration", "task", "result") else "right",
                         overflow="fold")
    shown_skips: set[tuple[str, str]] = set()
    for o in outcomes:
        if o.status == "skip":
            key = (o.cell.label, o.detail)
            if key in shown_skips:
                continue
            shown_skips.add(key)
            n = sum(1 for x in outcomes if x.status == "skip" and (x.cell.label, x.detail) == key)
            table.add_row(escape(o.cell.label), f"{n} task(s)", "", "", "", "", f"[dim]skip: {escape(o.detail)}[/]")
            continue
        colour = {"pass": "green", "fail": "red", "error": "red"}[o.status]
        table.add_row(escape(o.cell.label), o.cell.task, f"{o.cell.published:.2f}",
                      "-" if o.value is None else f"{o.value:.2f}",
                      "-" if o.delta is None else f"{o.delta:+.2f}", f"±{o.tolerance:g}",
                      f"[{colour}]{o.status.upper()}[/]" + (" (reused)" if o.reused else "")
                      + (f" {escape(o.detail)}" if o.detail else ""))
    return table


def to_json(planned: list[Planned] | None = None, outcomes: list[Outcome] | None = None) -> str:
    if outcomes is not None:
        return json.dumps([o.to_dict() for o in outcomes], indent=1) + "\n"
    return json.dumps([{**asdict(p.cell), "config": p.cell.label, "runnable": p.runnable, "reasons": p.reasons,
                        "data": p.data} for p in planned or []], indent=1, default=str) + "\n"
