"""`reproduce` shows mteb's figure beside the paper's for each target where mteb has one (issue 36, Deliver 9): the
figure of the target's checkpoint made on the data the reproduction reads, named with its model and data commits,
graded by the rule `report` grades it by (the run recorded mteb's model commit), and the disagreement with the
paper named where there is one -- in the dry run's table and JSON and in the outcomes' table and JSON."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import run_r2med
from r2med.jobs import reproduce as rp
from test_dense_fixtures import bert_dir  # noqa: F401
from test_report import write_collection

MTEB_RESULTS = Path(__file__).resolve().parent.parent / "src" / "r2med" / "protocol" / "mteb_results.json"
BGE = "BAAI/bge-large-en-v1.5"


def mteb_row(model: str, task: str) -> dict:
    """mteb's own (evaluated) nDCG@10 row of ``model`` on ``task``, read from the shipped file itself."""
    rows = json.loads(MTEB_RESULTS.read_text())["rows"]
    [row] = [r for r in rows if r["model"] == model and r["task"] == task and r["measure"] == "nDCG@10"]
    return row


def test_dry_run_shows_mtebs_figure_beside_the_papers():
    dry = run_r2med("reproduce", "--dry-run", "-r", "bge", "--settings", "base", "-t", "Biology", "-f", "json")
    assert dry.returncode == 0, dry.stderr
    [row] = json.loads(dry.stdout)
    expected = mteb_row(BGE, "Biology")
    assert row["mteb"]["value"] == expected["value"] == 12.706
    assert (row["mteb"]["model"], row["mteb"]["model_revision"]) == (BGE, expected["model_revision"])
    assert row["mteb"]["dataset_revision"] == expected["dataset_revision"]  # the pin the reproduction reads
    assert row["mteb"]["graded"] is False and row["mteb"]["paper_apart"] is False  # bge: the paper's 12.71
    table = run_r2med("reproduce", "--dry-run", "-r", "e5", "--settings", "base", "-t", "Biology", "--wide")
    text = " ".join(table.stdout.split())
    e5 = mteb_row("intfloat/e5-mistral-7b-instruct", "Biology")
    assert f"mteb intfloat/e5-mistral-7b-instruct@{e5['model_revision'][:7]}" in text
    assert f"Biology (mteb {e5['value']:.2f}, paper 18.81)" in text and "disagree" in text


def test_bm25_and_expanded_targets_have_no_mteb_figure():
    planned = rp.plan(rp.targets(["base", "gar"], ["bm25"], ["Biology"]), rp.Environment(None))
    assert planned and all(p.mteb is None for p in planned)


def test_a_completed_reproduction_shows_mtebs_figure_of_the_checkpoint_it_ran(hf_cache, tmp_path, bert_dir):
    """bge on Biology from the Hugging Face cache at the pin (a tiny stand-in cached as bge-large-en-v1.5: its
    figure is no bge figure); the run recorded no model commit, so mteb's figure is shown, not graded."""
    from rich.console import Console

    from hub_server import fill_hf_cache
    from r2med.data.tasks import get_task
    from r2med.report.reproduce_tables import outcome_table, to_json

    src = write_collection(tmp_path / "src", "Biology")
    files = {name: (src / name).read_bytes() for name in ("corpus.jsonl", "query.jsonl", "qrels.jsonl")}
    fill_hf_cache(hf_cache, "R2MED/Biology", files, get_task("Biology").revision)
    model = {p.name: p.read_bytes() for p in Path(bert_dir).iterdir() if p.is_file()}
    fill_hf_cache(hf_cache, BGE, model, "b" * 40, repo_type="model")
    env = rp.Environment(None)
    planned = rp.plan(rp.targets(["base"], ["bge"], ["Biology"]), env)
    assert [p.runnable for p in planned] == [True], planned
    [outcome] = rp.run_matrix(planned, tmp_path / "out", env)
    assert outcome.value is not None, outcome
    expected = mteb_row(BGE, "Biology")
    assert outcome.mteb is not None and outcome.mteb.value == expected["value"]
    assert outcome.mteb.graded is False  # no model commit recorded: shown, not graded (report's rule)
    [payload] = json.loads(to_json(outcomes=[outcome]))
    assert payload["mteb"]["value"] == expected["value"] and payload["published"] == 12.71
    console = Console(width=250, record=True)
    console.print(outcome_table([outcome]))
    shown = " ".join(console.export_text().split())
    assert "12.71" in shown and f"mteb {BGE}@{expected['model_revision'][:7]}" in shown
    assert "not graded: the run recorded no model commit equal to mteb's" in shown
