"""A corpus with repeated ids: BM25 reads it as the paper's BM25 script does, dense as its dense loader does.

The reference for BM25 is the paper's pipeline rebuilt from its description (R2MED ``src/eval_bench_BM25.py``):
the corpus file read line by line into two lists (every copy of a repeated id indexed), gensim
``LuceneBM25Model(k1=0.9, b=0.4)`` + ``SparseMatrixSimilarity`` over the same tokens, and the scores
poured into a dict keyed by doc id in list order (a later copy's score overwrites an earlier one's), then
the top 100 by score.  Dense keeps the dict reading (each id once, its last record), as the paper's dense
loader (BEIR's) does.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pytest

from r2med.data import load_folder
from r2med.jobs.evaluate import run_task
from r2med.retrieval.analyzer import EnglishAnalyzer
from r2med.runs.record import read_record
from r2med.runs.run import read_trec
from r2med.steps import EvaluateStep
from test_data import make_r2med
from test_dense_fixtures import bert_dir  # noqa: F401

WORDS = (
    "insulin glucose aspirin heart kidney liver fever cough rash virus gene cell drug dose pain "
    "blood pressure lung tumour infection"
).split()


def repeated_corpus(seed: int = 0, n: int = 40) -> list[dict[str, str]]:
    """Random short docs, then copies of some ids: identical ones and ones with another text."""
    rng = np.random.default_rng(seed)
    docs = [{"id": f"d{i}", "text": " ".join(rng.choice(WORDS, int(rng.integers(3, 12))))} for i in range(n)]
    identical = [dict(docs[i]) for i in (3, 7, 7, 11)]
    changed = [{"id": f"d{i}", "text": " ".join(rng.choice(WORDS, int(rng.integers(3, 12))))} for i in (5, 11, 20, 5)]
    rows = docs[:25] + identical[:2] + changed[:2] + docs[25:] + identical[2:] + changed[2:]
    return rows


QUERIES = [
    {"id": f"q{j}", "text": text}
    for j, text in enumerate(
        [
            "insulin glucose blood",
            "aspirin heart pain",
            "virus infection fever cough",
            "kidney liver drug dose",
            "gene cell tumour",
            "lung pressure rash",
        ]
    )
]


def paper_list_reading(root: Path, k: int = 100) -> dict[str, dict[str, float]]:
    """The paper's BM25 pipeline on the corpus read as a list (see the module docstring)."""
    from gensim.corpora import Dictionary
    from gensim.models import LuceneBM25Model
    from gensim.similarities import SparseMatrixSimilarity

    doc_ids, documents = [], []
    for line in (root / "corpus.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        doc_ids.append(record["id"])
        documents.append(record["text"])
    analyzer = EnglishAnalyzer()
    corpus = [analyzer.tokenize(text) for text in documents]
    dictionary = Dictionary(corpus)
    model = LuceneBM25Model(dictionary=dictionary, k1=0.9, b=0.4)
    index = SparseMatrixSimilarity(
        model[list(map(dictionary.doc2bow, corpus))],
        num_docs=len(corpus),
        num_terms=len(dictionary),
        normalize_queries=False,
        normalize_documents=False,
    )
    results: dict[str, dict[str, float]] = {}
    for line in (root / "query.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        scores = index[model[dictionary.doc2bow(analyzer.tokenize(record["text"]))]].tolist()
        by_id: dict[str, float] = {}
        for did, score in zip(doc_ids, scores):
            by_id[did] = score  # a later copy's score overwrites the earlier one's
        results[record["id"]] = dict(sorted(by_id.items(), key=lambda pair: pair[1], reverse=True)[:k])
    return results


@pytest.fixture
def repeated(tmp_path: Path) -> Path:
    return make_r2med(
        tmp_path / "c",
        corpus=repeated_corpus(),
        queries=QUERIES,
        qrels=[{"q_id": "q0", "p_id": "d5", "score": 1}, {"q_id": "q1", "p_id": "d11", "score": 1}],
    )


@pytest.mark.parametrize("cache", [True, False])
def test_bm25_scores_a_repeated_corpus_as_the_papers_list_reading(repeated, tmp_path, cache):
    pytest.importorskip("gensim")
    coll = load_folder(repeated)
    assert len(coll.corpus) == 40 and len(coll.corpus_repeats) == 8
    result = run_task(coll, EvaluateStep.of("bm25", cache=cache, top_k=100), tmp_path / "out")
    reference = paper_list_reading(repeated)
    run = read_trec(tmp_path / "out" / "c" / "run.trec")
    assert set(run) == set(reference)
    for qid, ref in reference.items():
        ours = run[qid]
        assert set(ours) == set(ref), qid  # k=100 > 40 ids: every id once
        for did, score in ref.items():
            assert ours[did] == pytest.approx(score, abs=1e-4), (qid, did)
    assert read_record(tmp_path / "out" / "c").to_json()["config"]["corpus_repeats"] == 8
    assert result.config is not None and result.config.corpus_repeats == 8


def test_bm25_repeats_change_the_scores_and_the_index_key(repeated, tmp_path):
    """The repeats matter (the test above would catch a dict reading), and a cached index of the same ids
    without them is never reused for them."""
    from r2med.retrieval.bm25 import BM25

    coll = load_folder(repeated)
    plain = BM25().index(coll.corpus, corpus_fingerprint=coll.fingerprint)
    listed = BM25().index(coll.corpus, corpus_fingerprint=coll.fingerprint, repeats=coll.corpus_repeats)
    assert plain.index_path != listed.index_path
    queries = [q["text"] for q in QUERIES]
    assert np.abs(plain.score_matrix(queries) - listed.score_matrix(queries)).max() > 1e-3
    assert listed.doc_ids == list(coll.corpus)


def test_strict_still_refuses_the_repeated_corpus(repeated):
    from r2med.errors import DataError

    with pytest.raises(DataError, match=r"corpus.jsonl:26: duplicate id 'd3'"):
        load_folder(repeated, strict=True)


def test_the_repeats_are_counted_in_the_warnings(repeated, caplog):
    with caplog.at_level(logging.WARNING):
        load_folder(repeated)
    messages = [r.getMessage() for r in caplog.records if "corpus.jsonl" in r.getMessage()]
    assert any(
        "3 repeated id(s) identical to an earlier line dropped (BM25 indexes every copy, as the paper's "
        "BM25 script does) (d3, d7, d7)" in m
        for m in messages
    )
    assert any(
        "5 id(s) repeated with a different record: the last one is kept, as the paper's loader does "
        "(BM25 also indexes the earlier copies" in m
        for m in messages
    )


def test_dense_keeps_the_dict_reading(repeated, tmp_path, bert_dir):
    """Dense sees each id once, its last record: the same run as a corpus written without the repeats."""
    coll = load_folder(repeated)
    last_only = make_r2med(
        tmp_path / "d",
        corpus=[{"id": d, "text": t} for d, t in coll.corpus.items()],
        queries=QUERIES,
        qrels=[{"q_id": "q0", "p_id": "d5", "score": 1}],
    )
    options = {"model": bert_dir, "pooling": "mean", "max_length": 32, "device": "cpu", "cache": False}
    with_repeats = run_task(coll, EvaluateStep.of("dense", **options, top_k=10), tmp_path / "o1")
    without = run_task(load_folder(last_only), EvaluateStep.of("dense", **options, top_k=10), tmp_path / "o2")
    assert "corpus_repeats" not in with_repeats.config
    ours, ref = read_trec(tmp_path / "o1" / "c" / "run.trec"), read_trec(tmp_path / "o2" / "d" / "run.trec")
    assert ours == ref
    assert without.metrics.aggregate  # scored


@pytest.mark.parametrize("shards", [1, 3])
def test_sharded_bm25_counts_the_repeats_as_bm25_does(repeated, shards):
    """r2med.scale's ShardedBM25 reads the corpus as a list too: the same run as the unsharded index."""
    from r2med.retrieval.bm25 import BM25
    from r2med.scale.bm25 import ShardedBM25

    coll = load_folder(repeated)
    queries = {q["id"]: q["text"] for q in QUERIES}
    whole = BM25(cache=False).index(coll.corpus, repeats=coll.corpus_repeats).search(queries, k=100)
    sharded = ShardedBM25(shards=shards).index(coll.corpus, repeats=coll.corpus_repeats).search(queries, k=100)
    assert {q: list(d) for q, d in sharded.items()} == {q: list(d) for q, d in whole.items()}
    for qid, docs in whole.items():
        assert sharded[qid] == pytest.approx(docs, abs=1e-6)
    plain = ShardedBM25(shards=shards).index(coll.corpus).search(queries, k=100)
    assert any(plain[q] != pytest.approx(whole[q], abs=1e-6) for q in whole)  # the repeats matter here
