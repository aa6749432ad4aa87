"""Every fault is a one-line error with exit code 2, found before the compute.

Numeric options out of range or not finite, unwritable destinations, inputs that are folders,
OS errors at the CLI boundary, damaged metrics.json, and user text printed through Rich
(never read as markup).
"""

from __future__ import annotations

import errno
import json
import math
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import run_r2med
from r2med.errors import R2MedError
from test_containment import make_data, make_run_folder, one_line_error, r2med, snapshot, tamper

# -- numeric options ---------------------------------------------------------------------------------

EVALUATE = ["evaluate", "--data-dir", "/nonexistent-r2med-data"]
RERANK = ["rerank", "--run", "/nonexistent-run", "--reranker", "bge-reranker"]
FUSE = ["fuse", "/nonexistent-a", "/nonexistent-b"]
#: since issue 30 a step command's numbers reach the spec of what it runs as typed, so an option is checked by the
#: retriever or reranker that takes it (BM25 takes no --batch-size: that is "unknown option" first)
DENSE_EVALUATE = [*EVALUATE, "-r", "bge"]
LISTWISE = ["rerank", "--run", "/nonexistent-run", "--reranker", "listwise", "--model", "m"]
EXPAND = [
    "expand",
    "--method",
    "hyde",
    "--model",
    "m",
    "--base-url",
    "http://127.0.0.1:9/v1",
    "--data-dir",
    "/nonexistent-r2med-data",
]
REPORT = ["report", "/nonexistent-run"]


def expand_args(data: Path, out: Path) -> list[str]:
    """``expand`` HyDE of ``data`` into ``out`` against an endpoint nothing answers (errors come first)."""
    return [*EXPAND[:-1], str(data), "--prompt-task", "Biology", "-o", str(out)]


COMPARE = ["compare", "/nonexistent-a", "/nonexistent-b"]
REPRODUCE = ["reproduce", "--dry-run"]
ENCODE = ["encode", "--retriever", "bge", "--data-dir", "/nonexistent-r2med-data"]

BAD_NUMBERS = [
    (EVALUATE, "--top-k", "0"),
    (EVALUATE, "--k1", "nan"),
    (EVALUATE, "--k1", "inf"),
    (EVALUATE, "--k1", "-1"),
    (EVALUATE, "--k1", "1e999"),
    (EVALUATE, "--b", "-0.1"),
    (EVALUATE, "--b", "1.5"),
    (EVALUATE, "--b", "nan"),
    (DENSE_EVALUATE, "--batch-size", "0"),
    (DENSE_EVALUATE, "--max-length", "1"),
    (RERANK, "--top-k", "0"),
    (RERANK, "--batch-size", "0"),
    (RERANK, "--max-length", "7"),
    (LISTWISE, "--window", "1"),
    (LISTWISE, "--step", "0"),
    (LISTWISE, "--concurrency", "0"),
    (FUSE, "--rrf-k", "nan"),
    (FUSE, "--rrf-k", "-1"),
    (FUSE, "--rrf-k", "inf"),
    (FUSE, "--top-k", "0"),
    (EXPAND, "--concurrency", "0"),
    (EXPAND, "--timeout", "0"),
    (EXPAND, "--timeout", "nan"),
    (EXPAND, "--max-retries", "-1"),
    (EXPAND, "--temperature", "nan"),
    (EXPAND, "--temperature", "-0.5"),
    (EXPAND, "--temperature", "3"),
    (EXPAND, "--top-p", "0"),
    (EXPAND, "--top-p", "1.5"),
    (EXPAND, "--max-tokens", "0"),
    (EXPAND, "--seed", "-1"),
    (EXPAND, "--max-turns", "0"),
    (EXPAND, "--search-k", "0"),
    (REPORT, "--tolerance", "nan"),
    (REPORT, "--tolerance", "-1"),
    (REPORT, "--permutations", "10"),
    (REPORT, "--seed", "-1"),
    (REPORT, "--alpha", "0"),
    (REPORT, "--alpha", "1"),
    (REPORT, "--alpha", "nan"),
    (COMPARE, "--permutations", "10"),
    (COMPARE, "--alpha", "1.5"),
    (COMPARE, "--per-query", "-1"),
    (COMPARE, "--seed", "-1"),
    (REPRODUCE, "--tolerance", "inf"),
    (ENCODE, "--max-length", "1"),
    (ENCODE, "--batch-size", "0"),
    (ENCODE, "--shard-size", "0"),
    (ENCODE, "--actors", "0"),
    (ENCODE, "--cpus-per-actor", "0"),
    (ENCODE, "--cpus-per-actor", "nan"),
    (ENCODE, "--gpus-per-actor", "-1"),
    (ENCODE, "--gpus-per-actor", "inf"),
]


@pytest.mark.parametrize("base,option,value", BAD_NUMBERS, ids=[f"{b[0]} {o} {v}" for b, o, v in BAD_NUMBERS])
def test_numeric_option_rejected_at_parse_time(base, option, value):
    message = one_line_error(run_r2med(*base, option, value)).removeprefix("error: ")
    assert message.startswith(f"{option}: expected ") and "\n" not in message
    got = float(message.rsplit(", got ", 1)[1])
    assert got == float(value) or (math.isnan(got) and math.isnan(float(value)))


@pytest.mark.parametrize("option,value", [("--k1", "0"), ("--b", "0"), ("--b", "1"), ("--top-k", "1")])
def test_numeric_option_edges_accepted(option, value):
    res = run_r2med(*EVALUATE, option, value)
    assert res.returncode == 2 and ("no such folder" in res.stderr or "not a collection" in res.stderr), res.stderr


def test_numeric_error_is_one_line_exit_2_and_nothing_is_computed(tmp_path):
    data = make_data(tmp_path)
    line = one_line_error(r2med("evaluate", "--data-dir", str(data), "--out", str(tmp_path / "out"), "--k1", "nan"))
    assert line == "error: --k1: expected a finite number >= 0, got nan"
    assert not (tmp_path / "out").exists()


def test_fuse_weights_and_set_values_must_be_finite(tmp_path):
    data = make_data(tmp_path)
    one, two = (make_run_folder(tmp_path, n, data).parent for n in ("one", "two"))
    for weights in ("1,nan", "1,-1", "0,0", "1,inf"):
        assert "--weights" in one_line_error(r2med("fuse", str(one), str(two), "--weights", weights))
    res = run_r2med("rerank", "--run", str(one), "--reranker", "listwise", "--model", "m", "--set", "temperature=NaN")
    assert "--set temperature: expected a finite number" in one_line_error(res)
    assert not (tmp_path / "runs" / "rrf-one+two").exists()


def test_a_set_value_nested_too_deeply_is_text_and_one_line(tmp_path):
    """``--set k1=[[[...]]]`` 900 deep parses (under Python's limit), then the check of its numbers recursed into it:
    RecursionError, a traceback.  The one JSON reader refuses it (deeper than 100 levels), so it is read as text."""
    data = make_data(tmp_path)
    for depth in (900, 50_000):
        deep = "[" * depth + "]" * depth
        line = one_line_error(r2med("evaluate", "-d", str(data), "-o", str(tmp_path / "out"), "--set", f"k1={deep}"))
        assert line.startswith("error: --k1: expected a finite number >= 0, got '[[[") and len(line) < 300
    assert not (tmp_path / "out").exists()


# -- destinations and inputs checked up front ---------------------------------------------------------


@pytest.fixture
def readonly_dir(tmp_path):
    """A folder nobody here can write: chmod for ordinary users, a read-only tmpfs for root (skip if impossible)."""
    path = tmp_path / "readonly"
    path.mkdir()
    if os.geteuid() != 0:
        path.chmod(0o555)
        yield path
        path.chmod(0o755)
        return
    mount = shutil.which("mount")
    if (
        not mount
        or subprocess.run([mount, "-t", "tmpfs", "-o", "ro,size=1m", "none", str(path)], capture_output=True).returncode
        != 0
    ):
        pytest.skip("running as root and cannot mount a read-only tmpfs")
    try:
        yield path
    finally:
        subprocess.run(["umount", str(path)], capture_output=True)


def test_out_that_is_a_file_fails_before_loading(tmp_path):
    data = make_data(tmp_path)
    (tmp_path / "out").write_text("a file")
    line = one_line_error(r2med("evaluate", "--data-dir", str(data), "--out", str(tmp_path / "out")))
    assert str(tmp_path / "out") in line and "is a file" in line
    inside = tmp_path / "out" / "deeper"
    line = one_line_error(r2med("evaluate", "--data-dir", str(data), "--out", str(inside)))
    assert "is a file" in line


def test_out_read_only_fails_before_loading(tmp_path, readonly_dir):
    data = make_data(tmp_path)
    line = one_line_error(r2med("evaluate", "--data-dir", str(data), "--out", str(readonly_dir / "runs"), "--no-cache"))
    assert str(readonly_dir) in line and "not writable" in line


def test_home_that_is_a_file_or_read_only(tmp_path, readonly_dir):
    data = make_data(tmp_path)
    home = tmp_path / "home-file"
    home.write_text("x")
    line = one_line_error(
        r2med("evaluate", "--data-dir", str(data), "--out", str(tmp_path / "o"), env={"R2MED_HOME": str(home)})
    )
    assert str(home) in line and "R2MED_HOME" in line
    line = one_line_error(
        r2med(
            "evaluate",
            "--data-dir",
            str(data),
            "--out",
            str(tmp_path / "o"),
            env={"R2MED_HOME": str(readonly_dir / "home")},
        )
    )
    assert "not writable" in line and "R2MED_HOME" in line
    assert not (tmp_path / "o").exists()
    # --no-cache does not need the home
    res = r2med(
        "evaluate", "--data-dir", str(data), "--out", str(tmp_path / "o"), "--no-cache", env={"R2MED_HOME": str(home)}
    )
    assert res.returncode == 0, res.stderr


def test_report_outputs_naming_a_folder(tmp_path):
    data = make_data(tmp_path)
    runs = make_run_folder(tmp_path, "one", data).parent.parent
    (tmp_path / "adir").mkdir()
    for args in (
        ["-o", str(tmp_path / "adir")],
        ["--html", str(tmp_path / "adir")],
        ["--format", "csv", "-o", str(tmp_path / "adir")],
    ):
        line = one_line_error(r2med("report", str(runs), *args))
        assert str(tmp_path / "adir") in line and "folder" in line
    line = one_line_error(r2med("compare", str(runs / "one"), str(runs / "one"), "-o", str(tmp_path / "adir")))
    assert "folder" in line


def test_expand_out_naming_a_file_fails_before_any_request(tmp_path):
    data = make_data(tmp_path)
    (tmp_path / "exp").write_text("x")
    line = one_line_error(
        r2med(
            *expand_args(data, tmp_path / "exp"),
        )
    )
    assert str(tmp_path / "exp") in line and "is a file" in line


def test_score_with_a_folder_for_qrels_or_run(tmp_path):
    """A collection folder means its judgments; a task/system folder or root its collection's run.trec."""
    data = make_data(tmp_path)
    other = make_data(tmp_path, "t2")
    run = make_run_folder(tmp_path, "one", data) / "run.trec"
    make_run_folder(tmp_path, "one", other, run={"q1": {"b": 2.0, "a": 1.0}})
    expected = r2med("score", str(data / "qrels.jsonl"), str(run))
    assert expected.returncode == 0 and "recip_rank      \tall\t1.0000" in expected.stdout
    for qrels, run_arg in ((data, run), (data, run.parent), (data, run.parent.parent), (data, tmp_path / "runs")):
        res = r2med("score", str(qrels), str(run_arg))
        assert res.returncode == 0 and res.stdout == expected.stdout, (qrels, run_arg, res.stderr)
    # a system of two tasks and judgments that name neither: which run is meant is not guessed
    line = one_line_error(r2med("score", str(data / "qrels.jsonl"), str(run.parent.parent)))
    assert "holds 2 task folders" in line and "pass one task folder" in line
    empty = tmp_path / "empty"
    empty.mkdir()
    assert "not a collection folder" in one_line_error(r2med("score", str(empty), str(run)))
    assert "no results found" in one_line_error(r2med("score", str(data), str(empty)))


def test_os_error_at_the_cli_boundary_is_one_line(monkeypatch, capsys):
    import r2med.cli as cli

    def boom():
        raise OSError(errno.ENOSPC, "No space left on device", "/data/out/bm25/t1")

    monkeypatch.setattr(cli, "app", boom)
    with pytest.raises(SystemExit) as exit_:
        cli.main()
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err == "error: /data/out/bm25/t1: No space left on device"


# -- metrics.json is checked when read ---------------------------------------------------------------


@pytest.mark.parametrize(
    "change,why",
    [
        ({"aggregate": {"ndcg_cut_10": math.nan}}, "aggregate.ndcg_cut_10"),
        ({"per_query": {"q1": {"ndcg_cut_10": math.inf}}}, "per_query"),
        ({"per_query": {"q1": {"ndcg_cut_10": "0.5"}}}, "per_query"),
        ({"per_query": [1, 2]}, "per_query"),
        ({"aggregate": {"ndcg_cut_10": True}}, "aggregate.ndcg_cut_10"),
        ({"aggregate": None}, "aggregate"),
        ({"config": "x"}, "config"),
        ({"task": 5}, "task"),
    ],
)
def test_compare_refuses_a_damaged_metrics_json(tmp_path, change, why):
    data = make_data(tmp_path)
    one = make_run_folder(tmp_path, "one", data)
    two = make_run_folder(tmp_path, "two", data, {"q1": {"b": 3.0, "a": 2.0}})
    tamper(two, **change)
    line = one_line_error(r2med("compare", str(one.parent), str(two.parent)))
    assert str(two / "metrics.json") in line and why in line


@pytest.mark.parametrize("text", ["[1, 2]", "", "{", "\xff\xfe", "null"])
def test_metrics_json_that_is_not_an_object(tmp_path, text):
    data = make_data(tmp_path)
    one = make_run_folder(tmp_path, "one", data)
    (one / "metrics.json").write_bytes(text.encode("latin-1"))
    line = one_line_error(r2med("report", str(one.parent)))
    assert str(one / "metrics.json") in line


def test_compare_with_nan_was_reported_significant_and_is_now_an_error(tmp_path):
    """The reported defect: a NaN per-query value printed `B-A +nan` and was marked significant."""
    data = make_data(tmp_path)
    one = make_run_folder(tmp_path, "one", data)
    two = make_run_folder(tmp_path, "two", data, {"q1": {"b": 3.0, "a": 2.0}})
    meta = json.loads((two / "metrics.json").read_text())
    meta["per_query"]["q1"]["ndcg_cut_10"] = math.nan
    (two / "metrics.json").write_text(json.dumps(meta))
    res = r2med("compare", str(one.parent), str(two.parent))
    assert "nan" not in res.stdout
    assert "is nan, not a finite number" in one_line_error(res)


# -- user text is printed as text, never read as Rich markup ---------------------------------------


@pytest.mark.parametrize("message", ["unknown id [/x]", "[bold]X", "a [red]b[/red] c", "[link=file:///etc]x"])
def test_error_messages_print_user_text_literally(monkeypatch, capsys, message):
    import r2med.cli as cli

    def boom():
        raise R2MedError(message)

    monkeypatch.setattr(cli, "app", boom)
    with pytest.raises(SystemExit):
        cli.main()
    assert capsys.readouterr().err.strip() == f"error: {message}"


def test_markup_in_a_task_argument(tmp_path):
    line = one_line_error(r2med("evaluate", "--tasks", "[/x]"))
    assert "'[/x]'" in line
    line = one_line_error(r2med("evaluate", "--tasks", "[bold]X"))
    assert "'[bold]X'" in line


def test_markup_in_names_printed_by_tables(tmp_path):
    """Task and system names come from folders: the tables, progress bars and notes print them as text."""
    data = make_data(tmp_path, task="[bold]t1")
    out = tmp_path / "runs"
    res = r2med("evaluate", "--data-dir", str(data), "--out", str(out))
    assert res.returncode == 0, res.stderr
    assert "[bold]t1" in res.stdout
    res = r2med("evaluate", "-r", "bm25-standard", "--data-dir", str(data), "--out", str(out))
    assert res.returncode == 0, res.stderr
    shutil.copytree(out / "bm25", out / "[red]sys")
    res = r2med("report", str(out))
    assert res.returncode == 0, res.stderr
    assert "[bold]t1" in res.stdout and "[red]sys" in res.stdout
    res = r2med("compare", str(out / "bm25"), str(out / "[red]sys"), "--per-query", "0")
    assert res.returncode == 0, res.stderr
    assert "[bold]t1" in res.stdout and "[red]sys" in res.stdout


def test_markup_in_cache_entries(tmp_path):
    home = tmp_path / "home"
    (home / "bm25" / "[red]z").mkdir(parents=True)
    (home / "bm25" / "[bold]y").mkdir(parents=True)
    res = r2med("cache", "ls", env={"R2MED_HOME": str(home), "COLUMNS": "200"})
    assert res.returncode == 0, res.stderr
    assert "[red]z" in res.stdout and "[bold]y" in res.stdout
    res = r2med("cache", "rm", "bm25", "[red]z", env={"R2MED_HOME": str(home)})
    assert res.returncode == 0, res.stderr
    assert not (home / "bm25" / "[red]z").exists() and (home / "bm25" / "[bold]y").exists()


def test_nothing_written_on_numeric_error(tmp_path):
    data = make_data(tmp_path)
    before = snapshot(tmp_path)
    one_line_error(r2med("evaluate", "--data-dir", str(data), "--out", str(tmp_path / "o"), "--b", "inf"))
    assert snapshot(tmp_path) == before


# -- errors that say what happened (issue 21, items 8-10) -------------------------------------------


def test_a_full_disk_names_the_file(tmp_path, monkeypatch):
    """A write that fails without a file name (a file object's ``write`` raising ENOSPC) is reported with the path."""
    from pathlib import Path

    data = make_data(tmp_path)
    out = tmp_path / "runs"

    def full(self, *args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Path, "write_text", full)
    line = one_line_error(r2med("-q", "evaluate", "--data-dir", str(data), "--out", str(out), "--no-cache"))
    assert "No space left on device" in line and str(out) in line, line
    assert not any(out.rglob("metrics.json"))


def test_a_short_write_while_indexing_says_so_with_the_path(tmp_path, monkeypatch):
    """numpy's short write (``72785 requested and 8160 written``, no errno) names the index and the likely cause."""
    import numpy as np

    data = make_data(tmp_path)
    home = tmp_path / "home"

    def short(*args, **kwargs):
        raise OSError("72785 requested and 8160 written")

    monkeypatch.setattr(np, "save", short)
    line = one_line_error(
        r2med("-q", "evaluate", "--data-dir", str(data), "--out", str(tmp_path / "runs"), env={"R2MED_HOME": str(home)})
    )
    assert "72785 requested and 8160 written" in line and "disk full" in line and str(home) in line, line


def test_a_truncated_hub_download_is_one_line_even_with_quiet(tmp_path):
    from hub_server import HubEmulator, r2med_task_files
    from test_hub import PIN, cli

    with HubEmulator() as hub:
        hub.add("R2MED/Biology", r2med_task_files(), PIN)
        hub.truncated.add("corpus.jsonl")
        for quiet in (("-q",), ()):
            res = cli(
                *quiet,
                "evaluate",
                "-t",
                "Biology",
                "-o",
                str(tmp_path / "o"),
                hub=hub,
                cache=tmp_path / "hf" / "hub",
                home=tmp_path / "home",
            )
            assert res.returncode == 2 and "Traceback" not in res.stderr
            assert "Error while downloading" not in res.stderr, res.stderr  # was: 20 lines of retry warnings
            lines = [line for line in res.stderr.splitlines() if line.strip()]
            assert len(lines) == (1 if quiet else 2), res.stderr  # without -q: the progress line too
            assert "corpus.jsonl" in lines[-1] and "broke off" in lines[-1], lines[-1]


@pytest.mark.parametrize(
    "name,why",
    [
        ("a/b", "path separator"),
        ("x y", "whitespace"),
        ("é" * 101, "longer than 200 bytes"),
        ("MyLLM", "folder form"),
        ("my_llm", "folder form"),
        ("..", "names a folder"),
        ("", "is empty"),
    ],
)
def test_expand_refuses_llm_names_it_used_to_rewrite(tmp_path, name, why):
    """``--llm-name a/b`` wrote folder ``b``, ``x y`` wrote ``x-y``, 101 x é wrote ``llm``: two names, one folder."""
    data = make_data(tmp_path)
    out = tmp_path / "exp"
    for flag in ("--llm-name", "--name"):
        line = one_line_error(
            r2med(
                *expand_args(data, out),
                flag,
                name,
            )
        )
        assert why in line and "--llm-name" in line, line
    assert not out.exists()


def test_huge_values_are_echoed_bounded_and_refused_fast(tmp_path):
    import time

    data = make_data(tmp_path)
    big = "T" * 5_000_000
    line = one_line_error(r2med("evaluate", "--tasks", big))
    assert len(line) < 400 and "5,000,000 characters" in line, len(line)
    start = time.monotonic()
    line = one_line_error(
        r2med("evaluate", "--data-dir", str(data), "--out", str(tmp_path / "o"), "--name", "n" * 20_000_000)
    )
    took = time.monotonic() - start
    assert len(line) < 400 and "longer than 200 bytes" in line, line[:400]
    assert took < 4.0, took  # the length check first: the character scans of 20 MB took seconds
    line = one_line_error(r2med("evaluate", "-r", "r" * 5_000_000, "--data-dir", str(data)))
    assert len(line) < 1000 and "unknown retriever" in line


def test_one_error_line_is_bounded_whatever_raised_it(monkeypatch, capsys):
    import r2med.cli as cli

    def boom():
        raise R2MedError("x" * 3_000_000)

    monkeypatch.setattr(cli, "app", boom)
    with pytest.raises(SystemExit):
        cli.main()
    err = capsys.readouterr().err.strip()
    assert len(err) < 2200 and "3,000,000 characters in all" in err


# -- a run that shares no query with its judgments (issue 27, item 4) -------------------------------

OVERLAP_SCORER = """
class Overlap:
    name = "overlap"

    def score(self, query, docs):
        return [float(len(set(query.split()) & set(d.split()))) for d in docs]
"""


def _old_import(tmp_path: Path, data: Path, name: str) -> Path:
    """A system folder holding a run of query ``x1`` only, as ``r2med import`` wrote one before the rule (0 queries
    scored): what rerank and fuse read."""
    from r2med.data.loaders import load_folder
    from r2med.evaluation.metrics import Metrics
    from r2med.results.folders import metrics_payload
    from r2med.runs.run import write_task_results

    coll = load_folder(data)
    nothing = Metrics(per_query={}, aggregate={"ndcg_cut_10": 0.0}, measures=("ndcg_cut_10",))
    folder = tmp_path / "old" / name / coll.name
    write_task_results(folder, {"x1": {"a": 2.0, "b": 1.0}}, metrics_payload(coll, name, {}, nothing, {}))
    return folder.parent


def test_a_run_that_shares_no_query_with_its_judgments_is_one_line_everywhere(tmp_path):
    """Every place a run is scored (import into one collection or several, score, evaluate, rerank, fuse): trec_eval's
    num_q 0 is one line naming the task or file, exit 2, nothing written.  Before, import into one collection wrote
    a system of 0 queries and 0.00 (exit 0) while the same file was an error with several collections, and score,
    evaluate, rerank and fuse printed 0 queries and 0.00 with exit 0.  pytrec_eval itself scores no query here."""
    import pytrec_eval

    data = make_data(tmp_path)  # t1: query q1, judged
    make_data(tmp_path, "t2")
    other = tmp_path / "other.trec"
    other.write_text("x1 Q0 a 1 2.0 mine\nx1 Q0 b 2 1.0 mine\n")
    assert pytrec_eval.RelevanceEvaluator({"q1": {"a": 1}}, {"ndcg_cut.10"}).evaluate({"x1": {"a": 2.0}}) == {}
    mismatched = tmp_path / "mismatched" / "t1"  # judgments that name another query than its queries file
    shutil.copytree(data, mismatched)
    (mismatched / "qrels.jsonl").write_text(json.dumps({"q_id": "q9", "p_id": "a", "score": 1}) + "\n")
    (tmp_path / "overlap.py").write_text(OVERLAP_SCORER)
    scorer = f"{tmp_path / 'overlap.py'}:Overlap"
    one, two = _old_import(tmp_path, data, "one"), _old_import(tmp_path, data, "two")
    out = tmp_path / "out"
    cases = {
        "import": (["import", other, "-d", data, "--name", "imp", "-o", out], f"{other}: t1: the run's 1 query"),
        "import, several": (["import", other, "-d", data.parent, "--name", "imp", "-o", out], "none of its 1 query"),
        "score": (["score", data, other], f"{other} against {data / 'qrels.jsonl'}: the run's 1 query"),
        "evaluate": (["evaluate", "-r", "bm25", "-d", mismatched, "-o", out], "t1: the task's 1 query (e.g. 'q1')"),
        "rerank": (
            ["rerank", "--run", one, "--reranker", "custom", "--scorer", scorer, "-o", out],
            "t1: the run ranks no document",
        ),
        "fuse": (["fuse", one, two, "-d", data.parent, "-o", out], "t1: the run's 1 query (e.g. 'x1')"),
    }
    before = snapshot(tmp_path)
    for case, (args, said) in cases.items():
        res = r2med("-q", *map(str, args))
        assert res.returncode == 2 and "Traceback" not in res.stderr, (case, res.stdout, res.stderr)
        errors = [line for line in res.stderr.splitlines() if not line.startswith("WARNING")]
        assert len(errors) == 1 and said in errors[0], (case, res.stderr)
        assert case == "import, several" or "nothing to score" in errors[0], (case, res.stderr)
        assert res.stdout == "" and snapshot(tmp_path) == before and not out.exists(), case
