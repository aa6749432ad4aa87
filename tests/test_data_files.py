"""The data readers: repeated ids as the paper's loader keeps them, --strict, numeric ids, grade bounds,
lone surrogates, TREC number syntax, and a property test that no input makes a reader raise anything
but a ``file:line`` R2MedError."""

from __future__ import annotations

import json
import logging
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import run_r2med
from r2med.data import files as files_module
from r2med.data import load_folder, read_qrels
from r2med.data.files import iter_jsonl, read_qrels_jsonl, read_qrels_trec, read_qrels_tsv, read_texts
from r2med.errors import DataError, R2MedError
from r2med.evaluation.metrics import evaluate
from r2med.infra import input_files
from r2med.runs.run import read_run, read_score_json, read_trec
from test_data import make_r2med, write_jsonl


def paper_loader(path: Path, id_key: str = "id") -> dict[str, str]:
    """The reference: the paper's / BEIR's loader, a dict filled line by line with json.loads."""
    out: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            record = json.loads(line)
            out[str(record[id_key])] = record["text"]
    return out


def cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return run_r2med(*args, env=env)


# -- repeated ids ------------------------------------------------------------------------------------

REPEATS = [
    {"id": "d1", "text": "first"},
    {"id": "d2", "text": "two"},
    {"id": "d1", "text": "first"},
    {"id": "d3", "text": "three"},
    {"id": "d2", "text": "two, changed"},
    {"id": "d2", "text": "two, last"},
]


def test_repeated_ids_keep_the_last_record_like_the_papers_loader(tmp_path, caplog):
    path = write_jsonl(tmp_path / "corpus.jsonl", REPEATS)
    with caplog.at_level(logging.WARNING):
        texts, _ = read_texts(path, strict=False)
    reference = paper_loader(path)
    assert texts == reference and list(texts) == list(reference) == ["d1", "d2", "d3"]
    assert texts["d2"] == "two, last"
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 2  # one counted warning per kind
    assert any("1 repeated id(s) identical to an earlier line dropped (d1)" in m for m in messages)
    assert any(
        "2 id(s) repeated with a different record: the last one is kept" in m and "(d2, d2)" in m for m in messages
    )


def test_repeat_warning_names_only_the_first_few_ids(tmp_path, caplog):
    rows = [{"id": f"d{i}", "text": "x"} for i in range(12)] * 2
    path = write_jsonl(tmp_path / "corpus.jsonl", rows)
    with caplog.at_level(logging.WARNING):
        texts, _ = read_texts(path, strict=False)
    assert len(texts) == 12
    (message,) = [r.getMessage() for r in caplog.records]
    assert "12 repeated id(s)" in message and "d0, d1, d2, d3, d4 and 7 more" in message


def test_repeated_query_keeps_the_last_metadata(tmp_path):
    path = write_jsonl(
        tmp_path / "query.jsonl", [{"id": "q1", "text": "a", "answer": "x"}, {"id": "q1", "text": "a", "answer": "y"}]
    )
    texts, meta = read_texts(path, keep_meta=True, strict=False)
    assert texts == {"q1": "a"} and meta == {"q1": {"answer": "y"}}


def test_strict_refuses_repeats_with_file_and_line(tmp_path, monkeypatch):
    path = write_jsonl(tmp_path / "corpus.jsonl", REPEATS)
    with pytest.raises(DataError, match=r"corpus.jsonl:3: duplicate id 'd1' \(first seen on line 1\)"):
        read_texts(path, strict=True)
    monkeypatch.setenv("R2MED_STRICT", "1")  # the CLI's default only: the Python readers take the parameter
    assert len(read_texts(path)[0]) == 3


def test_evaluate_strict_refuses_and_default_runs(tmp_path):
    root = make_r2med(
        tmp_path / "c",
        corpus=[
            {"id": "d1", "text": "aspirin inhibits cox"},
            {"id": "d2", "text": "insulin lowers glucose"},
            {"id": "d1", "text": "aspirin again"},
        ],
    )
    res = cli("evaluate", "-r", "bm25", "-d", str(root), "-o", str(tmp_path / "out"), "--strict")
    assert res.returncode == 2
    assert "corpus.jsonl:3: duplicate id 'd1' (first seen on line 1)" in res.stderr
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").rglob("metrics.json"))
    res = cli("--strict", "evaluate", "-r", "bm25", "-d", str(root), "-o", str(tmp_path / "out"))
    assert res.returncode == 2 and "corpus.jsonl:3: duplicate id" in res.stderr
    res = cli("evaluate", "-r", "bm25", "-d", str(root), "-o", str(tmp_path / "out"))
    assert res.returncode == 0, res.stderr
    assert "1 id(s) repeated with a different record" in res.stderr


def test_strict_reaches_every_route_and_leaves_nothing_behind(tmp_path):
    """``--strict`` travels as a parameter: through ``$R2MED_STRICT`` (the CLI's default), ``score``'s own flag,
    and ``r2med --strict`` into the jobs that find collections from recorded results (fuse, import); the
    environment is left as it was, and the Python loaders read it not."""
    import os

    from r2med.data import load_task, resolve

    root = make_r2med(
        tmp_path / "c",
        corpus=[{"id": "d1", "text": "aspirin inhibits cox"}, {"id": "d2", "text": "insulin lowers glucose"}],
        qrels=[{"q_id": "q1", "p_id": "d2", "score": 1}, {"q_id": "q1", "p_id": "d2", "score": 0}],
    )
    out = tmp_path / "out"
    refused = "qrels.jsonl:2: duplicate judgment"
    for name in ("a", "b"):
        res = cli("evaluate", "-r", "bm25", "-d", str(root), "-o", str(out), "--name", name)
        assert res.returncode == 0, res.stderr
    res = cli("evaluate", "-r", "bm25", "-d", str(root), "-o", str(tmp_path / "o2"), env={"R2MED_STRICT": "1"})
    assert res.returncode == 2 and refused in res.stderr, res.stderr
    assert "R2MED_STRICT" not in os.environ
    for args in (("score", "--strict"), ("--strict", "score")):
        res = cli(*args, str(root), str(out / "a" / "c" / "run.trec"))
        assert res.returncode == 2 and refused in res.stderr, res.stderr
    assert cli("score", str(root), str(out / "a" / "c" / "run.trec")).returncode == 0
    res = cli("--strict", "fuse", str(out / "a"), str(out / "b"), "-o", str(tmp_path / "fused"))
    assert res.returncode == 2 and refused in res.stderr, res.stderr
    assert not (tmp_path / "fused").exists() or not any((tmp_path / "fused").rglob("metrics.json"))
    run = out / "a" / "c" / "run.trec"
    res = cli("--strict", "import", str(run), "--name", "imp", "-d", str(root), "-o", str(tmp_path / "imp"))
    assert res.returncode == 2 and refused in res.stderr, res.stderr
    assert cli("fuse", str(out / "a"), str(out / "b"), "-o", str(tmp_path / "fused")).returncode == 0
    with pytest.raises(DataError, match=refused):
        load_task("c", tmp_path, strict=True)
    with pytest.raises(DataError, match=refused):
        resolve("all", root, strict=True)[0].load()
    os.environ["R2MED_STRICT"] = "1"
    try:  # read by the CLI only
        assert len(load_task("c", tmp_path).qrels["q1"]) == 1
    finally:
        del os.environ["R2MED_STRICT"]


def test_ids_that_are_json_numbers_are_their_decimal_string(tmp_path):
    path = tmp_path / "corpus.jsonl"
    path.write_text(
        '{"id": 7, "text": "a"}\n{"id": 100000000000000000000, "text": "b"}\n'
        '{"id": 1.5, "text": "c"}\n{"id": -3, "text": "d"}\n',
        encoding="utf-8",
    )
    texts, _ = read_texts(path)
    # str() of what Python's json reads, as the paper's code compares them (orjson would read 1e20 as a float)
    assert list(texts) == [str(json.loads(line)["id"]) for line in path.read_text().splitlines()]
    assert list(texts) == ["7", "100000000000000000000", "1.5", "-3"]
    qrels = write_jsonl(tmp_path / "qrels.jsonl", [{"q_id": 1, "p_id": 7, "score": 1}])
    assert read_qrels(qrels) == {"1": {"7": 1}}
    for bad in ('{"id": true, "text": "a"}', '{"id": NaN, "text": "a"}', '{"id": [1], "text": "a"}'):
        path.write_text(bad + "\n", encoding="utf-8")
        with pytest.raises(DataError, match=r"corpus.jsonl:1: field 'id'"):
            read_texts(path)


# -- judgments ---------------------------------------------------------------------------------------

QRELS_FORMS = {
    "qrels.jsonl": lambda rows: "".join(json.dumps({"q_id": q, "p_id": d, "score": g}) + "\n" for q, d, g in rows),
    "qrels.tsv": lambda rows: "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t{g}\n" for q, d, g in rows),
    "qrels.txt": lambda rows: "".join(f"{q} 0 {d} {g}\n" for q, d, g in rows),
}


@pytest.mark.parametrize("name", list(QRELS_FORMS))
def test_repeated_judgments_keep_the_last_grade(tmp_path, caplog, name):
    rows = [("q1", "d1", 1), ("q1", "d2", 0), ("q1", "d1", 2), ("q1", "d2", 0), ("q2", "d1", 1)]
    path = tmp_path / name
    path.write_text(QRELS_FORMS[name](rows), encoding="utf-8")
    reference: dict = {}
    for q, d, g in rows:  # the paper's loader: ground_truth[qid][pid] = int(score)
        reference.setdefault(q, {})[d] = g
    with caplog.at_level(logging.WARNING):
        assert read_qrels(path, strict=False) == reference == {"q1": {"d1": 2, "d2": 0}, "q2": {"d1": 1}}
    messages = [r.getMessage() for r in caplog.records]
    assert any("1 repeated judgment(s) identical to an earlier line dropped (q1/d2)" in m for m in messages)
    assert any(
        "1 judgment(s) repeated with a different grade: the last one is kept" in m and "(q1/d1)" in m for m in messages
    )
    line = 4 if name == "qrels.tsv" else 3
    with pytest.raises(DataError, match=rf"{name}:{line}: duplicate judgment for query 'q1', doc 'd1'"):
        read_qrels(path, strict=True)


def test_score_strict_refuses_repeated_judgments(tmp_path):
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 1\nq1 0 d1 0\n", encoding="utf-8")
    run = tmp_path / "run.trec"
    run.write_text("q1 Q0 d1 1 2.5 x\n", encoding="utf-8")
    res = cli("score", str(qrels), str(run), "--strict")
    assert res.returncode == 2 and "qrels.txt:2: duplicate judgment" in res.stderr
    res = cli("score", str(qrels), str(run), "--json")
    assert res.returncode == 0 and json.loads(res.stdout)["aggregate"]["ndcg_cut_10"] == 0.0  # last grade: 0


@pytest.mark.parametrize("grade", ["2147483648", "100000000000000000000", "1001", "-1001", "1e20"])
@pytest.mark.parametrize("name", list(QRELS_FORMS))
def test_grades_outside_the_bound_are_data_errors(tmp_path, name, grade):
    path = tmp_path / name
    path.write_text(QRELS_FORMS[name]([("q1", "d1", 1), ("q1", "d2", grade)]), encoding="utf-8")
    line = 3 if name == "qrels.tsv" else 2
    with pytest.raises(DataError, match=rf"{name}:{line}: relevance .* is outside -1000..1000"):
        read_qrels(path)


def test_grade_bounds_hold_before_pytrec_eval_sees_the_data():
    with pytest.raises(R2MedError, match=r"relevance 2147483648 is outside -1000..1000"):
        evaluate({"q": {"d": 1.0}}, {"q": {"d": 2**31}})
    assert evaluate({"q": {"d": 1.0}}, {"q": {"d": 1000}}).aggregate["ndcg_cut_10"] == 1.0


@pytest.mark.parametrize("grade", [2**31, 10**20])
def test_huge_grade_is_refused_quickly_and_in_little_memory(tmp_path, grade):
    qrels = tmp_path / "qrels.txt"
    qrels.write_text(f"q1 0 d1 {grade}\n", encoding="utf-8")
    run = tmp_path / "run.trec"
    run.write_text("q1 Q0 d1 1 2.5 x\n", encoding="utf-8")
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    # real processes, not conftest.run_r2med: the measure is the whole CLI process's peak memory
    res = subprocess.run(
        [
            sys.executable,
            "-c",
            "import resource, subprocess, sys; "
            "subprocess.run([sys.executable, '-m', 'r2med', 'score', sys.argv[1], sys.argv[2]]); "
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)",
            str(qrels),
            str(run),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert f"qrels.txt:1: relevance {grade} is outside -1000..1000" in res.stderr
    peak_kib = int(res.stdout.split()[-1])
    assert peak_kib < 1024 * 1024, f"peak RSS {peak_kib} KiB"
    assert before >= 0


def test_negative_grades_count_as_judged_non_relevant_like_trec_eval(tmp_path):
    import pytrec_eval

    path = tmp_path / "qrels.txt"
    path.write_text("q1 0 d1 1\nq1 0 d2 -2\n", encoding="utf-8")
    qrels = read_qrels(path)
    assert qrels == {"q1": {"d1": 1, "d2": -2}}
    run = {"q1": {"d2": 2.0, "d1": 1.0}}
    ours = evaluate(run, qrels).aggregate
    ref = pytrec_eval.RelevanceEvaluator({"q1": {"d1": 1, "d2": 0}}, {"ndcg_cut.10", "P.1"}).evaluate(run)["q1"]
    assert ours["ndcg_cut_10"] == pytest.approx(ref["ndcg_cut_10"]) and ours["P_1"] == ref["P_1"] == 0.0


@pytest.mark.parametrize(
    "text,ok",
    [
        ("1_000", False),
        ("true", False),
        ("inf", False),
        ("nan", False),
        ("0x1", False),
        ("1.5", False),
        ("", False),
        ("+2", True),
        ("3.0", True),
        ("1e2", True),
        ("007", True),
    ],
)
def test_trec_qrels_grade_syntax(tmp_path, text, ok):
    path = tmp_path / "qrels.txt"
    path.write_text(f"q1 0 d1 {text or '-'}\n", encoding="utf-8")
    if ok:
        assert read_qrels_trec(path) == {"q1": {"d1": int(float(text))}}
    else:
        with pytest.raises(DataError, match=r"qrels.txt:1: relevance"):
            read_qrels_trec(path)


@pytest.mark.parametrize("value", ["true", '"1_000"', '"high"', "[1]", "1.5"])
def test_jsonl_grade_that_is_not_an_integer_is_refused(tmp_path, value):
    path = tmp_path / "qrels.jsonl"
    path.write_text(f'{{"q_id": "q", "p_id": "d", "score": {value}}}\n', encoding="utf-8")
    with pytest.raises(DataError, match=r"qrels.jsonl:1: relevance"):
        read_qrels_jsonl(path)


@pytest.mark.parametrize(
    "score,ok",
    [
        ("1_000", False),
        ("true", False),
        ("inf", False),
        ("-nan", False),
        ("1e400", False),
        ("0x10", False),
        ("12.5", True),
        ("-3e-2", True),
        (".5", True),
    ],
)
def test_trec_run_score_syntax(tmp_path, score, ok):
    path = tmp_path / "run.trec"
    path.write_text(f"q1 Q0 d1 1 {score} tag\n", encoding="utf-8")
    if ok:
        assert read_trec(path) == {"q1": {"d1": float(score)}}
    else:
        with pytest.raises(DataError, match=r"run.trec:1: score"):
            read_trec(path)


# -- text problems -------------------------------------------------------------------------------


def test_lone_surrogate_is_a_data_error_and_pairs_are_fine(tmp_path):
    path = tmp_path / "corpus.jsonl"
    path.write_text('{"id": "d1", "text": "ok"}\n{"id": "d2", "text": "a\\ud800b"}\n', encoding="utf-8")
    with pytest.raises(DataError, match=r"corpus.jsonl:2: a string holds a lone surrogate"):
        read_texts(path)
    path.write_text('{"id": "d1", "text": "smile \\ud83d\\ude00"}\n', encoding="utf-8")
    assert read_texts(path)[0] == {"d1": "smile \U0001f600"}
    root = make_r2med(tmp_path / "c", queries=[{"id": "q1", "text": "x", "answer": "\ud800"}])
    (root / "query.jsonl").write_text('{"id": "q1", "text": "x", "answer": "\\udfff"}\n', encoding="utf-8")
    with pytest.raises(DataError, match=r"query.jsonl:1: a string holds a lone surrogate"):
        load_folder(root)


def test_lone_surrogate_through_the_cli_is_a_one_line_error(tmp_path):
    root = make_r2med(tmp_path / "c")
    (root / "corpus.jsonl").write_text('{"id": "d1", "text": "x \\ud800"}\n', encoding="utf-8")
    res = cli("evaluate", "-r", "bm25", "-d", str(root), "-o", str(tmp_path / "out"))
    assert res.returncode == 2 and "corpus.jsonl:1: a string holds a lone surrogate" in res.stderr
    assert "Traceback" not in res.stderr


def test_bom_crlf_and_blank_lines(tmp_path):
    path = tmp_path / "corpus.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"id": "d1", "text": "a"}\r\n\r\n  \n\xc2\xa0\n{"id": "d2", "text": "b"}')
    assert read_texts(path)[0] == {"d1": "a", "d2": "b"}
    tsv = tmp_path / "q.tsv"
    tsv.write_bytes(b"\xef\xbb\xbfquery-id\tcorpus-id\tscore\r\nq1\td1\t1\r\n")
    assert read_qrels_tsv(tsv) == {"q1": {"d1": 1}}


def test_big_files_are_read_across_block_boundaries(tmp_path, monkeypatch):
    monkeypatch.setattr(input_files, "_BLOCK", 7)  # the block size of the one bounded line reader
    rows = [{"id": f"d{i}", "text": "é" * (i % 5) + " text"} for i in range(50)]
    path = write_jsonl(tmp_path / "corpus.jsonl", rows)
    assert read_texts(path)[0] == paper_loader(path)
    path.write_bytes(path.read_bytes()[:-1])  # no final newline
    assert len(read_texts(path)[0]) == 50
    path.write_bytes(b'{"id": "d1", "text": "a"}\n{"id": "d2", "text": "b\xff"}\n')
    with pytest.raises(DataError, match=r"corpus.jsonl:2: not valid UTF-8"):
        read_texts(path)


def test_orjson_and_json_paths_agree_on_edge_cases(tmp_path, monkeypatch):
    lines = [
        '{"id": "d1", "text": "a", "n": NaN}',
        '{"id": 18446744073709551616, "text": "b"}',
        '{"id": "d3", "text": "c", "x": 1e400}',
        '{"id": "d4", "text": "\\u00e9\\t"}',
        '{"id": "d5", "text": "d", "id": "d6"}',
    ]
    path = tmp_path / "query.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    fast = read_texts(path, keep_meta=True)
    monkeypatch.setattr(files_module, "_fast_loads", None)
    slow = read_texts(path, keep_meta=True)
    assert repr(fast) == repr(slow)
    assert list(fast[0]) == ["d1", "18446744073709551616", "d3", "d4", "d6"]


# -- property: every reader answers any input with a result or a file:line R2MedError ---------------


def _readers(tmp_path: Path):
    return {
        "corpus.jsonl": lambda p: read_texts(p),
        "query.jsonl": lambda p: read_texts(p, keep_meta=True),
        "beir.jsonl": lambda p: read_texts(p, id_key="_id", title_key="title"),
        "qrels.jsonl": lambda p: read_qrels_jsonl(p),
        "qrels.tsv": lambda p: read_qrels_tsv(p),
        "qrels.txt": lambda p: read_qrels_trec(p),
        "run.trec": lambda p: read_trec(p),
        "score.json": lambda p: read_score_json(p),
        "run.txt": lambda p: read_run(p),
        "any.jsonl": lambda p: list(iter_jsonl(p)),
    }


def _check_reader(path: Path, read) -> None:
    try:
        read(path)
    except R2MedError as exc:
        message = str(exc)
        assert message.startswith(f"{path}:"), message
        assert "\n" not in message
        if isinstance(exc, DataError) and exc.line is not None:
            assert message.startswith(f"{path}:{exc.line}: ")


hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_json_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12)
    | st.sampled_from(["d1", "q1", "1", "-1", "1_000", "true", " ", "\ud800", "x y", "2147483648"])
)
_json_values = st.recursive(
    _json_scalars,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(["id", "_id", "text", "title", "q_id", "p_id", "score", "x"]) | st.text(max_size=4),
            inner,
            max_size=5,
        )
    ),
    max_leaves=12,
)
_records_st = st.dictionaries(
    st.sampled_from(["id", "_id", "text", "title", "q_id", "p_id", "score", "meta"]),
    _json_scalars | _json_values,
    max_size=6,
)


def _json_line(value) -> bytes:
    return json.dumps(value, ensure_ascii=True).encode("utf-8")  # lone surrogates stay as \\ud800 escapes


_settings = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@_settings
@given(data=st.binary(max_size=300))
def test_property_random_bytes(tmp_path, data):
    for name, read in _readers(tmp_path).items():
        path = tmp_path / name
        path.write_bytes(data)
        _check_reader(path, read)


@_settings
@given(lines=st.lists(_records_st | _json_values, min_size=0, max_size=6))
def test_property_random_json_values(tmp_path, lines):
    data = b"\n".join(_json_line(v) for v in lines)
    for name, read in _readers(tmp_path).items():
        path = tmp_path / name
        path.write_bytes(data)
        _check_reader(path, read)


_tokens = st.sampled_from(
    [
        "q1",
        "d1",
        "0",
        "Q0",
        "1",
        "-1",
        "1_000",
        "true",
        "2.5",
        "nan",
        "inf",
        "1e400",
        "2147483648",
        "\t",
        " ",
        "x",
        "é",
        "1,5",
        "query-id",
    ]
)


@_settings
@given(rows=st.lists(st.lists(_tokens, min_size=0, max_size=7), max_size=6), sep=st.sampled_from([" ", "\t"]))
def test_property_random_trec_and_tsv_lines(tmp_path, rows, sep):
    data = "\n".join(sep.join(r) for r in rows).encode("utf-8")
    for name, read in _readers(tmp_path).items():
        path = tmp_path / name
        path.write_bytes(data)
        _check_reader(path, read)


@_settings
@given(lines=st.lists(_records_st, min_size=1, max_size=5))
def test_property_orjson_and_json_paths_agree(tmp_path, lines):
    data = b"\n".join(_json_line(v) for v in lines)
    for name, read in _readers(tmp_path).items():
        path = tmp_path / name
        path.write_bytes(data)
        outcomes = []
        for fast in (files_module._fast_loads, None):
            saved = files_module._fast_loads
            files_module._fast_loads = fast
            try:
                outcomes.append(repr(read(path)))
            except R2MedError as exc:
                outcomes.append(str(exc))
            finally:
                files_module._fast_loads = saved
        assert outcomes[0] == outcomes[1], name
