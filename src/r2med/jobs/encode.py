"""``r2med encode``: embed task corpora with a dense retriever into the embedding cache, or (Ray) a shard store.

In-process, the retriever's own :meth:`~r2med.retrieval.dense.DenseRetriever.index` fills the
embedding cache (resumable per chunk); with Ray, :func:`r2med.scale.encode.encode_distributed`
encodes shards in an actor pool, into the same cache entry or into ``dest`` (a path or URI per task).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..data import TaskRef
from ..errors import R2MedError
from ..infra.home import check_home, remember_collection
from ..retrieval.dense import DenseRetriever
from ..retrieval.registry import make_retriever, retriever_meta
from ..scale.encode import encode_distributed


@dataclass
class Encoded:
    """One task's corpus embeddings: how many docs, shards encoded now or found done, where they are."""

    task: str
    docs: int
    shards: int | None  # None: in-process (the cache's chunks)
    encoded: int  # docs (in-process) or shards (Ray) encoded now
    reused: int
    seconds: float
    location: str


def encode_tasks(
    tasks: Sequence[TaskRef],
    retriever: str,
    options: Mapping[str, object] | None = None,
    ray: bool = False,
    address: str | None = None,
    dest: str | None = None,
    shard_size: int = 4096,
    actors: int | None = None,
    cpus_per_actor: float = 1.0,
    gpus_per_actor: float | None = None,
) -> list[Encoded]:
    """Encode each task's corpus with ``retriever`` (a dense retriever of the registry)."""

    meta = retriever_meta(retriever)
    if meta.family != "dense":
        raise R2MedError(f"{retriever!r} is not a dense retriever; `r2med encode` embeds corpora for dense ones")
    if dest and not ray:
        raise R2MedError("--dest needs --ray (without Ray, embeddings go to the r2med embedding cache)")
    if ray and meta.api_key_env:
        raise R2MedError(f"{retriever!r} embeds through an API; run it without --ray")
    if ray and (options or {}).get("encoder") is not None:
        raise R2MedError(
            "a custom --encoder encodes in this process; run `r2med encode` without --ray "
            "(`r2med evaluate --ray` runs it on Ray workers)"
        )
    if not dest:
        check_home()  # the embeddings go to the cache: find an unusable home before encoding
    parsed = meta.parse_options(options or {})  # once, for every task (None: not set)
    done: list[Encoded] = []
    for ref in tasks:
        collection = ref.load()
        dense = make_retriever(retriever, task=collection.name, options=parsed)
        assert isinstance(dense, DenseRetriever)  # every registry entry of family "dense" builds one
        if not ray:
            remember_collection(collection.fingerprint, collection.name, collection.source)
            start = time.perf_counter()
            dense.index(collection.corpus, corpus_fingerprint=collection.fingerprint)
            entry = dense.cache_entry
            done.append(
                Encoded(
                    collection.name,
                    len(collection.corpus),
                    None,
                    dense.docs_encoded,
                    len(collection.corpus) - dense.docs_encoded,
                    time.perf_counter() - start,
                    str(entry.path if entry else "-"),
                )
            )
            continue

        target = f"{dest.rstrip('/')}/{collection.name}" if dest else None
        result = encode_distributed(
            collection.corpus,
            dense.settings,
            corpus_fingerprint=collection.fingerprint,
            dest=target,
            shard_size=shard_size,
            address=address or "local",
            actors=actors,
            cpus_per_actor=cpus_per_actor,
            gpus_per_actor=gpus_per_actor,
            device=dense.device,
            batch_size=dense.batch_size,
        )
        done.append(
            Encoded(
                collection.name,
                result.n_docs,
                result.n_shards,
                len(result.encoded_shards),
                len(result.reused_shards),
                result.seconds,
                result.location,
            )
        )
    return done
