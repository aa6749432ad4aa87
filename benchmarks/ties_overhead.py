"""What the tie ranges cost beside plain evaluation: ``evaluate`` against ``evaluate_with_ties`` on 100 queries x
1,000 documents x the 21 stored measures, for a run without ties (dense-like scores), one whose scores take six
values (a pointwise LLM's) and one with 1,000 values (a few ties per query).

CPU time (``time.process_time``), the best of 9 calls each, so other jobs on a shared machine count less::

    PYTHONPATH=src python benchmarks/ties_overhead.py
"""

from __future__ import annotations

import random
import time

from r2med.evaluation.metrics import evaluate
from r2med.evaluation.ties import evaluate_with_ties

QUERIES, DOCS, POOL, JUDGED = 100, 1000, 5000, 30


def best_time(call, repeats: int = 9) -> float:
    times = []
    for _ in range(repeats):
        start = time.process_time()
        call()
        times.append(time.process_time() - start)
    return min(times)


def main() -> None:
    rng = random.Random(0)
    qrels = {f"q{q}": {f"d{rng.randrange(POOL)}": rng.choice([1, 1, 2]) for _ in range(JUDGED)} for q in range(QUERIES)}
    for name, levels in (("no ties (dense-like)", None), ("six values (pointwise LLM)", 6), ("1,000 values", 1000)):
        run = {
            q: {
                f"d{d}": rng.random() if levels is None else float(rng.randrange(levels))
                for d in rng.sample(range(POOL), DOCS)
            }
            for q in qrels
        }
        plain = best_time(lambda run=run: evaluate(run, qrels))
        tied = best_time(lambda run=run: evaluate_with_ties(run, qrels))
        ties = evaluate_with_ties(run, qrels).ties
        assert ties is not None
        print(
            f"{name}: evaluate {1000 * plain:.0f} ms, with ties {1000 * tied:.0f} ms "
            f"(+{1000 * (tied - plain):.0f} ms, x{tied / plain:.2f}); {ties.tied_queries} queries re-scored"
        )


if __name__ == "__main__":
    main()
