"""A registry of records by name, the shape shared by the retriever and reranker registries.

A record is any object with a ``name`` (:class:`r2med.retrieval.registry.RetrieverMeta`,
:class:`r2med.reranking.base.RerankerMeta`).  Both name a tolerance class of :data:`TOLERANCES`: how far
a run may land from the published figure it reproduces.  The modules that register the built-in records are
imported on first use (they import heavy libraries lazily), so listing or building one never
depends on who imported what first.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Sequence
from typing import Generic, Protocol, TypeVar

#: Allowed |delta| to a published nDCG@10 (points x100) by tolerance class, named in each retriever's and
#: reranker's record.  ``None``: the delta is shown but never graded (no pass/fail).
TOLERANCES: dict[str, float | None] = {
    # deterministic lexical runs land within rounding (the figures are rounded to 0.01)
    "lexical": 0.5,
    # local dense models vary with hardware and precision (batch padding, kernels)
    "dense": 1.0,
    # figures published from an fp16 forward pass on a GPU (FlagEmbedding's use_fp16): fp16 round-off of
    # 4-8B models moves more near-ties at rank 10, and a CPU run (fp32, as the harness falls back) differs by it
    "dense-fp16": 1.5,
    # embedding APIs change with the provider's model version
    "api": 2.0,
    # a reasoning LLM reranker behind a serving engine (temperature 0 is not bit-deterministic across engines
    # and batch shapes), over r2med's first stage rather than the authors' own run
    "llm-rerank": 2.0,
    # settings r2med had to assume (none published): the delta measures the assumption, it grades nothing
    "assumed": None,
}


class _Named(Protocol):
    @property
    def name(self) -> str: ...  # read-only, so frozen dataclass records qualify


M = TypeVar("M", bound=_Named)


class Registry(Generic[M]):
    """Records by name; ``modules`` of ``package`` register the built-in ones when imported."""

    def __init__(self, kind: str, package: str, modules: Sequence[str]):
        self.kind, self.package, self.modules = kind, package, tuple(modules)
        self.records: dict[str, M] = {}
        self._loaded = False

    def add(self, record: M) -> M:
        """Register ``record``; a different record under a registered name is an error."""
        if record.name in self.records and self.records[record.name] != record:
            raise ValueError(f"{self.kind} {record.name!r} is already registered")
        self.records[record.name] = record
        return record

    def _load(self) -> None:
        if self._loaded:
            return
        for module in self.modules:
            name = f"{self.package}.{module}"
            if importlib.util.find_spec(name) is not None:
                importlib.import_module(name)
        self._loaded = True

    def all(self) -> dict[str, M]:
        """Every record by name, in name order."""
        self._load()
        return dict(sorted(self.records.items()))

    def get(self, name: str) -> M | None:
        self._load()
        return self.records.get(name)

    def descriptions(self) -> dict[str, str]:
        """Name -> one-line description (its ``description``) of every record, in name order."""
        return {name: str(getattr(record, "description", "")) for name, record in self.all().items()}
