"""``r2med expand``'s LLM options are the LLM endpoint options' one base (issue 35 item 4: ``ExpandLlmOptions``, an
``LlmEndpointOptions``), and the job builds its client through the base's ``client()``: the same endpoint values
give the same client as a listwise reranker's, and the request settings (retries, their backoff, the timeout)
reach the requests, against a local OpenAI-compatible server (tests/llm_server.py)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

import r2med.jobs.expand as expand_job
from conftest import run_r2med
from llm_server import Faults, LLMServer
from r2med.data import resolve
from r2med.errors import R2MedError
from r2med.reranking import make_reranker
from r2med.steps import ExpandStep, flat
from r2med.typed.options import ExpandLlmOptions, LlmEndpointOptions
from r2med.typed.parse import Origin, SpecError
from test_expansion_generate import make_collection
from test_rerank_llm_endpoint import _client_facts

pytest.importorskip("openai")


def _step(out: Path, **values: Any) -> ExpandStep:
    step: ExpandStep = flat({"method": "hyde", "out": out, **values}, ExpandStep, Origin.python("expand"))
    return step


@pytest.fixture
def clients(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The client each generative expansion request batch was sent through."""
    seen: list[Any] = []
    generate = expand_job.generate_expansions

    def spy(collection: Any, method: str, client: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(client)
        return generate(collection, method, client, *args, **kwargs)

    monkeypatch.setattr(expand_job, "generate_expansions", spy)
    return seen


def test_the_expand_llm_is_an_llm_endpoint_and_the_flat_values_land_in_it(tmp_path):
    assert issubclass(ExpandLlmOptions, LlmEndpointOptions)
    step = _step(tmp_path, model="m", base_url="http://127.0.0.1:9/v1", timeout=5, temperature=0.3, top_p=0.5)
    assert isinstance(step.llm, ExpandLlmOptions)
    assert (step.llm.model, step.llm.timeout, step.llm.temperature, step.llm.top_p) == ("m", 5, 0.3, 0.5)
    assert step.llm.cache is True  # on unless --no-cache
    with pytest.raises(SpecError, match=r"^--timeout: expected a finite number > 0, got 0$"):
        flat({"method": "hyde", "out": tmp_path, "model": "m", "timeout": 0}, ExpandStep, Origin.cli())
    with pytest.raises(SpecError, match=r"^--model: missing \(required\)$"):
        flat({"method": "hyde", "out": tmp_path}, ExpandStep, Origin.cli())


def test_expand_builds_the_listwise_client_from_the_same_endpoint_values(tmp_path, clients):
    data = make_collection(tmp_path / "Biology", n_queries=2)
    with LLMServer() as server:
        endpoint = dict(
            model=server.model,
            base_url=server.base_url,
            api_key="sk-test",
            concurrency=3,
            timeout=7.5,
            max_retries=2,
            backoff_base=0.25,
            backoff_max=4.0,
            seed=11,
            cache=False,
        )
        expand_job.expand_tasks(_step(tmp_path / "out", **endpoint), resolve("all", data))
        listwise = make_reranker("listwise", **endpoint).client
    assert len(clients) == 1
    assert _client_facts(clients[0]) == _client_facts(listwise)
    assert _client_facts(clients[0])["timeout"] == 7.5 and _client_facts(clients[0])["backoff"] == (0.25, 4.0, 11)


def test_what_expand_leaves_unset_is_the_clients_default_and_its_own_timeout(tmp_path, clients):
    data = make_collection(tmp_path / "Biology", n_queries=1)
    with LLMServer() as server:
        expand_job.expand_tasks(
            _step(tmp_path / "out", model=server.model, base_url=server.base_url, cache=False), resolve("all", data)
        )
    client = clients[0]
    # r2med expand's --concurrency 16, --max-retries 6 and --timeout 300 (docs/expansion.md)
    assert (client.concurrency, client.max_retries, client.timeout) == (16, 6, 300.0)


def test_the_command_line_leaves_the_request_settings_unset_so_those_defaults_apply(tmp_path, clients, r2med_home):
    """``r2med expand`` without --concurrency/--max-retries/--timeout: the client its job builds runs with the
    documented defaults (docs/expansion.md), which the command line no longer restates."""
    data = make_collection(tmp_path / "Biology", n_queries=1)
    with LLMServer() as server:
        args = ["expand", "--method", "hyde", "--model", server.model, "--base-url", server.base_url]
        proc = run_r2med(*args, "--data-dir", str(data), "--out", str(tmp_path / "out"), "--no-cache")
    assert proc.returncode == 0, proc.stderr
    assert [(c.concurrency, c.max_retries, c.timeout) for c in clients] == [(16, 6, 300.0)]


def test_retries_and_backoff_set_for_expand_reach_the_requests(tmp_path):
    """Every request fails once (HTTP 500): with ``max_retries = 0`` the task fails, with 1 the retry answers."""
    data = make_collection(tmp_path / "Biology", n_queries=2)
    for retries, fails in ((0, True), (1, False)):
        with LLMServer(faults=Faults(rate_500=1.0, max_faults_per_prompt=1)) as server:
            step = _step(
                tmp_path / f"out{retries}",
                model=server.model,
                base_url=server.base_url,
                cache=False,
                max_retries=retries,
                backoff_base=0.0,
                backoff_max=0.0,
            )
            if fails:
                with pytest.raises(R2MedError, match="2 of 2 requests failed"):
                    expand_job.expand_tasks(step, resolve("all", data))
            else:
                expand_job.expand_tasks(step, resolve("all", data))
            assert server.faults_sent["500"] == 2
        assert (tmp_path / f"out{retries}" / "Biology" / "hyde").exists() is not fails


def test_the_timeout_set_for_expand_reaches_the_requests(tmp_path):
    """The server holds every answer for 5 s; a 0.5 s timeout (no retry) gives up long before."""
    data = make_collection(tmp_path / "Biology", n_queries=1)
    with LLMServer(faults=Faults(rate_hang=1.0, hang_s=5.0, max_faults_per_prompt=1)) as server:
        step = _step(
            tmp_path / "out", model=server.model, base_url=server.base_url, cache=False, timeout=0.5, max_retries=0
        )
        start = time.monotonic()
        with pytest.raises(R2MedError, match="1 of 1 requests failed"):
            expand_job.expand_tasks(step, resolve("all", data))
        assert time.monotonic() - start < 4.0
