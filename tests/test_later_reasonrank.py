"""ReasonRank through the local OpenAI-compatible server: the exact prompt, answer parsing, the sliding window.

Expected texts are typed by hand from ReasonRank's published code (8421BCD/ReasonRank@e6d3ab4:
listwise_prompt_r1.toml:3 the system prompt and :5 the answer pattern, utils.py add_prefix_prompt /
add_post_prompt / convert_doc_to_prompt_content, rerank/rank_listwise_os_llm.py create_prompt,
rerank/rankllm.py _clean_response / receive_permutation / sliding_windows_batched).
"""

from __future__ import annotations

import re

import pytest

from llm_server import LLMServer

pytest.importorskip("openai")
pytest.importorskip("ftfy")

SYSTEM = (
    "You are RankLLM, an intelligent assistant that can rank passages based on their relevance to the query. "
    "Given a query and a passage list, you first thinks about the reasoning process in the mind and then "
    "provides the answer (i.e., the reranked passage list). The reasoning process and answer are enclosed "
    "within <think> </think> and <answer> </answer> tags, respectively, i.e., <think> reasoning process here "
    "</think> <answer> answer here </answer>."
)


def ids_in(prompt: str) -> list[str]:
    return re.findall(r"^\[\d+\] (c\d\d)\b", prompt, flags=re.M)


def make(server, **options):
    from r2med.reranking import make_reranker

    options.setdefault("tokenizer", "words")
    return make_reranker("reasonrank", model="test-model", base_url=server.base_url, cache=False, **options)


# -- the prompt ------------------------------------------------------------------------------------------


def test_the_published_prompt_reaches_the_server_verbatim(tmp_path):
    from tiny_lm import byte_tokenizer

    byte_tokenizer(tmp_path / "tok")  # one token per byte: cutting at 40 tokens keeps 40 ASCII characters
    query = "  Which of [1] and [2] raise blood glucose &amp; why?\n"
    corpus = {
        "a": "  Insulin is secreted by beta cells [3].  ",
        "b": "Glucagon raises blood glucose by stimulating glycogenolysis in the liver.",
        "c": "Itâ€™s the â€œfirst-phaseâ€\x9d release &amp; more",
    }
    with LLMServer(script=["<think>x</think> <answer>[2] > [1] > [3]</answer>"]) as server:
        reranker = make(server, tokenizer=str(tmp_path / "tok"), max_passage_tokens=40)
        out = reranker.rerank({"q": query}, {"q": [("a", 3.0), ("b", 2.0), ("c", 1.0)]}, corpus)
        (body,) = server.bodies
    # by hand: query '[n]' -> '(n)' and stripped, its '&amp;' kept (ftfy leaves entities alone in a prompt
    # holding '<'); passages stripped, ftfy-fixed ('&amp;' -> '&' there: the passage alone has no '<'),
    # cut to 40 tokens (= characters here), '[n]' -> '(n)'
    q = "Which of (1) and (2) raise blood glucose &amp; why?"
    user = (
        f"I will provide you with 3 passages, each indicated by a numerical identifier []. Rank the passages "
        f"based on their relevance to the search query: {q}.\n"
        "\n"
        "[1] Insulin is secreted by beta cells (3).\n"
        "[2] Glucagon raises blood glucose by stimula\n"
        '[3] It\'s the "first-phase" release & more\n'
        f"Search Query: {q}.\n"
        "Rank the 3 passages above based on their relevance to the search query. All the passages should be "
        "included and listed using identifiers, in descending order of relevance. The format of the answer "
        "should be [] > [], e.g., [2] > [1]."
    )
    assert body["messages"] == [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]
    assert body["model"] == "test-model" and body["temperature"] == 0 and body["max_tokens"] == 3172
    assert out == {"q": {"b": 3.0, "a": 2.0, "c": 1.0}}


def test_passages_are_cut_by_the_tokenizer_or_by_words():
    from r2med import make_reranker

    words = make_reranker(
        "reasonrank", model="m", base_url="http://127.0.0.1:9/v1", tokenizer="words", max_passage_tokens=3, cache=False
    )
    assert words.passage("  one two [4] three four ") == "one two (4)"


def test_a_missing_tokenizer_is_a_one_line_error_naming_the_way_out():
    from r2med import make_reranker
    from r2med.errors import R2MedError

    # the hub id, offline, not cached
    reranker = make_reranker("reasonrank-32b", base_url="http://127.0.0.1:9/v1", cache=False)
    assert reranker.tokenizer_id == "liuwenhan/reasonrank-32B" and reranker.client.model == "liuwenhan/reasonrank-32B"
    with pytest.raises(R2MedError, match="tokenizer='words'"):
        reranker.passage("text")


# -- answer parsing --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "reply, m, order, how, repaired",
    [
        ("<think>[1] looks best</think>\n<answer>[3] > [1] > [2]</answer>", 3, [2, 0, 1], "answer", False),
        ("<THINK>upper case</THINK><ANSWER>[2] > [3] > [1]</ANSWER>", 3, [1, 2, 0], "answer", False),  # lower-cased
        # unclosed answer (cut by the token limit): the text after the last <answer>; repeats and 7 dropped
        ("<think>[1] first</think> <answer>[3] > [3] > [7] > [1]", 3, [2, 0, 1], "open-answer", True),
        # <answer> without a think block: the pattern needs one, so all the text after <answer> is read,
        # the [3] after </answer> included
        ("<answer>[2] > [1]</answer> [3]", 3, [1, 0, 2], "open-answer", False),
        # no answer tag at all: every digit of the reply counts, the reasoning's too (as published)
        ("<think>passage [2] looks good</think> [3] > [1]", 3, [1, 2, 0], "no-answer", False),
        ("[2] > [1]", 3, [1, 0, 2], "no-answer", True),  # partial: [3] appended
        (
            "<think>a</think><answer>[12] > [3] > [12]</answer>",
            20,
            [11, 2] + [k for k in range(20) if k not in (11, 2)],
            "answer",
            True,
        ),
        ("I cannot rank these.", 3, [0, 1, 2], "no-answer", True),
        ("<think>a</think><answer>[²] > [1]</answer>", 3, [0, 1, 2], "unreadable", True),  # int('²') fails
    ],
)
def test_answers_parse_as_reasonrank_reads_them(reply, m, order, how, repaired):
    from r2med.reranking.reasonrank import parse_answer

    assert parse_answer(reply, m) == (order, how, repaired)


def test_windows_follow_the_published_loop():
    from r2med.reranking.listwise import windows
    from r2med.reranking.reasonrank import plan_windows

    assert plan_windows(100, 20, 10) == [(80 - 10 * i, 100 - 10 * i) for i in range(9)] == windows(100, 20, 10)
    assert plan_windows(30, 20, 10) == [(10, 30), (0, 20)]
    assert plan_windows(25, 20, 10) == [(5, 25), (0, 15)]  # listwise.windows ends with (0, 20) instead
    assert plan_windows(15, 20, 10) == [(0, 15)]
    assert plan_windows(10, 20, 10) == [(0, 10)]  # the published loop makes none here (r2med's one deviation)
    assert plan_windows(1, 20, 10) == []


# -- the sliding window over 30 candidates -----------------------------------------------------------------

CORPUS30 = {f"c{i:02d}": f"c{i:02d} is a passage about topic {i}" for i in range(1, 31)}
FIRST30 = [(f"c{i:02d}", 100.0 - i) for i in range(1, 31)]


def reverse_each_window(messages, body):
    m = len(ids_in(messages[-1]["content"]))
    return "<think>reversing</think>\n<answer>" + " > ".join(f"[{k}]" for k in range(m, 0, -1)) + "</answer>"


def test_thirty_candidates_window_20_step_10_by_hand():
    from r2med.reranking.base import rerank as rerank_run

    with LLMServer(responder=reverse_each_window) as server:
        reranker = make(server)
        out = rerank_run({"q": dict(FIRST30)}, {"q": "a question"}, CORPUS30, reranker, top_k=30)
        prompts = [body["messages"][-1]["content"] for body in server.bodies]
    # window [10, 30) first: c11..c30 reversed; then [0, 20) = c01..c10 + c30..c21, reversed
    assert [ids_in(p) for p in prompts] == [
        [f"c{i:02d}" for i in range(11, 31)],
        [f"c{i:02d}" for i in range(1, 11)] + [f"c{i:02d}" for i in range(30, 20, -1)],
    ]
    expected = (
        [f"c{i:02d}" for i in range(21, 31)]
        + [f"c{i:02d}" for i in range(10, 0, -1)]
        + [f"c{i:02d}" for i in range(20, 10, -1)]
    )
    got = sorted(out["q"], key=out["q"].get, reverse=True)
    assert got == expected
    assert [out["q"][d] for d in expected] == [float(30 - i) for i in range(30)]
    assert reranker.stats["windows"] == 2 and reranker.stats["answer"] == 2 and reranker.stats["repaired"] == 0


def test_thirty_candidates_with_malformed_answers_by_hand(caplog):
    script = [
        "<answer>[20] > [1] > [20]",  # window [10,30): unclosed, a repeat -> c30, c11, then c12..c29
        "<think>passage [11] mentions it</think> [11] > [2]",
    ]  # [0,20): no answer -> 11, 11, 2
    with LLMServer(script=script) as server:
        reranker = make(server)
        out = reranker.rerank({"q": "a question"}, {"q": FIRST30}, CORPUS30)
        prompts = [body["messages"][-1]["content"] for body in server.bodies]
    assert ids_in(prompts[1]) == [f"c{i:02d}" for i in range(1, 11)] + ["c30"] + [f"c{i:02d}" for i in range(11, 20)]
    expected = (
        ["c30", "c02", "c01"]
        + [f"c{i:02d}" for i in range(3, 11)]
        + [f"c{i:02d}" for i in range(11, 20)]
        + [f"c{i:02d}" for i in range(20, 30)]
    )
    assert sorted(out["q"], key=out["q"].get, reverse=True) == expected
    assert reranker.stats["open-answer"] == 1 and reranker.stats["no-answer"] == 1 and reranker.stats["repaired"] == 2
    assert "no closed <answer> block" in caplog.text


def test_windows_of_many_queries_go_together_and_a_rerun_is_free(tmp_path):
    from r2med.reranking import make_reranker

    queries = {"q1": "first", "q2": "second"}
    candidates = {"q1": FIRST30, "q2": FIRST30[:25]}
    with LLMServer(responder=reverse_each_window) as server:
        kwargs = dict(model="test-model", base_url=server.base_url, tokenizer="words", cache=str(tmp_path / "c.jsonl"))
        first = make_reranker("reasonrank-7b", **kwargs).rerank(queries, candidates, CORPUS30)
        sent = server.requests
        again = make_reranker("reasonrank-7b", **kwargs).rerank(queries, candidates, CORPUS30)
        assert server.requests == sent == 4  # 2 windows each (q2: [5,25), [0,15)); the rerun is all cache hits
    assert first == again
