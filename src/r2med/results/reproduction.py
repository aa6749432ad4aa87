"""The records of the reproduction matrix (``r2med reproduce``): a published figure to reproduce
(:class:`Target`, or a corrected configuration run beside it: :class:`Variant`), whether it can run here
(:class:`Planned`) and its graded outcome (:class:`Outcome`).  :mod:`r2med.jobs.reproduce` makes them;
:mod:`r2med.report.reproduce_tables` shows them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..data.benchmarks import protocol_of_task
from ..measures import Measure
from .published import PublishedKey

if TYPE_CHECKING:
    from ..infra.json_types import JsonObject


@dataclass(frozen=True)
class Variant:
    """A configuration run beside a published one, ungraded: r2med's correction of what the published code did."""

    name: str  # appended to the published configuration's label: its folder under OUT
    options: Mapping[str, object]  # replace the published options
    note: str  # why it runs, shown in the tables
    #: it also loads the preset's separate query encoder (MedCPT's), whose weights must be here too
    query_encoder: bool = False


@dataclass(frozen=True)
class Target:
    """One published figure to reproduce (or, with ``variant``, a corrected configuration run beside it)."""

    key: PublishedKey
    setting: str
    task: str
    published: float
    source: str
    variant: Variant | None = None

    @property
    def label(self) -> str:
        return self.key.label if self.variant is None else f"{self.key.label}-{self.variant.name}"

    @property
    def measure(self) -> Measure:
        """The measure its figure is: the headline of the task's protocol (nDCG@10; BRIGHT's long documents:
        Recall@1)."""
        return protocol_of_task(self.task).headline

    @property
    def graded(self) -> bool:
        """Whether its figure is graded (the published configuration), or only shown beside (a variant)."""
        return self.variant is None


@dataclass(frozen=True)
class MtebBeside:
    """mteb's figure shown beside a target's published one (embeddings-benchmark/results, ``mteb_results.json``):
    of ``model`` at ``model_revision`` on the data the target reads (or its run read), ``value`` x100; ``graded``:
    the run recorded the same model commit (a plan has no run: False); ``paper_apart``: mteb's figure and the
    paper's differ by more than the paper's rounding for the same model and data (both shown, named)."""

    model: str
    model_revision: str
    dataset: str
    dataset_revision: str
    value: float
    graded: bool = False
    paper_apart: bool = False

    def words(self, published: float, value: float | None = None) -> str:
        """``mteb BAAI/bge-large-en-v1.5@d4aa690 on R2MED/Biology@8b9fec2: 12.71`` with how it stands."""
        text = (
            f"mteb {self.model}@{self.model_revision[:7]} on {self.dataset}@{self.dataset_revision[:7]}: "
            f"{self.value:.2f}"
        )
        if self.paper_apart:
            text += (
                f" (mteb and the paper disagree for this model and data: mteb {self.value:.2f}, paper {published:.2f})"
            )
        if value is not None and self.graded:
            text += f", graded: run - mteb = {value - self.value:+.2f}"
        elif value is not None:
            text += ", not graded: the run recorded no model commit equal to mteb's"
        return text

    def to_dict(self) -> JsonObject:
        return {
            "model": self.model,
            "model_revision": self.model_revision,
            "dataset": self.dataset,
            "dataset_revision": self.dataset_revision,
            "value": self.value,
            "graded": self.graded,
            "paper_apart": self.paper_apart,
        }


@dataclass
class Planned:
    target: Target
    runnable: bool
    reasons: list[str] = field(default_factory=list)
    data: str = ""  # where the task data comes from
    notes: list[str] = field(default_factory=list)  # what does not block it but qualifies its grade
    #: mteb's figure of the target's checkpoint on the data a reproduction reads by default, if mteb has one
    mteb: MtebBeside | None = None

    @property
    def reason(self) -> str:
        return "; ".join(self.reasons) if self.reasons else f"ready ({self.data})"


@dataclass
class Outcome:
    target: Target
    status: str  # pass | fail | ungraded (no tolerance: settings r2med assumed) | skip | error
    value: float | None = None
    tolerance: float | None = None
    reused: bool = False
    detail: str = ""
    #: mteb's figure of the checkpoint the run recorded on the data it read, if mteb has one
    mteb: MtebBeside | None = None

    @property
    def delta(self) -> float | None:
        return None if self.value is None else self.value - self.target.published

    def to_dict(self) -> JsonObject:
        family = {"measure": self.target.measure.trec} if len(self.target.key.measures) > 1 else {}
        return {
            **family,
            "config": self.target.label,
            "setting": self.target.setting,
            "task": self.target.task,
            "published": self.target.published,
            "value": self.value,
            "delta": self.delta,
            "tolerance": self.tolerance,
            "status": self.status,
            "reused": self.reused,
            "detail": self.detail,
            "source": self.target.source,
            "graded": self.target.graded,
            "mteb": self.mteb.to_dict() if self.mteb is not None else None,
        }
