"""Typed records built from data (a mapping read from a table or a JSON file): unknown keys are refused.

``record_from(RetrieverMeta, data, "retriever 'x'")`` builds the record, or raises a one-line
:class:`~r2med.errors.R2MedError` naming the first key the record has no field for (with a suggestion when one is
close), instead of Python's ``TypeError`` -- or, where a table is read key by key, instead of ignoring it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import ClassVar, Protocol, TypeVar

from ..errors import R2MedError, did_you_mean


class Dataclass(Protocol):
    """A dataclass: what :func:`dataclasses.fields` reads."""

    __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[object]]]


RecordT = TypeVar("RecordT", bound=Dataclass)


def refuse_unknown_keys(data: Mapping[str, object], known: Iterable[str], where: str) -> None:
    """A one-line error naming the first key of ``data`` not in ``known`` (``where``: whose data it is)."""
    allowed = tuple(known)
    for key in data:
        if key not in allowed:
            raise R2MedError(f"{where}: unknown field {key!r}{did_you_mean(str(key), allowed)}")


def field_names(record_type: type[Dataclass]) -> tuple[str, ...]:
    """The field names of a dataclass type."""
    return tuple(f.name for f in dataclasses.fields(record_type))


def record_from(record_type: type[RecordT], data: Mapping[str, object], where: str) -> RecordT:
    """``record_type(**data)`` for a dataclass, refusing a key it has no field for (:func:`refuse_unknown_keys`)."""
    refuse_unknown_keys(data, field_names(record_type), where)
    return record_type(**data)
