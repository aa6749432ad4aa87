"""The LLM client against a real local HTTP server: order, cache, retries, faults, fatal errors."""

from __future__ import annotations

import json
import random
import subprocess
import time
from pathlib import Path

import pytest

from conftest import run_r2med
from llm_server import Faults, LLMServer, default_reply
from r2med.errors import R2MedError
from r2med.infra.llm import LLMClient, LLMError, RequestCache
from r2med.infra.retry import backoff_delay, parse_retry_after

pytest.importorskip("openai")


def msgs(text: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": "You are a helpful assistant."}, {"role": "user", "content": text}]


PROMPTS = [f"question number {i} about insulin" for i in range(24)]


def listwise_rerank(run: Path, url: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    """``r2med -v rerank`` of ``run``'s top 4 with the listwise reranker behind ``url`` (verbose: URLs in logs)."""
    return run_r2med(
        "-v",
        "rerank",
        "--run",
        str(run),
        "--reranker",
        "listwise",
        "--model",
        "test-model",
        "--base-url",
        url,
        "--top-k",
        "4",
        env=env,
    )


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
    faults = Faults(
        rate_429=0.2, retry_after=0.05, rate_500=0.15, rate_hang=0.1, hang_s=3.0, rate_slow=0.1, slow_s=0.1, seed=7
    )
    with LLMServer(faults) as server:
        client = LLMClient(
            "test-model",
            base_url=server.base_url,
            concurrency=8,
            timeout=0.5,
            backoff_base=0.02,
            backoff_max=0.2,
            max_retries=6,
        )
        retries = []
        results = client.chat_many([msgs(p) for p in PROMPTS], on_retry=retries.append)
        assert [r.text for r in results] == [default_reply(p) for p in PROMPTS]
        failures = faults_total = sum(v for k, v in server.faults_sent.items() if k != "slow")
        assert faults_total > 0 and server.faults_sent["hang"] > 0
        # every injected fault caused one counted retry, and every request beyond the first of each prompt
        # was one; a loaded machine can also time out a normal reply or a request still in the server's
        # backlog (retries the server did not inject), whose late answer is then the only extra
        # completion the server may count
        assert client.usage.retries == len(retries)
        assert failures <= client.usage.retries
        assert server.requests - len(PROMPTS) <= client.usage.retries
        assert 0 <= server.completions - len(PROMPTS) <= client.usage.retries - failures
        assert client.usage.failed == 0


def test_retrying_gauge_counts_requests_between_an_error_and_their_answer():
    """Every prompt fails once (HTTP 500) and waits 0.3 s before it is sent again: while one waits, the
    gauge counts it; the 4 requests in flight wait together; at the end none is waiting."""
    faults = Faults(rate_500=1.0, max_faults_per_prompt=1)
    with LLMServer(faults) as server:
        client = LLMClient(
            "test-model",
            base_url=server.base_url,
            concurrency=4,
            timeout=5,
            backoff_base=0.3,
            backoff_max=0.3,
            max_retries=2,
            cache=False,
        )
        seen: list[int] = []
        results = client.chat_many(
            [msgs(p) for p in PROMPTS[:8]], on_retry=lambda _e: seen.append(client.usage.retrying)
        )
    assert all(r.ok for r in results) and len(seen) == 8 == server.faults_sent["500"]
    assert min(seen) >= 1 and max(seen) <= 4 and max(seen) >= 2  # several waited at once, never more than in flight
    assert client.usage.retrying == 0 and client.usage.retries == 8


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


@pytest.mark.parametrize(
    "headers,expected",
    [
        ({"Retry-After": "3"}, 3.0),
        ({"retry-after": "0.25"}, 0.25),
        ({"retry-after-ms": "1500", "Retry-After": "9"}, 1.5),
        ({"Retry-After": "soon"}, None),
        ({}, None),
    ],
)
def test_parse_retry_after(headers, expected):
    assert parse_retry_after(headers) == expected


def test_parse_retry_after_http_date():
    from email.utils import formatdate

    value = parse_retry_after({"Retry-After": formatdate(time.time() + 30, usegmt=True)})
    assert 27 <= value <= 31


def test_backoff_is_exponential_with_jitter_and_capped():
    rng = random.Random(0)
    for attempt in range(8):
        full = min(10.0, 0.5 * 2**attempt)
        delays = [backoff_delay(attempt, 0.5, 10.0, rng) for _ in range(50)]
        assert all(full / 2 <= d <= full for d in delays)
        assert len(set(delays)) > 1


# -- damaged cache lines are skipped and re-requested -------------------------------------------------


def test_cache_lines_with_wrong_typed_or_missing_fields_are_re_requested(r2med_home, caplog):
    from r2med.infra.llm import default_cache_path

    prompts = [f"damaged cache question {i}" for i in range(8)]
    with LLMServer() as server:
        client = LLMClient("test-model", base_url=server.base_url)
        keys = [client.key(msgs(p), temperature=0.7) for p in prompts]
        client.close()
        good = {
            "text": "a cached answer",
            "usage": {"prompt_tokens": 3, "completion_tokens": 2},
            "finish_reason": "stop",
        }
        damaged = [
            {**good, "text": 123},  # hy_doc: 123 was written from this
            {k: v for k, v in good.items() if k != "text"},  # KeyError before
            {**good, "text": None},  # a "stuck" error before
            {k: v for k, v in good.items() if k != "usage"},
            {**good, "usage": "many"},
            {**good, "usage": {"prompt_tokens": -4}},
            {**good, "usage": {"prompt_tokens": True}},
        ]
        lines = [json.dumps({"key": k, **entry}) for k, entry in zip(keys, damaged)]
        lines += ["[1, 2, 3]", json.dumps({"key": keys[7], **good})]  # not an object; one sound line
        path = default_cache_path("test-model")
        path.write_text("\n".join(lines) + "\n")
        again = LLMClient("test-model", base_url=server.base_url)
        results = again.chat_many([msgs(p) for p in prompts], temperature=0.7)
        assert [r.text for r in results] == [default_reply(p) for p in prompts[:7]] + ["a cached answer"]
        assert all(isinstance(r.text, str) and r.ok for r in results)
        assert server.requests == 7 and again.usage.cache_hits == 1
        assert "skipped 8 unusable line(s) (first: line 1: 'text' is int, not text)" in caplog.text
        again.close()
        # the answers were appended: a third client finds every request cached
        third = LLMClient("test-model", base_url=server.base_url)
        assert all(r.cached for r in third.chat_many([msgs(p) for p in prompts], temperature=0.7))
        assert server.requests == 7


def test_expansions_never_hold_a_non_text_answer(tmp_path, r2med_home):
    """The reported case: a cached `text: 123` became `hy_doc: 123` in the expansion file."""
    from r2med.data.loaders import load_folder
    from r2med.expansion.generate import expansion_messages, generate_expansions, paper_sampling, write_expansion_file
    from r2med.expansion.precomputed import read_expansion_file
    from r2med.infra.llm import default_cache_path

    data = tmp_path / "Biology"
    data.mkdir()
    (data / "corpus.jsonl").write_text(json.dumps({"id": "d1", "text": "insulin"}) + "\n")
    (data / "query.jsonl").write_text(json.dumps({"id": "q1", "text": "what lowers glucose"}) + "\n")
    (data / "qrels.jsonl").write_text(json.dumps({"q_id": "q1", "p_id": "d1", "score": 1}) + "\n")
    coll = load_folder(data)
    sampling = paper_sampling(api=False)
    with LLMServer() as server:
        client = LLMClient("test-model", base_url=server.base_url)
        key = client.key(expansion_messages("hyde", "Biology", "what lowers glucose"), **sampling)
        client.close()
        default_cache_path("test-model").write_text(json.dumps({"key": key, "text": 123, "usage": {}}) + "\n")
        client = LLMClient("test-model", base_url=server.base_url)
        res = generate_expansions(coll, "hyde", client, sampling)
        client.close()
    path = write_expansion_file(tmp_path / "out" / "query_with_hydoc.jsonl", coll, res.texts)
    assert isinstance(read_expansion_file(path).texts["q1"], str) and server.requests == 1


# -- credentials in the endpoint URL -------------------------------------------------------------------


def test_base_url_credentials_are_redacted_everywhere(tmp_path, r2med_home):
    from r2med.data.loaders import load_folder
    from r2med.evaluation.metrics import evaluate
    from r2med.results.folders import metrics_payload
    from r2med.runs.run import write_task_results

    secret = "s3cretTOKEN"
    data = tmp_path / "data" / "toy"
    data.mkdir(parents=True)
    docs = {f"d{i}": f"passage {i} about insulin" for i in range(1, 5)}
    (data / "corpus.jsonl").write_text("".join(json.dumps({"id": d, "text": t}) + "\n" for d, t in docs.items()))
    (data / "query.jsonl").write_text(json.dumps({"id": "q1", "text": "insulin"}) + "\n")
    (data / "qrels.jsonl").write_text(json.dumps({"q_id": "q1", "p_id": "d2", "score": 1}) + "\n")
    coll = load_folder(data)
    run = {"q1": {d: 5.0 - i for i, d in enumerate(docs)}}
    write_task_results(
        tmp_path / "runs" / "first" / "toy", run, metrics_payload(coll, "first", {}, evaluate(run, coll.qrels), {})
    )
    env = {"R2MED_HOME": str(r2med_home)}
    with LLMServer() as server:
        plain_url = server.base_url
        url = plain_url.replace("http://", f"http://user:{secret}@")
        res = listwise_rerank(tmp_path / "runs" / "first", url, env)
        assert res.returncode == 0, res.stderr
        assert server.completions >= 1
    assert secret not in res.stdout + res.stderr
    meta = json.loads((tmp_path / "runs" / "first+listwise-test-model" / "toy" / "metrics.json").read_text())
    assert meta["config"]["reranker"]["base_url"] == plain_url.replace("http://", "http://***@")
    for root in (tmp_path, r2med_home):
        for path in root.rglob("*"):
            if path.is_file():
                assert secret.encode() not in path.read_bytes(), path
    # an unreachable endpoint: the one-line error names it without the secret
    res = run_r2med(
        "expand",
        "--method",
        "hyde",
        "--model",
        "m",
        "--base-url",
        f"http://user:{secret}@127.0.0.1:9/v1",
        "--data-dir",
        str(data),
        "--prompt-task",
        "Biology",
        "-o",
        str(tmp_path / "exp"),
        "--max-retries",
        "1",
        env=env,
    )
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert secret not in res.stdout + res.stderr and "http://***@127.0.0.1:9/v1" in res.stderr


def test_redact_urls():
    from r2med.infra.redact import redact_url, redact_urls

    assert redact_url("https://u:p@host:8/v1") == "https://***@host:8/v1"
    assert redact_url("http://token@h/v1?x=a@b") == "http://***@h/v1?x=***"
    assert redact_url("http://h/v1?key=SECRET&org=a;b=c#frag") == "http://h/v1?key=***&org=***;b=***#frag"
    assert redact_url("http://h/v1?SECRET#access_token=T") == "http://h/v1?***#access_token=***"
    assert (
        redact_urls("url 'http://h/v1?key=S' (see http://h/v1?k=S2)")
        == "url 'http://h/v1?key=***' (see http://h/v1?k=***)"
    )
    assert redact_urls('POST http://h/v1?key=S/chat/completions "200"') == 'POST http://h/v1?key=*** "200"'
    assert redact_url("http://h/v1") == "http://h/v1" and redact_url(None) is None
    assert redact_urls("POST https://a:b@x/v1 and http://c@y/") == "POST https://***@x/v1 and http://***@y/"
    assert redact_urls("mail me at a@b.org") == "mail me at a@b.org"


def test_unwritable_cache_is_an_error_before_any_request(tmp_path):
    folder = tmp_path / "cache.jsonl"
    folder.mkdir()  # a folder where the cache file should be
    with pytest.raises(R2MedError, match="cannot be written"):
        RequestCache(folder)
    (tmp_path / "file").write_text("x")
    with pytest.raises(R2MedError, match="cannot create"):
        RequestCache(tmp_path / "file" / "cache.jsonl")


# -- whole-request deadline, answers as they arrive, broken answers -----------------------------------


def test_a_dripping_server_cannot_hold_a_request_past_its_timeout():
    """--timeout is per request: the answer drips one byte per 0.1 s (a per-read timeout of 1 s never fires,
    the whole body would take over 30 s), yet each of the two attempts ends after 1 s."""
    with LLMServer(Faults(drip_s=0.1)) as server:
        client = LLMClient(
            "test-model", base_url=server.base_url, timeout=1.0, max_retries=1, backoff_base=0.01, cache=False
        )
        start = time.monotonic()
        result = client.chat(msgs("insulin"))
        took = time.monotonic() - start
    assert not result.ok and result.attempts == 2
    assert "gave up after 2 attempts" in result.error and "within 1s" in result.error
    assert took < 6.0, took


def test_a_dripping_server_is_a_one_line_cli_error_within_the_timeout(tmp_path, r2med_home):
    data = tmp_path / "toy"
    data.mkdir()
    (data / "corpus.jsonl").write_text(json.dumps({"id": "d1", "text": "insulin"}) + "\n")
    (data / "query.jsonl").write_text(json.dumps({"id": "q1", "text": "insulin"}) + "\n")
    (data / "qrels.jsonl").write_text(json.dumps({"q_id": "q1", "p_id": "d1", "score": 1}) + "\n")
    with LLMServer(Faults(drip_s=0.2)) as server:
        start = time.monotonic()
        res = run_r2med(
            "-q",
            "expand",
            "--method",
            "hyde",
            "--model",
            "test-model",
            "--base-url",
            server.base_url,
            "--data-dir",
            str(data),
            "--prompt-task",
            "Biology",
            "-o",
            str(tmp_path / "exp"),
            "--timeout",
            "2",
            "--max-retries",
            "1",
            env={"R2MED_HOME": str(r2med_home)},
        )
        took = time.monotonic() - start
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert "within 2s" in res.stderr and len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert took < 20.0, took  # the drip alone: over 70 s


def test_usage_the_cache_reader_would_reject_is_left_out_on_arrival(r2med_home):
    """A reply reporting prompt_tokens -5 (or a float, or a string) is cached in a form its reader accepts:
    on resume it is a cache hit, not a request paid for again."""
    for bad in (-5, 2.5, "many"):
        with LLMServer(usage={"prompt_tokens": bad}) as server:
            first = LLMClient("test-model", base_url=server.base_url)
            result = first.chat(msgs(f"usage {bad!r}"))
            first.close()
            assert result.ok and "prompt_tokens" not in result.usage and result.usage["completion_tokens"] > 0
            again = LLMClient("test-model", base_url=server.base_url)  # a resumed run: reload from disk
            hit = again.chat(msgs(f"usage {bad!r}"))
            again.close()
            assert hit.cached and hit.text == result.text
            assert server.completions == 1 and again.cache is not None and again.cache.skipped_lines == 0


def test_a_truncated_answer_is_not_an_unreachable_endpoint():
    with LLMServer(Faults(truncate=True)) as server:
        client = LLMClient("test-model", base_url=server.base_url, max_retries=1, backoff_base=0.01, cache=False)
        result = client.chat(msgs("insulin"))  # no LLMError "unreachable": it answered, then broke off
    assert not result.ok and result.attempts == 2
    assert "broke off its answer" in result.error and "cannot connect" not in result.error
    assert "complete message body" in result.error


def test_an_answer_nested_too_deeply_is_a_bad_reply_not_a_recursion_error():
    """An endpoint's answer nested 200,000 deep: the openai client's JSON parser raises RecursionError, which came
    out as ``RecursionError: maximum recursion depth exceeded while decoding a JSON array`` in the one-line error;
    it is a bad reply, retried and then given up like any other (issue 27, deep JSON)."""
    deep = b'{"choices": ' + b"[" * 200_000 + b"]" * 200_000 + b"}"
    with LLMServer(Faults(body=deep)) as server:
        client = LLMClient("test-model", base_url=server.base_url, max_retries=1, backoff_base=0.01, cache=False)
        result = client.chat(msgs("insulin"))
    assert not result.ok and result.attempts == 2 and server.requests == 2
    assert "bad reply from the endpoint (JSON nested too deeply)" in result.error
    assert "RecursionError" not in result.error


# -- secrets in the query string ----------------------------------------------------------------------


def test_base_url_query_secrets_are_redacted_in_every_writer(tmp_path, r2med_home):
    """A key in the base URL's query string (``?key=SECRET``) reaches no file and no output: metrics.json,
    expansion records, the LLM cache, logs (-v), errors, reproduce, rerank configs, the HTML report."""
    from r2med.data.loaders import load_folder
    from r2med.evaluation.metrics import evaluate
    from r2med.results.folders import metrics_payload
    from r2med.runs.run import write_task_results

    secret = "qS3cretKEY"
    data = tmp_path / "data" / "toy"
    data.mkdir(parents=True)
    docs = {f"d{i}": f"passage {i} about insulin" for i in range(1, 5)}
    (data / "corpus.jsonl").write_text("".join(json.dumps({"id": d, "text": t}) + "\n" for d, t in docs.items()))
    (data / "query.jsonl").write_text(json.dumps({"id": "q1", "text": "insulin"}) + "\n")
    (data / "qrels.jsonl").write_text(json.dumps({"q_id": "q1", "p_id": "d2", "score": 1}) + "\n")
    coll = load_folder(data)
    run = {"q1": {d: 5.0 - i for i, d in enumerate(docs)}}
    runs = tmp_path / "runs"
    write_task_results(runs / "first" / "toy", run, metrics_payload(coll, "first", {}, evaluate(run, coll.qrels), {}))
    env = {"R2MED_HOME": str(r2med_home)}
    shown = []
    with LLMServer() as server:
        url = f"{server.base_url}?key={secret}&org=acme"
        res = listwise_rerank(runs / "first", url, env)
        assert res.returncode == 0, res.stderr
        shown.append(res.stdout + res.stderr)
        res = run_r2med(
            "-v",
            "expand",
            "--method",
            "hyde",
            "--model",
            "test-model",
            "--base-url",
            url,
            "--data-dir",
            str(data),
            "--prompt-task",
            "Biology",
            "-o",
            str(tmp_path / "exp"),
            env=env,
        )
        assert res.returncode == 0, res.stderr
        shown.append(res.stdout + res.stderr)
        assert server.completions >= 2
        assert all(body.get("model") == "test-model" for body in server.bodies)
        assert set(server.queries) == {f"key={secret}&org=acme"}  # the query reaches the endpoint, as given
    meta = json.loads((runs / "first+listwise-test-model" / "toy" / "metrics.json").read_text())
    assert meta["config"]["reranker"]["base_url"].endswith("/v1?key=***&org=***")
    for command in (
        ["reproduce", "--dry-run", "--tasks", "Biology", "--format", "json"],
        ["report", str(runs), "--html", str(tmp_path / "report.html"), "--data-dir", str(data)],
    ):
        res = run_r2med(*command, env={**env, "OPENAI_BASE_URL": url})
        assert res.returncode == 0, res.stderr
        shown.append(res.stdout + res.stderr)
    assert (tmp_path / "report.html").exists()
    # an unreachable endpoint: its one-line error names it without the secret
    res = run_r2med(
        "expand",
        "--method",
        "hyde",
        "--model",
        "m",
        "--base-url",
        f"http://127.0.0.1:9/v1?key={secret}",
        "--data-dir",
        str(data),
        "--prompt-task",
        "Biology",
        "-o",
        str(tmp_path / "exp2"),
        "--max-retries",
        "1",
        env=env,
    )
    assert res.returncode == 2 and "http://127.0.0.1:9/v1?key=***" in res.stderr, res.stderr
    shown.append(res.stdout + res.stderr)
    for output in shown:
        assert secret not in output
    for root in (tmp_path, r2med_home):
        for path in root.rglob("*"):
            if path.is_file():
                assert secret.encode() not in path.read_bytes(), path


def test_a_full_disk_under_the_answer_cache_is_one_error_naming_it(tmp_path, monkeypatch):
    import errno

    from r2med.infra import llm

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    path = tmp_path / "answers.jsonl"
    with LLMServer() as server:
        client = LLMClient("test-model", base_url=server.base_url, cache=path)
        monkeypatch.setattr(llm.os, "fsync", full)
        with pytest.raises(R2MedError, match=f"^{path}: No space left on device$"):
            client.chat_many([msgs("a"), msgs("b")])
        client.close()
