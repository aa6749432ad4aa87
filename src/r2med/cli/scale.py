"""Scale-out commands: ``encode`` (corpus embeddings, in-process or on Ray) and the Ray half of
``evaluate --ray`` (a retriever x task matrix as Ray tasks)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any, Optional

import typer
from rich.markup import escape
from rich.table import Table

from ..cache import check_home
from ..errors import R2MedError
from ..pipeline import resolve_collections
from ..tasks import parse_tasks
from . import app, console
from .options import AT_LEAST_0, AT_LEAST_1, POSITIVE, at_least

log = logging.getLogger(__name__)

RAY_HELP = ("Run on Ray (extra 'scale'): a private local cluster, or the one at --ray-address / $RAY_ADDRESS.")
ADDRESS_HELP = "Ray cluster to join with --ray: auto, host:port or ray://host:10001 (default: start a local one)."


def ray_address(address: Optional[str]) -> str:
    return address or "local"


def evaluate_on_ray(retrievers: list[str], plan: Callable[[str], tuple[dict, Any, str]], loaders, names: list[str],
                    k: int, out: Path, measures, count_missing: bool, overwrite: bool, address: Optional[str]):
    """Submit every (retriever, task) cell as a Ray task; returns {label: [TaskResult in task order]}.

    ``plan(retriever) -> (options, query builder or None, label, ...)`` is what ``evaluate`` decides
    for one retriever; results land in ``out/<label>/<task>/`` as without Ray.
    """
    from ..scale.matrix import Cell, evaluate_matrix
    from .core import _progress

    cells = []
    for retriever in retrievers:
        options, builder, label = plan(retriever)[:3]
        cells += [Cell(retriever, name, load, options, label, builder) for name, load in zip(names, loaders)]
    with _progress() as progress:
        bar = progress.add_task(f"{len(retrievers)} retriever(s) x {len(names)} task(s) on Ray", total=len(cells))
        results = evaluate_matrix(cells, k=k, out=out, measures=measures, count_missing=count_missing,
                                  overwrite=overwrite, address=ray_address(address),
                                  on_done=lambda cell, result: progress.advance(bar))
    grouped: dict[str, list] = {}
    for cell, result in zip(cells, results):
        grouped.setdefault(cell.label or cell.retriever, []).append(result)
    return grouped


@app.command("encode")
def encode_command(
    retriever: str = typer.Option(..., "--retriever", "-r", help="Dense retriever: a preset or 'dense' with --model."),
    tasks: str = typer.Option("all", "--tasks", "-t", help="'all' or comma-separated task names."),
    data_dir: Optional[Path] = typer.Option(None, "--data-dir", "-d",
                                            help="Local data: one collection folder, or a folder of task folders."),
    model: Optional[str] = typer.Option(None, "--model", help="Embedding model (hub id or local folder) for 'dense'."),
    max_length: Optional[int] = typer.Option(None, "--max-length", callback=at_least(2), help="Max tokens per text."),
    pooling: Optional[str] = typer.Option(None, "--pooling", help="cls, mean or last-token."),
    trust_remote_code: bool = typer.Option(False, "--trust-remote-code", help="Allow models that run their own code."),
    batch_size: Optional[int] = typer.Option(None, "--batch-size", callback=AT_LEAST_1, help="Texts per batch (of the longest)."),
    device: Optional[str] = typer.Option(None, "--device", help="auto (default), cpu, cuda..."),
    revision: Optional[str] = typer.Option(None, "--revision", help="Pinned hub revision of the data."),
    ray: bool = typer.Option(False, "--ray", help=RAY_HELP),
    address: Optional[str] = typer.Option(None, "--ray-address", envvar="RAY_ADDRESS", help=ADDRESS_HELP),
    dest: Optional[str] = typer.Option(None, "--dest",
                                       help="With --ray: write shards to this path or URI (s3://, gs://, file://) "
                                            "instead of the r2med embedding cache; a folder per task."),
    shard_size: int = typer.Option(4096, "--shard-size", callback=AT_LEAST_1, help="Docs per shard (resume granularity)."),
    actors: Optional[int] = typer.Option(None, "--actors", callback=AT_LEAST_1, help="Encoder actors (default: one per GPU or CPU)."),
    cpus_per_actor: float = typer.Option(1.0, "--cpus-per-actor", callback=POSITIVE, help="CPUs each actor asks for."),
    gpus_per_actor: Optional[float] = typer.Option(None, "--gpus-per-actor", callback=AT_LEAST_0,
                                                   help="GPUs each actor asks for (default 1 on a GPU cluster, else 0)."),
) -> None:
    """Encode task corpora with a dense retriever into the embedding cache (or --dest), resumably."""
    from ..retrieval import make_retriever

    if not dest:
        check_home()  # the embeddings go to the cache: find an unusable home before encoding
    names = parse_tasks(tasks) if data_dir is None or not (data_dir / "corpus.jsonl").exists() else [data_dir.name]
    loaders = resolve_collections(names, data_dir, revision)
    if dest and not ray:
        raise R2MedError("--dest needs --ray (without Ray, embeddings go to the r2med embedding cache)")
    options = {k: v for k, v in dict(model=model, max_length=max_length, pooling=pooling, batch_size=batch_size,
                                     device=device, trust_remote_code=trust_remote_code or None).items()
               if v is not None}
    table = Table(title=escape(f"{retriever}: document embeddings"))
    for col in ("task", "docs", "shards", "encoded", "reused", "time (s)", "where"):
        table.add_column(col, justify="left" if col in ("task", "where") else "right")
    for name, load in zip(names, loaders):
        collection = load()
        dense = make_retriever(retriever, task=collection.name, **options)
        settings = getattr(dense, "settings", None)
        if settings is None or getattr(dense, "family", "") != "dense":
            raise R2MedError(f"{retriever!r} is not a dense retriever; `r2med encode` embeds corpora for dense ones")
        if not ray:
            import time

            t = time.perf_counter()
            dense.index(collection.corpus, corpus_fingerprint=collection.fingerprint)
            entry = dense.cache_entry
            table.add_row(escape(collection.name), f"{len(collection.corpus):,}", "-", f"{dense.docs_encoded:,}",
                          f"{len(collection.corpus) - dense.docs_encoded:,}", f"{time.perf_counter() - t:.1f}",
                          escape(str(entry.path if entry else "-")))
            continue
        if dense.encoder.config() != settings.key():
            raise R2MedError(f"{retriever!r} embeds through an API; run it without --ray")
        from ..scale.encode import encode_distributed

        target = f"{dest.rstrip('/')}/{collection.name}" if dest else None
        result = encode_distributed(collection.corpus, settings, corpus_fingerprint=collection.fingerprint,
                                    dest=target, shard_size=shard_size, address=ray_address(address), actors=actors,
                                    cpus_per_actor=cpus_per_actor, gpus_per_actor=gpus_per_actor, device=device,
                                    batch_size=batch_size or getattr(dense, "batch_size", 32))
        table.add_row(escape(collection.name), f"{result.n_docs:,}", str(result.n_shards),
                      str(len(result.encoded_shards)), str(len(result.reused_shards)), f"{result.seconds:.1f}",
                      escape(result.location))
    console.print(table)
