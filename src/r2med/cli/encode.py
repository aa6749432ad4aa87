"""``r2med encode``: corpus embeddings in-process or on Ray (the work: :mod:`r2med.jobs.encode`).

``evaluate --ray`` (the retriever x task matrix on Ray) is ``evaluate``'s (:mod:`.core`, :mod:`r2med.jobs.ray`).
"""

from __future__ import annotations

import typer
from rich.markup import escape
from rich.table import Table

from . import app, strict_data
from ._ui import print_with_paths
from .options import (
    AT_LEAST_0,
    AT_LEAST_1,
    POSITIVE,
    BatchSize,
    DataDir,
    Device,
    MaxLength,
    Pooling,
    Ray,
    RayAddress,
    Revision,
    Tasks,
    TrustRemoteCode,
    Wide,
)


@app.command("encode")
def encode_command(
    ctx: typer.Context,
    retriever: str = typer.Option(..., "--retriever", "-r", help="Dense retriever: a preset or 'dense' with --model."),
    tasks: Tasks = "all",
    data_dir: DataDir = None,
    model: str | None = typer.Option(None, "--model", help="Embedding model (hub id or local folder) for 'dense'."),
    encoder: str | None = typer.Option(
        None,
        "--encoder",
        help="-r custom: your encoder, MODULE:OBJ (runs its code; in this process, not with --ray).",
    ),
    max_length: MaxLength = None,
    pooling: Pooling = None,
    trust_remote_code: TrustRemoteCode = False,
    batch_size: BatchSize = None,
    device: Device = None,
    revision: Revision = None,
    ray: Ray = False,
    address: RayAddress = None,
    dest: str | None = typer.Option(
        None,
        "--dest",
        help="With --ray: write shards to this path or URI (s3://, gs://, file://) "
        "instead of the r2med embedding cache; a folder per task.",
    ),
    shard_size: int = typer.Option(
        4096, "--shard-size", callback=AT_LEAST_1, help="Docs per shard (resume granularity)."
    ),
    actors: int | None = typer.Option(
        None, "--actors", callback=AT_LEAST_1, help="Encoder actors (default: one per GPU or CPU)."
    ),
    cpus_per_actor: float = typer.Option(1.0, "--cpus-per-actor", callback=POSITIVE, help="CPUs each actor asks for."),
    gpus_per_actor: float | None = typer.Option(
        None,
        "--gpus-per-actor",
        callback=AT_LEAST_0,
        help="GPUs each actor asks for (default 1 on a GPU cluster, else 0).",
    ),
    wide: Wide = False,
) -> None:
    """Encode task corpora with a dense retriever into the embedding cache (or --dest), resumably."""
    from ..data import check_hub, resolve
    from ..jobs.encode import encode_tasks

    options = dict(
        model=model,
        max_length=max_length,
        pooling=pooling,
        batch_size=batch_size,
        device=device,
        trust_remote_code=trust_remote_code or None,
        encoder=encoder,
    )
    done = encode_tasks(
        check_hub(resolve(tasks, data_dir, revision, strict=strict_data(ctx))),
        retriever,
        options,
        ray=ray,
        address=address,
        dest=dest,
        shard_size=shard_size,
        actors=actors,
        cpus_per_actor=cpus_per_actor,
        gpus_per_actor=gpus_per_actor,
    )

    def layout(with_path: bool) -> Table:
        table = Table(title=escape(f"{retriever}: document embeddings"))
        for col in ("task", "docs", "shards", "encoded", "reused", "time (s)", *(("where",) if with_path else ())):
            table.add_column(col, justify="left" if col in ("task", "where") else "right", no_wrap=True)
        for e in done:
            where = (escape(e.location),) if with_path else ()
            if e.shards is None:  # in-process: docs encoded now and found in the cache
                table.add_row(
                    escape(e.task), f"{e.docs:,}", "-", f"{e.encoded:,}", f"{e.reused:,}", f"{e.seconds:.1f}", *where
                )
            else:
                table.add_row(
                    escape(e.task),
                    f"{e.docs:,}",
                    str(e.shards),
                    str(e.encoded),
                    str(e.reused),
                    f"{e.seconds:.1f}",
                    *where,
                )
        return table

    print_with_paths(layout, [(e.task, e.location) for e in done], "embeddings", wide=wide)
