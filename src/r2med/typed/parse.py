"""The one parse: values from the command line, an experiment file or Python -> one typed, frozen spec.

Every options type and step type is a :class:`Spec` (a pydantic v2 model: frozen, unknown keys refused, strict
types -- a float is not an integer, a bool is not a number, text is not a number -- and no ``nan``/``inf``).
:func:`parse` builds one from a mapping and turns any fault into one :class:`SpecError` line that names where the
value came from (an :class:`Origin`):

* a file: ``exp.toml: [[retrievers]] 2: k1: expected a finite number >= 0, got 'high'``;
* the command line: ``--k1: expected a finite number >= 0, got nan`` (a field is named by its flag);
* Python: ``BM25(): k1: expected a finite number >= 0, got 'high'`` (a field is named by its argument).

The words after the key come from the field's own type and constraints (:func:`expected`), so the three edges
say the same thing.  A field's flag is ``--<name>`` unless its ``flag`` extra says otherwise (``--no-cache``,
``--rrf-k``); a field with ``flag = "--set"`` is set on the command line as ``--set name=value``.
"""

from __future__ import annotations

import math
import numbers
import os
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Annotated, Literal, TypeVar

import annotated_types
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, ValidationInfo
from pydantic_core import ErrorDetails

from ..data.hub import revision_problem
from ..errors import OptionError, did_you_mean, shown
from ..infra.json_types import JsonValue
from ..infra.redact import redact_url
from ..runs.record import MAX_INT_DIGITS

SpecT = TypeVar("SpecT", bound="Spec")


class SpecError(OptionError):
    """A value a spec does not take, in one line naming where it came from (exit 2 at the CLI); a ``ValueError``."""


class Spec(BaseModel):
    """A typed, frozen record of options or of one step: unknown keys refused, types strict, numbers finite."""

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        strict=True,
        allow_inf_nan=False,
        arbitrary_types_allowed=True,
        validate_default=False,
    )

    def given(self) -> dict[str, object]:
        """The fields set to a value (not None), in field order: what a factory is called with (a value may be an
        object given in Python: a custom encoder or scorer)."""
        return {name: getattr(self, name) for name in type(self).model_fields if getattr(self, name) is not None}


# -- constrained field types (the words of their errors: :func:`expected`) -----------------------------------

#: the validation context key of values read back from a record (:attr:`Origin.recorded`)
RECORDED = "recorded"


def is_recorded(info: ValidationInfo) -> bool:
    """Whether a field validator checks values a run recorded (read back: nothing of the present is asked)."""
    return isinstance(info.context, dict) and bool(info.context.get(RECORDED))


def _ref_name(value: str) -> str:
    problem = revision_problem(value)
    if problem is not None:  # it becomes refs/<value> below the Hugging Face cache: ../../x would leave it
        raise ValueError(f"{shown(value)} is {problem}")
    return value


#: a model's branch, tag or commit on the hub (git's rules for ref names, as the data's ``--revision``)
RefName = Annotated[str, AfterValidator(_ref_name)]
NonNegative = Annotated[float, Field(ge=0)]
Positive = Annotated[float, Field(gt=0)]
Share = Annotated[float, Field(ge=0, le=1)]
#: the largest count or seed a step takes: every integer a step records in ``metrics.json`` is one its reader reads
#: back (:data:`r2med.runs.record.MAX_INT_DIGITS` digits), so ``--top-k 10**41`` is refused here, before any work
COUNT_LIMIT = 10**MAX_INT_DIGITS


def _recordable(value: int) -> int:
    if value >= COUNT_LIMIT:
        raise ValueError(
            f"{value} has {len(str(value)):,} digits; a count r2med records holds at most {MAX_INT_DIGITS} "
            "(metrics.json could not be read back)"
        )
    return value


Count = Annotated[int, Field(ge=1), AfterValidator(_recordable)]
NonNegativeInt = Annotated[int, Field(ge=0), AfterValidator(_recordable)]


@dataclass(frozen=True)
class Origin:
    """Where a spec's values came from: ``style`` names its keys (``cli``: flags; ``file`` and ``python``: names),
    ``where`` goes in front of the message (``exp.toml: [[retrievers]] 2``, ``BM25()``; empty on the command line)."""

    style: Literal["cli", "file", "python"]
    where: str = ""
    #: field -> the key a file spells it with (``[[retrievers]]``: the retriever is ``name``, the result ``label``)
    spelled: tuple[tuple[str, str], ...] = ()
    #: values a run recorded (``metrics.json``), read back: facts of the past, so what checks the present (a model
    #: folder that must exist) is not asked (:data:`RECORDED`)
    recorded: bool = False

    @classmethod
    def cli(cls) -> Origin:
        return cls("cli")

    @classmethod
    def file(cls, where: str, spelled: Mapping[str, str] | None = None) -> Origin:
        return cls("file", where, tuple((spelled or {}).items()))

    @classmethod
    def python(cls, where: str) -> Origin:
        return cls("python", where)

    @classmethod
    def record(cls, where: str) -> Origin:
        """Values a run recorded, read back as the spec that made them (:attr:`recorded`)."""
        return cls("python", where, recorded=True)

    def key(self, spec: type[Spec] | None, name: str) -> str:
        """How a field is named to the user: its flag on the command line, else its name."""
        if self.style != "cli":
            return dict(self.spelled).get(name, name)
        flag = flag_of(spec, name) if spec is not None else None
        if flag == "--set":
            return f"--set {name}"
        return flag or "--" + name.replace("_", "-")

    def fail(self, message: str) -> SpecError:
        return SpecError(f"{self.where}: {message}" if self.where else message)


def field_extra(spec: type[Spec], name: str, key: str) -> JsonValue:
    """The ``key`` fact of field ``name``'s extras (its ``json_schema_extra``), None when it has none."""
    info = spec.model_fields.get(name)
    extra = info.json_schema_extra if info is not None else None
    return extra.get(key) if isinstance(extra, dict) else None


def flag_of(spec: type[Spec], name: str) -> str:
    """The command-line flag of field ``name`` (its ``flag`` extra, else ``--<name>``)."""
    flag = field_extra(spec, name, "flag")
    return str(flag) if flag else "--" + name.replace("_", "-")


def recorded(spec: type[Spec], name: str) -> bool:
    """Whether field ``name`` is recorded in ``metrics.json`` (an API key, say, is not)."""
    return field_extra(spec, name, "record") is not False


def as_recorded(spec: type[Spec], name: str, value: object) -> object:
    """``value`` of field ``name`` as ``metrics.json`` records it: an endpoint's URL without its credentials."""
    if field_extra(spec, name, "record") == "redact" and isinstance(value, str):
        return redact_url(value)
    return value


# -- the words of an error ------------------------------------------------------------------------------


def _bounds(metadata: list[object]) -> str:
    lo: float | None = None
    hi: float | None = None
    lo_open = hi_open = False
    for item in metadata:
        if isinstance(item, annotated_types.Ge):
            lo = typing.cast(float, item.ge)  # r2med's bounds are numbers
        elif isinstance(item, annotated_types.Gt):
            lo, lo_open = typing.cast(float, item.gt), True
        elif isinstance(item, annotated_types.Le):
            hi = typing.cast(float, item.le)
        elif isinstance(item, annotated_types.Lt):
            hi, hi_open = typing.cast(float, item.lt), True
    return range_words(lo, hi, lo_open, hi_open)


def range_words(lo: float | None = None, hi: float | None = None, lo_open: bool = False, hi_open: bool = False) -> str:
    """A range in words, after the kind of number: `` >= 0``, `` between 0 and 1``, `` > 0 and <= 1``."""
    if lo is not None and hi is not None and not lo_open and not hi_open:
        return f" between {lo:g} and {hi:g}"
    parts = []
    if lo is not None:
        parts.append(f"{'>' if lo_open else '>='} {lo:g}")
    if hi is not None:
        parts.append(f"{'<' if hi_open else '<='} {hi:g}")
    return (" " + " and ".join(parts)) if parts else ""


def _words(annotation: object, metadata: list[object]) -> str:
    origin = typing.get_origin(annotation)
    if origin is Annotated:
        inner, *more = typing.get_args(annotation)
        extra = [m for item in more for m in (getattr(item, "metadata", None) or [item])]
        return _words(inner, [*metadata, *extra])
    if origin in (typing.Union, types.UnionType):
        options = [a for a in typing.get_args(annotation) if a is not type(None)]
        return " or ".join(dict.fromkeys(_words(a, metadata) for a in options))
    if origin is Literal:
        return "one of: " + ", ".join(str(a) for a in typing.get_args(annotation))
    if origin in (list, tuple):
        args = [a for a in typing.get_args(annotation) if a is not Ellipsis]
        return f"a list of {_words(args[0], []).removeprefix('a ').removeprefix('an ')}s" if args else "a list"
    if annotation is bool:
        return "true or false"
    if annotation is int:
        return "an integer" + _bounds(metadata)
    if annotation is float:
        return "a finite number" + _bounds(metadata)
    if annotation is str:
        return "text"
    if annotation is Path:
        return "a path (text)"
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return "one of: " + ", ".join(str(m.value) for m in annotation)
    return "a value of another kind"


def expected(spec: type[Spec], name: str) -> str:
    """What field ``name`` of ``spec`` takes, in words: ``a finite number >= 0``, ``an integer >= 1``."""
    info = spec.model_fields[name]
    words = field_extra(spec, name, "expected")
    return str(words) if words else _words(info.annotation, list(info.metadata))


def _value(value: object) -> str:
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    return shown(value)


def _message(spec: type[Spec], error: ErrorDetails, origin: Origin) -> str:
    loc = [part for part in error.get("loc", ()) if isinstance(part, str)]
    kind = str(error.get("type", ""))
    if kind == "extra_forbidden" and loc:
        name = loc[0]
        return (
            f"unknown option {origin.key(spec, name)!r}{did_you_mean(name, list(spec.model_fields))}; "
            f"it takes: {takes(spec, origin)}"
        )
    if kind == "missing" and loc:
        return f"{origin.key(spec, loc[0])}: missing (required)"
    if not loc or loc[0] not in spec.model_fields:  # a check across fields (a model validator)
        ctx = error.get("ctx") or {}
        return str(ctx.get("error") or error.get("msg", "invalid"))
    name = loc[0]
    if kind == "value_error":  # a field's own check (a choice with aliases, a path that must exist)
        ctx = error.get("ctx") or {}
        return f"{origin.key(spec, name)}: {ctx.get('error') or error.get('msg')}"
    return f"{origin.key(spec, name)}: expected {expected(spec, name)}, got {_value(error.get('input'))}"


def takes(spec: type[Spec], origin: Origin) -> str:
    """The options ``spec`` takes, as ``origin`` names them (on the command line: the flags, then those set with
    ``--set``)."""
    names = list(spec.model_fields)
    if origin.style != "cli":
        return ", ".join(names) or "none"
    own = [flag_of(spec, n) for n in names if flag_of(spec, n) != "--set"]
    by_set = [n for n in names if flag_of(spec, n) == "--set"]
    return ", ".join(own) + (f"; with --set KEY=VALUE: {', '.join(by_set)}" if by_set else "") or "none"


def plain(value: object) -> object:
    """A value as the parse reads it: an enum member as its text (``StrEnum`` members come from typer's choices),
    a path (``pathlib.Path``, any ``os.PathLike``) as its text -- a field taking a model, a folder or a file takes
    what a Python user passes as readily as what a file or the command line spells --, in lists and tuples too; a
    numpy scalar as the Python number it is (``np.int64(10)`` is the integer 10, ``np.float32(0.5)`` the float)."""
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, numbers.Integral) and not isinstance(value, (bool, int)):
        return int(value)
    if isinstance(value, numbers.Real) and not isinstance(value, (bool, int, float)):
        return float(value)
    if isinstance(value, (list, tuple)):
        return type(value)(plain(v) for v in value)
    return value


def spec_error(spec: type[Spec], exc: ValidationError, origin: Origin) -> SpecError:
    """The one :class:`SpecError` line of ``exc``'s first fault (a constructor's own validation, say)."""
    return origin.fail(_message(spec, exc.errors(include_url=False)[0], origin))


def parse(spec: type[SpecT], values: Mapping[str, object], origin: Origin) -> SpecT:
    """``spec`` built from ``values``, or one :class:`SpecError` line naming ``origin`` and the key.

    A value of ``None`` means "not set" (the field's default)."""
    data = {str(k): plain(v) for k, v in values.items() if v is not None}
    bad = [k for k in data if not k.isidentifier()]
    if bad:
        raise origin.fail(f"unknown option {bad[0]!r}")
    try:
        return spec.model_validate(data, context={RECORDED: True} if origin.recorded else None)
    except ValidationError as exc:
        raise spec_error(spec, exc, origin) from None


class RetrieverOptions(Spec):
    """What every retriever takes: ``cache`` (``--no-cache``: read and write no cached index or embeddings)."""

    cache: bool = Field(default=True, json_schema_extra={"flag": "--no-cache", "scores": False})

    def record(self) -> dict[str, object]:
        """``metrics.json``'s ``options``: ``cache``, then every field set (secrets left out); a value given as an
        object in Python (a custom encoder) is stored as its text, as ``metrics.json`` stores every config
        (:mod:`r2med.results.folders`)."""
        kind = type(self)
        return {
            "cache": self.cache,
            **{k: as_recorded(kind, k, v) for k, v in self.given().items() if k != "cache" and recorded(kind, k)},
        }


class RerankerOptions(Spec):
    """What every reranker takes (nothing in common: each type below names its own)."""

    def record(self) -> dict[str, object]:
        """The fields set, as recorded (secrets left out)."""
        kind = type(self)
        return {k: as_recorded(kind, k, v) for k, v in self.given().items() if recorded(kind, k)}


def field_names(spec: type[Spec]) -> tuple[str, ...]:
    """The fields of ``spec``, in order."""
    return tuple(spec.model_fields)


def score_fields(spec: type[Spec]) -> tuple[str, ...]:
    """The fields of ``spec`` that change scores (all but those marked ``scores = False``, how a model runs, and
    ``scores = "precision"``, compared by their own rule): what grading compares (:mod:`r2med.results.grading`)."""
    return tuple(name for name in spec.model_fields if field_extra(spec, name, "scores") is None)


def by_checkpoint(spec: type[Spec], name: str) -> bool:
    """Whether field ``name`` names a model or tokenizer, compared by its repository's name when graded."""
    return bool(field_extra(spec, name, "compare") == "checkpoint")
