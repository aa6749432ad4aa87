"""Where a model's files are: its folder, or for a hub id the Hugging Face cache (or the hub, unless offline).

Shared by the encoders (:mod:`.hf`: ``modules.json``, sentence-transformers' similarity) and the framing checks
(:mod:`.framing`: ``tokenizer_config.json``, ``tokenizer.json``).
"""

from __future__ import annotations

import os
from pathlib import Path

from huggingface_hub import hf_hub_download, try_to_load_from_cache
from huggingface_hub.constants import HF_HUB_OFFLINE

from ...typed.model_source import looks_like_path


def _looks_like_hub_id(model: str) -> bool:
    return bool(model) and not looks_like_path(model)


def model_file(model: str, filename: str, revision: str | None = None) -> Path | None:
    """``filename`` of a model: from its folder, or for a hub id from the Hugging Face cache (or the
    hub, unless offline); None when the model has no such file or it cannot be found."""
    folder = Path(model).expanduser()
    if folder.is_dir():
        path = folder / filename
        return path if path.is_file() else None
    if not _looks_like_hub_id(model):
        return None
    try:
        cached = try_to_load_from_cache(model, filename, revision=revision)
        if isinstance(cached, str):
            return Path(cached)
        offline = HF_HUB_OFFLINE or os.environ.get("HF_HUB_OFFLINE", "").upper() in ("1", "ON", "YES", "TRUE")
        if cached is not None or offline:
            return None  # known absent, or not cached and we may not ask the hub
        return Path(hf_hub_download(model, filename, revision=revision))
    except Exception:  # not on the hub, no network, a malformed id: the loader reports it
        return None
