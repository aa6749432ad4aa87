"""Facets: per-query scores grouped by a query metadata key (``body_system``, ``answer``...) or by scenario.

R2MED's queries carry metadata beyond their text (:attr:`r2med.data.Collection.query_meta`); the
leaderboard *per facet value* -- how each system does on the cardiovascular cases, on each scenario --
is where a reasoning-retrieval analysis starts.  This module only groups numbers; reading runs and
drawing tables belong to the report.

* **Facet value** of a query: ``str`` of its metadata value (:func:`facet_label`).  A missing key,
  ``None`` or a blank string is ``"(none)"``; text that would read as another type's label (``"1"``,
  ``"true"``, ``"null"``, a literal ``"(none)"``, or text starting with a quote) is shown in JSON quotes
  (``"\"1\""``), so ``1`` and ``"1"`` stay two groups; lists/dicts become compact text; values longer than
  ``max_len`` are cut and tagged with a short hash, so distinct values stay distinct groups.
  ``by="scenario"`` takes the task's scenario from :mod:`r2med.data.tasks` (R2MED paper, Table 1).
* **Averages** per facet value and system: ``"pooled"`` (the default) is the mean over every query
  with that value, across tasks -- each query weighs the same, as in a leaderboard restricted to
  those queries; ``"macro"`` is the mean of the per-task means (tasks without such queries do not
  enter), R2MED's "average over tasks" convention.  Per-task means are always given too.
* Each system is averaged over the queries *it* has values for (``counts`` says how many); the
  facet's ``queries`` is the number of distinct (task, query) pairs any system has.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeAlias

from ..data.tasks import TASKS
from ..errors import R2MedError
from ..infra.home import parse_json

if TYPE_CHECKING:
    from ..infra.json_types import JsonValue

NONE = "(none)"
"""The facet value of a query without the key (or with ``None`` / a blank string)."""
SCENARIO = "scenario"
"""``by=`` this groups by the task's scenario instead of a query key."""
AVERAGES = ("pooled", "macro")

PerQuery = Mapping[str, Mapping[str, Mapping[str, float]]]
"""system -> task -> query id -> value of one measure."""
QueryMeta: TypeAlias = "Mapping[str, Mapping[str, Mapping[str, JsonValue]]]"
"""task -> query id -> {metadata key: value} (``Collection.query_meta`` per task: the dataset's own query fields,
open JSON)."""


def _shorten(text: str, max_len: int) -> str:
    if len(text) <= max_len:
        return text
    digest = hashlib.sha1(text.encode("utf-8")).hexdigest()[:6]
    return f"{text[:max_len].rstrip()}… #{digest}"


def _quoted_if_ambiguous(text: str) -> str:
    """Text as its own label, or JSON-quoted where it would read as a number, boolean, null or ``(none)``."""
    if text == NONE or text.startswith('"'):
        return json.dumps(text, ensure_ascii=False)
    try:
        parsed = parse_json(text)
    except ValueError:  # the one JSON reader: malformed or nested too deeply is text
        parsed = text
    if text and not isinstance(parsed, (str, list, dict)):  # 1, 1.5, true, null, NaN
        return json.dumps(text, ensure_ascii=False)
    return text


def facet_label(value: object, max_len: int = 40) -> str:
    """The group name of a metadata value: text as it is, ``None``/blank -> ``"(none)"``, ``True`` ->
    ``"true"``, numbers as written, lists/dicts as compact JSON-like text; one line, at most ``max_len``
    characters before ``"… #<hash>"``."""
    if value is None:
        return NONE
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, str):
        text = _quoted_if_ambiguous(" ".join(value.split()))
    elif isinstance(value, (int, float)):
        text = repr(value) if isinstance(value, float) and not math.isfinite(value) else str(value)
    elif isinstance(value, (list, tuple)) and all(isinstance(v, (str, int, float, bool)) or v is None for v in value):
        text = ", ".join(facet_label(v, max_len=10**9) for v in value) if value else ""
    else:
        try:
            text = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
        except (TypeError, ValueError):
            text = str(value)
    text = " ".join(text.split())  # one line
    return _shorten(text, max_len) if text else NONE


def facet_values(
    task: str,
    qid: str,
    meta: QueryMeta,
    by: str,
    scenarios: Mapping[str, str] | None = None,
    split_lists: bool = False,
    max_len: int = 40,
) -> list[str]:
    """The facet value(s) of one query: one, or with ``split_lists`` one per element of a list value."""
    if by == SCENARIO:
        return [facet_label(_scenarios(scenarios).get(task), max_len)]
    row = meta.get(task, {}).get(qid, {})
    value = row.get(by) if isinstance(row, Mapping) else None
    if split_lists and isinstance(value, (list, tuple)) and value:
        return list(dict.fromkeys(facet_label(v, max_len) for v in value))
    return [facet_label(value, max_len)]


def _scenarios(scenarios: Mapping[str, str] | None) -> Mapping[str, str]:
    if scenarios is not None:
        return scenarios

    return {name: spec.scenario for name, spec in TASKS.items()}


def facet_keys(meta: QueryMeta) -> dict[str, int]:
    """Every metadata key with the number of queries that have a non-blank value for it, plus
    ``scenario`` (every query): what ``by`` can be."""
    counts: dict[str, int] = {}
    total = 0
    for rows in meta.values():
        for row in rows.values():
            total += 1
            for key, value in row.items():
                counts.setdefault(key, 0)
                if facet_label(value) != NONE:
                    counts[key] += 1
    counts[SCENARIO] = total
    return dict(sorted(counts.items()))


@dataclass
class FacetRow:
    """One facet value: its queries and each system's mean over them."""

    value: str
    queries: int
    """Distinct (task, query) pairs with this value that any system has a value for."""
    tasks: dict[str, int]
    """task -> queries with this value (same rule)."""
    mean: dict[str, float]
    """system -> mean (pooled or macro, as :attr:`Facets.average` says); absent if it has no such query."""
    counts: dict[str, int]
    """system -> queries its mean is over."""
    per_task: dict[str, dict[str, float]] = field(repr=False)
    """system -> task -> mean over the task's queries with this value."""


@dataclass
class Facets:
    by: str
    average: str
    systems: list[str]
    rows: list[FacetRow]
    """Most queries first, then by value; ``"(none)"`` last."""

    def row(self, value: str) -> FacetRow:
        for row in self.rows:
            if row.value == value:
                return row
        raise KeyError(value)


def facet_table(
    values: PerQuery,
    meta: QueryMeta,
    by: str,
    *,
    average: str = "pooled",
    scenarios: Mapping[str, str] | None = None,
    split_lists: bool = False,
    max_len: int = 40,
    systems: Iterable[str] | None = None,
) -> Facets:
    """Group per-query ``values`` (system -> task -> qid -> value) by ``by`` (a query metadata key or
    ``"scenario"``) and average each group per system (see the module docstring for the rules).

    ``meta``: task -> qid -> metadata (queries missing from it are ``"(none)"``).  ``scenarios``:
    task -> scenario, default R2MED's (:mod:`r2med.data.tasks`; other tasks are ``"(none)"``).
    ``split_lists``: a list value puts the query in one group per element (its queries then add
    up to more than the total).  ``systems``: their order (default: as in ``values``).
    """
    if average not in AVERAGES:
        raise R2MedError(f"unknown average {average!r}; choose from: {', '.join(AVERAGES)}")
    if not by:
        raise R2MedError("facets need a metadata key (e.g. body_system) or 'scenario'")
    order = list(systems) if systems is not None else list(values)
    scen = _scenarios(scenarios) if by == SCENARIO else None
    # facet -> system -> task -> [values]; facet -> set of (task, qid)
    groups: dict[str, dict[str, dict[str, list[float]]]] = {}
    members: dict[str, set[tuple[str, str]]] = {}
    for system in order:
        for task, rows in values.get(system, {}).items():
            for qid, value in rows.items():
                for label in facet_values(task, qid, meta, by, scen, split_lists, max_len):
                    groups.setdefault(label, {}).setdefault(system, {}).setdefault(task, []).append(float(value))
                    members.setdefault(label, set()).add((task, qid))
    out_rows = []
    for label, by_system in groups.items():
        tasks: dict[str, int] = {}
        for task, _ in members[label]:
            tasks[task] = tasks.get(task, 0) + 1
        mean, counts, per_task = {}, {}, {}
        for system in order:
            if system not in by_system:
                continue
            task_values = by_system[system]
            per_task[system] = {t: sum(v) / len(v) for t, v in sorted(task_values.items())}
            counts[system] = sum(len(v) for v in task_values.values())
            if average == "pooled":
                mean[system] = sum(sum(v) for v in task_values.values()) / counts[system]
            else:
                mean[system] = sum(per_task[system].values()) / len(per_task[system])
        out_rows.append(FacetRow(label, len(members[label]), dict(sorted(tasks.items())), mean, counts, per_task))
    out_rows.sort(key=lambda r: (r.value == NONE, -r.queries, r.value))
    return Facets(by, average, order, out_rows)
