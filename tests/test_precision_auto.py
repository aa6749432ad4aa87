"""A published row whose code loaded its checkpoint with ``torch_dtype="auto"`` (GritLM: BRIGHT's retrievers.py:287,
R2MED's utils.py) is graded only in the precision class its checkpoint declares (issue 36): r2med records at load
the precision the checkpoint's config.json declares and the one the weights ran in, and grading compares their
classes (fp32 full; fp16 and bf16 half); a record without them is not graded (precision unknown).

The runs here load a tiny random BERT whose config.json declares ``bfloat16`` (its weights saved so) through r2med's
own loader -- the recorded facts are what a real load recorded; the run's config is then relabelled as GritLM's (a
7B model that cannot run here) to grade those facts against the published rows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import recorded
from test_bright_grading import GRIT, GRIT_BIOLOGY
from test_bright_grading import dense_config as bright_dense_config
from test_dense_fixtures import tiny_bert
from test_grading import biology, dense_config, ok, report_json  # noqa: F401


def _declares_bfloat16(folder: Path) -> Path:
    """A tiny random BERT saved in bfloat16: its config.json declares ``bfloat16`` (transformers writes the precision
    of the weights it saves)."""
    import torch
    from transformers import BertModel

    tiny_bert(folder)
    BertModel.from_pretrained(folder, dtype=torch.float32).to(torch.bfloat16).save_pretrained(folder)
    config = json.loads((folder / "config.json").read_text())
    assert (config.get("dtype") or config.get("torch_dtype")) == "bfloat16"
    return folder


@pytest.fixture(scope="module")
def bf16_model(tmp_path_factory) -> Path:
    return _declares_bfloat16(tmp_path_factory.mktemp("declares-bf16"))


def _run(data: Path, out: Path, model: Path, dtype: str) -> dict:
    ok(
        "evaluate", "-r", "dense", "--model", str(model), "--pooling", "mean", "--dtype", dtype,
        "--name", "grit", "-d", str(data), "--out", str(out), "--no-cache",
    )  # fmt: skip
    return json.loads((out / "grit" / "Biology" / "metrics.json").read_text())


def _as_grit(out: Path, asked: str) -> None:
    """Relabel the run's config as the paper's grit preset's (the facts of what the model ran with stay)."""
    path = out / "grit" / "Biology" / "metrics.json"
    payload = json.loads(path.read_text())
    payload["config"] = {**dense_config("grit"), "encoder": {"model": "GritLM/GritLM-7B", "dtype": asked}}
    path.write_text(json.dumps(payload))


def test_the_load_records_the_declared_precision_and_the_weights(biology, tmp_path, bf16_model):
    fp32 = _run(biology, tmp_path / "fp32", bf16_model, "fp32")["encoding"]
    auto = _run(biology, tmp_path / "auto", bf16_model, "auto")["encoding"]
    assert (fp32["declared_dtype"], fp32["weights"]) == ("bfloat16", "float32")
    assert (auto["declared_dtype"], auto["weights"]) == ("bfloat16", "bfloat16")


def test_fp32_is_not_graded_where_the_published_code_ran_the_checkpoints_own_bf16(biology, tmp_path, bf16_model):
    _run(biology, tmp_path / "fp32", bf16_model, "fp32")
    _as_grit(tmp_path / "fp32", "fp32")
    system = report_json(tmp_path / "fp32")["systems"][0]
    assert system["published"] is None
    assert system["ungraded"] == (
        "not the published grit: ran in float32; the paper's code ran GritLM/GritLM-7B as its checkpoint declares "
        "(bfloat16)"
    )
    _run(biology, tmp_path / "auto", bf16_model, "auto")
    _as_grit(tmp_path / "auto", "auto")
    system = report_json(tmp_path / "auto")["systems"][0]
    assert system["published"]["label"] == "grit" and system["cells"]["Biology"]["published"] is not None


@pytest.mark.parametrize(
    "encoding, graded, reason",
    [
        ({"weights": "bfloat16", "declared_dtype": "bfloat16"}, True, None),
        ({"weights": "float16", "declared_dtype": "bfloat16"}, True, None),  # the same (half) class
        (
            {"weights": "float32", "declared_dtype": "bfloat16"},
            False,
            "ran in float32; BRIGHT ran GritLM/GritLM-7B as its checkpoint declares (bfloat16)",
        ),
        (
            {"weights": "bfloat16", "declared_dtype": "float32"},
            False,
            "ran in bfloat16; BRIGHT ran GritLM/GritLM-7B as its checkpoint declares (float32)",
        ),
        ({"weights": "float32", "declared_dtype": "float32"}, True, None),
        ({"made_by": "the embedding cache"}, False, "precision unknown: the record names no weight precision"),
        (None, False, "precision unknown: the record names no weight precision"),
    ],
)
def test_brights_grit_is_graded_in_its_checkpoints_precision_class(encoding, graded, reason):
    from r2med.results.grading import grade, grade_system

    config = bright_dense_config("grit", "grit", GRIT_BIOLOGY)
    got = grade(recorded(config), "bright:biology", encoding)
    assert got.row == GRIT and (got.key == GRIT) is graded
    if reason is not None:
        assert got.reason is not None and got.reason.startswith(f"not the published {GRIT.title}: {reason}"), got
    assert grade_system({"bright:biology": recorded(config)}, {"bright:biology": encoding}) == got


def test_a_row_run_in_fp32_by_its_code_is_not_asked_for_the_declared_precision():
    """The rule is the published precision's (``auto``), not GritLM's name: bge (fp32) keeps its own rule."""
    from r2med.results.grading import grade

    config = {**dense_config("bge"), "encoder": {"model": "BAAI/bge-large-en-v1.5", "dtype": "fp32"}}
    assert grade(recorded(config), "Biology").key is not None
