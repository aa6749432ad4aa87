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
its sha256 (:func:`load_spec`).

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
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..errors import R2MedError
from .file_hash import file_hash

log = logging.getLogger(__name__)

Kind = Literal["encoder", "scorer"]
#: The method each kind of object must have.
METHODS: dict[str, str] = {"encoder": "encode", "scorer": "score"}
RETRIEVER_GROUP = "r2med.retrievers"
RERANKER_GROUP = "r2med.rerankers"


@dataclass(frozen=True)
class Loaded:
    """A user object ready to use, and what a result records about it."""

    obj: Any
    kind: Kind
    spec: str | None = None  # None: an object passed in Python
    module_file: str | None = None
    module_sha256: str | None = None

    @property
    def name(self) -> str | None:
        value = getattr(self.obj, "name", None)
        return str(value) if isinstance(value, str) and value else None

    @property
    def revision(self) -> str | None:
        value = getattr(self.obj, "revision", None)
        return str(value) if value is not None else None

    def describe(self) -> dict[str, Any]:
        """What a result's configuration records (part of the key a finished folder is reused by)."""
        return {
            "spec": self.spec,
            "class": f"{type(self.obj).__module__}.{type(self.obj).__qualname__}",
            "name": self.name,
            "revision": self.revision,
            "module_file": self.module_file,
            "module_sha256": self.module_sha256,
        }


def _import_module(module: str, spec: str, what: str) -> Any:
    if module.endswith(".py") or "/" in module or "\\" in module:
        path = Path(module).expanduser()
        if not path.is_file():
            raise R2MedError(f"{what} {spec}: no such file {path}")
        unique = "r2med_user_" + hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:12]
        if unique in sys.modules:
            return sys.modules[unique]
        loader_spec = importlib.util.spec_from_file_location(unique, path)
        if loader_spec is None or loader_spec.loader is None:
            raise R2MedError(f"{what} {spec}: cannot load {path} as a Python module")
        loaded = importlib.util.module_from_spec(loader_spec)
        sys.modules[unique] = loaded
        try:
            loader_spec.loader.exec_module(loaded)
        except Exception as exc:
            del sys.modules[unique]
            raise R2MedError(f"{what} {spec}: importing {path} failed: {type(exc).__name__}: {exc}") from exc
        return loaded
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name and module.startswith(exc.name):
            raise R2MedError(
                f"{what} {spec}: no module {module!r} on the Python path (or give a .py file's path)"
            ) from exc
        raise R2MedError(f"{what} {spec}: importing {module} failed: {exc}") from exc
    except Exception as exc:
        raise R2MedError(f"{what} {spec}: importing {module} failed: {type(exc).__name__}: {exc}") from exc


def ready(obj: Any, kind: Kind, where: str) -> Any:
    """An object with the method of ``kind``: ``obj`` itself, or what calling it (a class or a factory)
    with no arguments gives; anything else is a one-line error naming ``where``."""
    method = METHODS[kind]
    if not inspect.isclass(obj) and callable(getattr(obj, method, None)):
        return obj
    if callable(obj):
        try:
            made = obj()
        except Exception as exc:
            raise R2MedError(f"{where}: calling it with no arguments failed: {type(exc).__name__}: {exc}") from exc
        if callable(getattr(made, method, None)):
            return made
        raise R2MedError(f"{where}: calling it gave a {type(made).__name__}, which has no {method}() method")
    raise R2MedError(
        f"{where}: a {type(obj).__name__} has no {method}() method (the {kind} contract: "
        + ("encode(texts, role) -> array (n, d)" if kind == "encoder" else "score(query, docs) -> list of floats")
        + ")"
    )


def load_spec(spec: str, kind: Kind, what: str) -> Loaded:
    """The object ``MODULE:OBJ`` names (``what``: the option, for messages), made ready (:func:`ready`)."""
    module, sep, attr = spec.rpartition(":")
    if not sep or not module or not attr or (len(module) == 1 and module.isalpha()):  # C:\... has no OBJ
        raise R2MedError(f"{what} {spec!r}: expected MODULE:OBJ (a dotted module or a .py file, then the object)")
    loaded = _import_module(module, spec, what)
    obj: Any = loaded
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise R2MedError(f"{what} {spec}: {module} has no {attr!r}")
        obj = getattr(obj, part)
    file = getattr(loaded, "__file__", None)
    return Loaded(
        ready(obj, kind, f"{what} {spec}"),
        kind,
        spec,
        str(Path(file).resolve()) if file else None,
        file_hash(file, "sha256") if file and Path(file).is_file() else None,
    )


def as_loaded(value: Any, kind: Kind, what: str) -> Loaded:
    """A spec the user typed (text), an object passed in Python, or an already loaded one."""
    if isinstance(value, Loaded):
        return value
    if isinstance(value, str):
        return load_spec(value, kind, what)
    obj = ready(value, kind, what)
    module = sys.modules.get(type(obj).__module__)
    file = getattr(module, "__file__", None)
    return Loaded(
        obj,
        kind,
        None,
        str(Path(file).resolve()) if file else None,
        file_hash(file, "sha256") if file and Path(file).is_file() else None,
    )


def short_name(value: Any) -> str:
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
    _cache: dict[str, Loaded] = field(default_factory=dict, compare=False, repr=False)

    def load(self, kind: Kind) -> Loaded:
        if "obj" not in self._cache:
            from importlib.metadata import entry_points

            point = next((ep for ep in entry_points(group=self.group) if ep.name == self.name), None)
            if point is None:
                raise R2MedError(f"entry point {self.name!r} of {self.group} is gone")
            where = f"entry point {self.name} ({self.value})"
            try:
                obj = point.load()
            except Exception as exc:
                raise R2MedError(f"{where}: loading failed: {type(exc).__name__}: {exc}") from exc
            module = sys.modules.get(point.module)
            file = getattr(module, "__file__", None)
            self._cache["obj"] = Loaded(
                ready(obj, kind, where),
                kind,
                f"entry-point:{self.group}:{self.name}",
                str(Path(file).resolve()) if file else None,
                file_hash(file, "sha256") if file and Path(file).is_file() else None,
            )
        return self._cache["obj"]


def entry_point_presets(group: str) -> list[EntryPointPreset]:
    """The entry points of ``group`` installed (or on ``sys.path`` as ``*.dist-info``), none imported."""
    from importlib.metadata import entry_points

    found: dict[str, EntryPointPreset] = {}
    for ep in entry_points(group=group):
        dist = getattr(ep, "dist", None)
        found.setdefault(ep.name, EntryPointPreset(ep.name, ep.value, group, getattr(dist, "name", None)))
    return [found[name] for name in sorted(found)]


def register_entry_points(group: str, register: Callable[[EntryPointPreset], None], taken: Mapping[str, Any]) -> None:
    """Register each entry point of ``group`` whose name is free (a built-in name wins, with a warning)."""
    for preset in entry_point_presets(group):
        if preset.name in taken:
            log.warning("entry point %s of %s: the name is r2med's own; ignored", preset.name, group)
            continue
        register(preset)


def check_scores(scores: Any, n: int, where: str) -> list[float]:
    """A scorer's output: ``n`` finite numbers."""
    import math

    try:
        values = [float(s) for s in scores]
    except (TypeError, ValueError) as exc:
        raise R2MedError(f"{where}: score() must return numbers ({exc})") from exc
    if len(values) != n:
        raise R2MedError(f"{where}: score() returned {len(values)} scores for {n} docs")
    if not all(math.isfinite(v) for v in values):
        raise R2MedError(f"{where}: score() returned a non-finite score")
    return values


def check_vectors(vectors: Any, n: int, where: str) -> Any:
    """An encoder's output as a float32 array of ``n`` rows."""
    import numpy as np

    array = np.asarray(vectors, dtype=np.float32)
    if array.ndim != 2 or array.shape[0] != n:
        raise R2MedError(f"{where}: encode() must return an array of shape ({n}, d), got {array.shape}")
    if not np.isfinite(array).all():
        raise R2MedError(f"{where}: encode() returned non-finite values")
    return array


def text_lengths(texts: Sequence[str]) -> list[int]:
    """What length-sorted batching sorts user encoders' texts by (no tokenizer known): words."""
    return [max(1, len(t.split())) for t in texts]
