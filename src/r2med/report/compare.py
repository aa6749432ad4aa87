"""Paired comparison of systems against a baseline, per task and over all queries.

For each system ``B`` against baseline ``A`` and each task both ran: mean
difference ``B - A``, paired t-test, paired randomisation test, bootstrap 95%
confidence interval, wins/ties/losses; p-values corrected with Holm-Bonferroni
across the tasks of the comparison.  The ``all queries`` line pools every query
of every common task (query ids prefixed by task) and is not corrected.
Values are reported x100 like the paper.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, TypedDict

from rich.markup import escape
from rich.table import Table

from ..errors import R2MedError
from ..evaluation.stats import DEFAULT_PERMUTATIONS, DEFAULT_SEED, PairedComparison, compare_paired, holm
from ..infra.json_types import JsonObject
from ..measures import HEADLINE, Measure
from ..results.folders import System, task_order
from ..results.published import different_data
from .format import SIGNIFICANT, check_format, md, records_text, tex, tex_note, tex_row
from .judgments import legend_line, marks_for
from .layout import compact_table, fitted, short_task
from .ties import tie_notes


class Change(TypedDict):
    """One query's difference between two systems (:meth:`Comparison.changes`): ``diff`` is ``b - a``."""

    baseline: str
    system: str
    task: str
    qid: str
    a: float
    b: float
    diff: float


@dataclass
class ComparisonLine:
    """One task (or all queries pooled) of a comparison, with Holm-corrected p-values."""

    task: str
    stats: PairedComparison
    p_t_holm: float | None = None
    p_rand_holm: float | None = None


@dataclass
class Comparison:
    ALL: ClassVar[str] = "all queries (pooled)"
    """The line over every query of every task pooled (each query counts once: a task with more queries weighs
    more), named apart from ``report``'s ``Average`` column, the macro average (each task counts once)."""

    baseline: str
    system: str
    measure: Measure
    rows: list[ComparisonLine]
    alpha: float = 0.05
    n_permutations: int = DEFAULT_PERMUTATIONS
    seed: int = DEFAULT_SEED
    notes: list[str] = field(default_factory=list)
    #: (task, query id, A's value, B's value) for every query both systems answered
    per_query: list[tuple[str, str, float, float]] = field(default_factory=list)

    def changes(self, n: int | None = None) -> list[Change]:
        """Per-query differences ``B - A``, largest gains first then largest losses (``n`` of each; all if None)."""
        rows = sorted(self.per_query, key=lambda r: (-(r[3] - r[2]), r[0], r[1]))
        if n is not None:
            gains = [r for r in rows if r[3] - r[2] > 1e-9][:n]
            losses = [r for r in reversed(rows) if r[3] - r[2] < -1e-9][:n]
            rows = gains + losses
        return [
            {"baseline": self.baseline, "system": self.system, "task": t, "qid": q, "a": a, "b": b, "diff": b - a}
            for t, q, a, b in rows
        ]

    def changes_rich(self, n: int) -> Table:
        table = Table(
            title=escape(
                f"{self.system} vs {self.baseline}: the {n} largest per-query gains and losses "
                f"({self.measure.label} x100)"
            )
        )
        for col in ("task", "query", "A", "B", "B-A"):
            table.add_column(col, justify="left" if col in ("task", "query") else "right")
        for r in self.changes(n):
            colour = "green" if r["diff"] > 0 else "red"
            table.add_row(
                escape(r["task"]),
                escape(r["qid"]),
                _f(100 * r["a"]),
                _f(100 * r["b"]),
                f"[{colour}]{100 * r['diff']:+.2f}[/]",
            )
        return table

    def significant(self, line: ComparisonLine) -> bool:
        p = line.stats.p_randomization if line.task == self.ALL else line.p_rand_holm
        return p is not None and p < self.alpha

    HEADER: ClassVar[list[str]] = [
        "task",
        "n",
        "A",
        "B",
        "B-A",
        "95% CI",
        "p t-test",
        "p t Holm",
        "p rand",
        "p rand Holm",
        "W/T/L",
        "sig",
    ]

    def grid(self) -> list[list[str]]:
        out = []
        for line in self.rows:
            s = line.stats
            out.append(
                [
                    line.task,
                    str(s.n),
                    _f(100 * s.mean_a),
                    _f(100 * s.mean_b),
                    f"{100 * s.diff:+.2f}",
                    f"[{100 * s.ci_low:+.2f}, {100 * s.ci_high:+.2f}]",
                    _p(s.p_ttest),
                    _p(line.p_t_holm),
                    _p(s.p_randomization),
                    _p(line.p_rand_holm),
                    f"{s.wins}/{s.ties}/{s.losses}",
                    SIGNIFICANT if self.significant(line) else "",
                ]
            )
        return out

    def legend(self) -> str:
        return (
            f"{self.measure.label} x100; A = {self.baseline}, B = {self.system}; "
            f"randomisation test with {self.n_permutations:,} seeded sign flips (seed {self.seed}); "
            f"bootstrap percentile CI; Holm-Bonferroni across tasks; {SIGNIFICANT} = Holm-corrected "
            f"randomisation p < {self.alpha:g} ({self.ALL}: uncorrected; its means are over "
            f"all queries, not the macro average of the tasks that report's Average column shows)."
        )

    def records(self) -> list[JsonObject]:
        recs: list[JsonObject] = []
        for line in self.rows:
            d = line.stats.to_dict()
            d.pop("extra", None)
            d.pop("p_holm", None)
            recs.append(
                {
                    "baseline": self.baseline,
                    "system": self.system,
                    "measure": self.measure.trec,
                    "task": line.task,
                    **d,
                    "p_ttest_holm": line.p_t_holm,
                    "p_randomization_holm": line.p_rand_holm,
                    "significant": self.significant(line),
                }
            )
        return recs

    def to_rich(self, width: int | None = None) -> Table:
        """The terminal table; with ``width``, the full one if it fits, else the narrow one: the randomisation
        test's p only (the one ``sig`` is based on: Holm-corrected per task, uncorrected for all queries),
        marked † when significant; no t-test or W/T/L columns."""
        if width is None:
            return self._rich()
        chosen: Table = fitted(self._rich, self._rich_narrow)(width)
        return chosen

    def _rich(self) -> Table:
        table = Table(
            title=escape(f"{self.system} vs {self.baseline}: {self.measure.label}"),
            caption=escape(self.legend()),
            caption_justify="left",
        )
        for i, h in enumerate(self.HEADER):
            table.add_column(h, justify="left" if i == 0 else "right", no_wrap=i > 0)
        for line, cells in zip(self.rows, self.grid()):
            cells[4] = _coloured(line.stats.diff, cells[4])
            cells[0] = escape(cells[0])  # a task name: text, not markup
            table.add_row(*cells, style="bold" if line.task == self.ALL else None)
        return table

    def _rich_narrow(self) -> Table:
        legend = (
            self.legend() + f" p: the randomisation test's ({SIGNIFICANT} below alpha); --wide adds the "
            "t-test and wins/ties/losses."
        )
        table = compact_table(
            title=escape(f"{self.system} vs {self.baseline}: {self.measure.label}"),
            caption=escape(legend),
            caption_justify="left",
        )
        for i, h in enumerate(("task", "n", "A", "B", "B-A", "95% CI", "p")):
            table.add_column(h, justify="left" if i == 0 else "right", no_wrap=True)
        for line, cells in zip(self.rows, self.grid()):
            p = line.stats.p_randomization if line.task == self.ALL else line.p_rand_holm
            mark = SIGNIFICANT if self.significant(line) else ""
            table.add_row(
                escape(short_task(line.task)),
                *cells[1:4],
                _coloured(line.stats.diff, cells[4]),
                cells[5],
                _p(p) + mark,
                style="bold" if line.task == self.ALL else None,
            )
        return table

    def to_markdown(self) -> str:
        out = [
            f"### {md(self.system)} vs {md(self.baseline)}",
            "",
            "| " + " | ".join(md(h) for h in self.HEADER) + " |",
            "|" + "|".join(["---"] + ["---:"] * (len(self.HEADER) - 1)) + "|",
        ]
        for line, cells in zip(self.rows, self.grid()):
            cells = [md(c) for c in cells]
            if line.task == self.ALL:
                cells[0] = f"**{cells[0]}**"
            out.append("| " + " | ".join(cells) + " |")
        return "\n".join(out) + f"\n\n_{md(self.legend())}_\n"

    def to_latex(self) -> str:
        cols = "l" + "r" * (len(self.HEADER) - 1)
        out = [
            f"% {self.system} vs {self.baseline}",
            r"\begin{tabular}{" + cols + "}",
            r"\toprule",
            tex_row([tex(h) for h in self.HEADER]),
            r"\midrule",
        ]
        for line, cells in zip(self.rows, self.grid()):
            if line.task == self.ALL:
                out.append(r"\midrule")
            out.append(tex_row([tex(c) for c in cells]))
        out += [r"\bottomrule", r"\end{tabular}"]
        return "\n".join(out) + "\n" + tex_note([self.legend()])


def _coloured(diff: float, text: str) -> str:
    colour = "green" if diff > 0 else "red" if diff < 0 else "white"
    return f"[{colour}]{text}[/]"


def _f(v: float) -> str:
    return "-" if v != v else f"{v:.2f}"


def _p(p: float | None) -> str:
    if p is None or p != p:
        return "-"
    return "<0.0001" if p < 1e-4 else f"{p:.4f}"


def compare_systems(
    a: System,
    b: System,
    measure: Measure = HEADLINE,
    n_permutations: int = DEFAULT_PERMUTATIONS,
    seed: int = DEFAULT_SEED,
    alpha: float = 0.05,
) -> Comparison:
    """``b`` against baseline ``a`` on every task both have, plus all their queries pooled.

    Runs are paired only when made on the same data: a task whose two runs recorded different corpus or
    judgment fingerprints (:func:`r2med.results.published.different_data`) is a one-line error."""
    tasks = [t for t in task_order([a, b]) if t in a.tasks and t in b.tasks]
    if not tasks:
        raise R2MedError(
            f"{a.name} and {b.name} share no task ({a.name}: {', '.join(a.tasks)}; {b.name}: {', '.join(b.tasks)}); "
            "compare runs of the same tasks"
        )
    lines = []
    pooled_a: dict[str, float] = {}
    pooled_b: dict[str, float] = {}
    notes = [
        f"{t}: only {one.name} has it (left out of {b.name} vs {a.name})"
        for t in task_order([a, b])
        for one in (a, b)
        if t not in tasks and t in one.tasks
    ]
    per_query: list[tuple[str, str, float, float]] = []
    for t in tasks:
        problem = different_data(t, {a.name: a.tasks[t].record, b.name: b.tasks[t].record})
        if problem is not None:
            raise R2MedError(problem)
    for t in tasks:
        sa, sb = a.tasks[t].scores(measure), b.tasks[t].scores(measure)
        if not sa or not sb:
            raise R2MedError(
                f"{t}: no per-query {measure.label} in "
                f"{a.tasks[t].folder if not sa else b.tasks[t].folder}; "
                f"re-run `r2med evaluate -m {measure.label}`"
            )
        stats = compare_paired(sa, sb, n_permutations=n_permutations, seed=seed)
        if stats.n == 0:
            raise R2MedError(
                f"{t}: {a.name} and {b.name} share no query ({len(sa)} in {a.tasks[t].folder}, "
                f"{len(sb)} in {b.tasks[t].folder}); compare runs of the same queries"
            )
        if stats.only_a or stats.only_b:
            notes.append(f"{t}: {stats.only_a} queries only in {a.name}, {stats.only_b} only in {b.name} (left out)")
        lines.append(ComparisonLine(t, stats))
        per_query += [(t, q, sa[q], sb[q]) for q in sorted(set(sa) & set(sb))]
        pooled_a.update({f"{t}/{q}": v for q, v in sa.items()})
        pooled_b.update({f"{t}/{q}": v for q, v in sb.items()})
    for attr, src in (("p_t_holm", "p_ttest"), ("p_rand_holm", "p_randomization")):
        adjusted = holm([getattr(line.stats, src) for line in lines])
        for line, p in zip(lines, adjusted):
            setattr(line, attr, p)
    if len(tasks) > 1:
        lines.append(
            ComparisonLine(Comparison.ALL, compare_paired(pooled_a, pooled_b, n_permutations=n_permutations, seed=seed))
        )
    notes += tie_notes(a, b, tasks, measure, Comparison.ALL)
    judged = marks_for(s.tasks[t].config for t in tasks for s in (a, b))
    notes += [f"{', '.join(tasks)}: {legend_line(mark, record)}" for mark, record in judged.values()]
    return Comparison(
        a.name,
        b.name,
        measure,
        lines,
        alpha=alpha,
        n_permutations=n_permutations,
        seed=seed,
        notes=notes,
        per_query=per_query,
    )


def compare_many(
    systems: list[System],
    measure: Measure = HEADLINE,
    n_permutations: int = DEFAULT_PERMUTATIONS,
    seed: int = DEFAULT_SEED,
    alpha: float = 0.05,
) -> list[Comparison]:
    """Every system after the first against the first (the baseline)."""
    if len(systems) < 2:
        raise R2MedError("compare needs at least two systems (baseline first)")
    return [compare_systems(systems[0], s, measure, n_permutations, seed, alpha) for s in systems[1:]]


def render_changes(comparisons: list[Comparison], fmt: str, n: int | None = None) -> str:
    """Per-query differences of every comparison as CSV or JSON (all queries when ``n`` is None)."""
    recs = [r for c in comparisons for r in c.changes(n)]
    return records_text(recs, fmt, ["baseline", "system", "task", "qid", "a", "b", "diff"])


def render_comparisons(comparisons: list[Comparison], fmt: str) -> str:
    """Markdown (also for ``table``), LaTeX, JSON or CSV of every comparison."""
    fmt = check_format(fmt)
    if fmt in ("table", "markdown"):
        return "\n".join(c.to_markdown() for c in comparisons)
    if fmt == "latex":
        return "\n".join(c.to_latex() for c in comparisons)
    return records_text([r for c in comparisons for r in c.records()], fmt)
