"""Fusing several runs of the same queries into one: reciprocal rank fusion, CombSUM, CombMNZ.

* **RRF** (Cormack et al., 2009): ``score(d) = sum_i w_i / (k + rank_i(d))`` over the runs that
  retrieved ``d``, ranks 1-based in trec_eval order (score descending, ties by doc id
  descending), ``k = 60`` by default.
* **CombSUM**: ``score(d) = sum_i w_i * norm_i(d)``, where each run's scores are normalised
  per query -- ``minmax`` to [0, 1] (a query whose scores are all equal gets 1 for every doc),
  ``zscore`` to mean 0 / standard deviation 1 (population std; all-equal scores give 0), or
  ``none`` -- and a doc a run did not retrieve contributes 0.
* **CombMNZ**: CombSUM times the number of runs that retrieved the doc.

Weights default to 1 for every run.  A query is fused from the runs that answer it; the fused
list keeps the ``depth`` best docs (all by default).  :func:`fuse_cut` also says which fused documents the
depth cut dropped while tied with a query's last kept one (:class:`~r2med.evaluation.ties.CutTie`), so the tie
ranges count them; a document no input run holds is no candidate of the fusion, tied or not.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence

from ..errors import R2MedError, shown
from ..evaluation.run_scores import check_run_scores
from ..evaluation.tie_data import CUT_TIES_CAP, CutTie
from .fusion_choices import FusionMethod, Normalisation
from .run import Run, ranked, truncate

FUSION_METHODS: tuple[FusionMethod, ...] = tuple(FusionMethod)
NORMS: tuple[Normalisation, ...] = tuple(Normalisation)
RRF_K = 60


def check_weights(n_runs: int, weights: Sequence[float] | None) -> list[float]:
    """One weight per run, each a finite number >= 0 and one above 0 (None: 1 for every run), or one line."""
    if not n_runs:
        raise R2MedError("fusion needs at least one run")
    if weights is None:
        return [1.0] * n_runs
    if isinstance(weights, (str, bytes)) or not isinstance(weights, Sequence):
        raise R2MedError(f"fusion weights: expected one number per run, got {shown(weights)}")
    if any(isinstance(w, bool) or not isinstance(w, numbers.Real) for w in weights):
        raise R2MedError(f"fusion weights: expected numbers, got {shown(list(weights))}")
    if len(weights) != n_runs:
        raise R2MedError(f"{len(weights)} weight(s) given for {n_runs} run(s); give one weight per run")
    if any(not math.isfinite(w) or w < 0 for w in weights):
        raise R2MedError("fusion weights must be finite and non-negative")
    if not any(weights):
        raise R2MedError("fusion weights: at least one weight must be above 0")
    return [float(w) for w in weights]


def rrf(
    runs: Sequence[Mapping[str, Mapping[str, float]]],
    k: float = RRF_K,
    weights: Sequence[float] | None = None,
    depth: int | None = None,
) -> Run:
    """Reciprocal rank fusion of ``runs`` (``k`` = 60 by default)."""
    if k < 0:
        raise R2MedError("the RRF constant k must be non-negative")
    ws = check_weights(len(runs), weights)
    fused: dict[str, dict[str, float]] = {}
    for run, w in zip(runs, ws):
        for qid, docs in run.items():
            target = fused.setdefault(qid, {})
            for rank, (did, _) in enumerate(ranked(docs), start=1):
                target[did] = target.get(did, 0.0) + w / (k + rank)
    return fused if depth is None else truncate(fused, depth)


def normalise(docs: Mapping[str, float], method: str = "minmax") -> dict[str, float]:
    """One query's scores normalised by ``minmax``, ``zscore`` or ``none``."""
    if method not in NORMS:
        raise R2MedError(f"unknown normalisation {method!r}; choose from: {', '.join(NORMS)}")
    if not docs or method == "none":
        return dict(docs)
    values = list(docs.values())
    if method == "minmax":
        low, high = min(values), max(values)
        if high == low:
            return {d: 1.0 for d in docs}
        return {d: (s - low) / (high - low) for d, s in docs.items()}
    mean = sum(values) / len(values)
    std = math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))
    if std == 0:
        return {d: 0.0 for d in docs}
    return {d: (s - mean) / std for d, s in docs.items()}


def comb(
    runs: Sequence[Mapping[str, Mapping[str, float]]],
    method: str = "combsum",
    norm: str = "minmax",
    weights: Sequence[float] | None = None,
    depth: int | None = None,
) -> Run:
    """CombSUM (``method="combsum"``) or CombMNZ (``"combmnz"``) of normalised scores."""
    if method not in ("combsum", "combmnz"):
        raise R2MedError(f"unknown score fusion {method!r}; use combsum or combmnz")
    ws = check_weights(len(runs), weights)
    sums: dict[str, dict[str, float]] = {}
    hits: dict[str, dict[str, int]] = {}
    for run, w in zip(runs, ws):
        for qid, docs in run.items():
            target, count = sums.setdefault(qid, {}), hits.setdefault(qid, {})
            for did, s in normalise(docs, norm).items():
                target[did] = target.get(did, 0.0) + w * s
                count[did] = count.get(did, 0) + 1
    if method == "combmnz":
        sums = {q: {d: s * hits[q][d] for d, s in docs.items()} for q, docs in sums.items()}
    return sums if depth is None else truncate(sums, depth)


def fuse(
    runs: Sequence[Mapping[str, Mapping[str, float]]],
    method: str = "rrf",
    *,
    k: float = RRF_K,
    norm: str = "minmax",
    weights: Sequence[float] | None = None,
    depth: int | None = None,
) -> Run:
    """Fuse ``runs`` with ``method`` (``rrf``, ``combsum`` or ``combmnz``).

    Every input score must be a finite number (one ``nan`` would spread over its whole query under ``minmax`` or
    ``zscore``), and so is every fused one: weights so large that a sum overflows are refused, naming them.  This is
    the one entry the ``fuse`` command, ``[[fusion]]`` steps and Python pass."""
    return fuse_cut(runs, method, k=k, norm=norm, weights=weights, depth=depth)[0]


def fuse_cut(
    runs: Sequence[Mapping[str, Mapping[str, float]]],
    method: str = "rrf",
    *,
    k: float = RRF_K,
    norm: str = "minmax",
    weights: Sequence[float] | None = None,
    depth: int | None = None,
) -> tuple[Run, dict[str, CutTie]]:
    """:func:`fuse`, and per query the fused documents the ``depth`` cut dropped while tied with the last one kept
    (the first :data:`~r2med.evaluation.ties.CUT_TIES_CAP` in trec_eval's order, the cut's own; queries without
    such documents absent)."""
    if isinstance(runs, Mapping) or not isinstance(runs, Sequence):
        raise R2MedError(f"fuse takes a list of runs, not a {type(runs).__name__}")
    inputs = [check_run_scores(run, what=f"run {i + 1}") for i, run in enumerate(runs)]
    if method == "rrf":
        whole = rrf(inputs, k=k, weights=weights)
    elif method in ("combsum", "combmnz"):
        whole = comb(inputs, method=method, norm=norm, weights=weights)
    else:
        raise R2MedError(f"unknown fusion method {method!r}; choose from: {', '.join(FUSION_METHODS)}")
    fused, dropped = (whole, {}) if depth is None else _cut(whole, depth)
    for qid, docs in fused.items():
        for did, score in docs.items():
            if not math.isfinite(score):
                raise R2MedError(
                    f"fusion weights {', '.join(f'{w:g}' for w in weights or ())}: the fused score of query "
                    f"{shown(qid)}, doc {shown(did)} overflows to {score}; use smaller weights (only their ratios "
                    "change the ranking)"
                )
    return fused, dropped


def _cut(fused: Mapping[str, Mapping[str, float]], depth: int) -> tuple[Run, dict[str, CutTie]]:
    """``fused`` cut to its ``depth`` best per query (:func:`~r2med.runs.run.truncate`), and what the cut dropped
    while tied with each query's last kept document."""
    kept: Run = {}
    dropped: dict[str, CutTie] = {}
    for qid, docs in fused.items():
        if len(docs) <= depth:
            kept[qid] = dict(docs)
            continue
        order = ranked(docs)
        kept[qid] = dict(order[:depth])
        last = order[depth - 1][1]
        end = depth
        while end < len(order) and order[end][1] == last:  # ranked: the tied ones follow the cut at once
            end += 1
        tied = [d for d, _ in order[depth:end]]
        if tied:
            dropped[qid] = CutTie(tuple(tied[:CUT_TIES_CAP]), len(tied))
    return kept, dropped
