"""A hostile pass over what this round added (issue 27, "done when"): BRIGHT's parquet loaders, ``--qrels FILE``,
``bright:<task>:long`` and ``-e reason:<llm>`` names, importing BRIGHT's runs (spaced TREC ids, JSON score files),
experiment files (TOML, ``[[imports]]``, ``[report] data_dir``), options through the CLI, TOML and Python, the
hub-verified memo, ``expand`` claiming its answer folder, and an import interrupted mid-write.

Each attempt is what a user meets: a file damaged, truncated, of the wrong types, with hostile ids, or two runs at
once.  The promise checked for each: one line naming the file and row (or the option / key), exit 2 at the CLI,
and nothing written half-way (every file under the test folder byte for byte as before); or, where the input is
valid, the result an independent reading of it gives.  The count of attempts and of what held is in
docs/reliability.md ("Hardening, third pass: a hostile pass over this round's additions").
"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest

from conftest import run_r2med

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

BRIGHT_REPO = "xlangai/BRIGHT"
#: r2med's pin of BRIGHT, the commit mteb's BRIGHT v1.1 tasks read (mteb@1fb1d57
#: mteb/tasks/retrieval/eng/bright_v1_1_retrieval.py; an independent copy, as tests/bright_hub.py keeps one); it holds
#: examples and documents
BRIGHT_PIN = "3066d29c9651a576c8aba4832d249807b181ecae"
LISTS = ("excluded_ids", "gold_ids_long", "gold_ids")
EXAMPLE_COLUMNS = ("query", "id", "excluded_ids", "gold_ids_long", "gold_ids")


def parquet(rows: list[dict], schema: pa.Schema | None = None) -> bytes:
    out = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), out)
    return out.getvalue()


def examples_schema(**types: pa.DataType) -> pa.Schema:
    return pa.schema([(c, types.get(c, pa.list_(pa.string()) if c in LISTS else pa.string())) for c in EXAMPLE_COLUMNS])


GOOD_ROWS = [
    {
        "query": "why do moths fly to light",
        "id": "0",
        "excluded_ids": ["N/A"],
        "gold_ids_long": ["N/A"],
        "gold_ids": ["moth/light_1.txt"],
    },
    {
        "query": "what is a cell membrane",
        "id": "1",
        "excluded_ids": ["cell/other.txt"],
        "gold_ids_long": ["N/A"],
        "gold_ids": ["cell/membrane page.txt"],
    },
]
GOOD_DOCS = [
    {"id": "moth/light_1.txt", "content": "moths fly to light at night"},
    {"id": "cell/membrane page.txt", "content": "a cell membrane holds the cell"},
    {"id": "cell/other.txt", "content": "what is a cell membrane: the same question elsewhere"},
    {"id": "river/soil.txt", "content": "soil and river water"},
]


def one_line(proc, code: int = 2) -> str:
    assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in proc.stderr, proc.stderr
    others = [
        line
        for line in proc.stderr.splitlines()
        if line.strip() and not line.startswith(("error:", "INFO ", "WARNING ", "Loading weights"))
    ]
    assert not others, proc.stderr  # progress and warnings aside, one line says what is wrong
    return errors[0]


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


# -- BRIGHT's parquet files, read directly ----------------------------------------------------------------------


def _truncated(data: bytes) -> bytes:
    return data[: len(data) // 2]


def _no_footer(data: bytes) -> bytes:
    return data[:-8]


def _bad_magic(data: bytes) -> bytes:
    return data[:-4] + b"XXXX"


def _footer_length_lies(data: bytes) -> bytes:
    return data[:-8] + (10**9).to_bytes(4, "little") + b"PAR1"


def _not_utf8_ids() -> bytes:
    """Examples whose second id is bytes that are no UTF-8 in a ``string`` column (pyarrow writes what it is given)."""
    table = pa.Table.from_pylist(GOOD_ROWS, schema=examples_schema())
    ids = pa.array([b"0", b"\xff\xfe1"], pa.binary()).view(pa.string())
    return _write(table.set_column(table.schema.get_field_index("id"), "id", ids))


def _write(table: pa.Table) -> bytes:
    out = io.BytesIO()
    pq.write_table(table, out)
    return out.getvalue()


EXAMPLE_FAULTS = [
    ("id-not-utf8", _not_utf8_ids, r"row 2: id is not valid UTF-8 \(invalid start byte at byte 0\)"),
    # (id, bytes of the file, the message)
    ("empty-file", lambda: b"", r"not a readable parquet file"),
    ("truncated", lambda: _truncated(parquet(GOOD_ROWS, examples_schema())), r"not a readable parquet file"),
    ("no-footer", lambda: _no_footer(parquet(GOOD_ROWS, examples_schema())), r"not a readable parquet file"),
    ("bad-magic", lambda: _bad_magic(parquet(GOOD_ROWS, examples_schema())), r"not a readable parquet file"),
    ("footer-lies", lambda: _footer_length_lies(parquet(GOOD_ROWS, examples_schema())), r"not a readable parquet"),
    ("json-not-parquet", lambda: json.dumps(GOOD_ROWS).encode(), r"not a readable parquet file"),
    (
        "id-int64",
        lambda: parquet([{**r, "id": i} for i, r in enumerate(GOOD_ROWS)], examples_schema(id=pa.int64())),
        r"row 1: id must be text, got int",
    ),
    (
        "excluded-text-not-list",
        lambda: parquet([{**r, "excluded_ids": "N/A"} for r in GOOD_ROWS], examples_schema(excluded_ids=pa.string())),
        r"row 1: excluded_ids must be a list of ids, got str",
    ),
    (
        "gold-list-of-int",
        lambda: parquet([{**r, "gold_ids": [7]} for r in GOOD_ROWS], examples_schema(gold_ids=pa.list_(pa.int64()))),
        r"row 1: gold_ids\[0\] must be text, got int",
    ),
    (
        "gold-nested-lists",
        lambda: parquet(
            [{**r, "gold_ids": [["a"]]} for r in GOOD_ROWS], examples_schema(gold_ids=pa.list_(pa.list_(pa.string())))
        ),
        r"row 1: gold_ids\[0\] must be text, got list",
    ),
    (
        "id-struct",
        lambda: parquet(
            [{**r, "id": {"x": "1"}} for r in GOOD_ROWS], examples_schema(id=pa.struct([("x", pa.string())]))
        ),
        r"row 1: id must be text, got dict",
    ),
    (
        "query-binary",
        lambda: parquet([{**r, "query": b"why"} for r in GOOD_ROWS], examples_schema(query=pa.binary())),
        r"row 1: query must be text, got bytes",
    ),
    ("zero-rows", lambda: parquet([], examples_schema()), r"no rows \(an empty examples file\)"),
    ("id-newline", lambda: parquet([GOOD_ROWS[0], {**GOOD_ROWS[1], "id": "1\n"}], examples_schema()), r"row 2: id"),
    ("id-u2028", lambda: parquet([GOOD_ROWS[0], {**GOOD_ROWS[1], "id": "1\u20282"}], examples_schema()), r"row 2: id"),
    ("id-tab", lambda: parquet([GOOD_ROWS[0], {**GOOD_ROWS[1], "id": "1\t2"}], examples_schema()), r"row 2: id"),
    ("id-space", lambda: parquet([GOOD_ROWS[0], {**GOOD_ROWS[1], "id": "1 2"}], examples_schema()), r"row 2: id"),
    ("id-empty", lambda: parquet([GOOD_ROWS[0], {**GOOD_ROWS[1], "id": ""}], examples_schema()), r"row 2: id is empty"),
    (
        "gold-leading-space",
        lambda: parquet([GOOD_ROWS[0], {**GOOD_ROWS[1], "gold_ids": [" a.txt"]}], examples_schema()),
        r"row 2: gold_ids\[0\]",
    ),
    (
        "excluded-nul",
        lambda: parquet([GOOD_ROWS[0], {**GOOD_ROWS[1], "excluded_ids": ["a\x00b"]}], examples_schema()),
        r"row 2: excluded_ids\[0\] .* control character",
    ),
    (
        "gold-also-excluded",
        lambda: parquet(
            [GOOD_ROWS[0], {**GOOD_ROWS[1], "excluded_ids": ["g.txt"], "gold_ids": ["g.txt"]}], examples_schema()
        ),
        r"row 2: query '1': 'g.txt' is both a gold id and an excluded id",
    ),
    (
        "huge-id",
        lambda: parquet([GOOD_ROWS[0], {**GOOD_ROWS[1], "id": "x" * 1_000_000 + "\n"}], examples_schema()),
        r"row 2: id .*1,000,001 characters",
    ),
    (
        "gold-null-entry",
        lambda: parquet([GOOD_ROWS[0], {**GOOD_ROWS[1], "gold_ids": ["a.txt", None]}], examples_schema()),
        r"row 2: gold_ids\[1\] is missing \(null\)",
    ),
    (
        "missing-column",
        lambda: parquet([{k: v for k, v in r.items() if k != "gold_ids"} for r in GOOD_ROWS]),
        r"no column 'gold_ids'",
    ),
]


@pytest.mark.parametrize(("make", "message"), [c[1:] for c in EXAMPLE_FAULTS], ids=[c[0] for c in EXAMPLE_FAULTS])
def test_a_hostile_examples_file_is_one_line_naming_the_file(tmp_path, make, message):
    from r2med.data.bright import read_examples
    from r2med.errors import DataError

    path = tmp_path / "examples" / "biology-00000-of-00001.parquet"
    path.parent.mkdir()
    path.write_bytes(make())
    with pytest.raises(DataError, match=message) as err:
        read_examples(path)
    text = str(err.value)
    assert text.startswith(f"{path}: ") and "\n" not in text and len(text) < 2_000, text


def test_a_corrupted_page_is_an_error_or_the_rows_never_a_crash(tmp_path):
    """Bytes flipped inside the data pages (the footer intact): pyarrow either refuses the file (one line) or reads
    values, which the row checks then hold to the id rule; never a traceback of another kind."""
    from r2med.data.bright import read_documents
    from r2med.errors import DataError

    data = bytearray(parquet(GOOD_DOCS * 50))
    path = tmp_path / "documents.parquet"
    for at in range(8, len(data) // 2, max(1, len(data) // 40)):
        flipped = bytearray(data)
        flipped[at] ^= 0xFF
        path.write_bytes(bytes(flipped))
        try:
            corpus = read_documents(path)
        except DataError as exc:
            assert str(exc).startswith(f"{path}: ") and "\n" not in str(exc)
        else:
            assert all(isinstance(k, str) and isinstance(v, str) for k, v in corpus.items())


DOCUMENT_FAULTS = [
    (
        "content-int",
        [{"id": "a", "content": 1}],
        pa.schema([("id", pa.string()), ("content", pa.int64())]),
        r"row 1: content must be text, got int",
    ),
    ("content-null", [{"id": "a", "content": None}], None, r"row 1: content is missing \(null\)"),
    ("id-null", [{"id": "a", "content": "x"}, {"id": None, "content": "y"}], None, r"row 2: id is missing"),
    ("id-trailing-space", [{"id": "a ", "content": "x"}], None, r"row 1: id 'a '"),
    ("id-del", [{"id": "a\x7f", "content": "x"}], None, r"row 1: id .* control character"),
    ("id-c1", [{"id": "a\x85", "content": "x"}], None, r"row 1: id .* control character"),
    ("no-content-column", [{"id": "a", "text": "x"}], None, r"no column 'content' \(it has: id, text\)"),
    ("zero-rows", [], pa.schema([("id", pa.string()), ("content", pa.string())]), r"no rows"),
]


@pytest.mark.parametrize(
    ("rows", "schema", "message"), [c[1:] for c in DOCUMENT_FAULTS], ids=[c[0] for c in DOCUMENT_FAULTS]
)
def test_a_hostile_documents_file_is_one_line_naming_the_file(tmp_path, rows, schema, message):
    from r2med.data.bright import read_documents
    from r2med.errors import DataError

    path = tmp_path / "documents.parquet"
    path.write_bytes(parquet(rows, schema))
    with pytest.raises(DataError, match=message) as err:
        read_documents(path)
    assert str(err.value).startswith(f"{path}: ") and "\n" not in str(err.value)


def test_valid_but_unusual_parquet_reads_as_pyarrow_reads_it(tmp_path):
    """Dictionary-encoded and large types, unicode and spaced ids, several row groups: read as pyarrow reads them."""
    from r2med.data.bright import read_documents, read_examples

    docs = [{"id": f"é/页 {i}.txt", "content": f"text {i} ✓"} for i in range(30)]
    table = pa.Table.from_pylist(docs, schema=pa.schema([("id", pa.large_string()), ("content", pa.string())]))
    table = table.set_column(0, "id", pa.compute.dictionary_encode(table.column("id")))
    path = tmp_path / "documents.parquet"
    pq.write_table(table, path, row_group_size=7)
    assert read_documents(path) == {d["id"]: d["content"] for d in docs}
    rows = [{**r, "id": f"q{r['id']}é"} for r in GOOD_ROWS]
    schema = examples_schema(gold_ids=pa.large_list(pa.large_string()))
    ex_path = tmp_path / "examples.parquet"
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), ex_path, row_group_size=1)
    ex = read_examples(ex_path)
    assert ex.qrels == {r["id"]: dict.fromkeys(r["gold_ids"], 1) for r in rows}
    assert ex.exclusions.get("q1é") == frozenset({"cell/other.txt"})


def test_a_reasoning_file_missing_a_query_or_of_the_wrong_types_is_one_line(tmp_path):
    from r2med.data.bright import Examples, read_examples, read_reasoning
    from r2med.errors import DataError

    ex_path = tmp_path / "examples.parquet"
    ex_path.write_bytes(parquet(GOOD_ROWS, examples_schema()))
    ex: Examples = read_examples(ex_path)
    path = tmp_path / "gpt4_reason.parquet"
    path.write_bytes(parquet(GOOD_ROWS[:1], examples_schema()))
    with pytest.raises(DataError, match=r"1 of the task's 2 queries have no reasoning \(first: '1'\)"):
        read_reasoning(path, ex)
    path.write_bytes(parquet([{**r, "query": None} for r in GOOD_ROWS], examples_schema()))
    with pytest.raises(DataError, match=r"row 1: query is missing \(null\)"):
        read_reasoning(path, ex)
    extra = [*GOOD_ROWS, {**GOOD_ROWS[0], "id": "99", "query": "not a query of the task"}]
    path.write_bytes(parquet([{**r, "query": f"reasoning {r['id']}"} for r in extra], examples_schema()))
    assert read_reasoning(path, ex) == {"0": "reasoning 0", "1": "reasoning 1"}  # a row no query has: unused


# -- a BRIGHT task from a Hugging Face cache laid out by hand --------------------------------------------------


def hub_files(examples: bytes | None = None, documents: bytes | None = None) -> dict[str, bytes]:
    return {
        "examples/biology-00000-of-00001.parquet": examples or parquet(GOOD_ROWS, examples_schema()),
        "documents/biology-00000-of-00001.parquet": documents or parquet(GOOD_DOCS),
    }


@pytest.fixture
def biology(hf_cache):
    from hub_server import fill_hf_cache

    fill_hf_cache(hf_cache, BRIGHT_REPO, hub_files(), BRIGHT_PIN, refs=("main",))
    return hf_cache


def test_excluded_ids_naming_unknown_documents_are_counted_and_never_scored(hf_cache, tmp_path, caplog):
    """An excluded id the corpus lacks: a warning counting it (BRIGHT's code stops with a KeyError); the run never
    holds an excluded id; an imported run naming the excluded document has it removed before scoring."""
    from hub_server import fill_hf_cache

    rows = [GOOD_ROWS[0], {**GOOD_ROWS[1], "excluded_ids": ["cell/other.txt", "no/such doc.txt"]}]
    fill_hf_cache(hf_cache, BRIGHT_REPO, hub_files(parquet(rows, examples_schema())), BRIGHT_PIN, refs=("main",))
    out = tmp_path / "out"
    res = run_r2med("evaluate", "-r", "bm25", "--tasks", "bright:biology", "-o", str(out))
    assert res.returncode == 0, res.stderr
    assert "1 excluded (query, document) pair(s) name no document of the corpus" in res.stderr
    from r2med.runs.run import read_trec

    run = read_trec(out / "bm25" / "bright-biology" / "run.trec")
    assert "cell/other.txt" not in run["1"] and "cell/other.txt" in run["0"]
    # an imported run that ranks the excluded document first: removed and counted
    trec = tmp_path / "released.trec"
    trec.write_text("1 Q0 cell/other.txt 1 9.0 x\n1 Q0 cell/membrane page.txt 2 8.0 x\n0 Q0 moth/light_1.txt 1 1 x\n")
    imp = run_r2med("import", str(trec), "--name", "rel", "-t", "bright:biology", "-o", str(out))
    assert imp.returncode == 0, imp.stderr
    metrics = json.loads((out / "rel" / "bright-biology" / "metrics.json").read_text())
    assert metrics["aggregate"]["ndcg_cut_10"] == pytest.approx(1.0)  # the gold documents first, once removed


QRELS_FAULTS = [
    ("three-fields", "0 0 moth/light_1.txt 1\n1 0 2\n", r"qrels\.txt:2: expected 4 fields"),
    ("grade-text", "0 0 moth/light_1.txt high\n", r"qrels\.txt:1: "),
    ("grade-float", "0 0 moth/light_1.txt 1.5\n", r"qrels\.txt:1: "),
    ("grade-huge", "0 0 moth/light_1.txt " + "9" * 400 + "\n", r"qrels\.txt:1: "),
    ("nul-in-doc", "0 0 moth/light\x00_1.txt 1\n", r"qrels\.txt:1: the line holds a control character"),
    ("cr-inside", "0 0 moth/li\rght_1.txt 1\n", r"qrels\.txt:1: the line holds a control character"),
    ("empty", "", r"qrels\.txt: no judgments \(empty file\)"),
    ("only-blank-lines", "\n\n   \n", r"qrels\.txt"),
    ("no-query-of-the-task", "q9 0 moth/light_1.txt 1\n", r"none in common: nothing to score"),
    ("bom-then-line", "\ufeff0 0 moth/light_1.txt 1\n", None),  # the BOM is no part of the query id
]


@pytest.mark.parametrize(("text", "message"), [c[1:] for c in QRELS_FAULTS], ids=[c[0] for c in QRELS_FAULTS])
@pytest.mark.parametrize("command", ["evaluate", "score", "import"])
def test_a_qrels_file_with_bad_lines_is_one_line_and_writes_nothing(biology, tmp_path, command, text, message):
    qrels = tmp_path / "qrels.txt"
    qrels.write_bytes(text.encode("utf-8"))
    run = tmp_path / "run.trec"
    run.write_text("0 Q0 moth/light_1.txt 1 2.0 x\n1 Q0 cell/membrane page.txt 1 2.0 x\n")
    out = tmp_path / "out"
    out.mkdir()
    before = snapshot(tmp_path)
    if command == "evaluate":
        args = ["evaluate", "-r", "bm25", "--tasks", "bright:biology", "--qrels", str(qrels), "-o", str(out)]
    elif command == "score":
        args = ["score", "bright:biology", str(run), "--qrels", str(qrels), "-f", "json"]
    else:
        args = ["import", str(run), "--name", "x", "-t", "bright:biology", "--qrels", str(qrels), "-o", str(out)]
    proc = run_r2med(*args)
    if message is None:  # valid: query 0 judged as written (BOM dropped), not as an unknown "\ufeff0"
        assert proc.returncode == 0, proc.stderr
        if command == "score":
            per_query = json.loads(proc.stdout)
            assert per_query["aggregate"]["ndcg_cut_10"] == pytest.approx(1.0), proc.stdout
        return
    line = one_line(proc)
    assert __import__("re").search(message, line), line
    assert snapshot(tmp_path) == before
    assert "BM25 index" not in proc.stderr  # found before the work (before: the index built, then the error)


@pytest.mark.parametrize("kind", ["missing", "folder", "not-utf8", "utf16"])
def test_a_qrels_path_that_is_no_text_file_is_one_line(biology, tmp_path, kind):
    qrels = tmp_path / "qrels.txt"
    if kind == "folder":
        qrels.mkdir()
    elif kind == "not-utf8":
        qrels.write_bytes(b"0 0 moth/light_1.txt 1\n0 0 \xff\xfe 1\n")
    elif kind == "utf16":
        qrels.write_bytes("0 0 moth/light_1.txt 1\n".encode("utf-16"))
    out = tmp_path / "out"
    line = one_line(
        run_r2med("evaluate", "-r", "bm25", "--tasks", "bright:biology", "--qrels", str(qrels), "-o", str(out))
    )
    assert str(qrels) in line, line
    assert not out.exists()


# -- names: bright:<task>:long, -e reason:<llm>, --tasks --------------------------------------------------------

NAME_FAULTS = [
    ("--tasks", "bright:biology:long:x", r"'long:x' is not a setting"),
    ("--tasks", "bright:biology:", r"'' is not a setting"),
    ("--tasks", "bright:", r"BRIGHT task"),
    ("--tasks", "bright::long", r"BRIGHT task"),
    ("--tasks", "bright:aops:long", r"has no long documents"),
    ("--tasks", "bright:bio\nlogy", r"BRIGHT task"),
    ("--tasks", "bright:" + "x" * 100_000, r"BRIGHT task"),
    ("--tasks", "bright:biology\x00", r"BRIGHT task"),
    ("--tasks", "bright:../../etc", r"BRIGHT task"),
    (
        "-e",
        "reason:",
        r"METHOD:LLM .*reason:gpt4",
    ),  # the one message of every edge (issue 35: the expansion parsed once)
    ("-e", "reason:../../x", r"no BRIGHT reasoning query set"),
    ("-e", "reason:gpt4:extra", r"reason"),
    ("--revision", "bright:nosuch=main", r"unknown BRIGHT task"),
]


@pytest.mark.parametrize(("flag", "value", "message"), NAME_FAULTS, ids=[f"{f}={v[:20]!r}" for f, v, _ in NAME_FAULTS])
def test_hostile_task_and_reasoning_names_are_one_line_before_any_work(biology, tmp_path, flag, value, message):
    args = ["evaluate", "-r", "bm25", "-o", str(tmp_path / "out")]
    if flag != "--tasks":
        args += ["--tasks", "bright:biology"]
    proc = run_r2med(*args, flag, value)
    line = one_line(proc)
    assert __import__("re").search(message, line), line
    assert len(line) < 2_500
    assert not (tmp_path / "out").exists()


REVISIONS = ["../../../../tmp/escape", "/abs/path", "main/../../x", "a\nb", "bright:biology=../../x", "v1 .lock"]


@pytest.mark.parametrize("revision", REVISIONS)
def test_a_hostile_revision_is_one_line_before_the_cache_is_read(biology, tmp_path, revision):
    """A revision is a branch, tag or commit name: it becomes ``refs/<revision>`` in the Hugging Face cache, which
    huggingface_hub and r2med read and write, so ``..`` would name a file outside it."""
    proc = run_r2med(
        "evaluate", "-r", "bm25", "--tasks", "bright:biology", "--revision", revision, "-o", str(tmp_path / "o")
    )
    line = one_line(proc)
    assert "is not a branch, tag or commit name" in line, line
    assert not (tmp_path / "o").exists()


def test_a_revision_never_names_a_ref_outside_the_cache(biology, tmp_path):
    """Before, ``--revision ../../<elsewhere>/fake`` read ``refs/../../<elsewhere>/fake``, a file outside the cache
    naming the pinned commit, and loaded the task from it (exit 0); an experiment's ``[data] revision`` too."""
    refs = biology / f"datasets--{BRIGHT_REPO.replace('/', '--')}" / "refs"
    fake = tmp_path / "elsewhere" / "fake"
    fake.parent.mkdir()
    fake.write_text(BRIGHT_PIN)
    revision = os.path.relpath(fake, refs)
    assert (refs / revision).resolve() == fake.resolve()
    out = tmp_path / "o"
    line = one_line(run_r2med("evaluate", "-r", "bm25", "--tasks", "bright:biology", "--revision", revision, "-o", out))
    assert "is not a branch, tag or commit name (it holds '..')" in line, line
    assert not out.exists()
    exp = tmp_path / "exp.toml"
    exp.write_text(f'out = "o"\n[data]\ntasks = ["bright:biology"]\nrevision = "{revision}"\n{BM25_STEP}')
    line = one_line(run_r2med("run", str(exp), "--dry-run"))
    assert f"{exp}: [data]: revision: --revision" in line and "(it holds '..')" in line, line
    from r2med.data.hub import resolve_files
    from r2med.errors import R2MedError

    with pytest.raises(R2MedError, match="is not a branch, tag or commit name"):  # a revision read from a record
        resolve_files(BRIGHT_REPO, ["examples/biology-00000-of-00001.parquet"], revision)


# -- released runs: TREC with spaced ids and BRIGHT's JSON score files, imported into a BRIGHT task ------------

RUN_FILES = [
    # (id, file name, bytes, the message; None: valid, and the figure checked against pytrec_eval)
    ("trec-dup-doc", "run.trec", "0 Q0 a 1 2.0 r\n0 Q0 a 2 1.0 r\n", r"run\.trec:2: doc 'a' listed twice"),
    ("trec-nan", "run.trec", "0 Q0 a 1 nan r\n", r"run\.trec:1: score 'nan' is not a finite number"),
    ("trec-1e400", "run.trec", "0 Q0 a 1 1e400 r\n", r"run\.trec:1: score '1e400' is not a finite number"),
    ("trec-spaced-rank-float", "run.trec", "0 Q0 a b 1.5 2.0 r\n", r"run\.trec:1: read as a document id with spaces"),
    ("trec-forms-mixed", "run.trec", "0 Q0 a 1 2.0 r\n0 a 2 1.0\n", r"run\.trec:2: expected 6 fields"),
    ("trec-5-fields", "run.trec", "0 Q0 a 1 2.0\n", r"run\.trec:1: expected 6 fields"),
    ("trec-utf16", "run.trec", "0 Q0 a 1 2.0 r\n".encode("utf-16"), r"run\.trec:1: not valid UTF-8"),
    ("trec-blank-only", "run.trec", "\n\n", r"run\.trec: empty run file"),
    ("trec-nul", "run.trec", "0 Q0 moth/light\x00_1.txt 1 2.0 r\n", r"run\.trec:1: the line holds a control character"),
    (
        "trec-spaced-crlf-tabs",
        "run.trec",
        "\ufeff0\tQ0\tmoth/light_1.txt\t1\t2.0\tr\r\n1 Q0 cell/membrane page.txt 1 2.0 r\r\n",
        None,
    ),
    ("json-bom", "score.json", '\ufeff{"0": {"moth/light_1.txt": 1.0}, "1": {"cell/membrane page.txt": 2}}', None),
    ("json-utf16", "score.json", '{"0": {"a": 1.0}}'.encode("utf-16"), r"score\.json:1: not valid UTF-8"),
    ("json-empty-qid", "score.json", '{"": {"a": 1.0}}', r"score\.json:1: query id '' is empty"),
    ("json-nul-escaped", "score.json", '{"0": {"a\\u0000b": 1.0}}', r"score\.json:1: document id .* control"),
    ("json-u2028", "score.json", '{"0": {"a\\u2028": 1.0}}', r"score\.json:1: document id .* control"),
    ("json-null-docs", "score.json", '{"0": null}', r"score\.json:1: malformed JSON score file"),
    ("json-top-string", "score.json", '"x"', r"score\.json:1: malformed JSON score file"),
    ("json-trailing-comma", "score.json", '{"0": {"a": 1.0},}', r"score\.json:1: malformed JSON score file"),
    ("json-single-quotes", "score.json", "{'0': {'a': 1.0}}", r"score\.json:1: malformed JSON score file"),
    ("json-whitespace", "score.json", "  \n ", r"score\.json: empty run file"),
]


@pytest.mark.parametrize(("name", "content", "message"), [c[1:] for c in RUN_FILES], ids=[c[0] for c in RUN_FILES])
def test_a_released_run_into_a_bright_task_is_scored_or_one_line(biology, tmp_path, name, content, message):
    import pytrec_eval

    path = tmp_path / name
    path.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
    out = tmp_path / "out"
    proc = run_r2med("import", str(path), "--name", "rel", "-t", "bright:biology", "-o", str(out))
    if message is None:
        assert proc.returncode == 0, proc.stderr
        metrics = json.loads((out / "rel" / "bright-biology" / "metrics.json").read_text())
        run = {"0": {"moth/light_1.txt": 1.0}, "1": {"cell/membrane page.txt": 2.0}}
        qrels = {r["id"]: dict.fromkeys(r["gold_ids"], 1) for r in GOOD_ROWS}
        want = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(run)
        assert metrics["aggregate"]["ndcg_cut_10"] == pytest.approx(sum(v["ndcg_cut_10"] for v in want.values()) / 2)
        return
    line = one_line(proc)
    assert __import__("re").search(message, line), line
    assert not out.exists()


# -- experiment files --------------------------------------------------------------------------------------------


@pytest.fixture
def local_data(tmp_path):
    from test_report import write_collection

    write_collection(tmp_path / "data", "Biology")
    return tmp_path / "data"


BM25_STEP = '[[retrievers]]\nname = "bm25"\n'
UTF16, OUT_NUL = b"<the whole file in UTF-16>", b"<out holds a NUL>"
TOML_FAULTS = [
    # (id, the file's bytes after `out` and `[data]`, the message)
    ("not-utf8", b"# \xff\xfe\n" + BM25_STEP.encode(), r"exp\.toml: not valid TOML \(not UTF-8"),
    ("utf16", UTF16, r"exp\.toml: not valid TOML \(not UTF-8"),
    ("bom", ("\ufeff" + BM25_STEP).encode(), r"exp\.toml: not valid TOML"),
    (
        "dirs-int",
        b"dirs = 5\n" + BM25_STEP.encode(),
        r"exp\.toml: \[data\]: dirs: expected a path or a list of paths, got",
    ),
    (
        "dirs-table",
        b"dirs = {a = 1}\n" + BM25_STEP.encode(),
        r"exp\.toml: \[data\]: dirs: expected a path or a list of paths, got",
    ),
    ("dirs-nul", b'dirs = ["a\\u0000b"]\n' + BM25_STEP.encode(), r"exp\.toml: \[data\]: dirs: .*holds a NUL"),
    ("out-nul", OUT_NUL, r"exp\.toml: out: .*holds a NUL"),
    (
        "tasks-unknown",
        b'tasks = ["bright:nosuch"]\n' + BM25_STEP.encode(),
        r"exp\.toml: .*unknown BRIGHT task 'nosuch'",
    ),
    ("tasks-empty", b"tasks = []\n" + BM25_STEP.encode(), r"exp\.toml: \[data\]: tasks"),
    (
        "revision-nul",
        b'revision = "a\\u0000"\n' + BM25_STEP.encode(),
        r"exp\.toml: \[data\]: revision: .*not a branch, tag",
    ),
    ("k1-negative", (BM25_STEP + "k1 = -1\n").encode(), r"exp\.toml: \[\[retrievers\]\] 1: k1: expected a finite"),
    ("k1-inf", (BM25_STEP + "k1 = inf\n").encode(), r"exp\.toml: \[\[retrievers\]\] 1: k1: expected a finite"),
    ("top-k-0", (BM25_STEP + "top_k = 0\n").encode(), r"exp\.toml: \[\[retrievers\]\] 1: top_k: expected an integer"),
    (
        "imports-runs-nul",
        b'[[imports]]\nname = "x"\nruns = ["a\\u0000.trec"]\n',
        r"exp\.toml: \[\[imports\]\] 1: runs: .*holds a NUL",
    ),
    (
        "imports-runs-missing",
        b'[[imports]]\nname = "x"\nruns = ["nosuch.trec"]\n',
        r"exp\.toml: \[\[imports\]\] 1: runs: .*nosuch\.trec: no such file",
    ),
    ("imports-name-dotdot", b'[[imports]]\nname = ".."\nruns = ["a.trec"]\n', r"exp\.toml: \[\[imports\]\] 1: result"),
    (
        "report-html-nul",
        (BM25_STEP + '[report]\nhtml = "a\\u0000.html"\n').encode(),
        r"exp\.toml: \[report\]: html: .*holds a NUL",
    ),
    (
        "report-data-dir-nul",
        (BM25_STEP + '[report]\ndata_dir = "a\\u0000"\n').encode(),
        r"exp\.toml: \[report\]: data_dir: .*holds a NUL",
    ),
    (
        "report-data-dir-missing",
        (BM25_STEP + '[report]\ndata_dir = "nosuch"\n').encode(),
        r"exp\.toml: \[report\]: data_dir: .*nosuch: no such folder",
    ),
    ("report-latex-a-folder", (BM25_STEP + '[report]\nlatex = "."\n').encode(), r"exp\.toml: \[report\]: latex"),
    (
        "huge-key",
        b"k" * 1_000_000 + b" = 1\n" + BM25_STEP.encode(),
        r"exp\.toml: \[data\]: unknown option 'k{10}.*1,000,000 characters",
    ),
    (
        "bright-llm-k-0",
        (BM25_STEP + '[[rerank]]\nreranker = "bright-llm"\nruns = ["bm25"]\nmodel = "m"\nk = 0\n').encode(),
        r"exp\.toml: \[\[rerank\]\] 1: k: expected an integer >= 1, got 0",
    ),
    (
        "bright-llm-top-p-0",
        (BM25_STEP + '[[rerank]]\nreranker = "bright-llm"\nruns = ["bm25"]\nmodel = "m"\ntop_p = 0\n').encode(),
        r"exp\.toml: \[\[rerank\]\] 1: top_p: expected a finite number > 0 and <= 1",
    ),
    (
        "bright-ce-batch-0",
        (BM25_STEP + '[[rerank]]\nreranker = "bright-cross-encoder"\nruns = ["bm25"]\nbatch_size = 0\n').encode(),
        r"exp\.toml: \[\[rerank\]\] 1: batch_size: expected an integer >= 1",
    ),
]


@pytest.mark.parametrize(("body", "message"), [c[1:] for c in TOML_FAULTS], ids=[c[0] for c in TOML_FAULTS])
@pytest.mark.parametrize("dry", [False, True], ids=["run", "dry-run"])
def test_a_hostile_experiment_file_is_one_line_naming_the_key(local_data, tmp_path, body, message, dry):
    path = tmp_path / "exp.toml"
    head = f'out = "results"\n[data]\ndirs = ["{local_data}"]\n'
    if body == UTF16:
        path.write_bytes((head + BM25_STEP).encode("utf-16"))
    elif body == OUT_NUL:
        path.write_bytes(b'out = "res\\u0000ults"\n' + BM25_STEP.encode())
    elif body.startswith((b"dirs", b"tasks", b"revision")):
        path.write_bytes(b'out = "results"\n[data]\n' + body.replace(b"[[", b"\n[[", 1))
    elif body.startswith(b"k" * 10):
        path.write_bytes(b'out = "results"\n[data]\n' + body)
    else:
        path.write_bytes(head.encode() + body)
    (tmp_path / "a.trec").write_text("q1 Q0 d1 1 1.0 x\n")  # the run file the imports name, where they name one
    before = snapshot(tmp_path)
    proc = run_r2med("run", str(path), *(["--dry-run"] if dry else []))
    line = one_line(proc)
    assert __import__("re").search(message, line), line
    assert len(line) < 2_500, len(line)
    assert snapshot(tmp_path) == before and not (tmp_path / "results").exists()


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("--top-k", "0", r"--top-k: expected an integer >= 1"),
        ("--k1", "nan", r"--k1: expected a finite number >= 0"),
        ("--k1", "1e400", r"--k1: expected a finite number >= 0"),
        ("--b", "-0.5", r"--b: expected a finite number between 0 and 1"),
    ],
)
def test_an_out_of_range_option_is_one_line_on_the_command_line(local_data, tmp_path, flag, value, message):
    proc = run_r2med("evaluate", "-r", "bm25", "-d", str(local_data), "-o", str(tmp_path / "o"), flag, value)
    line = one_line(proc)
    assert __import__("re").search(message, line), line
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: __import__("r2med").BM25(b=1.5), r"b: expected a finite number between 0 and 1"),
        (lambda: __import__("r2med").BM25(k1=float("nan")), r"k1: expected a finite number >= 0"),
        (lambda: __import__("r2med").make_reranker("bright-llm", model="m", k=0), r"k: expected an integer >= 1"),
        (lambda: __import__("r2med").make_reranker("bright-llm", model="m", top_p=1.5), r"top_p: expected"),
        (lambda: __import__("r2med").make_reranker("bright-cross-encoder", batch_size=-1), r"batch_size: expected"),
    ],
    ids=["b-1.5", "k1-nan", "bright-llm-k-0", "bright-llm-top_p-1.5", "bright-ce-batch--1"],
)
def test_an_out_of_range_value_is_one_option_error_from_python(make, message):
    from r2med.errors import OptionError

    with pytest.raises(OptionError, match=message) as err:
        make()
    assert "\n" not in str(err.value)


def test_a_depth_beyond_the_corpus_keeps_every_document(local_data, tmp_path):
    """``--top-k 2**70`` (more than int64 holds): not an error, the whole ranked corpus, as ``-k`` of its size."""
    from r2med.runs.run import read_trec
    from test_report import DOCS

    runs = {}
    for k in (str(2**70), str(len(DOCS))):
        out = tmp_path / k
        proc = run_r2med("evaluate", "-r", "bm25", "-d", str(local_data), "-o", str(out), "--top-k", k)
        assert proc.returncode == 0, proc.stderr
        runs[k] = read_trec(out / "bm25" / "Biology" / "run.trec")
    assert runs[str(2**70)] == runs[str(len(DOCS))]


# -- the hub-verified memo ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("field", ["mac", "hash"])
def test_a_memo_entry_with_text_hmac_cannot_compare_is_distrusted_not_a_traceback(biology, r2med_home, field):
    """``hmac.compare_digest`` raises TypeError on text that is not ASCII: a memo entry whose seal (or hash) is
    ``"é"`` made every hub load a traceback.  It is an entry without r2med's seal: the blob is hashed again."""
    from r2med.data import load_task
    from r2med.data.hub_integrity import VERIFIED_FILE

    assert load_task("bright:biology").queries  # a real, sealed memo
    memo = r2med_home / VERIFIED_FILE
    data = json.loads(memo.read_text())
    for entry in data["blobs"].values():
        entry[field] = "é" * 64
    memo.write_text(json.dumps(data))
    coll = load_task("bright:biology")
    assert set(coll.queries) == {"0", "1"}
    rebuilt = json.loads(memo.read_text())
    assert all(e["mac"].isascii() and e["hash"].isascii() for e in rebuilt["blobs"].values())


def test_a_fingerprint_memo_entry_with_a_text_seal_is_ignored(biology, r2med_home):
    from r2med.data import load_task
    from r2med.data.hub_integrity import FINGERPRINTS_FILE, hub_fingerprints, remember_fingerprint

    load_task("bright:biology")
    blob = next(biology.rglob("examples/biology-00000-of-00001.parquet"))
    name = "examples/biology-00000-of-00001.parquet"
    assert remember_fingerprint(BRIGHT_REPO, BRIGHT_PIN, name, blob)
    memo = r2med_home / FINGERPRINTS_FILE
    data = json.loads(memo.read_text())
    for entry in data["files"].values():
        entry["mac"] = "ü" * 64
    memo.write_text(json.dumps(data))
    assert hub_fingerprints(BRIGHT_REPO, BRIGHT_PIN, name) == set()  # vouches for nothing, no TypeError
    assert remember_fingerprint(BRIGHT_REPO, BRIGHT_PIN, name, blob)  # and is rewritten, sealed
    assert hub_fingerprints(BRIGHT_REPO, BRIGHT_PIN, name)


# -- an import interrupted while writing -------------------------------------------------------------------------


def test_an_import_interrupted_mid_write_leaves_no_half_folder_and_resumes(biology, tmp_path, monkeypatch):
    """Ctrl-C while the task folder is being written (after run.trec, before metrics.json): no task folder, no
    temp left, an earlier finished folder kept byte for byte under --overwrite; the rerun writes what an
    uninterrupted import writes."""
    import r2med.runs.run as run_module

    run = tmp_path / "run.trec"
    run.write_text("0 Q0 moth/light_1.txt 1 2.0 x\n1 Q0 cell/membrane page.txt 1 2.0 x\n")
    out = tmp_path / "out"
    real = run_module.r2med_results

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    args = ("import", str(run), "--name", "rel", "-t", "bright:biology", "-o", str(out))
    monkeypatch.setattr(run_module, "r2med_results", interrupted)
    proc = run_r2med(*args)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr, proc.stderr
    system = out / "rel"
    assert not system.exists() or list(system.iterdir()) == [], list(system.iterdir())
    monkeypatch.setattr(run_module, "r2med_results", real)
    assert run_r2med(*args).returncode == 0
    finished = snapshot(out)
    clean = tmp_path / "clean"
    assert run_r2med("import", str(run), "--name", "rel", "-t", "bright:biology", "-o", str(clean)).returncode == 0
    strip = lambda snap: {k: v for k, v in snap.items() if not k.endswith("metrics.json")}  # noqa: E731
    assert strip(finished) == strip(snapshot(clean))  # metrics.json holds times and paths
    monkeypatch.setattr(run_module, "r2med_results", interrupted)
    proc = run_r2med(*args, "--overwrite")
    assert proc.returncode != 0
    assert snapshot(out) == finished  # the finished folder, untouched by the interrupted overwrite


# -- expand: two models into one answer folder at once ---------------------------------------------------------


def test_two_expands_of_other_models_into_one_folder_at_once_never_replace_each_other(tmp_path, r2med_home):
    """``--model org1/qwen`` and ``--model org2/Qwen`` both name the folder ``qwen``.  The second run starts while
    the first is waiting for its answers: before, both passed the check (no ``llm.json`` yet), the second wrote its
    expansions and record, then the first replaced them (both exit 0, the second's work gone).  Now the first
    claims the folder before any request and the second is refused, sending nothing."""
    import subprocess
    import sys

    pytest.importorskip("openai")
    from llm_server import LLMServer
    from test_expansion_generate import make_collection

    data = make_collection(tmp_path / "Biology", n_queries=3)
    out = tmp_path / "exp"
    src = Path(__import__("r2med").__file__).parents[1]
    second_run: dict[str, object] = {}

    def args(server):
        return ["expand", "--method", "hyde", "--model", server.model, "--base-url", server.base_url,
                "--data-dir", str(data), "--out", str(out), "--timeout", "20"]  # fmt: skip

    with LLMServer(model="org2/Qwen") as second:

        def first_answers(messages, body):
            # the other model's run, start to end, while this one waits for its first answer: a real process (a
            # second run of the CLI in this process would share its stdout, signals and logging)
            if not second_run:
                env = {**os.environ, "PYTHONPATH": str(src), "R2MED_HOME": str(r2med_home)}
                cmd = [sys.executable, "-m", "r2med", *args(second)]
                second_run["proc"] = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
            return "an answer of org1/qwen"

        with LLMServer(model="org1/qwen", responder=first_answers) as first:
            proc = run_r2med(*args(first), env={"R2MED_HOME": str(r2med_home)})
        assert proc.returncode == 0, proc.stderr
        other = second_run["proc"]
        assert isinstance(other, subprocess.CompletedProcess)
        assert other.returncode == 2, (other.stdout, other.stderr)
        assert "is claimed by --model 'org1/qwen'" in other.stderr and "--llm-name" in other.stderr, other.stderr
        assert second.requests == 0
    folder = out / "Biology" / "hyde" / "qwen"
    assert json.loads((folder / "llm.json").read_text()) == {"model": "org1/qwen"}
    texts = [json.loads(line)["hy_doc"] for line in (folder / "query_with_hydoc.jsonl").read_text().splitlines()]
    assert texts and all("org1/qwen" in t for t in texts)


def test_a_run_that_sends_nothing_useful_drops_its_claim(tmp_path, r2med_home):
    """A claim is dropped when the run writes no expansions (every request failed): nothing left under --out."""
    pytest.importorskip("openai")
    from llm_server import Faults, LLMServer
    from test_expansion_generate import make_collection

    data = make_collection(tmp_path / "Biology", n_queries=2)
    out = tmp_path / "exp"
    with LLMServer(model="org1/qwen", faults=Faults(rate_500=1.0, max_faults_per_prompt=99)) as server:
        proc = run_r2med(
            "expand", "--method", "hyde", "--model", server.model, "--base-url", server.base_url, "--data-dir",
            str(data), "--out", str(out), "--timeout", "5", "--max-retries", "0", env={"R2MED_HOME": str(r2med_home)},
        )  # fmt: skip
    assert proc.returncode != 0
    assert not out.exists() or list(out.rglob("*")) == [], list(out.rglob("*"))


# -- framings named by text (--set framing) --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("framing", "message"),
    [
        ("{text}{text}", r"framing '\{text\}\{text\}' must hold \{text\} once"),
        ("", r"framing '' must hold \{text\} once"),
        ("no placeholder", r"must hold \{text\} once"),
        ("<nosuchtoken> {text}", r"names the token '<nosuchtoken>', which its tokenizer's vocabulary lacks"),
        ("<s> " * 600 + "{text}", r"\(2,406 characters\) names the token '<s>'"),
    ],
    ids=["twice", "empty", "none", "unknown-token", "600-tokens"],
)
def test_a_hostile_framing_is_one_line_and_writes_nothing(local_data, tmp_path, framing, message):
    from conftest import minilm_path

    model = minilm_path()
    out = tmp_path / "o"
    proc = run_r2med(
        "evaluate", "-r", "dense", "--model", model, "-d", str(local_data), "-o", str(out),
        "--set", f"framing={framing}", "--set", "loader=transformers",
    )  # fmt: skip
    line = one_line(proc)
    assert __import__("re").search(message, line), line
    assert not out.exists()


@pytest.mark.parametrize("revision", ["../../../../tmp/escape", "/abs", "a b", "x..y", "main.lock"])
def test_a_hostile_model_revision_is_one_line_from_every_edge(tmp_path, revision):
    """A model's own commit (``model_revision``) becomes ``refs/<revision>`` in the Hugging Face cache too
    (``from_pretrained(revision=...)``): held to the same rule as the data's, from the command line, a file and
    Python, before anything loads."""
    import r2med
    from r2med.typed.parse import SpecError

    words = "is not a branch, tag or commit name"
    out = tmp_path / "o"
    line = one_line(run_r2med("evaluate", "-r", "bge", "--set", f"model_revision={revision}", "-o", str(out)))
    assert line.startswith("error: --set model_revision: ") and words in line, line
    exp = tmp_path / "exp.toml"
    table = f'[[retrievers]]\nname = "bge"\nmodel_revision = "{revision}"\n'
    exp.write_text(f'out = "o"\n[data]\ntasks = ["Biology"]\n{table}')
    line = one_line(run_r2med("run", str(exp), "--dry-run"))
    assert f"{exp}: [[retrievers]] 1: model_revision: " in line and words in line, line
    for build in (lambda: r2med.make_retriever("bge", model_revision=revision),
                  lambda: r2med.make_reranker("bge-reranker", model_revision=revision)):  # fmt: skip
        with pytest.raises(SpecError, match=words):
            build()
    assert not out.exists() and not (tmp_path / "o").exists()
    assert r2med.make_retriever("bge", model_revision="v1.0/release").name  # a tag with a slash is a ref name
