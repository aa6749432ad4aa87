"""The choices of query expansion: the methods (``r2med expand --method``, an expansion's ``METHOD``) and their
canonical spelling.

Kept apart from :mod:`r2med.expansion.combine` (which imports the retrievers' base, and through it the run record)
so that the CLI can show and check them while the command line is parsed; in ``typed/``, below ``expansion/``, as
the other choices the options and steps take.  A ``StrEnum``: a member is the plain string.
"""

from __future__ import annotations

from enum import StrEnum


class ExpansionMethod(StrEnum):
    """A query-expansion method: generation-augmented (one LLM answer) or agentic (search in the loop)."""

    HYDE = "hyde"
    QUERY2DOC = "query2doc"
    LAMER = "lamer"
    SEARCH_R1 = "search-r1"
    SEARCH_O1 = "search-o1"


def method_spelling(method: str) -> str:
    """The canonical spelling of a method name: ``HyDE`` -> ``hyde``, ``search_r1`` -> ``search-r1``."""
    return method.strip().lower().replace("_", "-")
