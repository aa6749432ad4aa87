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

from conftest import minilm_path, shared_collection

from r2med.run import read_trec


def r2med(*args: str, home: Path, extra_env: dict | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "R2MED_HOME": str(home), "HF_HUB_OFFLINE": "1", **(extra_env or {})}
    return subprocess.run([sys.executable, "-m", "r2med", *args], capture_output=True, text=True, env=env,
                          timeout=900)


def small_collection(folder: Path) -> Path:
    folder.mkdir()
    docs = {"d1": "insulin resistance in muscle", "d2": "heart failure therapy", "d3": "kidney stones and diet"}
    with open(folder / "corpus.jsonl", "w") as fh:
        for i, t in docs.items():
            fh.write(json.dumps({"id": i, "text": t}) + "\n")
    (folder / "query.jsonl").write_text(json.dumps({"id": "q1", "text": "insulin"}) + "\n")
    (folder / "qrels.jsonl").write_text(json.dumps({"q_id": "q1", "p_id": "d1", "score": 1}) + "\n")
    return folder


@pytest.mark.parametrize("args, message", [
    (["--retriever", "no-such-model"], "unknown retriever"),
    (["--retriever", "dense", "--model", "/no/such/model/folder"], "does not exist"),
    (["--retriever", "openai"], "OPENAI_API_KEY"),
    (["--retriever", "bm25", "--model", "x"], "apply to dense retrievers"),
    (["--retriever", "nv"], "--trust-remote-code"),
])
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
    paper = ["bm25", "contriever", "medcpt", "inst-l", "inst-xl", "bmr-410m", "bmr-2b", "bmr-7b", "bge", "e5",
             "grit", "sfr", "nv", "openai", "voyage"]
    assert set(paper) <= set(rows) and "dense" in rows
    assert rows["bm25"]["k1"] == 0.9 and rows["nv"]["hub_id"] == "nvidia/NV-Embed-v2"
    assert rows["bge"]["pooling"] == "cls" and rows["e5"]["max_length"] == 2048


@pytest.mark.slow
@pytest.mark.shared
def test_medline_cli_top100_equals_direct_encode_and_brute_force(tmp_path, r2med_home):
    """The issue's acceptance check (max length 64 keeps it to about a minute per pass on 2 cores)."""
    data = shared_collection("medline-med")
    model_path = minilm_path()
    proc = r2med("evaluate", "--retriever", "dense", "--model", model_path, "--max-length", "64",
                 "-d", str(data), "-o", str(tmp_path / "out"), home=r2med_home)
    assert proc.returncode == 0, proc.stderr[-3000:]
    folder = tmp_path / "out" / "dense" / "medline-med"
    run = read_trec(folder / "run.trec")
    metrics = json.loads((folder / "metrics.json").read_text())

    from sentence_transformers import SentenceTransformer

    from r2med.data.loaders import load_folder

    collection = load_folder(data)
    model = SentenceTransformer(model_path, device="cpu")
    model.max_seq_length = 64
    doc_ids, qids = list(collection.corpus), list(collection.queries)
    d = model.encode(list(collection.corpus.values()), batch_size=64)
    q = model.encode(list(collection.queries.values()))
    scores = q.astype(np.float64) @ d.astype(np.float64).T
    for row, qid in enumerate(qids):
        if qid in doc_ids:  # BEIR's ignore_identical_ids
            scores[row, doc_ids.index(qid)] = -np.inf
        order = np.argsort(-scores[row], kind="stable")[:100]
        got = run[qid]
        assert list(got) == [doc_ids[j] for j in order], qid
        np.testing.assert_allclose(list(got.values()), scores[row, order], atol=1e-5)
    assert 0.5 < metrics["aggregate"]["ndcg_cut_10"] <= 1.0
    print(f"medline-med MiniLM (max length 64) nDCG@10 = {metrics['aggregate']['ndcg_cut_10']:.4f}")
