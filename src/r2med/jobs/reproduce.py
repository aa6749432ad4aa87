"""``r2med reproduce``: every published retriever x expansion x task, run where it can be, graded.

In the spirit of pyserini's two-click reproductions: the expected figures and their tolerances
are data (``protocol/r2med_published_ndcg10.csv``: the paper's own ``base``, ``gar``,
``lrm_agentic`` and ``reranker_top_10`` settings, and the later ``later_embedder`` and
``later_leaderboard`` ones; tolerances by the records' tolerance classes,
:func:`r2med.results.published.tolerance_of`).  A reranker target reranks its first stage's top 10
(ReasonRank: top 100, :func:`r2med.reranking.base.published_depth`; the ``OUT/<retriever>/<task>/`` run,
shared with that retriever's own target) and scores the reranked list only (``r2med rerank
--top-k 10 --top-k-only``), as the paper's ``src/eval_reranker.py`` does.  :func:`plan` says for
each target whether it can run on this machine and, if not, every reason why (no GPU, no API key,
no LLM endpoint, missing extra, retriever not installed, its own hub code not allowed, no data or
expansions locally or on the hub, model weights not cached), with notes that do not block it
(settings r2med assumed: graded by nothing; a published first stage r2med does not have: the run is shown,
ungraded, with the reason).
:func:`run_matrix` runs the runnable targets (:func:`r2med.jobs.evaluate.run_task`) into
``OUT/<label>/<task>/`` -- finished ones are reused -- and grades each against its published figure when its
recorded spec is the published one (:func:`r2med.results.grading.grade`; else ``ungraded``, with the reason).
The tables are :mod:`r2med.report.reproduce_tables`'s.
"""

from __future__ import annotations

import importlib.util
import logging
import os
from collections.abc import Callable, Iterable
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from huggingface_hub import try_to_load_from_cache

from ..data import TaskRef, check_hub, locate
from ..data.benchmarks import benchmark, benchmark_of
from ..data.hub import cached_file, expansion_path, hub_problem, revision_for
from ..data.loaders import EXPANSION_FILE
from ..data.tasks import get_task
from ..errors import R2MedError
from ..expansion_name import ExpansionName
from ..infra.containment import system_folder
from ..infra.file_hash import file_fingerprint
from ..infra.json_types import JsonObject
from ..report.mteb import SAME, graded_by_commit, run_model, task_figure
from ..reranking.base import RERANKERS, make_reranker, published_depth, reranker_meta
from ..results.data_states import unknown_figure
from ..results.grading import (
    PublishedTable,
    RetrieverSpec,
    data_problem,
    default_family,
    family_of,
    grade,
    published_specs,
    publishing,
    table_of,
)
from ..results.published import PublishedKey, tolerance_of
from ..results.reproduction import MtebBeside, Outcome, Planned, Target, Variant
from ..retrieval.presets import get_preset
from ..retrieval.registry import all_retrievers, retriever_meta
from ..runs.record import RecordedConfig, RunData, read_record
from ..runs.run import RUN_FILE, read_trec
from ..steps import EvaluateStep, RerankStep
from .evaluate import Plan, run_task, system_name
from .rerank import TaskInput, rerank_inputs

if TYPE_CHECKING:
    from ..data import Collection
    from ..expansion.precomputed import ExpansionQueries
    from ..expansion.reasoning import ReasoningQueries
    from ..reranking.base import Reranker
    from ..results.folders import TaskResult
    from ..retrieval.registry import RetrieverMeta

log = logging.getLogger(__name__)


def _tables(tasks: Iterable[str] | None) -> dict[str, tuple[PublishedTable, list[str] | None]]:
    """Each family's published table and the tasks of ``tasks`` it grades (None: every task of the default family,
    what ``--tasks`` means when it is not given), in the registry's order."""
    groups: dict[str, list[str] | None] = {}
    if tasks is None:
        groups[default_family()] = None
    else:
        for task in tasks:
            found = groups.setdefault(family_of(task), [])
            assert found is not None
            found.append(task)
    out = {}
    for family in publishing():
        if family.name in groups:
            out[family.name] = (family.published(), groups[family.name])
    return out


def settings_of(tasks: Iterable[str] | None = None) -> tuple[str, ...]:
    """The published settings ``reproduce`` covers on ``tasks`` (None: every family's)."""
    tables = [f.published() for f in publishing()] if tasks is None else [t for t, _ in _tables(tasks).values()]
    return tuple(dict.fromkeys(s for table in tables for s in table.settings))


def targets(
    settings: Iterable[str] | None = None,
    retrievers: Iterable[str] | None = None,
    tasks: Iterable[str] | None = None,
) -> list[Target]:
    """The published per-task figures of the chosen settings (Average rows left out), asked of the published table
    of each asked task's family (:meth:`r2med.results.grading.PublishedTable.targets`); ``retrievers`` by r2med's
    names or the table's (``reasonembed-qwen3-8b`` or ``ReasonEmbed-Qwen3-8B``); ``tasks`` None: the default
    family's; ``settings`` None: every setting of the asked families."""
    asked = tuple(tasks) if tasks else None
    tables = _tables(asked)
    chosen = tuple(settings) if settings is not None else settings_of(asked)
    unknown = [s for s in chosen if s not in settings_of()]
    if unknown:
        every = ", ".join(f"{', '.join(f.published().settings)} ({f.title})" for f in publishing())
        raise R2MedError(f"unknown setting {unknown[0]!r}; choose from: {every}")
    wanted = tuple(retrievers) if retrievers else None
    out: list[Target] = []
    for table, its_tasks in tables.values():
        out += table.targets(chosen, wanted, its_tasks)
    if wanted and not out and tables:
        table, its_tasks = list(tables.values())[-1]
        raise R2MedError(table.no_targets(wanted, chosen, its_tasks))
    return out


def _data_problem(target: Target, result: TaskResult) -> str | None:
    """Why ``target``'s figure is not graded for its data: no source names the data it was made on, or -- for a
    family whose tasks are read from its hub only (BRIGHT's) -- the run's data (documents, examples, reasoning set
    by commit) is not the figure's.  A family with local copies (R2MED's) runs on the data this job chose for it:
    the pin, or the ``--data-dir`` copy the user gave as the task."""

    if benchmark(target.key.family).local_copies:
        return unknown_figure(target.task, target.key, target.measure)
    return data_problem(target.task, result.data, target.key, target.measure)


def beside(
    tasks: Iterable[str], settings: tuple[str, ...] | None
) -> tuple[list[tuple[str, str]], list[tuple[str, str, str]]]:
    """What a plan of ``settings`` (None: every setting) on ``tasks`` lists beside its targets: the families'
    records no published figure grades, as (name, why), and the published rows it has no target for, as (the
    family's title, configuration, why)."""
    unpublished: list[tuple[str, str]] = []
    others: list[tuple[str, str, str]] = []
    titles = {f.name: f.title for f in publishing()}
    for family, (table, _) in _tables(tuple(tasks)).items():
        unpublished += table.unpublished(settings)
        others += [(titles[family], name, why) for name, why in table.unreproduced(settings)]
    return unpublished, others


class Environment:
    """What this machine offers, probed once and lazily: GPU, API keys, packages, data, hub, weights."""

    def __init__(
        self,
        data_dir: str | os.PathLike[str] | None = None,
        force_cpu: bool = False,
        revision: str | None = None,
        trust_remote_code: bool = False,
        strict: bool = False,
    ):
        self.data_dir = Path(data_dir) if data_dir else None
        self.strict = strict  # the collections refuse repeated ids and judgments (``--strict``)
        self.force_cpu = force_cpu
        self.revision = revision
        self.trust_remote_code = trust_remote_code

    @staticmethod
    def endpoint() -> str | None:
        """The OpenAI-compatible endpoint LLM rerankers would use (``$OPENAI_BASE_URL``), if one is set."""
        return os.environ.get("OPENAI_BASE_URL") or None

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
        return hub_problem() is None

    @cached_property
    def retrievers(self) -> dict[str, RetrieverMeta]:
        try:
            return all_retrievers()
        except Exception as exc:  # a broken optional module must not hide the others
            log.warning("listing retrievers failed: %s", exc)
            return {}

    def task_folder(self, task: str) -> Path | None:
        """The task's folder under ``--data-dir`` (:func:`r2med.data.locate`), if there is one."""
        if self.data_dir is None:
            return None
        ref = locate(task, self.data_dir, hub=False)
        return ref.folder if ref is not None else None

    def hub_cached(self, task: str, filename: str) -> bool:
        return cached_file(get_task(task).hub_id, filename, revision_for(task, self.revision)) is not None

    def data_source(self, task: str, expansions: Iterable[ExpansionName] = ()) -> tuple[str | None, str]:
        """(where the task comes from, or None) and a reason when it cannot be had; with the expansions
        ``expansions`` its family reads with the data.  A family whose tasks may be local
        copies (:attr:`r2med.data.benchmarks.Benchmark.local_copies`) reads ``--data-dir`` first."""
        family = benchmark_of(task)
        if family is not None and family.local_copies:
            return self.local_source(task)
        return self.hub_source(task, expansions)

    def local_source(self, task: str) -> tuple[str | None, str]:
        """A task from ``--data-dir``, else its files in the hub cache, else the hub."""
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

    def hub_source(self, task: str, expansions: Iterable[ExpansionName] = ()) -> tuple[str | None, str]:
        """A task from the hub only (a local folder is no family's task, so none is graded): every file it
        needs at its revision cached, or the hub reachable."""
        family = benchmark_of(task)
        if family is None:
            return None, f"{task} is no benchmark's task"
        request = family.hub_request(task, self.revision, list(expansions))
        if all(cached_file(request.repo_id, path, request.revision) is not None for path in request.paths):
            return "hub cache", ""
        if self.hub:
            return "hub", ""
        return None, f"no data: {request.repo_id} at {request.revision[:12]} is not cached and the hub is unreachable"

    def expansion_source(self, task: str, method: str, llm: str) -> tuple[str | None, str]:
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
        if isinstance(try_to_load_from_cache(hub_id, probe), str) or self.hub:
            return ""
        return f"no weights: {hub_id} is not in the Hugging Face cache and the hub is unreachable"


def _requirements(key: PublishedKey, env: Environment) -> list[str]:
    """Reasons independent of the task (GPU, key, endpoint, packages, retriever installed, own code, weights)."""
    if key.reranker:  # the first stage's needs, then the reranker's
        return _requirements(PublishedKey(key.retriever), env) + _reranker_requirements(key.reranker_name or "", env)
    meta = env.retrievers.get(key.system)
    if meta is None:
        return [f"retriever {key.system!r} is not available in this install"]
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
    if meta.trust_remote_code and not env.trust_remote_code:
        reasons.append(f"runs code from its hub repository ({meta.hub_id}): pass --trust-remote-code to allow it")
    if not reasons and meta.hub_id:
        reasons += [r for r in [env.model_weights(meta.hub_id)] if r]
    return reasons


def _reranker_requirements(name: str, env: Environment) -> list[str]:
    """Reasons a published reranker cannot run here (packages, GPU, LLM endpoint, weights)."""
    try:
        meta = reranker_meta(name)
    except R2MedError as exc:
        return [str(exc)]
    missing = [m for m in meta.packages if not env.has_module(m)]
    if missing:
        return [f"missing extra: {meta.install} ({', '.join(missing)})"]
    if meta.needs_gpu and not env.gpu and not env.force_cpu:
        return [f"no GPU: {name} ({meta.needs_gpu} parameters) is impractical on CPU (--force-cpu to try)"]
    if meta.llm and not env.endpoint():
        return [
            f"no endpoint: serve {meta.hub_id or 'the model'} behind an OpenAI-compatible endpoint "
            "(e.g. vllm serve) and set OPENAI_BASE_URL"
        ]
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


def notes(key: PublishedKey, variant: Variant | None = None) -> list[str]:
    """What qualifies a target's grade without blocking it, from the records: a corrected configuration run
    beside the published one (not graded), settings r2med assumed (no tolerance: the delta is shown, not
    graded) and a published first stage r2med does not have."""
    out = [variant.note] if variant is not None else []
    if tolerance_of(key) is None:
        out.append("settings assumed by r2med (none published): the delta is shown, not graded")
    reranker = RERANKERS.get(key.reranker_name) if key.reranker_name else None
    first = (getattr(reranker, "provenance", None) or {}).get("published", {}).get("first_stage")
    if first:
        out.append(f"first stage: r2med's {key.system}; the published figure reranked {first}: not graded")
    return out


def plan(matrix: list[Target], env: Environment) -> list[Planned]:
    """Whether each target can run here, and why not."""
    by_key: dict[PublishedKey, list[str]] = {}
    out = []
    for target in matrix:
        if target.key not in by_key:
            by_key[target.key] = _requirements(target.key, env)
        reasons = list(by_key[target.key])
        if not reasons and target.variant is not None and target.variant.query_encoder:
            query_hub_id = get_preset(target.key.system).query_hub_id
            missing = env.model_weights(query_hub_id) if query_hub_id else ""
            if missing:
                reasons.append(missing)
        table = table_of(target.key.family)
        with_data = table is not None and table.expansions_with_data
        reasoning = [ExpansionName(target.key.expansion, target.key.llm)] if with_data and target.key.expanded else []
        source, why = env.data_source(target.task, reasoning)
        if source is None:
            reasons.append(why)
        if target.key.expanded and not with_data:
            exp, why = env.expansion_source(target.task, target.key.expansion, target.key.llm)
            if exp is None:
                reasons.append(why)
        mteb = _planned_mteb(target, env)
        out.append(Planned(target, not reasons, reasons, source or "", notes(target.key, target.variant), mteb))
    return out


def published_checkpoint(key: PublishedKey) -> str | None:
    """The hub checkpoint a published retriever row's spec loads (bge's ``BAAI/bge-large-en-v1.5``), or None: a
    reranked or expanded row (mteb publishes no such figure), or a row whose spec names no checkpoint (BM25)."""
    table = table_of(key.family)
    spec = published_specs(table).get(key) if table is not None and not key.reranker and not key.expanded else None
    if spec is None or not isinstance(spec.step, RetrieverSpec) or "model" not in spec.step.options:
        return None
    return next((v for v in spec.step.options["model"].values if isinstance(v, str)), None)


def mteb_beside(target: Target, model: str | None, run: RunData, revision: str | None = None) -> MtebBeside | None:
    """mteb's figure (:func:`r2med.report.mteb.task_figure`) of ``model`` on ``target``'s task, made on the data
    ``run`` names (its ``revision`` and ``source``), beside the target's published figure, graded
    by the rule ``report`` grades it by (the run recorded mteb's model commit, ``revision``); None: mteb has none, or
    the target is a corrected configuration run beside (no published figure of its own)."""
    if model is None or target.variant is not None:
        return None
    figure = task_figure(model, target.task, target.measure, run)
    if figure is None:
        return None
    return MtebBeside(
        figure.model,
        figure.model_revision,
        figure.dataset,
        figure.dataset_revision,
        figure.value,
        graded_by_commit(figure, revision),
        abs(figure.value - target.published) > SAME,
    )


def _planned_mteb(target: Target, env: Environment) -> MtebBeside | None:
    """mteb's figure of a target's published checkpoint on the data a reproduction reads from the hub (the task's
    pin, or ``--revision``'s commit), before anything runs."""
    family = benchmark_of(target.task)
    model = published_checkpoint(target.key)
    if family is None or model is None:
        return None
    try:
        request = family.hub_request(target.task, env.revision)
    except R2MedError:
        return None
    at = RunData(revision=request.revision, source=f"hf://datasets/{request.repo_id}@{request.revision}")
    return mteb_beside(target, model, at)


def _run_mteb(target: Target, result: TaskResult) -> MtebBeside | None:
    """mteb's figure of the checkpoint a target's run recorded (:func:`r2med.report.mteb.run_model`) on the data it
    read, graded when the run recorded mteb's model commit."""
    if target.key.reranker or target.key.expanded:
        return None
    model, revision = run_model(result.config)
    return mteb_beside(target, model, result.data, revision)


def spec_problem(target: Target, config: RecordedConfig | None, encoding: JsonObject | None = None) -> str | None:
    """Why the run a target made (its recorded ``config``; ``encoding``: what its model ran with) is not graded
    against the target's row -- the fields of its spec that differ (:func:`r2med.results.grading.grade`: ReasonRank
    over r2med's e5, whose published figure reranked the authors' own run; the precision) -- or None."""
    graded = grade(config, target.task, encoding)
    if graded.key == target.key:
        return None
    return graded.reason or f"its recorded spec is not the published {target.key.label}"


def paper_options(retriever: str) -> dict[str, object]:
    """The options a reproduction runs ``retriever`` with: the paper's values of those it records
    (BM25's k1 and b; MedCPT's ``medcpt_published``, the Article encoder for queries as the published
    code did; nothing for the others, whose defaults are the paper's), and the opt-in to its hub
    repository's own code when it needs one (planned only with ``--trust-remote-code``)."""
    meta = retriever_meta(retriever)
    options: dict[str, object] = {name: meta.paper[name] for name in meta.defaults if name in meta.paper}
    return {**options, "trust_remote_code": True} if meta.trust_remote_code else options


def _task_ref(task: str, env: Environment) -> TaskRef:
    family = benchmark_of(task)
    folder = env.task_folder(task) if family is not None and family.local_copies else None
    return (
        TaskRef.in_folder(task, folder, strict=env.strict)
        if folder is not None
        else TaskRef.on_hub(task, env.revision, strict=env.strict)
    )


def _query_builder(target: Target, env: Environment) -> ExpansionQueries | ReasoningQueries | None:
    """What builds a retriever target's queries: its published table's (BRIGHT's reasoning set, R2MED's expansion
    files), or None."""
    if not target.key.expanded or target.key.reranker:
        return None
    table = table_of(target.key.family)
    folders = [env.data_dir] if env.data_dir else []
    return table.query_builder(target.key, folders, env.revision) if table is not None else None


def check_hub_files(planned: list[Planned], env: Environment) -> tuple[dict[str, TaskRef], dict[int, str]]:
    """Every hub file the runnable targets need, resolved at its revision before anything is downloaded (issue
    29's rule, as ``evaluate`` keeps it): the hub tasks' refs at the commits their revisions resolved to, and,
    by the target's place in ``planned``, the one line (:func:`r2med.data.hub.refusal`: where the files are and
    the ``--revision`` that reads them) of a target whose files are missing -- it is an ``error``, the others run."""
    refs: dict[str, TaskRef] = {}
    problems: dict[int, str] = {}
    seen: dict[tuple[str, tuple[str, str] | None], str | None] = {}
    for i, p in enumerate(planned):
        if not p.runnable:
            continue
        ref = _task_ref(p.target.task, env)
        if ref.kind != "hub":
            continue
        builder = _query_builder(p.target, env)
        wanted = builder.hub_expansion(p.target.task) if builder is not None else None
        if (p.target.task, wanted) not in seen:
            try:
                [checked] = check_hub([ref], [builder] if builder is not None else [])
            except R2MedError as exc:
                seen[p.target.task, wanted] = str(exc)
            else:
                refs.setdefault(p.target.task, checked)
                seen[p.target.task, wanted] = None
        problem = seen[p.target.task, wanted]
        if problem is not None:
            problems[i] = problem
    return refs, problems


def _rerank_target(
    target: Target, coll: Collection, out: Path, rerankers: dict[str, Reranker], overwrite: bool
) -> TaskResult:
    """First stage (``OUT/<retriever>/<task>``, reused when finished), then its top 10 (the published depth)
    reranked, scored alone."""

    first = target.key.system
    name = target.key.reranker_name or ""
    depth = published_depth(name)
    run_task(
        coll,
        EvaluateStep.of(first, **paper_options(first), top_k=max(100, depth), overwrite=overwrite),
        system_folder(out, first),
    )
    folder = out / first / coll.name
    item = TaskInput(
        coll.name, folder, read_trec(folder / RUN_FILE), read_record(folder), coll, file_fingerprint(folder / RUN_FILE)
    )
    if name not in rerankers:  # one model per reranker for the whole matrix (loaded lazily, on first use)
        rerankers[name] = make_reranker(name)
    step = RerankStep.of(out / first, name, top_k=depth, keep_tail=False, overwrite=overwrite)
    [result] = rerank_inputs([item], rerankers[name], step, target.label, system_folder(out, target.label))
    return result


def run_matrix(
    planned: list[Planned],
    out: str | os.PathLike[str],
    env: Environment,
    tolerance: float | None = None,
    overwrite: bool = False,
    progress: Callable[[Planned], None] | None = None,
) -> list[Outcome]:
    """Run the runnable targets (reusing finished ones) and grade them; others are ``skip`` with their reason."""

    out = Path(out)
    for p in planned:  # every system folder the matrix writes, checked before the first cell (a link: one line)
        if p.runnable:
            system_folder(out, p.target.label)
            if p.target.key.reranker:
                system_folder(out, p.target.key.system)
    refs, missing = check_hub_files(planned, env)  # every hub file found before the first download
    outcomes: list[Outcome] = []
    collections: dict[str, Collection] = {}
    rerankers: dict[str, Reranker] = {}
    for i, p in enumerate(planned):
        target = p.target
        tol = None if not target.graded else tolerance if tolerance is not None else tolerance_of(target.key)
        if not p.runnable:
            outcomes.append(Outcome(target, "skip", tolerance=tol, detail=p.reason))
            continue
        if i in missing:
            outcomes.append(Outcome(target, "error", tolerance=tol, detail=missing[i]))
            continue
        if progress:
            progress(p)
        try:
            if target.task not in collections:
                collections.clear()  # one task in memory at a time
                collections[target.task] = refs.get(target.task, _task_ref(target.task, env)).load()
            coll = collections[target.task]
            if target.key.reranker:
                result = _rerank_target(target, coll, out, rerankers, overwrite)
            else:
                builder = _query_builder(target, env)
                table = table_of(target.key.family)
                options = {**paper_options(target.key.system), **(target.variant.options if target.variant else {})}
                depth = table.run_depth if table is not None else None  # None: its protocol's (BRIGHT's 1000)
                step = EvaluateStep.of(target.key.system, **options, top_k=depth, overwrite=overwrite)
                label = target.label if builder or target.variant else system_name(step)
                result = run_task(coll, Plan(step, label, builder), system_folder(out, target.label))
            value = 100 * result.metrics.aggregate[target.measure.trec]  # its task's headline: the figure's measure
            status = "ungraded" if tol is None else "pass" if abs(value - target.published) <= tol + 1e-9 else "fail"
            detail = "" if target.graded else f"beside the published {target.key.label}: not graded"
            problem = spec_problem(target, result.config, result.encoding) if target.graded else None
            if problem is None and target.graded:  # nor graded on data other than the figure's (results/data_states)
                problem = _data_problem(target, result)
            if problem is not None:  # what it ran is not the published spec or data: shown, not graded, with why
                status, tol, detail = "ungraded", None, problem
            mteb = _run_mteb(target, result)
            outcomes.append(Outcome(target, status, value, tol, reused=result.reused, detail=detail, mteb=mteb))
        except R2MedError as exc:
            outcomes.append(Outcome(target, "error", tolerance=tol, detail=str(exc)))
        except Exception as exc:  # one broken target must not stop the matrix
            log.exception("%s on %s failed", target.label, target.task)
            outcomes.append(Outcome(target, "error", tolerance=tol, detail=f"{type(exc).__name__}: {exc}"))
    return outcomes
