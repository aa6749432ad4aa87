"""Your own encoder and reranker: user objects behind r2med's retrieval and reranking.

The contracts (docs/dense.md, docs/rerank.md):

* an **encoder** has ``encode(texts: list[str], role: "query" | "doc") -> array (n, d)``; optional
  attributes ``name`` and ``revision`` key the embedding cache (without ``name`` the cache is off, with
  a note), ``similarity`` (``cosine`` or ``dot``) is how its vectors are scored;
* a **scorer** has ``score(query: str, docs: list[str]) -> list[float]`` (higher first); optional
  ``name`` and ``revision`` are recorded.

A *spec* ``MODULE:OBJ`` names one: ``MODULE`` is a dotted module importable from ``sys.path``
(``mypkg.encoders``) or a path to a ``.py`` file (``./my_encoder.py``); ``OBJ`` (dots allowed) is a
class (called with no arguments), a factory (called with no arguments) or an instance.  Loading it runs
the user's code, so it is only ever done for a spec the user typed or an object passed in Python --
never for one read from a results file.  What is loaded is recorded: the spec, the module's file and
the sha256 of the code that runs (:func:`load_spec`): a ``.py`` file is read once, hashed, and those
bytes are what is compiled and run (no ``__pycache__`` is read or written beside it), so a file edited
between two loads in one process is loaded again, and the record names the code that ran.

The contract is checked on every call (:func:`call_user`, :func:`check_vectors`, :func:`check_scores`):
vectors are real finite numbers, one row per text, of a width of at least 1 that stays the same for every
batch and for queries and documents; scores are real finite numbers, one per document.  Anything else
-- strings, bools, complex numbers, a generator, ragged rows, a dict, ``10**400`` -- and any exception
(``SystemExit`` included; only ``KeyboardInterrupt`` passes) raised by the user's code is one
:class:`UserCodeError` line naming the spec; ``-v`` logs the traceback.

Packages register presets through the entry-point groups ``r2med.retrievers`` and ``r2med.rerankers``
(:func:`entry_point_records`): each entry point names an encoder or a scorer as above; it is listed by
``r2med models`` and loaded only when used.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import logging
import math
import numbers
import sys
import types
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path
from typing import TYPE_CHECKING, Generic, Literal, Protocol, TypeGuard, TypeVar, overload

import numpy as np
from numpy.typing import NDArray

from ..errors import R2MedError, shown
from .file_hash import file_hash
from .json_types import JsonObject

if TYPE_CHECKING:
    import torch

log = logging.getLogger(__name__)


class UserCodeError(R2MedError):
    """The user's encoder or scorer broke its contract or raised: one line naming the spec (``-v``: the traceback)."""


def _reason(exc: BaseException) -> str:
    if isinstance(exc, SystemExit):
        return f"called sys.exit({exc.code!r}) (SystemExit)"
    text = " ".join(str(exc).split())
    return f"raised {type(exc).__name__}" + (f": {text}" if text else "")


Returned = TypeVar("Returned")


def call_user(where: str, what: str, fn: Callable[..., Returned], *args: object) -> Returned:
    """``fn(*args)``, the user's code: any exception it raises (``SystemExit`` and other ``BaseException``\\ s
    too, ``KeyboardInterrupt`` aside) becomes one :class:`UserCodeError` line ``<where>: <what> raised ...``; the
    traceback goes to the debug log (``r2med -v``)."""
    try:
        return fn(*args)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:
        log.debug("%s: %s raised; its traceback:", where, what, exc_info=exc)
        raise UserCodeError(f"{where}: {what} {_reason(exc)}") from exc


Kind = Literal["encoder", "scorer"]
#: The method each kind of object must have.
METHODS: dict[str, str] = {"encoder": "encode", "scorer": "score"}
RETRIEVER_GROUP = "r2med.retrievers"
RERANKER_GROUP = "r2med.rerankers"


class Encoder(Protocol):
    """What r2med calls on a user encoder (its answer is held to the contract by :func:`check_vectors`)."""

    def encode(self, texts: list[str], role: str) -> object: ...


class Scorer(Protocol):
    """What r2med calls on a user scorer (its answer is held to the contract by :func:`check_scores`)."""

    def score(self, query: str, docs: list[str]) -> object: ...


#: the user object a :class:`Loaded` holds: an encoder or a scorer
UserObject = TypeVar("UserObject", covariant=True)


@dataclass(frozen=True)
class Loaded(Generic[UserObject]):
    """A user object ready to use, and what a result records about it."""

    obj: UserObject
    kind: Kind
    spec: str | None = None  # None: an object passed in Python
    module_file: str | None = None
    module_sha256: str | None = None

    @property
    def where(self) -> str:
        """How messages name it: ``encoder ./my.py:Enc``."""
        return f"{self.kind} {self.spec or type(self.obj).__name__}"

    def attribute(self, name: str) -> object:
        """The object's optional attribute ``name`` (None when absent); a property that raises is a UserCodeError."""
        return call_user(self.where, f"reading .{name}", getattr, self.obj, name, None)

    @property
    def name(self) -> str | None:
        value = self.attribute("name")
        return str(value) if isinstance(value, str) and value else None

    @property
    def revision(self) -> str | None:
        value = self.attribute("revision")
        return call_user(self.where, "str(.revision)", str, value) if value is not None else None

    def describe(self) -> JsonObject:
        """What a result's configuration records (part of the key a finished folder is reused by)."""
        return {
            "spec": self.spec,
            "class": f"{type(self.obj).__module__}.{type(self.obj).__qualname__}",
            "name": self.name,
            "revision": self.revision,
            "module_file": self.module_file,
            "module_sha256": self.module_sha256,
        }


#: the sha256 of the code each module r2med saw first ran with (module name -> hex): a module imported once
#: keeps running the code it was imported with, whatever its file holds later
_CODE_SHA256: dict[str, str] = {}


def module_code_sha256(module: types.ModuleType) -> str | None:
    """The sha256 of the code ``module`` runs: for a ``.py`` file r2med loaded, of the bytes it compiled; for
    another module, of its file when r2med first saw it in this process (None: no source file)."""
    name = getattr(module, "__name__", None)
    if isinstance(name, str) and name in _CODE_SHA256:
        recorded = _CODE_SHA256[name]
        file = getattr(module, "__file__", None)
        if (
            file
            and not name.startswith(_FILE_MODULE)
            and Path(file).is_file()
            and file_hash(file, "sha256") != recorded
        ):
            log.warning(
                "%s changed on disk since it was imported: the code that runs (and is recorded) is the imported "
                "one; restart Python to run the edit",
                file,
            )
        return recorded
    file = getattr(module, "__file__", None)
    if not file or not Path(file).is_file():
        return None
    digest = file_hash(file, "sha256")
    if isinstance(name, str):
        _CODE_SHA256[name] = digest
    return digest


_FILE_MODULE = "r2med_user_"


def _load_file(path: Path, spec: str, what: str) -> types.ModuleType:
    """A ``.py`` file as a module: its bytes read once, hashed and compiled (never a ``__pycache__`` copy), under
    a name made of its path and that hash, so an edited file is a new module."""
    try:
        source = path.read_bytes()
    except OSError as exc:
        raise R2MedError(f"{what} {spec}: cannot read {path} ({exc.strerror or exc})") from None
    digest = hashlib.sha256(source).hexdigest()
    unique = _FILE_MODULE + hashlib.sha256(f"{path.resolve()}\0{digest}".encode()).hexdigest()[:16]
    if unique in sys.modules:
        return sys.modules[unique]
    loaded = types.ModuleType(unique)
    loaded.__file__ = str(path.resolve())
    sys.modules[unique] = loaded
    _CODE_SHA256[unique] = digest
    try:
        code = compile(source, str(path), "exec", dont_inherit=True)
        exec(code, loaded.__dict__)
    except KeyboardInterrupt:
        del sys.modules[unique]
        raise
    except BaseException as exc:
        del sys.modules[unique]
        log.debug("%s %s: importing %s failed; its traceback:", what, spec, path, exc_info=exc)
        raise UserCodeError(f"{what} {spec}: importing {path} {_reason(exc)}") from exc
    return loaded


def _import_module(module: str, spec: str, what: str) -> types.ModuleType:
    if module.endswith(".py") or "/" in module or "\\" in module:
        path = Path(module).expanduser()
        if not path.is_file():
            raise R2MedError(f"{what} {spec}: no such file {path}")
        return _load_file(path, spec, what)
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name and module.startswith(exc.name):
            raise R2MedError(
                f"{what} {spec}: no module {module!r} on the Python path (or give a .py file's path)"
            ) from exc
        raise R2MedError(f"{what} {spec}: importing {module} failed: {exc}") from exc
    except KeyboardInterrupt:
        raise
    except BaseException as exc:
        log.debug("%s %s: importing %s failed; its traceback:", what, spec, module, exc_info=exc)
        raise UserCodeError(f"{what} {spec}: importing {module} {_reason(exc)}") from exc


def _fits(obj: object, kind: Kind, where: str) -> TypeGuard[Encoder | Scorer]:
    """Whether ``obj`` has the method of ``kind`` (an encoder's ``encode``, a scorer's ``score``), callable."""
    method = METHODS[kind]
    return callable(call_user(where, f"looking up {method}", getattr, obj, method, None))


@overload
def ready(obj: object, kind: Literal["encoder"], where: str) -> Encoder: ...
@overload
def ready(obj: object, kind: Literal["scorer"], where: str) -> Scorer: ...
def ready(obj: object, kind: Kind, where: str) -> Encoder | Scorer:
    """An object with the method of ``kind``: ``obj`` itself, or what calling it (a class or a factory)
    with no arguments gives; anything else is a one-line error naming ``where``."""
    method = METHODS[kind]
    if not inspect.isclass(obj) and _fits(obj, kind, where):
        return obj
    if callable(obj):
        made = call_user(where, "called with no arguments", obj)
        if _fits(made, kind, where):
            return made
        raise R2MedError(f"{where}: calling it gave a {type(made).__name__}, which has no {method}() method")
    raise R2MedError(
        f"{where}: a {type(obj).__name__} has no {method}() method (the {kind} contract: "
        + ("encode(texts, role) -> array (n, d)" if kind == "encoder" else "score(query, docs) -> list of floats")
        + ")"
    )


def _loaded(
    obj: object, kind: Kind, where: str, spec: str | None, module: types.ModuleType | None
) -> Loaded[Encoder | Scorer]:
    """``obj`` made ready (:func:`ready`), with what a result records of the module it came from."""
    file = getattr(module, "__file__", None)
    return Loaded(
        ready(obj, kind, where),
        kind,
        spec,
        str(Path(file).resolve()) if file else None,
        module_code_sha256(module) if module is not None else None,
    )


@overload
def load_spec(spec: str, kind: Literal["encoder"], what: str) -> Loaded[Encoder]: ...
@overload
def load_spec(spec: str, kind: Literal["scorer"], what: str) -> Loaded[Scorer]: ...
def load_spec(spec: str, kind: Kind, what: str) -> Loaded[Encoder | Scorer]:
    """The object ``MODULE:OBJ`` names (``what``: the option, for messages), made ready (:func:`ready`)."""
    module, sep, attr = spec.rpartition(":")
    if not sep or not module or not attr or (len(module) == 1 and module.isalpha()):  # C:\... has no OBJ
        raise R2MedError(f"{what} {spec!r}: expected MODULE:OBJ (a dotted module or a .py file, then the object)")
    loaded = _import_module(module, spec, what)
    obj: object = loaded
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise R2MedError(f"{what} {spec}: {module} has no {attr!r}")
        obj = getattr(obj, part)
    return _loaded(obj, kind, f"{what} {spec}", spec, loaded)


@overload
def as_loaded(value: object, kind: Literal["encoder"], what: str) -> Loaded[Encoder]: ...
@overload
def as_loaded(value: object, kind: Literal["scorer"], what: str) -> Loaded[Scorer]: ...
def as_loaded(value: object, kind: Kind, what: str) -> Loaded[Encoder | Scorer]:
    """A spec the user typed (text), an object passed in Python, or an already loaded one."""
    if isinstance(value, Loaded):
        return value
    if isinstance(value, str):
        return load_spec(value, kind, what)
    obj = ready(value, kind, what)
    return _loaded(obj, kind, what, None, sys.modules.get(type(obj).__module__))


def code_sha256s(loaded: Loaded[object]) -> list[str] | None:
    """The sha256 of the code behind ``loaded``: its module's, and that of the module defining its object's
    class when that is another file (a factory in one file making an object of another); None when a part has
    no source file to hash (a class defined in a notebook)."""
    found = [loaded.module_sha256]
    own = sys.modules.get(type(loaded.obj).__module__)
    if own is not None and getattr(own, "__file__", None) != loaded.module_file:
        found.append(module_code_sha256(own))
    if any(h is None for h in found):
        return None
    return sorted({h for h in found if h is not None})


def short_name(value: object) -> str:
    """A name for a result made with a custom object: its declared ``name``, else the spec's OBJ, else its class."""
    obj = value.obj if isinstance(value, Loaded) else value
    declared = getattr(obj, "name", None)
    if isinstance(declared, str) and declared:
        text = declared
    elif isinstance(value, Loaded) and value.spec:  # loaded from MODULE:OBJ: its OBJ, as before it was loaded
        text = value.spec.rpartition(":")[2]
    elif isinstance(value, str):
        text = value.rpartition(":")[2]
    else:  # an object given in Python (a loaded one: the object's class, never the wrapper's)
        text = type(obj).__name__ if not inspect.isclass(obj) else obj.__name__
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in text.rsplit("/", 1)[-1]) or "custom"


# -- entry points ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class EntryPointPreset:
    """A preset a package registered (an entry point of ``group``): loaded only when used."""

    name: str
    value: str
    group: str
    dist: str | None = None
    _cache: dict[str, Loaded[Encoder | Scorer]] = field(default_factory=dict, compare=False, repr=False)

    @overload
    def load(self, kind: Literal["encoder"]) -> Loaded[Encoder]: ...
    @overload
    def load(self, kind: Literal["scorer"]) -> Loaded[Scorer]: ...
    def load(self, kind: Kind) -> Loaded[Encoder | Scorer]:
        if "obj" not in self._cache:
            point = next((ep for ep in entry_points(group=self.group) if ep.name == self.name), None)
            if point is None:
                raise R2MedError(f"entry point {self.name!r} of {self.group} is gone")
            where = f"entry point {self.name} ({self.value})"
            obj = call_user(where, "loading", point.load)
            self._cache["obj"] = _loaded(
                obj, kind, where, f"entry-point:{self.group}:{self.name}", sys.modules.get(point.module)
            )
        return self._cache["obj"]


def entry_point_presets(group: str) -> list[EntryPointPreset]:
    """The entry points of ``group`` installed (or on ``sys.path`` as ``*.dist-info``), none imported."""
    found: dict[str, EntryPointPreset] = {}
    for ep in entry_points(group=group):
        dist = getattr(ep, "dist", None)
        found.setdefault(ep.name, EntryPointPreset(ep.name, ep.value, group, getattr(dist, "name", None)))
    return [found[name] for name in sorted(found)]


def register_entry_points(
    group: str, register: Callable[[EntryPointPreset], None], taken: Mapping[str, object]
) -> None:
    """Register each entry point of ``group`` whose name is free (a built-in name wins, with a warning)."""
    for preset in entry_point_presets(group):
        if preset.name in taken:
            log.warning("entry point %s of %s: the name is r2med's own; ignored", preset.name, group)
            continue
        register(preset)


def _is_tensor(value: object) -> TypeGuard[torch.Tensor]:
    return type(value).__module__.startswith("torch") and callable(getattr(value, "detach", None))


def _shown_value(item: object) -> str:
    """A value for a message: an integer too long to print (``10**5000``) by its size, anything else cut short."""
    if isinstance(item, int) and not isinstance(item, bool) and item.bit_length() > 64:
        return f"an integer of {item.bit_length()} bits"
    return shown(item, 40)


def _refuse_kind(array: NDArray[np.generic], what: str) -> None:
    """A numpy array's dtype as the contract wants it: real numbers (integers or floats), not bools, complex
    numbers, text, dates or Python objects that are not real numbers (each element of an object array is looked
    at: a bool among numbers is refused, not read as 0 or 1)."""

    kind = array.dtype.kind
    if kind in "iuf":
        return
    named = {"b": "bools", "c": "complex numbers", "U": "strings", "S": "bytes", "M": "dates", "m": "durations"}
    if kind in named:
        raise UserCodeError(f"{what} {named[kind]}, not real numbers")
    if kind != "O":
        raise UserCodeError(f"{what} values of dtype {array.dtype}, not real numbers")
    for item in array.reshape(-1):
        if isinstance(item, (bool, np.bool_)) or not isinstance(item, numbers.Real):
            hint = " (return plain numbers: .item() or .tolist())" if callable(getattr(item, "item", None)) else ""
            raise UserCodeError(f"{what} a {type(item).__name__} ({_shown_value(item)}), not a real number{hint}")


def _as_numpy(value: object, what: str, method: str) -> NDArray[np.generic]:
    """An array (numpy, torch) or a list/tuple as a numpy array of real numbers (an object array when it came
    from a list); anything else -- a generator, a dict, a string, a set, None -- is a UserCodeError naming its type."""
    if _is_tensor(value):
        dtype = str(value.dtype)
        if value.is_complex():
            raise UserCodeError(f"{what} a complex tensor ({dtype}), not real numbers")
        if dtype == "torch.bool":
            raise UserCodeError(f"{what} a tensor of bools, not real numbers")
        try:
            return value.detach().cpu().double().numpy()
        except Exception as exc:  # a meta tensor, a tensor on a device that is gone
            raise UserCodeError(f"{what} a tensor that cannot be read on the CPU ({_reason(exc)})") from exc
    if isinstance(value, np.ndarray):
        array = value
    elif isinstance(value, (list, tuple)):
        try:
            array = np.array(value, dtype=object)  # each element as it is: no bool read as 1, no "1.5" as 1.5
        except ValueError:
            raise UserCodeError(f"{what} rows of different lengths (ragged), not one array") from None
        if array.ndim == 1 and any(isinstance(row, (list, tuple, np.ndarray)) for row in array):
            raise UserCodeError(f"{what} rows of different lengths (ragged), not one array")
    else:
        wanted = "an array (n, d) or a list of rows"
        if method != "encode()":
            wanted = "a list or array of numbers, one per doc"
        raise UserCodeError(f"{what} a {type(value).__name__}; {method} must return {wanted}")
    _refuse_kind(array, what)
    return array


def check_scores(scores: object, n: int, where: str) -> list[float]:
    """A scorer's output: ``n`` real finite numbers (a list, tuple, numpy array or tensor of shape ``(n,)``);
    anything else is a UserCodeError naming ``where``."""
    what = f"{where}: score() returned"
    array = _as_numpy(scores, what, "score()")
    if array.ndim != 1:
        raise UserCodeError(f"{what} an array of shape {tuple(array.shape)}; return one number per doc, shape ({n},)")
    if len(array) != n:
        raise UserCodeError(f"{what} {len(array)} scores for {n} docs")
    values = []
    for item in array.tolist() if array.dtype.kind != "O" else list(array):
        try:
            value = float(item)
        except OverflowError:
            value = math.inf
        if not math.isfinite(value):
            raise UserCodeError(f"{what} {_shown_value(item)}, not a finite number")
        values.append(value)
    return values


def check_vectors(vectors: object, n: int, where: str, width: int | None = None) -> NDArray[np.float32]:
    """An encoder's output as a float32 array of ``n`` rows of real finite numbers, at least 1 wide (``width``:
    the width earlier batches had, which this one must have too); anything else is a UserCodeError."""
    what = f"{where}: encode() returned"
    array = _as_numpy(vectors, what, "encode()")
    if array.ndim != 2:
        raise UserCodeError(f"{what} an array of shape {tuple(array.shape)}; it must be ({n}, d): one row per text")
    if array.shape[0] != n:
        raise UserCodeError(f"{what} {array.shape[0]} vectors for {n} texts")
    if array.shape[1] < 1:
        raise UserCodeError(f"{what} vectors of width 0")
    if width is not None and array.shape[1] != width:
        raise UserCodeError(f"{what} vectors of width {array.shape[1]} after vectors of width {width}")
    if array.dtype.kind == "O":
        try:
            array = array.astype(np.float64)
        except OverflowError:
            raise UserCodeError(f"{what} a number beyond float range, not a finite vector value") from None
    with np.errstate(over="ignore", invalid="ignore"):
        out = np.asarray(array, dtype=np.float32)
    if not np.isfinite(out).all():
        raise UserCodeError(f"{what} values that are not finite numbers (NaN, inf, or beyond float32's range)")
    return out


def text_lengths(texts: Sequence[str]) -> list[int]:
    """What length-sorted batching sorts user encoders' texts by (no tokenizer known): words."""
    return [max(1, len(t.split())) for t in texts]
