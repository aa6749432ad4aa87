"""The choices of fusion: the method (RRF, CombSUM, CombMNZ) and CombSUM/CombMNZ's normalisation.

Kept apart from :mod:`r2med.runs.fusion` (which imports runs and their scoring) so that the CLI can show and check
them while the command line is parsed (``r2med --help`` loads neither runs nor pydantic).  Each is a ``StrEnum``: a
member is the plain string.
"""

from __future__ import annotations

from enum import StrEnum


class FusionMethod(StrEnum):
    """How runs are fused (:mod:`r2med.runs.fusion`'s docstring gives each rule)."""

    RRF = "rrf"
    COMBSUM = "combsum"
    COMBMNZ = "combmnz"


class Normalisation(StrEnum):
    """How CombSUM / CombMNZ normalise each run's scores per query."""

    MINMAX = "minmax"
    ZSCORE = "zscore"
    NONE = "none"
