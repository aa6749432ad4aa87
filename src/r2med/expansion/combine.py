"""How a query and its LLM expansion become the text(s) a retriever searches with.

The R2MED paper's rules (``r2med_models.json`` -> ``gar_query_combination``; BM25 from
``src/eval_BM25.py``, ``load_retrieval_data``), per retriever family:

==========================  =====================================  ============================================
method                      lexical (BM25)                         dense
==========================  =====================================  ============================================
``hyde``                    expansion alone                        mean of emb(query) and emb(expansion)
``query2doc``               ``query * 2 + " " + expansion``        one text ``query + "[SEP]" + expansion``
``lamer``                   ``query + " " + expansion``            mean of emb(query) and emb(expansion)
reasoning LLMs (any method) stripped expansion alone               mean of emb(query) and emb(stripped)
``search-r1``/``search-o1`` stripped expansion alone               mean of emb(query) and emb(stripped)
==========================  =====================================  ============================================

Note ``query * 2`` is Python string repetition as in the paper's code: the two copies are
joined *without* a space.  A tuple ``(query, expansion)`` asks a dense retriever to embed
both and average them (see :mod:`r2med.retrieval.base`).
"""

from __future__ import annotations

from ..errors import R2MedError
from ..retrieval.base import QueryText
from ..typed.expansion_choices import ExpansionMethod, method_spelling
from .traces import strip_trace, trace_format_of

EXPANSION_METHODS: tuple[ExpansionMethod, ...] = tuple(ExpansionMethod)
AGENTIC: tuple[ExpansionMethod, ...] = (ExpansionMethod.SEARCH_R1, ExpansionMethod.SEARCH_O1)


def check_method(method: str) -> ExpansionMethod:
    """``method`` as an :class:`ExpansionMethod`; an unknown name is a one-line error listing the choices."""
    try:
        return ExpansionMethod(method_spelling(method))
    except ValueError:
        raise R2MedError(f"unknown expansion method {method!r}; choose from: {', '.join(EXPANSION_METHODS)}") from None


def combine(
    query: str, expansion: str, method: str, llm: str, family: str, trace_format: str | None = None
) -> QueryText:
    """The search input for one query under the paper's rule (``family``: the retriever's, ``lexical`` or
    ``dense``; ``trace_format``: how to strip a reasoning trace, by default the LLM's)."""
    method = check_method(method)
    trace = trace_format or trace_format_of(llm)
    reasoning = trace != "none" or method in AGENTIC
    text = strip_trace(expansion, trace)
    if family == "lexical":
        if reasoning or method == "hyde":
            return text
        if method == "query2doc":
            return query * 2 + " " + text
        return query + " " + text  # lamer
    if family == "dense":
        if method == "query2doc" and not reasoning:
            return query + "[SEP]" + text
        return (query, text)
    raise R2MedError(f"unknown retriever family {family!r} (expected 'lexical' or 'dense')")
