"""Task names over every benchmark family: which family a name is, r2med's spelling of it, aliases, ``--tasks``.

Each family owns its names (:meth:`r2med.data.benchmarks.Benchmark.canonical`, ``aliases``, ``long_setting``:
R2MED's ``Biology``, BRIGHT's ``bright:earth_science``); this module asks the families in the registry
(:func:`r2med.data.benchmarks.benchmarks`) and never names one.  :func:`parse_tasks` is the one reading of a
``--tasks`` spec; :func:`family_of` says which family a name is.  It reads names only (no hub, no files), so every
layer can ask it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ..errors import OptionError, did_you_mean, shown
from .benchmarks import benchmark_of, benchmarks

#: the word ``--tasks`` means when it is not given (a family's alias: R2MED's 8, as it always meant)
DEFAULT = "all"
#: the suffix of a family's word for its long-document settings (``bright:long``)
LONG = "long"


def family_of(task: str) -> str | None:
    """The name of the family whose task ``task`` is, or None: a local collection's name.  A malformed name of a
    family (``bright:nosuch``) is that family's one-line error."""
    family = benchmark_of(task)
    return None if family is None else family.name


def is_hub_task(task: str) -> bool:
    """Whether ``task`` names a benchmark's hub task (any family's)."""
    try:
        return family_of(task) is not None
    except OptionError:
        return False


def canonical_task(task: str) -> str:
    """r2med's spelling of a benchmark task (``biology`` -> ``Biology``, ``bright:Earth-Science`` ->
    ``bright:earth_science``), or a one-line error listing what ``--tasks`` takes."""
    family = benchmark_of(task)
    name = family.canonical(task) if family is not None else None
    if name is None:
        raise unknown_task(task)
    return name


def hub_task(task: str) -> str:
    """The hub task a name reads, in r2med's spelling: its key in ``--revision`` pairs (BRIGHT's long-document
    setting reads its task's revision: ``bright:biology:long`` -> ``bright:biology``)."""
    family = benchmark_of(task)
    if family is None:
        raise unknown_task(task)
    return family.hub_task(task)


def unknown_task(task: str) -> OptionError:
    known = [n for b in benchmarks() for n in (*b.task_names(), *b.aliases())]
    return OptionError(
        f"unknown task {shown(task)}{did_you_mean(task, known)}; choose from "
        + ", or ".join(b.choices() for b in benchmarks())
        + "; `r2med tasks` lists them"
    )


def aliases() -> Mapping[str, tuple[str, ...]]:
    """Words ``--tasks`` takes for several tasks (lower case) -> the tasks, over every family."""
    return {word: tasks for b in benchmarks() for word, tasks in b.aliases().items()}


def task_parts(spec: str | Iterable[str] | None) -> list[str] | None:
    """The names a ``--tasks`` spec gives, as written (None for None: the default); a spec that
    names nothing (``""``, ``","``, ``[]``) or holds something other than names is an OptionError: an empty
    ``--tasks`` or ``tasks = ""`` never means "all", nor an empty table."""
    if spec is None:
        return None
    if isinstance(spec, str):
        parts = spec.split(",")
    elif isinstance(spec, Iterable) and not isinstance(spec, Mapping):
        parts = list(spec)
    else:
        raise OptionError(f"--tasks: expected task names (text, or a list of them), got {shown(spec)}")
    bad = [p for p in parts if not isinstance(p, str)]
    if bad:
        raise OptionError(f"--tasks: expected task names, got {shown(bad[0])} in {shown(spec)}")
    names = [p.strip() for p in parts if p.strip()]
    if not names:
        raise OptionError(
            f"--tasks {shown(spec)} names no task; name them (Biology,bright:pony), or all (R2MED's 8) or bright"
        )
    return names


def parse_tasks(spec: str | Iterable[str] | None, long_documents: bool = False) -> list[str]:
    """A ``--tasks`` spec as benchmark task names, each once, in the order given: None -> :data:`DEFAULT`; a family's
    word (``all``/``r2med``: R2MED's 8; ``bright``: BRIGHT's 12; ``bright:long``: its 8 long-document settings); else
    comma-separated names of any family (``Biology,bright:earth-science``); a spec that names nothing is a one-line
    error (:func:`task_parts`).  ``long_documents``: every task in its long-document setting (a family's word then
    means its tasks that have one; a task without one is a one-line error)."""
    parts = task_parts(spec) or [DEFAULT]
    groups = aliases()
    found: list[str] = []
    for part in parts:
        word = part.lower()
        if long_documents and f"{word}:{LONG}" in groups:  # a family's tasks that have a long-document setting
            word = f"{word}:{LONG}"
        found += list(groups[word]) if word in groups else [canonical_task(part)]
    found = list(dict.fromkeys(found))
    if long_documents:
        found = [_long(n) for n in found]
    return list(dict.fromkeys(found))


def _long(name: str) -> str:
    family = benchmark_of(name)
    long = family.long_setting(name) if family is not None else None
    if long is None:
        have = " or ".join(b.title for b in benchmarks() if b.has_long_documents)
        raise OptionError(f"--long-documents: {name} is not a {have} task (the long-document setting is {have}'s)")
    return long
