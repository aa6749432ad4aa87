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


def as_object(value: JsonValue, what: str = "the value") -> JsonObject:
    """``value`` where it is a JSON object; else a ``ValueError`` saying so (what every reader of a damaged file
    already handles: the JSON reader's faults are ``ValueError`` too)."""
    if not isinstance(value, dict):
        raise ValueError(f"{what} is not a JSON object")
    return value


def text_object(value: JsonValue) -> dict[str, str] | None:
    """``value`` where it is a JSON object of text values only (a memo's entry); else None."""
    if not isinstance(value, dict):
        return None
    texts = {key: item for key, item in value.items() if isinstance(item, str)}
    return texts if len(texts) == len(value) else None


__all__ = ["JsonObject", "JsonValue", "as_object", "json_object", "text_object"]
