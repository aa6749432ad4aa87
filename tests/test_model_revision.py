"""A model's commit has one name, ``model_revision``: the option, the encoder settings and record, a reranker's
record and grading read it so.  What r2med wrote before (main at 1defd14 named it ``revision`` in the encoder
settings, the embedding cache's key and a reranker's record) stays readable and reusable: the record's reader
upgrades it in memory (the file is never rewritten), and a cached vector keeps its key.

The files under ``tests/data/made_by_main_1defd14/`` were written by that commit's code (its ``make.py`` says how):
a dense run's ``metrics.json``, its two embedding cache entries, and a cross-encoder's ``config()``."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import shutil
from pathlib import Path

import pytest

import r2med
from r2med.data.loaders import load_folder
from r2med.jobs.evaluate import run_task
from r2med.reranking import make_reranker
from r2med.retrieval import dense
from r2med.retrieval.embedding_cache import EmbeddingCache
from r2med.retrieval.encoders import EncoderSettings
from r2med.runs.record import RecordedConfig, read_record
from r2med.steps import EvaluateStep, evaluate_from_record, rerank_from_record

MAIN = Path(__file__).parent / "data" / "made_by_main_1defd14"
COMMIT = "0123456789abcdef0123456789abcdef01234567"


def _make_module():
    spec = importlib.util.spec_from_file_location("made_by_main_1defd14", MAIN / "make.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


MAKE = _make_module()


def _digests(folder: Path) -> dict[str, str]:
    """Each file's sha256 under ``folder`` (an embedding cache: its ``embeddings/`` entries only)."""
    files = [p for p in folder.rglob("*") if p.is_file() and ".collections" not in p.parts]
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() for p in files}


@pytest.fixture
def main_home(tmp_path, monkeypatch) -> Path:
    """R2MED_HOME holding the embedding cache main wrote, with an encoder that fails if it is ever asked to encode."""
    home = tmp_path / "home"
    shutil.copytree(MAIN / "home", home)
    monkeypatch.setenv("R2MED_HOME", str(home))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")

    def refuse(settings, **_):
        encoder = MAKE.hash_encoder(settings)
        encoder._embed = lambda *a, **k: pytest.fail("encoded a text main had cached")
        return encoder

    monkeypatch.setattr(dense, "make_encoder", refuse)
    return home


def test_the_encoder_settings_record_and_reranker_name_it_model_revision():
    step = EvaluateStep.of("dense", **MAKE.OPTIONS)
    settings = r2med.make_retriever("dense", options=step.options).settings
    assert settings.model_revision == COMMIT
    assert "revision" not in settings.key() and settings.key()["model_revision"] == COMMIT
    reranker = make_reranker("cross-encoder", **MAKE.RERANKER)
    assert reranker.config()["model_revision"] == "v1.0" and "revision" not in reranker.config()


def test_main_s_cached_vectors_keep_their_key_and_are_read_not_encoded(main_home, tmp_path):
    before = _digests(main_home)
    settings = EncoderSettings(model="org/tiny-encoder", loader="transformers", model_revision=COMMIT, pooling="mean")
    collection = load_folder(MAIN / "collection")
    entry = EmbeddingCache(settings.key(), collection.fingerprint, len(collection.corpus), chunk_size=2)
    assert entry.path.parent == main_home / "embeddings" and entry.complete()  # the key main gave these vectors
    # the whole run: both entries read (the encoder refuses to run), the scores main recorded
    result = run_task(collection, EvaluateStep.of("dense", **MAKE.OPTIONS), tmp_path / "fresh")
    main = json.loads((MAIN / "out" / "dense" / "collection" / "metrics.json").read_text())
    assert result.metrics.aggregate == main["aggregate"]
    assert _digests(main_home) == before  # read only: main's entries as they were
    written = json.loads((tmp_path / "fresh" / "collection" / "metrics.json").read_text())
    assert written["config"]["encoder"]["model_revision"] == COMMIT and "revision" not in written["config"]["encoder"]


def test_a_cache_entry_main_began_resumes_with_its_chunks(main_home):
    """An entry main left part-way (its meta.json, a finished chunk) is resumed, not cleared: its settings are the
    same under the old spelling."""
    settings = EncoderSettings(model="org/tiny-encoder", loader="transformers", model_revision=COMMIT, pooling="mean")
    collection = load_folder(MAIN / "collection")
    entry = EmbeddingCache(settings.key(), collection.fingerprint, len(collection.corpus), chunk_size=2)
    vectors = entry.load()
    assert vectors is not None
    meta = (entry.path / "meta.json").read_bytes()
    for name in ("embeddings.npy", "checksums.json"):
        (entry.path / name).unlink()
    entry.write_chunk(0, vectors[:2])  # what main's run had finished when it stopped
    entry.start()
    assert (entry.path / "meta.json").read_bytes() == meta  # main's meta.json kept (the same settings)
    assert entry.missing_chunks() == [1]


def test_main_s_record_reads_as_model_revision_is_reused_and_never_rewritten(main_home, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(MAIN / "out", out)
    before = _digests(out)
    record = read_record(out / "dense" / "collection")
    assert record.config is not None and record.config.encoder is not None
    assert record.config.encoder.model_revision == COMMIT and "revision" not in record.config.as_json()["encoder"]
    step = evaluate_from_record(record.config)
    assert step is not None and step.options.model_revision == COMMIT  # type: ignore[attr-defined]
    # the same run again, into main's folder: reused as it is (same config under the new name), nothing rewritten
    result = run_task(load_folder(MAIN / "collection"), EvaluateStep.of("dense", **MAKE.OPTIONS), out / "dense")
    assert result.metrics.aggregate == record.aggregate
    assert _digests(out) == before


def test_main_s_reranker_record_reads_as_today_s():
    recorded = json.loads((MAIN / "reranker_config.json").read_text())
    assert recorded["revision"] == "v1.0"  # as main wrote it
    today = make_reranker("cross-encoder", **MAKE.RERANKER).config()
    config = RecordedConfig.read({"step": "rerank", "reranker": recorded, "top_k": 10})
    assert config.reranker is not None and config.reranker.as_json() == today
    step = rerank_from_record(config)
    assert step is not None and step.options.model_revision == "v1.0"  # type: ignore[attr-defined]
