"""The types of JSON values: what a value read from, or written to, a JSON or TOML file can be.

``JsonValue`` is pydantic's recursive union (``str | int | float | bool | None | list[JsonValue] |
dict[str, JsonValue]``), so a value typed with it is narrowed (``isinstance``) before use and the type checker
follows it; pydantic validates it at run time where a model's field carries it.  ``JsonObject`` is a JSON object
with open keys: each place that holds one says in a comment why its keys are open (user metadata, a plug-in's own
facts, a library's versions).  Parameters that only read take ``Mapping[str, JsonValue]`` (covariant: a
``dict[str, str]`` is one).  Checking a value's shape, and a mapping made JSON: :mod:`.json_shapes` (light: no
pydantic, so ``r2med --help`` can read JSON without loading it).
"""

from __future__ import annotations

from pydantic import JsonValue

#: a JSON object whose keys are open (each place that holds one says why)
JsonObject = dict[str, JsonValue]


__all__ = ["JsonObject", "JsonValue"]
