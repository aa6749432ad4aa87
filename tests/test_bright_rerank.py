"""BRIGHT's rerank.py conventions: ``bright-llm`` and ``bright-cross-encoder``.

References: rerank.py's OpenAI path rebuilt here from its code (xlang-ai/BRIGHT@d99e839 rerank.py:140-183 for the
prompt and the reading of a reply, 239-259 for the input depth and the ``k - rank`` scores) and run on hand-made
replies -- malformed ones and repeated ids included -- through the LLM emulator (tests/llm_server.py); its
cross-encoder path rebuilt from rerank.py:186-197 (sentence-transformers ``CrossEncoder.predict``, batch 8, the top
k) and checked against a direct forward pass (the sigmoid of the logit); the emulated hub's real BRIGHT rows for the
original query (tests/bright_hub.py).
"""

from __future__ import annotations

import csv
import json
import re
from importlib import resources
from pathlib import Path

import pytest

from llm_server import LLMServer
from r2med.errors import R2MedError
from r2med.reranking import make_reranker, rerank
from r2med.steps import RerankStep

CORPUS = {
    "d1": "Moths fly\n\ntowards light.",
    "d2": "Enzymes fold\nproteins.",
    "d3": "Light pollution confuses insects.",
    "d4": "Rivers carry sediment.",
    "d5": "A theorem about primes.",
    "d6": "Night insects and lamps.",
}
QUERY = "Why do moths\nfly to lamps?"
#: a first stage's scores (d6 scored above d5, d2 tied with d4: corpus order keeps d2 first)
SCORES = {"d1": 9.0, "d2": 7.0, "d3": 8.0, "d4": 7.0, "d6": 6.0, "d5": 1.0}


def brights_rerank(scores, documents, query, input_k, k, reply):
    """rerank.py for one query with the OpenAI path, rebuilt from its code: the prompt it sends, and the scores it
    writes given ``reply`` (the message content; None: call_api gave up)."""
    sorted_scores = sorted(scores.items(), key=lambda x: x[1], reverse=True)[:input_k]  # 241
    docs = [[did, documents[did]] for did, _ in sorted_scores]  # 242-243
    doc_string = ""
    indices_map = {}
    for doc_idx, doc in enumerate(docs):  # 143-146
        doc_string += "[{}]. {}\n\n".format(doc_idx + 1, re.sub("\n+", " ", doc[1]))
        indices_map[doc_idx + 1] = doc[0]
    cur_query = query.replace("\n", "  ")  # 147
    prompt = (  # 148-156, typed from the file
        f"The following passages are related to query: {cur_query}\n\n"
        f"{doc_string}"
        f"First identify the essential problem in the query.\n"
        f"Think step by step to reason about why each document is relevant or irrelevant.\n"
        f"Rank these passages based on their relevance to the query.\n"
        f"Please output the ranking result of passages as a list, where the first element is the id of the most "
        f"relevant passage, the second element is the id of the second most element, etc.\n"
        f"Please strictly follow the format to output a list of {k} ids corresponding to the most relevant {k} "
        f"passages, sorted from the most to least relevant passage. First think step by step and write the reasoning "
        f"process, then output the ranking results as a list of ids in a json format."
    )

    def parse_json(text):  # 167-174
        matches = re.findall(r"(?:```json\s*)(.+)(?:```)", text, re.DOTALL)
        if len(matches) > 0:
            try:
                return json.loads(matches[-1].strip())
            except Exception:
                return None
        return None

    new_rank = None  # 176-183
    if reply is not None:
        response = parse_json(reply)
        if response is not None:
            new_rank = [indices_map[r] for r in response if r in indices_map]
    cur_score = {}  # 247-255
    if new_rank is None:
        for rank_id, (did, _) in enumerate(sorted_scores):
            cur_score[did] = k - rank_id
    else:
        for rank_id, r in enumerate(new_rank):
            cur_score[r] = k - rank_id
    messages = [{"role": "system", "content": "You are a helpful assistant"}, {"role": "user", "content": prompt}]
    return messages, cur_score


#: hand-made replies: a clean list; repeated ids (the later score kept); ids that are no input (0, 9, "3"); floats
#: and true (Python: 2.0 and True name 2 and 1); reasoning before the block; no block; malformed JSON; two blocks
#: (the greedy match spans both: no JSON); an object and a string (iterated: nothing named); an empty list
REPLIES = {
    "clean": "I think d1 matters.\n```json\n[3, 1, 5]\n```",
    "repeated": "```json\n[2, 1, 2, 4]\n```",
    "unknown ids": '```json\n[0, 4, 9, "3", 1]\n```',
    "floats and true": "```json\n[2.0, true, 4.5]\n```",
    "no block": "The ranking is [1, 2, 3].",
    "malformed": "```json\n[1, 2,\n```",
    "two blocks": "```json\n[1]\n```\nor rather\n```json\n[2]\n```",
    "object": '```json\n{"1": 1, "2": 2}\n```',
    "string": '```json\n"123"\n```',
    "empty": "```json\n[]\n```",
}


@pytest.mark.parametrize("case", sorted(REPLIES))
def test_scores_equal_rerank_pys_on_hand_made_replies(case):
    """Each reply through the LLM emulator: the request equals rerank.py's (messages and sampling), the run equals
    rerank.py's scores (documents the reply leaves out leave the run; no first-stage tail follows)."""
    reply = REPLIES[case]
    queries = {"q": QUERY}
    with LLMServer(script=[reply]) as server:
        out = rerank({"q": SCORES}, queries, CORPUS, "bright-llm", top_k=5, model="test-model",
                     base_url=server.base_url, cache=False, k=4)  # fmt: skip
        body = server.bodies[0]
    messages, expected = brights_rerank(SCORES, CORPUS, QUERY, input_k=5, k=4, reply=reply)
    assert body["messages"] == messages
    assert (body["temperature"], body["top_p"], body["max_tokens"]) == (0.8, 0.8, 2048)  # rerank.py:126, 138
    if expected:
        assert out["q"] == expected
    else:  # named no input: rerank.py's empty entry ({}), which pytrec_eval scores 0
        assert out["q"] == {}


def test_where_rerank_py_stops_r2med_falls_back_to_first_stage_order():
    """A bare number, or a list holding a list: rerank.py raises TypeError (``r in indices_map``); r2med takes the
    no-parsable-list fallback instead: k - rank over the inputs in first-stage order."""
    with pytest.raises(TypeError):
        brights_rerank(SCORES, CORPUS, QUERY, 5, 4, "```json\n3\n```")
    with pytest.raises(TypeError):
        brights_rerank(SCORES, CORPUS, QUERY, 5, 4, "```json\n[[1], 2]\n```")
    _, fallback = brights_rerank(SCORES, CORPUS, QUERY, 5, 4, None)
    for reply in ("```json\n3\n```", "```json\n[[1], 2]\n```"):
        with LLMServer(script=[reply]) as server:
            out = rerank({"q": SCORES}, {"q": QUERY}, CORPUS, "bright-llm", top_k=5, model="test-model",
                         base_url=server.base_url, cache=False, k=4)  # fmt: skip
        assert out["q"] == fallback
    assert fallback == {"d1": 4, "d3": 3, "d2": 2, "d4": 1, "d6": 0}  # negative below rank k would follow


def test_a_failed_request_keeps_first_stage_order_and_k_defaults_to_the_depth():
    from llm_server import Faults

    with LLMServer(faults=Faults(rate_500=1.0, max_faults_per_prompt=100)) as server:
        reranker = make_reranker("bright-llm", model="test-model", base_url=server.base_url, cache=False,
                                 max_retries=1)  # fmt: skip
        reranker.client.retry.base = reranker.client.retry.max_delay = 0  # no waiting between tries
        out = rerank({"q": SCORES}, {"q": QUERY}, CORPUS, reranker, top_k=6)
    _, expected = brights_rerank(SCORES, CORPUS, QUERY, input_k=6, k=6, reply=None)
    assert out["q"] == expected and reranker.stats["failed"] == 1
    assert min(out["q"].values()) == 1  # k = the input depth (6): k - rank down to 1


def test_bright_rerankers_take_no_first_stage_tail():
    with pytest.raises(R2MedError, match="only the documents it ranks"):
        RerankStep.of("runs", "bright-llm", model="m", keep_tail=True)
    assert RerankStep.of("runs", "bright-llm", model="m").keep_tail is False
    assert RerankStep.of("runs", "bright-cross-encoder").record()["keep_tail"] is False
    assert RerankStep.of("runs", "bge-reranker").keep_tail is True  # the others keep their default
    with pytest.raises(R2MedError, match="only the documents it ranks"):
        rerank(
            {"q": SCORES}, {"q": QUERY}, CORPUS,
            make_reranker("bright-llm", model="m", base_url="http://127.0.0.1:9", cache=False), keep_tail=True,
        )  # fmt: skip
    with pytest.raises(R2MedError, match="needs the LLM's name"):
        make_reranker("bright-llm")


def test_the_leaderboards_reranking_rows_are_reachable_configurations():
    """Every leaderboard reranking row of bright_published.csv ('<model> top-<n>') parses as a rerank step: the
    reranker rerank.py runs the model with, that model, the top n of the first stage."""
    from r2med.protocol import bright

    text = resources.files("r2med.protocol").joinpath("bright_published.csv").read_text(encoding="utf-8")
    rows = [r for r in csv.DictReader(text.splitlines()) if r["setting"] == "leaderboard" and " top-" in r["reranker"]]
    assert {(r["retriever"], r["reranker"]) for r in rows} >= {
        ("bm25", "gpt-4-0125-preview top-100"), ("google", "cross-encoder/ms-marco-MiniLM-L-12-v2 top-10"),
        ("bm25", "Gemini-1.0-pro top-10"),
    }  # fmt: skip
    models = bright.rerank_prompt()["leaderboard_models"]
    for r in rows:
        model, depth = r["reranker"].rsplit(" top-", 1)
        step = RerankStep.of("runs", models[model], model=model, top_k=int(depth))
        assert step.depth() == int(depth) and step.keep_tail is False
        assert step.options.model == model
    assert make_reranker("bright-cross-encoder").config()["model"] == "cross-encoder/ms-marco-MiniLM-L-12-v2"


# ---------------------------------------------------------------- the cross-encoder


@pytest.fixture(scope="module")
def bert(tmp_path_factory) -> Path:
    pytest.importorskip("sentence_transformers")
    from test_rerank import _tiny_bert

    return _tiny_bert(tmp_path_factory.mktemp("bright_ce"), 1, seed=3)


def brights_st_rerank(model_name, scores, documents, query, input_k, k):
    """rerank.py:186-197 and 239-259 for one query: the top input_k, CrossEncoder(model).predict(batch 8), top k."""
    from sentence_transformers import CrossEncoder

    sorted_scores = sorted(scores.items(), key=lambda x: x[1], reverse=True)[:input_k]
    docs = [{"id": did, "text": documents[did]} for did, _ in sorted_scores]
    model = CrossEncoder(model_name)
    predicted = model.predict([(query, doc["text"]) for doc in docs], batch_size=8)
    ranking = {doc["id"]: score.item() for doc, score in zip(docs, predicted)}
    return dict(sorted(ranking.items(), key=lambda item: item[1], reverse=True)[:k])


def test_cross_encoder_equals_rerank_pys_and_a_direct_forward_pass(bert):
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    out = rerank({"q": SCORES}, {"q": QUERY}, CORPUS, "bright-cross-encoder", top_k=5, model=str(bert), k=3)
    expected = brights_st_rerank(str(bert), SCORES, CORPUS, QUERY, input_k=5, k=3)
    assert list(out["q"]) == list(expected)  # the top 3 of the top 5, in rerank.py's order
    assert out["q"] == pytest.approx(expected, abs=1e-6)
    tok, model = AutoTokenizer.from_pretrained(bert), AutoModelForSequenceClassification.from_pretrained(bert).eval()
    with torch.no_grad():
        for did, score in out["q"].items():
            logit = model(**tok(QUERY, CORPUS[did], return_tensors="pt")).logits[0, 0]
            assert score == pytest.approx(torch.sigmoid(logit).item(), abs=1e-5)  # CrossEncoder's activation
    assert "d5" not in out["q"]  # below the input depth (the first stage's 6th) never reranked


# ---------------------------------------------------------------- through the commands, on the emulated hub


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    from bright_hub import bright_files, fill_bright_cache, have_shared_bright

    pytest.importorskip("pyarrow")
    if not have_shared_bright():
        pytest.skip("../shared/data/bright is not available")
    root = tmp_path_factory.mktemp("bright_rerank_cache")
    fill_bright_cache(root, bright_files(("biology",), queries=3, distractors=12, reasoning=("gpt4_reason",)))
    return root


@pytest.mark.shared
def test_reranking_a_reasoning_first_stage_sees_the_original_query(cache, bert, tmp_path, monkeypatch):
    """bm25 on GPT-4's reasoning queries, then ``r2med rerank --reranker bright-llm --top-k 5``: every prompt holds
    the examples' original query (rerank.py:217-220, 246), never the reasoning text; the run holds only the
    documents the replies name, scored k - rank; the record says how deep and with what."""
    from huggingface_hub import constants

    from bright_hub import shared_rows
    from conftest import run_r2med
    from r2med.runs.run import read_trec

    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("R2MED_HOME", str(tmp_path / "home"))
    out = tmp_path / "out"
    res = run_r2med("evaluate", "-r", "bm25", "-t", "bright:biology", "-e", "reason:gpt4", "-o", out)
    assert res.returncode == 0, res.stderr
    first = next(p for p in out.iterdir() if p.is_dir())
    rows = {r["id"]: r for r in shared_rows("biology")[:3]}
    with LLMServer(responder=lambda messages, body: "```json\n[2, 1, 2]\n```") as server:
        res = run_r2med(
            "rerank", "--run", first, "--reranker", "bright-llm", "--model", "test-model", "--base-url",
            server.base_url, "--top-k", "5", "-o", out, "--name", "reranked",
        )  # fmt: skip
        assert res.returncode == 0, res.stderr
        prompts = list(server.prompts)
    first_run = read_trec(first / "bright-biology" / "run.trec")
    reranked = read_trec(out / "reranked" / "bright-biology" / "run.trec")
    assert len(prompts) == len(rows)
    for qid, row in rows.items():
        original = row["query"].replace("\n", "  ")
        assert sum(f"related to query: {original}\n\n" in p for p in prompts) == 1, qid
        texts = {did: "" for did in first_run[qid]}
        _, expected = brights_rerank(first_run[qid], texts, row["query"], 5, 5, "```json\n[2, 1, 2]\n```")
        assert reranked[qid] == expected and len(expected) == 2  # the 2nd: 5 then 3 (its later score); the 1st: 4
    assert not any("The essential problem" in p for p in prompts)  # the reasoning set's text never reaches it
    metrics = json.loads((out / "reranked" / "bright-biology" / "metrics.json").read_text())
    assert metrics["config"]["top_k"] == 5 and metrics["config"]["keep_tail"] is False
    assert metrics["config"]["reranker"]["kind"] == "bright-llm" and metrics["config"]["reranker"]["top_p"] == 0.8
    assert metrics["config"]["first_stage"]["config"]["expansion"]["method"] == "reason"
    # the cross-encoder through the command line, $OPENAI_API_KEY set (read for the LLM rerankers; before, every
    # reranker without an api_key option refused it: "unknown option '--api-key'")
    res = run_r2med(
        "rerank", "--run", first, "--reranker", "bright-cross-encoder", "--model", bert, "--top-k", "6", "--set", "k=4",
        "-o", out, "--name", "ce", env={"OPENAI_API_KEY": "sk-test"},
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    ce = read_trec(out / "ce" / "bright-biology" / "run.trec")
    assert {len(docs) for docs in ce.values()} == {4}  # the top 4 of the first stage's top 6, nothing below
    for qid, docs in ce.items():
        top6 = [d for d, _ in sorted(first_run[qid].items(), key=lambda x: x[1], reverse=True)[:6]]
        assert set(docs) <= set(top6)


@pytest.mark.shared
@pytest.mark.parametrize("empty_replies", [1, 3])
def test_a_reply_naming_nothing_scores_0_as_rerank_py_scores_it(cache, tmp_path, monkeypatch, empty_replies):
    """Queries whose reply names no document stay in the average at 0, as BRIGHT's rerank.py keeps ``{}`` and its
    pytrec_eval scores it (the hand computation: pytrec_eval over rerank.py's results, the empty entries included);
    a task whose replies all name nothing scores 0 (before: left out of the average, or the task aborted).  The count
    is in metrics.json (``empty_queries``) and a reuse scores the same."""
    import pytrec_eval
    from huggingface_hub import constants

    from bright_hub import shared_rows
    from conftest import run_r2med
    from r2med.runs.run import read_trec

    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("R2MED_HOME", str(tmp_path / "home"))
    out = tmp_path / "out"
    assert run_r2med("evaluate", "-r", "bm25", "-t", "bright:biology", "-o", out).returncode == 0
    first = out / "bm25" / "bright-biology"
    first_run = read_trec(first / "run.trec")
    rows = shared_rows("biology")[:3]
    empties = {r["id"] for r in rows[:empty_replies]}
    originals = {r["query"].replace("\n", "  "): r["id"] for r in rows}

    def reply(messages, body):
        qid = next(q for text, q in originals.items() if f"related to query: {text}\n" in messages[-1]["content"])
        return "```json\n[]\n```" if qid in empties else "```json\n[2, 1]\n```"

    args = ("rerank", "--run", first, "--reranker", "bright-llm", "--model", "test-model", "--top-k", "5", "-o", out)
    with LLMServer(responder=reply) as server:
        res = run_r2med(*args, "--base-url", server.base_url, "--name", "llm")
        assert res.returncode == 0, res.stderr
    # rerank.py's results: each query's k - rank scores, {} for a reply that names nothing
    results = {}
    for r in rows:
        qid = r["id"]
        texts = {did: "" for did in first_run[qid]}
        named = "```json\n[]\n```" if qid in empties else "```json\n[2, 1]\n```"
        results[qid] = brights_rerank(first_run[qid], texts, r["query"], 5, 5, named)[1]
    qrels = {r["id"]: {g: 1 for g in r["gold_ids"]} for r in rows}
    scores = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(results)
    expected = sum(v["ndcg_cut_10"] for v in scores.values()) / len(scores)
    assert len(scores) == 3 and all(scores[q]["ndcg_cut_10"] == 0 for q in empties)
    metrics = json.loads((out / "llm" / "bright-biology" / "metrics.json").read_text())
    assert metrics["aggregate"]["ndcg_cut_10"] == pytest.approx(expected, abs=1e-12)
    assert sorted(metrics["empty_queries"]) == sorted(empties) and len(metrics["per_query"]) == 3
    if empty_replies == 3:
        assert metrics["aggregate"]["ndcg_cut_10"] == 0.0
    # reused: the run file lacks the empty entries, the record brings them back (same figure, no request sent)
    with LLMServer(responder=reply) as server:
        res = run_r2med(*args, "--base-url", server.base_url, "--name", "llm")
        assert res.returncode == 0, res.stderr
        assert not server.prompts
    again = json.loads((out / "llm" / "bright-biology" / "metrics.json").read_text())
    assert again["aggregate"] == metrics["aggregate"]
