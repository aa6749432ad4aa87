"""The leaderboard per facet value (``r2med report --by KEY``): facet values x systems, with query counts.

The grouping and averaging are :func:`r2med.evaluation.facets.facet_table`'s; this module renders it: a rich
table (full, or compact when narrow), Markdown, CSV (long form: one record per value x system),
LaTeX and JSON.  Values are x100 like the leaderboard; a system averaged over fewer queries of a
value than the value has (it lacks results for some) shows its count.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from rich.markup import escape
from rich.table import Table

from ..evaluation.facets import FacetRow, Facets
from ..infra.json_types import JsonObject
from ..measures import Measure
from .format import GAP, check_format, md, records_text, tex, tex_note, tex_row
from .layout import compact_table, fitted


@dataclass
class FacetBoard:
    """A :class:`~r2med.evaluation.facets.Facets` table for one measure, ready to render."""

    facets: Facets
    measure: Measure

    @property
    def title(self) -> str:
        by = "scenario" if self.facets.by == "scenario" else f"query {self.facets.by}"
        return f"{self.measure.label} (x100) by {by}, {self.facets.average} average"

    def legend(self) -> list[str]:
        out = [f"{self.measure.label} x100 per {self.facets.by} value; queries: (task, query) pairs with that value."]
        if self.facets.average == "pooled":
            out.append("pooled: the mean over every query of the value, across tasks (each query weighs the same).")
        else:
            out.append("macro: the mean of the per-task means over the tasks that have the value.")
        if any(row.counts.get(s, row.queries) != row.queries for row in self.facets.rows for s in row.mean):
            out.append("(n=..): the system has results for only that many of the value's queries.")
        return out

    def left_out(self) -> list[str]:
        """The groups whose systems cover different numbers of its queries, with each system's count (the
        commands print them on stderr)."""
        out = []
        for row in self.facets.rows:
            counts = {s: row.counts.get(s, 0) for s in self.facets.systems}
            if any(n != row.queries for n in counts.values()):
                listed = ", ".join(f"{s} {n}" for s, n in counts.items())
                out.append(
                    f"--by {self.facets.by} {row.value!r}: the systems cover different queries of its "
                    f"{row.queries} ({listed}); each system's mean is over its own"
                )
        return out

    def cell(self, row: FacetRow, system: str) -> str:
        if system not in row.mean:
            return GAP
        text = f"{100 * row.mean[system]:.2f}"
        n = row.counts.get(system, row.queries)
        return text if n == row.queries else f"{text} (n={n})"

    def grid(self) -> tuple[list[str], list[list[str]]]:
        header = [self.facets.by, "queries", *self.facets.systems]
        rows = [
            [row.value, str(row.queries), *(self.cell(row, s) for s in self.facets.systems)] for row in self.facets.rows
        ]
        return header, rows

    # -- renderers -------------------------------------------------------------------------------
    def to_rich(self, width: int | None = None) -> Table:
        if width is None:
            return self._rich(False)
        chosen: Table = fitted(lambda: self._rich(False), lambda: self._rich(True))(width)
        return chosen

    def _rich(self, compact: bool) -> Table:
        header, rows = self.grid()
        title = escape(self.title)
        caption = escape("\n".join(self.legend()))
        table: Table = (
            compact_table(title=title, caption=caption, caption_justify="left")
            if compact
            else Table(title=title, caption=caption, caption_justify="left")
        )
        for i, h in enumerate(header):
            table.add_column(escape(h), justify="left" if i == 0 else "right", overflow="fold", no_wrap=i == 1)
        for cells in rows:
            table.add_row(*(escape(c) for c in cells))
        return table

    def to_markdown(self) -> str:
        header, rows = self.grid()
        out = [
            f"**{self.title}**",
            "",
            "| " + " | ".join(md(h) for h in header) + " |",
            "|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|",
        ]
        out += ["| " + " | ".join(md(c) for c in cells) + " |" for cells in rows]
        return "\n".join(out) + "\n\n" + "\n".join(f"_{md(line)}_  " for line in self.legend()) + "\n"

    def to_latex(self) -> str:
        header, rows = self.grid()
        out = [
            r"\begin{tabular}{l" + "r" * (len(header) - 1) + "}",
            r"\toprule",
            r"\multicolumn{" + str(len(header)) + r"}{l}{" + tex(self.title) + r"} \\",
            r"\midrule",
            tex_row([tex(h) for h in header]),
            r"\midrule",
        ]
        out += [tex_row([tex(c) for c in cells]) for cells in rows]
        out += [r"\bottomrule", r"\end{tabular}"]
        return "\n".join(out) + "\n" + tex_note(self.legend())

    def records(self) -> list[JsonObject]:
        """Long form: one record per facet value x system (means x100, per-task means too)."""
        recs: list[JsonObject] = []
        for row in self.facets.rows:
            for system in self.facets.systems:
                if system not in row.mean:
                    continue
                recs.append(
                    {
                        "by": self.facets.by,
                        "value": row.value,
                        "system": system,
                        "measure": self.measure.trec,
                        "average": self.facets.average,
                        "queries": row.queries,
                        "count": row.counts[system],
                        "mean": round(100 * row.mean[system], 6),
                    }
                )
        return recs

    def to_dict(self) -> JsonObject:
        return {
            "by": self.facets.by,
            "average": self.facets.average,
            "measure": self.measure.trec,
            "scale": 100,
            "systems": list(self.facets.systems),
            "rows": [
                {
                    "value": r.value,
                    "queries": r.queries,
                    "tasks": list(r.tasks),
                    "mean": {s: round(100 * v, 6) for s, v in r.mean.items()},
                    "counts": dict(r.counts),
                    "per_task": {
                        s: {t: round(100 * v, 6) for t, v in by_task.items()} for s, by_task in r.per_task.items()
                    },
                }
                for r in self.facets.rows
            ],
            "legend": list(self.legend()),
        }

    def render(self, fmt: str) -> str:
        fmt = check_format(fmt)
        if fmt == "json":
            return json.dumps(self.to_dict(), indent=1, ensure_ascii=False) + "\n"
        if fmt == "csv":
            return records_text(
                self.records(), "csv", ["by", "value", "system", "measure", "average", "queries", "count", "mean"]
            )
        if fmt == "latex":
            return self.to_latex()
        return self.to_markdown()
