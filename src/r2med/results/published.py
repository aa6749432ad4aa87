"""Which published R2MED configuration a run reproduces, and how it differs from the paper's (BRIGHT's rows:
:mod:`r2med.results.bright_published`, whose keys answer the same questions: figures per measure, the tasks an
Average is over, the data they were made on).

A published configuration is a :class:`PublishedKey` -- (retriever, expansion method, LLM), as in
``protocol/r2med_published_ndcg10.csv``; a reranked first stage is (retriever, ``rerank:<reranker>``).
Where the CSV names a system otherwise than r2med does (the later models: ``ReasonEmbed-Qwen3-8B``,
``rerank:ReasonRank(32B)``), the r2med record's ``published_as`` says which CSV name it runs, and a
key's :attr:`~PublishedKey.label` is r2med's folder name (``reasonembed-qwen3-8b``,
``e5+reasonrank-32b``).
:func:`r2med.results.grading.match_published` is the one rule for "is this run the published one?", asked by
``r2med evaluate`` (figures beside its own), the leaderboard and the reproduction matrix: a run is graded only
when the spec it recorded (``metrics.json``'s ``config``, never its name) is the spec its published row was made
with, field by field (:mod:`r2med.results.grading`, which says which field differs when it is not).

A precision other than the published one (``--dtype``) of the same class keeps the match:
:func:`~r2med.results.grading.precision_change` names it, and the leaderboard widens the tolerance instead; one of
another class is not graded (:func:`r2med.results.grading.precision_class`).

A matched run is graded on a task only when it ran on the data of its figures (its family's table says:
:func:`~r2med.results.grading.data_problem`).  How far a run may land from the figure is its tolerance class
(:func:`tolerance_of`, from the records; :data:`r2med.infra.registry.TOLERANCES`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

from ..data.tasks import TASK_NAMES
from ..errors import shown
from ..infra.registry import TOLERANCES
from ..measures import HEADLINE, Measure
from ..protocol import preferred_setting, published_figures, published_ndcg10
from ..reranking.base import RERANKERS, all_rerankers
from ..retrieval.registry import RETRIEVERS, all_retrievers
from ..runs.record import RunRecord

if TYPE_CHECKING:
    from ..infra.json_types import JsonObject, JsonValue
    from ..reranking.base import RerankerMeta
    from ..retrieval.registry import RetrieverMeta

RERANK = "rerank:"


@dataclass(frozen=True)
class PublishedKey:
    """A published configuration: (retriever, expansion method, LLM), as in the figures CSV."""

    retriever: str
    expansion: str = "none"
    llm: str = "none"

    @property
    def label(self) -> str:
        """r2med's folder name for this configuration (``nv``, ``bm25+hyde-gpt4``, ``e5+reasonrank-32b``)."""
        if self.expansion == "none":
            return self.system
        if self.reranker:  # as `r2med rerank` names its folders: <retriever>+<reranker>
            return f"{self.system}+{self.reranker_name}"
        return f"{self.system}+{self.expansion}-{self.llm}"

    @property
    def reranker(self) -> str | None:
        """The reranker of a reranked first stage as the CSV names it, else None."""
        return self.expansion[len(RERANK) :] if self.expansion.startswith(RERANK) else None

    @property
    def system(self) -> str:
        """r2med's retriever that runs this configuration (its first stage, when reranked)."""
        return _r2med_name(self.retriever, _retriever_records())

    @property
    def reranker_name(self) -> str | None:
        """r2med's reranker of a reranked first stage (``reasonrank-32b`` for ``ReasonRank(32B)``), else None."""
        return None if self.reranker is None else _r2med_name(self.reranker, _reranker_records())

    @property
    def expanded(self) -> bool:
        """Whether the queries were expanded by an LLM."""
        return self.expansion != "none" and self.reranker is None

    @property
    def family(self) -> str:
        """The benchmark family whose published rows it is (``r2med``; BRIGHT's: ``bright``)."""
        return "r2med"

    @property
    def family_settings(self) -> tuple[str, str] | None:
        """(family, its name for the model) whose own settings its runs ran, when not the preset's own."""
        return None

    @property
    def measures(self) -> tuple[Measure, ...]:
        """The measures its family's rows publish figures of (R2MED's: nDCG@10)."""
        return (HEADLINE,)

    @property
    def average_alone(self) -> bool:
        """Whether its published Average is shown beside a run of all the Average's tasks where no per-task figure
        is (a leaderboard that publishes Averages only); R2MED's rows show figures per task."""
        return False

    @property
    def tolerance_source(self) -> str:
        """Where its figures come from, as the table's "delta beyond tolerance" line says it."""
        return " (published figures: R2MED paper repo, then leaderboards)"

    def legend(self, measure: Measure) -> str | None:
        """A legend line of its own where a table shows its figures of ``measure`` (None: the table's line)."""
        return None

    @property
    def title(self) -> str:
        """How a legend names it (R2MED's: its label)."""
        return self.label

    def figures(self, measure: Measure = HEADLINE) -> dict[str, float]:
        """Published nDCG@10 (x100) per task and ``Average`` (the paper's own rows first); none for another
        measure (R2MED's rows are nDCG@10)."""
        if measure != HEADLINE:
            return {}
        return published_ndcg10(self.retriever, self.expansion, self.llm)

    def beside(self, measure: Measure = HEADLINE) -> tuple[tuple[str, str, str, dict[str, float]], ...]:
        """Other published figures of this configuration that are shown beside its runs and never graded (their
        data is unknown), as (name, setting, source, task -> figure); R2MED's rows have none."""
        return ()

    def average_tasks(self, measure: Measure = HEADLINE) -> tuple[str, ...]:
        """The tasks its published Average is over: R2MED's 8."""
        return tuple(TASK_NAMES)

    def graded_tasks(self, measure: Measure = HEADLINE) -> set[str]:
        """The tasks a published figure of ``measure`` covers (whose data must be the hub task's)."""
        return set(self.figures(measure))

    def all_graded_tasks(self) -> set[str]:
        """The tasks a published figure of any measure covers."""
        return self.graded_tasks()

    def tolerance_hint(self) -> str | None:
        """Its own tolerance class, where the records do not decide it (None: they do)."""
        return None

    def setting(self, measure: Measure | None = None) -> str:
        found = {
            f.setting
            for f in published_figures()
            if (f.retriever, f.expansion, f.llm) == (self.retriever, self.expansion, self.llm)
        }
        return preferred_setting(found) if found else ""

    def source(self) -> str:
        setting = self.setting()
        for f in published_figures():
            if (f.retriever, f.expansion, f.llm, f.setting) == (self.retriever, self.expansion, self.llm, setting):
                return f.source
        return ""


def published_keys() -> tuple[PublishedKey, ...]:
    """Every configuration of the figures CSV, in order."""
    return tuple(PublishedKey(*k) for k in sorted(_published_index()[2]))


@cache
def _published_index() -> tuple[frozenset[str], frozenset[str], frozenset[tuple[str, str, str]]]:
    figs = published_figures()
    retrievers = frozenset(f.retriever for f in figs)
    methods = frozenset(f.expansion for f in figs if f.expansion != "none" and not f.expansion.startswith(RERANK))
    keys = frozenset((f.retriever, f.expansion, f.llm) for f in figs)
    return retrievers, methods, keys


def _retriever_records() -> dict[str, RetrieverMeta]:
    return all_retrievers()


def _reranker_records() -> dict[str, RerankerMeta]:
    return all_rerankers()


def _r2med_name(published: str, records: Mapping[str, RetrieverMeta] | Mapping[str, RerankerMeta]) -> str:
    """The record whose ``published_as`` is ``published`` (the CSV's name), else ``published`` itself."""
    return next((name for name, meta in records.items() if getattr(meta, "published_as", None) == published), published)


def _published_name(name: str, records: Mapping[str, RetrieverMeta] | Mapping[str, RerankerMeta]) -> str:
    """The CSV's name of r2med's record ``name`` (its ``published_as``), else ``name`` itself."""
    meta = records.get(name)
    return getattr(meta, "published_as", None) or name


def published_retriever(name: str) -> str:
    """The figures CSV's name of r2med's retriever ``name`` (``ReasonEmbed-Qwen3-8B`` for ``reasonembed-qwen3-8b``)."""
    return _published_name(name, _retriever_records())


def parse_label(label: str) -> PublishedKey | None:
    """``bm25`` / ``bm25+hyde-gpt4`` / ``nv+hyde:qwen_7b`` / ``reasonembed-qwen3-8b`` / ``e5+reasonrank-32b``
    -> the published key, if figures exist for it."""
    retrievers, methods, keys = _published_index()
    base, plus, rest = label.strip().partition("+")
    base = published_retriever(base)
    if base not in retrievers:
        return None
    if not plus:
        return PublishedKey(base) if (base, "none", "none") in keys else None
    for method in sorted(methods, key=len, reverse=True):
        for sep in ("-", ":", "/"):
            if rest.startswith(method + sep):
                llm = rest[len(method) + 1 :].replace("_", "-")
                if (base, method, llm) in keys:
                    return PublishedKey(base, method, llm)
    rest = _published_name(rest, _reranker_records())
    if (base, RERANK + rest, "none") in keys:  # a reranked first stage: nv+bge-reranker, e5+reasonrank-32b
        return PublishedKey(base, RERANK + rest, "none")
    return None


# -- stored configurations ------------------------------------------------------------------------


def expansion_of(config: Mapping[str, JsonValue]) -> JsonObject | None:
    """The expansion a run's queries were built with (``{"method", "llm", "trace", ...}``), or None.

    Run folders written before the structured record (their ``queries`` was a string) are upgraded when
    read (:func:`r2med.runs.record.upgrade_config_v1`), so only the structured record is read here.
    """
    found = config.get("expansion")
    return dict(found) if isinstance(found, dict) else None


def tolerance_class(key: PublishedKey) -> str:
    """The tolerance class of a published configuration: its reranker's when that names one, else its
    retriever's (``dense`` for a retriever not registered here)."""

    own = key.tolerance_hint()
    if own is not None:
        return own
    reranker = RERANKERS.get(key.reranker_name) if key.reranker_name else None
    if reranker is not None and reranker.tolerance:
        return reranker.tolerance
    meta = RETRIEVERS.get(key.system)
    return meta.tolerance if meta is not None else "dense"


def tolerance_of(key: PublishedKey) -> float | None:
    """The default |delta| (nDCG@10 x100) a run of ``key`` may show to its published figures; None: the
    delta is shown but not graded (settings r2med assumed)."""
    return TOLERANCES[tolerance_class(key)]


def paper_dtype(retriever: str) -> str | None:
    """The precision the published code ran a dense preset in (None: not a local preset)."""
    meta = RETRIEVERS.get(retriever)
    return meta.paper_dtype if meta is not None else None


# -- the data a run was made on ---------------------------------------------------------------------


def data_identity(record: RunRecord) -> tuple[str | None, str | None]:
    """What says which data one task folder's run was made on: (corpus fingerprint, queries-and-judgments
    fingerprint) as its ``metrics.json`` stored them (None where not recorded)."""
    return record.dataset_fingerprint, record.judgments_fingerprint


def different_data(task: str, records: Mapping[str, RunRecord]) -> str | None:
    """A one-line reason when the runs ``records`` (label -> ``metrics.json``) of one task were made on
    different data (their recorded fingerprints differ), else None; a fingerprint one run did not record
    is not compared."""
    labels = list(records)
    for part, what in ((0, "corpus"), (1, "queries or judgments")):
        seen = {label: data_identity(records[label])[part] for label in labels}
        known = {label: value for label, value in seen.items() if value is not None}
        if len(set(known.values())) > 1:
            first, *rest = known
            other = next(label for label in rest if known[label] != known[first])
            return (
                f"{task}: {first} and {other} were made on different data (another {what}: "
                f"fingerprints {shown(known[first])} and {shown(known[other])}); pair runs of the same data only"
            )
    return None
