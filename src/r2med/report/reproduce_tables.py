"""The tables of ``r2med reproduce``: what can run here and why not (dry run), and the graded outcomes.

The matrix itself -- targets, what this machine offers, running and grading -- is
:mod:`r2med.jobs.reproduce`'s.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import asdict
from typing import TypedDict

from rich.markup import escape
from rich.table import Table

from ..data.benchmarks import benchmark, benchmarks
from ..measures import HEADLINE
from ..protocol import data_states
from ..results.grading import default_family
from ..results.reproduction import Outcome, Planned
from .layout import compact_table


class PlanRow(TypedDict):
    """One configuration of a reproduction plan: how many of its tasks can run, and why the others cannot."""

    setting: str
    config: str
    tasks: int
    runnable: int
    can_run: bool
    reason: str
    notes: list[str]


def plan_rows(planned: list[Planned]) -> list[PlanRow]:
    """One row per configuration: tasks runnable, and the reasons for the others (grouped)."""
    groups: dict[tuple[str, str], list[Planned]] = {}
    for p in planned:
        groups.setdefault((p.target.setting, p.target.label), []).append(p)
    rows: list[PlanRow] = []
    for (setting, label), items in groups.items():
        ready = [p.target.task for p in items if p.runnable]
        reasons: dict[str, list[str]] = {}
        for p in items:
            for r in p.reasons:
                reasons.setdefault(r, []).append(p.target.task)
        text = []
        for r, tasks in reasons.items():
            text.append(r if len(tasks) == len(items) else f"{r} [{', '.join(tasks)}]")
        rows.append(
            {
                "setting": setting,
                "config": label,
                "tasks": len(items),
                "runnable": len(ready),
                "can_run": len(ready) == len(items),
                "reason": "; ".join(dict.fromkeys(text)) or f"ready ({', '.join(sorted({p.data for p in items}))})",
                "notes": [*dict.fromkeys(n for p in items for n in p.notes), *_mteb_notes(items)],
            }
        )
    return rows


def _mteb_notes(items: Sequence[Planned]) -> list[str]:
    """The line naming mteb's figures of one configuration's checkpoint beside its published ones (the data a
    reproduction reads), and the tasks where mteb and the paper disagree for that model and data."""
    shown = [p for p in items if p.mteb is not None]
    if not shown:
        return []
    first = shown[0].mteb
    assert first is not None
    figures = ", ".join(f"{p.target.task} {p.mteb.value:.2f}" for p in shown if p.mteb is not None)
    line = (
        f"mteb {first.model}@{first.model_revision[:7]} (embeddings-benchmark/results@"
        f"{data_states.mteb_results_commit()[:7]}, on the data reproduced): {figures}"
    )
    apart = [
        f"{p.target.task} (mteb {p.mteb.value:.2f}, paper {p.target.published:.2f})"
        for p in shown
        if p.mteb is not None and p.mteb.paper_apart
    ]
    if apart:
        line += f"; mteb and the paper disagree for this model and data: {', '.join(apart)}"
    return [line]


def plan_table(
    planned: list[Planned],
    unpublished: Sequence[tuple[str, str]] = (),
    compact: bool = False,
    others: Sequence[tuple[str, str, str]] = (),
) -> Table:
    """The dry run: a row per configuration, then the later-work records no published figure grades, then
    ``others``: (family, configuration, why) of the published rows without a target here (BRIGHT's: Averages
    graded by ``report``, rows r2med cannot run).

    ``compact``: the layout for 80 columns -- each setting a heading row, and ``can run`` with the task count
    (``no 0/8``), so the reasons get the width.
    """

    rows = plan_rows(planned)
    ok = sum(r["can_run"] for r in rows)
    title = f"{_families(planned)} reproduction matrix (dry run): {ok} of {len(rows)} configurations can run here"
    if compact:
        return _compact_plan_table(rows, unpublished, title, compact_table, others)
    table = Table(title=title, show_lines=False)
    for col in ("setting", "configuration", "tasks", "can run", "why / data"):
        table.add_column(col, justify="right" if col in ("tasks",) else "left", overflow="fold")
    for r in rows:
        mark = "[green]yes[/]" if r["can_run"] else "[yellow]partly[/]" if r["runnable"] else "[red]no[/]"
        why = "; ".join([r["reason"], *(f"note: {n}" for n in r["notes"])])
        table.add_row(r["setting"], escape(r["config"]), f"{r['runnable']}/{r['tasks']}", mark, escape(why))
    for name, why in unpublished:
        table.add_row("later work", escape(name), "-", "[dim]-[/]", f"[dim]{escape(why)}[/]")
    for family, name, why in others:
        table.add_row(escape(family), escape(name), "-", "[dim]-[/]", f"[dim]{escape(why)}[/]")
    return table


def _families(planned: Sequence[Planned] | Sequence[Outcome]) -> str:
    """The families a matrix covers, as its title names them (their titles, in the registry's order: ``R2MED``,
    ``BRIGHT``, or both); an empty matrix: the default family's."""
    names = {p.target.key.family for p in planned}
    return " and ".join(b.title for b in benchmarks() if b.name in names) or benchmark(default_family()).title


def _mark(row: PlanRow) -> str:
    return "[green]yes[/]" if row["can_run"] else "[yellow]partly[/]" if row["runnable"] else "[red]no[/]"


def _compact_plan_table(
    rows: list[PlanRow],
    unpublished: Sequence[tuple[str, str]],
    title: str,
    make_table: Callable[..., Table],
    others: Sequence[tuple[str, str, str]] = (),
) -> Table:
    table = make_table(title=title)
    table.add_column("configuration", overflow="fold", max_width=24)
    table.add_column("can run", no_wrap=True)
    table.add_column("why / data", overflow="fold", ratio=1)
    setting = None
    for r in rows:
        if r["setting"] != setting:
            setting = r["setting"]
            table.add_row(f"[bold]{escape(setting)}[/]", "", "")
        why = "; ".join([r["reason"], *(f"note: {n}" for n in r["notes"])])
        table.add_row(" " + escape(r["config"]), f"{_mark(r)} {r['runnable']}/{r['tasks']}", escape(why))
    if unpublished:
        table.add_row("[bold]later work[/]", "", "")
    for name, why in unpublished:
        table.add_row(" " + escape(name), "[dim]-[/]", f"[dim]{escape(why)}[/]")
    heading = None
    for family, name, why in others:
        if family != heading:
            heading = family
            table.add_row(f"[bold]{escape(family)}: no target here[/]", "", "")
        table.add_row(" " + escape(name), "[dim]-[/]", f"[dim]{escape(why)}[/]")
    return table


def outcome_table(outcomes: list[Outcome]) -> Table:
    counts = {s: sum(o.status == s for o in outcomes) for s in ("pass", "fail", "ungraded", "error", "skip")}
    ungraded = f", {counts['ungraded']} ungraded" if counts["ungraded"] else ""
    measure = "nDCG@10" if all(o.target.measure == HEADLINE for o in outcomes) else "nDCG@10 / Recall@1"
    table = Table(
        title=f"{_families(outcomes)} reproduction: {measure} x100 against the published figures "
        f"({counts['pass']} pass, {counts['fail']} fail{ungraded}, {counts['error']} error, "
        f"{counts['skip']} skipped)"
    )
    for col in ("configuration", "task", "published", "mteb", "ours", "delta", "tol", "result"):
        table.add_column(
            col, justify="left" if col in ("configuration", "task", "result") else "right", overflow="fold"
        )
    shown_skips: set[tuple[str, str]] = set()
    for o in outcomes:
        if o.status == "skip":
            key = (o.target.label, o.detail)
            if key in shown_skips:
                continue
            shown_skips.add(key)
            n = sum(1 for x in outcomes if x.status == "skip" and (x.target.label, x.detail) == key)
            table.add_row(
                escape(o.target.label), f"{n} task(s)", "", "", "", "", "", f"[dim]skip: {escape(o.detail)}[/]"
            )
            continue
        colour = {"pass": "green", "fail": "red", "error": "red", "ungraded": "yellow"}[o.status]
        table.add_row(
            escape(o.target.label),
            o.target.task,
            f"{o.target.published:.2f}",
            "-" if o.mteb is None else f"{o.mteb.value:.2f}",
            "-" if o.value is None else f"{o.value:.2f}",
            "-" if o.delta is None else f"{o.delta:+.2f}",
            "-" if o.tolerance is None else f"±{o.tolerance:g}",
            f"[{colour}]{o.status.upper()}[/]"
            + (" (reused)" if o.reused else "")
            + (f" {escape(o.detail)}" if o.detail else "")
            + (f"; {escape(o.mteb.words(o.target.published, o.value))}" if o.mteb is not None else ""),
        )
    return table


def to_json(planned: list[Planned] | None = None, outcomes: list[Outcome] | None = None) -> str:
    if outcomes is not None:
        return json.dumps([o.to_dict() for o in outcomes], indent=1) + "\n"
    return (
        json.dumps(
            [
                {
                    **asdict(p.target),
                    "config": p.target.label,
                    "runnable": p.runnable,
                    "reasons": p.reasons,
                    "data": p.data,
                    "notes": p.notes,
                    "mteb": p.mteb.to_dict() if p.mteb is not None else None,
                }
                for p in planned or []
            ],
            indent=1,
            default=str,
        )
        + "\n"
    )
