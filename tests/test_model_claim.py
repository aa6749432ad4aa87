"""A local model folder is graded only on its shown identity or on the user's explicit claim (issue 36, Deliver 7):
``--set model_claim=org/name[@commit]`` is recorded as a claim, grades the run against that checkpoint's figure, and
every output marks the grade "on your claim"; a folder without a claim is not graded, whatever its name."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from conftest import minilm_path, recorded, run_r2med
from test_grading import biology, dense_config, hub_sized, ok, one_line_error, report_json  # noqa: F401

CONTRIEVER = "facebook/contriever-msmarco"
COMMIT = "a" * 40


def _contriever_on_minilm(data: Path, out: Path, *claim: str, name: str = "contriever") -> Path:
    """``-r contriever`` run with the offline MiniLM folder (a stand-in: its weights are not Contriever's)."""
    ok(
        "evaluate",
        "-r",
        "contriever",
        "--model",
        minilm_path(),
        *claim,
        "--name",
        name,
        "-d",
        str(data),
        "--out",
        str(out),
    )
    return out / name


def test_a_claimed_folder_is_graded_on_the_claim_in_every_output(biology, tmp_path):
    runs = tmp_path / "runs"
    folder = _contriever_on_minilm(biology, runs, "--set", f"model_claim={CONTRIEVER}@{COMMIT}")
    record = json.loads((folder / "Biology" / "metrics.json").read_text())
    assert record["config"]["options"]["model_claim"] == f"{CONTRIEVER}@{COMMIT}"  # recorded as the claim
    assert "model_claim" not in record["config"]["encoder"]  # no part of what made the vectors (the cache key)
    payload = report_json(runs)
    system = payload["systems"][0]
    assert system["published"]["label"] == "contriever"
    cell = system["cells"]["Biology"]
    assert cell["published"] is not None and "¶" in cell["marks"]
    assert any("graded on your claim" in line for line in payload["legend"])
    assert any(f"claimed {CONTRIEVER}@{COMMIT}" in line for line in payload["legend"])
    for fmt in ("markdown", "latex", "table"):
        shown = ok("report", str(runs), "--format", fmt)
        assert "graded on your claim" in " ".join(shown.split()), fmt
    ok("report", str(runs), "--html", str(tmp_path / "page.html"))
    page = (tmp_path / "page.html").read_text()
    assert "graded on your claim" in page and "¶" in page
    latex = ok("report", str(runs), "--format", "latex")
    assert r"\textsuperscript{\P}" in latex


def test_the_evaluate_summary_says_the_grade_rests_on_the_claim(biology, tmp_path):
    res = run_r2med(
        "evaluate", "-r", "contriever", "--model", minilm_path(), "--set", f"model_claim={CONTRIEVER}",
        "-d", str(biology), "--out", str(tmp_path / "runs"),
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert "graded on your claim" in " ".join((res.stdout + res.stderr).split())


def test_a_folder_without_a_claim_or_with_another_claim_is_not_graded(biology, tmp_path):
    _contriever_on_minilm(biology, tmp_path / "plain")
    assert report_json(tmp_path / "plain")["systems"][0]["published"] is None
    _contriever_on_minilm(biology, tmp_path / "other", "--set", "model_claim=BAAI/bge-large-en-v1.5")
    system = report_json(tmp_path / "other")["systems"][0]
    assert (
        system["published"] is None
        and "claimed as BAAI/bge-large-en-v1.5, published facebook/contriever-msmarco" in system["ungraded"]
    )


def test_a_folder_named_after_the_checkpoint_without_a_claim_stays_ungraded(biology, tmp_path):
    named = tmp_path / "contriever"
    shutil.copytree(minilm_path(), named)
    ok("evaluate", "-r", "contriever", "--model", str(named), "-d", str(biology), "--out", str(tmp_path / "runs"))
    assert report_json(tmp_path / "runs")["systems"][0]["published"] is None


def test_a_claim_is_a_hub_id_and_only_for_a_local_folder(biology, tmp_path):
    out = str(tmp_path / "runs")
    line = one_line_error(
        "evaluate",
        "-r",
        "contriever",
        "--set",
        "model_claim=facebook/contriever-msmarco",
        "-d",
        str(biology),
        "--out",
        out,
    )
    assert "model_claim" in line and "a claim is for a local folder" in line
    for bad in ("not a hub id", "org/name@main", "../x/y"):
        claim = f"model_claim={bad}"
        line = one_line_error(
            "evaluate", "-r", "contriever", "--model", minilm_path(), "--set", claim, "-d", str(biology)
        )
        assert "model_claim" in line and "expected a hub id" in line, line


def test_grading_reads_the_recorded_claim():
    from r2med.results.grading import grade

    folder = dense_config("bge", model="/models/any")
    assert grade(recorded(folder), "Biology").key is None
    claimed = grade(recorded(dense_config("bge", model="/models/any", model_claim="BAAI/bge-large-en-v1.5")), "Biology")
    assert claimed.key is not None and claimed.key.label == "bge" and claimed.claim == "BAAI/bge-large-en-v1.5"
    # a Hugging Face cache snapshot shows its own identity: a claim beside it is not what grades it
    snapshot = "/hf/hub/models--BAAI--bge-large-en-v1.5/snapshots/" + "d" * 40
    shown = grade(recorded(dense_config("bge", model=snapshot, model_claim="BAAI/bge-large-en-v1.5")), "Biology")
    assert shown.key is not None and shown.claim is None
