"""Runs (query id -> doc id -> score): the ``Run`` type, TREC files and the one tie order (``run``), and
fusing several runs into one (``fusion``)."""
