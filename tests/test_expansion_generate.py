"""Live generation: the paper's prompts, LameR passages, and `r2med expand` against a local server
(faults injected, re-runs free, SIGKILL half-way then resume, bad input)."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from llm_server import Faults, LLMServer, default_reply
from r2med.data import load_folder
from r2med.errors import R2MedError
from r2med.expansion.generate import (
    expansion_messages,
    generate_expansions,
    lamer_passages,
    paper_sampling,
    prompt_task,
    write_expansion_file,
)
from r2med.infra.llm import LLMClient
from r2med.protocol import protocol
from r2med.retrieval.bm25 import BM25
from test_expansion import run_cli

pytest.importorskip("openai")

WORDS = (
    "insulin glucose ketone acidosis kidney nephron heart valve murmur lung alveoli asthma virus "
    "influenza hemagglutinin antibody neuron synapse dopamine liver bilirubin anemia iron thyroid"
).split()


def make_collection(root: Path, n_queries: int = 40, n_docs: int = 60, seed: int = 0) -> Path:
    """A small R2MED-layout folder named after a task (so the task's prompts apply)."""
    rng = random.Random(seed)
    root.mkdir(parents=True)
    docs = [
        {"id": f"d{i}", "text": " ".join(rng.choice(WORDS) for _ in range(rng.randint(20, 40)))} for i in range(n_docs)
    ]
    docs[0]["text"] += "\nwith a second line"
    queries = [
        {
            "id": f"q{i}",
            "text": "Why " + " ".join(rng.choice(WORDS) for _ in range(8)) + "?",
            "doc_id": [f"d{i % n_docs}"],
        }
        for i in range(n_queries)
    ]
    qrels = [{"q_id": f"q{i}", "p_id": f"d{i % n_docs}", "score": 1} for i in range(n_queries)]
    for name, rows in (("corpus", docs), ("query", queries), ("qrels", qrels)):
        (root / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return root


def expected_prompt(method: str, task: str, query: str, passages: str = "") -> str:
    template = protocol()["generation_prompts"][method][task]
    return template.replace("{TEXT}", query).replace("{PASSAGE}", passages)


def expand_args(data: Path, out: Path, url: str, *extra: str, timeout: float = 1) -> list[str]:
    """``r2med expand`` of HyDE with the test model, for run_cli (or after ``python -m r2med``)."""
    return [
        "expand",
        "--method",
        "hyde",
        "--model",
        "test-model",
        "--base-url",
        url,
        "--data-dir",
        str(data),
        "--out",
        str(out),
        "--timeout",
        str(timeout),
        *extra,
    ]


def read_out(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


# -- prompts ----------------------------------------------------------------------------------------
def test_hyde_prompt_is_the_papers_for_the_task():
    messages = expansion_messages("hyde", "Biology", "Why do cells divide?")
    assert messages == [
        {"role": "system", "content": "You are a helpful assistant."},
        {
            "role": "user",
            "content": "Please write a passage to help answer the Biology post.\nPost: Why do cells divide?\nPassage: ",
        },
    ]
    clinical = expansion_messages("hyde", "PMC-Clinical", "A 40-year-old man...")[1]["content"]
    assert clinical == (
        "Please write a similar case to help diagnose the Clinical Case.\nCase: A 40-year-old man...\nSimilar Case: "
    )


def test_query2doc_prompt_carries_few_shot_examples_and_braces_survive():
    query = "What does {x} mean in awk '{print $1}'?"
    content = expansion_messages("query2doc", "Bioinformatics", query)[1]["content"]
    assert content.startswith("Write a passage to help answer the Bioinformatics post.\n\n###Examples:###")
    assert content.endswith(f"###Real Test:###\nPost: {query}\nPassage: ")
    assert protocol()["query2doc_few_shot_examples"]["Bioinformatics"].strip() in content


def test_prompt_task_resolution():
    assert prompt_task("biology") == "Biology"
    assert prompt_task("my-folder", "pmc-treatment") == "PMC-Treatment"
    with pytest.raises(R2MedError, match="--prompt-task"):
        prompt_task("nfcorpus-test")
    with pytest.raises(R2MedError, match="unknown --prompt-task"):
        prompt_task("Biology", "Cardiology")


def test_paper_sampling_defaults():
    assert paper_sampling(api=True) == {"temperature": 0.8, "top_p": 0.8}
    assert paper_sampling(api=False) == {"temperature": 0.7, "seed": 42, "max_tokens": 10240}
    assert paper_sampling(api=False, max_tokens=256, top_p=None)["max_tokens"] == 256


def test_lamer_passages_are_top10_bm25_flattened_cut_and_numbered(tmp_path):
    coll = load_folder(make_collection(tmp_path / "Biology", n_queries=3, n_docs=30))
    coll.corpus["d0"] = "long\ndoc " + " ".join(["insulin"] * 600)  # > 512 words, with a newline
    coll.queries["q0"] = "a long doc about insulin"  # d0 ranks first for q0 (its only doc with 'long', 'doc')
    passages = lamer_passages(coll)
    for qid, query in coll.queries.items():
        # the order the paper's BM25 ranks the docs in (the ranker has its own parity tests); ties as the
        # paper's stable sort over the corpus leaves them (src/eval_BM25.py save_topk_docs)
        ranked = BM25(cache=False).index(coll.corpus).search({qid: query}, k=10)[qid]
        order = [
            d
            for d, _ in sorted(
                ((d, ranked[d]) for d in coll.corpus if d in ranked), key=lambda item: item[1], reverse=True
            )
        ]
        blocks = passages[qid].split("\n[")
        assert blocks[0] == "" and len(blocks) == 11
        for i, (block, did) in enumerate(zip(blocks[1:], order), start=1):
            words = coll.corpus[did].replace("\n", " ").split()[:512]
            assert block == f"{i}]. " + " ".join(words)
    assert passages["q0"].startswith("\n[1]. long doc insulin insulin")
    assert len(passages["q0"].split("\n[2]. ")[0].split()) == 1 + 512  # "[1]." + 512 words


def test_lamer_passages_tied_in_score_keep_corpus_order(tmp_path):
    """Equal BM25 scores: the passages come in corpus order, as the paper's top-k files list them."""
    coll = load_folder(make_collection(tmp_path / "Biology", n_queries=1, n_docs=12))
    filler = {did: text for did, text in coll.corpus.items()}
    # same length, one 'alpha' each: tied scores; ids ordered neither as the corpus nor reversed
    tied = {"m3": "alpha gamma", "z1": "alpha beta", "a2": "alpha delta", "q9": "alpha epsilon"}
    coll = coll.replace(
        corpus={**dict(list(filler.items())[:5]), **tied, **dict(list(filler.items())[5:])}, queries={"q0": "alpha"}
    )
    scores = BM25(cache=False).index(coll.corpus).search(coll.queries, k=10)["q0"]
    assert len({round(scores[d], 9) for d in tied}) == 1  # they do tie
    passages = lamer_passages(coll, k=3)["q0"]
    assert passages == "\n[1]. alpha gamma\n[2]. alpha beta\n[3]. alpha delta"


def test_generate_and_write_file_in_r2med_layout(tmp_path):
    coll = load_folder(make_collection(tmp_path / "Biology", n_queries=5))
    with LLMServer() as server:
        client = LLMClient("test-model", base_url=server.base_url, cache=False)
        result = generate_expansions(coll, "lamer", client, paper_sampling(api=False))
        assert result.complete
        passages = lamer_passages(coll)
        for qid, query in coll.queries.items():
            assert result.texts[qid] == default_reply(expected_prompt("lamer", "Biology", query, passages[qid]))
        assert all(b["seed"] == 42 and b["temperature"] == 0.7 for b in server.bodies)
    path = write_expansion_file(
        tmp_path / "out" / "lamer" / "test-model" / "query_with_hydoc.jsonl", coll, result.texts
    )
    rows = read_out(path)
    assert [r["id"] for r in rows] == list(coll.queries)
    assert rows[0] == {"id": "q0", "text": coll.queries["q0"], "hy_doc": result.texts["q0"], "doc_id": ["d0"]}
    with pytest.raises(R2MedError, match="refusing to write"):
        write_expansion_file(tmp_path / "partial.jsonl", coll, {"q0": "x"})
    assert not (tmp_path / "partial.jsonl").exists()


# -- r2med expand -----------------------------------------------------------------------------------
@pytest.mark.slow
def test_expand_with_faults_then_rerun_makes_zero_requests(tmp_path):
    data = make_collection(tmp_path / "Biology", n_queries=30)
    out = tmp_path / "exp"
    # a hang outlasts the 3 s timeout by far, a slow reply (0.2 s) stays inside it even on a loaded machine: so
    # every retry is one injected fault (with a 1 s timeout a stalled worker once turned slow replies into retries)
    faults = Faults(
        rate_429=0.15, retry_after=0.05, rate_500=0.15, rate_hang=0.05, hang_s=6, rate_slow=0.1, slow_s=0.2, seed=3
    )
    with LLMServer(faults) as server:
        res = run_cli(*expand_args(data, out, server.base_url, "--concurrency", "8", timeout=3))
        assert res.returncode == 0, res.stderr
        first = server.requests
        faulted = sum(v for k, v in server.faults_sent.items() if k != "slow")
        assert faulted > 0 and first == 30 + faulted  # each fault cost exactly one retry
        path = out / "Biology" / "hyde" / "test-model" / "query_with_hydoc.jsonl"
        rows = read_out(path)
        coll = load_folder(data)
        assert [r["id"] for r in rows] == list(coll.queries)  # one per query, none lost or duplicated
        for row in rows:
            assert row["hy_doc"] == default_reply(expected_prompt("hyde", "Biology", coll.queries[row["id"]]))
        again = run_cli(*expand_args(data, out, server.base_url))
        assert again.returncode == 0, again.stderr
        assert server.requests == first  # zero requests
        assert read_out(path) == rows
    # the file is ready for evaluate
    ev = run_cli(
        "evaluate",
        "--data-dir",
        str(data),
        "--expansion",
        "hyde:test-model",
        "--expansion-dir",
        str(out),
        "--out",
        str(tmp_path / "runs"),
    )
    assert ev.returncode == 0, ev.stderr
    assert (tmp_path / "runs" / "bm25+hyde-test-model" / "Biology" / "run.trec").exists()


@pytest.mark.slow
def test_sigkill_half_way_then_resume(tmp_path):
    data = make_collection(tmp_path / "Biology", n_queries=40)
    out = tmp_path / "exp"
    with LLMServer(Faults(latency=0.1)) as server:
        # a real process: it is killed part-way (SIGKILL), which no in-process call can survive
        proc = subprocess.Popen(
            [sys.executable, "-m", "r2med", *expand_args(data, out, server.base_url, "--concurrency", "2")],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            assert server.wait_for(20, timeout=120), "expand never got going"
        finally:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
        killed_at = server.requests
        assert proc.returncode == -signal.SIGKILL
        assert not (out / "Biology" / "hyde" / "test-model" / "query_with_hydoc.jsonl").exists()  # no partial file
        res = run_cli(*expand_args(data, out, server.base_url, "--concurrency", "2"))
        assert res.returncode == 0, res.stderr
        total = server.requests
    assert 20 <= killed_at < 40
    assert total < 2 * 40  # fewer than two full runs
    assert total - killed_at <= 40 - 20 + 2  # the resumed run only asked for what was missing (+ in-flight)
    coll = load_folder(data)
    rows = read_out(out / "Biology" / "hyde" / "test-model" / "query_with_hydoc.jsonl")
    assert [r["id"] for r in rows] == list(coll.queries)
    assert [r["hy_doc"] for r in rows] == [
        default_reply(expected_prompt("hyde", "Biology", t)) for t in coll.queries.values()
    ]


def test_expand_bad_input_is_one_line_exit_2_without_output(tmp_path, monkeypatch):
    data = make_collection(tmp_path / "Biology", n_queries=3)
    unnamed = make_collection(tmp_path / "nfcorpus-like", n_queries=2)
    out = tmp_path / "exp"
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)

    def check(folder: Path, args: tuple[str, ...], message: str) -> None:
        res = run_cli("expand", "--data-dir", str(folder), "--out", str(out), *args)
        assert res.returncode == 2, (args, res.stderr)
        assert message in res.stderr and "Traceback" not in res.stderr, res.stderr
        assert len(res.stderr.strip().splitlines()) <= 3, res.stderr  # one message (rich may wrap it)
        assert not out.exists() or not any(out.rglob("*.jsonl")), args

    with LLMServer() as dead:
        dead_url = dead.base_url
    check(data, ("--method", "rewrite", "--model", "m"), "unknown expansion method 'rewrite'")
    check(data, ("--method", "hyde", "--model", "gpt-4o"), "OPENAI_API_KEY")
    check(data, ("--method", "hyde", "--model", "test-model", "--base-url", dead_url), "unreachable")
    with LLMServer(api_key="sk-right") as server:
        url = server.base_url
        check(data, ("--method", "hyde", "--model", "test-model", "--base-url", url, "--api-key", "sk-wrong"), "401")
        check(data, ("--method", "hyde", "--model", "other-model", "--base-url", url, "--api-key", "sk-right"), "404")
        before = server.requests
        check(
            unnamed,
            ("--method", "hyde", "--model", "test-model", "--base-url", url, "--api-key", "sk-right"),
            "--prompt-task",
        )
        assert server.requests == before  # the prompt problem was caught before any request


def test_expand_gives_up_cleanly_when_requests_keep_failing(tmp_path):
    data = make_collection(tmp_path / "Biology", n_queries=4)
    out = tmp_path / "exp"
    with LLMServer(Faults(rate_500=1.0, max_faults_per_prompt=1000)) as server:
        res = run_cli(*expand_args(data, out, server.base_url, "--max-retries", "1"))
    assert res.returncode == 2
    assert "4 of 4 requests failed" in res.stderr and "re-run to resume" in res.stderr
    assert not any(out.rglob("*.jsonl")) if out.exists() else True
