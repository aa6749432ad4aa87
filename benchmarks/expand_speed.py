"""Live expansion throughput: r2med's concurrent LLM client vs the paper's one-request-at-a-time loop.

Starts the local OpenAI-compatible test server (``tests/llm_server.py``) with a fixed latency per
request, builds the paper's HyDE prompts for N synthetic queries, and times

* **baseline** -- the R2MED code's loop for API models: ``openai.OpenAI().chat.completions.create``
  called once per query, in order;
* **r2med** -- ``LLMClient.chat_many`` with bounded concurrency (cache off, so every query is a request);
* **r2med, re-run** -- the same call with the cache on, a second time (zero requests).

Prints wall times and the speed-up ratio against the baseline measured in the same process.
Usage: ``python benchmarks/expand_speed.py [--queries 100] [--latency 0.2] [--concurrency 16]``.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from llm_server import Faults, LLMServer  # noqa: E402

WORDS = "insulin glucose ketone acidosis kidney heart lung virus antibody neuron liver anemia thyroid".split()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--latency", type=float, default=0.2, help="seconds the server takes per request")
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args()
    os.environ.setdefault("R2MED_HOME", tempfile.mkdtemp(prefix="r2med-bench-"))

    import openai

    from r2med.expansion.generate import build_messages, paper_sampling
    from r2med.llm import LLMClient

    rng = random.Random(0)
    queries = [" ".join(rng.choice(WORDS) for _ in range(30)) + f" ({i})" for i in range(args.queries)]
    batch = [build_messages("hyde", "MedXpertQA-Exam", q) for q in queries]
    sampling = paper_sampling(api=True)

    with LLMServer(Faults(latency=args.latency)) as server:
        # baseline: the paper's sequential loop over the OpenAI client
        client = openai.OpenAI(api_key="EMPTY", base_url=server.base_url)
        t0 = time.perf_counter()
        baseline = [client.chat.completions.create(model="test-model", messages=m, **sampling).choices[0].message.content
                    for m in batch]
        t_base = time.perf_counter() - t0

        ours = LLMClient("test-model", base_url=server.base_url, concurrency=args.concurrency, cache=False)
        t0 = time.perf_counter()
        results = ours.chat_many(batch, **sampling)
        t_ours = time.perf_counter() - t0
        assert [r.text for r in results] == baseline, "concurrent answers differ from the sequential ones"

        cached = LLMClient("test-model", base_url=server.base_url, concurrency=args.concurrency)
        cached.chat_many(batch, **sampling)
        before = server.requests
        t0 = time.perf_counter()
        cached.chat_many(batch, **sampling)
        t_rerun = time.perf_counter() - t0
        assert server.requests == before

    print(f"{args.queries} HyDE requests, server latency {args.latency * 1000:.0f} ms/request")
    print(f"  baseline (paper: sequential openai loop)   {t_base:8.2f} s")
    print(f"  r2med LLMClient, concurrency {args.concurrency:<3}          {t_ours:8.2f} s   "
          f"speed-up x{t_base / t_ours:.1f}")
    print(f"  r2med re-run (answers from the disk cache) {t_rerun:8.2f} s   speed-up x{t_base / max(t_rerun, 1e-9):.0f}")


if __name__ == "__main__":
    main()
