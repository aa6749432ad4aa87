"""The ``Run`` type (query id -> doc id -> score), TREC run files and result folders.

A run folder holds one sub-folder per task with ``run.trec`` (6-column TREC run),
``metrics.json`` (aggregate + per-query measures, config, timing, versions) and
``r2med_results.json`` (the R2MED repository's results format).  Every file is
written atomically, and a task folder is only created once all its files exist.
"""

from __future__ import annotations

import heapq
import json
import math
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .cache import atomic_dir, atomic_path
from .errors import DataError

Run = dict[str, dict[str, float]]
"""Ranked results: query id -> doc id -> score (pytrec_eval's form); higher scores rank first."""

RUN_FILE = "run.trec"
METRICS_FILE = "metrics.json"
R2MED_RESULTS_FILE = "r2med_results.json"


def ranked(docs: Mapping[str, float]) -> list[tuple[str, float]]:
    """Docs ordered as trec_eval orders them: score descending, ties by doc id descending."""
    return sorted(docs.items(), key=lambda item: (item[1], item[0]), reverse=True)


def truncate(run: Mapping[str, Mapping[str, float]], k: int) -> Run:
    """Keep each query's top ``k`` docs (trec_eval order)."""
    out: Run = {}
    for qid, docs in run.items():
        if len(docs) <= k:
            out[qid] = dict(docs)
        else:
            out[qid] = dict(heapq.nlargest(k, docs.items(), key=lambda item: (item[1], item[0])))
    return out


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
    from .data.files import iter_lines

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
            raise DataError(path, number, f"doc {did[:60]!r} listed twice for query {qid[:60]!r} "
                                          f"(first on line {seen[qid, did]})")
        seen[qid, did] = number
        run.setdefault(qid, {})[did] = value
    if not run:
        raise DataError(path, None, "empty run file")
    return run


def r2med_results(task: str, model: str, aggregate: Mapping[str, float]) -> dict[str, Any]:
    """The R2MED repository's results JSON (``results/<setting>/<model>/<Task>.json``)."""
    names = {"ndcg_cut_": "ndcg_at_", "map_cut_": "map_at_", "recall_": "recall_at_", "P_": "precision_at_"}
    test: dict[str, float] = {}
    for measure, value in aggregate.items():
        if measure == "recip_rank":
            test["mrr"] = value
            continue
        for prefix, new in names.items():
            if measure.startswith(prefix) and measure[len(prefix):].isdigit():
                test[new + measure[len(prefix):]] = value
    return {"dataset_name": task, "model_name": model, "test": test}


def write_task_results(folder: str | os.PathLike[str], run: Mapping[str, Mapping[str, float]],
                       metrics: Mapping[str, Any], tag: str = "r2med") -> Path:
    """Write ``run.trec``, ``metrics.json`` and ``r2med_results.json`` into ``folder`` as one atomic step."""
    folder = Path(folder)
    with atomic_dir(folder) as tmp:
        write_trec(run, tmp / RUN_FILE, tag=tag)
        (tmp / METRICS_FILE).write_text(json.dumps(metrics, indent=1) + "\n", encoding="utf-8")
        export = r2med_results(metrics.get("task", folder.name), metrics.get("retriever", tag),
                               metrics.get("aggregate", {}))
        (tmp / R2MED_RESULTS_FILE).write_text(json.dumps(export, indent=1) + "\n", encoding="utf-8")
    return folder


def read_metrics(folder: str | os.PathLike[str]) -> dict[str, Any]:
    path = Path(folder) / METRICS_FILE
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DataError(path, None, "no metrics.json (not a finished task folder)") from None
    except json.JSONDecodeError as exc:
        raise DataError(path, exc.lineno, f"malformed JSON ({exc.msg})") from None


def task_folders(out: str | os.PathLike[str]) -> list[Path]:
    """The finished task folders of a run folder (those with a metrics.json), sorted by name."""
    out = Path(out)
    if (out / METRICS_FILE).exists():
        return [out]
    return sorted(p.parent for p in out.glob(f"*/{METRICS_FILE}"))
