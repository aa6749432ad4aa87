"""The single entry point to trec_eval measures (via pytrec_eval), per query and aggregate.

Measures are :class:`~r2med.measures.Measure` values; the public entry points (:func:`evaluate`,
``metrics["nDCG@10"]``, ``metrics.per_query[q]["R@100"]``) also take any spelling (``nDCG@10``,
``ndcg_cut_10``, ``R@100``, ``MRR``) and parse it at once.  Scores are keyed by pytrec_eval's names
(``ndcg_cut_10``, ``recip_rank``), as ``metrics.json`` stores them.
Averages follow the R2MED paper: the mean over queries that are both judged and
answered by the run, unless ``count_missing`` (then unanswered judged queries
count as 0, as ``trec_eval -c`` does).
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

import pytrec_eval

from ..data.files import GRADE_MAX, GRADE_MIN, _control_char, id_problem
from ..errors import NothingToScore, OptionError, R2MedError, shown
from ..measures import CUTOFFS as TABLE_CUTOFFS
from ..measures import DEFAULT_MEASURES as TABLE_DEFAULTS
from ..measures import HEADLINE, Family, Measure, pytrec_eval_spec
from ..measures import measure as _measure
from .run_scores import check_run_scores

if TYPE_CHECKING:
    from .tie_data import Ties

CUTOFFS: Final = TABLE_CUTOFFS
#: trec_eval's measures at a cut-off (``ndcg_cut_10`` ...), each computed at every one of :data:`CUTOFFS`.
CUTOFF_MEASURES: Final[tuple[str, ...]] = tuple(f.trec for f in Family if f.has_cutoff)
#: :data:`r2med.measures.DEFAULT_MEASURES` by their pytrec_eval names (what ``metrics.json`` stores)
DEFAULT_MEASURES: Final[tuple[str, ...]] = tuple(m.trec for m in TABLE_DEFAULTS)


def canonical(text: str) -> str:
    """The pytrec_eval name of a measure typed in any spelling: ``nDCG@10`` / ``ndcg_cut.10`` -> ``ndcg_cut_10``;
    ``MRR`` -> ``recip_rank`` (``Measure.parse(text).trec``)."""
    return Measure.parse(text).trec


def _check_grades(qrels: Mapping[str, Mapping[str, int]]) -> None:
    """Refuse grades outside -1000..1000 before pytrec_eval sees them (its nDCG allocates per grade level)."""
    for qid, docs in qrels.items():
        for did, grade in docs.items():
            if not GRADE_MIN <= grade <= GRADE_MAX:
                raise R2MedError(
                    f"judgment for query {qid!r}, doc {did!r}: relevance {grade} is outside {GRADE_MIN}..{GRADE_MAX}"
                )


def _grade(qid: object, did: object, grade: object) -> int:
    """A judgment's relevance as an int: an integer (``2``, ``2.0``, numpy's), never a fraction cut to one (``0.9``
    is refused, not read as 0), a bool or text; an OptionError naming the query and document otherwise."""
    if isinstance(grade, bool) or not isinstance(grade, numbers.Real):
        raise OptionError(
            f"judgment for query {shown(qid)}, doc {shown(did)}: relevance {shown(grade)} is a "
            f"{type(grade).__name__}, not an integer"
        )
    value = float(grade)
    if not value.is_integer():
        raise OptionError(
            f"judgment for query {shown(qid)}, doc {shown(did)}: relevance {shown(grade)} is not an integer "
            "(relevance grades are whole numbers: trec_eval reads them as integers)"
        )
    return int(value)


def _check_ids(run: Mapping[str, Mapping[str, float]], qrels: Mapping[str, Mapping[str, int]]) -> None:
    """Refuse ids holding a control character before pytrec_eval sees them: it reads ids as C strings, so
    ``13\\0x`` would be scored as ``13`` (the readers refuse such ids at their line; this covers Python callers)."""
    for what, table in (("run", run), ("judgments", qrels)):
        for qid, docs in table.items():
            if _control_char(qid):
                raise R2MedError(f"{what}: query id {qid!r} {id_problem(qid)}")
            for did in docs:
                if _control_char(did):
                    raise R2MedError(f"{what}: query {qid!r}, doc id {did!r} {id_problem(did, spaces=True)}")


class Measures(dict[str, float]):
    """One query's measures: pytrec_eval names as keys, friendly names accepted on lookup
    (``values["nDCG@10"]`` is ``values["ndcg_cut_10"]``)."""

    def __missing__(self, measure: Measure | str) -> float:
        """A :class:`Measure`, or another spelling of a key (the public edge: users type names)."""
        key = measure.trec if isinstance(measure, Measure) else canonical(measure)  # an unknown name: OptionError
        if key == measure or not dict.__contains__(self, key):
            raise KeyError(measure)
        return dict.__getitem__(self, key)

    def __contains__(self, measure: object) -> bool:
        return isinstance(measure, (str, Measure)) and self._key(measure) is not None

    def get(self, measure: Measure | str, default: float | None = None) -> float | None:  # type: ignore[override]
        """``values.get(m)`` for a :class:`Measure` or any spelling (dict's ``get`` takes the key type only)."""
        key = self._key(measure)
        return default if key is None else dict.__getitem__(self, key)

    def _key(self, measure: Measure | str) -> str | None:
        """The key ``measure`` names here (its pytrec_eval name), or None when this query holds none."""
        if isinstance(measure, str) and dict.__contains__(self, measure):
            return measure
        try:
            key = measure.trec if isinstance(measure, Measure) else canonical(measure)
        except R2MedError:
            return None
        return key if dict.__contains__(self, key) else None


@dataclass
class Metrics:
    """Per-query and averaged measures of one run against one set of judgments.

    ``metrics["nDCG@10"]`` is the average; ``metrics.per_query[qid]["nDCG@10"]`` one query's value
    (friendly names and pytrec_eval's both work).
    """

    per_query: dict[str, Measures]
    aggregate: dict[str, float]
    measures: tuple[Measure, ...]
    missing_queries: list[str] = field(default_factory=list)
    #: the ranges the order of tied documents allows (:func:`r2med.evaluation.ties.evaluate_with_ties`)
    ties: Ties | None = None

    def __getitem__(self, measure: Measure | str) -> float:
        """The average of a :class:`Measure`, or of one spelled as text (``"nDCG@10"``, parsed here)."""
        return self.aggregate[_measure(measure).trec]

    def __repr__(self) -> str:
        """One line: query count, the headline measures, how many more (per-query values stay out)."""
        headline = (HEADLINE.trec, Measure(Family.RECALL, 100).trec, Measure(Family.MRR).trec)
        shown = [m for m in headline if m in self.aggregate] or list(self.aggregate)[:3]
        parts = [f"{len(self.per_query)} queries"] + [f"{m}={self.aggregate[m]:.4f}" for m in shown]
        if len(self.aggregate) > len(shown):
            parts.append(f"+{len(self.aggregate) - len(shown)} measures")
        if self.missing_queries:
            parts.append(f"{len(self.missing_queries)} judged queries without results")
        return f"Metrics({', '.join(parts)})"


def nothing_shared(run: Mapping[str, Mapping[str, float]], qrels: Mapping[str, Mapping[str, int]]) -> str:
    """Why a run and judgments give nothing to score, in words: what each holds, with an example id."""

    def queries(n: int) -> str:
        return f"{n:,} quer{'y' if n == 1 else 'ies'}"

    if not qrels:
        return "the judgments hold no query: nothing to score"
    ranked = [str(q) for q, docs in run.items() if docs]
    judged = f"the judgments' {queries(len(qrels))} (e.g. {shown(next(iter(qrels)))})"
    if not ranked:
        held = f" (it holds {queries(len(run))}, each with no document)" if run else ""
        return f"the run ranks no document{held}: nothing to score against {judged}"
    return (
        f"the run's {queries(len(ranked))} (e.g. {shown(ranked[0])}) and {judged} have none in common: nothing to "
        "score (a run of another task, split or id scheme?)"
    )


def evaluate(
    run: Mapping[str, Mapping[str, float]],
    qrels: Mapping[str, Mapping[str, int]],
    measures: Iterable[Measure | str] | None = None,
    count_missing: bool = False,
    answered_empty: Iterable[str] = (),
) -> Metrics:
    """Score ``run`` against ``qrels`` exactly as trec_eval does (pytrec_eval engine); with the ranges the order
    of tied documents allows: :func:`r2med.evaluation.ties.evaluate_with_ties`.

    A run that shares no query with ``qrels`` (none of the queries it ranks documents for is judged: trec_eval's
    ``num_q`` 0) is a :class:`~r2med.errors.NothingToScore`, with or without ``count_missing``: its average
    would read as a score of 0.  This is the one place every command's scoring passes.

    ``answered_empty``: queries the system answered with no document (BRIGHT's LLM reranking, whose ``rerank.py``
    keeps them as ``{}``, which pytrec_eval scores 0): each judged one scores 0 on every measure, with or without
    ``count_missing`` -- a run file cannot hold them, so the caller names them (``metrics.json``'s
    ``empty_queries``).  An empty entry of ``run`` is otherwise no answer, as trec_eval reads a run file.

    ``measures``: :class:`~r2med.measures.Measure` values or any spelling of one (``"nDCG@10"``,
    ``"ndcg_cut_10"``), parsed here; default :data:`r2med.measures.DEFAULT_MEASURES`."""
    asked = tuple(dict.fromkeys(_measure(m) for m in (measures or TABLE_DEFAULTS)))
    wanted = tuple(m.trec for m in asked)
    if not isinstance(qrels, Mapping) or not all(isinstance(docs, Mapping) for docs in qrels.values()):
        raise OptionError(f"judgments must be a mapping of query id -> {{doc id: grade}}, got {shown(qrels)}")
    qrels_clean = {str(q): {str(d): _grade(q, d, g) for d, g in docs.items()} for q, docs in qrels.items()}
    _check_grades(qrels_clean)
    scored = check_run_scores(run)  # no run holds a non-finite score (pytrec_eval ranks NaN anywhere)
    run_clean = {str(q): {str(d): s for d, s in docs.items()} for q, docs in scored.items() if docs}
    _check_ids(run_clean, qrels_clean)
    evaluator = pytrec_eval.RelevanceEvaluator(qrels_clean, pytrec_eval_spec(asked))
    raw = evaluator.evaluate(run_clean)
    empty = [str(q) for q in answered_empty if str(q) in qrels_clean and str(q) not in raw]
    if not raw and not empty:  # trec_eval's num_q 0, with or without count_missing: no figure to report
        raise NothingToScore(nothing_shared(run, qrels_clean))
    per_query = {q: Measures((m, float(vals[m])) for m in wanted) for q, vals in raw.items()}
    for q in empty:  # answered with nothing: pytrec_eval's score of an empty entry
        per_query[q] = Measures((m, 0.0) for m in wanted)
    missing = [q for q in qrels_clean if q not in per_query]
    if count_missing:
        for q in missing:
            per_query[q] = Measures((m, 0.0) for m in wanted)
    n = len(per_query)
    aggregate = {m: (sum(v[m] for v in per_query.values()) / n if n else 0.0) for m in wanted}
    return Metrics(per_query=per_query, aggregate=aggregate, measures=asked, missing_queries=missing)
