"""Every published figure graded on the data it was computed on (issue 36, items 1-4 and 9's data).

The emulated hub is laid out as the public record shows the real one (tests/bright_hub.py ``HISTORY``): mteb's v1
pin ``a75a0eb`` holds examples, documents and long documents and no reasoning set (the hub's tree pages: none at
230a6a6, three at 101f939, five at 9a93318, all after it); r2med's pin ``3066d29`` (the commit mteb's BRIGHT v1.1
tasks read) holds them all.  References written out here from their sources, never read back from r2med's records:
BM25's published figures (BRIGHT's revised table: biology 18.9; its GPT-4 reasoning row: biology 53.6, as Diver's
README copies it), mteb's results files (embeddings-benchmark/results@f4cc6c8: bge-large-en-v1.5 on R2MED/Biology
at 8b9fec2 nDCG@10 0.12706) and R2MED's results files (R2MED/R2MED results/base retriever/bge: Biology 12.71).
"""

from __future__ import annotations

import json

import pytest

from bright_hub import (
    BRIGHT_PIN,
    BRIGHT_REPO,
    HISTORY,
    MTEB_V1_PIN,
    bright_files,
    files_at,
    fill_bright_cache,
    have_shared_bright,
)
from conftest import run_r2med
from r2med.protocol import data_states

REASONING = ("gpt4_reason", "llama3-70b_reason", "claude-3-opus_reason", "Gemini-1.0_reason", "grit_reason")


# -- the record ----------------------------------------------------------------------------------------------


def test_the_record_knows_both_pins_and_what_each_holds():
    v1 = data_states.hub_commit(BRIGHT_REPO, MTEB_V1_PIN)
    pin = data_states.hub_commit(BRIGHT_REPO, BRIGHT_PIN)
    assert v1 is not None and v1.date == "2024-06-18" and v1.sha == MTEB_V1_PIN
    assert pin is not None and pin.sha == BRIGHT_PIN
    assert all(v1.holds_config(c) is False for c in REASONING)
    assert all(pin.holds_config(c) is True for c in REASONING)
    # a short id names a commit; a commit no source names is unknown, never filled in
    assert data_states.hub_commit(BRIGHT_REPO, "3ee09c7").date == "2024-08-27"
    assert data_states.hub_commit(BRIGHT_REPO, "3ee09c7").sha is None
    assert data_states.content(BRIGHT_REPO, "b" * 40, "documents") is None
    assert data_states.holds(BRIGHT_REPO, "b" * 40, "gpt4_reason") is None


def test_the_two_pins_hold_different_uploads_of_the_examples_and_documents():
    for component in ("documents", "examples"):
        assert data_states.content(BRIGHT_REPO, MTEB_V1_PIN, component) == "xlangai/BRIGHT@a75a0eb"
        assert data_states.content(BRIGHT_REPO, BRIGHT_PIN, component) == "mteb/BRIGHT@c26703e"
    # the documents were uploaded again once after a75a0eb, the examples five times (the audit's commit list)
    commits = data_states.commits_of(BRIGHT_REPO)
    assert [c.short for c in commits if "documents" in c.uploaded] == ["95d97a1"]
    assert [c.short for c in commits if "examples" in c.uploaded] == [
        "2f6b290",
        "58e5076",
        "3ee09c7",
        "c641383",
        "1c9ff4a",
    ]


def test_the_emulated_hub_serves_a_file_at_a_commit_only_where_the_record_shows_it():
    files = {
        f"{c}/biology-00000-of-00001.parquet": b"x" for c in ("examples", "documents", "long_documents", *REASONING)
    }
    for commit, configs in HISTORY.items():
        record = data_states.hub_commit(BRIGHT_REPO, commit)
        assert record is not None, commit
        served = {path.split("/", 1)[0] for path in files_at(files, commit)}
        assert served == set(configs)
        assert all(record.holds_config(c) is True for c in served)
        assert not any(record.holds_config(c) is False for c in served)


def test_r2med_pins_are_the_records_and_mtebs():
    from r2med.data.tasks import TASKS

    for name, spec in TASKS.items():
        record = data_states.hub_commit(spec.hub_id, spec.revision)
        assert record is not None and record.sha == spec.revision, name
        assert {f.dataset_revision for f in data_states.mteb_figures() if f.task == name} == {spec.revision}


# -- each figure names its data ------------------------------------------------------------------------------


def test_each_figure_source_names_its_data_or_unknown():
    from r2med.protocol import bright

    seen = {}
    for row in bright.published_rows():
        state = data_states.figure_state("bright", row.setting, row.source, row.queries)
        seen[(row.setting, state.known)] = state
        if row.queries != "original":
            assert state.reasoning is not None  # a reasoning figure always names its set (or unknown)
    assert seen[("paper", True)].documents == "mteb/BRIGHT@c26703e"
    # later papers, third parties, submissions and Pyserini's reproductions name no commit: unknown, never graded
    for setting in ("later_paper", "later_third_party", "leaderboard_submission", "pyserini_2cr"):
        assert (setting, True) not in seen and (setting, False) in seen
    # the leaderboard's long-document and July-2024 reranking averages: unknown
    lb = [r for r in bright.published_rows() if r.setting == "leaderboard"]
    for r in lb:
        state = data_states.figure_state("bright", r.setting, r.source, r.queries)
        assert state.known == (r.documents == "short" and r.reranker == "none"), (r.source, r.queries)


def test_bm25_at_mtebs_v1_pin_is_not_graded_against_the_revised_figure_and_says_both_states():
    from r2med.results.bright_published import BrightKey
    from r2med.results.grading import data_problem
    from r2med.runs.record import RunData

    record = RunData.model_validate(
        {
            "source": f"hf://datasets/{BRIGHT_REPO}@{MTEB_V1_PIN}",
            "revision": MTEB_V1_PIN,
            "protocol": {"documents": "documents", "judgments": "gold_ids"},
        }
    )
    key = BrightKey("bm25")
    problem = data_problem("bright:biology", record, key)
    assert problem is not None
    assert "published 18.90 made on documents and examples of mteb/BRIGHT@c26703e" in problem
    assert f"run on {BRIGHT_REPO}@{MTEB_V1_PIN[:12]} (documents and examples of xlangai/BRIGHT@a75a0eb)" in problem
    at_pin = record.model_copy(update={"source": f"hf://datasets/{BRIGHT_REPO}@{BRIGHT_PIN}", "revision": BRIGHT_PIN})
    assert data_problem("bright:biology", at_pin, key) is None


def test_an_r2med_figure_of_unknown_data_is_not_graded():
    from r2med.data.tasks import TASKS
    from r2med.results.grading import data_problem
    from r2med.results.published import PublishedKey
    from r2med.runs.record import RunData

    spec = TASKS["Biology"]
    record = RunData.model_validate(
        {
            "source": f"hf://datasets/{spec.hub_id}@{spec.revision}",
            "revision": spec.revision,
            "data": {"queries": spec.queries, "docs": spec.docs},
        }
    )
    assert data_problem("Biology", record, PublishedKey("bge")) is None  # R2MED's own results: the pins
    # ReasonEmbed's paper table (an image; VectorSpaceLab/agentic-search ReasonEmbed/imgs/r2med-performance.png)
    # names no commit of R2MED's tasks: its Biology figure 54.01 is shown with that, never graded
    problem = data_problem("Biology", record, PublishedKey("ReasonEmbed-Qwen3-8B"))
    assert problem == "Biology: published 54.01 made on unknown data (a figure whose data no source shows): not graded"


# -- mteb's results as a second source -----------------------------------------------------------------------


def test_mtebs_bge_equals_r2meds_on_its_8_tasks_and_e5_differs():
    paper = {  # R2MED/R2MED results/base retriever/bge/*.json and e5/*.json, nDCG@10 x100
        "bge": {"Biology": 12.71, "MedXpertQA-Exam": 4.10, "PMC-Treatment": 26.45},
        "e5": {"Biology": 18.81, "MedXpertQA-Exam": 6.70, "PMC-Treatment": 23.58},
    }
    bge = {f.task: f for f in data_states.mteb_figures_of("BAAI/bge-large-en-v1.5") if f.version == "R2MED"}
    assert len(bge) == 8 and bge["Biology"].value == pytest.approx(12.706)
    assert bge["Biology"].model_revision == "d4aa6901d3a41ba39fb536a557fa166f842b0e09"
    for task, value in paper["bge"].items():
        assert bge[task].value == pytest.approx(value, abs=0.01)
    e5 = {f.task: f for f in data_states.mteb_figures_of("intfloat/e5-mistral-7b-instruct") if f.version == "R2MED"}
    assert max(abs(e5[t].value - v) for t, v in paper["e5"].items()) > 4


def test_mtebs_imported_bright_figures_are_marked_and_v1_1_is_on_mtebs_copy():
    bge = data_states.mteb_figures_of("BAAI/bge-large-en-v1.5", "bright:biology")
    by_version = {f.version: f for f in bge}
    assert by_version["BRIGHT v1"].evaluated is False  # evaluation_time 0, no model revision: imported figures
    assert by_version["BRIGHT v1.1"].dataset == "mteb/BRIGHT"
    assert by_version["BRIGHT v1.1"].dataset_revision == "c26703e6600d97c579ee2985f16cf307db13ed85"
    assert by_version["BRIGHT v1.1"].value == pytest.approx(11.67)  # the revised table: 11.7


# -- end to end on a hub laid out as the record --------------------------------------------------------------


@pytest.fixture
def history(hf_cache):
    """The emulated hub's files in the cache at both recorded commits (the v1 pin without reasoning sets)."""
    pytest.importorskip("pyarrow")
    if not have_shared_bright():
        pytest.skip("../shared/data/bright is not available")
    files = bright_files(("biology",), queries=4, distractors=30, reasoning=("gpt4_reason",))
    fill_bright_cache(hf_cache, files, MTEB_V1_PIN, refs=())
    fill_bright_cache(hf_cache, files)
    return hf_cache


def ok(*args: str) -> str:
    res = run_r2med(*args)
    assert res.returncode == 0, res.stderr + res.stdout
    return " ".join((res.stdout + res.stderr).split())


@pytest.mark.shared
def test_reasoning_at_the_default_pin_is_graded_against_the_gpt4_row(history, tmp_path):
    runs = tmp_path / "runs"
    out = ok("evaluate", "-r", "bm25", "-t", "bright:biology", "-e", "reason:gpt4", "-o", str(runs))
    assert "53.60" in out and "not graded" not in out
    system = json.loads(run_r2med("report", str(runs), "--format", "json").stdout)["systems"][0]
    assert system["published"]["label"] == "bm25+reason-gpt4"
    assert system["cells"]["bright:biology"]["published"] == 53.6
    metrics = json.loads((runs / "bm25+reason-gpt4" / "bright-biology" / "metrics.json").read_text())
    assert metrics["revision"] == BRIGHT_PIN and metrics["config"]["expansion"]["revision"] == BRIGHT_PIN


@pytest.mark.shared
def test_at_mtebs_v1_pin_bm25_is_not_graded_and_its_reasoning_set_is_read_where_it_exists(history, tmp_path):
    runs = tmp_path / "runs"
    out = ok("evaluate", "-r", "bm25", "-t", "bright:biology", "--revision", MTEB_V1_PIN, "-o", str(runs))
    assert "published 18.90 made on documents and examples of mteb/BRIGHT@c26703e" in out
    board = json.loads(run_r2med("report", str(runs), "--format", "json").stdout)
    cell = board["systems"][0]["cells"]["bright:biology"]
    assert cell["published"] is None and "xlangai/BRIGHT@a75a0eb" in cell["ungraded"]
    out = ok("evaluate", "-r", "bm25", "-t", "bright:biology", "-e", "reason:gpt4", "--revision", MTEB_V1_PIN, "-o",
             str(runs))  # fmt: skip
    metrics = json.loads((runs / "bm25+reason-gpt4" / "bright-biology" / "metrics.json").read_text())
    assert metrics["revision"] == MTEB_V1_PIN  # the documents' commit
    assert metrics["config"]["expansion"]["revision"] == BRIGHT_PIN  # the reasoning set's, apart
    assert f"/snapshots/{BRIGHT_PIN}/gpt4_reason/" in metrics["config"]["expansion"]["file"]
    assert len(metrics["config"]["expansion_fingerprint"]) >= 16
    assert "published 53.60 made on" in out and "reasoning set read at 3066d29c9651" in out


def _r2med_results(root, retriever: str, value: float = 0.2):
    """Result folders of ``retriever`` (a dense preset, its recorded config as ``evaluate`` writes it) on R2MED's
    8 tasks at their pinned commits, each task's nDCG@10 ``value`` (the figures are not the point: which published
    figures are shown beside them is)."""
    from r2med.data.tasks import TASKS
    from r2med.retrieval.registry import make_retriever
    from r2med.runs.run import write_task_results

    for name, spec in TASKS.items():
        config = {"step": "evaluate", "k": 1000, **make_retriever(retriever, task=name).config(), "expansion": None}
        payload = {
            "task": name,
            "retriever": retriever,
            "source": f"hf://datasets/{spec.hub_id}@{spec.revision}",
            "revision": spec.revision,
            "data": {"queries": spec.queries, "docs": spec.docs},
            "config": config,
            "aggregate": {"ndcg_cut_10": value},
            "per_query": {"q1": {"ndcg_cut_10": value}},
        }
        write_task_results(root / retriever / name, {"q1": {"d1": 1.0}}, payload)
    return root


def test_report_shows_mtebs_figure_beside_the_papers_for_bge_and_e5_each_named(tmp_path):
    from r2med.report import build_leaderboard, leaderboard
    from r2med.results.folders import find_systems

    runs = _r2med_results(_r2med_results(tmp_path / "runs", "bge"), "e5")
    board = build_leaderboard(find_systems([runs]))
    rows = {r.system: r for r in board.rows}
    bge, e5 = rows["bge"], rows["e5"]
    assert bge.published is not None and bge.published.retriever == "bge"
    # mteb's bge-large-en-v1.5 on each pinned commit (embeddings-benchmark/results@f4cc6c8) = R2MED's own figure
    assert bge.mteb["Biology"] == pytest.approx(12.706) and bge.cells["Biology"].published == 12.71
    assert len(bge.mteb) == 8
    assert all(abs(bge.mteb[t] - bge.cells[t].published) <= 0.01 for t in bge.mteb)
    # e5-mistral: up to ~6 points apart (PMC-Clinical: mteb 25.18, R2MED 31.17)
    assert e5.mteb["PMC-Clinical"] == pytest.approx(25.18, abs=0.01) and e5.cells["PMC-Clinical"].published == 31.17
    legend = board.legend()
    assert any(
        line.startswith("mteb BAAI/bge-large-en-v1.5: figures of embeddings-benchmark/results@f4cc6c8")
        for line in legend
    )
    assert any("model BAAI/bge-large-en-v1.5@d4aa690" in line and "not graded" in line for line in legend)
    apart = [
        line for line in legend if line.startswith("mteb and the paper disagree for intfloat/e5-mistral-7b-instruct")
    ]
    assert apart and "PMC-Clinical (mteb 25.18, paper 31.17)" in apart[0]
    assert not any("disagree for BAAI/bge-large-en-v1.5" in line for line in legend)
    markdown = leaderboard.to_markdown(board)
    line = next(row for row in markdown.splitlines() if row.startswith("| mteb BAAI/bge-large-en-v1.5 |"))
    assert line.startswith("| mteb BAAI/bge-large-en-v1.5 | 12.71 |")  # under the row, in R2MED's task order
    record = board.to_dict()["systems"][0]["cells"]
    assert record["Biology"]["mteb"] == pytest.approx(12.706)
