"""Commands ``rerank`` (rerank a first-stage run folder) and ``fuse`` (fuse several run folders)."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any, Optional

import typer
from rich.markup import escape

from ..errors import R2MedError
from ..paths import check_output_dir, plain_name
from . import app, console
from .options import AT_LEAST_0, AT_LEAST_1, at_least, check_number, finite_json
from .core import parse_measures, summary_table

log = logging.getLogger(__name__)


def _parse_set(values: Optional[list[str]]) -> dict[str, Any]:
    """``key=value`` pairs; values are read as JSON when they parse (numbers, true/false), else as text."""
    options: dict[str, Any] = {}
    for item in values or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise R2MedError(f"--set expects key=value, got {item!r}")
        try:
            parsed = json.loads(value)
        except (json.JSONDecodeError, RecursionError):
            parsed = value
        options[key.strip().replace("-", "_")] = finite_json(parsed, f"--set {key.strip()}")
    return options


def _folder_name(name: str) -> str:
    """A reranker or model name as a folder name (``org/model`` -> ``model``)."""
    return Path(name.rstrip("/")).name or name


def _result_name(name: Optional[str], default: str) -> str:
    """The result folder name: ``--name`` or the default, a plain name usable as a TREC run tag."""
    if name is not None:
        return plain_name(name, "--name", run_name=True)
    return plain_name(default, f"result name {default!r} (pass --name):", run_name=True)


def _tasks(tasks: str) -> Optional[list[str]]:
    return None if tasks.strip().lower() == "all" else [t.strip() for t in tasks.split(",") if t.strip()]


@app.command("rerank")
def rerank_command(
    run: Path = typer.Option(..., "--run", help="First-stage run folder (OUT/<retriever>) from `r2med evaluate`."),
    reranker: str = typer.Option(..., "--reranker", help="bge-reranker, monobert, rankllama, listwise, or a "
                                                          "cross-encoder's hub id / local folder."),
    top_k: int = typer.Option(10, "--top-k", "-k", callback=AT_LEAST_1, help="Rerank each query's top k docs (paper: 10; also 100)."),
    top_k_only: bool = typer.Option(False, "--top-k-only", help="Keep only the reranked top k (the paper's "
                                                                 "evaluation); default: the first-stage tail follows."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Parent folder of the result (default: beside --run)."),
    name: Optional[str] = typer.Option(None, "--name", help="Result folder name and run tag, no spaces or slashes "
                                                            "(default: <retriever>+<reranker>, "
                                                            "listwise: <retriever>+listwise-<model>)."),
    tasks: str = typer.Option("all", "--tasks", "-t", help="'all' or comma-separated task names."),
    data_dir: Optional[Path] = typer.Option(None, "--data-dir", "-d", help="Local data (default: the source "
                                                                         "recorded in the run, else the hub)."),
    revision: Optional[str] = typer.Option(None, "--revision", help="Pinned hub revision."),
    batch_size: Optional[int] = typer.Option(None, "--batch-size", callback=AT_LEAST_1, help="Pairs per forward pass."),
    max_length: Optional[int] = typer.Option(None, "--max-length", callback=at_least(8), help="Tokens per (query, doc) pair."),
    device: Optional[str] = typer.Option(None, "--device", help="cpu, cuda, cuda:1... (default: GPU if present)."),
    dtype: Optional[str] = typer.Option(None, "--dtype", help="fp32 (cross-encoders' default, as the paper), "
                                        "fp16, bf16, or auto (half precision on GPU; RankLLaMA's default)."),
    model: Optional[str] = typer.Option(None, "--model", help="listwise: model name at the endpoint."),
    base_url: Optional[str] = typer.Option(None, "--base-url", help="listwise: OpenAI-compatible endpoint."),
    api_key: Optional[str] = typer.Option(None, "--api-key", envvar="OPENAI_API_KEY", show_envvar=True,
                                          help="listwise: API key (not needed for local endpoints)."),
    window: Optional[int] = typer.Option(None, "--window", callback=at_least(2), help="listwise: docs per prompt (default 20)."),
    step: Optional[int] = typer.Option(None, "--step", callback=AT_LEAST_1, help="listwise: window stride (default 10)."),
    with_scores: bool = typer.Option(False, "--with-scores", help="listwise: show first-stage scores in the "
                                                                   "prompt (InsertRank-style)."),
    concurrency: Optional[int] = typer.Option(None, "--concurrency", "-c", callback=AT_LEAST_1, help="listwise: queries in flight."),
    set_: Optional[list[str]] = typer.Option(None, "--set", help="Other reranker options as key=value "
                                                                 "(e.g. label=1, lora=<path>, base=<path>)."),
    measure: Optional[list[str]] = typer.Option(None, "--measure", "-m", help="Measures to compute (repeatable)."),
    count_missing: bool = typer.Option(False, "--count-missing", help="Average over all judged queries."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Recompute tasks whose results already exist."),
) -> None:
    """Rerank a first-stage run folder; writes OUT/<name>/<task>/{run.trec,metrics.json} and prints a table."""
    from ..rerank import make_reranker
    from ..rerank.folders import load_inputs, rerank_inputs

    measures = parse_measures(measure)
    if name is not None:
        plain_name(name, "--name", run_name=True)
    check_output_dir(out or run.parent)
    options = {"batch_size": batch_size, "max_length": max_length, "device": device, "dtype": dtype,
               "model": model, "base_url": base_url, "api_key": api_key, "window": window, "step": step,
               "with_scores": with_scores or None, "concurrency": concurrency, **_parse_set(set_)}
    inputs = load_inputs(run, data_dir, revision, _tasks(tasks))  # validated before any model loads
    try:
        made = make_reranker(reranker, **options)
    except TypeError as exc:
        raise R2MedError(f"reranker {reranker!r} does not take that option ({exc})") from None
    suffix = _folder_name(reranker) + (f"-{_folder_name(model)}" if reranker == "listwise" and model else "")
    label = _result_name(name, f"{inputs[0].retriever}+{suffix}")
    target = (out or run.parent) / label
    results = rerank_inputs(inputs, made, label, target, top_k=top_k, keep_tail=not top_k_only,
                            measures=measures, count_missing=count_missing, overwrite=overwrite)
    console.print(summary_table(results, label))
    console.print(f"results: {escape(str(target))}")


@app.command("fuse")
def fuse_command(
    runs: list[Path] = typer.Argument(..., help="Run folders (OUT/<retriever>) to fuse, two or more."),
    method: str = typer.Option("rrf", "--method", help="rrf, combsum or combmnz."),
    weights: Optional[str] = typer.Option(None, "--weights", help="Comma-separated weight per run (default: 1 each)."),
    rrf_k: float = typer.Option(60.0, "--rrf-k", callback=AT_LEAST_0, help="RRF constant k."),
    norm: str = typer.Option("minmax", "--norm", help="combsum/combmnz score normalisation: minmax, zscore, none."),
    top_k: int = typer.Option(100, "--top-k", "-k", callback=AT_LEAST_1, help="Docs kept per query in the fused run."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Parent folder of the result (default: beside "
                                                                 "the first run)."),
    name: Optional[str] = typer.Option(None, "--name", help="Result folder name and run tag, no spaces or "
                                                            "slashes (default: <method>-<run>+<run>...)."),
    tasks: str = typer.Option("all", "--tasks", "-t", help="'all' or comma-separated task names."),
    data_dir: Optional[Path] = typer.Option(None, "--data-dir", "-d", help="Local data (default: the source "
                                                                         "recorded in the runs, else the hub)."),
    revision: Optional[str] = typer.Option(None, "--revision", help="Pinned hub revision."),
    measure: Optional[list[str]] = typer.Option(None, "--measure", "-m", help="Measures to compute (repeatable)."),
    count_missing: bool = typer.Option(False, "--count-missing", help="Average over all judged queries."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Recompute tasks whose results already exist."),
) -> None:
    """Fuse run folders (RRF or CombSUM/CombMNZ); writes OUT/<name>/<task>/ evaluated like any run."""
    from ..fusion import METHODS, NORMS
    from ..rerank.folders import fuse_inputs, load_inputs

    if len(runs) < 2:
        raise R2MedError("fuse needs at least two run folders")
    if method not in METHODS:
        raise R2MedError(f"unknown fusion method {method!r}; choose from: {', '.join(METHODS)}")
    if norm not in NORMS:
        raise R2MedError(f"unknown normalisation {norm!r}; choose from: {', '.join(NORMS)}")
    parsed: Optional[list[float]] = None
    if weights:
        try:
            parsed = [check_number(float(w), "--weights", lo=0) for w in weights.split(",")]
        except ValueError:
            raise R2MedError(f"--weights must be comma-separated numbers, got {weights!r}") from None
        if not any(parsed):
            raise R2MedError("--weights: at least one weight must be above 0")
        if len(parsed) != len(runs):
            raise R2MedError(f"{len(parsed)} weight(s) given for {len(runs)} run folder(s)")
    measures = parse_measures(measure)
    if name is not None:
        plain_name(name, "--name", run_name=True)
    check_output_dir(out or runs[0].parent)
    collections: dict = {}
    groups = [load_inputs(r, data_dir, revision, _tasks(tasks), require_docs=False, collections=collections)
              for r in runs]
    labels = [_folder_name(str(r)) for r in runs]
    label = _result_name(name, f"{method}-" + "+".join(labels))
    target = (out or runs[0].parent) / label
    results = fuse_inputs(groups, [str(r) for r in runs], label, target, method=method, k=rrf_k, norm=norm,
                          weights=parsed, depth=top_k, measures=measures, count_missing=count_missing,
                          overwrite=overwrite)
    console.print(summary_table(results, label))
    console.print(f"results: {escape(str(target))}")
