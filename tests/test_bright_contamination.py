"""Contamination marks: models trained on data rebuilt from BRIGHT's documents, marked on exactly the tasks they touch.

References: the sources bright_contamination.json names, restated here by hand -- ReasonIR's synthetic data is
generated from all 12 BRIGHT corpora (facebookresearch/ReasonIR synthetic_data_generation/script.sh:4-17), every
DIVER-Retriever is trained on it (mteb aq_medai_models.py:38-56), RaDeR retrieves TheoremQA theorems (RaDeR
README.md:62, 70); R2MED's Biology is BRIGHT biology's corpus (../shared/data/bright/README.md).  Run folders are
written here with hand-made records, as the pipeline writes them (``metrics.json`` ``config``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import run_r2med
from r2med.infra.containment import task_folder
from r2med.report import build_leaderboard
from r2med.report.contamination import MARK
from r2med.report.latex import leaderboard_latex
from r2med.results.folders import find_systems
from r2med.runs.run import write_task_results

BRIGHT_12 = [
    "biology", "earth_science", "economics", "psychology", "robotics", "stackoverflow", "sustainable_living",
    "leetcode", "pony", "aops", "theoremqa_theorems", "theoremqa_questions",
]  # fmt: skip
TASKS = ["Biology", "MedQA-Diag", "bright:biology", "bright:pony", "bright:theoremqa_theorems", "bright:biology:long"]
#: what a dense preset's record holds of the model (its encoder's checkpoint): the marks are read from it
SYSTEMS = {
    "reasonir": {"step": "evaluate", "retriever": "reasonir-8b", "encoder": {"model": "reasonir/ReasonIR-8B"}},
    "diver": {"step": "evaluate", "retriever": "diver-4b", "encoder": {"model": "AQ-MedAI/Diver-Retriever-4B"}},
    "rader": {"step": "evaluate", "retriever": "rader-7b",
              "encoder": {"model": "Raderspace/RaDeR_gte_Qwen2-7B_MATH_LLMq_CoT_lexical"}},
    "bge": {"step": "evaluate", "retriever": "bge", "encoder": {"model": "BAAI/bge-large-en-v1.5"}},
    # a user's dense run of a local folder named ReasonIR-8B: nothing says which weights it holds (a folder renamed
    # ReasonIR-8B is not ReasonIR-8B), so no mark -- a mark comes from what the run is, never from a name (issue 40
    # item 18); a Hugging Face cache snapshot of the checkpoint is marked
    "mine": {"step": "evaluate", "retriever": "dense", "encoder": {"model": "/models/ReasonIR-8B"}},
    "snapshot": {"step": "evaluate", "retriever": "dense",
                 "encoder": {"model": "/hf/hub/models--reasonir--ReasonIR-8B/snapshots/0aac962"}},
    # BM25 reranked -- its first stage is clean; and a reranking of DIVER's run: its first stage is DIVER
    "bm25+ce": {"step": "rerank", "reranker": {"reranker": "bright-cross-encoder", "model": "x/ce"},
                "first_stage": {"config": {"step": "evaluate", "retriever": "bm25"}}},
    "diver+ce": {"step": "rerank", "reranker": {"reranker": "bright-cross-encoder", "model": "x/ce"},
                 "first_stage": {"config": {"step": "evaluate", "retriever": "diver-4b",
                                            "encoder": {"model": "AQ-MedAI/Diver-Retriever-4B"}}}},
}  # fmt: skip
#: the tasks each system's figures are marked on, stated from the sources (not from the data file)
TOUCHED = {
    "reasonir": {"Biology", "bright:biology", "bright:pony", "bright:theoremqa_theorems", "bright:biology:long"},
    "diver": {"Biology", "bright:biology", "bright:pony", "bright:theoremqa_theorems", "bright:biology:long"},
    "rader": {"bright:theoremqa_theorems"},
    "bge": set(),
    "mine": set(),
    "snapshot": {"Biology", "bright:biology", "bright:pony", "bright:theoremqa_theorems", "bright:biology:long"},
    "bm25+ce": set(),
    "diver+ce": {"Biology", "bright:biology", "bright:pony", "bright:theoremqa_theorems", "bright:biology:long"},
}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    out = tmp_path / "runs"
    for name, config in SYSTEMS.items():
        for i, task in enumerate(TASKS):
            payload = {
                "task": task,
                "retriever": name,
                "config": config,
                "aggregate": {"ndcg_cut_10": 0.1 + 0.05 * i},
                "per_query": {"q1": {"ndcg_cut_10": 0.1 + 0.05 * i}},
            }
            write_task_results(task_folder(out / name, task), {"q1": {"d1": 1.0}}, payload, tag=name, root=out)
    return out


def test_marks_exactly_the_touched_tasks_and_the_average(root):
    board = build_leaderboard(find_systems([root]))
    rows = {row.system: row for row in board.rows}
    for name, touched in TOUCHED.items():
        marked = {t for t in board.tasks if MARK in rows[name].cells[t].marks}
        assert marked == touched, name
        assert (MARK in rows[name].cells["Average"].marks) == bool(touched), name  # an Average over marked figures
    assert "MedQA-Diag" not in {t for row in board.rows for t in board.tasks if MARK in row.cells[t].marks}


def test_legend_names_the_model_its_data_and_the_source(root):
    board = build_leaderboard(find_systems([root]))
    legend = "\n".join(board.legend())
    assert legend.count(MARK) >= 3
    assert (
        f"{MARK} reasonir/ReasonIR-8B was trained on reasonir-data (hq), built from the documents of all 12 BRIGHT "
        "tasks and R2MED's Biology (stated: facebookresearch/ReasonIR@0aac962 README.md:8"
    ) in legend
    assert "AQ-MedAI/Diver-Retriever-4B was trained on reasonir-data (hq)" in legend
    assert "aq_medai_models.py:38-56" in legend  # DIVER's source: mteb's record of its training data
    assert (
        "Raderspace/RaDeR_gte_Qwen2-7B_MATH_LLMq_CoT_lexical was trained on RaDeR MCTS data (MATH), built from the "
        "documents of bright:theoremqa_theorems (inferred: Debrup-61/RaDeR@3a127e4 README.md:62, 70"
    ) in legend


def test_no_mark_and_no_legend_without_a_contaminated_model(root):
    board = build_leaderboard([s for s in find_systems([root]) if s.name in ("bge", "bm25+ce")])
    assert not any(MARK in c.marks for row in board.rows for c in row.cells.values())
    assert not any(MARK in line for line in board.legend())


def test_every_renderer_shows_the_mark(root, tmp_path):
    board = build_leaderboard(find_systems([root]))
    tex = leaderboard_latex(board)
    line = next(row for row in tex.splitlines() if row.startswith("rader "))
    assert line.count(r"$^\ddagger$") == 3  # theoremqa_theorems, the Average over BRIGHT's tasks and the Average
    assert "\\noindent $^\\ddagger$ reasonir/ReasonIR-8B was trained on" in tex  # the legend, as a table note
    res = run_r2med("report", str(root), "--format", "markdown")
    assert res.returncode == 0, res.stderr
    assert MARK in res.stdout and "reasonir-data (hq)" in res.stdout + res.stderr
    html_path = tmp_path / "r.html"
    res = run_r2med("report", str(root), "--html", str(html_path))
    assert res.returncode == 0, res.stderr
    page = html_path.read_text()
    assert f'">{MARK}</span>' in page and "was trained on reasonir-data (hq)" in page


def test_models_lists_the_contamination_with_its_tasks():
    res = run_r2med("models", "--json")
    assert res.returncode == 0, res.stderr
    rows = json.loads(res.stdout)
    for name in ("reasonir-8b", "diver-4b"):
        (fact,) = rows[name]["contamination"]
        assert set(fact["tasks"]) == {f"bright:{t}" for t in BRIGHT_12} | {"Biology"}, name
        assert fact["sources"] and fact["certainty"] == "stated"
    assert rows["rader-7b"]["contamination"][0]["tasks"] == ["bright:theoremqa_theorems"]
    assert all("contamination" not in rows[n] for n in ("bge", "e5", "bm25", "qwen3-emb-8b", "reasonembed-qwen3-8b"))
    res = run_r2med("models")
    assert res.returncode == 0, res.stderr
    text = " ".join(res.stdout.split())
    assert f"{MARK} trained on reasonir-data (hq), built from the documents of all 12 BRIGHT tasks and R2MED's" in text


def test_registry_records_carry_it_by_checkpoint_lookup():
    """The records' facts come from their checkpoints, and agree with the presets the data names for each model."""
    from r2med.protocol import bright
    from r2med.retrieval.registry import all_retrievers

    by_record = {n for n, m in all_retrievers().items() if m.contamination}
    by_data = {p for c in bright.contamination() for p in c.r2med_presets}
    assert by_record == by_data == {"reasonir-8b", "diver-4b", "rader-7b"}
    assert bright.contamination_of("/snapshots/x/models--reasonir--ReasonIR-8B/snapshots/abc")[0].model == (
        "reasonir/ReasonIR-8B"
    )
    assert bright.contamination_of("reasonir/reasonir-8b")  # hub ids are case-insensitive
    assert bright.contamination_of("BAAI/bge-large-en-v1.5") == ()
