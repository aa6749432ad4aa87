"""The small frictions of a first hour (issue 23, part 7): flags shown as flags, ``-q`` quiet everywhere, one
meaning per short option, "did you mean", ``report -t``, the dry run in 80 columns, one naming rule for model
folders, the pooled line and the macro average told apart, ``cache ls`` naming collections, and suggested
commands printed whole."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import run_r2med

DOCS = {
    "d1": "aspirin reduces fever and pain",
    "d2": "insulin treats diabetes mellitus",
    "d3": "statins lower blood cholesterol",
    "d4": "antibiotics treat bacterial infection",
    "d5": "vaccines prevent viral disease",
    "d6": "fever in children with infection",
}
#: two collections of different sizes: the pooled mean and the macro average differ
COLLECTIONS = {
    "alpha": ({"a1": "fever pain", "a2": "diabetes"}, [("a1", "d1", 1), ("a2", "d2", 1)]),
    "beta": (
        {"b1": "cholesterol", "b2": "bacterial infection", "b3": "viral vaccines", "b4": "fever children"},
        [("b1", "d3", 1), ("b2", "d4", 1), ("b3", "d5", 1), ("b4", "d1", 1)],
    ),
}


def write_collections(root: Path) -> Path:
    for name, (queries, qrels) in COLLECTIONS.items():
        folder = root / name
        folder.mkdir(parents=True)
        (folder / "corpus.jsonl").write_text("".join(json.dumps({"id": d, "text": t}) + "\n" for d, t in DOCS.items()))
        (folder / "query.jsonl").write_text(
            "".join(json.dumps({"id": q, "text": t}) + "\n" for q, t in queries.items())
        )
        (folder / "qrels.jsonl").write_text(
            "".join(json.dumps({"q_id": q, "p_id": d, "score": g}) + "\n" for q, d, g in qrels)
        )
    return root


@pytest.fixture
def results(tmp_path):
    data = write_collections(tmp_path / "data")
    out = tmp_path / "runs"
    for args in ((), ("--k1", "2.0", "--b", "0.9", "--name", "bm25-b")):
        res = run_r2med("evaluate", "-d", data, "-o", out, *args)
        assert res.returncode == 0, res.stderr
    return data, out


def _commands():
    import typer.main

    from r2med.cli import app

    group = typer.main.get_command(app)
    for name, command in group.commands.items():
        yield (name,), command
        for sub, subcommand in getattr(command, "commands", {}).items():
            yield (name, sub), subcommand


def test_help_shows_flags_as_flags():
    shown = 0
    for path, _ in [((), None), *_commands()]:
        res = run_r2med(*path, "--help", env={"COLUMNS": "200"})
        assert res.returncode == 0, (path, res.stderr)
        assert "<bool>" not in res.stdout, path
        shown += 1
    assert shown > 15
    evaluate = run_r2med("evaluate", "--help", env={"COLUMNS": "200"}).stdout
    line = next(text for text in evaluate.splitlines() if "--overwrite" in text)
    assert line.split("--overwrite")[1].split()[0] == "Recompute"  # the help text follows the flag, no type


def test_each_short_option_has_one_meaning_and_q_is_quiet():
    from typer.core import TyperOption

    same = {  # one meaning, two spellings: -t names the task(s) (serve and score --trace take one)
        "-o": {"--out", "--output"},
        "-r": {"--retriever", "--retrievers"},
        "-t": {"--tasks", "--task"},
    }
    meanings: dict[str, set[str]] = {}
    for _path, command in _commands():
        for param in command.params:
            if isinstance(param, TyperOption):
                longest = max(param.opts, key=len)
                for short in (o for o in param.opts if len(o) == 2):
                    meanings.setdefault(short, set()).add(longest)
    assert "-q" not in meanings and "-v" not in meanings  # r2med's own -q/-v, wherever they are typed
    for short, longs in meanings.items():
        assert len(longs) == 1 or longs <= same.get(short, set()), (short, longs)
    assert meanings["-p"] == {"--per-query"} and meanings["-c"] == {"--count-missing"}


def test_q_after_the_command_is_quiet(results, tmp_path):
    data, out = results
    loud = run_r2med("evaluate", "-d", data, "-o", tmp_path / "o2")
    quiet = run_r2med("evaluate", "-d", data, "-o", tmp_path / "o3", "-q")
    assert loud.returncode == quiet.returncode == 0, quiet.stderr
    assert "INFO" in loud.stderr and "INFO" not in quiet.stderr
    run_file = out / "bm25" / "alpha" / "run.trec"
    per_query = run_r2med("score", data / "alpha", run_file, "-p")
    assert per_query.returncode == 0 and "\ta1\t" in per_query.stdout


@pytest.mark.parametrize(
    "args, message",
    [
        (("evaluate", "-t", "Biolgy"), "unknown task 'Biolgy' (did you mean 'Biology'?)"),
        (("evaluate", "-r", "bm52", "-d", "DATA"), "unknown retriever 'bm52' (did you mean 'bm25'?)"),
        (
            ("rerank", "--run", "RUNS", "--reranker", "rankllma"),
            "unknown reranker 'rankllma' (did you mean 'rankllama'?)",
        ),
        (("report", "RUNS", "-m", "nDGC@10"), "unknown measure 'nDGC@10' (did you mean 'nDCG@10'?)"),
        (("report", "RUNS", "-t", "alpah"), "--tasks alpah: no system has this task (did you mean 'alpha'?)"),
        (("evaluate", "-d", "DATA", "-t", "bta"), "(did you mean 'beta'?)"),
    ],
)
def test_did_you_mean(results, args, message):
    data, out = results
    args = tuple(str(out) if a == "RUNS" else str(data) if a == "DATA" else a for a in args)
    res = run_r2med(*args)
    assert res.returncode == 2 and message in res.stderr, res.stderr
    assert len(res.stderr.strip().splitlines()) <= 3  # log lines about the inputs, then the one-line error


def test_report_t_keeps_the_named_tasks(results):
    _, out = results
    import csv
    import io

    both = run_r2med("report", out, "-f", "csv")
    one = run_r2med("report", out, "-t", "BETA", "-f", "csv")  # case aside, as --tasks everywhere
    assert both.returncode == one.returncode == 0, one.stderr
    rows_both = list(csv.DictReader(io.StringIO(both.stdout)))
    rows_one = list(csv.DictReader(io.StringIO(one.stdout)))
    assert {r["task"] for r in rows_both} >= {"alpha", "beta"}
    assert {r["task"] for r in rows_one} - {"Average"} == {"beta"}
    beta = json.loads((out / "bm25" / "beta" / "metrics.json").read_text())["aggregate"]["ndcg_cut_10"]
    (row,) = [r for r in rows_one if r["system"] == "bm25" and r["task"] == "beta"]
    assert float(row["value"]) == pytest.approx(100 * beta, abs=0.01)


def test_pooled_line_and_macro_average_are_named_apart(results):
    """compare's pooled line averages the 6 queries; report's Average averages the 2 tasks: different figures,
    different names."""
    _, out = results
    per_query = {}
    for task in COLLECTIONS:
        stored = json.loads((out / "bm25" / task / "metrics.json").read_text())["per_query"]
        per_query[task] = [v["ndcg_cut_10"] for v in stored.values()]
    pooled = sum(sum(v) for v in per_query.values()) / sum(len(v) for v in per_query.values())
    macro = sum(sum(v) / len(v) for v in per_query.values()) / len(per_query)
    assert abs(pooled - macro) > 1e-3  # the case where mistaking one for the other matters
    compared = json.loads(run_r2med("compare", out / "bm25", out / "bm25-b", "-f", "json").stdout)
    line = next(r for r in compared if r["task"] != "alpha" and r["task"] != "beta")
    assert line["task"] == "all queries (pooled)" and line["mean_a"] == pytest.approx(pooled)
    table = run_r2med("report", out, env={"COLUMNS": "200"})
    text = " ".join(table.stdout.split())
    assert "Average = macro average" in text and "'all queries (pooled)'" in text
    assert f"{100 * macro:.2f}" in text


def test_reproduce_dry_run_fits_80_columns():
    res = run_r2med("reproduce", "--dry-run", env={"COLUMNS": "80"})
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert len(lines) > 40 and max(map(len, lines)) <= 80
    assert any("bm25" in text for text in lines)
    wide = run_r2med("reproduce", "--dry-run", "--wide", env={"COLUMNS": "80"})
    assert max(map(len, wide.stdout.splitlines())) > 80  # --wide: the full table


def test_a_model_folder_is_named_alike_as_retriever_and_reranker(tmp_path):
    from r2med.jobs.evaluate import plan
    from r2med.jobs.rerank import default_name
    from r2med.steps import EvaluateStep

    snapshot = tmp_path / "hub" / "models--acme--mini-ce" / "snapshots" / ("0123456789abcdef" * 3)[:40]
    generic = tmp_path / "my-encoder" / "model"
    for folder, name in ((snapshot, "mini-ce"), (generic, "my-encoder")):
        folder.mkdir(parents=True)
        assert plan(EvaluateStep.of("dense", model=str(folder))).name == f"dense-{name}"
        assert default_name("bm25", str(folder)) == f"bm25+{name}"


def test_cache_ls_names_the_collection(results, r2med_home):
    _data, _ = results
    legacy = r2med_home / "bm25" / "old-entry"
    legacy.mkdir(parents=True)
    (legacy / "params.json").write_text(
        json.dumps({"k1": 0.9, "b": 0.4, "analyzer": {"name": "english"}, "n_docs": 3, "corpus_fingerprint": "0" * 20})
    )
    res = run_r2med("cache", "ls", "-f", "json")
    assert res.returncode == 0, res.stderr
    entries = {e["name"]: e for e in json.loads(res.stdout)}
    built = [e for e in entries.values() if e["kind"] == "bm25" and e["name"] != "old-entry"]
    assert built and {e["collection"] for e in built} == {"alpha, beta"}  # one corpus both collections share
    # an entry made before r2med recorded collections says so
    assert entries["old-entry"]["collection"] == "unknown"
    table = run_r2med("cache", "ls", env={"COLUMNS": "120"})
    assert "collection" in table.stdout and "unknown" in table.stdout


def test_the_suggested_command_is_printed_whole(tmp_path):
    out = tmp_path / ("a-long-folder-name-" * 4) / "demo out"
    res = run_r2med("demo", "-o", out, env={"COLUMNS": "60"})
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    at = lines.index("report with:")
    assert lines[at + 1] == f"r2med report '{out}'"  # one line (longer than 60 columns), quoted for the shell
