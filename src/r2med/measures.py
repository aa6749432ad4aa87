"""The one table of measures: each measure is a value (family + cut-off) with every spelling r2med uses.

``Measure.parse("nDCG@10")`` (or ``ndcg_cut_10``, ``ndcg_cut.10``, ``NDCG@10``) is
``Measure(Family.NDCG, 10)``; its spellings are ``.label`` (tables, help, messages: ``nDCG@10``),
``.trec`` (pytrec_eval's and ``metrics.json``'s: ``ndcg_cut_10``), ``.r2med_results`` (the R2MED
repository's results file: ``ndcg_at_10``) and ``.mteb`` (MTEB's results: ``ndcg_at_10``; MRR has
none without a depth, :meth:`Measure.mteb_at`).  Families live in :class:`Family`; nothing else in r2med
spells a measure by hand.

A leaf of the house (it imports only :mod:`r2med.errors`): a benchmark's protocol (:mod:`r2med.data.benchmarks`)
names its measures, the scoring (:mod:`r2med.evaluation`) reads the data's id rule, and every layer above takes a
:class:`Measure`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum
from typing import Final

from .errors import OptionError, did_you_mean


class Family(Enum):
    """A trec_eval measure family: its pytrec_eval name, display name, MTEB and R2MED-results stems."""

    NDCG = ("ndcg_cut", "nDCG", "ndcg_at", "ndcg_at")
    MAP = ("map_cut", "MAP", "map_at", "map_at")
    RECALL = ("recall", "R", "recall_at", "recall_at")
    PRECISION = ("P", "P", "precision_at", "precision_at")
    MRR = ("recip_rank", "MRR", "mrr_at", "mrr")

    def __init__(self, trec: str, label: str, mteb: str, r2med_results: str) -> None:
        self.trec = trec
        self.label = label
        self.mteb_stem = mteb
        self.r2med_results_stem = r2med_results

    @property
    def has_cutoff(self) -> bool:
        return self is not Family.MRR


#: spellings of a family a user may type (lower case), beside the families' own names
_FAMILY_ALIASES: Final[dict[str, Family]] = {
    "ndcg": Family.NDCG,
    "ndcg_cut": Family.NDCG,
    "map": Family.MAP,
    "map_cut": Family.MAP,
    "r": Family.RECALL,
    "recall": Family.RECALL,
    "p": Family.PRECISION,
    "precision": Family.PRECISION,
}
_MRR_SPELLINGS: Final = frozenset({"mrr", "rr", "recip_rank", "mrr@all"})
_WITH_CUTOFF = re.compile(r"([A-Za-z_]+?)[@._](\d+)")
#: the longest measure name anybody types; longer input is refused before any parsing
_MAX_LENGTH: Final = 40
#: The largest cut-off a measure takes: trec_eval (pytrec_eval) reads a cut-off as a C ``long`` and saturates
#: larger ones (``ndcg_cut_99999999999999999999`` comes back as ``ndcg_cut_9223372036854775807``, a name no one
#: asked for); the largest C ``int`` is far beyond any ranking and the same on every platform.
MAX_CUTOFF: Final = 2**31 - 1


@dataclass(frozen=True, order=True)
class Measure:
    """One measure: a family at a cut-off (``None`` for MRR, which trec_eval computes over the whole ranking)."""

    family: Family
    cutoff: int | None = None

    def __post_init__(self) -> None:
        if self.family.has_cutoff != (self.cutoff is not None):
            raise OptionError(f"{self.family.label} {'needs' if self.family.has_cutoff else 'takes no'} cut-off")
        if self.cutoff is not None and self.cutoff < 1:
            raise OptionError(f"a measure's cut-off must be at least 1, not {self.cutoff}")
        if self.cutoff is not None and self.cutoff > MAX_CUTOFF:
            shown = str(self.cutoff) if self.cutoff < 10**30 else f"{str(self.cutoff)[:30]}..."
            raise OptionError(f"a measure's cut-off must be at most {MAX_CUTOFF}, not {shown}")

    @classmethod
    def parse(cls, text: str) -> Measure:
        """``nDCG@10`` / ``ndcg_cut.10`` / ``ndcg_cut_10`` -> nDCG@10; ``MRR`` / ``recip_rank`` -> MRR."""
        shown = text if len(text) <= _MAX_LENGTH else text[:_MAX_LENGTH] + "..."
        stripped = text.strip()
        if len(stripped) <= _MAX_LENGTH:
            if stripped.lower() in _MRR_SPELLINGS:
                return cls(Family.MRR)
            m = _WITH_CUTOFF.fullmatch(stripped)
            if m and m.group(1).lower() in _FAMILY_ALIASES:
                return cls(_FAMILY_ALIASES[m.group(1).lower()], int(m.group(2)))
            if m and m.group(1) == "P":
                return cls(Family.PRECISION, int(m.group(2)))
        raise OptionError(
            f"unknown measure {shown!r}{did_you_mean(stripped, _spellings_near(stripped))}; "
            "use e.g. ndcg_cut_10, nDCG@10, map_cut_100, R@100, P@10, MRR"
        )

    @property
    def label(self) -> str:
        """The display spelling: ``nDCG@10``, ``R@100``, ``MAP@10``, ``P@10``, ``MRR``."""
        return self.family.label if self.cutoff is None else f"{self.family.label}@{self.cutoff}"

    @property
    def trec(self) -> str:
        """pytrec_eval's (and ``metrics.json``'s) name: ``ndcg_cut_10``, ``recall_100``, ``recip_rank``."""
        return self.family.trec if self.cutoff is None else f"{self.family.trec}_{self.cutoff}"

    @property
    def r2med_results(self) -> str:
        """The R2MED repository's results-file key: ``ndcg_at_10``, ``precision_at_10``, ``mrr``."""
        stem = self.family.r2med_results_stem
        return stem if self.cutoff is None else f"{stem}_{self.cutoff}"

    @property
    def mteb(self) -> str | None:
        """MTEB's key (``ndcg_at_10``); ``None`` for MRR, whose MTEB key needs a depth (:meth:`mteb_at`)."""
        return None if self.cutoff is None else f"{self.family.mteb_stem}_{self.cutoff}"

    def mteb_at(self, depth: int) -> str:
        """MTEB's key of this measure when the ranking is cut at ``depth`` (``mrr_at_10`` for MRR)."""
        return f"{self.family.mteb_stem}_{self.cutoff if self.cutoff is not None else depth}"

    def __str__(self) -> str:
        return self.label


def measure(text: str | Measure) -> Measure:
    """A measure from any spelling (or a :class:`Measure` as it is)."""
    return text if isinstance(text, Measure) else Measure.parse(text)


def from_trec(name: str) -> Measure:
    """The measure behind a pytrec_eval name as ``metrics.json`` stores it; anything else is an error."""
    parsed = Measure.parse(name)
    if parsed.trec != name:
        raise OptionError(f"{name!r} is not a pytrec_eval measure name (it would be {parsed.trec!r})")
    return parsed


def pytrec_eval_spec(measures: Iterable[Measure]) -> set[str]:
    """The measure set pytrec_eval's ``RelevanceEvaluator`` takes: ``{"ndcg_cut.10,100", "recip_rank"}``."""
    cutoffs: dict[Family, set[int]] = {}
    spec: set[str] = set()
    for m in measures:
        if m.cutoff is None:
            spec.add(m.family.trec)
        else:
            cutoffs.setdefault(m.family, set()).add(m.cutoff)
    for family, ks in cutoffs.items():
        spec.add(f"{family.trec}.{','.join(str(k) for k in sorted(ks))}")
    return spec


CUTOFFS: Final = (1, 10, 25, 50, 100)
#: what every ``metrics.json`` stores: nDCG, MAP, R, P at :data:`CUTOFFS`, and MRR
DEFAULT_MEASURES: Final[tuple[Measure, ...]] = tuple(
    Measure(family, k) for family in (Family.NDCG, Family.MAP, Family.RECALL, Family.PRECISION) for k in CUTOFFS
) + (Measure(Family.MRR),)
#: the benchmark's headline measure
HEADLINE: Final = Measure(Family.NDCG, 10)


def _spellings_near(text: str) -> list[str]:
    """The spellings a mistyped measure may have meant (at the cut-off it names, if any), for "did you mean"."""
    number = re.search(r"(\d+)$", text)
    cutoffs = [number.group(1)] if number else [str(k) for k in CUTOFFS]
    families = [f for f in Family if f.has_cutoff]
    names = [f.label for f in families] + ["Recall", "Precision"] + [f.trec for f in families]
    return [f"{n}{sep}{k}" for n in names for k in cutoffs for sep in ("@", "_")] + [Family.MRR.label, Family.MRR.trec]
