"""Synthetic corpora shaped like R2MED tasks and BRIGHT's LeetCode (Zipfian vocabulary of English-like pseudo-words).

``r2med_like``: an R2MED task's shape (61,379 docs of ~155 words, 100 queries of ~230 words).
``leetcode_like``: BRIGHT LeetCode's shape, with judgments and per-query excluded documents (see its docstring);
``leetcode_counts``: the per-query gold and excluded counts of LeetCode's real examples, for ``leetcode_like``;
``write_bright_hub``: such a collection as BRIGHT's hub files (parquet) in a Hugging Face cache, so that
``r2med evaluate --tasks bright:leetcode`` reads it offline as it reads the real task.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from statistics import NormalDist

import numpy as np

_SYLLABLES = [
    "ba",
    "ko",
    "ti",
    "ne",
    "ra",
    "lu",
    "mi",
    "so",
    "de",
    "pha",
    "gen",
    "ase",
    "ine",
    "ol",
    "tis",
    "ic",
    "al",
    "ous",
    "ing",
    "ed",
    "er",
    "ly",
    "cy",
    "to",
    "cor",
    "mal",
    "ren",
    "vas",
    "neu",
    "card",
]


def vocabulary(size: int, seed: int = 0) -> list[str]:
    rng = np.random.default_rng(seed)
    words: set[str] = set()
    out = []
    while len(out) < size:
        n = int(rng.integers(1, 5))
        word = "".join(_SYLLABLES[i] for i in rng.integers(0, len(_SYLLABLES), n))
        if word not in words:
            words.add(word)
            out.append(word)
    return out


def zipf_texts(
    n_texts: int,
    mean_words: int,
    vocab: list[str],
    seed: int = 1,
    exponent: float = 1.07,
) -> list[str]:
    """``n_texts`` texts of ~``mean_words`` words drawn from a Zipfian distribution over ``vocab``."""
    rng = np.random.default_rng(seed)
    lengths = np.maximum(5, rng.normal(mean_words, mean_words * 0.35, n_texts).astype(int))
    return _texts_of_lengths(rng, lengths, vocab, exponent)


def _zipf_p(n: int, exponent: float) -> np.ndarray:
    p = np.arange(1, n + 1, dtype=np.float64) ** -exponent
    return p / p.sum()


def _texts_of_lengths(rng: np.random.Generator, lengths: np.ndarray, vocab: list[str], exponent: float) -> list[str]:
    """One text per entry of ``lengths`` (words), words drawn from a Zipfian distribution over ``vocab``."""
    words = np.asarray(vocab, dtype=object)[
        rng.choice(len(vocab), size=int(lengths.sum()), p=_zipf_p(len(vocab), exponent))
    ]
    texts, start = [], 0
    for n in lengths:
        chunk = words[start : start + n]
        start += n
        texts.append(" ".join(chunk) + ".")
    return texts


def r2med_like(
    n_docs: int = 61_379,
    doc_words: int = 155,
    n_queries: int = 100,
    query_words: int = 230,
    vocab_size: int = 60_000,
    seed: int = 0,
) -> tuple[dict[str, str], dict[str, str]]:
    vocab = vocabulary(vocab_size, seed)
    docs = zipf_texts(n_docs, doc_words, vocab, seed + 1)
    queries = zipf_texts(n_queries, query_words, vocab, seed + 2)
    return ({f"d{i}": t for i, t in enumerate(docs)}, {f"q{i}": t for i, t in enumerate(queries)})


#: BRIGHT LeetCode's shape, each figure with its source:
#: 413,932 documents (castorini/anserini bright-leetcode.yaml index_stats; BRIGHT's Dataset_documentation.md);
#: document length 75 / 1,058.5 / 103,665 characters (min / mean / max: mteb's descriptive statistics of
#: BrightLeetcodeRetrieval, documents_text_statistics); 142 queries of 253.6 whitespace words on average (the real
#: examples, ../shared/data/bright/examples/leetcode.jsonl.gz; mteb: 422 / 1,459.3 / 3,964 characters); 262 gold
#: documents, 1 to 5 per query (mteb relevant_docs_statistics); 33,485 excluded documents, 9 to 1,119 per query,
#: 235.8 on average (the real examples; mteb's top_ranked statistics: 412,813 / 413,696.2 / 413,923 kept per query).
LEETCODE = {
    "docs": 413_932,
    "doc_chars": (75, 1058.5, 103_665),
    "queries": 142,
    "query_words": 253.6,
    "gold": 262,
    "excluded": (9, 235.8, 1119),
}


@dataclass
class ExclusionCorpus:
    """A synthetic collection with judgments and per-query excluded documents (BRIGHT's ``excluded_ids``)."""

    docs: dict[str, str]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]
    excluded: dict[str, list[str]]


def _lognormal_for(mean: float, maximum: float, n: int) -> tuple[float, float]:
    """(mu, sigma) of a log-normal with this mean whose largest of ``n`` draws is about ``maximum``.

    The expected largest of n draws is about exp(mu + sigma z), z the normal quantile at 1 - 1/n; with
    mean = exp(mu + sigma^2 / 2): sigma^2 / 2 - z sigma + ln(max / mean) = 0, the smaller root."""
    z = NormalDist().inv_cdf(1 - 1 / max(n, 2))
    gap = np.log(maximum / mean)
    sigma = z - np.sqrt(max(z * z - 2 * gap, 0.0))
    return float(np.log(mean) - sigma * sigma / 2), float(sigma)


def leetcode_like(
    n_docs: int = LEETCODE["docs"],
    n_queries: int = LEETCODE["queries"],
    vocab_size: int = 60_000,
    seed: int = 0,
    chunk: int = 20_000,
    gold_counts: Sequence[int] | None = None,
    excluded_counts: Sequence[int] | None = None,
) -> ExclusionCorpus:
    """A synthetic collection of BRIGHT LeetCode's shape (:data:`LEETCODE`), scaled to ``n_docs`` / ``n_queries``.

    Document lengths: a log-normal in characters fitted to LeetCode's mean and maximum (its shape in between is
    ASSUMED: mteb publishes min / mean / max only), clipped to the real minimum and maximum, turned into words by
    the synthetic vocabulary's mean word length. Per query: 1-5 gold documents (1.85 on average, LeetCode's 262 /
    142) and 9-1,119 excluded ones (a log-normal with LeetCode's mean, 235.8), or exactly ``gold_counts`` /
    ``excluded_counts`` per query when given (:func:`leetcode_counts`: the real examples'); both carry words of
    their query, the excluded ones more, so a retriever that keeps them ranks them high. ``chunk``: documents
    generated at once (memory). Deterministic for a given ``seed`` (and counts).
    """
    rng = np.random.default_rng(seed)
    vocab = vocabulary(vocab_size, seed)
    p = _zipf_p(len(vocab), 1.07)
    word_chars = float(np.dot(p, [len(w) for w in vocab])) + 1.0  # a word and its space
    lo, mean_chars, hi = LEETCODE["doc_chars"]
    mu, sigma = _lognormal_for(mean_chars, hi, n_docs)
    chars = np.clip(rng.lognormal(mu, sigma, n_docs), lo, hi)
    doc_words = np.maximum(np.ceil(lo / word_chars), np.round(chars / word_chars)).astype(int)
    texts: list[str] = []
    for start in range(0, n_docs, chunk):
        texts += _texts_of_lengths(rng, doc_words[start : start + chunk], vocab, 1.07)
    doc_ids = [f"leetcode/leetcode_{i}.txt" for i in range(n_docs)]

    q_words = np.clip(rng.normal(LEETCODE["query_words"], LEETCODE["query_words"] * 0.45, n_queries), 60, 700).astype(
        int
    )
    query_texts = _texts_of_lengths(rng, q_words, vocab, 1.07)
    drawn_gold = rng.choice([1, 2, 3, 4, 5], size=n_queries, p=[0.5, 0.3, 0.1, 0.05, 0.05])  # mean 1.85
    e_lo, e_mean, e_hi = LEETCODE["excluded"]
    e_mu, e_sigma = _lognormal_for(e_mean, e_hi, n_queries)
    drawn_excluded = np.clip(rng.lognormal(e_mu, e_sigma, n_queries), e_lo, e_hi).astype(int)
    n_gold = drawn_gold if gold_counts is None else np.asarray(gold_counts[:n_queries], dtype=int)
    n_excluded = drawn_excluded if excluded_counts is None else np.asarray(excluded_counts[:n_queries], dtype=int)
    if len(n_gold) != n_queries or len(n_excluded) != n_queries:
        raise ValueError(f"{n_queries} queries, but gold / excluded counts for {len(n_gold)} / {len(n_excluded)}")

    queries, qrels, excluded = {}, {}, {}
    for q in range(n_queries):
        qid = str(q)
        words = query_texts[q].rstrip(".").split()
        picked = rng.choice(n_docs, size=min(n_docs, int(n_gold[q] + n_excluded[q])), replace=False)
        gold, excl = picked[: n_gold[q]], picked[n_gold[q] :]
        for i, n_shared in [(i, 8) for i in gold] + [(i, 12) for i in excl]:
            texts[i] = texts[i] + " " + " ".join(rng.choice(words, size=min(n_shared, len(words)), replace=False))
        queries[qid] = query_texts[q]
        qrels[qid] = {doc_ids[i]: 1 for i in gold}
        excluded[qid] = [doc_ids[i] for i in excl]
    return ExclusionCorpus(dict(zip(doc_ids, texts)), queries, qrels, excluded)


#: BRIGHT's real LeetCode examples (Anserini's copy; ../shared/data/bright/README.md)
LEETCODE_EXAMPLES = (
    Path(__file__).resolve().parents[2] / "shared" / "data" / "bright" / "examples" / "leetcode.jsonl.gz"
)


def leetcode_counts(path: str | Path = LEETCODE_EXAMPLES) -> tuple[list[int], list[int]]:
    """(gold ids, excluded ids) per query of BRIGHT LeetCode's real examples, in file order (142 queries:
    262 gold ids, 33,485 excluded ids; ``"N/A"`` counts as none)."""
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh if line.strip()]
    gold = [len([g for g in r["gold_ids"] if g != "N/A"]) for r in rows]
    excluded = [len({e for e in r["excluded_ids"] if e != "N/A"}) for r in rows]
    return gold, excluded


#: BRIGHT's hub dataset and r2med's default revision for BRIGHT's tasks (the commit mteb's BRIGHT v1.1 tasks read,
#: mteb@1fb1d57 mteb/tasks/retrieval/eng/bright_v1_1_retrieval.py; it holds examples and documents)
BRIGHT_REPO = "xlangai/BRIGHT"
BRIGHT_PIN = "3066d29c9651a576c8aba4832d249807b181ecae"


def bright_hub_files(corpus: ExclusionCorpus, task: str = "leetcode") -> dict[str, bytes]:
    """BRIGHT's hub files of ``task`` for ``corpus`` (path -> parquet bytes): ``examples/`` with BRIGHT's columns
    (``query``, ``reasoning``, ``id``, ``excluded_ids``, ``gold_ids_long``, ``gold_ids``, ``gold_answer``; the
    ones r2med does not read hold LeetCode's ``"N/A"``) and ``documents/`` (``id``, ``content``)."""
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    def parquet(table: pa.Table) -> bytes:
        out = io.BytesIO()
        pq.write_table(table, out)
        return out.getvalue()

    qids = list(corpus.queries)
    ids = pa.list_(pa.string())
    examples = pa.table(
        {
            "query": pa.array([corpus.queries[q] for q in qids], pa.string()),
            "reasoning": pa.array(["N/A"] * len(qids), pa.string()),
            "id": pa.array(qids, pa.string()),
            "excluded_ids": pa.array([corpus.excluded[q] or ["N/A"] for q in qids], ids),
            "gold_ids_long": pa.array([["N/A"]] * len(qids), ids),
            "gold_ids": pa.array([list(corpus.qrels[q]) for q in qids], ids),
            "gold_answer": pa.array(["N/A"] * len(qids), pa.string()),
        }
    )
    documents = pa.table(
        {"id": pa.array(list(corpus.docs), pa.string()), "content": pa.array(list(corpus.docs.values()), pa.string())}
    )
    name = f"{task}-00000-of-00001.parquet"
    return {f"examples/{name}": parquet(examples), f"documents/{name}": parquet(documents)}


def write_bright_hub(cache: str | Path, corpus: ExclusionCorpus, task: str = "leetcode") -> Path:
    """Lay ``corpus`` into the Hugging Face hub cache ``cache`` (``HF_HUB_CACHE``) as ``xlangai/BRIGHT`` task
    ``task`` at :data:`BRIGHT_PIN` (also the ``main`` ref), the files in the snapshot itself (a cache without
    links, which huggingface_hub reads as it reads its own); returns the snapshot folder.  With
    ``HF_HUB_OFFLINE=1`` and ``HF_HUB_CACHE=cache``, ``r2med evaluate -r bm25 --tasks bright:<task>`` runs on it."""
    repo = Path(cache) / f"datasets--{BRIGHT_REPO.replace('/', '--')}"
    snapshot = repo / "snapshots" / BRIGHT_PIN
    for rel, data in bright_hub_files(corpus, task).items():
        target = snapshot / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(target.name + ".tmp")
        tmp.write_bytes(data)
        tmp.replace(target)
    (repo / "refs").mkdir(parents=True, exist_ok=True)
    (repo / "refs" / "main").write_text(BRIGHT_PIN)
    return snapshot
