"""A JSON value's shape checked, and a mapping made JSON: ``as_object`` (an object, or a ``ValueError`` -- what a
reader of a damaged file already handles), ``text_object`` (an object of text values, or None), ``json_object``
(values as a JSON file stores them).  Kept apart from :mod:`.json_types` (whose ``JsonValue`` is pydantic's) so the
readers below the command line load no pydantic: the types are the type checker's only here.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .json_types import JsonObject, JsonValue


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
