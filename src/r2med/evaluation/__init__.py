"""Scoring runs: trec_eval through pytrec_eval (``metrics``), the ranges tied documents allow (``ties``), paired
significance tests (``stats``) and per-query values grouped by query metadata (``facets``).  The measures they
score are :mod:`r2med.measures`'s."""
