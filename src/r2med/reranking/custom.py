"""``custom``: reranking with your own scorer (``--scorer MODULE:OBJ``, or an object in Python).

The object's ``score(query, docs) -> list[float]`` scores one query's candidates (higher first; the
contract: :mod:`r2med.infra.user_code`); :func:`r2med.reranking.base.rerank` does the rest (the top k, ties in
corpus order, the first-stage tail).  Packages' scorers registered under the entry-point group
``r2med.rerankers`` become rerankers of their own name.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..infra import progress
from ..infra.json_types import JsonObject
from ..infra.user_code import (
    RERANKER_GROUP,
    EntryPointPreset,
    Loaded,
    Scorer,
    as_loaded,
    call_user,
    check_scores,
    register_entry_points,
    short_name,
)
from ..typed.options import CustomScorerOptions, EntryPointScorerOptions
from ..typed.parse import RerankerOptions
from .base import RERANKERS, Candidates, RerankerMeta, options_as, register_reranker


class CustomReranker:
    """A user scorer as a :class:`~r2med.reranking.base.Reranker` (one ``score`` call per query)."""

    def __init__(self, loaded: Loaded[Scorer], name: str | None = None):
        self.loaded = loaded
        self.name = name or f"custom-{short_name(loaded)}"

    def config(self) -> JsonObject:
        return {"name": "custom", "scorer": self.loaded.describe()}

    def rerank(
        self, queries: Mapping[str, str], candidates: Candidates, corpus: Mapping[str, str]
    ) -> dict[str, dict[str, float]]:
        where = f"scorer {self.loaded.spec or type(self.loaded.obj).__name__}"
        out: dict[str, dict[str, float]] = {}
        with progress.task(f"{self.name}: reranking", total=len(candidates), unit="queries") as bar:
            for qid, head in candidates.items():
                ids = [did for did, _ in head]
                here = f"{where} (query {qid!r})"
                given = call_user(here, "score()", self.loaded.obj.score, queries[qid], [corpus[d] for d in ids])
                scores = check_scores(given, len(ids), here)
                out[qid] = dict(zip(ids, scores))
                bar.advance()
        return out


def make_custom_reranker(options: RerankerOptions) -> CustomReranker:
    """``custom``: its ``scorer`` is a spec the user typed (``MODULE:OBJ``), an object, or a loaded one (the options
    refuse none)."""
    return CustomReranker(as_loaded(options_as(options, CustomScorerOptions).scorer, "scorer", "--scorer"))


register_reranker(
    RerankerMeta(
        "custom",
        make_custom_reranker,
        "your own scorer: --scorer MODULE:OBJ (score(query, docs) -> list of floats)",
        options=CustomScorerOptions,
        packages=(),
        install="",
        weights=(),
        tolerance="assumed",
    )
)


def _entry_point_meta(preset: EntryPointPreset) -> None:
    def factory(options: RerankerOptions) -> CustomReranker:
        options_as(options, EntryPointScorerOptions)  # it takes none: set them on your scorer
        made = CustomReranker(as_loaded(preset.load("scorer"), "scorer", "--scorer"))
        made.name = preset.name
        return made

    register_reranker(
        RerankerMeta(
            preset.name,
            factory,
            f"{preset.value} (entry point{' of ' + preset.dist if preset.dist else ''})",
            options=EntryPointScorerOptions,
            packages=(),
            install="",
            weights=(),
            tolerance="assumed",
        )
    )


register_entry_points(RERANKER_GROUP, _entry_point_meta, RERANKERS.records)
