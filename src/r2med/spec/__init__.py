"""Typed specs: the options of every model and the step of every job, parsed once at every edge.

* :mod:`.parse` -- the :class:`~r2med.spec.parse.Spec` base and the one parse (:func:`~r2med.spec.parse.parse`),
  whose errors name where a value came from;
* :mod:`.options` -- the options types of retrievers, rerankers and fusion;
* :mod:`.steps` -- the step types (evaluate, rerank, fuse, import, expand, export) and their parse.
"""

from .parse import Origin, Spec, SpecError, parse

__all__ = ["Origin", "Spec", "SpecError", "parse"]
