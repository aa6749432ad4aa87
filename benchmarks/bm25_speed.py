"""BM25 end-to-end speed on a corpus shaped like MedXpertQA-Exam (61,379 docs x ~155 words, 100 queries x ~230).

Compares, in one process and on the same texts, tokenize + index + top-100 retrieval of
  * r2med ``bm25`` (paper scoring, pure-Python Lucene-style analyzer, both cores),
  * bm25s (``bm25s.tokenize`` with English stop words + PyStemmer, ``method="lucene"``) -- the named baseline,
  * the paper's pipeline: Lucene-like tokens (r2med's analyzer, single process) + gensim
    ``LuceneBM25Model`` + ``SparseMatrixSimilarity``, one query at a time (BRIGHT's code).
Prints seconds (best of ``--repeat`` interleaved runs) and ratios against bm25s.  ``--docs N`` shrinks the corpus
for a quick look.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from synthetic import r2med_like


def run_r2med(corpus, queries):
    from r2med import BM25

    bm25 = BM25(cache=False).index(corpus)
    return bm25.search(queries, k=100)


def run_bm25s(corpus, queries):
    import bm25s

    try:
        import Stemmer

        stemmer = Stemmer.Stemmer("english")
    except ImportError:
        stemmer = None
    doc_tokens = bm25s.tokenize(list(corpus.values()), stopwords="en", stemmer=stemmer, show_progress=False)
    retriever = bm25s.BM25(method="lucene", k1=0.9, b=0.4)
    retriever.index(doc_tokens, show_progress=False)
    q_tokens = bm25s.tokenize(list(queries.values()), stopwords="en", stemmer=stemmer, show_progress=False)
    docs, _scores = retriever.retrieve(q_tokens, k=100, show_progress=False, n_threads=2)
    return docs


def run_paper(corpus, queries):
    from gensim.corpora import Dictionary
    from gensim.models import LuceneBM25Model
    from gensim.similarities import SparseMatrixSimilarity

    from r2med.retrieval.analyzer import EnglishAnalyzer

    analyzer = EnglishAnalyzer()
    docs = [analyzer.tokenize(t) for t in corpus.values()]
    dictionary = Dictionary(docs)
    model = LuceneBM25Model(dictionary=dictionary, k1=0.9, b=0.4)
    index = SparseMatrixSimilarity(
        model[list(map(dictionary.doc2bow, docs))],
        num_docs=len(docs),
        num_terms=len(dictionary),
        normalize_queries=False,
        normalize_documents=False,
    )
    doc_ids = list(corpus)
    run = {}
    for qid, text in queries.items():
        sims = index[model[dictionary.doc2bow(analyzer.tokenize(text))]]
        top = np.argsort(-sims, kind="stable")[:100]
        run[qid] = {doc_ids[i]: float(sims[i]) for i in top}
    return run


def timed(fn, *args):
    start = time.perf_counter()
    out = fn(*args)
    return time.perf_counter() - start, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=61_379)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--skip-paper", action="store_true", help="skip the slow gensim pipeline")
    parser.add_argument(
        "--repeat",
        type=int,
        default=3,
        help="runs of bm25s and r2med, interleaved; the best of each is reported (load noise)",
    )
    args = parser.parse_args()
    t0 = time.perf_counter()
    corpus, queries = r2med_like(n_docs=args.docs, n_queries=args.queries)
    words = sum(len(t.split()) for t in corpus.values())
    print(
        f"synthetic corpus: {len(corpus):,} docs, {words / len(corpus):.0f} words/doc, {len(queries)} queries "
        f"(generated in {time.perf_counter() - t0:.1f}s)"
    )
    results: dict[str, float] = {}
    for _ in range(args.repeat):
        for name, fn in (("bm25s (baseline)", run_bm25s), ("r2med bm25", run_r2med)):
            secs, out = timed(fn, corpus, queries)
            results[name] = min(secs, results.get(name, float("inf")))
            if name == "r2med bm25":
                ours = out
    if not args.skip_paper:
        results["paper pipeline (gensim)"], paper = timed(run_paper, corpus, queries)
        overlap = np.mean([len(set(ours[q]) & set(paper[q])) / 100 for q in queries])
        print(f"top-100 overlap r2med vs paper pipeline: {overlap:.4f}")
    base = results["bm25s (baseline)"]
    print(f"{'system':<28}{'seconds':>10}{'x bm25s':>10}")
    for name, secs in results.items():
        print(f"{name:<28}{secs:>10.2f}{secs / base:>10.2f}")


if __name__ == "__main__":
    main()
