"""Every LaTeX table r2med writes compiles (issue 39): ``report --format latex`` with published rows, deltas beyond
tolerance and significance marks, ``compare --format latex``, a per-group table, and the notes under them that say
what each mark means -- one document through pdflatex with ``-halt-on-error``.

``.ci/run`` installs Debian's ``texlive-latex-base`` and ``texlive-latex-recommended`` when missing
(``.ci/latex-packages``); without them these tests skip, and under ``CI=true`` fail (:func:`conftest.unavailable`),
so a table that does not compile fails CI instead of the test skipping on every machine.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from conftest import run_r2med, unavailable

ROOT = Path(__file__).resolve().parents[1]
PDFLATEX = shutil.which("pdflatex")
PREAMBLE = "\\documentclass{article}\\usepackage{booktabs}\\usepackage[T1]{fontenc}\\begin{document}\n"


def needs_pdflatex() -> None:
    """Skip (fail under CI) unless pdflatex and booktabs are here: what ``.ci/latex-packages`` checks."""
    missing = subprocess.run(
        ["/bin/bash", str(ROOT / ".ci" / "latex-packages")], capture_output=True, text=True, check=True
    ).stdout.strip()
    if missing:
        unavailable(f"the LaTeX compile tests need Debian packages {missing} (.ci/run installs them)")


def compile_latex(body: str, folder: Path) -> subprocess.CompletedProcess:
    """``body`` in a minimal article (booktabs, T1 fonts) through pdflatex, stopping at the first error."""
    assert PDFLATEX is not None
    (folder / "t.tex").write_text(PREAMBLE + body + "\n\\end{document}\n", encoding="utf-8")
    return subprocess.run(
        [PDFLATEX, "-interaction=nonstopmode", "-halt-on-error", "t.tex"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_every_latex_table_and_its_note_compiles(tmp_path, monkeypatch):
    needs_pdflatex()
    from r2med.evaluation.facets import facet_table
    from r2med.measures import Measure
    from r2med.report.facet_table import FacetBoard
    from r2med.report.format import tex_note
    from r2med.report.ties import LEGEND
    from test_report import DOCS, QUERIES, as_hub_task, make_runs

    as_hub_task(monkeypatch, "Biology", len(QUERIES), len(DOCS))  # graded: published rows and deltas with "!"
    as_hub_task(monkeypatch, "MedQA-Diag", 12, 60)
    runs, _ = make_runs(tmp_path)
    report = run_r2med(
        "report", str(runs), "--format", "latex", "--with-published", "nv", "--baseline", "bm25-standard",
        "-m", "nDCG@10", "-m", "R@100",
    )  # fmt: skip
    assert report.returncode == 0, report.stderr
    assert r"\dagger" in report.stdout and "(!)" in report.stdout  # the marks the note explains are there
    assert r"\noindent" in report.stdout and not [ln for ln in report.stdout.splitlines() if ln.startswith("%")]
    compare = run_r2med("compare", str(runs / "bm25"), str(runs / "bm25-standard"), "--format", "latex")
    assert compare.returncode == 0, compare.stderr
    values = {"a": {"T": {"q1": 0.5, "q2": 0.7, "q3": 0.9}}, "b": {"T": {"q1": 0.1}}}
    meta = {"T": {"q1": {"k": "x_1 & 50%"}, "q2": {"k": "x_1 & 50%"}, "q3": {"k": "y"}}}
    facets = FacetBoard(facet_table(values, meta, "k", systems=["a", "b"]), Measure.parse("nDCG@10")).to_latex()
    body = "\n\n".join(
        [report.stdout, compare.stdout, facets, "\\begin{tabular}{l}x\\\\\\end{tabular}\n" + tex_note([LEGEND])]
    )
    done = compile_latex(body, tmp_path)
    assert done.returncode == 0, done.stdout[-3000:]
    assert (tmp_path / "t.pdf").stat().st_size > 1000
