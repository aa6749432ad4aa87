"""The ``Reranker`` protocol, the registry of rerankers by name, and applying one to a run.

A reranker re-orders each query's first-stage candidates: given the query texts, the
candidates in first-stage order (with their first-stage scores, which InsertRank-style
listwise prompts show the LLM) and the corpus, it returns a score per candidate
(higher first).  :func:`rerank` applies it to the top ``k`` of a :data:`~r2med.runs.run.Run`
and, by default, appends the rest of the first-stage list below the reranked head
so that measures deeper than ``k`` (nDCG@100, R@100) stay meaningful; ``keep_tail=False``
gives the paper's "top-k only" evaluation.

Names resolve through a small registry of :class:`RerankerMeta` records (``bge-reranker``,
``monobert``, ``rankllama``, ``listwise``...: a factory and what the reranker needs); any other
name that is a local folder or looks like a hub id (``org/model``) is loaded as a
sequence-classification cross-encoder (the ``cross-encoder`` entry).
"""

from __future__ import annotations

import logging
import numbers
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, TypeVar, runtime_checkable

from ..errors import OptionError, R2MedError, did_you_mean, shown
from ..evaluation.run_scores import check_run_scores
from ..infra.json_types import JsonObject, JsonValue
from ..infra.records import record_from
from ..infra.registry import Registry
from ..protocol.bright import Contamination, contamination_of
from ..retrieval.encoders.base import FramingRecord
from ..runs.run import Run, ranked
from ..typed.parse import Origin, RerankerOptions, parse

log = logging.getLogger(__name__)

Candidates = Mapping[str, Sequence[tuple[str, float]]]
"""query id -> [(doc id, first-stage score), ...] in first-stage order (best first)."""


@runtime_checkable
class Reranker(Protocol):
    name: str

    def rerank(
        self, queries: Mapping[str, str], candidates: Candidates, corpus: Mapping[str, str]
    ) -> dict[str, dict[str, float]]:
        """Scores (higher = better) for every candidate of every query in ``candidates``."""
        ...

    def config(self) -> JsonObject:
        """What ``metrics.json`` records of it (its options resolved, and each reranker's own facts: open JSON)."""
        ...


#: builds a reranker from its options (an instance of its record's ``options`` type: :func:`options_as`)
RerankerFactory = Callable[[RerankerOptions], Reranker]
OptionsT = TypeVar("OptionsT", bound=RerankerOptions)


def options_as(options: RerankerOptions, kind: type[OptionsT]) -> OptionsT:
    """``options`` as the options type ``kind`` its factory reads (:func:`make_reranker` checked it)."""
    if not isinstance(options, kind):
        raise OptionError(f"expected {kind.__name__}, got {type(options).__name__}")
    return options


def options_or_keywords(
    kind: type[OptionsT], options: RerankerOptions | None, keywords: Mapping[str, object], where: str
) -> OptionsT:
    """A reranker's options, read once: ``options`` as parsed (what its registry factory passes, never parsed
    again), or the ``keywords`` its constructor was given in Python, parsed here (None: not set) -- the same typed
    error as on the command line, before anything is built; both at once is refused."""
    if options is None:
        return parse(kind, keywords, Origin.python(where))
    if any(value is not None for value in keywords.values()):
        raise OptionError(f"{where}: pass the options as one {kind.__name__} or as keywords, not both")
    return options_as(options, kind)


@dataclass(frozen=True)
class RerankerMeta:
    """Every fact about one reranker: how to build it and what it needs."""

    name: str
    factory: RerankerFactory  # factory(options) -> Reranker, options: an instance of ``options``
    description: str = ""
    #: the type of its options (:mod:`r2med.typed.options`): what ``r2med rerank``, a ``[[rerank]]`` table and
    #: :func:`make_reranker` may set, with its constraints
    options: type[RerankerOptions] = RerankerOptions
    #: modules it imports, and how to install them
    packages: tuple[str, ...] = ("torch", "transformers")
    install: str = "pip install 'r2med[dense,rerank]'"
    #: too large for a CPU in reasonable time: its size ("7B")
    needs_gpu: str | None = None
    #: the precision the paper's code ran it in (None: not a paper reranker)
    paper_dtype: str | None = None
    #: model weights it loads: option of its ``config()`` naming a model -> a file every such model has
    weights: tuple[tuple[str, str], ...] = (("model", "config.json"),)
    #: an LLM behind an endpoint: ``--model`` names it, and the result is named after it too (unless it
    #: serves the record's own ``hub_id``)
    llm: bool = False
    #: the checkpoint a preset runs (an LLM preset: the model its endpoint should serve)
    hub_id: str | None = None
    #: how deep its published figure reranked, when not the paper's top 10 (ReasonRank: 100): the default
    #: ``--top-k``, required for a run to match the figure, and named in a result folder made at another depth
    depth: int | None = None
    #: the special tokens around each (query, document) input in its published runs (issue 20); None: not a
    #: model whose framing r2med records
    framing: FramingRecord | None = None
    #: the value of each score-changing option in its published runs (what its preset runs: checkpoint, lengths,
    #: label, window...); an option not named here was not set there.  What grading compares a run's options and
    #: resolved record with (:mod:`r2med.results.grading`)
    published_options: Mapping[str, JsonValue] = field(default_factory=dict)
    #: the name of its published figures' reranker in ``protocol/r2med_published_ndcg10.csv`` (the
    #: expansion ``rerank:<published_as>``) when it is not ``name``
    published_as: str | None = None
    #: class of its tolerance to the published figures (:data:`~r2med.infra.registry.TOLERANCES`); None: the
    #: first stage's
    tolerance: str | None = None
    #: published on R2MED after the paper (``r2med models``: "later work"), and where its settings come
    #: from (published row, sources, gaps; ``protocol/later_models.json``)
    later: bool = False
    #: (:func:`~r2med.protocol.later_models.provenance`: the entry's published row, sources, gaps, as JSON)
    provenance: JsonObject = field(default_factory=dict)
    #: whether the first stage's tail may follow its reranked head (``keep_tail``); False: its run is what it
    #: ranks and nothing else, as BRIGHT's rerank.py writes it (a ``keep_tail = true`` is refused, not ignored)
    tail: bool = True

    @property
    def contamination(self) -> tuple[Contamination, ...]:
        """What is known of its training data being rebuilt from a benchmark's documents, looked up by its
        checkpoint (:func:`r2med.protocol.bright.contamination_of`; none of the rerankers here has any)."""
        return contamination_of(self.hub_id)

    @classmethod
    def from_mapping(cls, data: Mapping[str, object]) -> RerankerMeta:
        """The record of ``data`` (field -> value); a key that is no field is an error naming it."""
        return record_from(cls, data, f"reranker {data.get('name')!r}")


#: the built-ins, then (``custom``, last) your own scorer and the packages' entry points (a built-in name wins)
RERANKERS: Registry[RerankerMeta] = Registry(
    "reranker", __package__, ["cross_encoder", "rankllama", "listwise", "qwen3", "reasonrank", "bright", "custom"]
)
#: The entry that builds a cross-encoder from a hub id or local folder given as the reranker's name.
ANY_MODEL = "cross-encoder"


#: Add a reranker's record (a different record under a registered name is an error).
register_reranker = RERANKERS.add
#: Every registered reranker's record by name, in name order.
all_rerankers = RERANKERS.all
#: Name -> description of every registered reranker.
available_rerankers = RERANKERS.descriptions


#: The published reranker rows rerank the first stage's top 10 (setting ``reranker_top_10``).
PUBLISHED_RERANK_DEPTH = 10


def published_depth(reranker: str) -> int:
    """How deep reranker ``reranker``'s published figures reranked: its record's ``depth`` (ReasonRank: 100),
    else the paper's top 10 -- also the default ``r2med rerank --top-k``."""
    meta = RERANKERS.get(reranker)
    return getattr(meta, "depth", None) or PUBLISHED_RERANK_DEPTH


#: Why a reranker without a tail refuses one (``keep_tail``): the one line of :func:`rerank` and the step's parse.
TAIL_REFUSED = (
    "its run holds only the documents it ranks, as BRIGHT's rerank.py writes it; the first stage's tail cannot follow "
    "(keep_tail = false, the default for it)"
)


def looks_like_model(name: str) -> bool:
    """A local model folder (or a path-looking name), or a hub id of the form ``org/model``."""
    if Path(name).expanduser().is_dir() or name.startswith((".", "/", "~")) or name.count("/") > 1:
        return True
    parts = name.split("/")
    return len(parts) == 2 and all(p and not p.startswith(".") and " " not in p for p in parts)


def reranker_meta(name: str) -> RerankerMeta:
    """The record of ``name`` (a model id or folder: the cross-encoder entry)."""
    meta = RERANKERS.get(name) or (RERANKERS.get(ANY_MODEL) if looks_like_model(name) else None)
    if meta is None:
        raise OptionError(
            f"unknown reranker {name!r}{did_you_mean(name, RERANKERS.all())}; "
            f"choose from: {', '.join(RERANKERS.all())}, "
            "or give a cross-encoder's hub id (org/model) or local folder"
        )
    return meta


def make_reranker(name: object, options: RerankerOptions | None = None, **values: object) -> Reranker:
    """Build the reranker registered as ``name``, or a cross-encoder from a model id / folder, with ``options`` (its
    options type) or the keyword ``values`` parsed into it (None: not set): a value it does not take is one typed
    :class:`~r2med.typed.parse.SpecError` naming the argument, before any model loads.

    ``name`` may also be your own scorer (an object with ``score(query, docs)``, or its class or factory):
    the ``custom`` reranker over it (:mod:`r2med.reranking.custom`)."""
    if not isinstance(name, str):
        values = {"scorer": name, **values}
        name = "custom"
    meta = reranker_meta(name)
    if meta.name != name:  # a model id or folder
        values = {"model": name, **values}
    if options is None:
        options = parse(meta.options, values, Origin.python(f"make_reranker({name!r})"))
    elif values and set(values) != {"model"}:
        raise OptionError("make_reranker: pass the options as one options object or as keywords, not both")
    elif not isinstance(options, meta.options):
        raise OptionError(f"make_reranker({name!r}): options must be {meta.options.__name__}")
    return meta.factory(options)


def candidates_of(
    run: Mapping[str, Mapping[str, float]],
    top_k: int,
    queries: Mapping[str, str] | None = None,
    position: Mapping[str, int] | None = None,
) -> dict[str, list[tuple[str, float]]]:
    """Each query's top ``top_k`` docs, best first, ties in corpus order (``position``: doc id -> corpus
    index; :func:`r2med.runs.run.ranked`), as the paper's stable sort takes them.  Queries not in ``queries``
    are skipped.
    """
    return {
        qid: ranked(docs, position)[:top_k] for qid, docs in run.items() if docs and (queries is None or qid in queries)
    }


def rerank(
    run: Mapping[str, Mapping[str, float]],
    queries: Mapping[str, str],
    corpus: Mapping[str, str],
    reranker: Reranker | str,
    top_k: int = 10,
    keep_tail: bool | None = None,
    **options: object,
) -> Run:
    """Rerank each query's top ``top_k`` docs; the rest of the first-stage list follows (unless ``keep_tail=False``;
    None: it follows unless the reranker says ``tail = False``, as BRIGHT's do -- then ``True`` is an error).

    ``reranker`` is a :class:`Reranker` or a name for :func:`make_reranker` (with ``options``).

    Queries without a text in ``queries`` are dropped (counted in a warning).  Candidates tied in
    first-stage score are taken in corpus order (the order of ``corpus``), as the paper's stable
    sort takes them.  The tail keeps its first-stage order with scores strictly below the lowest
    reranked score.

    A reranker that says ``takes_depth`` is given ``depth=top_k`` (BRIGHT's ``--input_k``, which its ``--k``
    defaults to); one that says ``leaves_out`` may score only some candidates: the others leave the run (BRIGHT's
    LLM reranking keeps the documents the LLM names, its cross-encoder the top ``k``).  A query it gives none stays in
    the run as an empty entry: the system answered it with no document, and it scores 0 in every average, as BRIGHT's
    ``rerank.py`` keeps it (``{}``) and pytrec_eval scores it (``run.trec`` cannot hold it: ``metrics.json`` records
    it, ``empty_queries``).
    """
    if isinstance(top_k, bool) or not isinstance(top_k, numbers.Integral) or top_k < 1:
        raise R2MedError(f"the rerank depth (--top-k) must be an integer of at least 1, got {shown(top_k)}")
    top_k = int(top_k)
    for what, texts in (("queries", queries), ("corpus", corpus)):
        if not isinstance(texts, Mapping):
            raise R2MedError(f"rerank: {what} must be a mapping of id -> text, got {shown(texts)}")
    run = check_run_scores(run)  # no run holds a non-finite score: the first stage's, nor the reranker's (below)
    if isinstance(reranker, str):
        reranker = make_reranker(reranker, **options)
    if not callable(getattr(reranker, "rerank", None)):
        raise R2MedError(
            f"rerank: reranker must be a name or a Reranker (make_reranker), got {shown(reranker)}; your own scorer "
            "object: make_reranker(scorer)"
        )
    own_tail = bool(getattr(reranker, "tail", True))
    if keep_tail and not own_tail:
        raise R2MedError(f"{reranker.name}: {TAIL_REFUSED}")
    keep_tail = own_tail if keep_tail is None else keep_tail
    unknown = [q for q in run if q not in queries]
    if unknown:
        log.warning(
            "%d run quer%s have no query text and are skipped (e.g. %r)",
            len(unknown),
            "y" if len(unknown) == 1 else "ies",
            unknown[0],
        )
    position = {did: i for i, did in enumerate(corpus)}
    candidates = candidates_of(run, top_k, queries, position)
    texts = {qid: queries[qid] for qid in candidates}
    if getattr(reranker, "takes_depth", False):
        scores = reranker.rerank(texts, candidates, corpus, depth=top_k)  # its own API (takes_depth)
    else:
        scores = reranker.rerank(texts, candidates, corpus)
    leaves_out = bool(getattr(reranker, "leaves_out", False))
    out: Run = {}
    for qid, head in candidates.items():
        got = scores.get(qid, {})
        missing = [did for did, _ in head if did not in got]
        if missing and not leaves_out:
            raise RuntimeError(
                f"reranker {reranker.name!r} returned no score for {len(missing)} candidate(s) of query {qid!r}"
            )
        reranked = {did: float(got[did]) for did, _ in head if did in got}
        if not reranked:  # answered with no document: an empty entry, scored 0 (BRIGHT's pytrec_eval scores it so)
            out[qid] = {}
            continue
        if keep_tail:
            floor = min(reranked.values())
            for i, (did, _) in enumerate(ranked(run[qid], position)[top_k:], start=1):
                reranked[did] = floor - i
        out[qid] = reranked
    return check_run_scores(out, what=f"reranker {reranker.name!r}:")
