"""LLM listwise reranking against a local OpenAI-compatible server with scripted (and malformed) replies."""

from __future__ import annotations

import json
import re

import pytest

from conftest import run_r2med
from llm_server import Faults, LLMServer
from r2med.data.loaders import load_folder
from r2med.evaluation.metrics import evaluate
from r2med.reranking import make_reranker, rerank
from r2med.reranking.listwise import parse_permutation, ranking_messages, windows
from r2med.results.folders import metrics_payload
from r2med.runs.run import ranked, read_trec, write_task_results

pytest.importorskip("openai")

REL = {"d1": 1, "d2": 5, "d3": 2, "d4": 7, "d5": 3, "d6": 6, "d7": 4}  # what a perfect LLM would follow
CORPUS = {d: f"{d} is a passage about topic {d[-1]} with a few more words in it" for d in REL}
QUERIES = {"q1": "which passage matters most?", "q2": "another question"}
RUN = {
    "q1": {f"d{i}": 10.0 - i for i in range(1, 8)},  # first-stage order d1..d7
    "q2": {"d7": 3.0, "d2": 2.0, "d5": 1.0},
}

# scripted replies per window (keyed by the doc ids in prompt order); others get a perfect ranking
SCRIPT = {
    ("d4", "d5", "d6", "d7"): "<think>is [4] best? maybe [9] > [1]</think>\nRanking: [3] > [1] > [3] > [12]",
    ("d1", "d4", "d6", "d2"): "2, 3, 1",
    ("d7", "d2", "d5"): "",
}
# by hand (window 4, step 2 over 7 docs: [3,7), [1,5), then the top window [0,4)):
#  [d4 d5 d6 d7] -> reply [3]>[1]>[3]>[12]: d6 d4, then the unnamed d5 d7  => d1 d2 d3 d6 d4 d5 d7
#  [d2 d3 d6 d4] -> perfect: d4 d6 d2 d3                                     => d1 d4 d6 d2 d3 d5 d7
#  [d1 d4 d6 d2] -> "2, 3, 1": d4 d6 d1, then the unnamed d2                  => d4 d6 d1 d2 d3 d5 d7
EXPECTED = {"q1": ["d4", "d6", "d1", "d2", "d3", "d5", "d7"], "q2": ["d7", "d2", "d5"]}


def responder(messages, body):
    ids = tuple(re.findall(r"^\[\d+\](?: \([^)]*\))? (d\d)\b", messages[-1]["content"], flags=re.M))
    if ids in SCRIPT:
        return SCRIPT[ids]
    best = sorted(range(len(ids)), key=lambda i: -REL[ids[i]])
    return " > ".join(f"[{i + 1}]" for i in best)


def test_windows_slide_bottom_up_and_end_at_the_top():
    assert windows(100, 20, 10) == [(80 - 10 * i, 100 - 10 * i) for i in range(9)]
    assert windows(7, 4, 2) == [(3, 7), (1, 5), (0, 4)]
    assert windows(25, 20, 10) == [(5, 25), (0, 20)]
    assert windows(3, 2, 3) == [(1, 3), (0, 2)]  # step > window: still ends with the top window
    assert windows(10, 20, 10) == [(0, 10)]
    assert windows(1, 20, 10) == []


def test_parse_permutation_repairs_bad_replies():
    assert parse_permutation("[2] > [1] > [3]", 3) == ([1, 0, 2], False)
    assert parse_permutation("<think>[3] first</think>[3] > [3] > [7] > [1]", 4) == ([2, 0, 1, 3], True)
    assert parse_permutation("2 > 4", 4) == ([1, 3, 0, 2], True)
    assert parse_permutation("I cannot rank these.", 3) == ([0, 1, 2], True)
    assert parse_permutation("[ 1 ]>[2]", 2) == ([0, 1], False)


def test_prompt_numbers_passages_and_shows_scores_when_asked():
    plain = ranking_messages("q?", ["alpha", "beta"])[-1]["content"]
    assert "[1] alpha" in plain and "[2] beta" in plain and "score" not in plain
    scored = ranking_messages("q?", ["alpha", "beta"], [12.5, 3.25])[-1]["content"]
    assert "[1] (first-stage score: 12.5) alpha" in scored and "[2] (first-stage score: 3.25) beta" in scored


def test_sliding_window_result_faults_retried_and_rerun_is_free(caplog):
    faults = Faults(rate_429=0.3, retry_after=0.01, rate_500=0.3, rate_hang=0.2, hang_s=1.0, seed=3)
    with LLMServer(faults, responder=responder) as server:
        reranker = make_reranker(
            "listwise",
            model="test-model",
            base_url=server.base_url,
            window=4,
            step=2,
            timeout=0.4,
            backoff_base=0.01,
            backoff_max=0.05,
            concurrency=4,
        )
        out = rerank(RUN, QUERIES, CORPUS, reranker, top_k=7)
        assert {q: [d for d, _ in ranked(docs)] for q, docs in out.items()} == EXPECTED
        assert out["q1"]["d4"] == 7.0 and out["q1"]["d7"] == 1.0
        assert reranker.client.usage.as_dict()["retries"] > 0  # faults happened and were retried
        assert reranker.stats == {"windows": 4, "repaired": 3, "failed": 0}
        seen = server.requests

        again = make_reranker("listwise", model="test-model", base_url=server.base_url, window=4, step=2)
        assert rerank(RUN, QUERIES, CORPUS, again, top_k=7) == out
        assert server.requests == seen  # the re-run made zero requests
        assert again.client.usage.as_dict()["cache_hits"] == 4


def test_with_scores_and_top_k_with_tail():
    prompts = []

    def spy(messages, body):
        prompts.append(messages[-1]["content"])
        return responder(messages, body)

    with LLMServer(responder=spy) as server:
        reranker = make_reranker(
            "listwise", model="test-model", base_url=server.base_url, window=3, step=1, with_scores=True, cache=False
        )
        out = rerank({"q1": RUN["q1"]}, QUERIES, CORPUS, reranker, top_k=3)
    # top 3 (d1 d2 d3) reranked perfectly in one window -> d2 d3 d1; then d4..d7 as before
    assert [d for d, _ in ranked(out["q1"])] == ["d2", "d3", "d1", "d4", "d5", "d6", "d7"]
    assert len(prompts) == 1 and "[1] (first-stage score: 9) d1" in prompts[0]


def test_rerank_command_with_listwise(tmp_path):
    data = tmp_path / "data" / "toy"
    data.mkdir(parents=True)
    (data / "corpus.jsonl").write_text("".join(json.dumps({"id": d, "text": t}) + "\n" for d, t in CORPUS.items()))
    (data / "query.jsonl").write_text("".join(json.dumps({"id": q, "text": t}) + "\n" for q, t in QUERIES.items()))
    (data / "qrels.jsonl").write_text(
        "".join(json.dumps({"q_id": q, "p_id": d, "score": 1}) + "\n" for q in QUERIES for d in ("d4", "d6"))
    )
    coll = load_folder(data)
    write_task_results(
        tmp_path / "runs" / "first" / "toy", RUN, metrics_payload(coll, "first", {}, evaluate(RUN, coll.qrels), {})
    )
    with LLMServer(responder=responder) as server:
        res = run_r2med(
            "rerank",
            "--run",
            str(tmp_path / "runs" / "first"),
            "--reranker",
            "listwise",
            "--model",
            "test-model",
            "--base-url",
            server.base_url,
            "--window",
            "4",
            "--step",
            "2",
            "--top-k",
            "7",
        )
        assert res.returncode == 0, res.stderr
    got = read_trec(tmp_path / "runs" / "first+listwise-test-model" / "toy" / "run.trec")
    assert {q: [d for d, _ in ranked(docs)] for q, docs in got.items()} == EXPECTED
    stored = json.loads((tmp_path / "runs" / "first+listwise-test-model" / "toy" / "metrics.json").read_text())
    assert stored["config"]["reranker"]["window"] == 4 and stored["config"]["reranker"]["model"] == "test-model"


hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="[]>0123456789 ,abc<think/>\n", max_size=80), st.integers(1, 25))
def test_parse_permutation_always_returns_a_permutation(text, m):
    order, repaired = parse_permutation(text, m)
    assert sorted(order) == list(range(m))
    if not repaired:  # an unrepaired reply names every passage exactly once
        named = [int(t) - 1 for t in re.findall(r"\[\s*(\d+)\s*\]", text.split("</think>", 1)[-1])]
        assert named == order or not named


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 120), st.integers(2, 30), st.integers(1, 30))
def test_windows_cover_the_list_and_end_at_the_top(n, window, step):
    ws = windows(n, window, step)
    if n <= 1:
        assert ws == []
        return
    assert ws[-1][0] == 0 and ws[0][1] == n
    assert all(0 <= s < e <= n and e - s <= window for s, e in ws)
    assert all(b[0] <= a[0] and b[1] < a[1] for a, b in zip(ws, ws[1:]))  # moving up the list
