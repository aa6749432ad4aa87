"""The LLM rerankers (listwise, ReasonRank, BRIGHT's rerank.py) take their endpoint through one options base
(``LlmEndpointOptions``) and build their client through its one ``client()``: the same values give the same
client, and the request settings (retries, their backoff, the timeout) reach it, against a local server."""

from __future__ import annotations

import inspect
import time

import pytest

from llm_server import Faults, LLMServer
from r2med.reranking import make_reranker, rerank
from r2med.typed.options import (
    BrightLlmOptions,
    ListwiseOptions,
    LlmEndpointOptions,
    ReasonRankOptions,
)
from r2med.typed.parse import field_names

pytest.importorskip("openai")

QUERIES = {"q": "which passage?"}
CORPUS = {f"d{i}": f"passage {i} about a topic" for i in range(1, 4)}
RUN = {"q": {"d1": 3.0, "d2": 2.0, "d3": 1.0}}


def test_the_three_llm_option_types_share_one_base_and_declare_only_their_own():
    base = set(field_names(LlmEndpointOptions))
    assert {"model", "base_url", "api_key", "timeout", "max_retries", "backoff_base", "backoff_max", "seed"} <= base
    for kind, own in (
        (BrightLlmOptions, {"k", "top_p"}),
        (ListwiseOptions, {"window", "step", "with_scores", "max_passage_words"}),
        (ReasonRankOptions, {"window", "step", "tokenizer", "max_passage_tokens"}),
    ):
        assert issubclass(kind, LlmEndpointOptions)
        assert set(field_names(kind)) - base == own
        for klass in kind.__mro__[: kind.__mro__.index(LlmEndpointOptions)]:  # none re-declares a base field
            assert not set(inspect.get_annotations(klass)) & base, klass


def _client_facts(client):
    return {
        "model": client.model,
        "base_url": client.base_url,
        "api_key": client._api_key,
        "concurrency": client.concurrency,
        "timeout": client.timeout,
        "max_retries": client.max_retries,
        "backoff": (client.retry.backoff_base, client.retry.backoff_max, client.retry.seed),
        "cache": client.cache,
    }


def test_bright_llm_listwise_and_reasonrank_build_the_same_client_from_the_same_endpoint():
    endpoint = dict(
        model="served-llm",
        base_url="http://127.0.0.1:9/v1",
        api_key="sk-test",
        concurrency=3,
        timeout=7.5,
        max_retries=2,
        backoff_base=0.25,
        backoff_max=4.0,
        seed=11,
        cache=False,
    )
    made = [make_reranker(name, **endpoint) for name in ("bright-llm", "listwise", "reasonrank")]
    facts = [_client_facts(r.client) for r in made]
    assert facts[0] == facts[1] == facts[2]
    assert facts[0] == {
        "model": "served-llm",
        "base_url": "http://127.0.0.1:9/v1",
        "api_key": "sk-test",
        "concurrency": 3,
        "timeout": 7.5,
        "max_retries": 2,
        "backoff": (0.25, 4.0, 11),
        "cache": None,
    }
    # what the options leave unset: the client's defaults, and each reranker's own request timeout
    plain = {"model": "m", "base_url": "http://127.0.0.1:9/v1", "cache": False}
    timeouts = {name: make_reranker(name, **plain).client.timeout for name in ("bright-llm", "listwise", "reasonrank")}
    assert timeouts == {"bright-llm": 300.0, "listwise": 300.0, "reasonrank": 900.0}
    assert make_reranker("listwise", **plain).client.max_retries == 6  # LLMClient's default (infra/llm.py)


@pytest.mark.parametrize("name", ["bright-llm", "listwise"])
def test_retries_and_backoff_set_as_options_reach_the_requests(name):
    """Every request fails once (HTTP 500): with ``max_retries = 0`` it stays failed, with 1 the retry answers."""
    for retries, failed in ((0, 1), (1, 0)):
        with LLMServer(faults=Faults(rate_500=1.0, max_faults_per_prompt=1), script=["[1] > [2] > [3]"]) as server:
            reranker = make_reranker(
                name,
                model="test-model",
                base_url=server.base_url,
                cache=False,
                max_retries=retries,
                backoff_base=0.0,
                backoff_max=0.0,
            )
            rerank(RUN, QUERIES, CORPUS, reranker, top_k=3)
            assert reranker.stats["failed"] == failed
            assert server.faults_sent["500"] == 1


@pytest.mark.parametrize("name", ["bright-llm", "listwise"])
def test_the_timeout_set_as_an_option_reaches_the_requests(name):
    """The server holds every answer for 5 s; a 0.5 s timeout (no retry) gives up long before."""
    with LLMServer(faults=Faults(rate_hang=1.0, hang_s=5.0, max_faults_per_prompt=1)) as server:
        reranker = make_reranker(
            name, model="test-model", base_url=server.base_url, cache=False, timeout=0.5, max_retries=0
        )
        start = time.monotonic()
        rerank(RUN, QUERIES, CORPUS, reranker, top_k=3)
        assert reranker.stats["failed"] == 1
        assert time.monotonic() - start < 4.0
