"""Scoring runs: the one table of measures (``measures``), trec_eval through pytrec_eval (``metrics``),
paired significance tests (``stats``) and per-query values grouped by query metadata (``facets``)."""
