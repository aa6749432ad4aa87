"""Issue 39 items 6 and 7: what a researcher is told -- the command printed after ``demo`` runs as printed, one
meaning per mark, the same ``!`` on a delta wherever a delta is printed, the retriever named when an option is not
its own, the HTML's query-group panel telling why it is empty, no library's progress bars in a log file.

References: the report's own grading of the same folder (``Row.within``: the mark ``evaluate`` prints must agree),
the files on disk (the printed command is run), transformers' bar text in a real subprocess's stderr.  Two tests
start a real process: the printed command must run from a shell as a console script, and libraries' bars
are drawn to a real file descriptor.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import hub_data, minilm_path, recorded, run_r2med
from r2med.data.loaders import load_folder
from r2med.jobs.evaluate import run_task
from r2med.protocol import published_ndcg10
from r2med.report import build_leaderboard
from r2med.results.folders import find_systems as load_systems
from r2med.runs.run import write_task_results
from r2med.steps import EvaluateStep
from test_report import DOCS, QUERIES, as_hub_task, write_collection

ROOT = Path(__file__).resolve().parents[1]


# -- item 6: the next command runs as printed ---------------------------------------------------------------------


def _script(folder: Path) -> Path:
    """A console script like pip's (``.venv/bin/r2med``): this interpreter, r2med's ``main``."""
    folder.mkdir(parents=True)
    script = folder / "r2med"
    script.write_text(f"#!{sys.executable}\nimport sys\nfrom r2med.cli import main\nsys.exit(main())\n")
    script.chmod(0o755)
    return script


def test_the_command_printed_after_demo_runs_as_printed_without_an_activated_venv(tmp_path):
    """``make demo`` runs ``.venv/bin/r2med demo`` with no venv activated: the printed ``r2med report ...`` was
    "command not found".  The printed line is run through a shell with the same PATH, from the same folder."""
    _script(tmp_path / ".venv" / "bin")
    env = {**os.environ, "PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT / "src"), "R2MED_HOME": str(tmp_path / "h")}
    env.pop("HF_ENDPOINT", None)
    done = subprocess.run(
        [".venv/bin/r2med", "demo", "-o", "demo"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    command = lines[lines.index("report with:") + 1]
    assert command == ".venv/bin/r2med report demo"
    again = subprocess.run(command, shell=True, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert "bm25" in again.stdout


def test_the_program_is_named_as_it_can_be_run(tmp_path, monkeypatch):
    from r2med.cli._ui import program

    script = _script(tmp_path / "venv" / "bin")
    monkeypatch.chdir(tmp_path)
    assert program(str(script), path="/usr/bin") == ["venv/bin/r2med"]  # relative: under the current folder
    assert program(str(script), path=str(script.parent)) == ["r2med"]  # on PATH: its name
    elsewhere = tmp_path / "sub"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert program(str(script), path="/usr/bin") == [str(script)]
    assert program("r2med") == ["r2med"]
    assert program(str(ROOT / "src" / "r2med" / "__main__.py"))[1:] == ["-m", "r2med"]


# -- item 7: marks ------------------------------------------------------------------------------------------------


def test_every_mark_means_one_thing():
    """``≈`` meant both "graded within tolerance" (as a reader takes it beside a published figure) and "ties decide
    this value": the tie mark is one of its own, distinct from every other mark a table prints."""
    from r2med.evaluation.ties import TIED_MARK
    from r2med.report import contamination, judgments
    from r2med.report.format import FLAG, SIGNIFICANT, tex

    marks = [SIGNIFICANT, FLAG, TIED_MARK, judgments.MARK, contamination.MARK]
    assert len(set(marks)) == len(marks) and TIED_MARK != "≈"
    assert len({tex(m) for m in marks}) == len(marks)  # and in LaTeX
    for doc in ("docs/report.md", "docs/ties.md"):
        text = (ROOT / doc).read_text(encoding="utf-8")
        assert f"marked `{TIED_MARK}`" in text and "marked `≈`" not in text


def _far_from_published(root: Path, config: dict, encoding: dict | None = None) -> Path:
    pub = published_ndcg10("bm25")["Biology"] / 100
    payload = {
        "task": "Biology",
        "retriever": config["retriever"],
        "config": config,
        "aggregate": {"ndcg_cut_10": pub - 0.10},
        "per_query": {"q1": {"ndcg_cut_10": pub - 0.10}},
        **hub_data("Biology"),
    }
    if encoding:
        payload["encoding"] = encoding
    write_task_results(root / "runs" / "my-bm25" / "Biology", {"q1": {"d1": 2.0, "d2": 1.0}}, payload)
    return root / "runs"


def test_a_bm25_cell_beyond_tolerance_says_nothing_of_encoding(tmp_path):
    config = {"retriever": "bm25", "flavour": "paper", "k1": 0.9, "b": 0.4, "queries": "plain"}
    board = build_leaderboard(load_systems([_far_from_published(tmp_path, config)]))
    assert board.rows[0].within("Biology") is False  # flagged: the case the note is written for
    assert not any("encoding" in line or "made with" in line for line in board.legend())  # BM25 encodes nothing
    from r2med.report.board import _encodes

    assert _encodes(recorded({"retriever": "dense"})) and _encodes(recorded({"retriever": "bge-large"}))
    assert not _encodes(recorded(config))


def test_evaluate_marks_a_delta_beyond_tolerance_as_report_does(tmp_path, monkeypatch):
    from rich.console import Console

    from r2med.report.summary import summary_table
    from r2med.results.folders import summary

    as_hub_task(monkeypatch, "Biology", len(QUERIES), len(DOCS))  # the tiny folder stands for the hub task
    coll = load_folder(write_collection(tmp_path / "data", "Biology"))
    result = run_task(coll, EvaluateStep.of("bm25", top_k=10), tmp_path / "runs" / "bm25")
    board = build_leaderboard(load_systems([tmp_path / "runs"]))
    assert board.rows[0].within("Biology") is False  # report flags this delta (the reference)
    buf = io.StringIO()
    Console(file=buf, width=200).print(summary_table([result], summary("bm25", [result])))
    text = buf.getvalue()
    delta = 100 * result.metrics.aggregate["ndcg_cut_10"] - published_ndcg10("bm25")["Biology"]
    assert f"{delta:+.2f} !" in text  # before: the delta alone
    assert "! delta beyond tolerance (±" in text
    row = [line for line in board.to_dict()["legend"] if "delta beyond tolerance" in line]
    assert row  # the same words in report's legend


# -- item 7: messages ---------------------------------------------------------------------------------------------


def test_a_dense_option_without_a_retriever_names_the_default_and_the_fix(tmp_path):
    data = write_collection(tmp_path / "data", "toy")
    res = run_r2med("evaluate", "--data-dir", str(data), "--model", "some/model", "-o", str(tmp_path / "o"))
    assert res.returncode == 2 and not (tmp_path / "o").exists()
    assert "unknown option '--model'" in res.stderr
    assert "the retriever is the default, bm25: for an embedding model add -r dense" in res.stderr
    # -r given: the retriever is the user's choice, nothing to add
    res = run_r2med("evaluate", "-r", "bm25", "--data-dir", str(data), "--model", "x", "-o", str(tmp_path / "o"))
    assert res.returncode == 2 and "default" not in res.stderr
    # an option no retriever takes: the default named, -r dense not suggested
    res = run_r2med("evaluate", "--data-dir", str(data), "--set", "zzz=1", "-o", str(tmp_path / "o"))
    assert res.returncode == 2 and "the default retriever is bm25" in res.stderr and "-r dense" not in res.stderr
    # a value out of range is not about the retriever: its line alone
    res = run_r2med("evaluate", "--data-dir", str(data), "--k1", "nan", "-o", str(tmp_path / "o"))
    assert res.returncode == 2 and "--k1" in res.stderr and "default" not in res.stderr


def test_the_query_group_panel_says_why_it_is_empty(tmp_path):
    """--data-dir given, the collections loaded, but no scenario and no shared metadata: the page said "pass
    --data-dir" all the same."""
    data = tmp_path / "data"
    coll = load_folder(write_collection(data, "toy"))
    run_task(coll, EvaluateStep.of("bm25", top_k=10), tmp_path / "runs" / "bm25")
    page = tmp_path / "with.html"
    res = run_r2med("report", str(tmp_path / "runs"), "--data-dir", str(data), "--html", str(page))
    assert res.returncode == 0, res.stderr
    text = page.read_text()
    assert "pass --data-dir" not in text.split('id="sec-facets"')[1].split("</section>")[0]
    assert "No query groups: no task here has a scenario" in text
    bare = tmp_path / "bare.html"
    assert run_r2med("report", str(tmp_path / "runs"), "--html", str(bare)).returncode == 0
    assert "No query metadata loaded for toy: pass --data-dir" in bare.read_text()


def test_no_library_progress_bar_reaches_a_log_file(tmp_path):
    """transformers draws "Loading weights" with carriage returns; in a log (stderr not a terminal) r2med's own
    progress lines are the only ones.  Run for real: a subprocess whose stderr is a file."""
    model = minilm_path()
    code = (
        "import sys\n"
        "from r2med.cli import main\n"
        "sys.argv = ['r2med', 'models']\n"  # any command: the CLI's start-up decides about the bars
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "from transformers import AutoModel\n"
        f"AutoModel.from_pretrained({model!r})\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "HF_HUB_DISABLE_PROGRESS_BARS"}
    env["PYTHONPATH"] = str(ROOT / "src")
    log = tmp_path / "err.log"
    with log.open("w") as err:
        done = subprocess.run([sys.executable, "-c", code], env=env, stdout=subprocess.DEVNULL, stderr=err, timeout=300)
    assert done.returncode == 0, log.read_text()[-2000:]
    text = log.read_text()
    assert "Loading weights" not in text and "\r" not in text
    # the reference: the same load without r2med's start-up draws the bar into the same kind of file
    with log.open("w") as err:
        bare = f"from transformers import AutoModel\nAutoModel.from_pretrained({model!r})\n"
        subprocess.run([sys.executable, "-c", bare], env=env, stdout=subprocess.DEVNULL, stderr=err, timeout=300)
    assert "Loading weights" in log.read_text()


@pytest.mark.parametrize("given", ["0", "1"])
def test_a_users_own_bar_setting_is_kept(monkeypatch, given):
    from r2med.infra import progress

    monkeypatch.setenv("HF_HUB_DISABLE_PROGRESS_BARS", given)
    progress.configure(mode="log")
    try:
        assert progress.quiet_library_bars() is False and os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] == given
    finally:
        progress.reset()


# -- the quickstart's commands are the command line's ---------------------------------------------------------------


def test_the_quickstart_is_linked_and_its_commands_parse():
    """docs/quickstart.md (issue 39): linked from the README, and each of its commands is parsed by r2med's own
    command line (every option and choice it shows exists) without running it."""
    import shlex

    import typer.main

    from r2med.cli import app

    assert "(docs/quickstart.md)" in (ROOT / "README.md").read_text(encoding="utf-8")
    text = (ROOT / "docs" / "quickstart.md").read_text(encoding="utf-8")
    lines = [line.split("  #")[0].strip() for line in text.splitlines() if line.startswith(".venv/bin/r2med ")]
    assert len(lines) >= 8
    group = typer.main.get_command(app)
    for line in lines:
        words = shlex.split(line)[1:]
        command = group.get_command(group.make_context("r2med", list(words), resilient_parsing=True), words[0])
        assert command is not None, line
        command.make_context(words[0], words[1:])  # unknown options and bad choices raise here
