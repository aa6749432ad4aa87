"""Reporting commands: ``report`` (leaderboard + HTML), ``compare`` (significance) and ``reproduce``."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Optional

import typer
from rich.markup import escape

from ..cache import write_text_atomic
from ..errors import R2MedError
from ..paths import check_output_dir, check_output_file
from . import app, console
from .options import AT_LEAST_0, OPEN_UNIT, at_least

log = logging.getLogger(__name__)

_FORMAT_HELP = "Output: table (terminal), markdown, csv, latex or json."


def _out():
    """The console for tables: wide enough when stdout is not a terminal (pipes, files, CI logs)."""
    if console.is_terminal:
        return console
    from rich.console import Console

    return Console(width=max(console.width, 160))


def _emit(text: str, output: Optional[Path]) -> None:
    if output is None:
        typer.echo(text, nl=False)
        return
    check_output_file(output, "--output")
    output.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(output, text)
    console.print(f"written: {escape(str(output))}")


def _published_overrides(items: Optional[list[str]]) -> dict[str, str]:
    out = {}
    for item in items or []:
        name, eq, label = item.partition("=")
        if not eq or not name or not label:
            raise R2MedError(f"--published {item!r}: expected SYSTEM=LABEL, e.g. myrun=bm25 or myrun=bm25+hyde-gpt4")
        out[name] = label
    return out


def _check_format(fmt: str) -> str:
    from ..report import FORMATS

    fmt = {"md": "markdown", "tex": "latex"}.get(fmt.lower(), fmt.lower())
    if fmt not in FORMATS:
        raise R2MedError(f"unknown --format {fmt!r}; choose from: {', '.join(FORMATS)}")
    return fmt


@app.command("report")
def report_command(
    runs: list[Path] = typer.Argument(..., help="Run folders from `r2med evaluate` (OUT, OUT/<system> or task folders)."),
    measure: str = typer.Option("ndcg_cut_10", "--measure", "-m", help="Measure to tabulate (nDCG@10, R@100, MRR...)."),
    fmt: str = typer.Option("table", "--format", "-f", help=_FORMAT_HELP),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write the table to a file instead of stdout."),
    html: Optional[Path] = typer.Option(None, "--html", help="Also write a self-contained HTML report here."),
    data_dir: Optional[Path] = typer.Option(None, "--data-dir", "-d",
                                            help="Task data (folder of task folders, or one collection) for texts in the HTML."),
    hub: bool = typer.Option(False, "--hub", help="Load texts for the HTML report from the Hugging Face hub."),
    tolerance: Optional[float] = typer.Option(None, "--tolerance", callback=AT_LEAST_0,
                                              help="Allowed |delta| to the published figure (x100); default by retriever kind."),
    baseline: Optional[str] = typer.Option(None, "--baseline", "-b", help="Mark cells significantly different from this system."),
    published: Optional[list[str]] = typer.Option(None, "--published",
                                                  help="SYSTEM=LABEL: compare SYSTEM with a published configuration (repeatable)."),
    permutations: int = typer.Option(10_000, "--permutations", callback=at_least(100), help="Randomisation test permutations."),
    seed: int = typer.Option(42, "--seed", callback=AT_LEAST_0, help="Seed of the randomisation test and bootstrap."),
    alpha: float = typer.Option(0.05, "--alpha", callback=OPEN_UNIT, help="Significance level."),
    title: str = typer.Option("R2MED results", "--title", help="Title of the HTML report."),
    with_published: Optional[str] = typer.Option(None, "--with-published",
                                                 help="Add published configurations as rows, e.g. 'nv,bge,bm25+hyde-gpt4'."),
) -> None:
    """Leaderboard of run folders (systems x tasks) beside the published R2MED figures; optional HTML report."""
    from ..report import build_leaderboard, load_systems

    fmt = _check_format(fmt)
    for path, what in ((output, "--output"), (html, "--html")):
        if path is not None:
            check_output_file(path, what)
    systems = load_systems(runs, published=_published_overrides(published))
    board = build_leaderboard(systems, measure, tolerance=tolerance, baseline=baseline, alpha=alpha,
                              n_permutations=permutations, seed=seed,
                              references=[x.strip() for x in with_published.split(",") if x.strip()] if with_published else ())
    if fmt == "table" and output is None:
        _out().print(board.to_rich())
    else:
        _emit(board.render("markdown" if fmt == "table" else fmt), output)
    if html is not None:
        from ..report.html import load_collections, write_html

        collections = load_collections(board.tasks, data_dir, hub=hub)
        write_html(html, systems, board.measure, collections, board=board, title=title)
        console.print(f"HTML report: {escape(str(html))}")


@app.command("compare")
def compare_command(
    runs: list[Path] = typer.Argument(..., help="Two or more run folders; the first is the baseline."),
    measure: str = typer.Option("ndcg_cut_10", "--measure", "-m", help="Measure to compare."),
    fmt: str = typer.Option("table", "--format", "-f", help=_FORMAT_HELP),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write to a file instead of stdout."),
    permutations: int = typer.Option(10_000, "--permutations", callback=at_least(100), help="Randomisation test permutations."),
    seed: int = typer.Option(42, "--seed", callback=AT_LEAST_0, help="Seed of the randomisation test and bootstrap."),
    alpha: float = typer.Option(0.05, "--alpha", callback=OPEN_UNIT, help="Significance level."),
    per_query: Optional[int] = typer.Option(None, "--per-query", "-q", callback=AT_LEAST_0,
                                            help="Also list the N largest per-query gains and losses "
                                                 "(0 = every query; with csv/json: the per-query rows instead)."),
) -> None:
    """Paired comparison against the first system: mean difference, t-test, randomisation test, bootstrap CI,
    Holm-Bonferroni across tasks, wins/ties/losses."""
    from ..report import compare_many, load_systems, render_comparisons

    fmt = _check_format(fmt)
    if output is not None:
        check_output_file(output, "--output")
    systems = load_systems(runs)
    if len(systems) < 2:
        raise R2MedError("compare needs at least two systems: r2med compare BASELINE OTHER [MORE...]")
    comparisons = compare_many(systems, measure, n_permutations=permutations, seed=seed, alpha=alpha)
    if per_query is not None and fmt in ("csv", "json"):
        from ..report.compare import render_changes

        _emit(render_changes(comparisons, fmt, per_query or None), output)
        return
    if fmt == "table" and output is None:
        for c in comparisons:
            _out().print(c.to_rich())
            for note in c.notes:
                console.print(f"[yellow]note:[/] {escape(note)}")
            if per_query is not None:
                _out().print(c.changes_rich(per_query or len(c.per_query)))
    else:
        _emit(render_comparisons(comparisons, "markdown" if fmt == "table" else fmt), output)


@app.command("reproduce")
def reproduce_command(
    dry_run: bool = typer.Option(False, "--dry-run", "-n", help="Only list what would run here and why the rest cannot."),
    data_dir: Optional[Path] = typer.Option(None, "--data-dir", "-d", help="Folder of R2MED task folders (else the hub)."),
    out: Path = typer.Option(Path("runs/reproduce"), "--out", "-o", help="Where runs are written (and reused from)."),
    retrievers: Optional[str] = typer.Option(None, "--retrievers", "-r", help="Comma-separated retrievers (default: all)."),
    tasks: str = typer.Option("all", "--tasks", "-t", help="'all' or comma-separated task names."),
    settings: str = typer.Option(",".join(["base", "gar", "lrm_agentic", "reranker_top_10"]), "--settings",
                                 help="Published settings to include (base, gar, lrm_agentic, reranker_top_10: "
                                      "the first stage's top 10 reranked, scored alone)."),
    tolerance: Optional[float] = typer.Option(None, "--tolerance", callback=AT_LEAST_0, help="Allowed |delta| (x100); default by retriever kind."),
    force_cpu: bool = typer.Option(False, "--force-cpu", help="Also run large local models without a GPU."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Recompute cells whose results already exist."),
    fmt: str = typer.Option("table", "--format", "-f", help="table or json."),
    revision: Optional[str] = typer.Option(None, "--revision", help="Pinned hub revision."),
) -> None:
    """Reproduce the published R2MED figures that this machine can: run, compare, print pass/fail with tolerance."""
    from ..report import reproduce as rp
    from ..tasks import parse_tasks

    if fmt not in ("table", "json"):
        raise R2MedError(f"unknown --format {fmt!r}; choose table or json")
    matrix = rp.cells([s.strip() for s in settings.split(",") if s.strip()],
                      [r.strip() for r in retrievers.split(",")] if retrievers else None, parse_tasks(tasks))
    env = rp.Environment(data_dir, force_cpu=force_cpu, revision=revision)
    planned = rp.plan(matrix, env)
    if dry_run:
        if fmt == "json":
            typer.echo(rp.to_json(planned), nl=False)
        else:
            _out().print(rp.plan_table(planned))
            gpu = env.gpu or "none"
            console.print(escape(f"GPU: {gpu} · hub reachable: {'yes' if env.hub else 'no'} · data: {data_dir or 'hub'}"))
        return
    check_output_dir(out)
    from .core import _progress

    runnable = sum(p.runnable for p in planned)
    with _progress() as progress:
        bar = progress.add_task("reproduce", total=runnable)

        def step(p):
            progress.update(bar, description=f"{p.cell.label} · {p.cell.task}")
            progress.advance(bar)

        outcomes = rp.run_matrix(planned, out, env, tolerance=tolerance, overwrite=overwrite, progress=step)
    if fmt == "json":
        typer.echo(rp.to_json(outcomes=outcomes), nl=False)
    else:
        _out().print(rp.outcome_table(outcomes))
        console.print(f"runs: {escape(str(out))}")
    if any(o.status in ("fail", "error") for o in outcomes):
        raise typer.Exit(1)
