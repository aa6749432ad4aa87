"""Issue 40's findings on what r2med shows and checks first (items 2, 12, 15).

* measures are checked before any work: a cut-off beyond what trec_eval reads back under its own name is one line
  (before: a KeyError after the whole retrieval), and so is a task list that names no task (``import -t ","``);
* every document r2med writes shows a name as text: LaTeX escapes ``<``, ``>``, ``|`` and the backquote (OT1
  prints them as other glyphs), Markdown writes ``<script>`` as entities, and a bidi override (U+202E) in a query id
  never reaches the terminal raw (``score -p``, ``show``);
* an experiment's report destination is never one of its inputs nor another of its outputs.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import run_r2med
from test_data import make_r2med

RLO = "\u202e"  # RIGHT-TO-LEFT OVERRIDE: what follows it is shown reversed


def small(root: Path, qid: str = "q1") -> Path:
    return make_r2med(
        root,
        corpus=[{"id": "d1", "text": "aspirin inhibits cox"}, {"id": "d2", "text": "insulin lowers glucose"}],
        queries=[{"id": qid, "text": "what lowers glucose"}],
        qrels=[{"q_id": qid, "p_id": "d2", "score": 1}],
    )


# ---------------------------------------------------------------- item 12


@pytest.mark.parametrize("command", ["score", "evaluate", "report", "import"])
def test_a_cutoff_pytrec_eval_cannot_name_is_one_line_before_any_work(tmp_path, command):
    data = small(tmp_path / "coll")
    run = tmp_path / "run.trec"
    run.write_text("q1 Q0 d2 1 2.0 x\n")
    measure = "nDCG@99999999999999999999"
    args = {
        "score": ("score", data / "qrels.jsonl", run, "-m", measure),
        "evaluate": ("evaluate", "-r", "bm25", "-d", data, "-o", tmp_path / "out", "-m", measure),
        "report": ("report", tmp_path, "-m", measure),
        "import": ("import", run, "-d", data, "-o", tmp_path / "out", "--name", "s", "-m", measure),
    }[command]
    res = run_r2med(*args)
    assert res.returncode == 2, res.stderr
    assert "cut-off must be at most 2147483647" in res.stderr and "Traceback" not in res.stderr
    assert not (tmp_path / "out").exists()  # nothing ran


def test_the_largest_cutoff_is_scored_under_its_own_name(tmp_path):
    """pytrec_eval reads cut-offs as a C long: beyond it the name it answers under is not the one asked for."""
    from r2med.evaluation.metrics import evaluate
    from r2med.measures import MAX_CUTOFF, Measure

    result = evaluate({"q1": {"d1": 2.0, "d2": 1.0}}, {"q1": {"d2": 1}}, [Measure.parse(f"nDCG@{MAX_CUTOFF}")])
    assert result.aggregate[f"ndcg_cut_{MAX_CUTOFF}"] == pytest.approx(1 / 1.5849625007211563)  # 1/log2(3)


def test_import_with_a_task_list_of_separators_is_one_line(tmp_path):
    run = tmp_path / "run.trec"
    run.write_text("q1 Q0 d2 1 2.0 x\n")
    res = run_r2med("import", run, "-t", ",", "-o", tmp_path / "out", "--name", "s")
    assert res.returncode == 2 and "names no task" in res.stderr and "Traceback" not in res.stderr


# ---------------------------------------------------------------- item 15


def test_latex_escapes_what_ot1_prints_as_other_glyphs():
    from r2med.report.format import tex

    assert tex("a<b>c|d`e") == r"a\textless{}b\textgreater{}c\textbar{}d\textasciigrave{}e"
    assert tex(f"q{RLO}1") == r"q\textbackslash{}u202e1"  # shown as its escape, never applied


def test_markdown_writes_html_as_text():
    from r2med.report.format import md

    assert md("<script>alert(1)</script>") == "&lt;script&gt;alert(1)&lt;/script&gt;"
    assert md("a|b & `c`") == "a\\|b &amp; \\`c\\`"


@pytest.fixture
def hostile_results(tmp_path) -> Path:
    data = small(tmp_path / "coll")
    out = tmp_path / "out"
    for name in ("<script>", "a`b|c"):
        res = run_r2med("evaluate", "-r", "bm25", "-d", data, "-o", out, "--name", name)
        assert res.returncode == 0, res.stderr
    return out


def test_reports_show_hostile_system_names_as_text(hostile_results, tmp_path):
    md = run_r2med("report", hostile_results, "-f", "markdown")
    assert md.returncode == 0, md.stderr
    assert "<script>" not in md.stdout and "&lt;script&gt;" in md.stdout
    latex = run_r2med("report", hostile_results, "-f", "latex")
    assert latex.returncode == 0, latex.stderr
    body = "\n".join(line for line in latex.stdout.splitlines() if not line.startswith("%"))  # legend: comments
    assert "<" not in body and "|" not in body and "`" not in body
    assert r"\textless{}script\textgreater{}" in latex.stdout and r"a\textasciigrave{}b\textbar{}c" in latex.stdout
    compare = run_r2med("compare", hostile_results / "<script>", hostile_results / "a`b|c", "-f", "markdown")
    assert compare.returncode == 0, compare.stderr
    assert "<script>" not in compare.stdout and "&lt;script&gt;" in compare.stdout


def test_a_bidi_override_in_a_query_id_never_reaches_the_terminal_raw(tmp_path):
    qid = f"q{RLO}1"
    data = small(tmp_path / "coll", qid=qid)
    run = tmp_path / "run.trec"
    run.write_text(f"{qid} Q0 d2 1 2.0 x\n{qid} Q0 d1 2 1.0 x\n", encoding="utf-8")
    scored = run_r2med("score", data / "qrels.jsonl", run, "-p")
    assert scored.returncode == 0, scored.stderr
    assert RLO not in scored.stdout and "q\\u202e1" in scored.stdout
    as_json = run_r2med("score", data / "qrels.jsonl", run, "-p", "-f", "json")
    assert qid in json.loads(as_json.stdout)["per_query"]  # JSON keeps the id itself (escaped by JSON)
    out = tmp_path / "out"
    assert run_r2med("evaluate", "-r", "bm25", "-d", data, "-o", out).returncode == 0
    shown = run_r2med("show", out / "bm25", "--query", qid, "-d", data, "--wide")
    assert shown.returncode == 0, shown.stderr
    assert RLO not in shown.stdout and "q\\u202e1" in shown.stdout


# ---------------------------------------------------------------- item 2


@pytest.mark.parametrize(
    ("report", "refused"),
    [
        ('latex = "eq.trec"', "latex: .*eq.trec is an input of the experiment \\(\\[\\[imports\\]\\] 1 runs\\)"),
        ('html = "eq.trec"', "html: .*eq.trec is an input of the experiment"),
        ('markdown = "q.txt"', "markdown: .*q.txt is an input of the experiment \\(\\[\\[imports\\]\\] 1 qrels\\)"),
        ('latex = "t.tex"\nhtml = "t.tex"', "html: .*t.tex is also \\[report\\] latex"),
        ('latex = "res/report.md"', "latex: .*report.md is also the Markdown report"),
        ('markdown = "m.md"\nlatex = "m.md"', "latex: .*m.md is also \\[report\\] markdown"),
    ],
    ids=["latex-run", "html-run", "markdown-qrels", "latex-html", "latex-default-markdown", "markdown-latex"],
)
def test_a_report_destination_is_no_input_and_no_other_output(tmp_path, report, refused):
    data = small(tmp_path / "coll")
    run = tmp_path / "eq.trec"
    before = "q1 Q0 d2 1 2.0 x\n"
    run.write_text(before)
    (tmp_path / "q.txt").write_text("q1 0 d2 1\n")
    exp = tmp_path / "exp.toml"
    exp.write_text(
        f'out = "res"\n[data]\ndirs = ["{data}"]\n[[imports]]\nname = "eq"\nruns = ["eq.trec"]\nqrels = "q.txt"\n'
        f"[report]\n{report}\n"
    )
    for args in (("run", exp, "--dry-run"), ("run", exp)):
        res = run_r2med(*args)
        assert res.returncode == 2, res.stderr
        assert re.search(refused, res.stderr), res.stderr
    assert run.read_text() == before and not (tmp_path / "res").exists()
