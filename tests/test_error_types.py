"""r2med's errors are also the built-in exceptions they are: ``except ValueError`` / ``except
FileNotFoundError`` catch them as they would any library's, with the same one-line message."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from r2med.errors import DataError, NotFound, OptionError, R2MedError


def test_bm25_bad_parameter_is_a_value_error_as_in_bm25s():
    from r2med.retrieval.bm25 import BM25

    try:
        BM25(k1=-1)
    except ValueError as exc:  # what a bm25s user writes
        caught: Exception = exc
    else:  # pragma: no cover - the assertion below reports it
        caught = AssertionError("BM25(k1=-1) raised nothing")
    assert isinstance(caught, OptionError) and isinstance(caught, R2MedError)
    assert str(caught) == "BM25(): k1: expected a finite number >= 0, got -1"  # the one parse's words (r2med.typed)
    with pytest.raises(ValueError, match="unknown BM25 flavour 'x'"):
        BM25(flavour="x")


def test_unknown_names_are_value_errors():
    from r2med.data.tasks import get_task
    from r2med.evaluation.metrics import canonical
    from r2med.retrieval.registry import retriever_meta

    with pytest.raises(ValueError, match=r"unknown task 'biolgy' \(did you mean 'Biology'\?\)"):
        get_task("biolgy")
    with pytest.raises(ValueError, match="unknown retriever 'bm26'"):
        retriever_meta("bm26")
    with pytest.raises(ValueError, match="unknown measure 'nDCG@x'"):
        canonical("nDCG@x")


def test_missing_collection_is_a_file_not_found_error(tmp_path: Path):
    from r2med.data import load_folder

    gone = tmp_path / "gone"
    with pytest.raises(FileNotFoundError) as info:
        load_folder(gone)
    assert isinstance(info.value, NotFound) and str(info.value) == f"{gone}: no such folder"


def test_missing_data_file_is_a_file_not_found_error_naming_it(tmp_path: Path):
    from r2med.data import load_folder

    folder = tmp_path / "coll"
    folder.mkdir()
    (folder / "corpus.jsonl").write_text(json.dumps({"id": "d1", "text": "a"}) + "\n")
    (folder / "query.jsonl").write_text(json.dumps({"id": "q1", "text": "a"}) + "\n")
    with pytest.raises(FileNotFoundError) as info:  # qrels.jsonl is missing
        load_folder(folder)
    assert isinstance(info.value, DataError) and info.value.path.endswith("qrels.jsonl")
    assert str(info.value).endswith("qrels.jsonl: file not found")


def test_bad_data_is_a_value_error(tmp_path: Path):
    from r2med.data.files import read_qrels

    bad = tmp_path / "qrels.tsv"
    bad.write_text("q1\td1\tnot-a-grade\n")
    with pytest.raises(ValueError, match=r"qrels.tsv:1"):
        read_qrels(bad)
