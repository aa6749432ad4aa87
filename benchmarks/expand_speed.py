"""Live expansion throughput: r2med's concurrent LLM client vs the paper's one-request-at-a-time loop.

Starts the local OpenAI-compatible test server (``tests/llm_server.py``) in its own process (like a
real endpoint, it does not share this process's CPU time) with a fixed latency per request, builds the paper's
HyDE prompts for N synthetic queries, and times

* **baseline** -- the R2MED code's loop for API models: ``openai.OpenAI().chat.completions.create``
  called once per query, in order;
* **r2med** -- ``LLMClient.chat_many`` with bounded concurrency (cache off, so every query is a request);
* **r2med, re-run** -- the same call with the cache on, a second time (zero requests).

Prints wall times and the speed-up ratio against the baseline measured in the same process.
Usage: ``python benchmarks/expand_speed.py [--queries 100] [--latency 0.2] [--concurrency 16]``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

SERVER = Path(__file__).resolve().parents[1] / "tests" / "llm_server.py"

WORDS = "insulin glucose ketone acidosis kidney heart lung virus antibody neuron liver anemia thyroid".split()


@contextlib.contextmanager
def server_process(latency: float) -> Iterator[str]:
    """Run tests/llm_server.py in a subprocess; yield its base URL."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, str(SERVER), "--port", str(port), "--latency", str(latency)], stdout=subprocess.PIPE, text=True
    )
    try:
        proc.stdout.readline()  # "serving ..." once it listens
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--latency", type=float, default=0.2, help="seconds the server takes per request")
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args()
    os.environ.setdefault("R2MED_HOME", tempfile.mkdtemp(prefix="r2med-bench-"))

    import openai

    from r2med.expansion.generate import expansion_messages, paper_sampling
    from r2med.infra.llm import LLMClient

    rng = random.Random(0)
    queries = [" ".join(rng.choice(WORDS) for _ in range(30)) + f" ({i})" for i in range(args.queries)]
    batch = [expansion_messages("hyde", "MedXpertQA-Exam", q) for q in queries]
    sampling = paper_sampling(api=True)

    with server_process(args.latency) as url:
        # baseline: the paper's sequential loop over the OpenAI client
        client = openai.OpenAI(api_key="EMPTY", base_url=url)
        t0 = time.perf_counter()
        baseline = [
            client.chat.completions.create(model="test-model", messages=m, **sampling).choices[0].message.content
            for m in batch
        ]
        t_base = time.perf_counter() - t0

        ours = LLMClient("test-model", base_url=url, concurrency=args.concurrency, cache=False)
        t0 = time.perf_counter()
        results = ours.chat_many(batch, **sampling)
        t_ours = time.perf_counter() - t0
        assert [r.text for r in results] == baseline, "concurrent answers differ from the sequential ones"

        cached = LLMClient("test-model", base_url=url, concurrency=args.concurrency)
        cached.chat_many(batch, **sampling)
        t0 = time.perf_counter()
        rerun = LLMClient("test-model", base_url=url, concurrency=args.concurrency)  # reloads the disk cache
        rerun.chat_many(batch, **sampling)
        t_rerun = time.perf_counter() - t0
        assert rerun.usage.requests == 0 and rerun.usage.cache_hits == len(batch)

    print(f"{args.queries} HyDE requests, server latency {args.latency * 1000:.0f} ms/request")
    print(f"  baseline (paper: sequential openai loop)   {t_base:8.2f} s")
    print(
        f"  r2med LLMClient, concurrency {args.concurrency:<3}          {t_ours:8.2f} s   "
        f"speed-up x{t_base / t_ours:.1f}"
    )
    print(
        f"  r2med re-run (answers from the disk cache) {t_rerun:8.2f} s   speed-up x{t_base / max(t_rerun, 1e-9):.0f}"
    )


if __name__ == "__main__":
    main()
