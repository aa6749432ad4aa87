"""Writes this folder's ``out/`` (a dense run's ``metrics.json``), ``home/`` (its embedding cache entries) and
``reranker_config.json`` (a cross-encoder's ``config()``) with r2med's code of commit 1defd14 (main before a model's
commit was named ``model_revision`` everywhere: its encoder settings, cache keys and reranker record say
``revision``).  ``tests/test_model_revision.py`` reads them with today's code.

Run once, from the repository root, against that commit's sources (never against the current ones)::

    mkdir -p /tmp/main_1defd14 && git archive 1defd14 src | tar -x -C /tmp/main_1defd14
    PYTHONPATH=/tmp/main_1defd14/src .venv/bin/python tests/data/made_by_main_1defd14/make.py

The encoder is :class:`HashEncoder` (no model weights: each text's vector is read from its blake2b hash), so the
run is the same on any machine; the model named, ``org/tiny-encoder`` at a made-up commit, is never loaded.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
#: the dense run's options (as ``r2med evaluate -r dense --set ...`` takes them)
OPTIONS = {
    "model": "org/tiny-encoder",
    "model_revision": "0123456789abcdef0123456789abcdef01234567",
    "pooling": "mean",
    "similarity": "cosine",
    "device": "cpu",
    "chunk_size": 2,
}
#: the cross-encoder whose record is kept
RERANKER = {"model": "org/tiny-cross-encoder", "model_revision": "v1.0"}


def hash_encoder(settings: object, **_: object) -> object:
    """An encoder whose vectors are each text's blake2b digest (8 bytes, centred): deterministic, weightless."""
    from r2med.retrieval.encoders.base import BaseEncoder

    class HashEncoder(BaseEncoder):
        def _embed(self, texts: Sequence[str], role: str, batch_size: int) -> np.ndarray:
            digests = [hashlib.blake2b(t.encode("utf-8"), digest_size=8).digest() for t in texts]
            return np.stack([np.frombuffer(d, dtype=np.uint8).astype(np.float32) - 127.5 for d in digests])

    return HashEncoder(settings)  # type: ignore[arg-type]


def main() -> None:
    os.environ["R2MED_HOME"] = str(HERE / "home")
    os.environ["HF_HUB_OFFLINE"] = "1"
    from r2med.data.loaders import load_folder
    from r2med.jobs.evaluate import run_task
    from r2med.reranking import make_reranker
    from r2med.retrieval import dense
    from r2med.steps import EvaluateStep

    dense.make_encoder = hash_encoder  # type: ignore[assignment]
    run_task(load_folder(HERE / "collection"), EvaluateStep.of("dense", **OPTIONS), HERE / "out" / "dense")
    config = make_reranker("cross-encoder", **RERANKER).config()
    (HERE / "reranker_config.json").write_text(json.dumps(config, indent=1) + "\n")


if __name__ == "__main__":
    sys.exit(main())
