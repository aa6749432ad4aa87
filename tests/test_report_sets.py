"""Issue 31, "one stated set per average": every renderer (terminal, Markdown, CSV, JSON, LaTeX, HTML, figures)
shows an Average only over all the table's tasks, never ranks or bolds a system without every task, draws gaps as
gaps, and the commands say on stderr what they left out.  Also the figures' own rules (styles from names, one task,
scale, a caller's matplotlib state), the LaTeX guard for names starting with ``[``, and splits as columns.

The run folders are written by hand (values chosen here), so every expected figure is a plain mean of numbers
written in this file, not a value computed by the code under test.
"""

from __future__ import annotations

import csv
import io
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import run_r2med
from r2med.measures import Measure
from r2med.report import build_leaderboard, leaderboard
from r2med.report.format import GAP
from r2med.report.latex import leaderboard_latex
from r2med.results.folders import find_systems
from r2med.runs.run import write_task_results

NDCG10 = Measure.parse("ndcg_cut_10")

#: system -> task -> query -> nDCG@10 (written to metrics.json as is)
VALUES = {
    "alpha": {"T1": {"q1": 0.50, "q2": 0.30}, "T2": {"q1": 0.80, "q2": 0.60}},
    "beta": {"T1": {"q1": 0.90, "q2": 0.70}},  # lacks T2: no Average, never ranked
    "gamma": {"T1": {"q1": 0.10, "q2": 0.30}, "T2": {"q1": 0.20, "q2": 0.40}},
}


def mean(values) -> float:
    values = list(values)
    return sum(values) / len(values)


def task_mean(system: str, task: str) -> float:
    return 100 * mean(VALUES[system][task].values())


def write_system(root: Path, name: str, tasks: dict[str, dict[str, float]], split: str | None = None) -> None:
    for task, per_query in tasks.items():
        payload = {
            "task": task,
            "retriever": name,
            "config": {"retriever": "bm25", "flavour": "standard", "queries": "plain"},
            "aggregate": {"ndcg_cut_10": mean(per_query.values()) if per_query else 0.5},  # {}: no per-query values
            "per_query": {q: {"ndcg_cut_10": v} for q, v in per_query.items()},
            **({"split": split} if split else {}),
        }
        run = {q: {"d1": 2.0, "d2": 1.0} for q in per_query or ["q1"]}
        write_task_results(root / name / task, run, payload, tag=name)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    out = tmp_path / "runs"
    for name, tasks in VALUES.items():
        write_system(out, name, tasks)
    return out


def _board(root: Path, **kwargs):
    return build_leaderboard(find_systems([root]), **kwargs)


def test_the_average_is_over_all_the_tables_tasks_or_not_shown(root):
    board = _board(root)
    rows = {r.system: r for r in board.rows}
    assert rows["alpha"].cells["Average"].value == pytest.approx(mean([task_mean("alpha", t) for t in ("T1", "T2")]))
    assert rows["gamma"].cells["Average"].value == pytest.approx(mean([task_mean("gamma", t) for t in ("T1", "T2")]))
    beta = rows["beta"]
    assert beta.cells["Average"].value is None and beta.missing == ["T2"] and beta.cells["T2"].value is None
    assert beta.cells["T1"].value == pytest.approx(task_mean("beta", "T1"))  # its own task is still shown
    lines = board.left_out()
    assert lines[0] == "beta: no nDCG@10 for T2; no Average shown for it (an Average is over all 2 tasks of the table)"
    assert lines[1] == "--tasks T1: the tasks every system has, for an Average of each"


def _latex_rows(tex: str) -> dict[str, list[str]]:
    body = re.search(r"\\begin\{tabular\}\{l+r+\}(.*?)\\end\{tabular\}", tex, flags=re.DOTALL).group(1)
    rows = {}
    for line in body.splitlines():
        if " & " in line and not line.startswith("System"):
            cells = line.removesuffix(r" \\").split(" & ")
            rows[cells[0]] = cells[1:]
    return rows


def _rich_text(board, width=200) -> str:
    from rich.console import Console

    console = Console(width=width, record=True, file=io.StringIO())
    console.print(leaderboard.to_rich(board, width))
    return console.export_text()


def test_every_renderer_shows_no_partial_average_and_ranks_none(root):
    """The house rule over every renderer of the leaderboard: beta's Average is a gap in each, never a value,
    a mark or a rank; alpha's and gamma's are their plain means."""
    from r2med.report.html import bar_charts_svg, leaderboard_html
    from r2med.report.plot import bars_figure

    board = _board(root)
    alpha_avg = mean([task_mean("alpha", t) for t in ("T1", "T2")])
    gamma_avg = mean([task_mean("gamma", t) for t in ("T1", "T2")])
    # terminal
    text = _rich_text(board)
    beta_line = next(line for line in text.splitlines() if line.split("│")[1:2] and "beta" in line.split("│")[1])
    assert beta_line.split("│")[-2].strip() == GAP and "*" not in text.split("Leaderboard")[1].split("nDCG@10 x100;")[0]
    # markdown
    md = leaderboard.to_markdown(board)
    assert "| **beta** | 80.00 | n/a | n/a |" in md and f"| **alpha** | 40.00 | 70.00 | {alpha_avg:.2f} |" in md
    # csv
    records = {(r["system"], r["task"]): r for r in csv.DictReader(io.StringIO(leaderboard.to_csv(board)))}
    assert records[("beta", "Average")]["value"] == "" and float(records[("gamma", "Average")]["value"]) == gamma_avg
    # json
    systems = {s["name"]: s for s in json.loads(leaderboard.to_json(board))["systems"]}
    assert systems["beta"]["cells"]["Average"]["value"] is None and systems["beta"]["missing_tasks"] == ["T2"]
    # LaTeX: beta's gaps plain, never bold or underlined; alpha best, gamma second among the ranked
    rows = _latex_rows(leaderboard_latex(board))
    assert rows["beta"] == [r"\textbf{80.00}", "n/a", "n/a"]  # T1: beta really is best there
    assert rows["alpha"][2] == r"\textbf{" + f"{alpha_avg:.2f}" + "}"
    assert rows["gamma"][2] == r"\underline{" + f"{gamma_avg:.2f}" + "}"
    # HTML: a gap with its reason, no bar for it
    page = leaderboard_html(board)
    assert '<span class="gap" title="no Average: no result for T2">n/a</span>' in page
    average_chart = bar_charts_svg(board, {}).split('aria-label="Average"')[1].split("</svg>")[0]
    assert "<title>beta:" not in average_chart and "gap" in average_chart
    assert f"<title>alpha: {alpha_avg:.2f}</title>" in average_chart
    # figure: which bars exist
    pytest.importorskip("matplotlib")
    fig = bars_figure(board)
    bars = {p.get_gid(): p.get_height() for p in fig.axes[0].patches if p.get_gid()}
    gaps = {t.get_gid() for t in fig.axes[0].texts if t.get_gid()}
    assert set(bars) == {"bar:alpha:T1", "bar:alpha:T2", "bar:alpha:Average", "bar:beta:T1"} | {
        "bar:gamma:T1",
        "bar:gamma:T2",
        "bar:gamma:Average",
    }
    assert gaps == {"gap:beta:T2", "gap:beta:Average"}  # drawn as gaps, not zero bars
    assert bars["bar:alpha:Average"] == pytest.approx(alpha_avg)


def test_significance_on_the_average_only_over_its_tasks(root):
    """With a baseline lacking T2, the pooled test covers T1 only: no mark on the others' Average."""
    board = _board(root, baseline="beta", n_permutations=200)
    for row in board.rows:
        assert not row.cells["Average"].significant and row.cells["Average"].p_holm is None
    full = _board(root, baseline="alpha", n_permutations=200)
    gamma = next(r for r in full.rows if r.system == "gamma")
    assert gamma.cells["Average"].p_holm is not None  # alpha and gamma share both tasks: pooled over both


def test_report_and_plot_say_on_stderr_what_they_left_out(root, tmp_path):
    res = run_r2med("report", str(root), "--format", "markdown")
    assert res.returncode == 0, res.stderr
    assert "note: beta: no nDCG@10 for T2; no Average shown for it" in res.stderr
    assert "note: --tasks T1: the tasks every system has" in res.stderr
    assert "note:" not in res.stdout  # stdout stays the table
    pytest.importorskip("matplotlib")
    res = run_r2med("plot", str(root), "-o", str(tmp_path / "bars.svg"))
    assert res.returncode == 0 and "note: beta: no nDCG@10 for T2" in res.stderr
    svg = (tmp_path / "bars.svg").read_text()
    assert 'id="bar:alpha:Average"' in svg and 'id="bar:beta:Average"' not in svg and 'id="gap:beta:Average"' in svg
    # -t/--tasks as report and compare take it: one task, no duplicate Average group
    res = run_r2med("plot", str(root), "-t", "T1", "-o", str(tmp_path / "t1.svg"))
    assert res.returncode == 0, res.stderr
    svg = (tmp_path / "t1.svg").read_text()
    assert 'id="bar:beta:T1"' in svg and "Average" not in svg and "Avg" not in svg and "T2" not in svg


def test_compare_notes_a_task_only_one_system_has(root):
    res = run_r2med("compare", str(root / "alpha"), str(root / "beta"), "--permutations", "200")
    assert res.returncode == 0, res.stderr
    assert "note: T2: only alpha has it (left out of beta vs alpha)" in res.stderr


def test_a_split_is_part_of_the_column(tmp_path):
    """Issue 27 item 7: the dev and test results of one BEIR folder are two columns, each header naming its split."""
    out = tmp_path / "runs"
    write_system(out / "dev", "bm25", {"nfcorpus": {"q1": 0.2, "q2": 0.4}}, split="dev")
    write_system(out / "test", "bm25", {"nfcorpus": {"q1": 0.6, "q2": 0.8}}, split="test")
    res = run_r2med("report", str(out / "dev" / "bm25"), str(out / "test" / "bm25"), "--format", "json")
    assert res.returncode == 0, res.stderr
    payload = json.loads(res.stdout)
    assert payload["tasks"] == ["nfcorpus (dev)", "nfcorpus (test)"]
    cells = {s["name"]: s["cells"] for s in payload["systems"]}
    assert cells["dev/bm25"]["nfcorpus (dev)"]["value"] == pytest.approx(30.0)
    assert cells["dev/bm25"]["nfcorpus (test)"]["value"] is None and cells["test/bm25"]["Average"]["value"] is None
    # a test split alone keeps the task's name
    alone = json.loads(run_r2med("report", str(out / "test" / "bm25"), "--format", "json").stdout)
    assert alone["tasks"] == ["nfcorpus"]


def test_latex_protects_a_row_starting_with_a_bracket(tmp_path):
    """Issue 27 item 13: a system named ``[bold]z`` would be read as the optional argument of ``\\\\``."""
    out = tmp_path / "runs"
    write_system(out, "[bold]z", {"T1": {"q1": 0.5}})
    write_system(out, "*star", {"T1": {"q1": 0.25}})
    res = run_r2med("report", str(out), "--format", "latex")
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert r"{}[bold]z & \textbf{50.00} & \textbf{50.00} \\" in lines and any(
        line.startswith("{}*star") for line in lines
    )
    starts = [line for line in lines if line and not line.startswith("%")]
    assert not [line for line in starts if line.startswith(("[", "*"))]
    md = run_r2med("report", str(out), "--format", "markdown").stdout
    assert "| **[bold]z** |" in md  # as written, everywhere
    table = run_r2med("report", str(out), "--wide").stdout
    assert "[bold]z" in table


def test_latex_compiles_with_pdflatex(tmp_path, root):
    from test_latex_compiles import compile_latex, needs_pdflatex

    needs_pdflatex()
    write_system(root, "[bold]z", {"T1": {"q1": 0.5, "q2": 0.1}, "T2": {"q1": 0.3, "q2": 0.3}})
    res = run_r2med("report", str(root), "--format", "latex", "-m", "nDCG@10", "-m", "nDCG@10")
    assert res.returncode == 0, res.stderr
    done = compile_latex(res.stdout, tmp_path)
    assert done.returncode == 0, done.stdout[-2000:]
    assert (tmp_path / "t.pdf").exists()


def test_latex_several_measures_one_labelled_block_each(root):
    res = run_r2med("report", str(root), "--format", "latex", "-m", "nDCG@10", "-m", "R@100")
    # R@100 is not in these hand-written folders: asking for it is an error naming the measure
    assert res.returncode == 2 and "R@100" in res.stderr
    board = _board(root)
    tex = leaderboard_latex(board)
    assert r"\multicolumn{4}{l}{nDCG@10 (x100)} \\" in tex.splitlines()


def test_facet_groups_with_uneven_coverage_are_marked(tmp_path):
    from r2med.evaluation.facets import facet_table
    from r2med.report.facet_table import FacetBoard

    values = {"a": {"T": {"q1": 0.5, "q2": 0.7, "q3": 0.9}}, "b": {"T": {"q1": 0.1}}}
    meta = {"T": {"q1": {"k": "x"}, "q2": {"k": "x"}, "q3": {"k": "y"}}}
    facets = facet_table(values, meta, "k", systems=["a", "b"])
    notes = FacetBoard(facets, NDCG10).left_out()
    assert notes == [
        "--by k 'x': the systems cover different queries of its 2 (a 2, b 1); each system's mean is over its own",
        "--by k 'y': the systems cover different queries of its 1 (a 1, b 0); each system's mean is over its own",
    ]
    pytest.importorskip("matplotlib")
    from r2med.report.plot import facets_figure

    fig = facets_figure(facets, NDCG10)
    labels = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    assert labels == ["x (1–2)*", "y (0–1)*"]
    assert any(t.get_gid() == "uneven-note" for t in fig.texts)
    bars = {p.get_gid(): p.get_height() for p in fig.axes[0].patches if p.get_gid()}
    assert bars == {"bar:a:x": pytest.approx(60.0), "bar:a:y": pytest.approx(90.0), "bar:b:x": pytest.approx(10.0)}
    even = facet_table({"a": values["a"]}, meta, "k", systems=["a"])
    assert [t.get_text() for t in facets_figure(even, NDCG10).axes[0].get_xticklabels()] == ["x (2)", "y (1)"]


def test_a_system_keeps_its_style_across_figures(root):
    pytest.importorskip("matplotlib")
    from r2med.report.plot import bars_figure, series_styles

    def styles(board):
        fig = bars_figure(board)
        return {
            p.get_gid().split(":")[1]: (p.get_facecolor(), p.get_hatch()) for p in fig.axes[0].patches if p.get_gid()
        }

    systems = find_systems([root])
    one = styles(build_leaderboard(systems))
    two = styles(build_leaderboard(list(reversed(systems))))
    three = styles(build_leaderboard([s for s in systems if s.name != "alpha"]))
    assert one == two and three["gamma"] == one["gamma"] and three["beta"] == one["beta"]
    assert len(set(one.values())) == 3  # told apart in grayscale
    names = [f"sys{i}" for i in range(40)]  # many names: still one style each
    assert len(set(series_styles(names).values())) == 40


def test_scatter_is_x100_and_refuses_a_system_without_per_query_values(root, tmp_path):
    pytest.importorskip("matplotlib")
    from r2med.errors import R2MedError
    from r2med.report.plot import scatter_figure

    fig = scatter_figure(VALUES, "alpha", "gamma", NDCG10)
    ax = fig.axes[0]
    points = sorted(tuple(p) for c in ax.collections if c.get_gid() for p in c.get_offsets())
    expected = sorted(
        (100 * VALUES["alpha"][t][q], 100 * VALUES["gamma"][t][q]) for t in ("T1", "T2") for q in ("q1", "q2")
    )
    assert [v for p in points for v in p] == pytest.approx([v for p in expected for v in p])
    assert ax.get_xlabel() == "alpha (nDCG@10 x100)" and ax.get_xlim()[1] > 100
    with pytest.raises(R2MedError, match=r"empty: no per-query nDCG@10 in its metrics\.json"):
        scatter_figure({**VALUES, "empty": {"T1": {}}}, "alpha", "empty", NDCG10)
    write_system(root, "nopq", {"T1": {}})
    res = run_r2med("plot", str(root), "--kind", "scatter", "-s", "alpha,nopq", "-o", str(tmp_path / "s.png"))
    assert res.returncode == 2 and "nopq: no per-query nDCG@10" in res.stderr and not (tmp_path / "s.png").exists()


def test_names_are_text_in_figures_not_mathtext(root, tmp_path):
    """Issue 27 item 11: a system named ``$$`` (or ``_x``, which matplotlib's legend would drop) is drawn as written."""
    pytest.importorskip("matplotlib")
    write_system(root, "$$", {"T1": {"q1": 0.5}, "T2": {"q1": 0.5}})
    write_system(root, "_x", {"T1": {"q1": 0.5}, "T2": {"q1": 0.5}})
    res = run_r2med("plot", str(root), "-o", str(tmp_path / "f.svg"))
    assert res.returncode == 0, res.stderr
    assert run_r2med("plot", str(root), "-o", str(tmp_path / "f.png")).returncode == 0
    from r2med.report.plot import bars_figure

    legend = [t.get_text() for t in bars_figure(_board(root)).axes[0].get_legend().get_texts()]
    assert "$$" in legend and "_x" in legend


def test_plot_from_python_leaves_the_callers_matplotlib_alone(root, tmp_path):
    """Drawn on Figure objects in a local style: the backend, rcParams and pyplot stay as the caller had them."""
    pytest.importorskip("matplotlib")
    script = f"""
import sys, matplotlib
matplotlib.use("pdf")
matplotlib.rcParams["font.size"] = 10
before = dict(matplotlib.rcParams)
from r2med.report import build_leaderboard
from r2med.report.plot import plot_bars, plot_scatter
from r2med.results.folders import find_systems
systems = find_systems([{str(root)!r}])
plot_bars(build_leaderboard(systems), {str(tmp_path / "b.png")!r})
from r2med.jobs.report import per_query_values
from r2med.measures import HEADLINE
plot_scatter(per_query_values(systems, HEADLINE), "alpha", "gamma", HEADLINE, {str(tmp_path / "s.svg")!r})
after = dict(matplotlib.rcParams)
changed = sorted(k for k in before if before[k] != after[k])
print(matplotlib.get_backend(), matplotlib.rcParams["font.size"], "matplotlib.pyplot" in sys.modules, changed)
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "pdf 10.0 False []"
    assert (tmp_path / "b.png").stat().st_size > 1000 and (tmp_path / "s.svg").stat().st_size > 1000
