"""Core commands: ``tasks``, ``evaluate``, ``score`` and ``demo``."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Optional

import typer
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from ..data.hub import HubUnavailable, parse_revision
from ..errors import R2MedError
from ..cache import check_home
from ..metrics import HEADLINE, canonical, evaluate
from ..paths import check_input_file, check_output_dir, plain_name
from ..pipeline import TaskResult, resolve_collections, run_collection
from ..protocol import published_ndcg10
from ..tasks import TASKS, parse_tasks
from . import app, console, enable_strict_data
from .options import AT_LEAST_0, AT_LEAST_1, UNIT, at_least

log = logging.getLogger(__name__)

REVISION_HELP = ("Hub data revision: default each task's pinned commit (`r2med tasks`); 'main', one commit, "
                 "or TASK=REV pairs (Biology=main,MedQA-Diag=<commit>).")


@app.command("tasks")
def tasks_command(as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table.")) -> None:
    """List the 8 R2MED tasks with their published sizes."""
    if as_json:
        console.print_json(json.dumps([vars(t) for t in TASKS.values()]))
        return
    table = Table(title="R2MED tasks (hub: R2MED/<task>)")
    table.add_column("task", no_wrap=True)
    table.add_column("scenario")
    for col in ("queries", "docs", "pos/q", "q len", "d len"):
        table.add_column(col, justify="right", no_wrap=True)
    for t in TASKS.values():
        table.add_row(t.name, f"{t.scenario}: {t.retrieval_type}", f"{t.queries:,}", f"{t.docs:,}",
                      f"{t.avg_positives:.1f}", f"{t.avg_query_length:.0f}", f"{t.avg_doc_length:.0f}")
    console.print(table)
    console.print(f"{sum(t.queries for t in TASKS.values())} queries in all; lengths are the dataset card's token counts.")
    console.print("Hub data loads at pinned commits: " + ", ".join(f"{t.name} {t.revision[:7]}" for t in TASKS.values())
                  + " (MTEB's pins; --revision changes them; `--json` gives them in full).")


def _progress() -> Progress:
    # descriptions hold task names: shown as text (markup=False), never parsed as Rich markup
    return Progress(TextColumn("{task.description}", style="bold", markup=False), BarColumn(),
                    TextColumn("{task.completed}/{task.total}"),
                    TimeElapsedColumn(), console=console, transient=True)


def evaluate_many(loaders, names, retriever: str, options: dict, k: int, out: Optional[Path],
                  measures, count_missing: bool, overwrite: bool = False, label: Optional[str] = None,
                  query_builder=None) -> list[TaskResult]:
    results = []
    with _progress() as progress:
        bar = progress.add_task(f"{retriever}", total=len(loaders))
        for name, load in zip(names, loaders):
            progress.update(bar, description=f"{retriever} · {name}: loading")
            collection = load()
            progress.update(bar, description=f"{retriever} · {collection.name}: retrieving")
            result = run_collection(collection, retriever, options, k=k, out=out, measures=measures,
                                    count_missing=count_missing, overwrite=overwrite, label=label,
                                    query_builder=query_builder)
            log.info("%s: nDCG@10 = %.4f%s", result.task, result.headline, " (reused)" if result.reused else "")
            results.append(result)
            progress.advance(bar)
    return results


def summary_table(results: list[TaskResult], retriever: str, measure: str = HEADLINE,
                  published_key: tuple[str, str, str] | None = None, title: str | None = None) -> Table:
    """Tasks x (measure, published nDCG@10, delta, time) with an average row (x100 like the paper)."""
    published = published_ndcg10(*published_key) if published_key else {}
    table = Table(title=escape(title or f"{retriever}: {measure} (x100)"))
    table.add_column("task")
    table.add_column("queries", justify="right")
    table.add_column(escape(measure), justify="right")
    if published:
        table.add_column("published", justify="right")
        table.add_column("delta", justify="right")
    table.add_column("time (s)", justify="right")
    values = []
    for r in results:
        value = 100 * r.metrics.aggregate[measure]
        values.append(value)
        row = [escape(r.task), str(len(r.metrics.per_query)), f"{value:.2f}"]
        if published:
            pub = published.get(r.task)
            row += [f"{pub:.2f}" if pub is not None else "-", f"{value - pub:+.2f}" if pub is not None else "-"]
        row.append("reused" if r.reused else f"{r.timing.get('total_s', 0):.1f}")
        table.add_row(*row)
    if len(results) > 1:
        avg = sum(values) / len(values)
        row = ["[bold]Average", "", f"[bold]{avg:.2f}"]
        if published:
            pub = published.get("Average")
            full = len(results) == 8 and pub is not None
            row += [f"{pub:.2f}" if pub is not None else "-", f"{avg - pub:+.2f}" if full else "-"]
        row.append("")
        table.add_row(*row)
    return table


def parse_measures(measures: Optional[list[str]]) -> tuple[str, ...]:
    from ..metrics import DEFAULT_MEASURES

    return tuple(canonical(m) for m in measures) if measures else DEFAULT_MEASURES


@app.command("evaluate")
def evaluate_command(
    ctx: typer.Context,
    retriever: str = typer.Option("bm25", "--retriever", "-r", help="Retriever name (see `r2med models`)."),
    tasks: str = typer.Option("all", "--tasks", "-t", help="'all' or comma-separated task names."),
    data_dir: Optional[Path] = typer.Option(None, "--data-dir", "-d",
                                            help="Local data: one collection folder, or a folder of task folders."),
    out: Path = typer.Option(Path("runs"), "--out", "-o", help="Run folder: OUT/<retriever>/<task>/ is written."),
    top_k: int = typer.Option(100, "--top-k", "-k", callback=AT_LEAST_1, help="Docs kept per query."),
    k1: Optional[float] = typer.Option(None, "--k1", callback=AT_LEAST_0, help="BM25 k1 (default: the paper's 0.9)."),
    b: Optional[float] = typer.Option(None, "--b", callback=UNIT, help="BM25 b, 0 to 1 (default: the paper's 0.4)."),
    analyzer: Optional[str] = typer.Option(None, "--analyzer",
                                           help="BM25 analyzer: english (pure Python, the default) or lucene."),
    measure: Optional[list[str]] = typer.Option(None, "--measure", "-m", help="Measures to compute (repeatable)."),
    count_missing: bool = typer.Option(False, "--count-missing", help="Average over all judged queries (0 if unanswered)."),
    revision: Optional[str] = typer.Option(None, "--revision", help=REVISION_HELP),
    overwrite: bool = typer.Option(False, "--overwrite", help="Recompute tasks whose results already exist."),
    no_cache: bool = typer.Option(False, "--no-cache", help="Do not read or write cached indexes."),
    model: Optional[str] = typer.Option(None, "--model", help="Dense: embedding model (hub id or local folder)."),
    batch_size: Optional[int] = typer.Option(None, "--batch-size", callback=AT_LEAST_1, help="Dense: texts per batch (of the longest)."),
    device: Optional[str] = typer.Option(None, "--device", help="Dense: auto (default), cpu, cuda, cuda:1..."),
    max_length: Optional[int] = typer.Option(None, "--max-length", callback=at_least(2), help="Dense: max tokens per text."),
    pooling: Optional[str] = typer.Option(None, "--pooling", help="Dense: cls, mean or last-token."),
    similarity: Optional[str] = typer.Option(None, "--similarity",
                                             help="Dense: cosine (the paper's, the default) or dot."),
    dtype: Optional[str] = typer.Option(None, "--dtype", help="Dense: bf16, fp16 or fp32 (default: the "
                                                              "paper's per preset, fp32 for other models)."),
    trust_remote_code: bool = typer.Option(False, "--trust-remote-code",
                                           help="Dense: allow models that run their own code (NV-Embed-v2)."),
    medcpt_published: bool = typer.Option(False, "--medcpt-published-encoder",
                                          help="medcpt: encode queries with the Article encoder, as the published code did."),
    expansion: Optional[str] = typer.Option(None, "--expansion", "-e",
                                            help="Expand queries with METHOD:LLM (e.g. hyde:gpt4, hyde:qwen_7b); "
                                                 "see docs/expansion.md."),
    expansion_file: Optional[Path] = typer.Option(None, "--expansion-file",
                                                  help="With --expansion: read this query_with_hydoc.jsonl (one task)."),
    expansion_dir: Optional[Path] = typer.Option(None, "--expansion-dir",
                                                 help="With --expansion: folder written by `r2med expand`."),
    ray: bool = typer.Option(False, "--ray", help="Run the (retriever x task) matrix as Ray tasks (extra 'scale'); "
                                                  "-r may then list several retrievers (bm25,bge,...)."),
    ray_address: Optional[str] = typer.Option(None, "--ray-address", envvar="RAY_ADDRESS",
                                              help="With --ray: auto, host:port or ray://host:10001 "
                                                   "(default: start a local cluster)."),
    strict: bool = typer.Option(False, "--strict", help="Refuse data files with repeated ids or judgments "
                                                        "(default: keep the last, as the paper's loader)."),
) -> None:
    """Run a retriever over tasks, write OUT/<retriever>/<task>/{run.trec,metrics.json} and print a table."""
    if strict:
        enable_strict_data(ctx)
    check_output_dir(out)
    if not no_cache:
        check_home()
    names = parse_tasks(tasks) if data_dir is None or not (data_dir / "corpus.jsonl").exists() else [data_dir.name]
    parse_revision(revision)  # a malformed --revision fails before anything runs
    loaders = resolve_collections(names, data_dir, revision)
    measures = parse_measures(measure)
    if HEADLINE not in measures:  # the summary table and the published figures are nDCG@10
        measures = (HEADLINE, *measures)

    def plan(retriever: str):
        """(options, query builder, label, dense?) for one retriever."""
        from ..retrieval.registry import retriever_meta

        meta = retriever_meta(retriever)
        options = {"cache": not no_cache, **meta.check_options(dict(
            k1=k1, b=b, analyzer=analyzer, model=model, batch_size=batch_size, device=device, max_length=max_length,
            pooling=pooling, similarity=similarity, dtype=dtype, trust_remote_code=trust_remote_code or None,
            medcpt_published=medcpt_published or None))}
        builder, label = None, retriever
        if expansion or expansion_file or expansion_dir:
            from ..expansion.precomputed import expansion_builder

            builder = expansion_builder(expansion, expansion_file, expansion_dir, data_dir, revision)
            label = f"{retriever}+{builder.label}"
        plain_name(label, "result name", run_name=True)  # a folder under --out and the run's tag
        return options, builder, label, meta.family == "dense"

    if ray:
        from .scale import evaluate_on_ray

        grouped = evaluate_on_ray([r.strip() for r in retriever.split(",") if r.strip()], plan, loaders, names,
                                  top_k, out, measures, count_missing, overwrite, ray_address)
        for label, results in grouped.items():
            console.print(summary_table(results, label))
            console.print(f"results: {escape(str(out / label))}")
        return
    options, builder, label, dense = plan(retriever)
    results = evaluate_many(loaders, names, retriever, options, top_k, out / label, measures, count_missing,
                            overwrite=overwrite, label=label if builder else None, query_builder=builder)
    paper_defaults = (retriever == "bm25" and options["k1"] == 0.9 and options["b"] == 0.4) or (
        dense and retriever != "dense" and model is None and max_length is None and pooling is None
        and paper_scoring(retriever, similarity))
    published = (retriever, builder.method, builder.llm) if builder else (retriever, "none", "none")
    console.print(summary_table(results, label, published_key=published if paper_defaults else None))
    note = precision_note(retriever, dtype) if paper_defaults and dense else None
    if note:
        console.print(f"[yellow]{note}[/]")
    console.print(f"results: {escape(str(out / label))}")


def paper_scoring(retriever: str, similarity: Optional[str]) -> bool:
    """Whether a dense preset run scores as the paper does (a non-paper similarity matches no published row)."""
    from ..retrieval.presets import get_preset

    return similarity is None or similarity == get_preset(retriever).similarity


def precision_note(retriever: str, dtype: Optional[str]) -> Optional[str]:
    """A warning line when a dense preset ran in another precision than the paper's (the row stays shown)."""
    from ..report.systems import paper_dtype
    from ..retrieval.encoders import canonical_dtype

    paper = paper_dtype(retriever)
    if dtype is None or paper is None or canonical_dtype(dtype) == paper:
        return None
    return (f"{retriever} ran in {canonical_dtype(dtype)}, the paper's code in {paper}: expect larger deltas "
            "(reports widen the tolerance)")


@app.command("demo")
def demo_command(
    out: Path = typer.Option(Path("runs/demo"), "--out", "-o", help="Where results are written."),
    revision: Optional[str] = typer.Option(None, "--revision", help=REVISION_HELP),
) -> None:
    """BM25 over all 8 R2MED tasks from the hub beside the paper's figures; the built-in demo when it cannot be reached."""
    from ..data.hub import download, revision_for
    from ..tasks import TASK_NAMES, get_task

    check_output_dir(out)
    check_home()
    try:
        download(get_task(TASK_NAMES[0]).hub_id, "query.jsonl", revision_for(TASK_NAMES[0], revision))
    except HubUnavailable as exc:  # only "cannot be reached": a missing file or revision is an error
        console.print(f"[yellow]The Hugging Face hub cannot be reached, so the same pipeline runs on the built-in "
                      f"demo collection instead. {escape(str(exc))}[/]", highlight=False, soft_wrap=True)
        from ..data.loaders import load_demo

        results = evaluate_many([load_demo], ["demo"], "bm25", {}, 100, out / "bm25",
                                parse_measures(None), False, overwrite=True)
        console.print(summary_table(results, "bm25", title="bm25 on the built-in demo collection: nDCG@10 (x100)"))
        console.print(f"results: {escape(str(out / 'bm25'))}")
        return
    loaders = resolve_collections(list(TASK_NAMES), None, revision)
    results = evaluate_many(loaders, list(TASK_NAMES), "bm25", {}, 100, out / "bm25", parse_measures(None), False)
    console.print(summary_table(results, "bm25", published_key=("bm25", "none", "none")))
    console.print(f"results: {escape(str(out / 'bm25'))}")


@app.command("score")
def score_command(
    ctx: typer.Context,
    qrels: Path = typer.Argument(..., help="Judgments: TREC qrels, R2MED qrels.jsonl or BEIR .tsv."),
    run: Path = typer.Argument(..., help="TREC run file."),
    measure: Optional[list[str]] = typer.Option(None, "--measure", "-m", help="Measures (repeatable)."),
    per_query: bool = typer.Option(False, "--per-query", "-q", help="Also print per-query values."),
    count_missing: bool = typer.Option(False, "--count-missing", "-c", help="Judged queries missing from the run count as 0."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    strict: bool = typer.Option(False, "--strict", help="Refuse judgments repeated for the same query and doc."),
) -> None:
    """Score a run file against judgments, trec_eval style."""
    if strict:
        enable_strict_data(ctx)
    from ..data import read_qrels
    from ..run import read_trec

    check_input_file(qrels, "qrels")
    check_input_file(run, "run")
    judged = read_qrels(qrels)
    ranked = read_trec(run)
    unknown = sum(1 for q in ranked if q not in judged)
    if unknown:
        log.warning("%d run quer%s have no judgments and are not scored", unknown, "y" if unknown == 1 else "ies")
    measures = parse_measures(measure)
    metrics = evaluate(ranked, judged, measures=measures, count_missing=count_missing)
    if as_json:
        payload = {"aggregate": metrics.aggregate, "queries": len(metrics.per_query)}
        if per_query:
            payload["per_query"] = metrics.per_query
        typer.echo(json.dumps(payload, indent=1))
        return
    if per_query:
        for qid in sorted(metrics.per_query):
            for m in metrics.measures:
                typer.echo(f"{m:<16}\t{qid}\t{metrics.per_query[qid][m]:.4f}")
    typer.echo(f"{'num_q':<16}\tall\t{len(metrics.per_query)}")
    for m in metrics.measures:
        typer.echo(f"{m:<16}\tall\t{metrics.aggregate[m]:.4f}")
