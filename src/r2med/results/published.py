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

A precision other than the published one (``--dtype``) of the same class keeps the match: :func:`precision_change`
names it, and the leaderboard widens the tolerance instead; one of another class is not graded
(:func:`r2med.results.grading.precision_class`).

A matched run is graded on a task only when it ran on the hub task's data (:func:`data_problem`).  How far a
run may land from the figure is its tolerance class (:func:`tolerance_of`, from the records;
:data:`r2med.infra.registry.TOLERANCES`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

from ..errors import R2MedError, shown
from ..infra.registry import TOLERANCES
from ..measures import HEADLINE, Measure
from ..protocol import preferred_setting, published_figures, published_ndcg10

if TYPE_CHECKING:
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
    def title(self) -> str:
        """How a legend names it (R2MED's: its label)."""
        return self.label

    def figures(self, measure: Measure = HEADLINE) -> dict[str, float]:
        """Published nDCG@10 (x100) per task and ``Average`` (the paper's own rows first); none for another
        measure (R2MED's rows are nDCG@10)."""
        if measure != HEADLINE:
            return {}
        return published_ndcg10(self.retriever, self.expansion, self.llm)

    def average_tasks(self, measure: Measure = HEADLINE) -> tuple[str, ...]:
        """The tasks its published Average is over: R2MED's 8."""
        from ..data.tasks import TASK_NAMES

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


@cache
def _published_index() -> tuple[frozenset[str], frozenset[str], frozenset[tuple[str, str, str]]]:
    figs = published_figures()
    retrievers = frozenset(f.retriever for f in figs)
    methods = frozenset(f.expansion for f in figs if f.expansion != "none" and not f.expansion.startswith(RERANK))
    keys = frozenset((f.retriever, f.expansion, f.llm) for f in figs)
    return retrievers, methods, keys


def _retriever_records() -> dict[str, RetrieverMeta]:
    from ..retrieval.registry import all_retrievers

    return all_retrievers()


def _reranker_records() -> dict[str, RerankerMeta]:
    from ..reranking.base import all_rerankers

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


def require_label(label: str) -> PublishedKey:
    """:func:`parse_label`, or a one-line error when no figures are published for ``label``."""
    key = parse_label(label)
    if key is None:
        raise R2MedError(
            f"no published figures for {label!r}; use e.g. bm25, nv, bge+hyde-gpt4, "
            "bm25+query2doc-qwen-72b, reasonembed-qwen3-8b, e5+reasonrank-32b "
            "(see r2med/protocol/r2med_published_ndcg10.csv)"
        )
    return key


# -- stored configurations ------------------------------------------------------------------------


def expansion_of(config: Mapping[str, Any]) -> dict[str, Any] | None:
    """The expansion a run's queries were built with (``{"method", "llm", "trace", ...}``), or None.

    Run folders written before the structured record (their ``queries`` was a string) are upgraded when
    read (:func:`r2med.runs.record.upgrade_config_v1`), so only the structured record is read here.
    """
    found = config.get("expansion")
    return dict(found) if isinstance(found, Mapping) else None


def tolerance_class(key: PublishedKey) -> str:
    """The tolerance class of a published configuration: its reranker's when that names one, else its
    retriever's (``dense`` for a retriever not registered here)."""
    from ..reranking.base import RERANKERS
    from ..retrieval.registry import RETRIEVERS

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
    from ..retrieval.registry import RETRIEVERS

    meta = RETRIEVERS.get(retriever)
    return meta.paper_dtype if meta is not None else None


def precision_change(config: Mapping[str, Any]) -> tuple[str, str] | None:
    """(precision used, the published one) when a run's recorded precision differs from the published, else
    None.  A retriever's CPU fallback (its record's ``cpu_dtype``, as its published code falls back on a CPU)
    is the published precision too."""
    from ..reranking.base import RERANKERS
    from ..retrieval.encoders import canonical_dtype
    from ..retrieval.registry import RETRIEVERS

    found: list[tuple[str | None, str | None, Any]] = []  # (published precision, CPU fallback, used)
    encoder = config.get("encoder")
    family = family_settings_dtype(config)
    if isinstance(encoder, Mapping) and encoder.get("dtype") is not None and family is not None:
        found.append((family[0], None, encoder["dtype"]))  # a family's own precision (BRIGHT's), no CPU fallback
    elif isinstance(encoder, Mapping) and encoder.get("dtype") is not None:
        retriever_meta = RETRIEVERS.get(str(config.get("retriever", "")))
        also = getattr(retriever_meta, "cpu_dtype", None)
        found.append((retriever_meta.paper_dtype if retriever_meta is not None else None, also, encoder["dtype"]))
    reranker = config.get("reranker")
    options = config.get("options") if config.get("step") == "rerank" else None
    asked = options.get("dtype") if isinstance(options, Mapping) else None  # a reranker whose record has none
    if isinstance(reranker, Mapping) and (reranker.get("dtype") or asked) is not None:
        reranker_meta = RERANKERS.get(str(reranker.get("reranker", "")))
        used = reranker.get("dtype") or asked
        found.append((reranker_meta.paper_dtype if reranker_meta is not None else None, None, used))
    for paper, fallback, used in found:
        if paper is None:  # no published precision: nothing to differ from
            continue
        try:
            if canonical_dtype(str(used)) not in (paper, fallback):
                return canonical_dtype(str(used)), paper
        except R2MedError:
            return str(used), paper
    return None


def family_settings_dtype(config: Mapping[str, Any]) -> tuple[str | None] | None:
    """(the precision its family's code ran the model in, None: none stated) when a run ran a family's own settings
    (``config["settings"]``: BRIGHT's for its model), else None: the preset's own."""
    settings = config.get("settings")
    if not isinstance(settings, Mapping) or settings.get("family") != "bright" or not settings.get("model"):
        return None
    from ..protocol import bright

    try:
        dtype = bright.model(str(settings["model"])).r2med_encoder.get("dtype")
    except R2MedError:
        return None
    return (str(dtype) if dtype else None,)


def nonpaper_precision(config: Mapping[str, Any]) -> str | None:
    """``"bf16 (paper: fp32)"`` when a run's recorded precision differs from the paper's, else None."""
    change = precision_change(config)
    return None if change is None else f"{change[0]} (paper: {change[1]})"


# -- the data a run was made on ---------------------------------------------------------------------


def data_problem(
    task: str, record: Mapping[str, Any], key: PublishedKey | None = None, measure: Measure = HEADLINE
) -> str | None:
    """Why the data one task folder recorded (its ``metrics.json``: ``data`` counts, ``source``,
    ``revision``) is not the data ``key``'s published figure on ``task`` was computed on, or None when it is
    (:mod:`r2med.results.data_states`: a figure of unknown data is never graded; BRIGHT's figures are compared
    commit by commit, documents, examples and reasoning set; no key: the pinned hub task's data).

    The hub task is data read from the task's hub repository at its pinned commit, or data whose
    recorded counts (queries, documents) equal the task's published counts (a local copy).  r2med
    knows no file hashes of the pinned commits, so a local folder with the right name and counts is
    taken for the hub task; any other local folder -- or one whose run recorded no counts -- is not.
    """
    from ..data.tasks import TASKS
    from .data_states import bright_data_problem, unknown_figure

    if task.lower().startswith("bright:"):  # BRIGHT's tasks: graded on the data each figure was computed on
        return bright_data_problem(task, record, key, measure)
    spec = TASKS.get(task)
    if spec is None:
        return f"{task} is not one of R2MED's tasks"
    unknown = unknown_figure(task, key, measure)
    if unknown is not None:
        return unknown
    source, revision = record.get("source"), record.get("revision")
    if revision == spec.revision and isinstance(source, str) and source.startswith(f"hf://datasets/{spec.hub_id}@"):
        return None
    counts = record.get("data")
    where = f"hub commit {str(revision)[:12]}" if revision else "a local folder"
    if not isinstance(counts, Mapping):
        return f"{task}: data from {where} with no recorded counts (re-run with this r2med to grade it)"
    queries, docs = counts.get("queries"), counts.get("docs")
    if (queries, docs) != (spec.queries, spec.docs):
        return (
            f"{task}: data from {where} has {queries} queries and {docs} docs, the hub task "
            f"{spec.queries} and {spec.docs}"
        )
    return None


def data_identity(record: Mapping[str, Any]) -> tuple[Any, Any]:
    """What says which data one task folder's run was made on: (corpus fingerprint, queries-and-judgments
    fingerprint) as its ``metrics.json`` stored them (None where not recorded)."""
    return record.get("dataset_fingerprint"), record.get("judgments_fingerprint")


def different_data(task: str, records: Mapping[str, Mapping[str, Any]]) -> str | None:
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
