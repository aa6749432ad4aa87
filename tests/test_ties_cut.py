"""Ties at the depth cut (issue 40, item 8): documents whose score equals the last kept one's but that the top-k cut
dropped join the tied group, so a relevant one among them widens the range.  Checked against brute force: the
top-k rule's dropped ties against a plain sort of every score, and the ranges against pytrec_eval over the explicit
best and worst orders (and every order of small groups); the issue's case through BM25, dense, the sharded search
(equal to unsharded) and Ray; what is stored beside the run, reused, reported; and "unknown" for an imported run."""

from __future__ import annotations

import itertools
import json
import textwrap
from pathlib import Path

import numpy as np
import pytest
import pytrec_eval
from hypothesis import given, settings
from hypothesis import strategies as st

import r2med
from conftest import run_r2med
from r2med.data import load_folder
from r2med.errors import DataError
from r2med.evaluation.tie_data import CUT_TIES_CAP, CutTie
from r2med.evaluation.ties import evaluate_with_ties, tie_line
from r2med.jobs.evaluate import run_task
from r2med.measures import Measure
from r2med.retrieval.bm25 import BM25
from r2med.retrieval.dense import exact_top_k_cut
from r2med.retrieval.topk import merge_top_k_cut, top_k_rows_cut
from r2med.runs.record import parse_record
from r2med.runs.run import CUT_TIES_FILE, read_cut_ties
from r2med.scale import ShardedBM25
from r2med.scale.dense import ShardedDenseIndex
from r2med.steps import EvaluateStep

# -- the top-k rule's dropped ties against a plain sort ------------------------------------------------


def brute_dropped(row: np.ndarray, k: int) -> tuple[list[int], list[int]]:
    """(kept positions, dropped tied positions) by a stable sort of every score (ties by position)."""
    order = sorted(range(len(row)), key=lambda i: (-row[i], i))
    kept = order[:k]
    if len(row) <= k or row[kept[-1]] == -np.inf:
        return kept, []
    kth = row[kept[-1]]
    return kept, [i for i in order[k:] if row[i] == kth]


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 6),
    st.integers(1, 80),
    st.integers(1, 30),
    st.integers(1, 5),
    st.integers(0, 10_000),
    st.floats(0, 0.5),
)
def test_dropped_ties_equal_a_plain_sort_however_the_columns_are_split(n_q, n_d, k, parts, seed, excluded):
    rng = np.random.default_rng(seed)
    scores = rng.integers(-2, 3, size=(n_q, n_d)).astype(np.float32)  # few values: ties everywhere, zeros too
    scores[rng.random((n_q, n_d)) < excluded] = -np.inf
    positions, values, cut = top_k_rows_cut(scores, k)
    bounds = sorted({0, n_d, *rng.integers(0, n_d, size=parts - 1).tolist()})
    split = [top_k_rows_cut(scores[:, lo:hi], k, offset=lo) for lo, hi in zip(bounds, bounds[1:]) if hi > lo]
    merged = merge_top_k_cut(split, k)
    for r in range(n_q):
        kept, dropped = brute_dropped(scores[r], k)
        assert positions[r].tolist() == kept and merged[0][r].tolist() == kept
        for found in (cut, merged[2]):
            if dropped:
                assert found[r][0].tolist() == dropped[:CUT_TIES_CAP] and found[r][1] == len(dropped)
            else:
                assert r not in found
    assert np.array_equal(values, merged[1])


def test_the_cap_keeps_the_first_ids_and_counts_them_all():
    row = np.zeros((1, CUT_TIES_CAP + 300), dtype=np.float32)
    row[0, :5] = [5, 4, 3, 2, 1]
    _, _, cut = top_k_rows_cut(row, 10)
    ids, total = cut[0]
    assert total == CUT_TIES_CAP + 300 - 10 and ids.tolist() == list(range(10, 10 + CUT_TIES_CAP))
    parts = [top_k_rows_cut(row[:, lo : lo + 400], 10, offset=lo) for lo in range(0, row.shape[1], 400)]
    merged = merge_top_k_cut(parts, 10)[2]
    assert merged[0][0].tolist() == ids.tolist() and merged[0][1] == total


# -- the ranges against pytrec_eval over explicit orders -----------------------------------------------


def pytrec_value(order: list[str], qrels: dict[str, int], measure: str) -> float:
    """``measure`` of one ranking (list order) by pytrec_eval itself."""
    run = {"q": {d: float(len(order) - i) for i, d in enumerate(order)}}
    family, _, cutoff = measure.rpartition("_")
    spec = {f"{family}.{cutoff}"} if cutoff.isdigit() else {measure}
    return pytrec_eval.RelevanceEvaluator({"q": qrels}, spec).evaluate(run)["q"][measure]


def every_cut_order(run: dict[str, float], dropped: list[str]):
    """Every ranking of the run's length when ``dropped`` tie with its last score (brute force: each order of
    the tied group, kept and dropped together, cut back to the run's length)."""
    last = min(run.values())
    above = sorted((d for d, s in run.items() if s > last), key=lambda d: -run[d])
    group = [d for d, s in run.items() if s == last] + dropped
    for perm in itertools.permutations(group):
        yield (above + list(perm))[: len(run)]


@pytest.mark.parametrize(
    ("run", "dropped", "qrels"),
    [
        # a relevant dropped document: the best lets it in
        ({"a": 3.0, "b": 2.0, "c": 1.0, "d": 1.0}, ["e", "f"], {"a": 1, "f": 1}),
        # a relevant kept one at the cut: the worst pushes it out
        ({"a": 3.0, "b": 1.0, "c": 1.0}, ["d", "e"], {"c": 2, "a": 1}),
        # both, graded
        ({"a": 1.0, "b": 1.0}, ["c", "d", "e"], {"b": 1, "e": 2}),
    ],
)
def test_ranges_with_dropped_ties_equal_every_order_by_pytrec_eval(run, dropped, qrels):
    measures = ["recall_2", "P_2", "ndcg_cut_3", "map_cut_3", "recip_rank", "recall_3"]
    metrics = evaluate_with_ties({"q": run}, {"q": qrels}, measures, cut={"q": CutTie(tuple(dropped), len(dropped))})
    for m in measures:
        values = [pytrec_value(order, qrels, m) for order in every_cut_order(run, dropped)]
        reported = metrics.per_query["q"][m]
        best, worst = metrics.ties.per_query.get("q", {}).get(m, (reported, reported))
        assert (best, worst) == pytest.approx((max(values), min(values)), abs=1e-12), m
    assert metrics.ties.tied_queries == 1 and metrics.ties.cut is not None and metrics.ties.cut.queries == 1


def test_without_the_cut_the_same_run_says_unknown_and_with_an_empty_one_none():
    run = {"q": {"a": 2.0, "b": 1.0}}
    qrels = {"q": {"a": 1, "z": 1}}
    unknown = evaluate_with_ties(run, qrels, ["recall_2"]).ties
    assert unknown.cut is None and "cut" not in unknown.to_json()
    none = evaluate_with_ties(run, qrels, ["recall_2"], cut={}).ties
    assert none.to_json() == {"tied_queries": 0, "measures": {}, "per_query": {}, "cut": {"queries": 0, "capped": 0}}
    # a capped group says so in the line
    wide = evaluate_with_ties(
        {"q": {"a": 1.0, "b": 1.0}}, {"q": {"z": 1, "b": 1}}, ["recall_2"], cut={"q": CutTie(("z",), 5000)}
    ).ties
    line = tie_line(wide, [Measure.parse("recall_2")])
    assert line is not None and line.endswith(
        f"; 1 query tied more than {CUT_TIES_CAP:,} documents at the depth cut "
        "(the first taken: the range may be wider)"
    )


# -- the issue's case through every retriever path ---------------------------------------------------

RELEVANT_DROPPED = "d190"


def issue_collection(folder: Path) -> Path:
    """51 documents match the query (distinct positive BM25 scores: each a different length), 149 do not (score
    0); relevant: d000 (matching) and d190 (not matching, late in corpus order).  At depth 100, 49 of the 149 zeros
    are kept (d051..d099) and d190 is among the 100 the cut drops."""
    folder.mkdir(parents=True)
    docs = {}
    for i in range(200):
        words = " ".join(f"w{i}x{j}" for j in range(i))
        docs[f"d{i:03d}"] = f"alpha {words}" if i <= 50 else f"beta gamma {words}"
    (folder / "corpus.jsonl").write_text("".join(json.dumps({"id": d, "text": t}) + "\n" for d, t in docs.items()))
    (folder / "query.jsonl").write_text(json.dumps({"id": "q1", "text": "alpha"}) + "\n")
    rows = [("q1", "d000", 1), ("q1", RELEVANT_DROPPED, 1)]
    (folder / "qrels.jsonl").write_text(
        "".join(json.dumps({"q_id": q, "p_id": d, "score": g}) + "\n" for q, d, g in rows)
    )
    return folder


def explicit_orders(run: dict[str, float]) -> tuple[float, float]:
    """R@100 of the best and worst orders written out by hand: the run's positive documents as ranked, then the
    149 non-matching documents (score 0), relevant d190 first (best) or last (worst), cut at 100 -- scored by
    pytrec_eval."""
    matching = [d for d, s in sorted(run.items(), key=lambda item: -item[1]) if s > 0]
    zeros = [f"d{i:03d}" for i in range(51, 200)]
    others = [d for d in zeros if d != RELEVANT_DROPPED]
    qrels = {"d000": 1, RELEVANT_DROPPED: 1}
    best = (matching + [RELEVANT_DROPPED] + others)[:100]
    worst = (matching + others + [RELEVANT_DROPPED])[:100]
    return pytrec_value(best, qrels, "recall_100"), pytrec_value(worst, qrels, "recall_100")


def check_issue_case(folder: Path) -> dict:
    """The task folder of the issue's case holds R@100 0.5, its range (best, worst) as the explicit orders give
    it, tied_queries 1, and the dropped ties beside the run; returns the ties block."""
    stored = json.loads((folder / "metrics.json").read_text())
    run = r2med.read_trec(folder / "run.trec")["q1"]
    assert len(run) == 100 and stored["aggregate"]["recall_100"] == 0.5
    best, worst = explicit_orders(run)
    assert (best, worst) == (1.0, 0.5)  # and by hand: d190 in the top 100 finds both relevant documents
    block = stored["ties"]
    assert block["tied_queries"] == 1 and block["cut"] == {"queries": 1, "capped": 0}
    assert block["measures"]["recall_100"] == {"queries": 1, "best": best, "worst": worst}
    cut = read_cut_ties(folder)
    assert cut is not None and cut["q1"].total == 100 and RELEVANT_DROPPED in cut["q1"].ids
    assert cut["q1"].ids == tuple(f"d{i:03d}" for i in range(100, 200))  # corpus order after the 49 kept
    return block


def test_bm25_the_issues_case_is_a_range_stored_reused_and_reported(tmp_path):
    data = issue_collection(tmp_path / "data" / "cutcase")
    out = tmp_path / "out"
    done = run_r2med("evaluate", "-r", "bm25", "-d", str(data), "-m", "R@100", "-o", str(out))
    assert done.returncode == 0, done.stderr
    folder = out / "bm25" / "cutcase"
    block = check_issue_case(folder)
    assert "1 of 1 queries depend on the order of tied documents; R@100 50.00 (range 50.00–100.00)" in " ".join(
        done.stdout.split()
    )
    # reused: the same ranges, from the file beside the run (nothing searched again)
    again = run_r2med("evaluate", "-r", "bm25", "-d", str(data), "-m", "R@100", "-o", str(out))
    assert again.returncode == 0 and "(range 50.00–100.00)" in " ".join(again.stdout.split())
    assert "reusing finished results" in again.stderr
    assert json.loads((folder / "metrics.json").read_text())["ties"] == block
    # report reads the stored block
    report = json.loads(run_r2med("report", str(out / "bm25"), "-m", "R@100", "-f", "json").stdout)
    (system,) = report["systems"]
    assert system["cells"]["cutcase"]["ties"] == {"worst": 50.0, "best": 100.0}
    # an imported copy of the same run.trec cannot know what its cut dropped: no range, and "unknown", not none
    imported = run_r2med(
        "import", str(folder / "run.trec"), "-d", str(data), "--name", "copy", "-m", "R@100", "-o", str(out)
    )
    assert imported.returncode == 0, imported.stderr
    copy = json.loads((out / "copy" / "cutcase" / "metrics.json").read_text())["ties"]
    assert copy == {"tied_queries": 0, "measures": {}, "per_query": {}}  # no "cut": unknown
    assert not (out / "copy" / "cutcase" / CUT_TIES_FILE).exists()
    # compare reads both stored blocks: the same run, and only the one that knows its cut has a range
    compared = run_r2med("compare", str(out / "copy"), str(out / "bm25"), "-m", "R@100")
    assert compared.returncode == 0, compared.stderr
    assert "(copy 50.00, no ties deciding it, bm25 50.00–100.00)" in " ".join(compared.stderr.split())


def test_an_old_folder_without_the_file_reads_as_unknown_and_a_bad_file_is_recomputed(tmp_path):
    data = issue_collection(tmp_path / "data" / "cutcase")
    out = tmp_path / "out"
    collection = load_folder(data)
    step = EvaluateStep.of("bm25", measures=["R@100"])
    run_task(collection, step, out / "bm25")
    folder = out / "bm25" / "cutcase"
    (folder / CUT_TIES_FILE).write_text('{"cap": 1000, "queries": {"q1": {"total": 0, "ids": ["d1"]}}}')
    with pytest.raises(DataError, match=r"cut_ties.json: cut ties: queries\['q1'\].total") as caught:
        read_cut_ties(folder)
    assert "\n" not in str(caught.value)
    redone = run_task(collection, step, out / "bm25")  # unreadable results are replaced
    assert not redone.reused and read_cut_ties(folder)["q1"].total == 100
    (folder / CUT_TIES_FILE).unlink()  # as a folder written before r2med recorded the cut
    old = run_task(collection, step, out / "bm25")
    assert old.reused and old.metrics.ties.cut is None and read_cut_ties(folder) is None
    assert old.metrics.ties.tied_queries == 0  # what the run alone shows


def test_the_ties_block_reader_takes_the_cut_and_refuses_a_bad_one(tmp_path):
    data = issue_collection(tmp_path / "data" / "cutcase")
    out = tmp_path / "out"
    run_task(load_folder(data), EvaluateStep.of("bm25", measures=["R@100"]), out / "bm25")
    path = out / "bm25" / "cutcase" / "metrics.json"
    stored = json.loads(path.read_text())
    assert parse_record(stored, path).ties["cut"] == {"queries": 1, "capped": 0}
    for damage, message in (
        ({"queries": 1}, "ties.cut must be an object of queries and capped"),
        ({"queries": 1, "capped": 2}, "ties.cut.capped 2 is above ties.cut.queries 1"),
        ({"queries": -1, "capped": 0}, "ties.cut.queries must be a whole number"),
    ):
        broken = json.loads(json.dumps(stored))
        broken["ties"]["cut"] = damage
        with pytest.raises(DataError, match=message):
            parse_record(broken, path)


ENCODER = textwrap.dedent(
    """
    import numpy as np

    class AlphaEncoder:
        '''Exact vectors: a query is (1, 0); a document naming "alpha" is (1 + its length / 1000, 0), any other
        (0, 1) -- scores by dot product: distinct positives, and exactly 0 for the rest.'''
        name = "alpha-2"
        revision = "1"
        similarity = "dot"

        def encode(self, texts, role):
            if role == "query":
                return np.array([[1.0, 0.0] for _ in texts], dtype=np.float32)
            return np.array(
                [[1.0 + len(t) / 1000, 0.0] if t.startswith("alpha") else [0.0, 1.0] for t in texts], dtype=np.float32
            )
    """
)


def test_dense_the_issues_case_is_the_same_range(tmp_path):
    data = issue_collection(tmp_path / "data" / "cutcase")
    module = tmp_path / "alpha_encoder.py"
    module.write_text(ENCODER)
    out = tmp_path / "out"
    done = run_r2med(
        "evaluate",
        "-r",
        "custom",
        "--encoder",
        f"{module}:AlphaEncoder",
        "-d",
        str(data),
        "-m",
        "R@100",
        "-o",
        str(out),
    )
    assert done.returncode == 0, done.stderr
    check_issue_case(out / "custom-AlphaEncoder" / "cutcase")


def test_dense_exact_search_and_its_shards_drop_the_same_ties():
    rng = np.random.default_rng(3)
    docs = np.zeros((300, 4), dtype=np.float32)
    docs[:40] = rng.standard_normal((40, 4))
    docs[40:, 3] = 1.0  # 260 documents at one score for a query with 0 in the last place
    queries = rng.standard_normal((5, 4)).astype(np.float32)
    queries[:, 3] = 0.0
    scores, idx, cut = exact_top_k_cut(queries, docs, 100, chunk=37, device="cpu")
    for r in range(5):
        kept, dropped = brute_dropped(queries[r] @ docs.T, 100)
        assert idx[r].tolist() == kept and cut[r][0].tolist() == dropped and cut[r][1] == len(dropped)
    _, torch_idx, torch_cut = exact_top_k_cut(queries, docs, 100, chunk=37, device="cpu", torch_products=True)
    assert np.array_equal(torch_idx, idx) and {r: (p.tolist(), n) for r, (p, n) in torch_cut.items()} == {
        r: (p.tolist(), n) for r, (p, n) in cut.items()
    }
    ids = [f"d{i:03d}" for i in range(300)]
    qids = [f"q{r}" for r in range(5)]
    index = ShardedDenseIndex.from_arrays(ids, [docs[:90], docs[90:200], docs[200:]])
    sharded = index.search(queries, qids, k=100, ignore_identical_ids=False)
    assert sharded == {q: {ids[j]: float(s) for s, j in zip(scores[r], idx[r])} for r, q in enumerate(qids)}
    assert index.cut_ties == {qids[r]: CutTie(tuple(ids[p] for p in pos), n) for r, (pos, n) in cut.items()}


def test_sharded_bm25_drops_the_same_ties_as_bm25(tmp_path):
    collection = load_folder(issue_collection(tmp_path / "cutcase"))
    queries = {"q1": "alpha", "q2": "beta", "q3": "alpha beta", "q4": "nothing"}
    single = BM25(cache=False).index(collection.corpus)
    run = single.search(queries, k=100)
    assert single.cut_ties is not None and set(single.cut_ties) == {"q1", "q4"}  # q2/q3 match 149/200 documents
    for shards in (2, 3, 7):
        sharded = ShardedBM25(shards=shards).index(collection.corpus)
        assert sharded.search(queries, k=100) == run and sharded.cut_ties == single.cut_ties
    metrics = evaluate_with_ties(run, collection.qrels, ["recall_100"], cut=single.cut_ties)
    assert metrics.ties.aggregate["recall_100"].best == 1.0 and metrics.ties.tied_queries == 1


@pytest.mark.slow(seconds=25)  # a local Ray cluster starts
def test_ray_sharded_bm25_and_a_ray_cell_record_the_same_cut(tmp_path, r2med_home):
    ray = pytest.importorskip("ray", reason="ray is not installed (the scale extra)")
    from r2med.jobs.ray import MatrixJob, evaluate_matrix

    data = issue_collection(tmp_path / "data" / "cutcase")
    collection = load_folder(data)
    single = BM25(cache=False).index(collection.corpus)
    run = single.search({"q1": "alpha"}, k=100)
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
    try:
        sharded = ShardedBM25(shards=3, ray=True).index(collection.corpus)
        assert sharded.search({"q1": "alpha"}, k=100) == run and sharded.cut_ties == single.cut_ties
        cell = MatrixJob.of(
            EvaluateStep.of("bm25", out=tmp_path / "out", measures=["R@100"]), "cutcase", lambda: collection
        )
        (result,) = evaluate_matrix([cell])
    finally:
        ray.shutdown()
    block = check_issue_case(tmp_path / "out" / "bm25" / "cutcase")
    assert result.metrics.ties.to_json() == block


def test_fusion_records_its_own_cut_and_the_range_lets_the_dropped_tie_in():
    from r2med.runs.fusion import fuse, fuse_cut

    # RRF by hand: a and c both get 1/61 + 1/63, b 2/62 (lower); at depth 1 trec_eval's order keeps c (ids descending)
    first = {"q": {"a": 3.0, "b": 2.0, "c": 1.0}}
    second = {"q": {"c": 3.0, "b": 2.0, "a": 1.0}}
    run, cut = fuse_cut([first, second], "rrf", depth=1)
    assert run == fuse([first, second], "rrf", depth=1) == {"q": {"c": 1 / 61 + 1 / 63}}
    assert cut == {"q": CutTie(("a",), 1)}
    qrels = {"q": {"a": 1}}
    metrics = evaluate_with_ties(run, qrels, ["recall_1"], cut=cut)
    assert metrics.per_query["q"]["recall_1"] == 0.0
    best = pytrec_value(["a"], qrels["q"], "recall_1")
    worst = pytrec_value(["c"], qrels["q"], "recall_1")
    assert metrics.ties.per_query["q"]["recall_1"] == (best, worst) == (1.0, 0.0)
    # nothing tied at the cut: known, and none
    assert fuse_cut([first, second], "rrf", depth=2)[1] == {}
