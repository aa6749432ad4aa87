"""A researcher's first hour (issue 31): ``r2med show`` (one query in the terminal and from Python), ``score`` with
its two files swapped, a mistyped results root or data folder, and ``import_run``'s repr in a notebook.

The references are independent: ranks are read back from ``run.trec`` and sorted here, judgments and texts come
from the collection files this test writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import run_r2med
from r2med.data.loaders import load_folder
from r2med.jobs.evaluate import Plan, run_task
from r2med.steps import EvaluateStep
from test_report import DOCS, QRELS, QUERIES, write_collection


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("show")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("R2MED_HOME", str(root / "home"))
        data = root / "data"
        coll = load_folder(write_collection(data, "mine"))
        for name, options in (("bm25", {}), ("bm25-b0", {"b": 0.0})):
            run_task(coll, Plan(EvaluateStep.of("bm25", **options, top_k=10), name, None), root / "runs" / name)
    return root / "runs", data / "mine"


def _ranks(run_file: Path, query: str) -> list[str]:
    """The docs of ``query`` in ``run_file`` by its rank column (trec's own order)."""
    rows = [line.split() for line in run_file.read_text().splitlines()]
    mine = sorted((int(r[3]), r[2]) for r in rows if r[0] == query)
    return [d for _, d in mine]


def test_show_one_query_as_the_inspector_does(runs):
    out, _data = runs
    res = run_r2med("show", str(out), "--query", "q1", "-k", "3", "--format", "json")
    assert res.returncode == 0, res.stderr
    view = json.loads(res.stdout)
    assert view["text"] == QUERIES["q1"] and view["task"] == "mine"  # the source the runs recorded
    ranked = {s: _ranks(out / s / "mine" / "run.trec", "q1") for s in ("bm25", "bm25-b0")}
    relevant = sorted(QRELS["q1"].items(), key=lambda kv: (-kv[1], kv[0]))
    assert [(j["doc"], j["grade"]) for j in view["judged"]] == relevant
    for judged in view["judged"]:
        assert judged["text"] == DOCS[judged["doc"]]
        for system, order in ranked.items():
            expected = order.index(judged["doc"]) + 1 if judged["doc"] in order else None
            assert judged["ranks"][system] == expected
    for system, order in ranked.items():
        hits = view["top"][system]
        assert [h["doc"] for h in hits] == order[:3] and [h["rank"] for h in hits] == [1, 2, 3]
        assert [h["grade"] for h in hits] == [QRELS["q1"].get(d) for d in order[:3]]  # None: not judged
    metrics = json.loads((out / "bm25" / "mine" / "metrics.json").read_text())
    assert view["measure"] == "ndcg_cut_10"  # as metrics.json names it
    assert view["values"]["bm25"] == metrics["per_query"]["q1"]["ndcg_cut_10"]
    table = run_r2med("show", str(out), "--query", "q1", "-k", "2", "--wide")
    assert table.returncode == 0 and QUERIES["q1"] in table.stdout and "bm25-b0: top 2" in table.stdout
    bad = run_r2med("show", str(out), "--query", "q9x")
    assert bad.returncode == 2 and "--query q9x: no such query in mine" in bad.stderr


def test_show_from_python_and_a_notebook(runs):
    import r2med

    out, data = runs
    view = r2med.show_query([out], "q2", k=2, data_dir=data)
    assert repr(view) == "QueryView(task='mine', query='q2', 2 systems, 2 relevant documents, top 2)"
    text = str(view)
    assert QUERIES["q2"] in text and "judged relevant documents (2;" in text
    assert "<html>" in view._repr_html_().lower()
    alone = r2med.show_query([out / "bm25"], "q2", k=1, data_dir=data)
    assert alone.systems == ["bm25"]


def test_score_says_when_its_files_look_swapped(runs, tmp_path):
    out, _data = runs
    run = out / "bm25" / "mine" / "run.trec"
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("".join(f"{q} 0 {d} {g}\n" for q, docs in QRELS.items() for d, g in docs.items()))
    assert run_r2med("score", str(qrels), str(run)).returncode == 0
    res = run_r2med("score", str(run), str(qrels))
    assert res.returncode == 2
    assert "the two files look swapped" in res.stderr and f"r2med score {qrels} {run}" in res.stderr


def test_a_mistyped_folder_gets_a_suggestion(runs, tmp_path):
    out, data = runs
    res = run_r2med("report", str(out.parent / "rnus"))
    assert res.returncode == 2 and f"(did you mean '{out}'?)" in res.stderr
    res = run_r2med("evaluate", "-d", str(data.parent / "mien"), "--out", str(tmp_path / "o"))
    assert res.returncode == 2 and f"(did you mean '{data}'?)" in res.stderr
    res = run_r2med("report", str(tmp_path / "nothing-like-it"))
    assert res.returncode == 2 and "did you mean" not in res.stderr


def test_import_run_repr_is_a_summary(runs):
    import r2med

    _out, data = runs
    coll = load_folder(data)
    run = {q: {d: float(i) for i, d in enumerate(DOCS)} for q in QUERIES}
    result = r2med.import_run(run, coll, name="mine")
    text = repr(result)
    assert text.startswith("TaskResult(task='mine', nDCG@10=") and "4 scored queries, 4 ranked queries" in text
    assert len(text) < 200 and "d1" not in text
