"""The ``Run`` type (query id -> doc id -> score), TREC run files and result folders.

A run folder holds one sub-folder per task with ``run.trec`` (6-column TREC run),
``metrics.json`` (aggregate + per-query measures, config, timing, versions) and
``r2med_results.json`` (the R2MED repository's results format).  Every file is
written atomically, and a task folder is only created once all its files exist.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import DataError, R2MedError
from ..infra.containment import ensure_within, name_problem, refuse_links
from ..infra.home import atomic_dir, atomic_path
from ..results.record import METRICS_FILE, metrics_json, parse_record, read_record

Run = dict[str, dict[str, float]]
"""Ranked results: query id -> doc id -> score (pytrec_eval's form); higher scores rank first."""

RUN_FILE = "run.trec"
R2MED_RESULTS_FILE = "r2med_results.json"


def ranked(docs: Mapping[str, float], position: Mapping[str, int] | None = None) -> list[tuple[str, float]]:
    """Docs best first: r2med's one rule for ordering a query's docs.

    Equal scores are in corpus order when ``position`` (doc id -> corpus index) is given: how the
    paper's code takes a retriever's candidates (a stable sort over the corpus; rerank candidates,
    LameR passages, agentic search results).  Without it, as trec_eval orders them (doc id
    descending): the order of a run file's rank column and of rank-based fusion.
    """
    if position is None:
        return sorted(docs.items(), key=lambda item: (item[1], item[0]), reverse=True)
    last = len(position)
    return sorted(docs.items(), key=lambda item: (-item[1], position.get(item[0], last), item[0]))


def truncate(run: Mapping[str, Mapping[str, float]], k: int) -> Run:
    """Keep each query's top ``k`` docs (trec_eval order)."""
    return {qid: dict(docs) if len(docs) <= k else dict(ranked(docs)[:k]) for qid, docs in run.items()}


SCORE_FORMAT = ".9g"  # exact for float32 scores; written runs re-score to the stored metrics


def as_written(run: Mapping[str, Mapping[str, float]]) -> Run:
    """The run with scores as a TREC file written by r2med stores them (so metrics match re-scoring)."""
    return {qid: {did: float(format(s, SCORE_FORMAT)) for did, s in docs.items()} for qid, docs in run.items()}


def format_trec(run: Mapping[str, Mapping[str, float]], tag: str = "r2med") -> str:
    lines = []
    for qid, docs in run.items():
        for rank, (did, score) in enumerate(ranked(docs), start=1):
            lines.append(f"{qid} Q0 {did} {rank} {score:{SCORE_FORMAT}} {tag}\n")
    return "".join(lines)


def write_trec(run: Mapping[str, Mapping[str, float]], path: str | os.PathLike[str], tag: str = "r2med") -> None:
    """Write a 6-column TREC run file atomically (``qid Q0 docid rank score tag``)."""
    problem = name_problem(tag, run_name=True)
    if problem is not None:
        raise R2MedError(f"run tag {problem}")
    for qid, docs in run.items():
        for did in docs:
            if any(c.isspace() for c in did) or any(c.isspace() for c in qid):
                raise ValueError(f"ids with whitespace cannot be written to a TREC run: {qid!r} / {did!r}")
    with atomic_path(path) as tmp:
        tmp.write_text(format_trec(run, tag), encoding="utf-8")


_SCORE = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z")
"""A score as trec_eval's C reader takes it: decimal digits, optional fraction and exponent (no ``1_000``, ``inf``)."""


def read_trec(path: str | os.PathLike[str]) -> Run:
    """Read a TREC run file (6 columns; 4-column ``qid docid rank score`` is accepted too)."""
    from ..data.files import iter_lines

    path = Path(path)
    run: Run = {}
    seen: dict[tuple[str, str], int] = {}
    for number, line in iter_lines(path):
        fields = line.split()
        if len(fields) == 6:
            qid, _, did, _, score, _ = fields
        elif len(fields) == 4:
            qid, did, _, score = fields
        else:
            raise DataError(path, number, f"expected 6 fields 'qid Q0 docid rank score tag', got {len(fields)}")
        value = float(score) if _SCORE.match(score) else None
        if value is None and score.lstrip("+-").lower() not in ("nan", "inf", "infinity"):
            raise DataError(path, number, f"score {score[:40]!r} is not a number")
        if value is None or not math.isfinite(value):
            raise DataError(path, number, f"score {score[:40]!r} is not a finite number")
        if (qid, did) in seen:
            raise DataError(
                path, number, f"doc {did[:60]!r} listed twice for query {qid[:60]!r} (first on line {seen[qid, did]})"
            )
        seen[qid, did] = number
        run.setdefault(qid, {})[did] = value
    if not run:
        raise DataError(path, None, "empty run file")
    return run


def r2med_results(task: str, model: str, aggregate: Mapping[str, float]) -> dict[str, Any]:
    """The R2MED repository's results JSON (``results/<setting>/<model>/<Task>.json``)."""
    from ..evaluation.measures import from_trec

    test: dict[str, float] = {}
    for name, value in aggregate.items():
        try:
            test[from_trec(name).r2med_results] = value
        except R2MedError:
            continue  # not a pytrec_eval measure name: the R2MED results file has no key for it
    return {"dataset_name": task, "model_name": model, "test": test}


def write_task_results(
    folder: str | os.PathLike[str],
    run: Mapping[str, Mapping[str, float]],
    metrics: Mapping[str, Any],
    tag: str = "r2med",
    root: str | os.PathLike[str] | None = None,
) -> Path:
    """Write ``run.trec``, ``metrics.json`` and ``r2med_results.json`` into ``folder`` as one atomic step.

    ``folder`` is ``ROOT/<system>/<task>`` (build it with :meth:`r2med.infra.containment.SystemFolder.task`);
    ``root``: the folder the user named (``--out``), which ``folder`` must lie under (default: ``folder``'s parent).
    The system folder (``folder``'s parent) is refused when it is a link, whatever ``root`` is: the task folder
    would be written, and the one it replaces deleted, in the link's target.  ``folder`` itself may be a link: the
    atomic rename replaces the link, never its target.
    """
    folder = Path(folder)
    ensure_within(folder.parent if root is None else root, folder)
    system = Path(os.path.abspath(folder)).parent
    refuse_links(system.parent, system, include_last=True)
    with atomic_dir(folder) as tmp:
        write_trec(run, tmp / RUN_FILE, tag=tag)
        (tmp / METRICS_FILE).write_text(metrics_json(metrics, folder / METRICS_FILE), encoding="utf-8")
        export = r2med_results(
            metrics.get("task", folder.name), metrics.get("retriever", tag), metrics.get("aggregate", {})
        )
        (tmp / R2MED_RESULTS_FILE).write_text(json.dumps(export, indent=1) + "\n", encoding="utf-8")
    return folder


def read_metrics(folder: str | os.PathLike[str]) -> dict[str, Any]:
    """A task folder's ``metrics.json`` as a plain object, read and checked by the one reader
    (:func:`r2med.results.record.read_record`); any fault is a DataError naming it.  A file from before the
    schema had a number comes back upgraded (``schema_version`` 3)."""
    return read_record(folder).to_json()


def check_metrics(data: Any, path: str | os.PathLike[str]) -> None:
    """``data`` checked as a ``metrics.json`` record (:func:`r2med.results.record.parse_record`): a DataError
    naming ``path`` and the key on any fault."""
    parse_record(data, path)
