"""Core commands: ``tasks``, ``evaluate``, ``demo``, ``score`` and ``import`` (the work: :mod:`r2med.jobs.evaluate`)."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape
from rich.table import Table

from ..data.tasks import TASKS
from ..infra.containment import check_output_dir
from . import app, strict_data
from ._ui import check_json_format, console, print_fitted, print_json, print_next, print_summary, print_tie_line
from .options import (
    ANALYZER_CHOICE,
    DTYPE_CHOICE,
    SCORE_FORMAT_CHOICE,
    CountMissing,
    DataDir,
    Device,
    FormatJson,
    JsonAlias,
    LongDocuments,
    Measures,
    Model,
    NoCache,
    Out,
    Overwrite,
    Pooling,
    QrelsFile,
    Ray,
    RayAddress,
    ResultName,
    Revision,
    SimilarityOption,
    Split,
    StepBatchSize,
    StepMaxLength,
    Strict,
    Tasks,
    TrustRemoteCode,
    Wide,
    as_given,
    comma_list,
    with_set,
)


@app.command("tasks")
def tasks_command(fmt: FormatJson = "table", as_json: JsonAlias = False, wide: Wide = False) -> None:
    """List the tasks of both benchmark families, R2MED's 8 and BRIGHT's 12, with their sizes."""
    from ..data.benchmarks import BENCHMARKS

    if check_json_format(fmt, as_json) == "json":
        print_json([{**row.facts, "family": b.name} for b in BENCHMARKS for row in b.rows()])
        return
    for family in BENCHMARKS:
        rows = family.rows()
        if family.name == "r2med":
            _r2med_table(wide)
            continue
        table = Table(title=f"{family.title} tasks (hub: xlangai/BRIGHT)")
        table.add_column("task", no_wrap=True)
        if wide:
            table.add_column("group")
        for col in ("queries", "docs", "gold", "excluded", "long"):
            table.add_column(col, justify="right", no_wrap=True)
        for row in rows:
            f = row.facts
            table.add_row(
                row.name,
                *([str(f["group"])] if wide else []),
                f"{row.queries:,}",
                f"{row.docs:,}",
                f"{row.judgments:,}",
                f"{f['excluded_ids']:,}" if f["excluded_ids"] else "-",
                f"{f['long_documents']:,}" if f["long_documents"] else "-",
            )
        print_fitted(table, wide=wide)
        console.print(
            f"{sum(r.queries for r in rows):,} queries in all; docs: Anserini's index of the hub's corpus; gold: "
            "distinct (query, gold id) pairs; excluded: (query, document) pairs removed before the cut; long: "
            "the long-document corpus. Hub data "
            f"loads at commit {rows[0].revision[:7]} (the data of its graded figures; --revision changes it). "
            "--tasks bright runs all "
            "12; bright:<task>:long (or --long-documents) the long-document setting of the 8 with long docs; "
            "--tasks all stays R2MED's 8."
        )


def _r2med_table(wide: bool) -> None:
    table = Table(title="R2MED tasks (hub: R2MED/<task>)")
    table.add_column("task", no_wrap=True)
    table.add_column("scenario", no_wrap=not wide)
    if wide:
        table.add_column("retrieval")
    for col in ("queries", "docs", "pos/q", "len q/d"):
        table.add_column(col, justify="right", no_wrap=True)
    for t in TASKS.values():
        scenario = t.scenario if wide else t.scenario.removesuffix(" retrieval")
        table.add_row(
            t.name,
            scenario,
            *([t.retrieval_type] if wide else []),
            f"{t.queries:,}",
            f"{t.docs:,}",
            f"{t.avg_positives:.1f}",
            f"{t.avg_query_length:.0f}/{t.avg_doc_length:.0f}",
        )
    print_fitted(table, wide=wide)
    console.print(
        f"{sum(t.queries for t in TASKS.values())} queries in all; lengths: the dataset card's mean "
        "tokens per query/doc."
    )
    console.print(
        "Hub data loads at pinned commits: "
        + ", ".join(f"{t.name} {t.revision[:7]}" for t in TASKS.values())
        + " (MTEB's pins; --revision changes them; `--format json` gives them in full)."
    )


@app.command("evaluate")
def evaluate_command(
    ctx: typer.Context,
    retriever: str = typer.Option(
        "bm25", "--retriever", "-r", help="Retriever name (see `r2med models`); with --ray a comma-separated list."
    ),
    tasks: Tasks = "all",
    data_dir: DataDir = None,
    split: Split = "test",
    out: Out = Path("runs"),
    name: ResultName = None,
    top_k: int | None = typer.Option(
        None,
        "--top-k",
        "-k",
        parser=as_given,
        help="Docs kept per query (default: the task's protocol: R2MED 100, BRIGHT 1000).",
    ),
    k1: float | None = typer.Option(None, "--k1", parser=as_given, help="BM25 k1 (default: the paper's 0.9)."),
    b: float | None = typer.Option(None, "--b", parser=as_given, help="BM25 b, 0 to 1 (default: the paper's 0.4)."),
    analyzer: str | None = typer.Option(
        None,
        "--analyzer",
        metavar=ANALYZER_CHOICE.choices_metavar,
        callback=ANALYZER_CHOICE.callback,
        help="BM25 analyzer: english (pure Python, the default) or lucene.",
    ),
    measure: Measures = None,
    count_missing: CountMissing = False,
    revision: Revision = None,
    overwrite: Overwrite = False,
    no_cache: NoCache = False,
    model: Model = None,
    batch_size: StepBatchSize = None,
    device: Device = None,
    max_length: StepMaxLength = None,
    pooling: Pooling = None,
    similarity: SimilarityOption = None,
    dtype: str | None = typer.Option(
        None,
        "--dtype",
        metavar=DTYPE_CHOICE.choices_metavar,
        callback=DTYPE_CHOICE.callback,
        help="Dense: bf16, fp16 or fp32 (default: the paper's per preset, fp32 for other models).",
    ),
    trust_remote_code: TrustRemoteCode = False,
    medcpt_published: bool = typer.Option(
        False,
        "--medcpt-published-encoder",
        help="medcpt: encode queries with the Article encoder, as the published code did.",
    ),
    expansion: str | None = typer.Option(
        None,
        "--expansion",
        "-e",
        help="Expand queries with METHOD:LLM (e.g. hyde:gpt4, hyde:qwen_7b; BRIGHT's reasoning in place of "
        "the query: reason:gpt4); see docs/expansion.md.",
    ),
    expansion_file: Path | None = typer.Option(
        None, "--expansion-file", help="With --expansion: read this query_with_hydoc.jsonl (one task)."
    ),
    expansion_dir: Path | None = typer.Option(
        None, "--expansion-dir", help="With --expansion: folder written by `r2med expand`."
    ),
    encoder: str | None = typer.Option(
        None,
        "--encoder",
        help="-r custom: your encoder, MODULE:OBJ (a dotted module or a .py "
        "file; OBJ has encode(texts, role)); runs its code. See docs/dense.md.",
    ),
    set_: list[str] | None = typer.Option(
        None,
        "--set",
        help="Other options of the retriever as key=value (e.g. query_instruction=..., chunk_size=4096); "
        "one it does not take is refused with the list of those it takes.",
    ),
    ray: Ray = False,
    ray_address: RayAddress = None,
    strict: Strict = False,
    long_documents: LongDocuments = False,
    qrels: QrelsFile = None,
) -> None:
    """Run a retriever over tasks, write OUT/<system>/<task>/{run.trec,metrics.json} and print a table."""
    from ..data import check_hub, resolve
    from ..errors import R2MedError
    from ..infra.home import check_home
    from ..jobs import evaluate as jobs
    from ..results.folders import summary
    from ..spec.parse import Origin
    from ..steps import evaluate_step

    strict = strict_data(ctx, strict)
    names = comma_list(retriever) if ray else [retriever]
    if name is not None and len(names) > 1:
        raise R2MedError(f"--name names one result, but --retriever lists {len(names)}")
    named = dict(
        top_k=top_k,
        expansion=expansion,
        expansion_file=expansion_file,
        expansion_dir=expansion_dir,
        name=name,
        tasks=tasks,
        data_dir=data_dir,
        revision=revision,
        split=split,
        strict=strict,
        long_documents=long_documents,
        qrels=qrels,
        out=out,
        measures=tuple(measure or ()),
        count_missing=count_missing,
        overwrite=overwrite,
        # the retriever's own options (None: not set, its options type's default)
        cache=False if no_cache else None,
        k1=k1,
        b=b,
        analyzer=analyzer,
        model=model,
        batch_size=batch_size,
        device=device,
        max_length=max_length,
        pooling=pooling,
        similarity=similarity,
        dtype=dtype,
        trust_remote_code=trust_remote_code or None,
        medcpt_published=medcpt_published or None,
        encoder=encoder,
    )
    values = with_set(named, set_)
    steps = [evaluate_step({"retriever": r, **values}, Origin.cli()) for r in names]  # the one parse, before any work
    check_output_dir(out)
    if not no_cache:
        check_home()
    refs = resolve(tasks, data_dir, revision, split, strict=strict, long_documents=long_documents, qrels=qrels)
    plans = [jobs.plan(step) for step in steps]
    refs = check_hub(refs, [job.query_builder for job in plans])  # every hub file found before any download
    columns = steps[0].output.columns_for([r.name for r in refs])
    if ray:
        from ..infra import progress
        from ..jobs.ray import evaluate_plans

        with progress.task(
            f"{len(plans)} retriever(s) x {len(refs)} task(s) on Ray", total=len(plans) * len(refs), unit="runs"
        ) as bar:
            grouped = evaluate_plans(plans, refs, ray_address, on_done=lambda job, result: bar.advance())
    else:
        [job] = plans
        grouped = {job.name: jobs.run_tasks(job, refs)}
    for name_, results in grouped.items():
        print_summary(results, summary(name_, results), out / name_, measures=columns)


@app.command(
    "demo",
    # given here, as one paragraph: typer's command list would keep a docstring's line breaks
    help="BM25 over all 8 R2MED tasks from the hub beside the paper's figures; the built-in demo when it cannot be "
    "reached.",
)
def demo_command(
    ctx: typer.Context,
    out: Path | None = typer.Option(
        None, "--out", "-o", help="Results root (default: $R2MED_HOME/demo, apart from your own results)."
    ),
    revision: Revision = None,
) -> None:
    """``r2med demo`` (its help text is the decorator's ``help``)."""
    from ..infra.home import check_home
    from ..jobs.evaluate import demo_out, demo_step, demo_tasks, plan, run_tasks
    from ..results.folders import Summary, summary

    if out is not None:
        check_output_dir(out)
    check_home()
    out = demo_out(out)
    refs, fallback = demo_tasks(revision, strict=strict_data(ctx))
    if fallback is not None:
        console.print(
            f"[yellow]The Hugging Face hub cannot be reached, so the same pipeline runs on the built-in "
            f"demo collection instead. {escape(fallback)}[/]",
            highlight=False,
            soft_wrap=True,
        )
    job = plan(demo_step(out, overwrite=fallback is not None))
    results = run_tasks(job, refs)
    if fallback is not None:
        print_summary(
            results, Summary(job.name), out / job.name, title="bm25 on the built-in demo collection: nDCG@10 (x100)"
        )
    else:
        print_summary(results, summary(job.name, results), out / job.name)
    print_next("report with:", "r2med", "report", out)


@app.command("score")
def score_command(
    ctx: typer.Context,
    qrels: Path = typer.Argument(
        ...,
        help="Judgments: TREC qrels, R2MED qrels.jsonl, BEIR .tsv, a collection folder, or a hub task "
        "(bright:biology, Biology: its judgments and exclusions only, under its protocol).",
    ),
    run: Path = typer.Argument(
        ...,
        help="A run file (TREC, or JSON scores {qid: {docid: score}}), or a task folder (or a system folder / "
        "results root holding the collection's task).",
    ),
    measure: Measures = None,
    per_query: bool = typer.Option(False, "--per-query", "-p", help="Also print per-query values."),
    count_missing: bool = typer.Option(
        False, "--count-missing", "-c", help="Judged queries missing from the run count as 0."
    ),
    fmt: str = typer.Option(
        "trec",
        "--format",
        "-f",
        metavar=SCORE_FORMAT_CHOICE.choices_metavar,
        callback=SCORE_FORMAT_CHOICE.callback,
        help="trec (trec_eval's lines) or json.",
    ),
    as_json: JsonAlias = False,
    strict: bool = typer.Option(False, "--strict", help="Refuse judgments repeated for the same query and doc."),
    split: Split = "test",
    revision: Revision = None,
    judgments: QrelsFile = None,
) -> None:
    """Score a run file against judgments, trec_eval style."""
    from ..jobs.evaluate import score_files
    from ..measures import Measure

    strict = strict_data(ctx, strict)
    fmt = check_json_format(fmt, as_json, ("trec", "json"))
    asked = tuple(Measure.parse(m) for m in measure) if measure else None
    metrics = score_files(
        qrels, run, asked, count_missing, strict=strict, split=split, revision=revision, judgments=judgments
    )
    if fmt == "json":
        payload = {"aggregate": metrics.aggregate, "queries": len(metrics.per_query)}
        if per_query:
            payload["per_query"] = metrics.per_query
        if metrics.ties is not None:  # per measure; per query with --per-query, as the values
            ties = metrics.ties.to_json()
            payload["ties"] = ties if per_query else {k: v for k, v in ties.items() if k != "per_query"}
        print_json(payload)
        return
    if per_query:
        for qid in sorted(metrics.per_query):
            for m in metrics.measures:
                typer.echo(f"{m.trec:<16}\t{qid}\t{metrics.per_query[qid][m.trec]:.4f}")
    typer.echo(f"{'num_q':<16}\tall\t{len(metrics.per_query)}")
    for m in metrics.measures:
        typer.echo(f"{m.trec:<16}\tall\t{metrics.aggregate[m.trec]:.4f}")
    print_tie_line(metrics)


@app.command("import")
def import_command(
    ctx: typer.Context,
    runs: list[Path] = typer.Argument(
        ..., help="Run files: TREC (6 columns, or 4: qid docid rank score) or JSON scores {qid: {docid: score}}."
    ),
    name: str = typer.Option(
        ..., "--name", help="The system's name: OUT/<name>/<task>/ is written (no spaces or slashes)."
    ),
    tasks: Tasks = "all",
    data_dir: DataDir = None,
    out: Out = Path("runs"),
    note: str | None = typer.Option(None, "--note", help="A note recorded with the run (how it was made)."),
    measure: Measures = None,
    count_missing: CountMissing = False,
    revision: Revision = None,
    overwrite: Overwrite = False,
    strict: Strict = False,
    long_documents: LongDocuments = False,
    qrels: QrelsFile = None,
) -> None:
    """Import run files made elsewhere as a system: scored and written as `evaluate` writes its results.

    With --tasks naming tasks, the files are those tasks in order; otherwise each file goes to the
    collection holding most of its query ids.
    """
    from ..jobs.imports import import_files
    from ..results.folders import Summary
    from ..spec.parse import Origin
    from ..steps import ImportStep, flat

    step: ImportStep = flat(
        {
            "runs": tuple(runs),
            "name": name,
            "note": note,
            "tasks": tasks,
            "data_dir": data_dir,
            "revision": revision,
            "strict": strict_data(ctx, strict),
            "long_documents": long_documents,
            "qrels": qrels,
            "out": out,
            "measures": tuple(measure or ()),
            "count_missing": count_missing,
            "overwrite": overwrite,
        },
        ImportStep,
        Origin.cli(),
    )
    system = import_files(step)
    print_summary(
        system.results,
        Summary(system.name, retriever="imported"),
        system.folder,
        measures=step.output.columns_for([r.task for r in system.results]),
    )
