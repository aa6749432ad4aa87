"""Core commands: ``tasks``, ``evaluate``, ``demo``, ``score`` and ``import`` (the work: :mod:`r2med.jobs.evaluate`)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import typer
from rich.markup import escape
from rich.table import Table

from ..infra.containment import check_output_dir
from . import app, strict_data
from ._ui import check_json_format, console, print_fitted, print_json, print_next, print_summary, print_tie_line
from .options import (
    K1,
    SCORE_FORMAT_CHOICE,
    AnalyzerOption,
    B,
    CountMissing,
    DataDir,
    DenseDtype,
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
    TieRuleOption,
    TrustRemoteCode,
    Wide,
    as_given,
    comma_list,
    retriever_options,
    with_set,
)


@app.command("tasks")
def tasks_command(fmt: FormatJson = "table", as_json: JsonAlias = False, wide: Wide = False) -> None:
    """List the tasks of both benchmark families, R2MED's 8 and BRIGHT's 12, with their sizes."""
    from ..data.benchmarks import benchmarks

    if check_json_format(fmt, as_json) == "json":
        print_json([{**row.facts, "family": b.name} for b in benchmarks() for row in b.rows()])
        return
    for family in benchmarks():
        shown = family.task_table(wide)
        table = Table(title=shown.title)
        for column in shown.columns:
            table.add_column(column.title, justify=column.justify, no_wrap=column.no_wrap)  # type: ignore[arg-type]
        for row in shown.rows:
            table.add_row(*row)
        print_fitted(table, wide=wide)
        for note in shown.notes:
            console.print(note)


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
    # the retriever's own options (k1 ... encoder): read by name, cli/options.retriever_options
    k1: K1 = None,
    b: B = None,
    analyzer: AnalyzerOption = None,
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
    dtype: DenseDtype = None,
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
    from ..steps import EvaluateStep, evaluate_step
    from ..typed.parse import Origin, SpecError

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
        **retriever_options(ctx),  # the retriever's own options (None: not set, its options type's default)
    )
    values = with_set(named, set_, EvaluateStep, "retriever")
    try:
        steps = [evaluate_step({"retriever": r, **values}, Origin.cli()) for r in names]  # the one parse, first
    except SpecError as err:
        raise _default_retriever_hint(ctx, err, values) from None
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


def _default_retriever_hint(ctx: typer.Context, err: Exception, values: Mapping[str, object]) -> Exception:
    """``err`` with the retriever named when it refused an option and ``-r`` was not given: the default is bm25,
    and when the options are a dense retriever's (``--model X``) the fix is ``-r dense``.  Any other error (a
    value out of range) is returned as it is."""
    from ..errors import OptionError
    from ..steps import evaluate_step
    from ..typed.parse import Origin, SpecError

    if getattr(ctx.get_parameter_source("retriever"), "name", None) != "DEFAULT":  # typer's own click: by name
        return err
    if not str(err).startswith("unknown option"):  # typed/parse.py's line for an option the retriever lacks
        return err
    try:
        evaluate_step({"retriever": "dense", **values}, Origin.cli())
    except SpecError:
        return OptionError(f"{err} (no -r given: the default retriever is bm25)")
    return OptionError(
        f"{err}; no -r given, so the retriever is the default, bm25: for an embedding model add -r dense"
    )


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
    qrels: Path | None = typer.Argument(
        None,
        help="Judgments: TREC qrels, R2MED qrels.jsonl, BEIR .tsv, a collection folder, or a hub task "
        "(bright:biology, Biology: its judgments and exclusions only, under its protocol).",
    ),
    run: Path | None = typer.Argument(
        None,
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
    tie_rule: TieRuleOption = "trec_eval",
    trace: Path | None = typer.Option(
        None, "--trace", help="Score an agent's trace from `r2med serve` instead (with -t TASK; docs/serve.md)."
    ),
    task: str | None = typer.Option(None, "--task", "-t", help="With --trace: the task the trace searched."),
    data_dir: DataDir = None,
) -> None:
    """Score a run file against judgments, trec_eval style (or an agent's trace: --trace)."""
    from ..errors import R2MedError
    from ..jobs.evaluate import score_files
    from ..measures import Measure
    from ..report.format import visible

    strict = strict_data(ctx, strict)
    fmt = check_json_format(fmt, as_json, ("trec", "json"))
    if trace is not None:
        if qrels is not None or run is not None or task is None:
            raise R2MedError("score --trace TRACE takes the task with -t TASK (and --data-dir), no other files")
        _score_trace(trace, task, data_dir, revision, strict, fmt, per_query)
        return
    if qrels is None or run is None:
        raise R2MedError("score takes the judgments and the run: r2med score QRELS RUN (or --trace TRACE -t TASK)")
    asked = tuple(Measure.parse(m) for m in measure) if measure else None
    metrics = score_files(
        qrels,
        run,
        asked,
        count_missing,
        strict=strict,
        split=split,
        revision=revision,
        judgments=judgments,
        ties=tie_rule,  # type: ignore[arg-type]  # one of TIE_RULES: the option's choice checked it
    )
    if fmt == "json":
        payload = {"aggregate": metrics.aggregate, "queries": len(metrics.per_query)}
        if tie_rule != "trec_eval":
            payload["tie_rule"] = str(tie_rule)
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
                typer.echo(f"{m.trec:<16}\t{visible(qid)}\t{metrics.per_query[qid][m.trec]:.4f}")
    typer.echo(f"{'num_q':<16}\tall\t{len(metrics.per_query)}")
    for m in metrics.measures:
        typer.echo(f"{m.trec:<16}\tall\t{metrics.aggregate[m.trec]:.4f}")
    print_tie_line(metrics)
    if tie_rule != "trec_eval":
        from ._ui import print_notes

        print_notes(["equal scores ranked as the run file lists them (--ties listed), not by trec_eval's rule"])


@app.command("import")
def import_command(
    ctx: typer.Context,
    runs: list[Path] | None = typer.Argument(
        None, help="Run files: TREC (6 columns, or 4: qid docid rank score) or JSON scores {qid: {docid: score}}."
    ),
    name: str = typer.Option(
        ..., "--name", help="The system's name: OUT/<name>/<task>/ is written (no spaces or slashes)."
    ),
    tasks: Tasks = "all",
    data_dir: DataDir = None,
    out: Out = Path("runs"),
    note: str | None = typer.Option(None, "--note", help="A note recorded with the run (how it was made)."),
    ties: TieRuleOption = "trec_eval",
    measure: Measures = None,
    count_missing: CountMissing = False,
    revision: Revision = None,
    overwrite: Overwrite = False,
    strict: Strict = False,
    long_documents: LongDocuments = False,
    qrels: QrelsFile = None,
    trace: Path | None = typer.Option(
        None, "--trace", help="Import an agent's trace from `r2med serve`: each query's union as a run (one task)."
    ),
) -> None:
    """Import run files made elsewhere as a system: scored and written as `evaluate` writes its results.

    With --tasks naming tasks, the files are those tasks in order; otherwise each file goes to the
    collection it fits best (the judged documents it retrieves, then the queries it holds).  A file another task
    fits better is an error naming that task.  TREC, JSON scores and FlagEmbedding search results, gzipped or not.
    --trace TRACE -t TASK imports an agent's trace from `r2med serve` instead.
    """
    from ..jobs.imports import import_files
    from ..results.folders import Summary
    from ..steps import ImportStep, flat
    from ..typed.parse import Origin

    step: ImportStep = flat(
        {
            "runs": tuple(runs or ()),
            "name": name,
            "note": note,
            "ties": ties,
            "trace": trace,
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
    if step.ties != "trec_eval":
        from ._ui import print_notes

        print_notes(
            [
                "equal scores ranked as each file lists them (--ties listed; recorded as config.ties, run.trec holds "
                "that ranking); never graded against figures made by trec_eval's rule"
            ]
        )


def _score_trace(
    trace: Path, task: str, data_dir: Path | None, revision: str | None, strict: bool, fmt: str, per_query: bool
) -> None:
    """``r2med score --trace``: per query with --per-query, then the averages (docs/serve.md)."""
    from ..jobs.agent_traces import score_trace_file
    from ..serve.trace_score import AVERAGED

    scored = score_trace_file(trace, task, data_dir, revision, strict)
    if fmt == "json":
        payload = scored.to_json()
        if not per_query:
            payload.pop("per_query")
        print_json(payload)
        return
    if per_query:
        for qid in sorted(scored.per_query):
            row = scored.per_query[qid]
            for key in AVERAGED:
                typer.echo(
                    f"{key:<16}\t{qid}\t{row[key]:.4f}"
                    if isinstance(row[key], float)
                    else f"{key:<16}\t{qid}\t{row[key]}"
                )
            typer.echo(f"{'recall_by_turn':<16}\t{qid}\t" + " ".join(f"{v:.4f}" for v in row["recall_by_turn"]))
    typer.echo(f"{'num_q':<16}\tall\t{len(scored.per_query)}")
    for key, value in scored.average.items():
        typer.echo(f"{key:<16}\tall\t{value:.4f}")
    notes = []
    if scored.torn:
        notes.append(f"{scored.torn} torn line(s) skipped")
    if scored.unattributed:
        notes.append(f"{scored.unattributed} search(es) named no query_id and are not scored")
    if scored.unjudged:
        notes.append(f"{len(scored.unjudged)} traced quer(ies) without judgments not scored")
    if notes:
        console.print("; ".join(notes), highlight=False, markup=False)
