"""Cached BM25 indexes: every file has a CRC-32 in params.json; a damaged index is detected, warned
about and rebuilt, and the scores equal a fresh build's."""

from __future__ import annotations

import json
import logging
import zlib

import numpy as np
import pytest

from conftest import shared_collection
from r2med import BM25, load_folder
from r2med.retrieval.bm25 import IndexDamaged


@pytest.fixture(scope="module")
def medline():
    return load_folder(shared_collection("medline-med"))


def _fresh_scores(coll):
    return BM25(cache=False).index(coll.corpus).search(coll.queries, k=20)


def _damage_data(folder):
    data = folder / "data.npy"
    raw = bytearray(data.read_bytes())
    middle = len(raw) // 2
    raw[middle : middle + 4000] = bytes(4000)  # same size, 4 KB of weights zeroed
    data.write_bytes(bytes(raw))


def _damage_vocab(folder):
    vocab = json.loads((folder / "vocab.json").read_text(encoding="utf-8"))
    vocab[0], vocab[1] = vocab[1], vocab[0]  # still valid JSON, wrong term ids
    (folder / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")


def _truncate_indices(folder):
    path = folder / "indices.npy"
    path.write_bytes(path.read_bytes()[:-100])


def _change_params(folder):
    params = json.loads((folder / "params.json").read_text(encoding="utf-8"))
    params["k1"] = 1.5
    (folder / "params.json").write_text(json.dumps(params), encoding="utf-8")


def _change_avgdl(folder, avgdl=5.0):
    """What issue 21 measured: avgdl edited in params.json changed nDCG@10 (64.71 -> 63.76) with no warning."""
    params = json.loads((folder / "params.json").read_text(encoding="utf-8"))
    params["avgdl"] = avgdl
    (folder / "params.json").write_text(json.dumps(params, indent=1), encoding="utf-8")


def _nudge_avgdl(folder):
    params = json.loads((folder / "params.json").read_text(encoding="utf-8"))
    _change_avgdl(folder, params["avgdl"] * 1.01)


def _garble_params(folder):
    (folder / "params.json").write_text("{not json", encoding="utf-8")


def _nest_params(folder):
    """Nested deeper than Python's json parser goes: RecursionError, not ValueError (issue 27, item 11)."""
    (folder / "params.json").write_text("[" * 200_000 + "]" * 200_000, encoding="utf-8")


def test_checksums_are_written_for_every_file(medline):
    bm25 = BM25().index(medline.corpus, corpus_fingerprint=medline.fingerprint)
    params = json.loads((bm25.index_path / "params.json").read_text(encoding="utf-8"))
    files = sorted(p.name for p in bm25.index_path.iterdir() if p.name != "params.json")
    assert (
        sorted(params["crc32"])
        == files
        == ["data.npy", "doc_ids.json", "idf.npy", "indices.npy", "indptr.npy", "vocab.json"]
    )
    for name in files:  # independent check: zlib over the file as read from disk
        assert params["crc32"][name] == f"{zlib.crc32((bm25.index_path / name).read_bytes()):08x}"


@pytest.mark.parametrize(
    "damage",
    [
        _damage_data,
        _damage_vocab,
        _truncate_indices,
        _change_params,
        _garble_params,
        _nest_params,
        _change_avgdl,
        _nudge_avgdl,
    ],
)
def test_a_damaged_index_is_rebuilt_with_a_warning(medline, caplog, damage):
    fresh = _fresh_scores(medline)
    first = BM25().index(medline.corpus, corpus_fingerprint=medline.fingerprint)
    damage(first.index_path)
    with caplog.at_level(logging.WARNING):
        again = BM25().index(medline.corpus, corpus_fingerprint=medline.fingerprint)
    assert not again.built_from_cache
    assert any("damaged or unreadable" in r.getMessage() and "rebuilding" in r.getMessage() for r in caplog.records)
    assert again.search(medline.queries, k=20) == fresh
    third = BM25().index(medline.corpus, corpus_fingerprint=medline.fingerprint)  # the rewritten index is sound
    assert third.built_from_cache and third.search(medline.queries, k=20) == fresh


def test_damage_is_visible_without_checksums_so_the_check_matters(medline):
    """Same-size damage to the weights changes scores silently when nothing checks: the case being guarded."""
    bm25 = BM25().index(medline.corpus, corpus_fingerprint=medline.fingerprint)
    _damage_data(bm25.index_path)
    with pytest.raises(IndexDamaged, match=r"data\.npy does not match its checksum"):
        BM25.load(bm25.index_path)
    raw = np.load(bm25.index_path / "data.npy")
    assert not np.array_equal(raw, bm25.weights_t.data)


def test_a_sound_index_loads_as_it_was_saved(medline):
    built = BM25().index(medline.corpus, corpus_fingerprint=medline.fingerprint)
    loaded = BM25.load(built.index_path)
    for name in ("indptr", "indices", "data"):
        assert np.array_equal(getattr(loaded.weights_t, name), getattr(built.weights_t, name))
    assert np.array_equal(loaded.idf, built.idf) and loaded.vocab == built.vocab and loaded.doc_ids == built.doc_ids
    assert loaded.search(medline.queries, k=20) == built.search(medline.queries, k=20)


def test_params_json_is_checksummed_so_an_edited_avgdl_is_caught(medline):
    """Without the check, the edited avgdl is used (the paper flavour weighs queries with it) and scores change."""
    bm25 = BM25().index(medline.corpus, corpus_fingerprint=medline.fingerprint)
    params = json.loads((bm25.index_path / "params.json").read_text(encoding="utf-8"))
    fields = {k: v for k, v in params.items() if k != "params_crc32"}  # independent: zlib over the canonical JSON
    assert params["params_crc32"] == f"{zlib.crc32(json.dumps(fields, sort_keys=True).encode()):08x}"
    _change_avgdl(bm25.index_path)
    with pytest.raises(IndexDamaged, match=r"params\.json does not match its checksum"):
        BM25.load(bm25.index_path)
    edited = BM25()
    edited.__dict__.update({k: getattr(bm25, k) for k in ("doc_ids", "vocab", "idf", "weights_t")})
    edited.avgdl = 5.0
    assert edited.search(medline.queries, k=20) != bm25.search(medline.queries, k=20)
