"""A benchmark family is a plug-in: a third family defined only in the tests (tests/tiny_benchmark.py) joins with one
registration line, and the commands serve it as they serve R2MED's and BRIGHT's tasks; a package's family is found
through the ``r2med.benchmarks`` entry point.

References: the tiny family's own files (its generated judgments: each query's one relevant document holds the
query's rare word, so BM25 ranks it first -- nDCG@10 1.0, computed by hand) and its own protocol (depth 50, its two
measures); the process's registry for what is registered.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import tiny_benchmark
from conftest import run_r2med
from hub_server import fill_hf_cache


@pytest.fixture
def tiny(monkeypatch, hf_cache):
    from r2med.data import benchmarks

    monkeypatch.setattr(benchmarks, "_registered", {})
    benchmarks.register(tiny_benchmark.TINY)  # the one registration line
    fill_hf_cache(hf_cache, tiny_benchmark.REPO, tiny_benchmark.hub_files(), tiny_benchmark.PIN)
    return tiny_benchmark.TINY


def test_its_names_aliases_and_errors_are_its_own(tiny):
    from r2med.data.names import canonical_task, family_of, parse_tasks

    assert parse_tasks("tiny") == ["tiny:alpha", "tiny:beta"]
    assert parse_tasks("TINY:Beta,Biology") == ["tiny:beta", "Biology"]
    assert family_of("tiny:alpha") == "tiny" and family_of("bright:pony") == "bright" and family_of("mine") is None
    with pytest.raises(Exception, match="unknown TINY task"):
        canonical_task("tiny:gamma")
    with pytest.raises(Exception, match=r"TINY's tiny:<task> \(tiny: the 2\)"):
        canonical_task("nosuch")
    with pytest.raises(Exception, match="--long-documents: tiny:alpha is not a BRIGHT task"):
        parse_tasks("tiny:alpha", long_documents=True)


def test_a_name_taken_is_refused(tiny):
    from r2med.data.benchmarks import register

    with pytest.raises(Exception, match="already registered"):
        register(tiny)


def test_tasks_lists_it_after_the_built_in_families(tiny):
    res = run_r2med("tasks", "--format", "json")
    assert res.returncode == 0, res.stderr
    rows = json.loads(res.stdout)
    assert [r["family"] for r in rows][-3:] == ["bright", "tiny", "tiny"]
    table = run_r2med("tasks")
    assert "TINY tasks" in table.stdout and "tiny:beta" in table.stdout


def test_evaluate_and_report_follow_its_protocol(tiny, tmp_path):
    out = tmp_path / "out"
    res = run_r2med("evaluate", "-r", "bm25", "--tasks", "tiny", "-o", str(out))
    assert res.returncode == 0, res.stderr
    record = json.loads((out / "bm25" / "tiny-alpha" / "metrics.json").read_text())
    assert record["protocol"]["family"] == "tiny" and record["protocol"]["depth"] == 50
    assert set(record["aggregate"]) == {"ndcg_cut_10", "recall_50"}
    assert record["aggregate"]["ndcg_cut_10"] == 1.0  # each query's one relevant document first (by hand)
    assert record["source"] == f"hf://datasets/{tiny_benchmark.REPO}@{tiny_benchmark.PIN}"
    report = run_r2med("report", str(out), "--format", "json")
    assert report.returncode == 0, report.stderr
    board = json.loads(report.stdout)
    assert board["tasks"] == ["tiny:alpha", "tiny:beta"]
    (system,) = board["systems"]
    assert system["cells"]["tiny:beta"]["value"] == 100.0 and system["cells"]["Average"]["value"] == 100.0


def test_an_experiment_file_runs_its_tasks(tiny, tmp_path):
    out = tmp_path / "out"
    (tmp_path / "exp.toml").write_text(
        f'out = "{out.as_posix()}"\n\n[data]\ntasks = "tiny"\n\n[[retrievers]]\nname = "bm25"\n'
    )
    res = run_r2med("run", str(tmp_path / "exp.toml"))
    assert res.returncode == 0, res.stderr
    for task in ("alpha", "beta"):
        record = json.loads((out / "bm25" / f"tiny-{task}" / "metrics.json").read_text())
        assert record["protocol"]["family"] == "tiny" and record["aggregate"]["ndcg_cut_10"] == 1.0


def test_a_packages_family_is_found_through_the_entry_point(tmp_path):
    """A *.dist-info on sys.path declaring ``[r2med.benchmarks]`` (as ``pip install`` writes it): ``r2med tasks``
    lists the family in a fresh process, with no registration in code."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "tiny_benchmark.py").write_text(Path(tiny_benchmark.__file__).read_text())
    info = site / "tiny_bench-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: tiny-bench\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[r2med.benchmarks]\ntiny = tiny_benchmark:TINY\n")
    src = str(Path(__file__).resolve().parents[1] / "src")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([src, str(site)]), "HF_HUB_OFFLINE": "1"}
    command = [sys.executable, "-m", "r2med", "tasks", "--format", "json"]
    proc = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert {r["name"] for r in json.loads(proc.stdout) if r["family"] == "tiny"} == {"tiny:alpha", "tiny:beta"}


def _bm25_runs(tmp_path: Path) -> Path:
    out = tmp_path / "out"
    res = run_r2med("evaluate", "-r", "bm25", "--tasks", "tiny", "-o", str(out))
    assert res.returncode == 0, res.stderr
    return out


def test_report_grades_its_published_figures(tiny, tmp_path):
    """Its table's two figures (tests/tiny_benchmark.py: alpha 100.0, beta 90.0) beside BM25's run of its hub data
    (1.0 on each task, by hand): alpha within BM25's tolerance, beta 10 points off -- marked beyond it."""
    board = json.loads(run_r2med("report", str(_bm25_runs(tmp_path)), "--format", "json").stdout)
    (system,) = board["systems"]
    assert system["published"]["label"] == "bm25"
    assert system["cells"]["tiny:alpha"]["published"] == 100.0 and system["cells"]["tiny:beta"]["published"] == 90.0
    assert system["cells"]["Average"]["published"] is None  # its table publishes no Average: none is made up
    alpha, beta = system["cells"]["tiny:alpha"], system["cells"]["tiny:beta"]
    assert (alpha["delta"], alpha["within_tolerance"]) == (0.0, True)
    assert (beta["delta"], beta["within_tolerance"]) == (10.0, False)  # 100.0 - 90.0, beyond BM25's 0.5
    assert any("TINY's invented table" in line for line in board["legend"])
    assert not any("R2MED paper repo" in line for line in board["legend"])  # its own source only
    markdown = run_r2med("report", str(tmp_path / "out"), "--format", "markdown").stdout
    assert "| published bm25 | 100.00 | 90.00 |" in markdown


def test_reproduce_dry_run_lists_its_targets(tiny):
    planned = json.loads(run_r2med("reproduce", "--dry-run", "--tasks", "tiny", "--format", "json").stdout)
    got = {(p["config"], p["setting"], p["task"]): p["published"] for p in planned}
    assert got == {("bm25", "tiny_paper", "tiny:alpha"): 100.0, ("bm25", "tiny_paper", "tiny:beta"): 90.0}
    assert all(p["runnable"] for p in planned)
    table = run_r2med("reproduce", "--dry-run", "--tasks", "tiny:beta")
    assert table.returncode == 0, table.stderr
    assert "TINY reproduction matrix (dry run): 1 of 1 configurations can run" in " ".join(table.stdout.split())
    bad = run_r2med("reproduce", "--dry-run", "--tasks", "tiny", "-r", "nv")
    assert bad.returncode != 0 and "no published TINY figures for nv" in bad.stderr


def test_export_refuses_it_in_one_line(tiny, tmp_path):
    """MTEB has no task for its datasets (the family names no MTEB benchmark): ``export`` refuses, writing nothing."""
    pytest.importorskip("mteb")
    runs = _bm25_runs(tmp_path)
    target = tmp_path / "mteb"
    res = run_r2med("export", str(runs / "bm25"), "-o", str(target))
    assert res.returncode != 0
    assert "nothing to export" in res.stderr and "not an R2MED task: MTEB has no task for it" in res.stderr
    assert not target.exists() or not any(target.rglob("*.json"))
