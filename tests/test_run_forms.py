"""Ids and run files as their authors release them (issue 27 item 3, issue 32).

* A control character in any id (NUL first: pytrec_eval reads ids as C strings, so ``13\\0x`` scored as ``13``)
  is a ``file:line`` error in every reader of runs, judgments, corpora and queries, and an error for runs and
  judgments passed in from Python.
* TREC runs whose document ids hold spaces (released BRIGHT runs do) are read from both ends, in the 6-column
  and the 4-column form; r2med's own ``run.trec`` keeps such ids, and reading it back gives the same run.
* JSON score files ``{qid: {docid: score}}`` (BRIGHT's ``score.json``, RaDeR's and ReasonRank's releases) enter
  ``import`` and ``score`` as they are; every fault is a ``file:line`` error.

References are independent of the readers: hand-written expected dicts, ``json.loads`` and pytrec_eval.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import pytrec_eval

import r2med
from conftest import run_r2med
from r2med.data import load_folder
from r2med.data.files import read_qrels_jsonl, read_qrels_trec, read_qrels_tsv, read_texts
from r2med.errors import DataError, R2MedError
from r2med.expansion.precomputed import read_expansion_file
from r2med.runs.run import read_run, read_score_json, read_trec, trec_tags, write_trec

# ids as BRIGHT's StackOverflow documents name them: paths, some holding spaces
SPACED = "snowflake_unpivot/Snowflake SQL Reference_3.txt"
DOUBLE = "pandas  melt/DataFrame.melt 2.txt"  # two spaces inside: kept as they are
PLAIN = "snowflake_unpivot/unpivot_1.txt"


def cli(*args: str, home: Path) -> object:
    return run_r2med(*args, env={"R2MED_HOME": str(home), "HF_HUB_OFFLINE": "1"})


def one_line_error(proc) -> str:
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2, proc.stderr
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    return lines[0]


# -- item 3: control characters in ids -------------------------------------------------------------


def test_pytrec_eval_cuts_ids_at_nul_which_is_why_they_are_refused():
    """The hazard itself: pytrec_eval scores doc ``13\\0x`` as the relevant ``13``."""
    got = pytrec_eval.RelevanceEvaluator({"q": {"13": 1}}, {"ndcg_cut.10"}).evaluate({"q": {"13\x00x": 1.0}})
    assert got["q"]["ndcg_cut_10"] == 1.0
    with pytest.raises(R2MedError, match=r"doc id '13\\x00x' holds a control character"):
        r2med.evaluate({"q": {"13\x00x": 1.0}}, {"q": {"13": 1}})
    with pytest.raises(R2MedError, match=r"judgments: query id 'q\\x07' holds a control character"):
        r2med.evaluate({"q": {"13": 1.0}}, {"q\x07": {"13": 1}})


CONTROLS = ["\x00", "\x07", "\x7f", "\x9b", "\u2028"]


def _json_id(char: str) -> str:
    return json.dumps("13" + char + "x")  # "13\u0000x": a JSON escape, as a writer of JSON would put it


def _jsonl(good: str, bad: str) -> str:
    """Two JSON lines, the second holding the bad id (``{j}``); braces doubled for ``str.format``."""
    return (good + "\n" + bad + "\n").replace("{", "{{").replace("}", "}}").replace("{{j}}", "{j}")


READERS = {
    # name: (file name, content with the bad id on line 2, reader)
    "trec-run-doc": ("run.trec", "q1 Q0 d1 1 2.0 t\nq1 Q0 13{c}x 2 1.0 t\n", read_trec),
    "trec-run-query": ("run.trec", "q1 Q0 d1 1 2.0 t\nq{c}1 Q0 d2 2 1.0 t\n", read_trec),
    "trec-run-4col": ("run.txt", "q1 d1 1 2.0\nq1 13{c}x 2 1.0\n", read_trec),
    "trec-qrels-doc": ("qrels.txt", "q1 0 d1 1\nq1 0 13{c}x 1\n", read_qrels_trec),
    "trec-qrels-query": ("qrels.txt", "q1 0 d1 1\nq{c}1 0 d2 1\n", read_qrels_trec),
    "beir-tsv-doc": ("test.tsv", "query-id\tcorpus-id\tscore\nq1\t13{c}x\t1\n", read_qrels_tsv),
    "beir-tsv-query": ("test.tsv", "query-id\tcorpus-id\tscore\nq{c}1\td1\t1\n", read_qrels_tsv),
    "qrels-jsonl-doc": (
        "qrels.jsonl",
        _jsonl('{"q_id": "q1", "p_id": "d1", "score": 1}', '{"q_id": "q1", "p_id": {j}, "score": 1}'),
        read_qrels_jsonl,
    ),
    "qrels-jsonl-query": (
        "qrels.jsonl",
        _jsonl('{"q_id": "q1", "p_id": "d1", "score": 1}', '{"q_id": {j}, "p_id": "d1", "score": 1}'),
        read_qrels_jsonl,
    ),
    "corpus-jsonl": (
        "corpus.jsonl",
        _jsonl('{"id": "d1", "text": "a"}', '{"id": {j}, "text": "b"}'),
        lambda p: read_texts(p, spaces=True),
    ),
    "query-jsonl": ("query.jsonl", _jsonl('{"id": "q1", "text": "a"}', '{"id": {j}, "text": "b"}'), read_texts),
    "beir-corpus": (
        "corpus.jsonl",
        _jsonl('{"_id": "d1", "text": "a"}', '{"_id": {j}, "text": "b"}'),
        lambda p: read_texts(p, id_key="_id", spaces=True),
    ),
    "expansion": (
        "query_with_hydoc.jsonl",
        _jsonl('{"id": "q1", "text": "a", "hy_doc": "x"}', '{"id": {j}, "text": "b", "hy_doc": "y"}'),
        read_expansion_file,
    ),
    "score-json-doc": ("score.json", _jsonl('{"q1": {"d1": 2.0,', "{j}: 1.0}}"), read_score_json),
    "score-json-query": ("score.json", _jsonl('{"q1": {"d1": 2.0},', '{j}: {"d1": 1.0}}'), read_score_json),
}


@pytest.mark.parametrize("char", CONTROLS, ids=[f"U+{ord(c):04X}" for c in CONTROLS])
@pytest.mark.parametrize("reader", sorted(READERS))
def test_a_control_character_in_any_id_is_a_file_line_error_in_every_reader(tmp_path, reader, char):
    name, template, read = READERS[reader]
    path = tmp_path / name
    path.write_text(template.format(c=char, j=_json_id(char)), encoding="utf-8")
    with pytest.raises(DataError) as caught:
        read(path)
    assert str(caught.value).startswith(f"{path}:2: "), caught.value
    assert "control character" in str(caught.value)


def test_a_nul_in_a_run_is_one_line_at_the_cli_and_not_scored_as_the_id_before_it(tmp_path, r2med_home):
    """The issue's case: ``score`` of a run holding doc ``13\\0x`` against judgments naming ``13``."""
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 13 1\n")
    run = tmp_path / "run.trec"
    run.write_bytes(b"q1 Q0 13\x00x 1 2.0 t\n")
    line = one_line_error(cli("score", str(qrels), str(run), home=r2med_home))
    assert f"{run}:1: the line holds a control character ('\\x00' at column 9)" in line


def test_python_runs_with_control_characters_are_refused_before_writing(tmp_path):
    with pytest.raises(R2MedError, match="holds a control character"):
        write_trec({"q1": {"13\x00x": 1.0}}, tmp_path / "run.trec")
    with pytest.raises(R2MedError, match="contains whitespace"):
        write_trec({"q 1": {"d": 1.0}}, tmp_path / "run.trec")
    with pytest.raises(R2MedError, match="starts or ends with whitespace"):
        write_trec({"q1": {"d ": 1.0}}, tmp_path / "run.trec")
    assert not (tmp_path / "run.trec").exists()
    data = tmp_path / "c"
    data.mkdir()
    (data / "corpus.jsonl").write_text('{"id": "13", "text": "a"}\n')
    (data / "query.jsonl").write_text('{"id": "q1", "text": "a"}\n')
    (data / "qrels.jsonl").write_text('{"q_id": "q1", "p_id": "13", "score": 1}\n')
    with pytest.raises(R2MedError, match="holds a control character"):
        r2med.import_run({"q1": {"13\x00x": 1.0}}, load_folder(data), name="py", out=tmp_path / "out")
    assert not (tmp_path / "out").exists()


# -- issue 32: TREC runs with spaces in document ids -------------------------------------------------

RELEASED = (
    f"1 Q0 {SPACED} 1 15.25 bm25\n"
    f"1 Q0 {PLAIN} 2 14.5 bm25\n"
    f"1 Q0 {DOUBLE} 3 9.0 bm25\n"
    f"2\tQ0\t{SPACED}\t1\t3.5\tbm25\n"  # tab-separated, as some tools write
)
RELEASED_RUN = {"1": {SPACED: 15.25, PLAIN: 14.5, DOUBLE: 9.0}, "2": {SPACED: 3.5}}


def test_six_column_lines_with_spaced_doc_ids_are_read_from_both_ends(tmp_path):
    path = tmp_path / "stackoverflow.trec"
    path.write_text(RELEASED)
    assert read_trec(path) == RELEASED_RUN
    assert trec_tags(path) == ("bm25",)


def test_four_column_files_read_spaced_doc_ids_too(tmp_path):
    path = tmp_path / "run.txt"
    path.write_text(f"1 {PLAIN} 1 14.5\n1 {SPACED} 2 9.0\n")
    assert read_trec(path) == {"1": {PLAIN: 14.5, SPACED: 9.0}}
    assert trec_tags(path) == ()


@pytest.mark.parametrize(
    "text, message",
    [
        ("q1 Q0 d1 1 2.0\n", "run.trec:1: expected 6 fields"),  # 5 fields: no form has them
        ("q1 Q0 d1 1 2.0 t\nq1 d2 2 1.0\n", "run.trec:2: expected 6 fields"),  # the first line set the form
        ("q1 Q0 d1 1 2.0 t extra\n", "run.trec:1: read as a document id with spaces"),  # a stray field
        ("q1 Q0 d 1 x 2.0 t\n", "run.trec:1: read as a document id with spaces ('d 1'), but then the rank 'x'"),
        ("q1 Q0 a b 1 2.0 t\nq1 Q0 a b 2 1.0 t\n", "run.trec:2: doc 'a b' listed twice"),
    ],
)
def test_trec_lines_that_fit_no_form_are_file_line_errors(tmp_path, text, message):
    path = tmp_path / "run.trec"
    path.write_text(text)
    with pytest.raises(DataError, match=message.replace("(", r"\(").replace(")", r"\)")):
        read_trec(path)


def test_spaced_ids_survive_writing_and_reading_back(tmp_path):
    run = {"1": {SPACED: 15.25, PLAIN: 14.5, DOUBLE: 9.0, "é ü/x y": 1.0}, "2": {SPACED: 3.5}}
    write_trec(run, tmp_path / "run.trec", tag="mine")
    assert read_trec(tmp_path / "run.trec") == run
    lines = (tmp_path / "run.trec").read_text().splitlines()
    assert lines[0] == f"1 Q0 {SPACED} 1 15.25 mine"


hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_id_chars = st.characters(codec="utf-8", exclude_categories=("Cc", "Cs", "Zl", "Zp"))
_doc_ids = st.text(_id_chars, min_size=1, max_size=12).filter(lambda s: s == s.strip())
_query_ids = st.text(_id_chars, min_size=1, max_size=6).filter(lambda s: not any(c.isspace() for c in s))
_scores = st.floats(allow_nan=False, allow_infinity=False, width=32)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(run=st.dictionaries(_query_ids, st.dictionaries(_doc_ids, _scores, min_size=1, max_size=5), min_size=1))
def test_property_any_run_r2med_writes_reads_back_the_same(tmp_path, run):
    """Any ids the id rule allows (spaces inside document ids, any script) round-trip through ``run.trec``; the
    JSON score file of the same run reads back the same too."""
    write_trec(run, tmp_path / "run.trec")
    assert read_trec(tmp_path / "run.trec") == r2med.runs.run.as_written(run)
    (tmp_path / "score.json").write_text(json.dumps(run, indent=2))
    assert read_run(tmp_path / "score.json") == {q: {d: float(s) for d, s in docs.items()} for q, docs in run.items()}


def _collection(folder: Path) -> Path:
    """A collection whose document ids hold spaces, as BRIGHT's StackOverflow documents do."""
    folder.mkdir(parents=True)
    docs = [SPACED, PLAIN, DOUBLE, "other/doc 4.txt", "other/doc5.txt"]
    (folder / "corpus.jsonl").write_text("".join(json.dumps({"id": d, "text": f"text {d}"}) + "\n" for d in docs))
    (folder / "query.jsonl").write_text('{"id": "1", "text": "melt"}\n{"id": "2", "text": "unpivot"}\n')
    judged = [("1", SPACED, 1), ("1", DOUBLE, 1), ("2", PLAIN, 1), ("2", "other/doc 4.txt", 1)]
    (folder / "qrels.jsonl").write_text(
        "".join(json.dumps({"q_id": q, "p_id": d, "score": g}) + "\n" for q, d, g in judged)
    )
    return folder


def _pytrec(folder: Path, run: dict) -> dict[str, float]:
    qrels: dict = {}
    for line in (folder / "qrels.jsonl").read_text().splitlines():
        row = json.loads(line)
        qrels.setdefault(row["q_id"], {})[row["p_id"]] = row["score"]
    per_query = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "recall.100"}).evaluate(run)
    return {m: sum(v[m] for v in per_query.values()) / len(per_query) for m in ("ndcg_cut_10", "recall_100")}


def test_import_and_score_a_released_run_with_spaced_ids_as_pytrec_eval_does(tmp_path, r2med_home):
    data = _collection(tmp_path / "stackoverflow")
    path = tmp_path / "released.trec"
    path.write_text(RELEASED)
    want = _pytrec(data, RELEASED_RUN)
    assert want["ndcg_cut_10"] < 1  # the test can tell a wrong reading apart
    scored = cli("score", str(data), str(path), "--format", "json", home=r2med_home)
    assert scored.returncode == 0, scored.stderr
    assert json.loads(scored.stdout)["aggregate"]["ndcg_cut_10"] == pytest.approx(want["ndcg_cut_10"], abs=1e-12)
    proc = cli("import", str(path), "-d", str(data), "--name", "released", "-o", str(tmp_path / "out"), home=r2med_home)
    assert proc.returncode == 0, proc.stderr
    assert "not in the corpus" not in proc.stderr  # every spaced id was found whole
    folder = tmp_path / "out" / "released" / "stackoverflow"
    stored = json.loads((folder / "metrics.json").read_text())
    assert stored["aggregate"]["ndcg_cut_10"] == pytest.approx(want["ndcg_cut_10"], abs=1e-12)
    assert stored["config"]["imported"]["tags"] == ["bm25"]
    assert read_trec(folder / "run.trec") == RELEASED_RUN  # r2med's own run.trec keeps the ids
    again = cli("score", str(data), str(folder), "--format", "json", home=r2med_home)
    assert json.loads(again.stdout)["aggregate"]["ndcg_cut_10"] == pytest.approx(want["ndcg_cut_10"], abs=1e-12)


# -- issue 32: JSON score files ----------------------------------------------------------------------


def test_a_bright_score_file_is_imported_and_scored_as_pytrec_eval_does(tmp_path, r2med_home):
    """BRIGHT's ``run.py`` writes ``json.dump(scores, f, indent=2)``; the file enters as it is, named ``.json`` or
    not (told by its first character)."""
    data = _collection(tmp_path / "stackoverflow")
    scores = {"1": {SPACED: 0.25, "other/doc5.txt": 0.5, DOUBLE: 0.125}, "2": {"other/doc 4.txt": 0.75, SPACED: 0.5}}
    want = _pytrec(data, scores)
    for name in ("score.json", "score_file"):
        path = tmp_path / name
        path.write_text(json.dumps(scores, indent=2))
        assert read_run(path) == scores
        scored = cli("score", str(data), str(path), "--format", "json", home=r2med_home)
        assert scored.returncode == 0, scored.stderr
        assert json.loads(scored.stdout)["aggregate"]["ndcg_cut_10"] == pytest.approx(want["ndcg_cut_10"], abs=1e-12)
    out = tmp_path / "out"
    args = ("import", str(tmp_path / "score.json"), "-d", str(data), "--name", "bright", "-o", str(out))
    proc = cli(*args, home=r2med_home)
    assert proc.returncode == 0, proc.stderr
    stored = json.loads((out / "bright" / "stackoverflow" / "metrics.json").read_text())
    assert stored["aggregate"]["ndcg_cut_10"] == pytest.approx(want["ndcg_cut_10"], abs=1e-12)
    assert stored["aggregate"]["recall_100"] == pytest.approx(want["recall_100"], abs=1e-12)
    assert stored["config"]["imported"]["tags"] == []
    assert read_trec(out / "bright" / "stackoverflow" / "run.trec") == scores


@pytest.mark.parametrize(
    "text, message",
    [
        (
            '{\n  "1": {\n    "a": 1.0,\n    "a": 2.0\n  }\n}\n',
            "score.json:4: doc 'a' listed twice for query '1' (first on line 3)",
        ),
        ('{\n  "1": {"a": 1.0},\n  "1": {"b": 2.0}\n}\n', "score.json:3: query '1' listed twice (first on line 2)"),
        ('{\n  "1": {\n    "a": true\n  }\n}\n', "score.json:3: score of doc 'a' (query '1') is a bool"),
        ('{\n  "1": {\n    "a": "0.5"\n  }\n}\n', "score.json:3: score of doc 'a' (query '1') is a str"),
        ('{\n  "1": {\n    "a": NaN\n  }\n}\n', "score.json:3: score of doc 'a' (query '1') is not a finite number"),
        ('{\n  "1": {\n    "a": 1e400\n  }\n}\n', "score.json:3: score of doc 'a' (query '1') is not a finite number"),
        ('{"1": {"a": 1' + "0" * 400 + "}}", "score.json:1: score of doc 'a' (query '1') is not a finite number"),
        ('{"1": {"a": {"b": 1}}}', "score.json:1: score of doc 'a' (query '1') is a dict"),
        ('{"1": [["a", 1.0]]}', "score.json:1: malformed JSON score file: expected an object {doc id: score}"),
        ('[{"1": {"a": 1}}]', "score.json:1: malformed JSON score file: expected an object {query id"),
        ('{\n"1": {"a": 1.0,}\n}', "score.json:2: malformed JSON score file: expected a doc id in quotes"),
        ('{"1": {"a": 1.0}}\n{"2": {"a": 1.0}}\n', "score.json:2: malformed JSON score file: text after the closing"),
        ('{"q 1": {"a": 1.0}}', "score.json:1: query id 'q 1' contains whitespace"),
        ('{"1": {" a": 1.0}}', "score.json:1: document id ' a' starts or ends with whitespace"),
        ('{"1": {"a\\ud800": 1.0}}', "score.json:1: a string holds a lone surrogate"),
        ('{"1": {}}', "score.json: empty run file (no query has a document)"),
        ("{}", "score.json: empty run file (no query)"),
        ("", "score.json: empty run file"),
        ('{"1": {"a": 1.0}', "score.json:1: malformed JSON score file: expected ',' or '}' after a query's object"),
        ('{"1": {"a": ' + "[" * 100000 + "]" * 100000 + "}}", "score.json:1: score of doc 'a' (query '1') is nested"),
    ],
)  # fmt: skip
def test_score_file_faults_are_file_line_errors(tmp_path, text, message):
    path = tmp_path / "score.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(DataError) as caught:
        read_run(path)
    assert str(caught.value).startswith(f"{path.parent}/{message}"), caught.value


def test_a_bad_score_file_is_one_line_at_the_cli_and_writes_nothing(tmp_path, r2med_home):
    data = _collection(tmp_path / "stackoverflow")
    path = tmp_path / "score.json"
    path.write_text('{\n  "1": {\n    "a": 1.0,\n    "a": 2.0\n  }\n}\n')
    imported = cli("import", str(path), "-d", str(data), "--name", "x", "-o", str(tmp_path / "out"), home=r2med_home)
    line = one_line_error(imported)
    assert f"{path}:4: doc 'a' listed twice" in line
    assert not (tmp_path / "out").exists()
    line = one_line_error(cli("score", str(data), str(path), home=r2med_home))
    assert f"{path}:4: doc 'a' listed twice" in line
