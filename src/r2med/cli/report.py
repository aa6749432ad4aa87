"""Reporting commands: ``report`` (leaderboard + HTML), ``compare`` (significance), ``reproduce`` and ``plot``.

The inputs come from :mod:`r2med.jobs.report` and :mod:`r2med.jobs.reproduce`; the tables and the
page from :mod:`r2med.report`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.markup import escape

from ..errors import R2MedError
from ..measures import HEADLINE
from ..measures import Measure as MeasureValue
from . import app, strict_data
from ._ui import console, emit, print_fitted, print_notes, table_console
from .options import (
    AT_LEAST_0,
    LISTING_FORMAT_EXACT,
    Alpha,
    CompareRuns,
    Format,
    Measure,
    Output,
    Permutations,
    Revision,
    Runs,
    Seed,
    Tasks,
    Tolerance,
    Wide,
    comma_list,
)

if TYPE_CHECKING:
    from ..results.reproduction import Planned


def _published_overrides(items: list[str] | None) -> dict[str, str]:
    out = {}
    for item in items or []:
        name, eq, label = item.partition("=")
        if not eq or not name or not label:
            raise R2MedError(f"--published {item!r}: expected SYSTEM=LABEL, e.g. myrun=bm25 or myrun=bm25+hyde-gpt4")
        out[name] = label
    return out


@app.command("report")
def report_command(
    ctx: typer.Context,
    runs: Runs,
    measures: list[str] | None = typer.Option(
        None,
        "--measure",
        "-m",
        help="The measure (repeatable: one table per measure, in every format; default nDCG@10, R@1 when "
        "every task is BRIGHT's long-document setting): nDCG@10, R@100, MRR, MAP@10, P@10...",
    ),
    fmt: Format = "table",
    output: Output = None,
    html: Path | None = typer.Option(None, "--html", help="Also write a self-contained HTML report here."),
    data_dir: Path | None = typer.Option(
        None,
        "--data-dir",
        "-d",
        help="Local data (one collection, or a folder of them): texts in the HTML; query "
        "metadata for --by (default for --by: the source the runs recorded, else "
        "the hub).",
    ),
    hub: bool = typer.Option(False, "--hub", help="Load texts for the HTML report from the Hugging Face hub."),
    revision: Revision = None,
    by: str | None = typer.Option(
        None,
        "--by",
        help="The leaderboard per value of a query metadata key "
        "(body_system, answer...) or 'scenario', with query counts.",
    ),
    average: str = typer.Option(
        "pooled",
        "--average",
        help="With --by: pooled (mean over the value's queries, across tasks) or macro (mean of per-task means).",
    ),
    tolerance: Tolerance = None,
    baseline: str | None = typer.Option(
        None, "--baseline", "-b", help="Mark cells significantly different from this system."
    ),
    published: list[str] | None = typer.Option(
        None, "--published", help="SYSTEM=LABEL: compare SYSTEM with a published configuration (repeatable)."
    ),
    permutations: Permutations = 10_000,
    seed: Seed = 42,
    alpha: Alpha = 0.05,
    title: str | None = typer.Option(
        None, "--title", help="Title of the HTML report (default: from the benchmarks shown, e.g. 'BRIGHT results')."
    ),
    with_published: str | None = typer.Option(
        None, "--with-published", help="Add published configurations as rows, e.g. 'nv,bge,bm25+hyde-gpt4'."
    ),
    tasks: Tasks = "all",
    wide: Wide = False,
) -> None:
    """Leaderboard of systems x tasks beside the published R2MED figures (or per facet value with --by);
    optional HTML report."""
    from ..evaluation.facets import AVERAGES
    from ..infra.containment import check_output_file
    from ..jobs import report as jobs
    from ..report import build_leaderboard
    from ..report.board import default_measure
    from ..report.facet_table import FacetBoard
    from ..report.format import check_format
    from ..report.multi import Board, Boards, rich_of

    asked = [MeasureValue.parse(m) for m in measures or []]
    fmt = check_format(fmt)
    if average not in AVERAGES:
        raise R2MedError(f"unknown --average {average!r}; choose from: {', '.join(AVERAGES)}")
    for path, what in ((output, "--output"), (html, "--html")):
        if path is not None:
            check_output_file(path, what)
    systems = jobs.load_report(runs, published=_published_overrides(published), tasks=tasks)
    boards = [
        build_leaderboard(
            systems,
            m,
            tolerance=tolerance,
            baseline=baseline,
            alpha=alpha,
            n_permutations=permutations,
            seed=seed,
            references=comma_list(with_published) if m == HEADLINE or len(asked) < 2 else [],
        )
        for m in dict.fromkeys(asked or [default_measure(systems)])
    ]
    board = boards[0]
    collections = None
    shown: list[Board] = list(boards)
    if by is not None:
        from ..evaluation.facets import SCENARIO

        collections = (
            {} if by == SCENARIO else jobs.facet_collections(systems, data_dir, revision, strict=strict_data(ctx))
        )
        shown = [FacetBoard(jobs.facet_report(systems, b.measure, by, average, collections), b.measure) for b in boards]
    if fmt == "table" and output is None:
        for table in shown:
            print_fitted(rich_of(table), wide=wide)
    else:
        emit(Boards(shown).render(fmt), output)
    print_notes([line for b in boards for line in b.left_out()])
    if html is not None:
        from ..report.html import write_html

        texts = jobs.task_texts(
            board.tasks, data_dir, hub=hub, revision=revision, strict=strict_data(ctx), systems=systems
        )
        texts.update(collections or {})
        facets = jobs.html_facets(systems, board.measure, texts, average, by)
        write_html(
            html,
            systems,
            board.measure,
            texts,
            board=board,
            title=title,
            expansions=jobs.expansion_texts(systems, texts),
            facets=facets,
            facet=by,
        )
        console.print(f"HTML report: {escape(str(html))}")


@app.command("compare")
def compare_command(
    runs: CompareRuns,
    measure: Measure = "nDCG@10",
    fmt: Format = "table",
    output: Output = None,
    permutations: Permutations = 10_000,
    seed: Seed = 42,
    alpha: Alpha = 0.05,
    per_query: int | None = typer.Option(
        None,
        "--per-query",
        "-p",
        callback=AT_LEAST_0,
        help="Also list the N largest per-query gains and losses "
        "(0 = every query; with csv/json: the per-query rows instead).",
    ),
    tasks: Tasks = "all",
    wide: Wide = False,
) -> None:
    """Paired comparison against the first system: mean difference, t-test, randomisation test, bootstrap CI,
    Holm-Bonferroni across tasks, wins/ties/losses."""
    from ..infra.containment import check_output_file
    from ..jobs.report import load_report
    from ..report import compare_many, render_comparisons
    from ..report.compare import render_changes
    from ..report.format import check_format

    asked = MeasureValue.parse(measure)
    fmt = check_format(fmt)
    if output is not None:
        check_output_file(output, "--output")
    systems = load_report(runs, tasks=tasks)
    if len(systems) < 2:
        raise R2MedError("compare needs at least two systems: r2med compare BASELINE OTHER [MORE...]")
    comparisons = compare_many(systems, asked, n_permutations=permutations, seed=seed, alpha=alpha)
    if per_query is not None and fmt in ("csv", "json"):
        emit(render_changes(comparisons, fmt, per_query or None), output)
    elif fmt == "table" and output is None:
        for c in comparisons:
            print_fitted(c.to_rich, wide=wide)
            if per_query is not None:
                print_fitted(c.changes_rich(per_query or len(c.per_query)), wide=wide)
    else:
        emit(render_comparisons(comparisons, fmt), output)
    print_notes([note for c in comparisons for note in c.notes])


@app.command("reproduce")
def reproduce_command(
    ctx: typer.Context,
    dry_run: bool = typer.Option(
        False, "--dry-run", "-n", help="Only list what would run here and why the rest cannot."
    ),
    data_dir: Path | None = typer.Option(None, "--data-dir", "-d", help="Folder of R2MED task folders (else the hub)."),
    out: Path = typer.Option(Path("runs/reproduce"), "--out", "-o", help="Where runs are written (and reused from)."),
    retrievers: str | None = typer.Option(
        None, "--retrievers", "-r", help="Comma-separated retrievers (default: all)."
    ),
    tasks: Tasks = "all",
    settings: str | None = typer.Option(
        None,
        "--settings",
        help="Published settings to include (default: all). R2MED's: the paper's base, gar, lrm_agentic, "
        "reranker_top_10 (the first stage's top 10 reranked, scored alone) and the later "
        "later_embedder, later_leaderboard (ReasonRank on e5's top 100). BRIGHT's (--tasks bright): "
        "paper (its per-task nDCG@10) and later_third_party (long documents' per-task Recall@1).",
    ),
    tolerance: Tolerance = None,
    force_cpu: bool = typer.Option(False, "--force-cpu", help="Also run large local models without a GPU."),
    trust_remote_code: bool = typer.Option(
        False,
        "--trust-remote-code",
        help="Allow models that run code from their hub repository (nv, rader-7b, gte-qwen2-7b, reasonir-8b).",
    ),
    overwrite: bool = typer.Option(False, "--overwrite", help="Recompute cells whose results already exist."),
    fmt: str = typer.Option(
        "table",
        "--format",
        "-f",
        metavar=LISTING_FORMAT_EXACT.choices_metavar,
        callback=LISTING_FORMAT_EXACT.callback,
        help="table or json.",
    ),
    revision: Revision = None,
    wide: Wide = False,
) -> None:
    """Reproduce the published R2MED figures (and BRIGHT's: --tasks bright) that this machine can: run, compare,
    print pass/fail with tolerance."""
    from ..data.names import parse_tasks
    from ..infra.containment import check_output_dir
    from ..jobs import reproduce as jobs
    from ..report import reproduce_tables as tables

    if fmt not in ("table", "json"):
        raise R2MedError(f"unknown --format {fmt!r}; choose table or json")
    asked = parse_tasks(tasks)
    chosen = comma_list(settings) or None
    matrix = jobs.targets(chosen, comma_list(retrievers) or None, asked)
    env = jobs.Environment(
        data_dir, force_cpu=force_cpu, revision=revision, trust_remote_code=trust_remote_code, strict=strict_data(ctx)
    )
    planned = jobs.plan(matrix, env)
    if dry_run:
        if fmt == "json":
            typer.echo(tables.to_json(planned), nl=False)
        else:
            unpublished, others = jobs.beside(asked, tuple(chosen) if chosen else None) if not retrievers else ([], [])
            from ..report.layout import fitted

            print_fitted(
                fitted(
                    lambda: tables.plan_table(planned, unpublished, others=others),
                    lambda: tables.plan_table(planned, unpublished, compact=True, others=others),
                ),
                wide=wide,
            )
            gpu = env.gpu or "none"
            console.print(
                escape(f"GPU: {gpu} · hub reachable: {'yes' if env.hub else 'no'} · data: {data_dir or 'hub'}")
            )
        return
    check_output_dir(out)
    from ..infra import progress

    with progress.task("reproduce", total=sum(p.runnable for p in planned), unit="cells") as bar:

        def step(p: Planned) -> None:
            bar.describe(f"reproduce · {p.target.label} · {p.target.task}")
            bar.advance()

        outcomes = jobs.run_matrix(planned, out, env, tolerance=tolerance, overwrite=overwrite, progress=step)
    if fmt == "json":
        typer.echo(tables.to_json(outcomes=outcomes), nl=False)
    else:
        table_console().print(tables.outcome_table(outcomes))
        console.print(f"runs: {escape(str(out))}")
    if any(o.status in ("fail", "error") for o in outcomes):
        raise typer.Exit(1)


@app.command("plot")
def plot_command(
    ctx: typer.Context,
    runs: Runs,
    output: Path = typer.Option(
        ..., "--output", "-o", help="The figure: .png, .pdf or .svg (the suffix names the format)."
    ),
    kind: str = typer.Option(
        "bars",
        "--kind",
        help="bars (per task, published figures marked), scatter (per query, "
        "two systems: --systems A,B) or facets (per value of --by).",
    ),
    measure: Measure = "nDCG@10",
    systems_: str | None = typer.Option(
        None, "--systems", "-s", help="scatter: the two systems, X,Y (default: the first two)."
    ),
    by: str = typer.Option("scenario", "--by", help="facets: a query metadata key or 'scenario'."),
    average: str = typer.Option("pooled", "--average", help="facets: pooled or macro."),
    baseline: str | None = typer.Option(
        None, "--baseline", "-b", help="bars: mark (†) each bar that differs significantly from this system."
    ),
    data_dir: Path | None = typer.Option(None, "--data-dir", "-d", help="facets: local data for the query metadata."),
    revision: Revision = None,
    tasks: Tasks = "all",
) -> None:
    """A figure for a paper (matplotlib: pip install 'r2med[plot]'): per-task bars, a per-query scatter of two
    systems, or facet bars; grayscale-safe, 8 pt text, one column wide."""
    from ..infra.containment import check_output_file
    from ..jobs import report as jobs
    from ..report import build_leaderboard, plot

    asked = MeasureValue.parse(measure)
    if kind not in plot.KINDS:
        raise R2MedError(f"unknown --kind {kind!r}; choose from: {', '.join(plot.KINDS)}")
    check_output_file(output, "--output")
    plot.figure_format(output)
    systems = jobs.load_report(runs, tasks=tasks)
    if baseline is not None and kind != "bars":
        raise R2MedError(f"--baseline marks the bars figure; --kind {kind} takes none")
    from ..results.folders import task_order
    from ..results.published import different_data

    for task in task_order(systems):  # one column, one data state: a figure pairs what compare pairs
        problem = different_data(task, {s.name: s.tasks[task].record for s in systems if task in s.tasks})
        if problem is not None:
            raise R2MedError(f"{problem}; a figure draws its columns from one data state (plot them apart)")
    if kind == "bars":
        board = build_leaderboard(systems, asked, baseline=baseline)
        plot.plot_bars(board, output)
        print_notes(board.left_out())
    elif kind == "scatter":
        names = comma_list(systems_) or [s.name for s in systems[:2]]
        if len(names) != 2:
            raise R2MedError(f"--kind scatter plots two systems; got {len(names)} ({', '.join(names)})")
        plot.plot_scatter(jobs.per_query_values(systems, asked), names[0], names[1], asked, output)
    else:
        from ..evaluation.facets import SCENARIO

        collections = (
            {} if by == SCENARIO else jobs.facet_collections(systems, data_dir, revision, strict=strict_data(ctx))
        )
        facets = jobs.facet_report(systems, asked, by, average, collections)
        plot.plot_facets(facets, asked, output)
        from ..report.facet_table import FacetBoard

        print_notes(FacetBoard(facets, asked).left_out())
    console.print(f"figure: {escape(str(output))}")
