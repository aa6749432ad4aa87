"""The LLM client against a real local HTTP server: order, cache, retries, faults, fatal errors."""

from __future__ import annotations

import json
import random
import time

import pytest

from llm_server import Faults, LLMServer, default_reply
from r2med.llm import LLMClient, LLMError, RequestCache, backoff_delay, parse_retry_after

pytest.importorskip("openai")


def msgs(text: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": "You are a helpful assistant."}, {"role": "user", "content": text}]


PROMPTS = [f"question number {i} about insulin" for i in range(24)]


def test_answers_in_order_with_usage_and_bounded_concurrency():
    with LLMServer(Faults(latency=0.05)) as server:
        client = LLMClient("test-model", base_url=server.base_url, concurrency=4, timeout=5)
        results = client.chat_many([msgs(p) for p in PROMPTS], temperature=0.7)
        assert [r.text for r in results] == [default_reply(p) for p in PROMPTS]
        assert all(r.ok and not r.cached and r.attempts == 1 for r in results)
        assert server.requests == len(PROMPTS)
        assert 1 < server.max_inflight <= 4
        # usage: whitespace tokens of system+user prompt and of the reply, counted here independently
        expected_prompt = sum(len(("You are a helpful assistant. " + p).split()) for p in PROMPTS)
        expected_completion = sum(len(default_reply(p).split()) for p in PROMPTS)
        assert client.usage.prompt_tokens == expected_prompt
        assert client.usage.completion_tokens == expected_completion
        # sampling params reach the server
        assert all(b["temperature"] == 0.7 for b in server.bodies)


def test_cache_makes_reruns_free_and_survives_reload(r2med_home):
    with LLMServer() as server:
        client = LLMClient("test-model", base_url=server.base_url)
        first = client.chat_many([msgs(p) for p in PROMPTS[:5]], temperature=0.7)
        client.close()
        assert server.requests == 5
        again = LLMClient("test-model", base_url=server.base_url)  # fresh process view: reload from disk
        second = again.chat_many([msgs(p) for p in PROMPTS[:5]], temperature=0.7)
        assert server.requests == 5
        assert [r.text for r in second] == [r.text for r in first]
        assert all(r.cached for r in second) and again.usage.cache_hits == 5
        # a different sampling setting is a different request
        again.chat_many([msgs(PROMPTS[0])], temperature=0.0)
        assert server.requests == 6
        # cache lives under the r2med home
        assert list((r2med_home / "llm").glob("*.jsonl"))


def test_identical_requests_in_a_batch_are_sent_once():
    with LLMServer() as server:
        client = LLMClient("test-model", base_url=server.base_url, cache=False)
        results = client.chat_many([msgs("same")] * 5 + [msgs("other")])
        assert server.requests == 2
        assert [r.text for r in results] == [default_reply("same")] * 5 + [default_reply("other")]


def test_torn_last_line_is_ignored_and_appends_continue(tmp_path):
    path = tmp_path / "cache.jsonl"
    cache = RequestCache(path)
    cache.put("a", "alpha")
    cache.put("b", "beta")
    cache.close()
    with open(path, "ab") as handle:  # a crash in the middle of the third write
        handle.write(b'{"key": "c", "text": "gam')
    reloaded = RequestCache(path)
    assert len(reloaded) == 2 and reloaded.skipped_lines == 1
    assert reloaded.get("b")["text"] == "beta" and "c" not in reloaded
    reloaded.put("d", "delta")
    reloaded.close()
    lines = path.read_bytes().split(b"\n")
    assert json.loads(lines[-2])["key"] == "d"  # the torn fragment kept its own line
    final = RequestCache(path)
    assert {k for k in ("a", "b", "d") if k in final} == {"a", "b", "d"} and final.skipped_lines == 1


def test_faults_are_retried_and_nothing_is_lost_or_duplicated():
    faults = Faults(rate_429=0.2, retry_after=0.05, rate_500=0.15, rate_hang=0.1, hang_s=3.0, rate_slow=0.1,
                    slow_s=0.1, seed=7)
    with LLMServer(faults) as server:
        client = LLMClient("test-model", base_url=server.base_url, concurrency=8, timeout=0.5,
                           backoff_base=0.02, backoff_max=0.2, max_retries=6)
        retries = []
        results = client.chat_many([msgs(p) for p in PROMPTS], on_retry=retries.append)
        assert [r.text for r in results] == [default_reply(p) for p in PROMPTS]
        failures = faults_total = sum(v for k, v in server.faults_sent.items() if k != "slow")
        assert faults_total > 0 and server.faults_sent["hang"] > 0
        assert client.usage.retries == len(retries) == failures
        assert server.completions == len(PROMPTS)  # one successful answer per prompt
        assert client.usage.failed == 0


def test_retry_after_is_honoured():
    faults = Faults(rate_429=1.0, retry_after=0.6, max_faults_per_prompt=1)
    with LLMServer(faults) as server:
        client = LLMClient("test-model", base_url=server.base_url, backoff_base=0.01, backoff_max=0.02, cache=False)
        start = time.monotonic()
        result = client.chat(msgs("wait for me"))
        elapsed = time.monotonic() - start
        assert result.ok and result.attempts == 2 and server.requests == 2
        assert elapsed >= 0.6  # the backoff alone would have waited 0.02 s


def test_gives_up_per_item_after_max_retries():
    faults = Faults(rate_500=1.0, max_faults_per_prompt=100)
    with LLMServer(faults) as server:
        client = LLMClient("test-model", base_url=server.base_url, backoff_base=0.001, max_retries=2, cache=False)
        result = client.chat(msgs("doomed"))
        assert not result.ok and "HTTP 500" in result.error and result.attempts == 3
        assert server.requests == 3 and client.usage.failed == 1


def test_fatal_errors_are_one_line_llm_errors(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(LLMError, match="OPENAI_API_KEY"):
        LLMClient("gpt-4o")
    with LLMServer(api_key="secret") as server:
        with pytest.raises(LLMError, match="401"):
            LLMClient("test-model", base_url=server.base_url, api_key="wrong", cache=False).chat(msgs("x"))
        assert LLMClient("test-model", base_url=server.base_url, api_key="secret", cache=False).chat(msgs("x")).ok
        with pytest.raises(LLMError, match="404"):
            LLMClient("no-such-model", base_url=server.base_url, api_key="secret", cache=False).chat(msgs("x"))
    with LLMServer() as dead:
        url = dead.base_url
    start = time.monotonic()
    with pytest.raises(LLMError, match="unreachable"):
        LLMClient("test-model", base_url=url, backoff_base=0.01, cache=False).chat_many([msgs("a"), msgs("b")])
    assert time.monotonic() - start < 10


@pytest.mark.parametrize("headers,expected", [
    ({"Retry-After": "3"}, 3.0),
    ({"retry-after": "0.25"}, 0.25),
    ({"retry-after-ms": "1500", "Retry-After": "9"}, 1.5),
    ({"Retry-After": "soon"}, None),
    ({}, None),
])
def test_parse_retry_after(headers, expected):
    assert parse_retry_after(headers) == expected


def test_parse_retry_after_http_date():
    from email.utils import formatdate

    value = parse_retry_after({"Retry-After": formatdate(time.time() + 30, usegmt=True)})
    assert 27 <= value <= 31


def test_backoff_is_exponential_with_jitter_and_capped():
    rng = random.Random(0)
    for attempt in range(8):
        full = min(10.0, 0.5 * 2 ** attempt)
        delays = [backoff_delay(attempt, 0.5, 10.0, rng) for _ in range(50)]
        assert all(full / 2 <= d <= full for d in delays)
        assert len(set(delays)) > 1
