"""Task names of the benchmark families, as r2med spells them: which family a name is, aliases, ``--tasks``.

* R2MED's 8 tasks keep their names (``Biology``, ``MedQA-Diag``; any case): the registry of :mod:`.tasks`;
* BRIGHT's 12 are ``bright:<task>`` with BRIGHT's task names (``bright:earth_science``; hyphens and any case
  accepted: ``bright:Earth-Science``), and ``bright:<task>:long`` the long-document setting of the 8 that have one
  (:func:`parse_name`; the facts: :mod:`r2med.protocol.bright`); its reasoning query sets are named by their LLM
  (:func:`reasoning_name`: ``-e reason:gpt4``);
* words for several tasks: ``all`` and ``r2med`` (R2MED's 8: ``all`` means what it always meant), ``bright``
  (BRIGHT's 12), ``bright:long`` (its 8 long-document settings).

:func:`parse_tasks` is the one reading of a ``--tasks`` spec over both families; :func:`family_of` says which
family a name is (the family objects, with their data and protocols: :mod:`.benchmarks`).  This module reads names
only (no hub, no files), so every layer can ask it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ..errors import OptionError, did_you_mean, shown
from ..protocol import bright as facts

#: the family names
R2MED, BRIGHT = "r2med", facts.FAMILY
#: what ``--tasks`` takes for R2MED's 8 tasks (``all`` too, for what it always meant)
R2MED_ALIASES = ("all", "r2med")

# -- BRIGHT ------------------------------------------------------------------------------------------------------

PREFIX = f"{facts.FAMILY}:"
LONG = "long"
#: The expansion method of BRIGHT's reasoning query sets (``-e reason:gpt4``).
REASON = "reason"


@dataclass(frozen=True)
class BrightName:
    """A BRIGHT task as r2med names it: the hub task and whether its long-document setting is meant."""

    task: str  #: BRIGHT's task name (``earth_science``)
    long: bool = False

    @property
    def name(self) -> str:
        """r2med's name: ``bright:earth_science`` (``bright:biology:long``)."""
        return f"{PREFIX}{self.task}" + (f":{LONG}" if self.long else "")

    @property
    def hub_task(self) -> str:
        """The hub task it reads (its revision is this name's in ``--revision`` pairs): ``bright:biology``."""
        return f"{PREFIX}{self.task}"

    @property
    def documents(self) -> str:
        """The hub config of its corpus: ``documents`` or ``long_documents``."""
        return "long_documents" if self.long else "documents"

    @property
    def judgments(self) -> str:
        """The examples' field its judgments come from: ``gold_ids`` or ``gold_ids_long``."""
        return "gold_ids_long" if self.long else "gold_ids"


def is_bright(name: str) -> bool:
    """Whether ``name`` is in BRIGHT's spelling (``bright:...``, any case)."""
    return name.strip().lower().startswith(PREFIX)


def parse_name(name: str) -> BrightName:
    """``bright:earth-science`` -> ``BrightName("earth_science")``; ``bright:biology:long`` -> the long setting
    (a task without long documents is a one-line error naming the 8 that have them)."""
    text = name.strip()
    if not is_bright(text):
        raise OptionError(f"{shown(name)} is not a BRIGHT task name (bright:<task>, e.g. bright:biology)")
    rest = text[len(PREFIX) :]
    task_part, sep, setting = rest.partition(":")
    if sep and setting.strip().lower() != LONG:
        raise OptionError(
            f"BRIGHT task {shown(name)}: {shown(setting)} is not a setting (bright:<task>:long is the "
            "long-document setting)"
        )
    task = facts.task(task_part)
    if sep and not task.has_long_documents:
        raise OptionError(
            f"BRIGHT task {task.name!r} has no long documents; the long-document setting exists for "
            + ", ".join(facts.hub().long_document_tasks)
        )
    return BrightName(task.name, long=bool(sep))


def long_name(name: str) -> str:
    """The long-document setting of a BRIGHT task name (``bright:biology`` -> ``bright:biology:long``)."""
    parsed = parse_name(name)
    return parse_name(f"{parsed.hub_task}:{LONG}").name


def names(long: bool = False) -> tuple[str, ...]:
    """The 12 tasks' names in BRIGHT's order (``long``: the 8 long-document settings)."""
    if long:
        return tuple(f"{PREFIX}{t}:{LONG}" for t in facts.hub().long_document_tasks)
    return tuple(f"{PREFIX}{t.name}" for t in facts.tasks())


def reasoning_config(llm: str) -> str:
    """The hub config of a reasoning query set named by its LLM (``gpt4`` -> ``gpt4_reason``), case aside."""
    known = {r.name.lower(): r for r in facts.hub().reasoning_sets}
    found = known.get(llm.strip().lower()) or known.get(llm.strip().lower().removesuffix("_reason"))
    if found is None:
        choices = [r.name for r in facts.hub().reasoning_sets]
        raise OptionError(
            f"no BRIGHT reasoning query set {shown(llm)}{did_you_mean(llm, choices)}; "
            f"choose from: {', '.join(f'{REASON}:{c}' for c in choices)}"
        )
    return found.config


def reasoning_name(llm: str) -> str:
    """A reasoning set's name as BRIGHT's ``--reasoning`` spells it (``GEMINI-1.0`` -> ``Gemini-1.0``)."""
    config = reasoning_config(llm)
    return next(r.name for r in facts.hub().reasoning_sets if r.config == config)


# -- both families -----------------------------------------------------------------------------------------------


def family_of(task: str) -> str | None:
    """The family whose task ``task`` is (:data:`R2MED` or :data:`BRIGHT`), or None: a local collection's name.
    A malformed BRIGHT name (``bright:nosuch``) is BRIGHT's one-line error."""
    if is_bright(task):
        parse_name(task)
        return BRIGHT
    from .tasks import TASKS

    return R2MED if task.strip().lower() in {k.lower() for k in TASKS} else None


def is_hub_task(task: str) -> bool:
    """Whether ``task`` names a benchmark's hub task (R2MED's or BRIGHT's)."""
    try:
        return family_of(task) is not None
    except OptionError:
        return False


def canonical_task(task: str) -> str:
    """r2med's spelling of a benchmark task (``biology`` -> ``Biology``, ``bright:Earth-Science`` ->
    ``bright:earth_science``), or a one-line error listing what ``--tasks`` takes."""
    family = family_of(task)
    if family == BRIGHT:
        return parse_name(task).name
    if family == R2MED:
        from .tasks import get_task

        return get_task(task.strip()).name
    raise unknown_task(task)


def hub_task(task: str) -> str:
    """The hub task a name reads, in r2med's spelling: its key in ``--revision`` pairs (BRIGHT's long-document
    setting reads its task's revision: ``bright:biology:long`` -> ``bright:biology``)."""
    return parse_name(task).hub_task if is_bright(task) else canonical_task(task)


def unknown_task(task: str) -> OptionError:
    from .tasks import TASK_NAMES

    known = [*TASK_NAMES, *R2MED_ALIASES, BRIGHT, f"{BRIGHT}:long", *names()]
    return OptionError(
        f"unknown task {shown(task)}{did_you_mean(task, known)}; choose from R2MED's "
        f"{', '.join(TASK_NAMES)} (all or r2med: the 8), or BRIGHT's bright:<task> (bright: the 12; "
        "`r2med tasks` lists them)"
    )


def aliases() -> Mapping[str, tuple[str, ...]]:
    """Words ``--tasks`` takes for several tasks (lower case) -> the tasks."""
    from .tasks import TASK_NAMES

    r2med = tuple(TASK_NAMES)
    return {"all": r2med, "r2med": r2med, BRIGHT: names(), f"{BRIGHT}:long": names(long=True)}


def task_parts(spec: str | Iterable[str] | None) -> list[str] | None:
    """The names a ``--tasks`` spec gives, as written (None: every task -- ``all``, ``r2med``, None); a spec that
    names nothing (``""``, ``","``, ``[]``) or holds something other than names is an OptionError: an empty
    ``--tasks`` or ``tasks = ""`` never means "all", nor an empty table."""
    if spec is None or (isinstance(spec, str) and spec.strip().lower() in R2MED_ALIASES):
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
    """A ``--tasks`` spec as benchmark task names, each once, in the order given: ``all``/``r2med``/None -> R2MED's
    8; ``bright`` -> BRIGHT's 12; ``bright:long`` -> its 8 long-document settings; else comma-separated names of
    either family (``Biology,bright:earth-science``).  ``long_documents``: every BRIGHT task in its long-document
    setting (``bright`` then means the 8 that have one; naming a task without one, or an R2MED task, is a one-line
    error)."""
    parts = task_parts(spec) or ["all"]
    groups = aliases()
    found: list[str] = []
    for part in parts:
        word = part.lower()
        if long_documents and word == BRIGHT:  # BRIGHT's tasks that have a long-document setting
            word = f"{BRIGHT}:long"
        found += list(groups[word]) if word in groups else [canonical_task(part)]
    found = list(dict.fromkeys(found))
    if long_documents:
        found = [_long(n) for n in found]
    return list(dict.fromkeys(found))


def _long(name: str) -> str:
    if family_of(name) != BRIGHT:
        raise OptionError(f"--long-documents: {name} is not a BRIGHT task (the long-document setting is BRIGHT's)")
    return long_name(name)
