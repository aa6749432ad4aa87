"""The agentic (Search-R1 / Search-O1) loop driven by a scripted local LLM server."""

from __future__ import annotations

import json

import pytest

from llm_server import LLMServer
from r2med.errors import R2MedError
from r2med.expansion.agentic import SEARCH_O1, SEARCH_R1, AgenticExpander, extract_search, final_text, get_protocol
from r2med.infra.llm import LLMClient
from r2med.retrieval.bm25 import BM25
from test_expansion import run_cli

pytest.importorskip("openai")

CORPUS = {
    "d1": "Insulin deficiency causes hyperglycemia and ketone body production in type 1 diabetes.",
    "d2": "Diabetic ketoacidosis is treated with intravenous fluids, insulin infusion and potassium replacement.",
    "d3": "The nephron filters blood in the kidney; loop diuretics act on the thick ascending limb.",
    "d4": "Asthma is a chronic inflammatory disease of the airways with reversible obstruction.",
    "d5": "Hemagglutinin lets influenza virus bind sialic acid on respiratory epithelial cells.",
    "d6": "Potassium shifts out of cells in acidosis, so serum potassium may be high despite total body depletion.",
    "d7": "Thyroid hormone raises basal metabolic rate; hyperthyroidism causes weight loss and tremor.",
    "d8": "Bilirubin is conjugated in the liver and excreted in bile; hemolysis raises unconjugated bilirubin.",
}
QUESTION = "A young man with polyuria, deep breathing, glucose 480 and pH 7.1: what is it and how is it treated?"


def top_docs(query: str, k: int) -> list[str]:
    """What r2med's own BM25 index returns for a search (independently of the agent's plumbing)."""
    run = BM25(cache=False).index(CORPUS).search({"x": query}, k=k)["x"]
    return sorted(run, key=lambda d: (-run[d], d))[:k]


def user_contents(body: dict) -> list[str]:
    return [m["content"] for m in body["messages"] if m["role"] == "user"]


def test_two_searches_receive_the_index_passages_then_answer():
    script = [
        "<think>Sounds like ketoacidosis.</think> <search> insulin deficiency ketone </search>",
        "<think>Now treatment.</think><search>ketoacidosis treatment potassium",  # stop sequence eaten
        "<think>done</think><answer> Diabetic ketoacidosis; fluids, insulin and potassium. </answer>",
    ]
    with LLMServer(script=list(script)) as server:
        client = LLMClient("test-model", base_url=server.base_url, cache=False)
        retriever = BM25(cache=False).index(CORPUS)
        agent = AgenticExpander(client, retriever, CORPUS, tags=SEARCH_R1, max_turns=5, top_k=2)
        trace = agent.run({"q1": QUESTION})["q1"]
        bodies = list(server.bodies)
    assert len(bodies) == 3 and trace.turns == 3 and trace.stopped == "answer"
    assert trace.answer == "Diabetic ketoacidosis; fluids, insulin and potassium."
    first, second = top_docs("insulin deficiency ketone", 2), top_docs("ketoacidosis treatment potassium", 2)
    assert trace.searches == [("insulin deficiency ketone", first), ("ketoacidosis treatment potassium", second)]
    assert all(b["stop"] == ["</search>"] for b in bodies)
    # turn 2 carries the passages of the first search, turn 3 those of both, in the protocol's tags
    block1 = "<information>\n" + "\n".join(f"Doc {i}: {CORPUS[d]}" for i, d in enumerate(first, 1)) + "\n</information>"
    block2 = (
        "<information>\n" + "\n".join(f"Doc {i}: {CORPUS[d]}" for i, d in enumerate(second, 1)) + "\n</information>"
    )
    assert user_contents(bodies[1])[1:] == [block1]
    assert user_contents(bodies[2])[1:] == [block1, block2]
    assert QUESTION in user_contents(bodies[0])[0] and "<search>" in user_contents(bodies[0])[0]
    # the assistant turns were replayed with their closing tag restored
    assistant = [m["content"] for m in bodies[2]["messages"] if m["role"] == "assistant"]
    assert assistant == [script[0], script[1] + "</search>"]


def test_stops_at_the_turn_limit():
    searches = [f"<search>query number {i} insulin</search>" for i in range(10)]
    with LLMServer(script=list(searches)) as server:
        client = LLMClient("test-model", base_url=server.base_url, cache=False)
        agent = AgenticExpander(client, BM25(cache=False).index(CORPUS), CORPUS, max_turns=3, top_k=1)
        trace = agent.run({"q": QUESTION})["q"]
        assert server.requests == 3
    assert trace.turns == 3 and trace.stopped == "turn-limit" and len(trace.searches) == 2
    assert trace.answer == ""  # only a dangling search was left


def test_search_o1_tags_and_no_search_answer():
    tags = get_protocol("search-o1")
    script = [
        "Let me look. <|begin_search_query|>hemagglutinin sialic acid<|end_search_query|>",
        "reasoning here</think>Influenza binds sialic acid via hemagglutinin.",
    ]
    with LLMServer(script=list(script)) as server:
        client = LLMClient("test-model", base_url=server.base_url, cache=False)
        agent = AgenticExpander(client, BM25(cache=False).index(CORPUS), CORPUS, tags=tags, max_turns=4, top_k=1)
        trace = agent.run({"q": "How does flu enter cells?"})["q"]
        second = server.bodies[1]
    assert trace.stopped == "no-search" and trace.answer == "Influenza binds sialic acid via hemagglutinin."
    assert trace.searches == [("hemagglutinin sialic acid", top_docs("hemagglutinin sialic acid", 1))]
    assert user_contents(second)[1] == f"<|begin_search_result|>\nDoc 1: {CORPUS['d5']}\n<|end_search_result|>"
    assert second["stop"] == ["<|end_search_query|>"]


def test_rerun_replays_from_cache_without_requests():
    script = ["<search>potassium acidosis</search>", "<answer>shift</answer>"]
    with LLMServer(script=list(script)) as server:
        client = LLMClient("test-model", base_url=server.base_url)
        agent = AgenticExpander(client, BM25(cache=False).index(CORPUS), CORPUS, max_turns=3, top_k=1)
        first = agent.run({"q": QUESTION})["q"]
        again = AgenticExpander(
            LLMClient("test-model", base_url=server.base_url),
            BM25(cache=False).index(CORPUS),
            CORPUS,
            max_turns=3,
            top_k=1,
        ).run({"q": QUESTION})["q"]
        assert server.requests == 2
    assert again.answer == first.answer == "shift" and again.searches == first.searches


def test_custom_tags_and_parsing_helpers():
    tags = get_protocol("search-r1", search_open="<q>", search_close="</q>")
    assert extract_search("think <q> a query </q> more", tags) == "a query"
    assert extract_search("<q>first</q> then <q>second", tags) == "second"
    assert extract_search("no request", tags) is None
    assert final_text("<think>x</think> final words <q>dangling", tags) == "final words"
    assert final_text("text <answer>A</answer>", SEARCH_R1) == "A"
    assert final_text("<think>t</think>after", SEARCH_O1) == "after"
    with pytest.raises(R2MedError, match="unknown agentic protocol"):
        get_protocol("react")


def test_expand_cli_search_r1_writes_traces(tmp_path):
    root = tmp_path / "Biology"
    root.mkdir()
    (root / "corpus.jsonl").write_text("".join(json.dumps({"id": d, "text": t}) + "\n" for d, t in CORPUS.items()))
    (root / "query.jsonl").write_text(json.dumps({"id": "q1", "text": QUESTION}) + "\n")
    (root / "qrels.jsonl").write_text(json.dumps({"q_id": "q1", "p_id": "d2", "score": 1}) + "\n")
    script = ["<search>ketoacidosis treatment</search>", "<answer>fluids and insulin</answer>"]
    with LLMServer(script=list(script)) as server:
        res = run_cli(
            "expand",
            "--method",
            "search-r1",
            "--model",
            "test-model",
            "--base-url",
            server.base_url,
            "--data-dir",
            str(root),
            "--out",
            str(tmp_path / "exp"),
            "--search-k",
            "2",
            "--max-turns",
            "3",
        )
    assert res.returncode == 0, res.stderr
    row = json.loads((tmp_path / "exp" / "Biology" / "search-r1" / "test-model" / "query_with_hydoc.jsonl").read_text())
    assert row["hy_doc"] == "fluids and insulin" and row["stopped"] == "answer" and row["turns"] == 2
    assert row["searches"] == [["ketoacidosis treatment", top_docs("ketoacidosis treatment", 2)]]


def test_expand_cli_custom_tags(tmp_path):
    root = tmp_path / "Biology"
    root.mkdir()
    (root / "corpus.jsonl").write_text("".join(json.dumps({"id": d, "text": t}) + "\n" for d, t in CORPUS.items()))
    (root / "query.jsonl").write_text(json.dumps({"id": "q1", "text": QUESTION}) + "\n")
    (root / "qrels.jsonl").write_text(json.dumps({"q_id": "q1", "p_id": "d2", "score": 1}) + "\n")
    base = [
        "expand",
        "--method",
        "search-o1",
        "--model",
        "test-model",
        "--data-dir",
        str(root),
        "--out",
        str(tmp_path / "exp"),
        "--search-k",
        "1",
    ]
    bad = run_cli(*base, "--search-tags", "<q>")
    assert bad.returncode == 2 and "--search-tags wants OPEN,CLOSE" in bad.stderr
    with LLMServer(script=["<q>potassium acidosis</q>", "</think>Potassium shifts out of cells."]) as server:
        res = run_cli(*base, "--base-url", server.base_url, "--search-tags", "<q>,</q>", "--result-tags", "<r>,</r>")
        bodies = list(server.bodies)
    assert res.returncode == 0, res.stderr
    assert "<q> your query </q>" in user_contents(bodies[0])[0] and bodies[0]["stop"] == ["</q>"]
    (doc,) = top_docs("potassium acidosis", 1)
    assert user_contents(bodies[1])[1] == f"<r>\nDoc 1: {CORPUS[doc]}\n</r>"
    row = json.loads((tmp_path / "exp" / "Biology" / "search-o1" / "test-model" / "query_with_hydoc.jsonl").read_text())
    assert row["hy_doc"] == "Potassium shifts out of cells." and row["stopped"] == "no-search"
