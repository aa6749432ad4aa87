"""Loading collections: R2MED and BEIR folders, TREC qrels, the hub cache, validation errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import shared_collection
from r2med.data import load_demo, load_folder, load_task, read_qrels
from r2med.errors import DataError, R2MedError
from r2med.expansion_name import ExpansionName


def write_jsonl(path: Path, rows) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def make_r2med(root: Path, corpus=None, queries=None, qrels=None) -> Path:
    write_jsonl(
        root / "corpus.jsonl",
        corpus or [{"id": "d1", "text": "aspirin inhibits cox"}, {"id": "d2", "text": "insulin lowers glucose"}],
    )
    write_jsonl(root / "query.jsonl", queries or [{"id": "q1", "text": "what lowers glucose", "answer": "insulin"}])
    write_jsonl(root / "qrels.jsonl", qrels or [{"q_id": "q1", "p_id": "d2", "score": 1}])
    return root


def test_r2med_biology_demo_layout_and_inconsistency():
    coll = load_folder(shared_collection("r2med-biology-demo"))
    assert len(coll.corpus) == 2 and len(coll.queries) == 2
    assert set(coll.query_meta["0"]) >= {"doc_id", "answer", "body_system"}
    assert coll.expansion_files[ExpansionName.parse("hyde:qwen-7b")].name == "query_with_hydoc.jsonl"
    check = coll.qrels_check
    assert check.unknown_docs == 2 and check.unknown_queries == 0 and check.queries_without_qrels == 1


def test_shared_counts():
    coll = load_folder(shared_collection("nfcorpus-test"))
    assert (len(coll.corpus), len(coll.queries), sum(map(len, coll.qrels.values()))) == (3162, 323, 12334)
    med = load_folder(shared_collection("medline-med"))
    assert (len(med.corpus), len(med.queries), sum(map(len, med.qrels.values()))) == (1033, 30, 696)
    assert med.queries["Q1"].startswith("the crystalline lens in vertebrates")


def test_beir_layout(tmp_path):
    root = tmp_path / "mybeir"
    write_jsonl(
        root / "corpus.jsonl",
        [{"_id": "d1", "title": "Aspirin", "text": "inhibits cox"}, {"_id": "d2", "title": "", "text": "insulin"}],
    )
    write_jsonl(root / "queries.jsonl", [{"_id": "q1", "text": "cox"}, {"_id": "q9", "text": "train only"}])
    (root / "qrels").mkdir()
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n", encoding="utf-8")
    coll = load_folder(root)
    assert coll.corpus == {"d1": "Aspirin inhibits cox", "d2": "insulin"}
    assert coll.queries == {"q1": "cox"} and coll.qrels == {"q1": {"d1": 1}}


def test_trec_qrels(tmp_path):
    path = tmp_path / "qrels.txt"
    path.write_text("q1 0 d1 2\nq1 0 d2 0\nq2 0 d3 1\n", encoding="utf-8")
    assert read_qrels(path) == {"q1": {"d1": 2, "d2": 0}, "q2": {"d3": 1}}
    bad = tmp_path / "bad.txt"
    bad.write_text("q1 0 d1 2\nq1 0 d2\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"bad.txt:2: expected 4 fields"):
        read_qrels(bad)


@pytest.mark.parametrize(
    "file,content,message",
    [
        ("corpus.jsonl", b'{"id": "d1", "text": "ok"}\n{"id": "d2", "text": \n', r"corpus.jsonl:2: malformed JSON"),
        ("corpus.jsonl", b'{"id": "d1"}\n', r"corpus.jsonl:1: missing field 'text'"),
        ("corpus.jsonl", b'{"id": "d1", "text": null}\n', r"corpus.jsonl:1: field 'text' is null"),
        (
            "corpus.jsonl",
            b'{"id": "x", "text": "oo\n',
            r"corpus.jsonl:1: malformed JSON at column 21 \(unterminated string",
        ),
        (
            "corpus.jsonl",
            b'{"id": "x", "text": "o\to"}\n',
            r"corpus.jsonl:1: malformed JSON at column \d+ \(invalid control character\)",
        ),
        ("corpus.jsonl", b'{"id": "d1", "text": "caf\xe9"}\n', r"corpus.jsonl:1: not valid UTF-8"),
        ("corpus.jsonl", b"", r"corpus.jsonl: no records"),
        ("query.jsonl", b'{"id": "q1", "text": 5}\n', r"query.jsonl:1: field 'text' must be a string"),
        ("qrels.jsonl", b'{"q_id": "q1", "p_id": "d1", "score": "high"}\n', r"qrels.jsonl:1: relevance 'high'"),
        ("qrels.jsonl", b'{"q_id": "q1", "score": 1}\n', r"qrels.jsonl:1: missing field 'p_id'"),
        ("qrels.jsonl", b"[1, 2]\n", r"qrels.jsonl:1: expected a JSON object"),
    ],
)
def test_validation_errors_name_file_and_line(tmp_path, file, content, message):
    root = make_r2med(tmp_path / "c")
    (root / file).write_bytes(content)
    with pytest.raises(DataError, match=message):
        load_folder(root)


def test_not_a_collection(tmp_path):
    with pytest.raises(DataError, match="not a collection folder"):
        load_folder(tmp_path)
    with pytest.raises(R2MedError, match="no such folder"):
        load_folder(tmp_path / "missing")


def test_builtin_demo_is_consistent():
    coll = load_demo()
    assert len(coll.corpus) >= 30 and len(coll.queries) >= 10
    check = coll.qrels_check
    assert (check.unknown_docs, check.unknown_queries, check.queries_without_qrels) == (0, 0, 0)
    assert ExpansionName("hyde", "demo-llm") in coll.expansion_files


def _task_files(source: Path) -> dict[str, bytes]:
    files = {name: (source / name).read_bytes() for name in ("corpus.jsonl", "query.jsonl", "qrels.jsonl")}
    files["hyde/qwen-7b/query_with_hydoc.jsonl"] = b'{"id": "q1", "text": "t", "hy_doc": "h"}\n'
    return files


def test_hub_loading_from_a_filled_cache(hf_cache, tmp_path):
    from hub_server import fill_hf_cache
    from r2med.data.hub import download_expansion
    from r2med.data.tasks import get_task

    src = make_r2med(tmp_path / "src")
    fill_hf_cache(hf_cache, "R2MED/Biology", _task_files(src), get_task("Biology").revision)
    coll = load_task("biology")  # case-insensitive task name, hub source, offline cache
    assert coll.name == "Biology" and coll.source == f"hf://datasets/R2MED/Biology@{get_task('Biology').revision}"
    assert coll.qrels == {"q1": {"d2": 1}}
    path = download_expansion("Biology", "hyde", "qwen_7b")
    assert path.parts[-3:] == ("hyde", "qwen-7b", "query_with_hydoc.jsonl")


def test_hub_unavailable_is_one_clear_error():
    from r2med.data.hub import HubUnavailable

    with pytest.raises(HubUnavailable, match=r"offline mode is set .* (is|are) not in the Hugging Face cache"):
        load_task("IIYi-Clinical")


def test_unknown_task_and_expansion_split():
    from r2med.data.hub import expansion_path

    with pytest.raises(R2MedError, match="unknown task 'Cardiology'"):
        load_task("Cardiology")
    assert expansion_path("hyde", "huatuo_o1_70b") == "hyde/huatuo-o1-70b/query_with_hydoc.jsonl"
    assert expansion_path("search-r1", "qwen-7b-ins") == "search-r1/qwen-7b-ins/query_with_hydoc.jsonl"
    with pytest.raises(R2MedError, match="unknown hyde split 'gpt5'"):
        expansion_path("hyde", "gpt5")


def test_ids_with_whitespace_and_non_finite_grades_are_data_errors(tmp_path):
    """A query id may hold no whitespace (a TREC line's first field); a document id may hold spaces inside
    (BRIGHT's ids do: issue 32), not at either end."""
    root = make_r2med(tmp_path / "c", queries=[{"id": "q 1", "text": "x"}])
    with pytest.raises(DataError, match=r"query.jsonl:1: field 'id' = 'q 1' contains whitespace"):
        load_folder(root)
    root = make_r2med(tmp_path / "e", corpus=[{"id": " d1", "text": "x"}])
    with pytest.raises(DataError, match=r"corpus.jsonl:1: field 'id' = ' d1' starts or ends with whitespace"):
        load_folder(root)
    assert "d 1" in load_folder(make_r2med(tmp_path / "f", corpus=[{"id": "d 1", "text": "x"}])).corpus
    root = make_r2med(tmp_path / "d")
    (root / "qrels.jsonl").write_text('{"q_id": "q1", "p_id": "d2", "score": NaN}\n', encoding="utf-8")
    with pytest.raises(DataError, match=r"qrels.jsonl:1: relevance nan is not an integer grade"):
        load_folder(root)
