"""``r2med evaluate --ray``: a (retriever x task) matrix, each cell one Ray task with a resource request.

Each :class:`MatrixJob` is one step (:class:`~r2med.steps.EvaluateStep`, shipped as its values and rebuilt
on the worker through the one parse) on one task: one :func:`r2med.jobs.evaluate.run_task` call -- load the task, index,
search, score, write ``OUT/<name>/<task>/`` atomically -- run as a Ray task that asks for one GPU
(a local neural model, when the cluster has GPUs: the registry's ``local_model``) or one CPU.
Finished cells are reused by ``run_task`` itself, so an interrupted matrix resumes where it stopped.
The run folders must be on storage every node can write (a shared filesystem).
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from ..data import Collection, TaskRef
from ..infra.containment import system_folder
from ..results.folders import TaskResult
from ..retrieval.registry import RETRIEVERS
from ..scale.cluster import cluster_gpus, connect, driver_env
from ..steps import EvaluateStep, evaluate_step
from ..typed.parse import Origin
from .evaluate import Plan, plan, run_task

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class MatrixJob:
    """One (step, task) cell of a matrix.  The step travels as its values (``EvaluateStep.model_dump()``) and
    the worker rebuilds it through the one parse (:func:`r2med.steps.evaluate_step`), as every edge does."""

    values: Mapping[str, object]
    task: str
    load: Callable[[], Collection]

    @classmethod
    def of(cls, step: EvaluateStep | str, task: str, load: Callable[[], Collection]) -> MatrixJob:
        """The cell of ``step`` (or a retriever's name: its default step) on ``task``."""
        step = EvaluateStep.of(step) if isinstance(step, str) else step
        return cls(step.model_dump(), task, load)

    def step(self) -> EvaluateStep:
        return evaluate_step(self.values, Origin.python(f"the Ray cell {self.task!r}"))

    @property
    def retriever(self) -> str:
        return str(self.values["retriever"])

    @property
    def name(self) -> str:
        return plan(self.step()).name


def default_resources(retriever: str, gpus_available: float, lexical_cpus: float = 1.0) -> dict[str, float]:
    """What one cell asks Ray for: a GPU for a local neural model on a GPU cluster, else CPUs."""
    meta = RETRIEVERS.get(retriever)
    if meta is None or not meta.local_model or gpus_available <= 0:
        return {"num_cpus": lexical_cpus}
    return {"num_cpus": 1.0, "num_gpus": 1.0}


def run_cell(job: MatrixJob, env: Mapping[str, str] | None = None) -> TaskResult:
    """Evaluate one cell (the body of a Ray task; also callable in-process) under the driver's ``env``: the step
    rebuilt from its values through the one parse, then :func:`r2med.jobs.evaluate.run_task` into its system
    folder."""
    with _environment(env or {}):
        made = plan(job.step())
        collection = job.load()
        root = made.step.output.out
        return run_task(collection, made, system_folder(root, made.name) if root is not None else None)


@contextlib.contextmanager
def _environment(env: Mapping[str, str]) -> Iterator[None]:
    """Set ``env`` for the duration of one task and restore the worker's own values after it.

    (Passing it as an argument rather than a Ray ``runtime_env`` lets Ray reuse its idle workers.)
    """
    saved = {key: os.environ.get(key) for key in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def evaluate_matrix(
    jobs: Sequence[MatrixJob],
    address: str | None = "local",
    resources: Callable[[str, float], Mapping[str, float]] | None = None,
    on_done: Callable[[MatrixJob, TaskResult], None] | None = None,
) -> list[TaskResult]:
    """Run every cell as a Ray task and return the results in ``jobs`` order.

    ``resources(retriever, cluster_gpus) -> {"num_cpus": .., "num_gpus": ..}`` overrides
    :func:`default_resources`; ``on_done`` is called as each cell finishes (progress bars).
    """
    ray = connect(address)
    gpus = cluster_gpus()
    pick = resources or default_resources
    remote = ray.remote(run_cell)
    env = driver_env()["env_vars"]
    pending = {}
    for i, job in enumerate(jobs):
        ask = dict(pick(job.retriever, gpus))
        ref = remote.options(name=f"r2med:{job.retriever}:{job.task}", max_retries=1, **ask).remote(job, env)
        pending[ref] = i
    finished: dict[int, TaskResult] = {}
    while pending:
        done, _ = ray.wait(list(pending), num_returns=1)
        for ref in done:
            i = pending.pop(ref)
            result: TaskResult = ray.get(ref)
            finished[i] = result
            log.info(
                "%s x %s: nDCG@10 = %.4f%s",
                jobs[i].retriever,
                result.task,
                result.headline,
                " (reused)" if result.reused else "",
            )
            if on_done:
                on_done(jobs[i], result)
    return [finished[i] for i in range(len(jobs))]  # every cell was submitted, so every index is there


def evaluate_plans(
    plans: Iterable[Plan],
    tasks: Sequence[TaskRef],
    address: str | None = None,
    on_done: Callable[[MatrixJob, TaskResult], None] | None = None,
) -> dict[str, list[TaskResult]]:
    """Every (plan, task) cell on Ray; returns {result name: [results in task order]}.  Every system folder is
    checked (:func:`~r2med.infra.containment.system_folder`: a link is one line) before Ray starts."""
    plans = list(plans)
    for p in plans:
        if p.step.output.out is not None:
            system_folder(p.step.output.out, p.name)
    cells = [(p.name, MatrixJob.of(p.step, ref.name, ref.load)) for p in plans for ref in tasks]
    results = evaluate_matrix([job for _, job in cells], address=address or "local", on_done=on_done)
    grouped: dict[str, list[TaskResult]] = {}
    for (name, _), result in zip(cells, results):
        grouped.setdefault(name, []).append(result)
    return grouped
