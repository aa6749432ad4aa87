"""Hostile ``metrics.json`` values fed to every reader of results: report, compare, export, fuse and a resumed
evaluate.  Each answers with a result or a one-line error naming the file -- never a traceback, never an
out-of-range value shown as a score (issue 21, item 4)."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, example, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from conftest import run_r2med  # noqa: E402

TEN_MB = "x" * 10_000_000
#: JSON literals, written as text (a 5,000-digit integer cannot even be made by json.dumps).
HOSTILE = [
    "1" + "0" * 400,
    "9" * 5000,
    "-" + "7" * 4400,
    "NaN",
    "Infinity",
    "-Infinity",
    "1e308",
    "-5",
    "1.0000001",
    "1e-400",
    "true",
    "null",
    "[]",
    "{}",
    '"0.5"',
    json.dumps(TEN_MB),
    json.dumps("a\nb\u202e"),
    "0.5",
    "0",
]
#: Where a value is put: a key path in bm25-standard/Biology/metrics.json.
WHERE = [
    ("aggregate", "ndcg_cut_10"),
    ("aggregate", "recall_100"),
    ("per_query", "q1", "ndcg_cut_10"),
    ("per_query", "q1", "recip_rank"),
    ("per_query", "q1"),
    ("per_query",),
    ("aggregate",),
    ("timing", "search"),
    ("count_missing",),
    ("task",),
    ("retriever",),
    ("config", "k1"),
    ("config",),
    ("source",),
    ("dataset_fingerprint",),
    ("versions", "r2med"),
    ("revision",),
]
SENTINEL = "@@hostile@@"


@pytest.fixture
def finished_runs(tmp_path):
    """A results root with two systems on two tasks (``runs/{bm25,bm25-standard}/{Biology,MedQA-Diag}``)."""
    from test_report import synthetic, write_collection

    data = tmp_path / "data"
    write_collection(data, "Biology")
    write_collection(data, "MedQA-Diag", *synthetic())
    for system in ("bm25", "bm25-standard"):
        res = run_r2med("evaluate", "-r", system, "-d", str(data), "-o", str(tmp_path / "runs"))
        assert res.returncode == 0, res.stderr
    return data, tmp_path / "runs"


def _plant(metrics: Path, where: tuple[str, ...], literal: str) -> None:
    data = json.loads(metrics.read_text())
    holder = data
    for key in where[:-1]:
        if not isinstance(holder.get(key), dict):
            holder[key] = {}
        holder = holder[key]
    holder[where[-1]] = SENTINEL
    metrics.write_text(json.dumps(data).replace(json.dumps(SENTINEL), literal))


def _one_line_error(res, path: Path | None = None) -> None:
    assert res.returncode == 2, (res.returncode, res.stdout[-2000:], res.stderr[-2000:])
    lines = res.stderr.strip().splitlines()  # log lines (INFO/WARNING) may come first; one error line, last
    errors = [line for line in lines if line.startswith("error:")]
    assert errors == lines[-1:] and "Traceback" not in res.stderr, res.stderr[:2000]
    assert len(errors[0]) < 2000, errors[0][:300]
    if path is not None:
        assert str(path) in errors[0], errors[0]


def _no_bad_figure(text: str) -> None:
    for bad in ("inf", "nan", "-500.00", "1e+308"):
        assert bad not in text.lower().replace("info", ""), text[:3000]


def test_hostile_metrics_values_reach_no_reader_as_a_traceback(finished_runs):
    data, base = finished_runs

    @settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(where=st.sampled_from(WHERE), literal=st.sampled_from(HOSTILE))
    @example(where=("aggregate", "ndcg_cut_10"), literal="1" + "0" * 400)
    @example(where=("per_query", "q1", "ndcg_cut_10"), literal="9" * 5000)
    @example(where=("aggregate", "ndcg_cut_10"), literal="1e308")
    @example(where=("aggregate", "ndcg_cut_10"), literal="-5")
    @example(where=("retriever",), literal=json.dumps(TEN_MB))
    def check(where: tuple[str, ...], literal: str) -> None:
        work = Path(tempfile.mkdtemp(prefix="r2med-hostile-"))
        try:
            runs = work / "runs"
            shutil.copytree(base, runs)
            metrics = runs / "bm25-standard" / "Biology" / "metrics.json"
            _plant(metrics, where, literal)
            from r2med.errors import R2MedError
            from r2med.runs.record import read_record

            try:
                read_record(metrics.parent).to_json()
                accepted = True
            except R2MedError as exc:
                accepted = False
                assert str(metrics) in str(exc) and "\n" not in str(exc), str(exc)[:300]
            readers = {
                "report": ["report", str(runs)],
                "compare": ["compare", str(runs / "bm25"), str(runs / "bm25-standard"), "--permutations", "100"],
                "export": ["export", "-f", "mteb", str(runs), "-o", str(work / "mteb"), "--force"],
                "fuse": [
                    "fuse",
                    str(runs / "bm25"),
                    str(runs / "bm25-standard"),
                    "-d",
                    str(data),
                    "-o",
                    str(work / "fused"),
                ],
            }
            for name, args in readers.items():
                res = run_r2med(*args)
                if accepted:
                    assert res.returncode in (0, 2), (name, res.stderr[:2000])
                    if res.returncode == 2:
                        _one_line_error(res)
                    elif name in ("report", "compare"):
                        _no_bad_figure(res.stdout)
                else:
                    _one_line_error(res, metrics)
                    assert not (work / "mteb").exists() and not (work / "fused").exists(), name
            # evaluate's resume: a damaged folder is not reused but replaced by a fresh, valid one
            res = run_r2med("evaluate", "-r", "bm25-standard", "-d", str(data), "-o", str(runs))
            assert res.returncode == 0, res.stderr[:2000]
            read_record(metrics.parent).to_json()
        finally:
            shutil.rmtree(work, ignore_errors=True)

    check()


def test_each_reported_value_is_refused_in_one_line_naming_file_and_key(finished_runs):
    """The issue's cases, one by one: 400 digits (was OverflowError), 4,400 digits (was json's ValueError),
    1e308 (was shown as inf), -5 (was shown as -500.00)."""
    _, base = finished_runs
    metrics = base / "bm25-standard" / "Biology" / "metrics.json"
    original = metrics.read_text()
    cases = [
        ("1" + "0" * 400, "401-digit integer"),
        ("7" * 4400, "4,400-digit integer"),
        ("1e308", "outside 0..1"),
        ("-5", "outside 0..1"),
    ]
    for literal, said in cases:
        metrics.write_text(original)
        _plant(metrics, ("aggregate", "ndcg_cut_10"), literal)
        for args in (["report", str(base)], ["compare", str(base / "bm25"), str(base / "bm25-standard")]):
            res = run_r2med(*args)
            _one_line_error(res, metrics)
            assert "aggregate.ndcg_cut_10" in res.stderr and said in res.stderr, res.stderr
    metrics.write_text(original)


def test_compare_over_disjoint_queries_is_an_error_not_nan(finished_runs):
    _, base = finished_runs
    metrics = base / "bm25-standard" / "Biology" / "metrics.json"
    data = json.loads(metrics.read_text())
    data["per_query"] = {f"other-{q}": v for q, v in data["per_query"].items()}
    metrics.write_text(json.dumps(data))
    res = run_r2med("compare", str(base / "bm25"), str(base / "bm25-standard"), "--permutations", "100")
    _one_line_error(res)
    assert "share no query" in res.stderr and "nan" not in res.stdout.lower()


def teardown_module(module) -> None:
    for folder in Path(tempfile.gettempdir()).glob("r2med-hostile-*"):
        shutil.rmtree(folder, ignore_errors=True)
