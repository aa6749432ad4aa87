"""The one rule every run's scores obey, whoever made it (a file, a producer, the Python API): each a real number,
finite -- checked before a run is scored, fused, reranked, written or imported.

Apart from :mod:`.metrics` (which imports pytrec_eval, and through it numpy) so that the run readers and fusion, which
the command line loads when it starts, check scores without loading the scoring engine.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping

from ..errors import OptionError, shown


def score_problem(score: object) -> str | None:
    """Why ``score`` cannot be a run's score (a real number, finite: no ``nan``, ``inf``, bool or text), or None.

    numpy's scalars count as the numbers they are (``np.float32(0.5)``); the one rule every run obeys, whoever made it
    (:func:`check_run_scores`)."""
    if isinstance(score, bool) or not isinstance(score, numbers.Real):
        return f"is a {type(score).__name__}, not a number"
    try:
        value = float(score)
    except (OverflowError, ValueError):
        return "is not a finite number"
    return None if math.isfinite(value) else "is not a finite number"


def check_run_scores(run: Mapping[str, Mapping[str, float]], what: str = "run") -> dict[str, dict[str, float]]:
    """``run`` with every score a finite float, or an OptionError naming the first query and document whose score is
    not (:func:`score_problem`): no run holds a non-finite score, from a file, a producer or the Python API.  Ids
    are left to :func:`check_run_ids`."""
    if not isinstance(run, Mapping):
        raise OptionError(f"{what} must be a mapping of query id -> {{doc id: score}}, not a {type(run).__name__}")
    checked: dict[str, dict[str, float]] = {}
    for qid, docs in run.items():
        if not isinstance(docs, Mapping):
            raise OptionError(f"{what} query {shown(qid)}: expected {{doc id: score}}, got a {type(docs).__name__}")
        row: dict[str, float] = {}
        for did, score in docs.items():
            problem = score_problem(score)
            if problem is not None:
                raise OptionError(f"{what} query {shown(qid)}, doc {shown(did)}: score {shown(score)} {problem}")
            row[did] = float(score)
        checked[qid] = row
    return checked
