"""BRIGHT's tasks in r2med: names, loading from the hub at the pinned commit (offline too), validation, long documents,
reasoning query sets.

References: BRIGHT's real examples rows (../shared/data/bright, Anserini's copy of the hub's rows; skipped when
absent) laid out as the hub's parquet files by tests/bright_hub.py, read back here with pyarrow independently of
r2med; the pin mteb uses (an independent copy in tests/bright_hub.py); BRIGHT's run.py for what a task reads
(examples' ``query``, ``excluded_ids``, ``gold_ids`` / ``gold_ids_long``, documents' ``id``/``content``).
"""

from __future__ import annotations

import io
import sys

import pytest

from bright_hub import (
    BRIGHT_PIN,
    BRIGHT_REPO,
    LONG_TASKS,
    TASKS,
    bright_files,
    fill_bright_cache,
    have_shared_bright,
    hub_path,
    read_parquet,
)
from r2med.errors import DataError, MissingExtraError, OptionError

pytestmark = [pytest.mark.shared]
pytest.importorskip("pyarrow")


@pytest.fixture(scope="module")
def files() -> dict[str, bytes]:
    if not have_shared_bright():
        pytest.skip("../shared/data/bright is not available")
    return bright_files(TASKS, queries=2, distractors=10)


@pytest.fixture
def cached(files, hf_cache):
    fill_bright_cache(hf_cache, files)
    return files


# -- names -------------------------------------------------------------------------------------------------------


def test_task_names_aliases_and_the_old_meaning_of_all():
    from r2med.data.names import parse_tasks
    from r2med.data.tasks import TASK_NAMES

    assert parse_tasks("all") == parse_tasks("r2med") == parse_tasks(None) == list(TASK_NAMES)
    assert parse_tasks("bright") == [f"bright:{t}" for t in TASKS]
    assert parse_tasks("bright:long") == [f"bright:{t}:long" for t in LONG_TASKS]
    assert parse_tasks("bright", long_documents=True) == [f"bright:{t}:long" for t in LONG_TASKS]
    assert parse_tasks("biology,bright:Earth-Science,BRIGHT:theoremqa-questions") == [
        "Biology",
        "bright:earth_science",
        "bright:theoremqa_questions",
    ]
    assert parse_tasks("r2med,bright")[:8] == list(TASK_NAMES) and len(parse_tasks("r2med,bright")) == 20
    with pytest.raises(OptionError, match=r"'leetcode' has no long documents"):
        parse_tasks("bright:leetcode", long_documents=True)
    with pytest.raises(OptionError, match=r"Biology is not a BRIGHT task"):
        parse_tasks("Biology", long_documents=True)
    with pytest.raises(OptionError, match=r"unknown BRIGHT task 'biolgy' \(did you mean 'biology'\?\)"):
        parse_tasks("bright:biolgy")
    with pytest.raises(OptionError, match=r"unknown task 'brigth' \(did you mean 'bright'\?\)"):
        parse_tasks("brigth")


def test_revision_pairs_name_bright_tasks_and_long_settings_read_their_tasks_revision():
    from r2med.data.bright import revision_for
    from r2med.data.hub import parse_revision

    assert parse_revision("bright:Earth-Science=main,Biology=abc") == (
        None,
        {"bright:earth_science": "main", "Biology": "abc"},
    )
    assert revision_for("bright:biology:long", "bright:biology=main") == ("main", "")
    pin = (BRIGHT_PIN, "the commit r2med pins for BRIGHT (the data of its graded figures)")
    assert revision_for("bright:pony") == pin
    with pytest.raises(OptionError, match="unknown BRIGHT task"):
        parse_revision("bright:nosuch=main")


def test_task_folders_have_no_colon(tmp_path):
    from r2med.infra.containment import task_folder

    assert task_folder(tmp_path, "bright:earth_science").name == "bright-earth_science"
    assert task_folder(tmp_path, "bright:biology:long").name == "bright-biology-long"
    assert task_folder(tmp_path, "Biology").name == "Biology"


# -- loading -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("task", TASKS)
def test_every_task_loads_at_the_pinned_commit_offline(cached, task):
    """From a standard Hugging Face cache laid out by hand, HF_HUB_OFFLINE=1 (the autouse fixture): the rows as
    pyarrow reads them from the same files."""
    from r2med.data import load_task

    rows = read_parquet(cached[hub_path("examples", task)])
    docs = read_parquet(cached[hub_path("documents", task)])
    coll = load_task(f"bright:{task}")
    assert coll.name == f"bright:{task}" and coll.benchmark == "bright"
    assert coll.revision == BRIGHT_PIN and coll.source == f"hf://datasets/{BRIGHT_REPO}@{BRIGHT_PIN}"
    assert coll.queries == {r["id"]: r["query"] for r in rows}
    assert coll.corpus == {d["id"]: d["content"] for d in docs}
    assert coll.qrels == {r["id"]: dict.fromkeys(r["gold_ids"], 1) for r in rows if r["gold_ids"]}
    for r in rows:
        assert coll.exclusions.get(r["id"]) == frozenset(e for e in r["excluded_ids"] if e != "N/A")
    if task in ("leetcode", "aops", "theoremqa_questions"):
        assert coll.exclusions and all(coll.exclusions.get(r["id"]) for r in rows)
    else:  # ["N/A"] or []: none
        assert not coll.exclusions


def test_spaced_document_ids_are_valid(cached):
    from r2med.data import load_task

    coll = load_task("bright:biology")
    assert any(" " in d for d in coll.corpus)  # the emulator's spaced distractor ids, kept whole


def test_long_documents_are_the_corpus_and_gold_ids_long_the_judgments(cached):
    from r2med.data import load_task
    from r2med.data.benchmarks import protocol_of

    rows = read_parquet(cached[hub_path("examples", "pony")])
    long_docs = read_parquet(cached[hub_path("long_documents", "pony")])
    coll = load_task("bright:pony:long")
    assert coll.name == "bright:pony:long"
    assert coll.corpus == {d["id"]: d["content"] for d in long_docs}
    assert coll.qrels == {r["id"]: dict.fromkeys(r["gold_ids_long"], 1) for r in rows if r["gold_ids_long"]}
    protocol = protocol_of(coll)
    assert protocol.headline.trec == "recall_1" and protocol.judgments == "gold_ids_long"
    assert protocol.documents == "long_documents"
    with pytest.raises(OptionError, match="no long documents"):
        load_task("bright:aops:long")


def test_reasoning_sets_replace_the_query_and_keep_the_examples_judgments(cached):
    from r2med.data import load_task
    from r2med.expansion.precomputed import expansion_builder

    coll = load_task("bright:leetcode")
    builder = expansion_builder("reason:GPT4")
    queries = builder(coll, "lexical")
    rows = read_parquet(cached[hub_path("gpt4_reason", "leetcode")])
    assert queries == {r["id"]: r["query"] for r in rows}  # the LLM's reasoning alone: no combination
    assert all(queries[q] != coll.queries[q] for q in coll.queries)
    assert builder.label == "reason-gpt4" and builder.describe(coll)["rule"] == "replace"
    assert expansion_builder("reason:gemini-1.0").llm == "Gemini-1.0"
    with pytest.raises(OptionError, match=r"no BRIGHT reasoning query set 'gpt5'"):
        expansion_builder("reason:gpt5")


def test_judgments_only_reads_the_examples_file_alone(files, hf_cache):
    """Only the examples file is in the cache: read for its judgments, the task loads; whole, it is refused
    before anything is read, naming the documents file."""
    from r2med.data import load_task
    from r2med.data.resolve import TaskRef
    from r2med.errors import R2MedError

    fill_bright_cache(hf_cache, {hub_path("examples", "leetcode"): files[hub_path("examples", "leetcode")]})
    coll = TaskRef.on_hub("bright:leetcode").load(corpus=False)
    assert not coll.corpus_read and coll.corpus == {} and coll.dataset_fingerprint is None
    assert coll.qrels and coll.exclusions
    with pytest.raises(R2MedError, match=r"'documents/leetcode-00000-of-00001.parquet'"):
        load_task("bright:leetcode")


# -- validation: one line naming the file and the row ---------------------------------------------------------


def _examples(rows: list[dict], columns=("query", "id", "excluded_ids", "gold_ids_long", "gold_ids")) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    lists = {"excluded_ids", "gold_ids_long", "gold_ids"}
    schema = pa.schema([(c, pa.list_(pa.string()) if c in lists else pa.string()) for c in columns])
    out = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), out)
    return out.getvalue()


GOOD = {"query": "why?", "id": "0", "excluded_ids": ["N/A"], "gold_ids_long": ["N/A"], "gold_ids": ["a.txt"]}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"id": None}, r"row 2: id is missing \(null\)"),
        ({"id": "1 2"}, r"row 2: id '1 2' contains whitespace"),
        ({"id": "1\x002"}, r"row 2: id .* holds a control character \('\\x00' at position 1\)"),
        ({"query": None}, r"row 2: query is missing \(null\)"),
        ({"gold_ids": ["ok.txt", "bad\x07.txt"]}, r"row 2: gold_ids\[1\] .* holds a control character"),
        ({"gold_ids": ["x.txt"], "excluded_ids": ["x.txt"]}, r"row 2: query '1': 'x.txt' is both a gold id and an"),
        ({"excluded_ids": None}, r"row 2: excluded_ids is missing \(null\)"),
        ({"gold_ids": [""]}, r"row 2: gold_ids\[0\] is empty"),
    ],
)
def test_bad_rows_are_one_line_naming_the_file_and_row(tmp_path, change, message):
    from r2med.data.bright import read_examples

    path = tmp_path / "examples.parquet"
    path.write_bytes(_examples([GOOD, {**GOOD, "id": "1", **change}]))
    with pytest.raises(DataError, match=message) as err:
        read_examples(path)
    assert str(err.value).startswith(f"{path}: row 2: ") and "\n" not in str(err.value)


def test_no_exclusion_markers_spaced_ids_and_repeated_gold_ids(tmp_path):
    from r2med.data.bright import read_examples

    path = tmp_path / "examples.parquet"
    rows = [
        {**GOOD, "id": "0", "excluded_ids": ["N/A"]},
        {**GOOD, "id": "1", "excluded_ids": [], "gold_ids": ["a b/c d.txt", "a b/c d.txt", "e.txt"]},
        {**GOOD, "id": "2", "excluded_ids": ["x y.txt", "z.txt"]},
    ]
    path.write_bytes(_examples(rows))
    ex = read_examples(path)
    assert ex.qrels["1"] == {"a b/c d.txt": 1, "e.txt": 1} and ex.repeated_gold == 1
    assert len(ex.exclusions) == 1 and ex.exclusions.get("2") == frozenset({"x y.txt", "z.txt"})
    with pytest.raises(DataError, match=r"row 2: query '1' lists a gold id twice \(--strict"):
        read_examples(path, strict=True)


def test_a_missing_column_and_a_file_that_is_no_parquet(tmp_path):
    from r2med.data.bright import read_documents, read_examples

    path = tmp_path / "examples.parquet"
    path.write_bytes(_examples([GOOD], columns=("query", "id", "gold_ids")))
    with pytest.raises(DataError, match=r"no column 'excluded_ids' \(it has: query, id, gold_ids\)"):
        read_examples(path)
    junk = tmp_path / "documents.parquet"
    junk.write_bytes(b"not parquet at all")
    with pytest.raises(DataError, match=r"not a readable parquet file"):
        read_documents(junk)


def test_a_missing_pyarrow_names_the_extra(tmp_path, monkeypatch):
    from r2med.data.bright import read_documents

    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    with pytest.raises(MissingExtraError, match=r"pip install 'r2med\[bright\]'"):
        read_documents(tmp_path / "documents.parquet")
