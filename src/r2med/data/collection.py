"""The ``Collection``: one retrieval task's corpus, queries, judgments and expansion files (read-only)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any

from ..errors import NothingToScore, shown
from ..expansion_name import ExpansionName
from ..infra.home import fingerprint, fingerprint_texts
from ..infra.json_types import JsonObject
from .exclusions import NO_EXCLUSIONS, Exclusions

log = logging.getLogger(__name__)

Qrels = dict[str, dict[str, int]]
"""Relevance judgments: query id -> doc id -> grade (pytrec_eval's form)."""


@dataclass
class QrelsCheck:
    """Judgments that point outside the collection (counted, not fatal)."""

    unknown_docs: int = 0
    unknown_queries: int = 0
    queries_without_qrels: int = 0

    def message(self, name: str) -> str | None:
        parts = []
        if self.unknown_docs:
            parts.append(f"{self.unknown_docs} judgment(s) name docs not in the corpus")
        if self.unknown_queries:
            parts.append(f"{self.unknown_queries} judgment(s) name unknown queries")
        if self.queries_without_qrels:
            parts.append(f"{self.queries_without_qrels} query(ies) have no judgments")
        return f"{name}: " + "; ".join(parts) if parts else None


@dataclass(frozen=True)
class JudgmentsFile:
    """Judgments read from a file the user named (``--qrels FILE``) in place of the task's own: its path and the
    sha256 of its bytes, recorded with every result made on it (a figure made so is never graded against rows
    made with the task's own judgments)."""

    path: str
    sha256: str

    def record(self) -> JsonObject:
        return {"file": self.path, "sha256": self.sha256}


@dataclass(frozen=True)
class Collection:
    """A retrieval task in memory.

    ``corpus`` and ``queries`` map ids to texts in file order; ``qrels`` is
    pytrec_eval's nested dict; ``query_meta`` keeps extra query fields (R2MED's
    ``answer``, ``body_system``, ``doc_id``...); ``expansion_files`` maps
    an expansion's name (:class:`~r2med.expansion_name.ExpansionName`: ``<method>``, ``<llm>``) to a
    ``query_with_hydoc.jsonl`` path found beside the data;
    ``revision`` is the hub commit the data came from (None for local folders); ``split`` the BEIR
    split (``test``, ``dev``, ``train``) whose queries and judgments were loaded (None: a collection
    with one split -- R2MED's layout, the hub, the demo);
    ``corpus_repeats`` holds the texts of the corpus lines the id map does not (an id's identical
    repeats and the records a later one replaced): ``corpus`` is the file read as a dict, as the
    paper's dense loader reads it (each id once, its last record), and ``corpus`` plus these is the
    file read as a list, as the paper's BM25 script reads it (every copy counted).

    A benchmark's task also carries its ``benchmark`` (the family's name: ``r2med``, ``bright``; None for a
    local collection), its per-query ``exclusions`` (BRIGHT's ``excluded_ids``: removed from each query's
    scores before the cut, :mod:`.exclusions`) and ``judgments`` (None: the task's own; a :class:`JudgmentsFile`
    for ``--qrels FILE``).  ``corpus_read`` is False for a task read for its judgments only (``import`` and
    ``score`` of a hub task download no documents): its ``corpus`` is empty and its :attr:`dataset_fingerprint`
    None.

    Frozen: its :attr:`fingerprint` keys every cache built on it (indexes, embeddings, results), so a
    changed collection is a new one -- :meth:`replace` -- never an edited one.  Treat the mappings as
    read-only too.
    """

    name: str
    corpus: dict[str, str]
    queries: dict[str, str]
    qrels: Qrels
    source: str = ""
    query_meta: dict[str, JsonObject] = field(default_factory=dict)  # user metadata: each query's other keys
    expansion_files: dict[ExpansionName, Path] = field(default_factory=dict)
    revision: str | None = None
    split: str | None = None
    corpus_repeats: tuple[str, ...] = ()
    benchmark: str | None = None
    exclusions: Exclusions = NO_EXCLUSIONS
    judgments: JudgmentsFile | None = None
    corpus_read: bool = True

    def replace(self, **changes: Any) -> Collection:  # open: dataclasses.replace checks each against the fields
        """A new collection with some fields changed (``coll.replace(qrels=other)``)."""
        return replace(self, **changes)

    @cached_property
    def fingerprint(self) -> str:
        """Content hash of the corpus (ids and texts, in order): the key of every index built on it."""
        return fingerprint_texts(self.corpus.items())

    @cached_property
    def dataset_fingerprint(self) -> str | None:
        """What results record as ``dataset_fingerprint``: the corpus :attr:`fingerprint`, with the split
        mixed in for a BEIR split other than ``test`` (so a dev run is never taken for a test run, while
        the test split keeps the fingerprint results recorded before splits were named); None when the corpus
        was not read (:attr:`corpus_read`)."""
        if not self.corpus_read:
            return None
        if self.split in (None, "test"):
            return self.fingerprint
        return fingerprint("split", self.fingerprint, self.split)

    @cached_property
    def qrels_check(self) -> QrelsCheck:
        check = QrelsCheck()
        for qid, docs in self.qrels.items():
            if qid not in self.queries:
                check.unknown_queries += len(docs)
            if self.corpus_read:
                check.unknown_docs += sum(1 for d in docs if d not in self.corpus)
        check.queries_without_qrels = sum(1 for q in self.queries if q not in self.qrels)
        return check

    def warn_about_qrels(self) -> None:
        """Warn about judgments that point outside the collection; judgments that share no query with it are a
        one-line error before any work (nothing could be scored: an index built or a model run for nothing)."""
        if self.queries and not any(q in self.queries for q in self.qrels):

            def count(n: int) -> str:
                return f"{n:,} quer{'y' if n == 1 else 'ies'}"

            judged = (
                f"the judgments' {count(len(self.qrels))} (e.g. {shown(next(iter(self.qrels)))})"
                if self.qrels
                else "the judgments (none)"
            )
            where = f"{self.name} judged by {self.judgments.path}" if self.judgments is not None else self.name
            raise NothingToScore(
                f"{where}: the task's {count(len(self.queries))} (e.g. {shown(next(iter(self.queries)))}) and "
                f"{judged} have none in common: nothing to score (judgments of another task, split or id scheme?)"
            )
        msg = self.qrels_check.message(self.name)
        if msg:
            log.warning("%s (evaluation goes on)", msg)

    @property
    def doc_ids(self) -> list[str]:
        return list(self.corpus)

    def stats(self) -> dict[str, float]:
        nq = len(self.queries)
        pos = sum(sum(1 for g in d.values() if g > 0) for d in self.qrels.values())
        return {
            "queries": nq,
            "docs": len(self.corpus),
            "qrels": sum(len(d) for d in self.qrels.values()),
            "avg_positives": pos / max(len(self.qrels), 1),
            "avg_query_words": sum(len(t.split()) for t in self.queries.values()) / max(nq, 1),
            "avg_doc_words": sum(len(t.split()) for t in self.corpus.values()) / max(len(self.corpus), 1),
        }

    def __repr__(self) -> str:
        return (
            f"Collection({self.name!r}, docs={len(self.corpus)}, queries={len(self.queries)}, "
            f"qrels={sum(len(d) for d in self.qrels.values())})"
        )
