"""Generation-augmented retrieval: LLM-written expansions of queries, precomputed or live.

* :mod:`.precomputed` -- load ``<method>/<llm>/query_with_hydoc.jsonl`` (file, folder, hub);
  :class:`ExpansionQueries` is the ``QueryBuilder`` ``r2med evaluate --expansion`` uses.
* :mod:`.spec` -- ``METHOD:LLM`` parsed once at the edge (:class:`ExpansionSpec`, a step's ``expansion``).
* :mod:`.traces` -- strip reasoning traces per trace format.
* :mod:`.combine` -- the paper's query + expansion combination per retriever family.
* :mod:`.generate` -- live HyDE / Query2doc / LameR generation with the paper's prompts.
* :mod:`.agentic` -- Search-R1 / Search-O1 style search loops over the task's own index.
"""

from __future__ import annotations

from .combine import AGENTIC, EXPANSION_METHODS, check_method, combine
from .precomputed import ExpansionQueries, Expansions, load_expansions, read_expansion_file
from .spec import ExpansionSpec
from .traces import REASONING_LLMS, TRACE_FORMATS, normalize_llm, strip_for, strip_trace, trace_format_of

__all__ = [
    "AGENTIC",
    "EXPANSION_METHODS",
    "REASONING_LLMS",
    "TRACE_FORMATS",
    "ExpansionQueries",
    "ExpansionSpec",
    "Expansions",
    "check_method",
    "combine",
    "load_expansions",
    "normalize_llm",
    "read_expansion_file",
    "strip_for",
    "strip_trace",
    "trace_format_of",
]
