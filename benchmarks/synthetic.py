"""Synthetic corpora shaped like R2MED tasks and BRIGHT's LeetCode (Zipfian vocabulary of English-like pseudo-words).

``r2med_like``: an R2MED task's shape (61,379 docs of ~155 words, 100 queries of ~230 words).
``leetcode_like``: BRIGHT LeetCode's shape, with judgments and per-query excluded documents (see its docstring).
"""

from __future__ import annotations

from dataclasses import dataclass
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
) -> ExclusionCorpus:
    """A synthetic collection of BRIGHT LeetCode's shape (:data:`LEETCODE`), scaled to ``n_docs`` / ``n_queries``.

    Document lengths: a log-normal in characters fitted to LeetCode's mean and maximum (its shape in between is
    ASSUMED: mteb publishes min / mean / max only), clipped to the real minimum and maximum, turned into words by
    the synthetic vocabulary's mean word length. Per query: 1-5 gold documents (1.85 on average, LeetCode's 262 /
    142) and 9-1,119 excluded ones (a log-normal with LeetCode's mean, 235.8); both carry words of their query,
    the excluded ones more, so a retriever that keeps them ranks them high. ``chunk``: documents generated at once
    (memory). Deterministic for a given ``seed``.
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
    gold_counts = rng.choice([1, 2, 3, 4, 5], size=n_queries, p=[0.5, 0.3, 0.1, 0.05, 0.05])  # mean 1.85
    e_lo, e_mean, e_hi = LEETCODE["excluded"]
    e_mu, e_sigma = _lognormal_for(e_mean, e_hi, n_queries)
    excluded_counts = np.clip(rng.lognormal(e_mu, e_sigma, n_queries), e_lo, e_hi).astype(int)

    queries, qrels, excluded = {}, {}, {}
    for q in range(n_queries):
        qid = str(q)
        words = query_texts[q].rstrip(".").split()
        picked = rng.choice(n_docs, size=min(n_docs, int(gold_counts[q] + excluded_counts[q])), replace=False)
        gold, excl = picked[: gold_counts[q]], picked[gold_counts[q] :]
        for i, n_shared in [(i, 8) for i in gold] + [(i, 12) for i in excl]:
            texts[i] = texts[i] + " " + " ".join(rng.choice(words, size=min(n_shared, len(words)), replace=False))
        queries[qid] = query_texts[q]
        qrels[qid] = {doc_ids[i]: 1 for i in gold}
        excluded[qid] = [doc_ids[i] for i in excl]
    return ExclusionCorpus(dict(zip(doc_ids, texts)), queries, qrels, excluded)
