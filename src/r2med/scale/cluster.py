"""Connecting to Ray and mapping a function over shards, in this process or as Ray tasks.

``connect(address)`` accepts what ``--ray [ADDRESS]`` accepts: ``local`` (start a private local
cluster), ``auto`` (the cluster this machine belongs to, e.g. after ``ray start --head``) or a
``ray://host:port`` / ``host:port`` address.  An already-initialised Ray session is reused.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping, Sequence
from types import ModuleType
from typing import Protocol, TypeVar

from ..errors import MissingExtraError, R2MedError
from ..infra.json_types import JsonObject, JsonValue

log = logging.getLogger(__name__)

LOCAL = "local"
#: Environment the driver passes on to its Ray tasks and actors (when set): where artifacts and
#: models live, and whether the hub may be contacted.
FORWARDED_ENV = ("R2MED_HOME", "HF_HOME", "HF_HUB_CACHE", "HF_HUB_OFFLINE", "HF_ENDPOINT", "TRANSFORMERS_OFFLINE")

_T = TypeVar("_T")


class ObjectRef(Protocol):
    """A Ray object reference (``ray.ObjectRef``; Ray ships no types): r2med only hands it back to Ray
    (``ray.get``, ``ray.wait``, a task's argument, resolved there)."""

    def hex(self) -> str: ...


def require_ray() -> ModuleType:
    """The ``ray`` module, or a one-line error naming the extra to install."""
    try:
        import ray
    except ImportError:
        raise MissingExtraError("ray", "scale", "running on a Ray cluster") from None
    return ray


def connect(address: str | None = LOCAL, num_cpus: int | None = None, **init_kwargs: object) -> ModuleType:
    """Initialise Ray once (``local`` starts a private cluster) and return the ``ray`` module; ``init_kwargs`` go to
    ``ray.init`` as given."""
    ray = require_ray()
    if ray.is_initialized():
        return ray
    kwargs: dict[str, object] = {"include_dashboard": False, "log_to_driver": False, **init_kwargs}
    try:
        if address in (None, "", LOCAL):
            ray.init(num_cpus=num_cpus, **kwargs)
        else:
            ray.init(address=address, **kwargs)
    except ConnectionError as exc:
        raise R2MedError(
            f"cannot reach the Ray cluster at {address!r} ({exc}); start one there with "
            "`ray start --head`, or leave out --ray-address / RAY_ADDRESS for a local one"
        ) from None
    log.info("Ray: %s", {k: v for k, v in ray.cluster_resources().items() if not k.startswith("node:")})
    return ray


def driver_env(extra: Mapping[str, JsonValue] | None = None) -> JsonObject:
    """A Ray ``runtime_env`` (open: Ray's own keys) carrying :data:`FORWARDED_ENV` from this process (plus
    ``extra``'s keys; its ``env_vars``, an object of texts, win over this process's).

    Paths in it (``R2MED_HOME``) must be valid on every node: a shared filesystem on a cluster.
    """
    env: dict[str, JsonValue] = {k: os.environ[k] for k in FORWARDED_ENV if os.environ.get(k)}
    runtime_env = dict(extra or {})
    given = runtime_env.get("env_vars")
    if given is not None and not isinstance(given, dict):
        raise R2MedError(f"runtime_env's env_vars must be an object of name -> text, got {type(given).__name__}")
    runtime_env["env_vars"] = {**env, **(given or {})}
    return runtime_env


def cluster_gpus() -> float:
    """GPUs the connected cluster offers (0 when Ray is not initialised)."""
    ray = require_ray()
    return float(ray.cluster_resources().get("GPU", 0)) if ray.is_initialized() else 0.0


def map_tasks(
    fn: Callable[..., _T],
    args: Sequence[tuple[object, ...]],
    use_ray: bool = False,
    resources: dict[str, float] | None = None,
) -> list[_T]:
    """``[fn(*a) for a in args]``, or the same as parallel Ray tasks (results in order).

    Ray tasks receive ``ObjectRef`` arguments resolved, and Ray schedules each next to the
    objects it reads, so shard data stays where it was built.
    """
    if not use_ray:
        return [fn(*a) for a in args]
    ray = require_ray()
    remote = ray.remote(fn).options(**(resources or {"num_cpus": 1}))
    results: list[_T] = ray.get([remote.remote(*a) for a in args])
    return results


def remote_refs(
    fn: Callable[..., object], args: Sequence[tuple[object, ...]], resources: dict[str, float] | None = None
) -> list[ObjectRef]:
    """Launch ``fn(*a)`` as Ray tasks and return their ``ObjectRef`` s without fetching results."""
    ray = require_ray()
    remote = ray.remote(fn).options(**(resources or {"num_cpus": 1}))
    return [remote.remote(*a) for a in args]


def remote_ref_pairs(
    fn: Callable[..., tuple[object, object]],
    args: Sequence[tuple[object, ...]],
    resources: dict[str, float] | None = None,
) -> list[tuple[ObjectRef, ObjectRef]]:
    """Launch ``fn(*a)`` (returning a pair) as Ray tasks and return an ``ObjectRef`` to each half of each result
    without fetching them (``num_returns=2``: each half stays in the object store on its own)."""
    ray = require_ray()
    remote = ray.remote(fn).options(num_returns=2, **(resources or {"num_cpus": 1}))
    pairs = [remote.remote(*a) for a in args]
    return [(first, second) for first, second in pairs]
