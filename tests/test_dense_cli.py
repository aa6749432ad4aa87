"""``r2med evaluate`` with dense retrievers, ``r2med models``, bad input -> one line, exit 2; and the
medline-med check: the CLI's top-100 equals SentenceTransformer.encode + brute-force numpy search."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import minilm_path, run_r2med, shared_collection
from r2med.runs.run import read_trec
from test_dense_fixtures import bert_dir, bert_dir_2  # noqa: F401


def r2med(*args: str, home: Path, extra_env: dict | None = None) -> subprocess.CompletedProcess:
    return run_r2med(*args, env={"R2MED_HOME": str(home), "HF_HUB_OFFLINE": "1", **(extra_env or {})})


def small_collection(folder: Path) -> Path:
    folder.mkdir()
    docs = {"d1": "insulin resistance in muscle", "d2": "heart failure therapy", "d3": "kidney stones and diet"}
    with open(folder / "corpus.jsonl", "w") as fh:
        for i, t in docs.items():
            fh.write(json.dumps({"id": i, "text": t}) + "\n")
    (folder / "query.jsonl").write_text(json.dumps({"id": "q1", "text": "insulin"}) + "\n")
    (folder / "qrels.jsonl").write_text(json.dumps({"q_id": "q1", "p_id": "d1", "score": 1}) + "\n")
    return folder


@pytest.mark.parametrize(
    "args, message",
    [
        (["--retriever", "no-such-model"], "unknown retriever"),
        (["--retriever", "dense", "--model", "/no/such/model/folder"], "does not exist"),
        (["--retriever", "openai"], "OPENAI_API_KEY"),
        (
            ["--retriever", "bm25", "--model", "x"],
            "unknown option '--model'; it takes: --no-cache, --k1, --b, --analyzer",
        ),
        (["--retriever", "nv"], "--trust-remote-code"),
        (["--retriever", "bm25", "--similarity", "dot"], "unknown option '--similarity'"),
        (["--retriever", "bge", "--similarity", "euclid"], "unknown similarity 'euclid'; choose from: cosine, dot"),
        (
            ["--retriever", "bge", "--dtype", "fp8"],
            "unknown dtype 'fp8'; choose from: fp32, fp16, bf16, fp16-autocast, auto",
        ),
    ],
)
def test_bad_input_is_one_line_exit_2(tmp_path, r2med_home, args, message):
    data = small_collection(tmp_path / "mini")
    env = {"OPENAI_API_KEY": ""}
    proc = r2med("evaluate", *args, "-d", str(data), "-o", str(tmp_path / "out"), home=r2med_home, extra_env=env)
    assert proc.returncode == 2, proc.stderr[-3000:]
    lines = [line for line in proc.stderr.splitlines() if line.strip() and "Loading weights" not in line]
    assert lines and message in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and len([x for x in lines if "error" in x]) == 1


def test_models_lists_bm25_and_every_paper_preset(r2med_home):
    proc = r2med("models", "--json", home=r2med_home)
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    paper = [
        "bm25",
        "contriever",
        "medcpt",
        "inst-l",
        "inst-xl",
        "bmr-410m",
        "bmr-2b",
        "bmr-7b",
        "bge",
        "e5",
        "grit",
        "sfr",
        "nv",
        "openai",
        "voyage",
    ]
    assert set(paper) <= set(rows) and "dense" in rows
    assert rows["bm25"]["k1"] == 0.9 and rows["nv"]["hub_id"] == "nvidia/NV-Embed-v2"
    assert rows["bge"]["pooling"] == "cls" and rows["e5"]["max_length"] == 2048
    for name in paper[1:]:  # every dense preset says how it scores and in which precision
        assert rows[name]["similarity"] == "cosine" and rows[name]["dtype"], name
    assert rows["bmr-7b"]["dtype"] == "fp16-autocast" and rows["nv"]["dtype"] == "fp16" and not rows["nv"]["append_eos"]
    table = r2med("models", home=r2med_home, extra_env={"COLUMNS": "250"})
    assert table.returncode == 0 and "similarity" in table.stdout and "fp16-autocast" in table.stdout


def test_similarity_and_dtype_are_recorded_in_the_config(tmp_path, r2med_home, bert_dir, bert_dir_2):
    data = small_collection(tmp_path / "mini")
    proc = r2med(
        "evaluate",
        "--retriever",
        "dense",
        "--model",
        bert_dir,
        "--pooling",
        "mean",
        "--similarity",
        "dot",
        "--dtype",
        "bf16",
        "-d",
        str(data),
        "-o",
        str(tmp_path / "out"),
        home=r2med_home,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    # a custom model's system is named after the model, so two models in one results root do not collide
    name = f"dense-{Path(bert_dir).name}"
    config = json.loads((tmp_path / "out" / name / "mini" / "metrics.json").read_text())["config"]
    assert config["similarity"] == "dot" and config["encoder"]["dtype"] == "bf16"
    assert config["options"]["similarity"] == "dot" and config["options"]["dtype"] == "bf16"
    other = r2med(
        "evaluate",
        "--retriever",
        "dense",
        "--model",
        bert_dir_2,
        "--pooling",
        "mean",
        "-d",
        str(data),
        "-o",
        str(tmp_path / "out"),
        home=r2med_home,
    )
    assert other.returncode == 0, other.stderr[-3000:]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == sorted([name, f"dense-{Path(bert_dir_2).name}"])


@pytest.mark.slow(seconds=90)
@pytest.mark.shared
def test_medline_cli_with_no_flags_equals_sentence_transformers_encode(tmp_path, r2med_home):
    """A sentence-transformers model named by its hub id (found offline in a pre-filled HF cache), no flags:
    nDCG@10 within 1e-4 of SentenceTransformer.encode + cosine brute force, top-10 overlap >= 0.99."""
    from sentence_transformers import SentenceTransformer

    from r2med.data.loaders import load_folder
    from r2med.evaluation.metrics import evaluate
    from test_dense_model_defaults import HUB_ID, hf_cache_with

    data = shared_collection("medline-med")
    model_path = minilm_path()
    cache = hf_cache_with(tmp_path / "hub", HUB_ID, model_path)
    # a real process: huggingface_hub reads HF_HUB_CACHE once, at import
    env = {**os.environ, "R2MED_HOME": str(r2med_home), "HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(cache)}
    # the CLI writes to a file, not a pipe (nothing waits on a reader), and encodes in its own process while
    # the reference is encoded here
    with (tmp_path / "cli.log").open("w") as log:
        cli = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "r2med",
                "evaluate",
                "--retriever",
                "dense",
                "--model",
                HUB_ID,
                "-d",
                str(data),
                "-o",
                str(tmp_path / "out"),
            ],
            stdout=log,
            stderr=log,
            env=env,
        )
        try:
            collection = load_folder(data)
            model = SentenceTransformer(model_path, device="cpu")  # its own settings: 256 tokens, mean, normalised
            doc_ids, qids = list(collection.corpus), list(collection.queries)
            d = model.encode(list(collection.corpus.values()))
            q = model.encode(list(collection.queries.values()))
            cli.wait(timeout=900)
        finally:
            if cli.poll() is None:
                cli.kill()
                cli.wait()
    assert cli.returncode == 0, (tmp_path / "cli.log").read_text()[-3000:]
    folder = tmp_path / "out" / "dense-all-MiniLM-L6-v2" / "medline-med"  # named after the model
    run = read_trec(folder / "run.trec")
    metrics = json.loads((folder / "metrics.json").read_text())
    assert metrics["config"]["similarity"] == "cosine" and metrics["config"]["encoder"]["max_length"] is None
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    scores = q.astype(np.float64) @ d.astype(np.float64).T
    reference, overlap = {}, []
    for row, qid in enumerate(qids):
        if qid in doc_ids:  # BEIR's ignore_identical_ids
            scores[row, doc_ids.index(qid)] = -np.inf
        order = np.argsort(-scores[row], kind="stable")[:100]
        reference[qid] = {doc_ids[j]: float(scores[row, j]) for j in order}
        overlap.append(len(set(list(run[qid])[:10]) & {doc_ids[j] for j in order[:10]}) / 10)
        for did, value in run[qid].items():
            np.testing.assert_allclose(value, scores[row, doc_ids.index(did)], atol=1e-5)
    ours, theirs = metrics["aggregate"]["ndcg_cut_10"], evaluate(reference, collection.qrels).aggregate["ndcg_cut_10"]
    assert abs(ours - theirs) <= 1e-4, (ours, theirs)
    assert np.mean(overlap) >= 0.99
    print(
        f"medline-med MiniLM, no flags: nDCG@10 r2med {ours:.4f}, SentenceTransformer.encode {theirs:.4f}, "
        f"top-10 overlap {np.mean(overlap):.4f}"
    )


def test_a_model_folder_that_is_not_there_is_refused_before_any_work(tmp_path, r2med_home):
    """Refused by the step's parse (the one line, the option named), not after the task loop and encoding began:
    under load those steps used to log progress lines ("stopped by an error") before the error."""
    data = small_collection(tmp_path / "mini")
    proc = r2med(
        "evaluate",
        "-r",
        "dense",
        "--model",
        str(tmp_path / "gone"),
        "-d",
        str(data),
        "-o",
        str(tmp_path / "out"),
        home=r2med_home,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"error: --model: model path '{tmp_path / 'gone'}' does not exist; pass an existing folder or a hub id"
    ]
    assert not (tmp_path / "out").exists()
