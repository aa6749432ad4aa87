"""The types of JSON values: what a value read from, or written to, a JSON or TOML file can be.

``JsonValue`` is pydantic's recursive union (``str | int | float | bool | None | list[JsonValue] |
dict[str, JsonValue]``), so a value typed with it is narrowed (``isinstance``) before use and the type checker
follows it; pydantic validates it at run time where a model's field carries it.  ``JsonObject`` is a JSON object
with open keys: each place that holds one says in a comment why its keys are open (user metadata, a plug-in's own
facts, a library's versions).  Parameters that only read take ``Mapping[str, JsonValue]`` (covariant: a
``dict[str, str]`` is one).
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from pydantic import JsonValue

#: a JSON object whose keys are open (each place that holds one says why)
JsonObject = dict[str, JsonValue]


def json_object(values: Mapping[str, object]) -> JsonObject:
    """``values`` as a JSON file stores them: nested mappings and sequences as objects and lists, any other object
    (a path, a user's encoder given in Python) as its text -- what ``json.dumps(..., default=str)`` writes."""
    stored: JsonObject = json.loads(json.dumps(dict(values), default=str))  # an object in, an object out
    return stored


__all__ = ["JsonObject", "JsonValue", "json_object"]
