"""Graded from the whole spec: the spec each published row was made with, and whether a run recorded that spec.

A published row (a :class:`~r2med.results.published.PublishedKey` of a family's :class:`PublishedTable`, which the
family gives through :class:`Publishes`: R2MED's ``protocol/r2med_published_ndcg10.csv``, BRIGHT's
``protocol/bright_published.csv``) was made with one spec.  :func:`published_specs` builds each row's
:class:`PublishedSpec` from the records, never from a name:

* a retriever (:class:`RetrieverSpec`): its registry record names the options type, and every field of that type
  that changes scores (:func:`~r2med.typed.parse.score_fields`: all but how a model runs -- batch size, device,
  retries, caches -- and the precision, which has its own rule) has a :class:`Published` value: the paper's
  (``RetrieverMeta.paper``: BM25's k1 and b, MedCPT's Article encoder for queries, a preset's cosine), else the
  preset's own setting (model, pooling, lengths, normalisation, loader, framing...), else "not set" (the
  instructions, the query model, a revision, a FAISS index: the preset's own are the published ones).  Beside the
  options it names the facts a run records of what it computed (BM25's flavour, a dense model's similarity and
  exact search), the depth it must keep (nDCG@10 reads the top 10) and its expansion: the hub's file of that
  method and LLM;
* a reranked row (:class:`RerankSpec`): the reranker's record (``RerankerMeta.published_options``: checkpoint,
  base and adapter, tokenizer, lengths, label, window, sampling), the published depth, and the first stage it
  reranked -- a published run of r2med's (the paper's ``nv``) or the authors' own run file
  (:class:`ImportedRun`: ReasonRank reranked its authors' E5 top 100, identified by each task's SHA-256).

:func:`grade` reads one task's recorded ``config`` back as its step spec
(:func:`~r2med.steps.evaluate_from_record`, :func:`~r2med.steps.rerank_from_record`), finds the row it
names (its retriever, expansion, reranker and first stage -- never its name), and compares every field: a run is
graded against the row only when all are the published ones; otherwise its :class:`Grade` has no key and says
which field differs (``not the published nv+bge-reranker: max_length 32, published 512``), what ``report``,
``evaluate``, ``rerank`` and ``reproduce`` show instead of the published figure.

An expansion is the hub's file when r2med read it from the hub (no local file or folder was given: it was
downloaded at the data's commit and verified, :func:`r2med.expansion.precomputed.read_from_hub`) -- at the commit
r2med reads it from by default -- or when its recorded content fingerprint (``expansion_fingerprint``) is one r2med
computed itself of the hub's file when it downloaded and verified it (:func:`r2med.data.hub_integrity.hub_fingerprints`;
r2med ships no fingerprints of hub files: it records them as it downloads them).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from ..data.benchmarks import benchmark, benchmark_of, benchmarks
from ..data.bright import reasoning_config
from ..data.hub import expansion_path, snapshot_commit, task_revision
from ..data.hub_integrity import hub_fingerprints
from ..data.names import DEFAULT, aliases
from ..data.tasks import TASKS
from ..errors import OptionError, R2MedError, shown
from ..evaluation.ties import PUBLISHED_TIE_RULE
from ..expansion.precomputed import COMBINATION_RULE, read_from_hub
from ..expansion.traces import normalize_llm
from ..expansion_name import ExpansionName
from ..infra.json_shapes import text_object
from ..measures import HEADLINE, Measure
from ..protocol import bright, data_states
from ..reranking.base import RERANKERS, published_depth
from ..retrieval.encoders import canonical_dtype
from ..retrieval.presets import get_preset
from ..retrieval.registry import RETRIEVERS
from ..runs.record import JsonObject, RecordedConfig, RunData
from ..steps import evaluate_from_record, rerank_from_record
from ..typed.model_source import parse_claim
from ..typed.options import ANALYZERS
from ..typed.parse import by_checkpoint, score_fields
from .published import PublishedKey

if TYPE_CHECKING:
    from ..expansion.precomputed import ExpansionQueries
    from ..expansion.reasoning import ReasoningQueries
    from ..steps import EvaluateStep, RerankStep
    from ..typed.parse import Spec
    from .reproduction import Target

#: the depth nDCG@10 reads: a run that kept fewer documents per query is not the published one
HEADLINE_DEPTH = 10
#: the expansion method of BRIGHT's reasoning query sets (``-e reason:<llm>``)
REASON = "reason"


@dataclass(frozen=True)
class Published:
    """What one score-changing field holds in a published row's runs: one of ``values`` (``None``: not set, the
    model's own setting -- for a registered preset, the published one); ``checkpoint``: compared by the repository
    the model's identity shows (:func:`checkpoint_identity`: its hub id, or the repository a Hugging Face cache
    snapshot holds -- never a folder's name); ``at_least``: a depth, any value from it up."""

    values: tuple[object, ...] = (None,)
    checkpoint: bool = False
    at_least: int | None = None

    def accepts(self, value: object) -> bool:
        if self.at_least is not None:
            return isinstance(value, int) and not isinstance(value, bool) and value >= self.at_least
        if self.checkpoint and isinstance(value, str):
            shown_as = checkpoint_identity(value)
            return shown_as is not None and any(isinstance(v, str) and v.lower() == shown_as for v in self.values)
        return any(_same(value, v) for v in self.values)

    def words(self) -> str:
        """The published setting in words: ``512``, ``BAAI/bge-reranker-v2-m3``, ``not set``, ``at least 10``."""
        if self.at_least is not None:
            return f"at least {self.at_least}"
        shown_values = [_word(v) for v in self.values if v is not None]
        return " or ".join(shown_values) if shown_values else "not set"


def _word(value: object) -> str:
    return value if isinstance(value, str) else shown(value)


def _same(value: object, published: object) -> bool:
    if isinstance(published, (int, float)) and not isinstance(published, bool):
        return (
            isinstance(value, (int, float))
            and not isinstance(value, bool)
            and math.isfinite(value)
            and abs(value - published) < 1e-12
        )
    equal: bool = value == published  # JSON values and specs' values: == gives a bool
    return equal


_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")


def checkpoint_identity(model: str) -> str | None:
    """The hub repository (``org/name``, lowercased) whose files a recorded model value shows it ran: a hub id, or a
    Hugging Face cache snapshot (``.../models--org--name/snapshots/<commit>``: the cache says which repository and
    commit its files are); None for any other folder -- a folder's name says nothing of the weights in it (random
    weights in a folder named ``all-mpnet-base-v2`` are not that checkpoint)."""
    parts = PurePath(model.rstrip("/\\")).parts
    if len(parts) >= 3 and parts[-2] == "snapshots" and parts[-3].startswith("models--"):
        return "/".join(parts[-3].split("--")[1:3]).lower()
    if ("/" not in model and "\\" not in model) or (_HUB_ID.fullmatch(model) and ".." not in model):
        return model.lower()  # an API's model name (no folder), or a hub id
    return None


def claimed_checkpoint(config: RecordedConfig | None) -> str | None:
    """The checkpoint (``org/name`` or ``org/name@<commit>``) a run's user claimed its local model folder holds
    (``options.model_claim``, recorded as a claim), when the folder's own identity is not shown
    (:func:`checkpoint_identity`: not a hub id or a cache snapshot); else None.  The claim is the user's word, not
    r2med's check of the weights: a grade that rests on it says so in every output."""
    options = config.options if config is not None else None
    claim = options.get("model_claim") if options is not None else None
    model = options.get("model") if options is not None else None
    if not isinstance(claim, str) or not isinstance(model, str) or checkpoint_identity(model) is not None:
        return None
    return claim if parse_claim(claim) is not None else None


def claim_note(grade: Grade, folder: str | None = None) -> str | None:
    """The line naming a grade that rests on a user's claim (:attr:`Grade.claim`), else None."""
    if grade.claim is None or grade.key is None:
        return None
    what = f"its model folder{f' {folder}' if folder else ''}"
    return (
        f"graded on your claim: {what} is {grade.claim} (model_claim, recorded as a claim; r2med did not verify "
        "the weights)"
    )


def checkpoint_name(model: str) -> str:
    """A model's repository name, lowercased: the last part of a hub id or folder, or for a Hugging Face cache
    snapshot (``.../models--org--name/snapshots/<commit>``) the repository it caches."""
    parts = PurePath(model.rstrip("/\\")).parts or (model,)
    if len(parts) >= 3 and parts[-2] == "snapshots" and parts[-3].startswith("models--"):
        return parts[-3].split("--")[-1].lower()
    return parts[-1].lower()


@dataclass(frozen=True)
class RetrieverSpec:
    """What a published row's retriever ran: r2med's retriever, the published value of every score-changing
    field of its options type, the facts its runs record beside them, how many documents per query it kept, and
    its expansion (method, LLM: the hub's file), if any."""

    retriever: str
    options: Mapping[str, Published]
    facts: Mapping[str, Published] = field(default_factory=dict)
    top_k: Published = Published(at_least=HEADLINE_DEPTH)
    expansion: tuple[str, str] | None = None
    #: the family whose own settings for the model its runs ran (``bright``: BRIGHT's ``configs/<model>/<task>.json``
    #: and ``retrievers.py``, recorded as ``config["settings"]``), and that family's name for the model; None: the
    #: preset's own
    family_settings: tuple[str, str] | None = None


@dataclass(frozen=True)
class ImportedRun:
    """A first stage made elsewhere that a published row reranked: one run file per task, each by its SHA-256 (as
    ``r2med import`` records it: ``config.imported.sha256``)."""

    name: str
    sha256: Mapping[str, str]
    #: where the files are (repository, commit, path with ``<Task>``)
    source: str

    def accepts(self, sha256: object, task: str | None) -> bool:
        return sha256 == self.sha256.get(task) if task is not None else sha256 in self.sha256.values()


@dataclass(frozen=True)
class RerankSpec:
    """What a published reranked row ran: the reranker, the published value of every score-changing field of its
    options type, the depth it reranked and the first stage it reranked."""

    reranker: str
    options: Mapping[str, Published]
    depth: int
    first_stage: RetrieverSpec | ImportedRun


@dataclass(frozen=True)
class PublishedSpec:
    """One published row and the spec its figures were made with (rows keyed by benchmark family and system)."""

    family: str
    key: PublishedKey
    step: RetrieverSpec | RerankSpec


class PublishedTable(Protocol):
    """A family's published figures as r2med grades them: which configurations have figures r2med can run (their
    figures, settings, sources and tolerance classes: :class:`~r2med.results.published.PublishedKey`), the spec
    each was made with, which run names which row, on which data a figure may be graded, and what may not be graded
    and why.  A family that publishes figures answers :meth:`Publishes.published` with one (hashable: the specs
    built from it are kept)."""

    #: the settings ``r2med reproduce`` covers on the family's tasks (its per-task figures), in the table's order
    settings: tuple[str, ...]
    #: the ``--top-k`` a reproduction of its retriever figures runs with (None: the task's protocol's depth)
    run_depth: int | None
    #: whether an expanded configuration's queries come with the task's data (read at the data's commit and
    #: planned with it) or from their own files (a local folder's or the hub's expansion files)
    expansions_with_data: bool

    def __hash__(self) -> int: ...

    def targets(
        self, settings: tuple[str, ...], retrievers: Iterable[str] | None, tasks: list[str] | None
    ) -> list[Target]:
        """The per-task figures of ``settings`` (of :attr:`settings`; others are ignored) on ``tasks`` (r2med's
        names; None: every task), for ``retrievers`` (r2med's names or the table's; None: all) -- what ``r2med
        reproduce`` runs and grades."""
        ...

    def no_targets(self, retrievers: Iterable[str], settings: tuple[str, ...], tasks: list[str] | None) -> str:
        """The one line ``reproduce`` answers when ``retrievers`` have no per-task figure in ``settings``."""
        ...

    def unpublished(self, settings: tuple[str, ...] | None) -> list[tuple[str, str]]:
        """(record, why) of r2med's records for the family's later work that no figure grades, listed beside a
        reproduction of ``settings`` (None: all of :attr:`settings`)."""
        ...

    def unreproduced(self, settings: tuple[str, ...] | None) -> list[tuple[str, str]]:
        """(configuration, why ``reproduce`` has no target for it) of the rows a reproduction of ``settings``
        (None: all of :attr:`settings`) leaves out."""
        ...

    def query_builder(
        self, key: PublishedKey, folders: list[Path], revision: str | None
    ) -> ExpansionQueries | ReasoningQueries | None:
        """What builds the queries of the expanded configuration ``key`` (``folders``: local folders to read
        expansion files from; ``revision``: ``--revision``), or None: the table has no expansions."""
        ...

    def configurations(self) -> tuple[PublishedKey, ...]:
        """Every configuration with a figure r2med can run (what may be graded), in the table's order."""
        ...

    def spec(self, key: PublishedKey) -> RetrieverSpec | RerankSpec | None:
        """The spec ``key``'s figures were made with (None: r2med has no record to run it)."""
        ...

    def by_label(self, label: str) -> PublishedKey | None:
        """The configuration r2med's label names (``bm25``, ``nv+hyde-gpt4``, ``sfr+reason-gpt4``), if any."""
        ...

    def examples(self) -> tuple[str, ...]:
        """Labels an error message offers."""
        ...

    def key_for(self, retriever: str, method: str, llm: str) -> PublishedKey | None:
        """The configuration a run of r2med's ``retriever`` with expansion ``method:llm`` (``none``) names."""
        ...

    def rerank_candidates(
        self, rows: Mapping[PublishedKey, RerankSpec], first: str, step: RerankStep
    ) -> list[PublishedKey]:
        """The reranked rows (of ``rows``: those of the run's reranker) a rerank of r2med's ``first`` run names."""
        ...

    def data_problem(
        self, task: str, run: RunData, key: PublishedKey | None = None, measure: Measure = HEADLINE
    ) -> str | None:
        """Why the data one task folder recorded (``run``: its record's typed view of its data -- counts, source,
        revision, fingerprints, protocol, the expansion it read) is not the data ``key``'s figure on ``task`` was
        made on (no key: the data the family's figures are made on), or None when it is; a figure whose data no
        source shows is never graded (:mod:`r2med.results.data_states`)."""
        ...

    def settings_dtype(self, model: str) -> tuple[str | None] | None:
        """(the precision the family's code ran its model ``model`` in; None: none stated), or None: no such model."""
        ...

    def not_reproducible(self) -> list[tuple[str, str, int]]:
        """(configuration, why r2med cannot run it, how many figures) for every row that is never graded."""
        ...


@runtime_checkable
class Publishes(Protocol):
    """A family with published figures (:class:`r2med.data.benchmarks.Benchmark` plus this)."""

    name: str
    title: str

    def published(self) -> PublishedTable: ...


def default_family() -> str:
    """The family whose rows grade a run of a task of no family (a local folder): the one ``--tasks`` means when
    it is not given (R2MED)."""
    default = aliases()[DEFAULT][0]
    family = benchmark_of(default)
    assert family is not None
    return family.name


def family_of(task: str | None) -> str:
    """The family whose rows grade a run of ``task``: its own family, else :func:`default_family`."""
    try:
        family = benchmark_of(task) if task else None
    except OptionError:
        family = None
    return family.name if family is not None else default_family()


def table_of(family: str) -> PublishedTable | None:
    """Family ``family``'s published table (None: it publishes none)."""
    found = benchmark(family)
    return found.published() if isinstance(found, Publishes) else None


def published_labels(label: str) -> list[PublishedKey]:
    """The configurations r2med's label names, one per family whose table has it (``bm25``: R2MED's and BRIGHT's),
    in the registry's order."""
    found = (family.published().by_label(label) for family in publishing())
    return [key for key in found if key is not None]


def published_label(label: str, tasks: Iterable[str] = ()) -> PublishedKey | None:
    """The configuration r2med's label names: the one whose figures cover any of ``tasks`` (a system's; BRIGHT's
    ``bm25`` for a run of BRIGHT's tasks), else the first family's that has it."""
    keys = published_labels(label)
    wanted = set(tasks)
    return next((k for k in keys if wanted & k.all_graded_tasks()), keys[0] if keys else None)


def label_examples() -> tuple[str, ...]:
    """Labels an error message offers, every family's."""
    return tuple(dict.fromkeys(e for family in publishing() for e in family.published().examples()))


def publishing() -> list[Publishes]:
    """The families with a published table, in the registry's order."""
    return [b for b in benchmarks() if isinstance(b, Publishes)]


@dataclass(frozen=True)
class Grade:
    """How a run grades: ``key``, the row it is graded against (None: none); ``row``, the published row it names
    (its retriever, expansion, reranker and first stage); ``reason``, when it names a row but is not graded
    against it, why -- the fields that differ, in one line."""

    key: PublishedKey | None = None
    row: PublishedKey | None = None
    reason: str | None = None
    #: the checkpoint the user claimed a local folder holds (``model_claim``, ``org/name[@commit]``), when the grade
    #: rests on that claim: every output marks such a grade "on your claim" (r2med did not verify the weights)
    claim: str | None = None

    def reason_for(self, tasks: Iterable[str]) -> str | None:
        """:attr:`reason`, when one of ``tasks`` has a figure in the row it names (a collection of your own under
        another name has no published figure to withhold)."""
        if self.reason is None or self.row is None:
            return None
        figures = self.row.all_graded_tasks()
        return self.reason if any(task in figures for task in tasks) else None


# -- the published specs, from the records ------------------------------------------------------------------


def retriever_spec(key: PublishedKey, top_k: Published) -> RetrieverSpec | None:
    """The spec of a published row's retriever (its first stage, when reranked) kept to depth ``top_k``."""

    meta = RETRIEVERS.get(key.system)
    if meta is None:
        return None
    family = key.family_settings
    own = _preset_settings(key.system) if family is None else _family_own_settings(family[0], key.system)
    options: dict[str, Published] = {}
    for name in score_fields(meta.options):
        checkpoint = by_checkpoint(meta.options, name)
        if name in meta.paper:  # an option the type always holds must be it; one left unset is the preset's own
            value = meta.paper[name]
            options[name] = Published((value,) if name in meta.defaults else (None, value), checkpoint)
        elif name == "analyzer":  # both analyzers make Lucene's EnglishAnalyzer tokens (README: identical lists)
            options[name] = Published(tuple(ANALYZERS))
        elif name in meta.defaults:  # a value the options type always holds (BM25's, MedCPT's)
            options[name] = Published((meta.defaults[name],), checkpoint)
        elif name in own:
            options[name] = Published((None, own[name]), checkpoint)
        else:
            options[name] = Published()
    facts = {name: Published((value,)) for name, value in meta.paper.items()}
    if meta.family == "dense":
        facts["search"] = Published(("exact",))
    expansion = (key.expansion, key.llm) if key.expanded else None
    return RetrieverSpec(key.system, options, facts, top_k, expansion, family)


def _family_own_settings(family: str, name: str) -> dict[str, object]:
    """A family's task-independent settings for preset ``name`` as its options name them (what
    ``_preset_settings`` is for the preset's own): the checkpoint the family's code loaded, its loader, pooling,
    lengths, normalisation and framing, and its similarity; the instructions are per task (compared with what the
    run recorded)."""
    found = benchmark(family)
    settings = found.model_settings(name, found.task_names()[0])
    if settings is None:
        return {}
    keep = ("pooling", "normalize", "max_length", "query_max_length", "append_eos", "doc_as_pair", "loader", "framing")
    own: dict[str, object] = {k: settings.encoder[k] for k in keep if k in settings.encoder}
    if settings.checkpoint:
        own["model"] = settings.checkpoint
    own["similarity"] = settings.similarity or "cosine"
    return own


def _preset_settings(name: str) -> dict[str, object]:
    """A dense preset's own encoder settings that do not depend on the task (what its options leave unset), as
    the options name them; {} for a retriever that is no preset."""
    try:
        preset = get_preset(name)
    except R2MedError:
        return {}
    settings = preset.settings("Biology").key()  # a task whose instructions every preset has (they are left out)
    keep = ("pooling", "normalize", "max_length", "query_max_length", "expansion_instruction", "append_eos")
    own: dict[str, object] = {k: settings[k] for k in (*keep, "doc_as_pair", "loader", "framing") if k in settings}
    if not preset.query_hub_id:  # MedCPT: a model given replaces both encoders, never the published pair
        own["model"] = preset.hub_id
    own["similarity"] = preset.similarity
    return own


def rerank_spec(key: PublishedKey) -> RerankSpec | None:
    """The spec of a published reranked row whose reranker's record says how it was published."""

    name = key.reranker_name
    meta = RERANKERS.get(name) if name else None
    if meta is None or name is None:
        return None
    options = {
        field_name: Published(
            (None, meta.published_options[field_name]) if field_name in meta.published_options else (None,),
            by_checkpoint(meta.options, field_name),
        )
        for field_name in score_fields(meta.options)
    }
    depth = published_depth(name)
    published = meta.provenance.get("published")
    run = published.get("first_stage_run") if isinstance(published, dict) else None
    first: RetrieverSpec | ImportedRun | None
    if isinstance(run, Mapping):
        where = f"{run['repository']} {run['file']}@{run['commit']}"
        sha256 = text_object(run["sha256"])  # task -> the run file's SHA-256 (later_models.json: text only)
        if sha256 is None:  # pragma: no cover - package data, checked by its tests
            raise ValueError(f"later_models.json: {name}'s first_stage_run sha256 is not task -> text")
        first = ImportedRun(str(run["name"]), sha256, where)
    else:
        first = retriever_spec(PublishedKey(key.retriever), Published(at_least=depth))
    return None if first is None else RerankSpec(name, options, depth, first)


@cache
def published_specs(table: PublishedTable) -> dict[PublishedKey, PublishedSpec]:
    """Every configuration of a family's published ``table`` r2med can run, with the spec it was made with (built
    from the records)."""
    specs: dict[PublishedKey, PublishedSpec] = {}
    for key in table.configurations():
        step = table.spec(key)
        if step is not None:
            specs[key] = PublishedSpec(key.family, key, step)
    return specs


# -- the data and precision a run is graded on ------------------------------------------------------------------


def data_problem(task: str, run: RunData, key: PublishedKey | None = None, measure: Measure = HEADLINE) -> str | None:
    """Why the data one task folder recorded (``run``: :meth:`r2med.runs.record.RunRecord.run_data`, or a job's
    :attr:`r2med.results.folders.TaskResult.data`: ``data`` counts, ``source``, ``revision``...) is not the data
    ``key``'s published figure on ``task`` was made on (no key: the family's), or None when it is: its family's
    table says (:meth:`PublishedTable.data_problem`; a task of no family: :func:`default_family`'s)."""
    table = table_of(family_of(task))
    return table.data_problem(task, run, key, measure) if table is not None else f"{task}: no published figures"


def require_labels(label: str) -> list[PublishedKey]:
    """The configurations r2med's label names in every family's table (:func:`published_labels`), or a one-line
    error offering every family's labels."""
    keys = published_labels(label)
    if not keys:
        raise R2MedError(f"no published figures for {label!r}; use e.g. {', '.join(label_examples())}")
    return keys


def precision_change(config: RecordedConfig) -> tuple[str, str] | None:
    """(precision used, the published one) when a run's recorded precision differs from the published, else
    None.  A retriever's CPU fallback (its record's ``cpu_dtype``, as its published code falls back on a CPU)
    is the published precision too."""

    found: list[tuple[str | None, str | None, object]] = []  # (published precision, CPU fallback, used)
    encoder = config.encoder
    family = family_settings_dtype(config)
    if encoder is not None and encoder.dtype is not None and family is not None:
        found.append((family[0], None, encoder.dtype))  # a family's own precision (BRIGHT's), no CPU fallback
    elif encoder is not None and encoder.dtype is not None:
        retriever_meta = RETRIEVERS.get(config.retriever or "")
        also = getattr(retriever_meta, "cpu_dtype", None)
        found.append((retriever_meta.paper_dtype if retriever_meta is not None else None, also, encoder.dtype))
    reranker = config.reranker
    options = config.options if config.step == "rerank" else None
    asked: object = options.get("dtype") if options is not None else None  # a reranker whose record has none
    if reranker is not None and (reranker.dtype or asked) is not None:
        reranker_meta = RERANKERS.get(reranker.reranker or "")
        used = reranker.dtype or asked
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


def family_settings_dtype(config: RecordedConfig) -> tuple[str | None] | None:
    """(the precision its family's code ran the model in, None: none stated) when a run ran a family's own settings
    (``config.settings``: BRIGHT's for its model), else None: the preset's own."""
    settings = config.settings
    if settings is None or settings.family is None or not settings.model:
        return None
    try:
        table = table_of(settings.family)
    except OptionError:
        return None
    return table.settings_dtype(settings.model) if table is not None else None


def nonpaper_precision(config: RecordedConfig | None) -> str | None:
    """``"bf16 (paper: fp32)"`` when a run's recorded precision differs from the paper's, else None."""
    change = precision_change(config) if config is not None else None
    return None if change is None else f"{change[0]} (paper: {change[1]})"


# -- a recorded config compared with them ---------------------------------------------------------------------


def _options_differences(published: Mapping[str, Published], options: Spec | Mapping[str, object]) -> list[str]:
    out = []
    for name, pub in published.items():
        value = options.get(name) if isinstance(options, Mapping) else getattr(options, name, None)
        if not pub.accepts(value):
            out.append(f"{name} {_word(value) if value is not None else 'not set'}, published {pub.words()}")
    return out


def _as_claimed(values: Mapping[str, object], names: Iterable[str], folder: object, claim: str) -> dict[str, object]:
    """``values`` with each of the checkpoint fields ``names`` that holds the claimed ``folder`` read as the
    checkpoint the user claims it holds (``claim``'s hub id): a reranker's tokenizer, when it is the model's
    folder, is that folder's files too."""
    repo = claim.partition("@")[0]
    return {k: repo if k in names and v == folder else v for k, v in values.items()}


def _claim_words(differences: list[str], names: Iterable[str], folder: object, claim: str) -> list[str]:
    """``differences`` with each checkpoint field compared as the claim named by its folder and the claim
    (``model /models/x claimed as BAAI/bge-large-en-v1.5, published facebook/contriever-msmarco``)."""
    repo = claim.partition("@")[0]
    out = []
    for d in differences:
        name = next((n for n in names if d.startswith(f"{n} {repo},")), None)
        out.append(f"{name} {folder} claimed as {d[len(name) + 1 :]}" if name is not None else d)
    return out


def _retriever_differences(
    spec: RetrieverSpec, step: EvaluateStep, config: RecordedConfig, task: str | None
) -> list[str]:
    claim = claimed_checkpoint(config)
    folder = getattr(step.options, "model", None)
    options: Spec | dict[str, object] = step.options
    if claim is not None:  # the folder compared as the checkpoint the user claims it holds
        options = {name: getattr(step.options, name, None) for name in spec.options}
        options = _as_claimed(options, ("model",), folder, claim)
    out = _options_differences(spec.options, options)
    if claim is not None:
        out = _claim_words(out, ("model",), folder, claim)
    for name, pub in spec.facts.items():  # what the run recorded it computed (any schema version)
        value = config.fact(name)
        if value is not None and not pub.accepts(value) and name not in _named(out):
            out.append(f"{name} {_word(value)}, published {pub.words()}")
    if step.top_k is not None and not spec.top_k.accepts(step.top_k):  # not set: the task's protocol depth (100)
        out.append(f"top_k {step.top_k}, published {spec.top_k.words()}")
    if spec.family_settings is not None:
        out += _family_settings_differences(spec, config, task)
    if spec.expansion is not None and spec.expansion[0] == REASON:
        out += _reasoning_differences(spec.expansion, config)
    elif spec.expansion is not None:
        out += _expansion_differences(spec.expansion, config, task)
    elif config.expansion is not None:  # a first stage whose row has none
        recorded = ExpansionName(str(config.expansion.method), str(config.expansion.llm))
        out.append(f"expansion {recorded.text}, published none")
    return list(dict.fromkeys(out))


def _family_settings_differences(spec: RetrieverSpec, config: RecordedConfig, task: str | None) -> list[str]:
    """Why a run did not run the family's own settings a published row ran (BRIGHT's for its model): the settings it
    recorded (``config["settings"]``), and -- for a vector model on a known task -- every encoder setting it recorded
    (``config["encoder"]``: instructions as BRIGHT fills them, lengths, pooling...) against the family's for that
    task (the precision apart: its own rule)."""
    assert spec.family_settings is not None
    family, model = spec.family_settings
    published = f"{family.upper()}'s {model}"
    recorded = config.settings
    if recorded is None:
        return [f"settings not recorded (the preset's own), published {published}"]
    if (recorded.family, recorded.model) != (family, model):
        whose = f"{recorded.family}'s {recorded.model or spec.retriever}"
        return [f"settings {whose}, published {published}"]
    encoder = config.encoder.as_json() if config.encoder is not None else None
    if task is None or encoder is None:
        return []
    expected = _family_encoder(spec.retriever, task)
    claim = claimed_checkpoint(config)
    out = []
    for name, value in expected.items():
        if name in ("dtype", "model_revision", "query_model", "expansion_instruction", "trust_remote_code"):
            continue  # the precision has its own rule; an option set is compared above; no query is expanded
        got = claim.partition("@")[0] if name == "model" and claim else encoder.get(name)
        same = checkpoint_name(str(got)) == checkpoint_name(str(value)) if name == "model" else _same(got, value)
        if not same:
            out.append(f"encoder {name} {_word(got) if got is not None else 'not set'}, published {_word(value)}")
    return out


def _family_encoder(retriever: str, task: str) -> dict[str, object]:
    """The encoder settings preset ``retriever`` runs on ``task`` with its family's settings and no option set."""

    try:
        family = benchmark_of(task)
        settings = family.model_settings(retriever, task) if family is not None else None
        if settings is None or not settings.encoder:
            return {}
        key: dict[str, object] = dict(get_preset(retriever).settings(task, family=settings).key())
    except R2MedError:
        return {}
    return key


def _reasoning_differences(expansion: tuple[str, str], config: RecordedConfig) -> list[str]:
    """Why a run's queries are not BRIGHT's reasoning set ``expansion`` as its hub holds it at the pinned commit (or
    at another commit the hub's record shows holding the same upload of it)."""

    _, llm = expansion
    recorded = config.expansion
    if recorded is None:
        return [f"expansion none, published {ExpansionName(REASON, llm).text}"]
    out = []
    if recorded.rule not in (None, "replace"):
        out.append(f"expansion rule {_word(recorded.rule)}, published replace (the reasoning replaces the query)")
    file = recorded.file
    hub = bright.hub()
    pin = hub.revision
    commit = snapshot_commit(file) if file is not None else None
    folder = reasoning_config(llm)
    pinned = data_states.content(hub.repo_id, pin, folder)  # another commit holding the same upload is the same set
    if commit != pin and (pinned is None or data_states.content(hub.repo_id, commit, folder) != pinned):
        where = f"hub commit {commit[:12]}" if commit else f"{file or '(unrecorded)'}"
        out.append(f"expansion read from {where}, published: the hub's {llm} reasoning set at {pin[:12]}")
    return out


def _expansion_differences(expansion: tuple[str, str], config: RecordedConfig, task: str | None) -> list[str]:
    """Why a run's expansion is not the hub's file of ``expansion`` (method, LLM), if it is not."""

    method, llm = expansion
    recorded = config.expansion
    if recorded is None:
        return []
    out = []
    if recorded.trace not in (None, "auto"):
        out.append(f"expansion trace {_word(recorded.trace)}, published auto (by the LLM's name)")
    if recorded.rule not in (None, COMBINATION_RULE):
        out.append(f"expansion rule {_word(recorded.rule)}, published {COMBINATION_RULE}")
    where = f" of {task}" if task else ""
    file = recorded.file
    name = file if file else "(unrecorded)"
    if read_from_hub(recorded):
        commit = snapshot_commit(file) if file is not None else None
        default = _expansion_commit(task, method, llm)
        if commit and default and commit != default:
            out.append(f"expansion read at hub commit {commit[:12]}, published: the hub's file at {default[:12]}")
        return out
    fingerprint = config.expansion_fingerprint
    hub_file = f"the hub's {method}/{llm} file{where}"
    if fingerprint is None:
        out.append(
            f"expansion file {name} with no recorded fingerprint (made before r2med recorded one), published {hub_file}"
        )
        return out
    known = _hub_fingerprints(task, method, llm)
    if fingerprint not in known:
        seen = (
            f"r2med verified that file as {', '.join(sorted(k[:12] for k in known))}"
            if known
            else "r2med has verified no copy of it here: it records each one it downloads"
        )
        out.append(f"expansion file {name} (fingerprint {fingerprint[:12]}), published {hub_file} ({seen})")
    return out


def _expansion_commit(task: str | None, method: str, llm: str) -> str | None:
    """The hub commit r2med reads ``task``'s ``method:llm`` expansions from by default (None: task unknown)."""

    if task is None or task not in TASKS:
        return None
    try:
        return task_revision(task, None, [ExpansionName(method, llm)])[0]
    except R2MedError:
        return None


def _hub_fingerprints(task: str | None, method: str, llm: str) -> set[str]:
    """The content fingerprints r2med recorded of the hub's ``method:llm`` file of ``task`` (None: any R2MED task)
    at the commit it reads it from by default."""

    try:
        path = expansion_path(method, llm)
    except R2MedError:
        return set()
    found: set[str] = set()
    for name, spec in TASKS.items():
        commit = _expansion_commit(name, method, llm)
        if (task is None or name == task) and commit is not None:
            found |= hub_fingerprints(spec.hub_id, commit, path)
    return found


def _grade_evaluate(config: RecordedConfig, task: str | None) -> Grade:
    step = evaluate_from_record(config)
    if step is None:
        return Grade()
    expansion = config.expansion
    method, llm = ("none", "none") if expansion is None else (str(expansion.method), normalize_llm(str(expansion.llm)))
    table = table_of(family_of(task))
    key = table.key_for(step.retriever, method, llm) if table is not None else None
    spec = published_specs(table).get(key) if table is not None and key is not None else None
    if spec is None or not isinstance(spec.step, RetrieverSpec):
        return Grade()
    return _graded(spec.key, _retriever_differences(spec.step, step, config, task))


def _graded(key: PublishedKey, differences: list[str]) -> Grade:
    if not differences:
        return Grade(key, key)
    return Grade(None, key, f"not the published {key.title}: {'; '.join(differences)}")


def _first_stage(config: RecordedConfig) -> RecordedConfig | None:
    return config.first_stage.config if config.first_stage is not None else None


def _grade_rerank(config: RecordedConfig, task: str | None) -> Grade:
    step = rerank_from_record(config)
    meta = RERANKERS.get(step.reranker_name) if step is not None else None
    first = _first_stage(config)
    if step is None or meta is None or first is None:
        return Grade()
    table = table_of(family_of(task))
    if table is None:
        return Grade()
    rows = {
        k: s.step
        for k, s in published_specs(table).items()
        if isinstance(s.step, RerankSpec) and s.step.reranker == meta.name
    }
    kind = first.step
    first_step = evaluate_from_record(first) if kind == "evaluate" else None
    if first_step is not None:
        candidates = table.rerank_candidates(rows, first_step.retriever, step)
    elif kind == "import":
        candidates = [k for k, s in rows.items() if isinstance(s.first_stage, ImportedRun)]
    else:
        return Grade()
    if len(candidates) != 1:
        return Grade()
    key = candidates[0]
    spec = rows[key]
    # a local model folder the user claimed to hold a checkpoint is compared as that checkpoint (on the claim)
    claim = claimed_checkpoint(config)
    folder = getattr(step.options, "model", None)
    checkpoints = tuple(name for name in spec.options if by_checkpoint(meta.options, name))
    options: Spec | dict[str, object] = step.options
    if claim is not None:
        options = _as_claimed(
            {name: getattr(step.options, name, None) for name in spec.options}, checkpoints, folder, claim
        )
    out = _options_differences(spec.options, options)
    block = config.reranker
    if block is not None:  # what the options resolved to, as the run recorded it (any schema version)
        resolved: dict[str, object] = {k: v for k, v in block.as_json().items() if k in spec.options}
        if claim is not None:
            resolved = _as_claimed(resolved, checkpoints, folder, claim)
        out += [d for d in _options_differences(spec.options, resolved) if d.split(" ", 1)[0] not in _named(out)]
    if claim is not None:
        out = _claim_words(out, checkpoints, folder, claim)
    if step.depth() != spec.depth:
        out.append(f"depth (top_k) {step.depth()}, published {spec.depth}")
    out += _first_stage_differences(spec.first_stage, first, first_step, task)
    return _graded(key, list(dict.fromkeys(out)))


def _named(differences: list[str]) -> set[str]:
    return {d.split(" ", 1)[0] for d in differences}


def _first_stage_differences(
    spec: RetrieverSpec | ImportedRun, first: RecordedConfig, first_step: EvaluateStep | None, task: str | None
) -> list[str]:
    """Why a reranked run's first stage (its recorded ``config``) is not the one the published row reranked."""
    if isinstance(spec, ImportedRun):
        sha256 = first.imported.sha256 if first.imported is not None else None
        if first_step is not None:
            what = f"r2med's {first_step.retriever} run"
        elif spec.accepts(sha256, task):
            return []
        else:
            what = f"an imported run (sha256 {str(sha256)[:12]}{f' for {task}' if task else ''})"
        own = spec.sha256.get(task) if task is not None else None
        published = f"sha256 {own[:12]}" if own else "sha256 per task"
        return [
            f"first stage {what}, published {spec.name} ({spec.source}, {published}: r2med import it, then rerank that)"
        ]
    if first_step is None:
        return [f"first stage an imported run, published r2med's {spec.retriever} run"]
    inner = _retriever_differences(spec, first_step, first, task)
    return [f"first stage {d}" for d in inner]


def grade(config: RecordedConfig | None, task: str | None = None, encoding: JsonObject | None = None) -> Grade:
    """How one task's recorded ``config`` grades (see the module docstring); ``task`` (the task it ran) checks what
    is per task -- the expansion file, an imported first stage's file -- against that task's (None: any task's);
    ``encoding``: what the record says its model ran with (``metrics.json``'s ``encoding``: the precision the weights
    ran in and the one the checkpoint declares, read by the rule for rows loaded with ``torch_dtype="auto"``).
    None (a record with no config) grades as nothing."""
    if config is None:
        return Grade()
    if task is None:  # a run of a family's task says which in its settings record (BRIGHT's tasks: theirs)
        task = _recorded_task(config)
    if config.judgments is not None:  # judged with a file in place of the task's own (--qrels): the
        return Grade()  # published figures were made with the task's own judgments
    kind = config.step
    if kind == "evaluate":
        graded = _with_ties(_with_precision(_grade_evaluate(config, task), config, encoding), config)
    elif kind == "rerank":
        graded = _with_ties(_with_precision(_grade_rerank(config, task), config), config)
    else:
        return Grade()  # a fused or imported run is no published configuration
    claim = claimed_checkpoint(config) or claimed_checkpoint(_first_stage(config))
    return Grade(graded.key, graded.row, graded.reason, claim) if claim and graded.key is not None else graded


def _with_ties(graded: Grade, config: RecordedConfig) -> Grade:
    """``graded``, unless the run (or the imported first stage it reranked) was scored with another tie rule than the
    published figures were (``config.ties``, recorded by ``--ties listed``; every published row r2med grades against
    was scored by trec_eval's rule: :data:`r2med.evaluation.ties.PUBLISHED_TIE_RULE`): a figure is graded only
    against figures made the same way."""
    first = _first_stage(config)
    rule = config.ties or (first.ties if first is not None else None) or PUBLISHED_TIE_RULE  # a reranked import's
    if graded.key is None or rule == PUBLISHED_TIE_RULE:
        return graded
    return Grade(
        None,
        graded.key,
        f"not the published {graded.key.title}: scored with ties broken in the run's {rule} order (--ties {rule}); "
        f"the published figures were scored by {PUBLISHED_TIE_RULE}'s rule",
    )


def _recorded_task(config: RecordedConfig) -> str | None:
    """The task a family's settings record names (``config.settings.task``, its first stage's when reranked),
    when it is a family's task (``bright:biology``); else None."""
    for record in (config, _first_stage(config)):
        task = record.settings.task if record is not None and record.settings is not None else None
        if task is not None and benchmark_of(task) is not None:
            return task
    return None


#: Precision classes: within one (fp16, bf16: half precision) a run stays graded, with a wider tolerance
#: (:func:`~r2med.results.published.precision_change`); across them (fp32 where the paper ran half precision, or
#: the reverse) it is another computation and is not graded.  ``auto`` (the checkpoint's own precision, as the
#: published code loaded it) names no class r2med can tell from the record: such a row keeps the wider tolerance.
PRECISION_CLASSES = {"fp32": "full (fp32)", "fp16": "half", "bf16": "half", "fp16-autocast": "half"}


def precision_class(dtype: str) -> str:
    """The class of a canonical precision (``bf16`` -> ``half``); an unknown one is its own class."""
    return PRECISION_CLASSES.get(dtype, dtype)


def _with_precision(graded: Grade, config: RecordedConfig, encoding: JsonObject | None = None) -> Grade:
    """``graded``, unless the run's recorded precision is of another class than the published one (a CPU fallback
    the published code takes is the published precision: :func:`~r2med.results.published.precision_change`); a row
    whose code loaded its checkpoint with ``torch_dtype="auto"``: :func:`_auto_precision_problem`."""
    if graded.key is None:
        return graded
    auto = _auto_precision_problem(config, encoding)
    if auto is not None:
        return Grade(None, graded.key, f"not the published {graded.key.title}: {auto}")
    change = precision_change(config)
    if change is None or "auto" in change or precision_class(change[0]) == precision_class(change[1]):
        return graded
    used, paper = change
    return Grade(
        None,
        graded.key,
        f"not the published {graded.key.title}: dtype {used}, published {paper} "
        f"({precision_class(used)} precision, published {precision_class(paper)})",
    )


def published_dtype(config: RecordedConfig) -> tuple[str, str] | None:
    """(the precision the published code ran a dense run's retriever in, who ran it: ``BRIGHT``, ``the paper's
    code``) -- its family's settings' (:func:`family_settings_dtype`) or its registry record's ``paper_dtype`` --
    or None: not a dense run, or none stated."""
    if config.encoder is None:
        return None
    family = family_settings_dtype(config)
    settings = config.settings
    if family is not None and settings is not None:
        return (family[0], str(settings.family or "").upper()) if family[0] else None
    meta = RETRIEVERS.get(config.retriever or "")
    return (meta.paper_dtype, "the paper's code") if meta is not None and meta.paper_dtype else None


def _auto_precision_problem(config: RecordedConfig, encoding: JsonObject | None) -> str | None:
    """Why a dense run is not in the precision class of a published row whose code loaded its checkpoint with
    ``torch_dtype="auto"`` (BRIGHT's and R2MED's GritLM), or None when it is (or the row's precision is another).

    ``auto`` loads the precision the checkpoint's ``config.json`` declares; r2med records at load both that
    declaration (``encoding.declared_dtype``) and the precision the weights ran in (``encoding.weights``,
    :meth:`r2med.retrieval.dense.DenseRetriever.encoding_facts`).  The run is in the published class when the two
    are of one class (:func:`precision_class`: fp32 full; fp16 and bf16 half, the wider tolerance within it); a
    record without them (made before r2med recorded them, or with every vector read from the embedding cache) is
    not graded: its precision is unknown."""
    published = published_dtype(config)
    if published is None or published[0] != "auto":
        return None
    model = claimed_checkpoint(config) or (config.encoder.model if config.encoder is not None else None)
    who = f"{published[1]} ran {model or 'the model'} in the precision its checkpoint declares (torch_dtype auto)"
    facts = encoding or {}
    weights, declared = facts.get("weights"), facts.get("declared_dtype")
    if not isinstance(weights, str) or not isinstance(declared, str):
        return (
            "precision unknown: the record names no weight precision and checkpoint-declared precision (made before "
            f"r2med recorded them, or with every vector from the embedding cache); {who}"
        )
    try:
        ran, own = precision_class(canonical_dtype(weights)), precision_class(canonical_dtype(declared))
    except R2MedError:
        ran, own = weights, declared
    if ran == own:
        return None
    return f"ran in {weights}; {published[1]} ran {model or 'the model'} as its checkpoint declares ({declared})"


def grade_system(
    configs: Mapping[str, RecordedConfig | None] | Iterable[RecordedConfig | None],
    encodings: Mapping[str, JsonObject | None] | None = None,
) -> Grade:
    """How a system grades from what each of its tasks recorded (task -> ``config``, or configs alone; ``encodings``:
    task -> ``metrics.json``'s ``encoding``): graded against a row when every task is; when every task names one row
    but one is not the published spec, not graded, with the first reason; else nothing."""
    pairs = list(configs.items()) if isinstance(configs, Mapping) else [(None, c) for c in configs]
    found = encodings or {}
    grades = [grade(config, task, found.get(task) if task is not None else None) for task, config in pairs]
    if not grades:
        return Grade()
    rows = {g.row for g in grades}
    if len(rows) != 1 or None in rows:
        return Grade()
    reasons = [g.reason for g in grades if g.reason]
    if reasons:
        return Grade(None, grades[0].row, reasons[0])
    return grades[0]


def match_published(configs: Iterable[RecordedConfig | None]) -> PublishedKey | None:
    """The published configuration a run reproduces: the row every task's recorded spec is (:func:`grade_system`,
    tasks unknown), else None.  Never read from the run's name: a folder named ``contriever`` that ran BM25 is graded
    as BM25, one named ``bm25`` that ran a custom model is not graded."""
    return grade_system(list(configs)).key
