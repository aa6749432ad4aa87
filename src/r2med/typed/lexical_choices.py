"""The choices of BM25's settings: the analyzer and the scoring flavour.

Kept apart from :mod:`r2med.retrieval.bm25` and :mod:`r2med.retrieval.analyzer` (which import numpy) so that the CLI
can show and check them while the command line is parsed; in ``typed/``, below ``retrieval/``, because the options
types (:mod:`.options`) take them.  Each is a ``StrEnum``: a member is the plain string (``json.dumps`` writes
``"english"``).
"""

from __future__ import annotations

from enum import StrEnum


class AnalyzerName(StrEnum):
    """BM25's text analyzer: ``english`` (pure Python, the default) or ``lucene`` (pyserini's, needs Java)."""

    ENGLISH = "english"
    LUCENE = "lucene"


#: Other names accepted for an analyzer (kept as given where they are recorded).
ANALYZER_ALIASES: dict[str, AnalyzerName] = {"python": AnalyzerName.ENGLISH, "default": AnalyzerName.ENGLISH}


class Bm25Flavour(StrEnum):
    """BM25's scoring: ``paper`` (the R2MED paper's) or ``standard`` (:mod:`.bm25` says how they differ)."""

    PAPER = "paper"
    STANDARD = "standard"
