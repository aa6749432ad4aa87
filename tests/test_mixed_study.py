"""Issue 39 item 5: one study, one file -- local folders, R2MED and BRIGHT hub tasks in one ``[data]``, imported runs
in ``[[imports]]`` (their ``tasks`` key named in their errors), and an Average per benchmark in every report format.

References: the report's per-task values read back from each task's ``metrics.json`` (pytrec_eval's figures, checked
against pytrec_eval elsewhere) and averaged here by hand; the emulated hubs (tests/bright_hub.py, tests/hub_server.py).
"""

from __future__ import annotations

import csv
import io
import json

import pytest

from bright_hub import BRIGHT_PIN, BRIGHT_REPO, bright_files, have_shared_bright
from conftest import shared_collection
from hub_server import HubEmulator, r2med_task_files
from test_bright_runs import examples_of, released_run, write_trec
from test_hub import PIN, cli, one_line_error

pytestmark = [pytest.mark.shared]
pytest.importorskip("pyarrow")


@pytest.fixture(scope="module")
def files() -> dict[str, bytes]:
    if not have_shared_bright():
        pytest.skip("../shared/data/bright is not available")
    return bright_files(("biology", "pony"), queries=4, distractors=30)


def _study(tmp_path, files, imports_tasks: str) -> None:
    from bright_hub import hub_path, read_parquet

    local = shared_collection("medline-med")
    for task in ("biology", "pony"):
        rows = examples_of(files, task)
        corpus = [d["id"] for d in read_parquet(files[hub_path("documents", task)])]
        write_trec(released_run(rows, corpus), tmp_path / f"{task}.trec")
    (tmp_path / "exp.toml").write_text(
        f"""out = "results"
[data]
dirs = ["{local}"]
tasks = ["medline-med", "Biology", "bright:biology", "bright:pony"]
[[retrievers]]
name = "bm25"
tasks = ["medline-med", "Biology"]
[[imports]]
name = "released"
runs = ["biology.trec", "pony.trec"]
tasks = {imports_tasks}
[report]
measures = ["nDCG@10"]
latex = "table.tex"
html = "page.html"
"""
    )


PYTHON_STUDY = """
from pathlib import Path

from r2med.jobs.experiment import ReportSpec, make_experiment, run_experiment, write_reports
from r2med.steps import EvaluateStep, ImportStep

root = Path({root!r})
exp = make_experiment(
    root / "py",
    [
        EvaluateStep.of("bm25", tasks=["medline-med", "Biology"]),
        ImportStep.of(
            [root / "biology.trec", root / "pony.trec"], name="released", tasks=["bright:biology", "bright:pony"]
        ),
    ],
    tasks=["medline-med", "Biology", "bright:biology", "bright:pony"],
    dirs=[Path({local!r})],
    report=ReportSpec(measures="nDCG@10", markdown=root / "py.md"),
)
run_experiment(exp)
_, boards = write_reports(exp)
print(*boards[0].columns[len(boards[0].tasks):])
"""


def _python(script, hub, cache, home):
    """``python script`` with the emulated hub's environment (as test_hub.cli sets it for ``python -m r2med``)."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k.upper() not in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")}
    env.update(
        HF_HUB_CACHE=str(cache),
        HF_HOME=str(cache.parent / "hf_home"),
        R2MED_HOME=str(home),
        HF_HUB_OFFLINE="0",
        HF_HUB_DISABLE_PROGRESS_BARS="1",
        HF_ENDPOINT=hub.url,
    )
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300)


def _ndcg10(folder) -> float:
    return json.loads((folder / "metrics.json").read_text())["aggregate"]["ndcg_cut_10"]


def _hub(files):
    hub = HubEmulator()
    hub.__enter__()
    hub.add(BRIGHT_REPO, files, BRIGHT_PIN, refs=("main",))
    hub.add("R2MED/Biology", r2med_task_files(), PIN)
    return hub


def test_one_file_mixes_a_folder_and_both_families_with_an_average_per_benchmark(files, tmp_path):
    _study(tmp_path, files, '["bright:biology", "bright:pony"]')
    cache, home = tmp_path / "hf" / "hub", tmp_path / "home"
    hub = _hub(files)
    try:
        res = cli("run", str(tmp_path / "exp.toml"), hub=hub, cache=cache, home=home, timeout=300)
        assert res.returncode == 0, res.stderr
        out = tmp_path / "results"
        value = {
            (system, task): 100 * _ndcg10(out / system / folder)
            for system, task, folder in (
                ("bm25", "medline-med", "medline-med"),
                ("bm25", "Biology", "Biology"),
                ("released", "bright:biology", "bright-biology"),
                ("released", "bright:pony", "bright-pony"),
            )
        }  # fmt: skip
        expected = {
            ("bm25", "Average R2MED"): value["bm25", "Biology"],
            ("bm25", "Average local"): value["bm25", "medline-med"],
            ("released", "Average BRIGHT"): (value["released", "bright:biology"] + value["released", "bright:pony"])
            / 2,
        }
        # JSON: every system has each benchmark's Average it has every task of, and n/a (null) for the others
        as_json = cli("report", str(out), "-f", "json", hub=hub, cache=cache, home=home)
        assert as_json.returncode == 0, as_json.stderr
        assert "; Average BRIGHT shown" in as_json.stderr and "; Average R2MED, Average local shown" in as_json.stderr
        board = json.loads(as_json.stdout)  # one measure: the table itself
        assert any(line.startswith("Average R2MED, Average BRIGHT, Average local: ") for line in board["legend"])
        cells = {s["name"]: s["cells"] for s in board["systems"]}
        for (system, col), want in expected.items():
            assert cells[system][col]["value"] == pytest.approx(want, abs=1e-4), (system, col)
        assert cells["bm25"]["Average BRIGHT"]["value"] is None and cells["released"]["Average R2MED"]["value"] is None
        assert cells["bm25"]["Average"]["value"] is None  # over all four tasks: neither system has them all
        # CSV, Markdown, LaTeX, the terminal table and the HTML page carry the same columns and values
        as_csv = cli("report", str(out), "-f", "csv", hub=hub, cache=cache, home=home).stdout
        records = list(csv.DictReader(io.StringIO(as_csv)))
        got = {(r["system"], r["task"]): r["value"] for r in records if r["task"].startswith("Average ")}
        for key, want in expected.items():
            assert float(got[key]) == pytest.approx(want, abs=1e-4), key
        for fmt in ("markdown", "latex", "table"):
            text = cli("report", str(out), "-f", fmt, "--wide", hub=hub, cache=cache, home=home).stdout
            for (_, col), want in expected.items():
                assert col in text or col.replace("Average", "Avg") in text, (fmt, col)
                assert f"{want:.2f}" in text, (fmt, col)
        page = (tmp_path / "page.html").read_text()
        report_md = (out / "report.md").read_text()
        for (_, col), want in expected.items():
            assert col in page and f"{want:.2f}" in page
            assert col in report_md and f"{want:.2f}" in report_md
        # the same study from Python (paths as Path objects, measures as text): the same runs, byte for byte
        script = tmp_path / "study.py"
        script.write_text(PYTHON_STUDY.format(root=str(tmp_path), local=str(shared_collection("medline-med"))))
        res = _python(script, hub=hub, cache=cache, home=home)
        assert res.returncode == 0, res.stderr
        assert res.stdout.split() == ["Average", "R2MED", "Average", "BRIGHT", "Average", "local", "Average"]
        for system, _, folder in (key + (key[1].replace(":", "-"),) for key in value):
            mine = (tmp_path / "py" / system / folder / "run.trec").read_bytes()
            assert mine == (out / system / folder / "run.trec").read_bytes(), (system, folder)
    finally:
        hub.__exit__(None, None, None)


def test_imports_tasks_key_is_named_in_its_errors(files, tmp_path):
    """The files in the wrong order for the tasks listed: the line names the file, the table and its ``tasks``
    key (not the command line's ``--tasks``), and the study writes nothing of that import."""
    _study(tmp_path, files, '["bright:pony", "bright:biology"]')
    cache, home = tmp_path / "hf" / "hub", tmp_path / "home"
    hub = _hub(files)
    try:
        res = cli("run", str(tmp_path / "exp.toml"), hub=hub, cache=cache, home=home, timeout=300)
        line = one_line_error(res)
        assert "exp.toml: [[imports]] 1: " in line and "fits bright:biology better than bright:pony" in line
        assert "in the order tasks lists the tasks" in line and "--tasks" not in line
        assert not (tmp_path / "results" / "released").exists()
    finally:
        hub.__exit__(None, None, None)


def test_a_local_folder_named_like_a_benchmark_task_is_local(tmp_path):
    """A task's benchmark is the family its results recorded following, not its name: a folder named ``Biology``
    beside another folder is two local collections, one Average (no ``Average R2MED``)."""
    import shutil

    from conftest import run_r2med
    from r2med.jobs.report import load_report
    from r2med.report import build_leaderboard

    data = tmp_path / "data"
    shutil.copytree(shared_collection("r2med-biology-demo"), data / "Biology")
    shutil.copytree(shared_collection("medline-med"), data / "medline-med")
    res = run_r2med("evaluate", "-r", "bm25", "-d", str(data), "-o", str(tmp_path / "out"))
    assert res.returncode == 0, res.stderr
    board = build_leaderboard(load_report([tmp_path / "out" / "bm25"]))
    assert sorted(board.tasks) == ["Biology", "medline-med"]
    assert board.groups == [] and board.columns[-1] == "Average" and len(board.columns) == 3
