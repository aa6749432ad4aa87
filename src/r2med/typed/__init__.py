"""Typed specs: the options of every model, parsed once at every edge.

* :mod:`.parse` -- the :class:`~r2med.typed.parse.Spec` base and the one parse (:func:`~r2med.typed.parse.parse`),
  whose errors name where a value came from;
* :mod:`.options` -- the options types of retrievers, rerankers and fusion;
* :mod:`.dense_choices`, :mod:`.lexical_choices`, :mod:`.expansion_choices`, :mod:`.model_source` -- the choices
  those options and the steps take.

The step of every job (:mod:`r2med.steps`) is built on these, above the registries it looks options types up in.
The package imports none of its modules: the choices load without pydantic (the command line shows and checks them
while ``r2med --help`` starts); import :mod:`.parse` for the parse.
"""
