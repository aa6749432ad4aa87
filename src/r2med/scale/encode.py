"""Distributed document encoding: the dense encoders in a Ray Data actor pool, shard by shard.

The corpus is cut into contiguous shards; each pending shard becomes one row of a Ray Data
dataset, and ``map_batches`` runs :class:`ShardEncoder` -- a wrapper around the project's own
encoder (:func:`r2med.retrieval.encoders.make_encoder`, which batches by token budget) -- in an
actor pool: one actor per GPU, or per ``cpus_per_actor`` CPU slots.  Each actor writes its
shard's embeddings straight to the store (:mod:`.store`) atomically, so

* a restarted job encodes only the shards that are missing (the shard files are the record);
* a killed actor is restarted by Ray (``max_restarts``) and its unfinished shard retried
  (``max_task_retries``); a shard is written under one name, so it is present exactly once;
* by default the store is the local embedding cache entry the single-process dense retriever
  uses, and it is finalised into ``embeddings.npy`` -- a later ``evaluate`` finds it there.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from ..errors import R2MedError, shown
from ..infra.home import fingerprint_texts, parse_json
from ..infra.json_types import JsonObject, JsonValue
from ..retrieval.embedding_cache import EmbeddingCache, keyed
from ..retrieval.encoders import EncoderSettings, make_encoder
from .cluster import connect, driver_env
from .shards import Shard, plan_shards
from .store import ShardStore

log = logging.getLogger(__name__)

DEFAULT_SHARD_SIZE = 4096
#: Test-only fault injection: when set to a path, an actor kills its own process (SIGKILL) when
#: it is about to encode its second shard, once per marker file.
KILL_MARKER_ENV = "R2MED_TEST_KILL_ACTOR_MARKER"


@dataclass
class EncodeResult:
    """What a distributed encoding did and where the vectors are."""

    location: str
    n_docs: int
    n_shards: int
    shard_size: int
    encoded_shards: list[int] = field(default_factory=list)
    reused_shards: list[int] = field(default_factory=list)
    actor_pids: list[int] = field(default_factory=list)
    seconds: float = 0.0
    embeddings: np.ndarray | None = None  # the finalised matrix (cache destination only)

    def summary(self) -> JsonObject:
        out: JsonObject = asdict(self)
        out.pop("embeddings")
        return out


class ShardEncoder:
    """Ray Data actor: loads the encoder once, then encodes and stores one shard per row."""

    def __init__(
        self,
        settings: EncoderSettings,
        store: ShardStore,
        device: str | None = None,
        batch_size: int = 32,
        token_budget: int | None = None,
        threads: int | None = None,
    ):
        if threads:
            import torch

            torch.set_num_threads(threads)
        self.encoder = make_encoder(settings, device=device, batch_size=batch_size, token_budget=token_budget)
        self.store = store
        self.shards_done = 0

    def _fault_injection(self) -> None:
        marker = os.environ.get(KILL_MARKER_ENV)
        if marker and self.shards_done >= 1 and not os.path.exists(marker):
            Path(marker).write_text(str(os.getpid()), encoding="utf-8")
            os.kill(os.getpid(), signal.SIGKILL)

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        shards, rows, dims = [], [], []
        for shard, texts in zip(batch["shard"], batch["texts"]):
            self._fault_injection()
            emb = self.encoder.encode_corpus([str(t) for t in texts])
            self.store.write_shard(int(shard), emb)
            self.shards_done += 1
            shards.append(int(shard))
            rows.append(emb.shape[0])
            dims.append(emb.shape[1])
        n = len(shards)
        return {
            "shard": np.asarray(shards, dtype=np.int64),
            "rows": np.asarray(rows, dtype=np.int64),
            "dim": np.asarray(dims, dtype=np.int64),
            "pid": np.full(n, os.getpid(), dtype=np.int64),
        }


def encode_distributed(
    corpus: Mapping[str, str],
    settings: EncoderSettings,
    corpus_fingerprint: str | None = None,
    dest: str | None = None,
    shard_size: int = DEFAULT_SHARD_SIZE,
    address: str | None = "local",
    actors: int | None = None,
    cpus_per_actor: float = 1.0,
    gpus_per_actor: float | None = None,
    device: str | None = None,
    batch_size: int = 32,
    token_budget: int | None = None,
    finalize: bool = True,
    runtime_env: Mapping[str, JsonValue] | None = None,  # Ray's runtime_env: open, Ray's own keys
) -> EncodeResult:
    """Encode ``corpus`` (doc id -> text) with ``settings`` (an ``EncoderSettings``) on Ray.

    ``dest``: a path or URI for a shard store; ``None`` writes into the local embedding cache
    (``$R2MED_HOME/embeddings/<key>``) and, with ``finalize``, assembles ``embeddings.npy``.
    Only shards not already stored are encoded (run one job per store at a time).  ``actors`` defaults to one per
    cluster GPU (``gpus_per_actor=1``) or one per ``cpus_per_actor`` CPUs.  Ray Data restarts a dead actor
    and retries its shard (its actor pools default to ``max_restarts=-1, max_task_retries=-1``).
    """
    start = time.perf_counter()
    texts = list(corpus.values())
    if not texts:
        raise R2MedError("cannot encode an empty corpus")
    fp = corpus_fingerprint or fingerprint_texts(corpus.items())
    config = settings.key()
    cache = None
    if dest is None:
        cache = EmbeddingCache(config, fp, len(texts), chunk_size=shard_size)
        done = cache.load() if cache.complete() else None  # verified; a damaged entry is encoded again
        if done is not None:
            log.info("embeddings already complete in %s", cache.path)
            plan = plan_shards(len(texts), shard_size=cache.chunk_size)
            return EncodeResult(
                str(cache.path),
                len(texts),
                len(plan),
                cache.chunk_size,
                reused_shards=[s.index for s in plan],
                embeddings=done,
            )
        cache.start()  # writes meta.json; drops chunks of a different chunking
        cache.verify_chunks()  # truncated or damaged chunks are dropped and encoded again
        shard_size = cache.chunk_size
        store = ShardStore(str(cache.path), shard_dir="chunks")
    else:
        store = ShardStore(dest)
        manifest: JsonObject = {
            "format": 1,
            "encoder": config,
            "corpus_fingerprint": fp,
            "n_docs": len(texts),
            "shard_size": shard_size,
        }
        stored = store.read_manifest()
        recorded = stored.get("encoder") if stored is not None else None
        if stored is not None and isinstance(recorded, dict):  # a store made before ``model_revision``: compared
            stored = {**stored, "encoder": keyed(recorded)}  # as the cache key spells it
        if stored is not None and stored != {**manifest, "encoder": keyed(config)}:
            raise R2MedError(
                f"{dest} already holds embeddings of another model, corpus or shard size; "
                "choose another --dest or delete it"
            )
        if stored is None:  # doc ids first: a manifest is only ever next to its doc ids
            store.write_bytes("doc_ids.json", _json_bytes(list(corpus)))
            store.write_manifest(manifest)
    plan = plan_shards(len(texts), shard_size=shard_size)
    store.remove_stale_temps()
    finished = store.finished()
    missing = [s for s in plan if s.index not in finished]
    result = EncodeResult(
        store.location, len(texts), len(plan), shard_size, reused_shards=[s.index for s in plan if s.index in finished]
    )
    if missing:
        log.info("encoding %d of %d shards (%d docs) on Ray", len(missing), len(plan), sum(map(len, missing)))
        rows = _run_actor_pool(
            texts,
            missing,
            settings,
            store,
            address,
            actors,
            cpus_per_actor,
            gpus_per_actor,
            device,
            batch_size,
            token_budget,
            runtime_env,
        )
        counts = Counter(rows["shard"].tolist())
        expected = {s.index: len(s) for s in missing}
        dupes = sorted(s for s, c in counts.items() if c > 1)
        if set(counts) != set(expected) or dupes:
            raise RuntimeError(
                f"distributed encoding returned shards {sorted(counts)} (duplicates {dupes}), "
                f"expected {sorted(expected)}"
            )
        for shard, n in zip(rows["shard"].tolist(), rows["rows"].tolist()):
            if n != expected[shard]:
                raise RuntimeError(f"shard {shard} has {n} rows, expected {expected[shard]}")
        if len(set(rows["dim"].tolist())) > 1:
            raise RuntimeError(f"shards came back with different dimensions {sorted(set(rows['dim'].tolist()))}")
        result.encoded_shards = sorted(counts)
        result.actor_pids = sorted(set(rows["pid"].tolist()))
    absent = [s.index for s in plan if not store.has_shard(s.index)]
    if absent:
        raise RuntimeError(f"shards {absent[:10]} are missing from {store.location} after encoding")
    store.remove_stale_temps()
    if cache is not None and finalize:
        result.embeddings = cache.finalize()
    result.seconds = time.perf_counter() - start
    return result


def _run_actor_pool(
    texts: Sequence[str],
    shards: Sequence[Shard],
    settings: EncoderSettings,
    store: ShardStore,
    address: str | None,
    actors: int | None,
    cpus_per_actor: float,
    gpus_per_actor: float | None,
    device: str | None,
    batch_size: int,
    token_budget: int | None,
    runtime_env: Mapping[str, JsonValue] | None,  # Ray's runtime_env: open, Ray's own keys
) -> dict[str, np.ndarray]:
    ray = connect(address)
    from ray.data import ActorPoolStrategy

    resources = ray.cluster_resources()
    gpus = float(resources.get("GPU", 0))
    if gpus_per_actor is None:
        gpus_per_actor = 1.0 if gpus >= 1 else 0.0
    if actors is None:
        actors = int(gpus // gpus_per_actor) if gpus_per_actor > 0 else int(resources.get("CPU", 1) // cpus_per_actor)
    actors = max(1, min(actors, len(shards)))
    if device is None:
        device = "cuda" if gpus_per_actor > 0 else "cpu"
    ds = ray.data.from_items(
        [{"shard": s.index, "texts": list(texts[s.start : s.stop])} for s in shards], override_num_blocks=len(shards)
    )
    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = log.isEnabledFor(logging.DEBUG)
    logging.getLogger("ray.data").setLevel(logging.INFO if log.isEnabledFor(logging.DEBUG) else logging.WARNING)
    out = ds.map_batches(
        ShardEncoder,
        batch_size=1,
        compute=ActorPoolStrategy(size=actors),
        fn_constructor_kwargs={
            "settings": settings,
            "store": store,
            "device": device,
            "batch_size": batch_size,
            "token_budget": token_budget,
            "threads": max(1, int(cpus_per_actor)) if gpus_per_actor == 0 else None,
        },
        num_cpus=cpus_per_actor,
        num_gpus=gpus_per_actor or None,
        runtime_env=driver_env(dict(runtime_env) if runtime_env else None),
    ).take_all()
    return {key: np.asarray([row[key] for row in out]) for key in ("shard", "rows", "dim", "pid")}


def _json_bytes(obj: object) -> bytes:
    return json.dumps(obj).encode("utf-8")


def load_shards(location: str) -> tuple[list[str], list[np.ndarray]]:
    """(doc ids, per-shard embedding arrays) of a finished store written by :func:`encode_distributed`; a
    ``doc_ids.json`` that is not what r2med writes (malformed, nested too deeply, not a list of ids) is one line."""
    store = ShardStore(location)
    manifest = store.read_manifest()
    if manifest is None:
        raise R2MedError(f"{location} has no manifest.json; write embeddings there with `r2med encode --ray --dest`")
    try:  # the one JSON reader: bad UTF-8, malformed or nested too deeply is a ValueError
        doc_ids = parse_json(store.read_bytes("doc_ids.json"))
    except ValueError as exc:
        raise R2MedError(f"{location}: doc_ids.json is not what r2med writes ({shown(str(exc))})") from None
    ids = [d for d in doc_ids if isinstance(d, str)] if isinstance(doc_ids, list) else []
    if not isinstance(doc_ids, list) or len(ids) != len(doc_ids):
        raise R2MedError(f"{location}: doc_ids.json is not what r2med writes (a list of document ids)")
    n_docs, shard_size = manifest.get("n_docs"), manifest.get("shard_size")
    if not isinstance(n_docs, int) or not isinstance(shard_size, int):
        raise R2MedError(f"{location}: manifest.json is not what r2med writes (no n_docs or shard_size)")
    plan = plan_shards(n_docs, shard_size=shard_size)
    missing = [s.index for s in plan if not store.has_shard(s.index)]
    if missing:
        raise R2MedError(f"{location} misses shards {missing[:10]}; re-run the encoding to finish them")
    return ids, [store.read_shard(s.index, mmap=True) for s in plan]
