"""Synthetic corpora shaped like R2MED tasks (Zipfian vocabulary of English-like pseudo-words)."""

from __future__ import annotations

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
    ranks = np.arange(1, len(vocab) + 1, dtype=np.float64)
    p = ranks**-exponent
    p /= p.sum()
    lengths = np.maximum(5, rng.normal(mean_words, mean_words * 0.35, n_texts).astype(int))
    words = np.asarray(vocab, dtype=object)[rng.choice(len(vocab), size=int(lengths.sum()), p=p)]
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
