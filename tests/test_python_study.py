"""A whole study from Python, as docs/experiments.md shows it: what Python users pass is taken.

Issue 39 item 4: ``EvaluateStep.of("dense", model=pathlib.Path(...))`` was refused ("model: expected text, got
/.../model"), a ``Path`` reranker was taken for a scorer object, and ``ReportSpec(measures=("nDCG@10",))`` ended
in an ``AttributeError`` traceback when the report was written.  Each is checked against the same step spelled
as text (the command line's and the file's form): same spec, byte-identical run.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import minilm_path, run_r2med, shared_collection

pytest.importorskip("torch")


def test_paths_are_taken_where_text_names_a_model_or_folder(tmp_path):
    from r2med.steps import EvaluateStep, FuseStep, RerankStep

    model = minilm_path()
    as_path = EvaluateStep.of("dense", model=Path(model), max_length=64)
    as_text = EvaluateStep.of("dense", model=model, max_length=64)
    assert as_path == as_text and as_path.options.model == model
    reranker = RerankStep.of(Path("bm25"), Path(model))
    assert reranker == RerankStep.of("bm25", model)
    assert type(reranker.options).__name__ != "CustomScorerOptions"  # a folder, not a scorer object
    assert FuseStep.of([Path("a"), Path("b")]) == FuseStep.of(["a", "b"])
    from r2med.steps import ImportStep

    imported = ImportStep.of(Path("pony.trec"), name="theirs", tasks=["bright:pony"], ties="listed")
    assert imported == ImportStep.of(["pony.trec"], name="theirs", tasks=("bright:pony",), ties="listed")
    assert imported.runs == (Path("pony.trec"),) and imported.data.tasks == ("bright:pony",)
    with pytest.raises(Exception, match=r"ImportStep\.of\(\.\.\.\): ties: expected one of: trec_eval, listed"):
        ImportStep.of("pony.trec", name="theirs", ties="sorted")
    # a folder that is not there is the same one line whichever way it is named
    missing = tmp_path / "nomodel"
    with pytest.raises(Exception) as by_path:
        EvaluateStep.of("dense", model=missing)
    with pytest.raises(Exception) as by_text:
        EvaluateStep.of("dense", model=str(missing))
    assert str(by_path.value) == str(by_text.value) and "does not exist" in str(by_path.value)


def test_report_spec_takes_measure_strings_and_paths():
    from r2med.jobs.experiment import ExperimentError, ReportSpec
    from r2med.measures import Measure

    spec = ReportSpec(measures=("nDCG@10", "recall_100"), html="page.html", latex=Path("t.tex"))
    assert spec.measures == (Measure.parse("ndcg_cut_10"), Measure.parse("R@100"))
    assert spec.html == Path("page.html") and spec.latex == Path("t.tex")
    assert ReportSpec(measures="MRR").measures == (Measure.parse("recip_rank"),)
    with pytest.raises(ExperimentError, match=r"ReportSpec: measures: unknown measure 'nDGC@10'.*did you mean"):
        ReportSpec(measures=("nDGC@10",))
    with pytest.raises(ExperimentError, match="ReportSpec: measures: expected a measure name"):
        ReportSpec(measures=(10,))  # type: ignore[arg-type]


def test_a_whole_study_from_python_equals_the_commands(tmp_path):
    """Dense (model given as a Path) and BM25 on a shared folder, the report with measure strings: the runs are
    byte-identical to ``r2med evaluate``'s, and the report has one table per measure asked for."""
    from r2med.jobs.experiment import ReportSpec, make_experiment, run_experiment, write_reports
    from r2med.steps import EvaluateStep

    model = Path(minilm_path())
    data = shared_collection("r2med-biology-demo")
    exp = make_experiment(
        tmp_path / "results",
        [EvaluateStep.of("bm25"), EvaluateStep.of("dense", model=model, max_length=64, batch_size=2, cache=False)],
        dirs=[data],
        report=ReportSpec(measures=("nDCG@10", "R@100"), markdown=tmp_path / "study.md", html=tmp_path / "p.html"),
    )
    run_experiment(exp)
    written, boards = write_reports(exp)
    assert [b.measure.label for b in boards] == ["nDCG@10", "R@100"]
    assert set(written) == {tmp_path / "study.md", tmp_path / "p.html"}
    text = (tmp_path / "study.md").read_text()
    assert "nDCG@10" in text and "R@100" in text
    dense = next(s for s in exp.systems if s.startswith("dense-"))
    for args, system in (
        (["-r", "bm25"], "bm25"),
        (["-r", "dense", "--model", str(model), "--max-length", "64", "--batch-size", "2", "--no-cache"], dense),
    ):
        res = run_r2med("evaluate", *args, "-d", str(data), "-o", str(tmp_path / "commands"))
        assert res.returncode == 0, res.stderr
        mine, theirs = (root / system / data.name for root in (tmp_path / "results", tmp_path / "commands"))
        assert (mine / "run.trec").read_bytes() == (theirs / "run.trec").read_bytes(), system
        a, b = (json.loads((f / "metrics.json").read_text()) for f in (mine, theirs))
        assert a["aggregate"] == b["aggregate"]
