"""``r2med serve``: one task's index served to agents over HTTP and MCP (the work: :mod:`r2med.jobs.serve`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from . import app, strict_data
from ._ui import err_console
from .options import (
    FUSION_METHOD_CHOICE,
    K1,
    NORMALISATION_CHOICE,
    AnalyzerOption,
    B,
    DataDir,
    DenseDtype,
    Device,
    LongDocuments,
    Model,
    NoCache,
    Pooling,
    Revision,
    SimilarityOption,
    Split,
    StepBatchSize,
    StepMaxLength,
    Strict,
    TrustRemoteCode,
    as_given,
    parse_weights,
    retriever_options,
    with_set,
)

if TYPE_CHECKING:
    from ..steps import EvaluateStep

#: The values of ``serve`` that are the step's data, not a retriever's options (given to every fused retriever).
DATA_KEYS = ("tasks", "data_dir", "revision", "split", "strict", "long_documents")


@app.command("serve")
def serve_command(
    ctx: typer.Context,
    retriever: list[str] = typer.Option(
        ["bm25"], "--retriever", "-r", help="Retriever name (see `r2med models`); repeated: fused (--fuse)."
    ),
    fuse: str | None = typer.Option(
        None,
        "--fuse",
        metavar=FUSION_METHOD_CHOICE.choices_metavar,
        callback=FUSION_METHOD_CHOICE.callback,
        help="Fuse the -r retrievers per query as `r2med fuse --method` does: rrf, combsum or combmnz.",
    ),
    weights: str | None = typer.Option(None, "--weights", help="--fuse: comma-separated weight per -r (default 1)."),
    rrf_k: float | None = typer.Option(None, "--rrf-k", parser=as_given, help="--fuse rrf: RRF constant k (60)."),
    norm: str | None = typer.Option(
        None,
        "--norm",
        metavar=NORMALISATION_CHOICE.choices_metavar,
        callback=NORMALISATION_CHOICE.callback,
        help="--fuse combsum/combmnz: score normalisation: minmax (default), zscore, none.",
    ),
    reranker: str | None = typer.Option(
        None,
        "--reranker",
        help="Rerank the first stage per query as `r2med rerank --reranker` does (a name or a cross-encoder).",
    ),
    rerank_top_k: int | None = typer.Option(
        None,
        "--rerank-top-k",
        parser=as_given,
        help="--reranker: rerank each query's top k (default: the depth of its published figures, as rerank).",
    ),
    top_k_only: bool = typer.Option(
        False, "--top-k-only", help="--reranker: only the reranked top k (default: the first-stage tail follows)."
    ),
    rerank_set: list[str] | None = typer.Option(
        None, "--rerank-set", help="The reranker's options as key=value (batch_size=8, max_length=512, device=cpu)."
    ),
    task: str | None = typer.Option(
        None, "--task", "-t", help="The one task served (Biology, bright:leetcode; with --data-dir: its collection)."
    ),
    data_dir: DataDir = None,
    split: Split = "test",
    revision: Revision = None,
    strict: Strict = False,
    long_documents: LongDocuments = False,
    host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on (other than this machine: --token)."),
    port: int = typer.Option(8000, "--port", help="Port to listen on (0: one the system picks, printed)."),
    token: str | None = typer.Option(
        None,
        "--token",
        envvar="R2MED_SERVE_TOKEN",
        help="Bearer token every request must send (or env R2MED_SERVE_TOKEN).",
    ),
    trace: Path | None = typer.Option(
        None, "--trace", help="Append every request and reply to this JSON-lines file (score it: score --trace)."
    ),
    topk: int = typer.Option(3, "--topk", help="Documents per query when a request does not say (Search-R1's 3)."),
    max_topk: int | None = typer.Option(
        None, "--max-topk", help="Most documents per query a request may ask for (default: the protocol's depth)."
    ),
    max_queries: int = typer.Option(256, "--max-queries", help="Most queries in one request."),
    max_query_chars: int = typer.Option(8192, "--max-query-chars", help="Longest query (characters)."),
    max_body_bytes: int = typer.Option(1_000_000, "--max-body-bytes", help="Largest request body (bytes)."),
    mcp_stdio: bool = typer.Option(False, "--mcp-stdio", help="Serve MCP over stdin/stdout instead of HTTP."),
    no_mcp: bool = typer.Option(False, "--no-mcp", help="No MCP endpoint at /mcp."),
    # the retriever's own options (k1 ... encoder): read by name, cli/options.retriever_options
    k1: K1 = None,
    b: B = None,
    analyzer: AnalyzerOption = None,
    no_cache: NoCache = False,
    model: Model = None,
    batch_size: StepBatchSize = None,
    device: Device = None,
    max_length: StepMaxLength = None,
    pooling: Pooling = None,
    similarity: SimilarityOption = None,
    dtype: DenseDtype = None,
    trust_remote_code: TrustRemoteCode = False,
    encoder: str | None = typer.Option(
        None, "--encoder", help="-r custom: your encoder, MODULE:OBJ (runs its code; given here, never by a request)."
    ),
    set_: list[str] | None = typer.Option(None, "--set", help="Other options of the retriever as key=value."),
) -> None:
    """Serve one task's index to agents: Search-R1's /retrieve, FlashRAG's /search, MCP (docs/serve.md)."""
    from ..data import check_hub, resolve
    from ..errors import R2MedError
    from ..infra.home import check_home
    from ..jobs import serve as jobs
    from ..serve.limits import Limits
    from ..steps import EvaluateStep, FuseStep, RerankStep, fuse_step, rerank_step
    from ..typed.parse import Origin

    for name, value in (("--topk", topk), ("--max-queries", max_queries), ("--max-query-chars", max_query_chars)):
        if value < 1:
            raise R2MedError(f"{name} must be at least 1 (got {value})")
    if max_body_bytes < 1024:
        raise R2MedError(f"--max-body-bytes must be at least 1024 (got {max_body_bytes})")
    if not mcp_stdio:
        jobs.check_host(host, token)
    strict = strict_data(ctx, strict)
    if task is None and data_dir is None:
        raise R2MedError("serve needs the task: -t TASK (or --data-dir holding one collection)")
    task = task or "all"
    values = with_set(
        dict(
            tasks=task,
            data_dir=data_dir,
            revision=revision,
            split=split,
            strict=strict,
            long_documents=long_documents,
            **retriever_options(ctx),
        ),
        set_,
        EvaluateStep,
        "retriever",
    )
    steps = member_steps(retriever, values)
    if fuse is None and (weights is not None or rrf_k is not None or norm is not None):
        raise R2MedError("--weights, --rrf-k and --norm set the fusion: give --fuse too")
    fusion: FuseStep | None = None
    if fuse is not None:
        given = {"method": fuse, "weights": parse_weights(weights), "k": rrf_k, "norm": norm}
        fusion = fuse_step({"systems": (), **{k: v for k, v in given.items() if v is not None}}, Origin.cli())
    if reranker is None and (rerank_top_k is not None or top_k_only or rerank_set):
        raise R2MedError("--rerank-top-k, --top-k-only and --rerank-set set the reranker: give --reranker too")
    rerank: RerankStep | None = None
    if reranker is not None:
        given = {"top_k": rerank_top_k, "keep_tail": False if top_k_only else None}
        rerank = rerank_step(
            with_set(
                {"runs": (), "reranker": reranker, **{k: v for k, v in given.items() if v is not None}},
                rerank_set,
                RerankStep,
                "reranker",
            ),
            Origin.cli(),
        )
    if not no_cache:
        check_home()
    refs = resolve(task, data_dir, revision, split, strict=strict, long_documents=long_documents)
    if len(refs) != 1:
        raise R2MedError(f"serve serves one task; {task!r} names {len(refs)}")
    [ref] = check_hub(refs)
    limits = Limits(max_body_bytes, max_queries, max_topk or 10**9, max_query_chars)
    service = jobs.load(steps, ref, limits, trace, fusion, rerank)
    if topk > service.limits.max_topk:
        raise R2MedError(f"--topk {topk} is above the most a request may ask for ({service.limits.max_topk})")
    err_console.print(jobs.describe(service), highlight=False, soft_wrap=True, markup=False)
    if mcp_stdio:
        err_console.print("MCP over stdio: tools search, fetch", highlight=False, markup=False)
        jobs.serve_stdio(service)
        return

    def listening(url: str) -> None:
        err_console.print(
            f"listening on {url}: POST /retrieve (Search-R1), /search, /batch_search (FlashRAG), /fetch; "
            f"GET /health, /docs{'; MCP at /mcp' if not no_mcp else ''}" + (f"; trace: {trace}" if trace else ""),
            highlight=False,
            soft_wrap=True,
            markup=False,
        )

    jobs.serve_http(service, host, port, token, topk, mcp=not no_mcp, on_listening=listening)


def member_steps(retrievers: list[str], values: dict[str, object]) -> list[EvaluateStep]:
    """The step of each ``-r``; several (fused) share the command's flags, each taking the retriever options its
    options type has (``-r bm25 -r dense --model M``: ``--model`` is dense's); one no retriever takes is refused in
    the retriever's own line."""
    from ..errors import R2MedError
    from ..retrieval.registry import retriever_meta
    from ..steps import evaluate_step
    from ..typed.parse import Origin

    if len(retrievers) == 1:
        return [evaluate_step({"retriever": retrievers[0], **values}, Origin.cli())]
    if len(set(retrievers)) < len(retrievers):
        raise R2MedError(f"-r {' -r '.join(retrievers)}: each retriever once")
    data = {k: values[k] for k in DATA_KEYS if k in values}
    given = {k: v for k, v in values.items() if k not in DATA_KEYS and v is not None}
    steps, taken = [], set[str]()
    for name in retrievers:
        try:
            fields = retriever_meta(name).options.model_fields
        except ValueError:  # an unknown name: the step's parse says so
            fields = {}
        own = {k: v for k, v in given.items() if k in fields}
        taken |= own.keys()
        steps.append(evaluate_step({"retriever": name, **data, **own}, Origin.cli()))
    left = {k: v for k, v in given.items() if k not in taken}
    if left:  # no fused retriever takes it: the first one's parse names it
        evaluate_step({"retriever": retrievers[0], **data, **left}, Origin.cli())
    return steps
