"""``r2med rerank`` over a real first-stage run folder: order, tail, top-k-only, reuse, bad input."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from conftest import run_r2med, shared_collection
from r2med.data.loaders import load_folder
from r2med.evaluation.metrics import evaluate
from r2med.jobs.evaluate import run_task
from r2med.runs.run import ranked, read_trec
from r2med.steps import EvaluateStep

pytest.importorskip("torch")
from test_rerank import _direct_scores, _tiny_bert

K = 5


@pytest.fixture(scope="module")
def first_stage(tmp_path_factory):
    data = shared_collection("medline-med")
    out = tmp_path_factory.mktemp("runs")
    coll = load_folder(data)
    # a 12-query slice keeps the test quick
    keep = sorted(coll.queries)[:12]
    coll = coll.replace(
        queries={q: coll.queries[q] for q in keep}, qrels={q: coll.qrels[q] for q in keep if q in coll.qrels}
    )
    # ... and a 300-doc corpus: the judged docs of those queries, then the first docs of the file
    judged = {d for docs in coll.qrels.values() for d in docs}
    docs = [d for d in coll.corpus if d in judged] + [d for d in coll.corpus if d not in judged]
    small = out / "data" / "medline-small"
    small.mkdir(parents=True)
    (small / "corpus.jsonl").write_text(
        "".join(json.dumps({"id": d, "text": coll.corpus[d]}) + "\n" for d in docs[:300])
    )
    (small / "query.jsonl").write_text(
        "".join(json.dumps({"id": q, "text": t}) + "\n" for q, t in coll.queries.items())
    )
    (small / "qrels.jsonl").write_text(
        "".join(
            json.dumps({"q_id": q, "p_id": d, "score": g}) + "\n"
            for q, judged in coll.qrels.items()
            for d, g in judged.items()
        )
    )
    coll = load_folder(small)
    run_task(coll, EvaluateStep.of("bm25", cache=False, top_k=20), out / "runs" / "bm25")
    model = _tiny_bert(tmp_path_factory.mktemp("model"), 1, seed=5)
    return out / "runs", coll, model


def test_rerank_command_orders_head_keeps_tail_and_reuses(first_stage):
    runs, coll, model = first_stage
    res = run_r2med(
        "rerank",
        "--run",
        str(runs / "bm25"),
        "--reranker",
        str(model),
        "--top-k",
        str(K),
        "--batch-size",
        "8",
        "--name",
        "ce",
    )
    assert res.returncode == 0, res.stderr
    folder = runs / "ce" / coll.name
    from importlib.metadata import version

    encoding = json.loads((folder / "metrics.json").read_text())["encoding"]  # what made the scores (issue 20)
    assert {p: encoding["versions"][p] for p in ("torch", "transformers", "tokenizers")} == {
        p: version(p) for p in ("torch", "transformers", "tokenizers")
    }
    got = read_trec(folder / "run.trec")
    first = read_trec(runs / "bm25" / coll.name / "run.trec")
    assert set(got) == set(first)
    for qid in first:
        # first-stage order with ties in corpus order: the paper's stable sort over the corpus
        order = [
            d
            for d, _ in sorted(
                ((d, first[qid][d]) for d in coll.corpus if d in first[qid]), key=lambda item: item[1], reverse=True
            )
        ]
        ref = _direct_scores(
            model, [(coll.queries[qid], coll.corpus[d]) for d in order[:K]], label=0, max_length=128
        )  # the tiny model has 128 positions
        expected = [order[i] for i in np.argsort(-ref, kind="stable")] + order[K:]
        assert [d for d, _ in ranked(got[qid])] == expected
    stored = json.loads((folder / "metrics.json").read_text())
    assert stored["aggregate"]["ndcg_cut_10"] == pytest.approx(evaluate(got, coll.qrels).aggregate["ndcg_cut_10"])
    assert stored["config"]["top_k"] == K and stored["config"]["first_stage"]["retriever"] == "bm25"
    again = run_r2med(
        "rerank",
        "--run",
        str(runs / "bm25"),
        "--reranker",
        str(model),
        "--top-k",
        str(K),
        "--batch-size",
        "8",
        "--name",
        "ce",
    )
    assert again.returncode == 0 and "reused" in again.stdout + again.stderr

    only = run_r2med("rerank", "--run", str(runs / "bm25"), "--reranker", str(model), "--top-k", str(K), "--top-k-only")
    assert only.returncode == 0, only.stderr
    short = read_trec(runs / f"bm25+{model.name}" / coll.name / "run.trec")
    assert all(len(docs) == K for docs in short.values())
    assert all(ranked(short[q]) == ranked({d: got[q][d] for d in short[q]}) for q in short)


def _broken_copy(runs: Path, tmp_path: Path, edit) -> Path:
    target = tmp_path / "bad" / "bm25"
    shutil.copytree(runs / "bm25", target)
    trec = next(target.glob("*/run.trec"))
    lines = trec.read_text().splitlines(keepends=True)
    trec.write_text("".join(edit(lines)))
    return target


def _cli(*args: str) -> subprocess.CompletedProcess:
    return run_r2med(*args)


def test_bad_input_is_a_one_line_error_with_no_output(first_stage, tmp_path):
    runs, _coll, model = first_stage
    unknown = _broken_copy(
        runs, tmp_path, lambda ls: ls[:3] + [ls[3].replace(ls[3].split()[2], "NOT-A-DOC", 1)] + ls[4:]
    )
    res = _cli("rerank", "--run", str(unknown), "--reranker", str(model))
    assert res.returncode == 2
    assert len(res.stderr.strip().splitlines()) == 1
    assert "run.trec:4" in res.stderr and "'NOT-A-DOC'" in res.stderr and "not in the corpus" in res.stderr
    assert sorted(p.name for p in (tmp_path / "bad").iterdir()) == ["bm25"]  # nothing written

    malformed = tmp_path / "m"
    shutil.copytree(runs / "bm25", malformed / "bm25")
    trec = next((malformed / "bm25").glob("*/run.trec"))
    lines = trec.read_text().splitlines(keepends=True)
    trec.write_text("".join(lines[:6] + ["q1 Q0 doc\n"] + lines[6:]))
    res = run_r2med("rerank", "--run", str(malformed / "bm25"), "--reranker", str(model))
    assert res.returncode == 2 and "run.trec:7" in res.stderr

    res = run_r2med("rerank", "--run", str(runs / "bm25"), "--reranker", "no-such-reranker")
    assert res.returncode == 2 and "unknown reranker 'no-such-reranker'" in res.stderr
    res = run_r2med("rerank", "--run", str(runs / "bm25"), "--reranker", str(model), "--window", "5")
    assert res.returncode == 2 and "unknown option '--window'" in res.stderr


def test_reranker_runs_record_the_packages_that_made_their_scores():
    """peft for a LoRA reranker, openai for an LLM one, torch's stack for a cross-encoder; nothing for your own."""
    from importlib.metadata import version

    from r2med.jobs.rerank import reranker_encoding

    lora = reranker_encoding({"reranker": "rankllama"})
    assert lora is not None and lora["versions"]["peft"] == version("peft") and "torch" in lora["versions"]
    llm = reranker_encoding({"reranker": "reasonrank-32b"})
    assert llm is not None and set(llm["versions"]) == {"openai"}
    cross = reranker_encoding({"reranker": "bge-reranker", "dtype": "fp32"})
    assert cross is not None and "peft" not in cross["versions"] and cross["dtype"] == "fp32"
    assert reranker_encoding({"reranker": "custom"}) is None
