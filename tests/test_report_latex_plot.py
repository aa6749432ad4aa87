"""``report --format latex`` (best bold, second underlined), ``report -m A -m B`` and ``r2med plot``."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest

from conftest import run_r2med, shared_collection
from r2med.data.loaders import load_folder
from r2med.jobs.evaluate import Plan, run_task
from r2med.steps import EvaluateStep

SYSTEMS = {"bm25": {}, "bm25-k1.2": {"k1": 1.2, "b": 0.75}, "bm25-b0": {"b": 0.0}}


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("latex_runs")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("R2MED_HOME", str(out / "home"))
        for folder in ("medline-med", "nfcorpus-dev"):
            coll = load_folder(shared_collection(folder))
            for label, options in SYSTEMS.items():
                retriever = "bm25"
                run_task(
                    coll,
                    Plan(EvaluateStep.of(retriever, **{"cache": False, **options}), label, None),
                    out / "runs" / label,
                )
    return out / "runs"


def _metrics(root: Path, measure: str) -> dict[str, dict[str, float]]:
    """system -> task -> 100 x aggregate, read from metrics.json (the independent reference)."""
    values: dict[str, dict[str, float]] = {}
    for path in root.glob("*/*/metrics.json"):
        payload = json.loads(path.read_text())
        values.setdefault(path.parent.parent.name, {})[path.parent.name] = 100 * payload["aggregate"][measure]
    return values


def _parse_tabulars(text: str) -> list[list[list[str]]]:
    tables = re.findall(r"\\begin\{tabular\}\{[lr]+\}(.*?)\\end\{tabular\}", text, flags=re.DOTALL)
    out = []
    for body in tables:
        rows = [
            line.removesuffix(r" \\").split(" & ")
            for line in body.strip().splitlines()
            if " & " in line and not line.startswith("System")
        ]
        out.append(rows)
    return out


def _brute_marks(values: list[float]) -> list[str]:
    printed = [f"{v:.2f}" for v in values]
    distinct = sorted({float(p) for p in printed}, reverse=True)
    return [
        "bold" if float(p) == distinct[0] else "underline" if len(distinct) > 1 and float(p) == distinct[1] else "plain"
        for p in printed
    ]


def _mark(cell: str) -> tuple[str, str]:
    kind, text = _rank_mark(cell)
    return kind, text.removesuffix(r"$^{\diamond}$")  # ties decide the value (nfcorpus: docs of identical text)


def _rank_mark(cell: str) -> tuple[str, str]:
    m = re.fullmatch(r"\\textbf\{(.*)\}", cell)
    if m:
        return "bold", m.group(1)
    m = re.fullmatch(r"\\underline\{(.*)\}", cell)
    if m:
        return "underline", m.group(1)
    return "plain", cell


@pytest.mark.parametrize("measure,key", [("nDCG@10", "ndcg_cut_10"), ("R@100", "recall_100")])
def test_latex_marks_best_bold_and_second_underlined(root, measure, key):
    res = run_r2med("report", str(root), "--format", "latex", "-m", measure)
    assert res.returncode == 0, res.stderr
    assert r"\toprule" in res.stdout and r"\midrule" in res.stdout and r"\bottomrule" in res.stdout
    [rows] = _parse_tabulars(res.stdout)
    values = _metrics(root, key)
    tasks = sorted(next(iter(values.values())))
    header = re.search(r"^System & (.*) \\\\$", res.stdout, flags=re.MULTILINE).group(1).split(" & ")
    assert sorted(header[:-1]) == tasks and header[-1] == "Average"
    names = [r[0] for r in rows]
    assert sorted(names) == sorted(SYSTEMS) and not any(r"\textbf" in n for n in names)  # names plain now
    for col, task in enumerate(header, start=1):
        truth = [(values[n][task] if task != "Average" else sum(values[n].values()) / len(values[n])) for n in names]
        marks = [_mark(r[col]) for r in rows]
        assert [m for m, _ in marks] == _brute_marks(truth), (task, marks, truth)
        assert [float(text) for _, text in marks] == pytest.approx(truth, abs=0.006)


def test_several_measures_one_table_each_in_every_format(root):
    args = ("report", str(root), "-m", "nDCG@10", "-m", "R@100")
    tex = run_r2med(*args, "--format", "latex").stdout
    assert len(_parse_tabulars(tex)) == 2
    md = run_r2med(*args, "--format", "markdown").stdout
    assert "### nDCG@10" in md and "### R@100" in md
    records = list(csv.DictReader(io.StringIO(run_r2med(*args, "--format", "csv").stdout)))
    assert {r["measure"] for r in records} == {"ndcg_cut_10", "recall_100"}
    recall = _metrics(root, "recall_100")
    row = next(
        r for r in records if r["measure"] == "recall_100" and r["system"] == "bm25" and r["task"] == "medline-med"
    )
    assert float(row["value"]) == pytest.approx(recall["bm25"]["medline-med"], abs=1e-4)
    payload = json.loads(run_r2med(*args, "--format", "json").stdout)
    assert payload["measures"] == ["ndcg_cut_10", "recall_100"] and len(payload["tables"]) == 2
    table = run_r2med(*args).stdout
    assert "nDCG@10 (x100)" in table and "R@100 (x100)" in table  # before: only the last measure shown
    single = json.loads(run_r2med("report", str(root), "--format", "json").stdout)
    assert single["measure"] == "ndcg_cut_10"  # one measure: as before


def test_plot_png_pdf_svg(root, tmp_path):
    pytest.importorskip("matplotlib")
    from matplotlib.image import imread

    png = tmp_path / "bars.png"
    res = run_r2med("plot", str(root), "-o", str(png))
    assert res.returncode == 0, res.stderr
    image = imread(png)
    height, width = image.shape[:2]
    assert 800 <= width <= 1400 and 400 <= height <= 1200  # about 3.3 in wide at 300 dpi, bbox cropped
    res = run_r2med("plot", str(root), "--kind", "scatter", "-s", "bm25,bm25-b0", "-o", str(tmp_path / "scatter.png"))
    assert res.returncode == 0, res.stderr
    assert imread(tmp_path / "scatter.png").shape[1] > 500
    # BEIR folders have no scenario and no query metadata: said, instead of one meaningless "(none)" group
    res = run_r2med("plot", str(root), "--kind", "facets", "-o", str(tmp_path / "facets.png"))
    assert res.returncode == 2 and not (tmp_path / "facets.png").exists()
    assert "no task of the report has a scenario (medline-med, nfcorpus-dev are not R2MED tasks)" in res.stderr
    assert "their queries carry no metadata to group by" in res.stderr
    assert run_r2med("plot", str(root), "-o", str(tmp_path / "f.pdf")).returncode == 0
    assert (tmp_path / "f.pdf").read_bytes().startswith(b"%PDF-")
    assert run_r2med("plot", str(root), "-o", str(tmp_path / "f.svg")).returncode == 0
    assert b"<svg" in (tmp_path / "f.svg").read_bytes()[:2000]
    bad = run_r2med("plot", str(root), "-o", str(tmp_path / "f.jpg"))
    assert bad.returncode == 2 and "png, .pdf or .svg" in bad.stderr and not (tmp_path / "f.jpg").exists()


def test_published_rows_beside_their_system_and_never_ranked(tmp_path, monkeypatch):
    from test_report import DOCS, QUERIES, as_hub_task, make_runs

    as_hub_task(monkeypatch, "Biology", len(QUERIES), len(DOCS))  # the tiny runs stand for the hub task: graded
    as_hub_task(monkeypatch, "MedQA-Diag", 12, 60)

    runs, _ = make_runs(tmp_path)
    res = run_r2med("report", str(runs), "--format", "latex", "--with-published", "nv")
    assert res.returncode == 0, res.stderr
    lines = [line for line in res.stdout.splitlines() if " & " in line and not line.startswith("System")]
    assert lines[0].startswith("bm25 & ")  # the published BM25 configuration: its rows follow it
    assert lines[1].startswith(r"{\small \quad published bm25}") and lines[2].startswith(r"{\small \quad delta")
    assert lines[-1].startswith(r"\textit{paper: nv}")
    for extra in (lines[1], lines[2], lines[-1]):
        assert r"\textbf" not in extra and r"\underline" not in extra
    marked = [_mark(cell)[0] for line in (lines[0], lines[3]) for cell in line.removesuffix(r" \\").split(" & ")[1:]]
    assert marked.count("bold") >= 3  # every column has its best among the two systems
    # the bars figure marks the published figure (an SVG keeps its text)
    pytest.importorskip("matplotlib")
    assert run_r2med("plot", str(runs), "-o", str(tmp_path / "bars.svg")).returncode == 0
    assert "published" in (tmp_path / "bars.svg").read_text()
    assert run_r2med("plot", str(runs / "bm25-standard"), "-o", str(tmp_path / "std.svg")).returncode == 0
    assert "published" not in (tmp_path / "std.svg").read_text()
