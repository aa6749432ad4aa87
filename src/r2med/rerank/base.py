"""The ``Reranker`` protocol, the registry of rerankers by name, and applying one to a run.

A reranker re-orders each query's first-stage candidates: given the query texts, the
candidates in first-stage order (with their first-stage scores, which InsertRank-style
listwise prompts show the LLM) and the corpus, it returns a score per candidate
(higher first).  :func:`rerank_run` applies it to the top ``k`` of a :data:`~r2med.run.Run`
and, by default, appends the rest of the first-stage list below the reranked head
so that measures deeper than ``k`` (nDCG@100, R@100) stay meaningful; ``keep_tail=False``
gives the paper's "top-k only" evaluation.

Names resolve through a small registry (``bge-reranker``, ``monobert``, ``rankllama``,
``listwise``...); any other name that is a local folder or looks like a hub id
(``org/model``) is loaded as a sequence-classification cross-encoder.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from ..errors import R2MedError
from ..run import Run, ranked

log = logging.getLogger(__name__)

Candidates = Mapping[str, Sequence[tuple[str, float]]]
"""query id -> [(doc id, first-stage score), ...] in first-stage order (best first)."""


@runtime_checkable
class Reranker(Protocol):
    name: str

    def rerank(self, queries: Mapping[str, str], candidates: Candidates,
               corpus: Mapping[str, str]) -> dict[str, dict[str, float]]:
        """Scores (higher = better) for every candidate of every query in ``candidates``."""
        ...

    def config(self) -> dict[str, Any]: ...


RerankerFactory = Callable[..., Reranker]
_REGISTRY: dict[str, tuple[RerankerFactory, str]] = {}

#: Modules that register rerankers when imported (they import heavy libraries lazily).
BUILTIN_MODULES = ["cross_encoder", "rankllama", "listwise", "qwen3", "reasonrank"]


def register_reranker(name: str, factory: RerankerFactory, description: str = "") -> None:
    """Register ``factory(**options) -> Reranker`` under ``name``."""
    if name in _REGISTRY and _REGISTRY[name][0] is not factory:
        raise ValueError(f"reranker {name!r} is already registered")
    _REGISTRY[name] = (factory, description)


def _load_builtin() -> None:
    import importlib
    import importlib.util

    for module in BUILTIN_MODULES:
        name = f"{__package__}.{module}"
        if importlib.util.find_spec(name) is not None:
            importlib.import_module(name)


def available_rerankers() -> dict[str, str]:
    _load_builtin()
    return {name: desc for name, (_, desc) in sorted(_REGISTRY.items())}


def looks_like_model(name: str) -> bool:
    """A local model folder (or a path-looking name), or a hub id of the form ``org/model``."""
    if Path(name).expanduser().is_dir() or name.startswith((".", "/", "~")) or name.count("/") > 1:
        return True
    parts = name.split("/")
    return len(parts) == 2 and all(p and not p.startswith(".") and " " not in p for p in parts)


def make_reranker(name: str, **options: Any) -> Reranker:
    """Build the reranker registered as ``name``, or a cross-encoder from a model id / folder."""
    _load_builtin()
    options = {k: v for k, v in options.items() if v is not None}
    if name in _REGISTRY:
        return _REGISTRY[name][0](**options)
    if looks_like_model(name):
        from .cross_encoder import CrossEncoderReranker

        return CrossEncoderReranker(model=name, **options)
    raise R2MedError(f"unknown reranker {name!r}; choose from: {', '.join(sorted(_REGISTRY))}, "
                     "or give a cross-encoder's hub id (org/model) or local folder")


def first_stage_order(docs: Mapping[str, float], position: Mapping[str, int] | None = None) -> list[tuple[str, float]]:
    """Docs best first; equal scores in corpus order (``position``: doc id -> corpus index).

    The paper's code sorts each query's scores over the corpus with Python's stable ``sorted``
    (``src/eval_BM25.py``, ``save_topk_docs``), so its top-k candidate lists keep corpus order
    among ties; without ``position``, ties fall back to trec_eval's order (doc id descending).
    """
    if position is None:
        return ranked(docs)
    last = len(position)
    return sorted(docs.items(), key=lambda item: (-item[1], position.get(item[0], last), item[0]))


def candidates_of(run: Mapping[str, Mapping[str, float]], top_k: int, queries: Mapping[str, str] | None = None,
                  position: Mapping[str, int] | None = None) -> dict[str, list[tuple[str, float]]]:
    """Each query's top ``top_k`` docs, best first, ties in corpus order (see :func:`first_stage_order`).

    Queries not in ``queries`` are skipped.
    """
    return {qid: first_stage_order(docs, position)[:top_k] for qid, docs in run.items()
            if docs and (queries is None or qid in queries)}


def rerank_run(run: Mapping[str, Mapping[str, float]], queries: Mapping[str, str], corpus: Mapping[str, str],
               reranker: Reranker, top_k: int = 10, keep_tail: bool = True) -> Run:
    """Rerank each query's top ``top_k`` docs; the rest of the first-stage list follows (unless ``keep_tail=False``).

    Queries without a text in ``queries`` are dropped (counted in a warning).  Candidates tied in
    first-stage score are taken in corpus order (the order of ``corpus``), as the paper's stable
    sort takes them.  The tail keeps its first-stage order with scores strictly below the lowest
    reranked score.
    """
    if top_k < 1:
        raise R2MedError("the rerank depth (--top-k) must be at least 1")
    unknown = [q for q in run if q not in queries]
    if unknown:
        log.warning("%d run quer%s have no query text and are skipped (e.g. %r)", len(unknown),
                    "y" if len(unknown) == 1 else "ies", unknown[0])
    position = {did: i for i, did in enumerate(corpus)}
    candidates = candidates_of(run, top_k, queries, position)
    texts = {qid: queries[qid] for qid in candidates}
    scores = reranker.rerank(texts, candidates, corpus)
    out: Run = {}
    for qid, head in candidates.items():
        got = scores.get(qid, {})
        missing = [did for did, _ in head if did not in got]
        if missing:
            raise RuntimeError(f"reranker {reranker.name!r} returned no score for {len(missing)} candidate(s) of query {qid!r}")
        reranked = {did: float(got[did]) for did, _ in head}
        if keep_tail:
            floor = min(reranked.values())
            for i, (did, _) in enumerate(first_stage_order(run[qid], position)[top_k:], start=1):
                reranked[did] = floor - i
        out[qid] = reranked
    return out
