"""Loading R2MED tasks from the Hugging Face hub (``R2MED/<Task>``), cached under the r2med home.

The task files are plain JSONL (``corpus.jsonl``, ``query.jsonl``, ``qrels.jsonl`` and
``<method>/<llm>/query_with_hydoc.jsonl``), so they are fetched with
``huggingface_hub.hf_hub_download`` and parsed by r2med's own validated readers,
which is faster than ``datasets.load_dataset`` and works offline from a filled
cache (``HF_HUB_OFFLINE=1``).
"""

from __future__ import annotations

import functools
import logging
from pathlib import Path

from ..cache import home
from ..errors import R2MedError
from ..protocol import hub_configs
from .collection import Collection
from .loaders import load_r2med_files

log = logging.getLogger(__name__)


class HubUnavailable(R2MedError):
    """The hub could not be reached and the files are not cached."""


def hub_cache_dir() -> Path:
    return home() / "hub"


def expansion_path(method: str, split: str) -> str:
    """The file path of a hub expansion config/split, e.g. ``("hyde", "qwen_7b")`` -> ``hyde/qwen-7b/...``."""
    configs = hub_configs()["configs"]
    if method not in configs or method in ("corpus", "query", "qrels"):
        methods = [m for m in configs if m not in ("corpus", "query", "qrels")]
        raise R2MedError(f"unknown expansion method {method!r}; choose from: {', '.join(methods)}")
    splits = configs[method]
    key = split.replace("-", "_")
    if key not in splits:
        raise R2MedError(f"unknown {method} split {split!r}; choose from: {', '.join(splits)}")
    return splits[key]


@functools.lru_cache(maxsize=1)
def hub_reachable(timeout: float = 3.0) -> bool:
    """Whether the hub endpoint answers a TCP connection (False at once when HF_HUB_OFFLINE is set)."""
    import socket
    from urllib.parse import urlparse

    from huggingface_hub import constants

    if constants.HF_HUB_OFFLINE:
        return False
    url = urlparse(constants.ENDPOINT)
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        socket.create_connection((url.hostname, port), timeout=timeout).close()
        return True
    except OSError:
        return False


def cached_file(repo_id: str, filename: str, revision: str | None = None) -> Path | None:
    """The cached copy of a hub file, if the cache holds one."""
    from huggingface_hub import try_to_load_from_cache

    found = try_to_load_from_cache(repo_id, filename, cache_dir=hub_cache_dir(), revision=revision,
                                   repo_type="dataset")
    return Path(found) if isinstance(found, str) else None


def download(repo_id: str, filename: str, revision: str | None = None) -> Path:
    """One file of a hub dataset repo, from the cache when present (no network call when offline)."""
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import EntryNotFoundError, LocalEntryNotFoundError, RepositoryNotFoundError

    online = hub_reachable()
    try:
        return Path(hf_hub_download(repo_id=repo_id, filename=filename, repo_type="dataset", revision=revision,
                                    cache_dir=hub_cache_dir(), local_files_only=not online))
    except LocalEntryNotFoundError:
        raise HubUnavailable(
            f"hub: cannot reach the Hugging Face hub and {repo_id}/{filename} is not cached under "
            f"{hub_cache_dir()}; check the network, or pass --data-dir with a local copy"
        ) from None
    except (EntryNotFoundError, RepositoryNotFoundError) as exc:
        raise R2MedError(f"hub: {repo_id} has no file {filename!r} ({type(exc).__name__})") from None
    except Exception as exc:  # connection errors come in many types (requests, httpx, OSError)
        raise HubUnavailable(f"hub: cannot fetch {repo_id}/{filename} ({type(exc).__name__}: {exc})") from None


def load_from_hub(task: str, revision: str | None = None) -> Collection:
    from ..tasks import get_task

    spec = get_task(task)
    files = {name: download(spec.hub_id, name, revision) for name in ("corpus.jsonl", "query.jsonl", "qrels.jsonl")}
    coll = load_r2med_files(files["corpus.jsonl"], files["query.jsonl"], files["qrels.jsonl"], spec.name)
    coll.source = f"hf://datasets/{spec.hub_id}" + (f"@{revision}" if revision else "")
    return coll


def download_expansion(task: str, method: str, split: str, revision: str | None = None) -> Path:
    from ..tasks import get_task

    return download(get_task(task).hub_id, expansion_path(method, split), revision)
