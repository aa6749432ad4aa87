"""Commands ``rerank`` (rerank first-stage systems) and ``fuse`` (fuse several systems); the work:
:mod:`r2med.jobs.rerank`, :mod:`r2med.jobs.fuse`."""

from __future__ import annotations

from pathlib import Path

import typer

from ..runs.fusion_choices import FusionMethod, Normalisation
from . import app, strict_data
from ._ui import print_summary
from .options import (
    DTYPE_CHOICE,
    FUSION_METHOD_CHOICE,
    NORMALISATION_CHOICE,
    CountMissing,
    InputsOut,
    Measures,
    Overwrite,
    RecordedDataDir,
    Revision,
    Tasks,
    as_given,
    parse_weights,
    with_set,
)


@app.command("rerank")
def rerank_command(
    ctx: typer.Context,
    run: Path = typer.Option(
        ...,
        "--run",
        help="First-stage results: a system folder (OUT/<system>), a task "
        "folder, or a results root (its systems not yet reranked).",
    ),
    reranker: str = typer.Option(
        ...,
        "--reranker",
        help="bge-reranker, monobert, rankllama, listwise, "
        "reasonrank-32b, qwen3-reranker-0.6b, bright-llm, bright-cross-encoder... (r2med models), "
        "or a cross-encoder's hub id / local folder.",
    ),
    top_k: int | None = typer.Option(
        None,
        "--top-k",
        "-k",
        parser=as_given,
        help="Rerank each query's top k docs (default: the depth of the reranker's "
        "published figures: 10 as the paper, 100 for ReasonRank).",
    ),
    top_k_only: bool = typer.Option(
        False,
        "--top-k-only",
        help="Keep only the reranked top k (the paper's evaluation); default: the first-stage tail follows.",
    ),
    out: InputsOut = None,
    name: str | None = typer.Option(
        None,
        "--name",
        help="Result folder name and run tag, no spaces or slashes "
        "(default: <system>+<reranker>, "
        "listwise: <system>+listwise-<model>; at another "
        "depth than ReasonRank's 100: ...-top<k>).",
    ),
    tasks: Tasks = "all",
    data_dir: RecordedDataDir = None,
    revision: Revision = None,
    batch_size: int | None = typer.Option(None, "--batch-size", parser=as_given, help="Pairs per forward pass."),
    max_length: int | None = typer.Option(None, "--max-length", parser=as_given, help="Tokens per (query, doc) pair."),
    device: str | None = typer.Option(None, "--device", help="cpu, cuda, cuda:1... (default: GPU if present)."),
    dtype: str | None = typer.Option(
        None,
        "--dtype",
        metavar=DTYPE_CHOICE.choices_metavar,
        callback=DTYPE_CHOICE.callback,
        help="fp32 (cross-encoders' default, as the paper), "
        "fp16, bf16, or auto (half precision on GPU; RankLLaMA's default).",
    ),
    model: str | None = typer.Option(None, "--model", help="listwise: model name at the endpoint."),
    base_url: str | None = typer.Option(None, "--base-url", help="listwise: OpenAI-compatible endpoint."),
    api_key: str | None = typer.Option(
        None,
        "--api-key",
        envvar="OPENAI_API_KEY",
        show_envvar=True,
        help="listwise: API key (not needed for local endpoints).",
    ),
    window: int | None = typer.Option(
        None, "--window", parser=as_given, help="listwise: docs per prompt (default 20)."
    ),
    step_: int | None = typer.Option(None, "--step", parser=as_given, help="listwise: window stride (default 10)."),
    with_scores: bool = typer.Option(
        False, "--with-scores", help="listwise: show first-stage scores in the prompt (InsertRank-style)."
    ),
    concurrency: int | None = typer.Option(None, "--concurrency", parser=as_given, help="listwise: queries in flight."),
    scorer: str | None = typer.Option(
        None,
        "--scorer",
        help="--reranker custom: your scorer, MODULE:OBJ (a dotted "
        "module or a .py file; OBJ has score(query, docs)); "
        "runs its code. See docs/rerank.md.",
    ),
    set_: list[str] | None = typer.Option(
        None, "--set", help="Other reranker options as key=value (e.g. label=1, lora=<path>, base=<path>)."
    ),
    measure: Measures = None,
    count_missing: CountMissing = False,
    overwrite: Overwrite = False,
) -> None:
    """Rerank first-stage systems; writes OUT/<name>/<task>/{run.trec,metrics.json} and prints a table."""
    from ..jobs.rerank import rerank_folder
    from ..results.folders import summary
    from ..steps import RerankStep, rerank_step
    from ..typed.parse import Origin

    if api_key is not None and not _takes_api_key(ctx, reranker):
        api_key = None  # read from $OPENAI_API_KEY for the LLM rerankers; a model run here takes no key

    step = rerank_step(
        with_set(
            {
                "runs": (run,),
                "reranker": reranker,
                "top_k": top_k,
                "keep_tail": False if top_k_only else None,  # None: the reranker's own (BRIGHT's: no tail)
                "name": name,
                "tasks": tasks,
                "data_dir": data_dir,
                "revision": revision,
                "strict": strict_data(ctx),
                "out": out,
                "measures": tuple(measure or ()),
                "count_missing": count_missing,
                "overwrite": overwrite,
                # the reranker's own options (None: not set)
                "batch_size": batch_size,
                "max_length": max_length,
                "device": device,
                "dtype": dtype,
                "model": model,
                "base_url": base_url,
                "api_key": api_key,
                "window": window,
                "step": step_,
                "with_scores": with_scores or None,
                "concurrency": concurrency,
                "scorer": scorer,
            },
            set_,
            RerankStep,
            "reranker",
        ),
        Origin.cli(),
    )
    for done in rerank_folder(step):
        print_summary(done.results, summary(done.name, done.results), done.folder, measures=step.output.columns)


def _takes_api_key(ctx: typer.Context, reranker: str) -> bool:
    """Whether ``--api-key`` goes to ``reranker``: always when given on the command line (a reranker that takes none
    refuses it in one line); from ``$OPENAI_API_KEY`` only to one whose options have an ``api_key``."""
    from ..reranking.base import reranker_meta

    source = ctx.get_parameter_source("api_key")
    if getattr(source, "name", None) != "ENVIRONMENT":  # typer's own click: compared by name
        return True
    try:
        return "api_key" in reranker_meta(reranker).options.model_fields
    except ValueError:  # an unknown name: the step's parse says so
        return True


@app.command("fuse")
def fuse_command(
    ctx: typer.Context,
    runs: list[Path] = typer.Argument(
        ...,
        help="Systems to fuse, two or more: system folders (OUT/<system>), "
        "task folders, or a results root (its systems not yet fused).",
    ),
    method: str = typer.Option(
        FusionMethod.RRF,
        "--method",
        metavar=FUSION_METHOD_CHOICE.choices_metavar,
        callback=FUSION_METHOD_CHOICE.callback,
        help="rrf, combsum or combmnz.",
    ),
    weights: str | None = typer.Option(None, "--weights", help="Comma-separated weight per run (default: 1 each)."),
    rrf_k: float | None = typer.Option(None, "--rrf-k", parser=as_given, help="RRF constant k (default: 60)."),
    norm: str = typer.Option(
        Normalisation.MINMAX,
        "--norm",
        metavar=NORMALISATION_CHOICE.choices_metavar,
        callback=NORMALISATION_CHOICE.callback,
        help="combsum/combmnz score normalisation: minmax, zscore, none.",
    ),
    top_k: int | None = typer.Option(
        None,
        "--top-k",
        "-k",
        parser=as_given,
        help="Docs kept per query in the fused run (default: the task's protocol: R2MED 100, BRIGHT 1000).",
    ),
    out: InputsOut = None,
    name: str | None = typer.Option(
        None,
        "--name",
        help="Result folder name and run tag, no spaces or slashes (default: <method>-<system>+<system>...).",
    ),
    tasks: Tasks = "all",
    data_dir: RecordedDataDir = None,
    revision: Revision = None,
    measure: Measures = None,
    count_missing: CountMissing = False,
    overwrite: Overwrite = False,
) -> None:
    """Fuse systems (RRF or CombSUM/CombMNZ); writes OUT/<name>/<task>/ evaluated like any run."""
    from ..jobs.fuse import fuse_folders
    from ..results.folders import summary
    from ..steps import fuse_step
    from ..typed.parse import Origin

    step = fuse_step(
        {
            "systems": tuple(runs),
            "method": method,
            "weights": parse_weights(weights),
            "k": rrf_k,
            "norm": norm,
            "top_k": top_k,
            "name": name,
            "tasks": tasks,
            "data_dir": data_dir,
            "revision": revision,
            "strict": strict_data(ctx),
            "out": out,
            "measures": tuple(measure or ()),
            "count_missing": count_missing,
            "overwrite": overwrite,
        },
        Origin.cli(),
    )
    done = fuse_folders(step)
    print_summary(done.results, summary(done.name, done.results), done.folder, measures=step.output.columns)
