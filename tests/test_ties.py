"""Ties that decide a measure (issue 26, part 4): the ranges of :mod:`r2med.evaluation.ties` against a brute force
over every order of the tied documents, each order scored by pytrec_eval itself; then what the commands, the
record, the report and compare say about them."""

from __future__ import annotations

import itertools
import json
import math
import random
from pathlib import Path

import pytest
import pytrec_eval
from hypothesis import given, settings
from hypothesis import strategies as st

import r2med
from conftest import run_r2med, shared_collection
from r2med.data import load_folder
from r2med.errors import DataError
from r2med.evaluation.metrics import DEFAULT_MEASURES, evaluate
from r2med.evaluation.ties import TIED_MARK, evaluate_with_ties, tie_line
from r2med.measures import DEFAULT_MEASURES as MEASURE_VALUES
from r2med.measures import Measure
from r2med.runs.record import parse_record, read_record
from r2med.runs.run import read_cut_ties

CUTS = (1, 2, 3, 5, 10)
ALL_MEASURES = tuple(f"{f}_{k}" for f in ("ndcg_cut", "map_cut", "recall", "P") for k in CUTS) + ("recip_rank",)


def _spec(measures):
    """pytrec_eval's measure set, written out here (not r2med's spelling code)."""
    families: dict[str, list[str]] = {}
    plain = set()
    for m in measures:
        if m == "recip_rank":
            plain.add(m)
        else:
            family, _, k = m.rpartition("_")
            families.setdefault(family, []).append(k)
    return plain | {f"{f}.{','.join(ks)}" for f, ks in families.items()}


def every_order(docs: dict[str, float]):
    """Every ranking of ``docs`` that keeps score order between tied groups (itertools.permutations of each)."""
    by_score: dict[float, list[str]] = {}
    for d, s in docs.items():
        by_score.setdefault(s, []).append(d)
    groups = [by_score[s] for s in sorted(by_score, reverse=True)]
    for parts in itertools.product(*(itertools.permutations(g) for g in groups)):
        yield [d for part in parts for d in part]


def brute_force(run, qrels, measures, count_missing=False):
    """Per query and averaged: (max, min) of each measure over every order of the tied documents, each order
    scored by pytrec_eval (one pseudo-query per order), and the queries whose value the order changes."""
    pseudo_run, pseudo_qrels, owner = {}, {}, {}
    for q, docs in run.items():
        if q not in qrels or not docs:
            continue
        for i, order in enumerate(every_order(docs)):
            key = f"{q}#{i}"
            pseudo_run[key] = {d: float(len(order) - r) for r, d in enumerate(order)}
            pseudo_qrels[key] = qrels[q]
            owner[key] = q
    values = pytrec_eval.RelevanceEvaluator(pseudo_qrels, _spec(measures)).evaluate(pseudo_run)
    per_query: dict[str, dict[str, tuple[float, float]]] = {}
    for key, row in values.items():
        q = owner[key]
        seen = per_query.setdefault(q, {m: (-math.inf, math.inf) for m in measures})
        for m in measures:
            hi, lo = seen[m]
            seen[m] = (max(hi, row[m]), min(lo, row[m]))
    if count_missing:
        for q in qrels:
            per_query.setdefault(q, {m: (0.0, 0.0) for m in measures})
    n = len(per_query)
    aggregate = {
        m: (sum(v[m][0] for v in per_query.values()) / n, sum(v[m][1] for v in per_query.values()) / n)
        for m in measures
    }
    depends = {m: sorted(q for q, v in per_query.items() if v[m][0] - v[m][1] > 1e-9) for m in measures}
    return per_query, aggregate, depends


def assert_matches_brute_force(run, qrels, measures, count_missing=False):
    metrics = evaluate_with_ties(run, qrels, measures, count_missing=count_missing)
    ties = metrics.ties
    per_query, aggregate, depends = brute_force(run, qrels, measures, count_missing)
    assert set(per_query) == set(metrics.per_query)
    for m in measures:
        for q, ranges in per_query.items():
            hi, lo = ranges[m]
            got = ties.per_query.get(q, {}).get(m)
            if q in depends[m]:
                assert got == pytest.approx((hi, lo), abs=1e-12), (q, m)
            else:
                assert got is None, (q, m)
                assert metrics.per_query[q][m] == pytest.approx(hi, abs=1e-12)
            assert lo - 1e-12 <= metrics.per_query[q][m] <= hi + 1e-12  # trec_eval's order is one of them
        r = ties.aggregate[m]
        assert (r.best, r.worst) == pytest.approx(aggregate[m], abs=1e-12), m
        assert r.queries == len(depends[m]) and r.reported == metrics.aggregate[m]
    return metrics


def test_a_tie_straddling_the_cut_off_a_tie_at_the_last_rank_and_graded_gains():
    run = {
        # d2, d3, d4 tie across rank 3 (P@3, R@3, nDCG@3 ... depend on it); d6, d7 tie at the last rank
        "q1": {"d1": 9.0, "d2": 5.0, "d3": 5.0, "d4": 5.0, "d5": 2.0, "d6": 1.0, "d7": 1.0},
        # a tie of a grade-2 and a grade-1 document at the top: only nDCG sees their order
        "q2": {"a": 3.0, "b": 3.0, "c": 1.0},
        # no relevant document at all, ties everywhere
        "q3": {"x": 1.0, "y": 1.0, "z": 1.0},
        # a tie at the run's last ranks, holding its only relevant document
        "q4": {"a": 3.0, "b": 1.0, "c": 1.0},
    }
    qrels = {
        "q1": {"d3": 1, "d4": 2, "d7": 1, "gone": 1},  # "gone" is relevant but not retrieved
        "q2": {"a": 1, "b": 2},
        "q3": {"x": 0, "y": -1},
        "q4": {"c": 1},
    }
    metrics = assert_matches_brute_force(run, qrels, ALL_MEASURES)
    ties = metrics.ties
    assert "q3" not in ties.per_query and ties.tied_queries == 3
    assert ties.per_query["q4"]["recip_rank"] == (0.5, pytest.approx(1 / 3)) and "P_3" not in ties.per_query["q4"]
    # q2: both documents relevant, so P, R, MAP, MRR do not depend on their order; nDCG does
    assert set(ties.per_query["q2"]) == {f"ndcg_cut_{k}" for k in CUTS}
    # q1: the tie at ranks 2-4 decides P@3 but not P@1 or P@5 (it lies whole inside the top 5), and MRR (its
    # first relevant document is in it); R@10 holds every document
    decided = set(ties.per_query["q1"])
    assert {"P_3", "recall_3", "ndcg_cut_5", "map_cut_10", "recip_rank"} <= decided
    assert not {"P_1", "P_5", "recall_10"} & decided
    assert ties.per_query["q1"]["recip_rank"] == (0.5, pytest.approx(1 / 3))  # one irrelevant doc before d3


def test_negative_grades_and_unjudged_documents_count_as_not_relevant():
    run = {"q": {"neg": 2.0, "zero": 2.0, "unjudged": 2.0, "rel": 2.0}}
    qrels = {"q": {"neg": -2, "zero": 0, "rel": 3}}
    assert_matches_brute_force(run, qrels, ALL_MEASURES)
    only_irrelevant = {"q": {"neg": 2.0, "zero": 2.0, "unjudged": 2.0, "rel": 5.0}}
    assert evaluate_with_ties(only_irrelevant, qrels).ties.per_query == {}


def test_count_missing_queries_are_zero_at_both_ends():
    run = {"q1": {"a": 1.0, "b": 1.0}}
    qrels = {"q1": {"b": 1}, "q2": {"c": 1}}
    metrics = assert_matches_brute_force(run, qrels, ALL_MEASURES, count_missing=True)
    assert metrics.ties.queries == 2
    assert metrics.ties.aggregate["P_1"].best == pytest.approx(0.5) and metrics.ties.aggregate["P_1"].worst == 0


def test_the_average_range_is_the_extreme_over_joint_orders_of_all_queries():
    run = {"q1": {"a": 1.0, "b": 1.0, "c": 1.0, "d": 0.5, "e": 0.5}, "q2": {"x": 2.0, "y": 2.0, "z": 2.0}}
    qrels = {"q1": {"b": 1, "e": 2}, "q2": {"z": 1, "y": 2}}
    measures = ("ndcg_cut_2", "map_cut_3", "P_1", "recip_rank")
    orders = {q: list(every_order(docs)) for q, docs in run.items()}
    values = {}
    for q, qs in orders.items():
        pseudo = {f"{q}#{i}": {d: float(len(o) - r) for r, d in enumerate(o)} for i, o in enumerate(qs)}
        evaluator = pytrec_eval.RelevanceEvaluator({k: qrels[q] for k in pseudo}, _spec(measures))
        values[q] = list(evaluator.evaluate(pseudo).values())
    ties = evaluate_with_ties(run, qrels, measures).ties
    for m in measures:
        means = [(a[m] + b[m]) / 2 for a, b in itertools.product(values["q1"], values["q2"])]
        assert ties.aggregate[m].best == pytest.approx(max(means), abs=1e-12)
        assert ties.aggregate[m].worst == pytest.approx(min(means), abs=1e-12)


MEASURE_SETS = [ALL_MEASURES, ("P_1", "recip_rank"), ("ndcg_cut_2", "recall_3"), ("map_cut_1", "recip_rank")]


@st.composite
def coarse_runs(draw):
    """1-3 queries of 1-7 documents with scores from three values (ties everywhere), grades 0..3 (some
    relevant documents left out of the run), and a measure set (short cut-offs: the depth the extreme orders
    are cut to is below the run's)."""
    pool = [f"d{i}" for i in range(9)]
    run, qrels = {}, {}
    for q in draw(st.lists(st.sampled_from(["q1", "q2", "q3"]), min_size=1, max_size=3, unique=True)):
        docs = draw(st.lists(st.sampled_from(pool), min_size=1, max_size=7, unique=True))
        run[q] = {d: draw(st.sampled_from([0.25, 0.5, 1.0])) for d in docs}
        qrels[q] = draw(st.dictionaries(st.sampled_from(pool), st.integers(0, 3), min_size=1, max_size=6))
    if draw(st.booleans()):
        qrels["q9"] = {"d0": 1}  # judged, not in the run
    return run, qrels, draw(st.sampled_from(MEASURE_SETS)), draw(st.booleans())


@settings(max_examples=60, deadline=None)
@given(coarse_runs())
def test_ranges_equal_the_brute_force_over_all_orders(case):
    run, qrels, measures, count_missing = case
    assert_matches_brute_force(run, qrels, measures, count_missing)


def test_a_run_without_ties_reports_none():
    rng = random.Random(3)
    run = {f"q{q}": {f"d{d}": rng.random() for d in range(50)} for q in range(5)}
    qrels = {f"q{q}": {f"d{d}": rng.choice([0, 1, 2]) for d in range(0, 50, 7)} for q in range(5)}
    metrics = evaluate_with_ties(run, qrels)
    assert metrics.ties.tied_queries == 0 and metrics.ties.per_query == {}
    assert metrics.ties.to_json() == {"tied_queries": 0, "measures": {}, "per_query": {}}
    assert tie_line(metrics.ties, MEASURE_VALUES) is None
    # ties among irrelevant documents only decide nothing either
    run["q0"].update({"t1": 0.001, "t2": 0.001})
    assert evaluate_with_ties(run, qrels).ties.per_query == {}


def test_the_line_names_the_queries_and_each_measure_range():
    run = {"q1": {"a": 1.0, "b": 1.0}, "q2": {"c": 1.0, "d": 0.5}}
    qrels = {"q1": {"b": 1}, "q2": {"c": 1}}
    metrics = evaluate_with_ties(run, qrels, ["nDCG@10", "P@1"])
    # by hand: q1's nDCG@10 is 1 (b first) or 1/log2(3) (b second); q2's is 1
    worst = (1 / math.log2(3) + 1) / 2
    assert tie_line(metrics.ties, [Measure.parse("nDCG@10")]) == (
        "ties: 1 of 2 queries depend on the order of tied documents; "
        f"nDCG@10 {metrics['nDCG@10']:.4f} (range {worst:.4f}–1.0000); ties at the depth cut unknown"
    )
    line = tie_line(metrics.ties, [Measure.parse("ndcg_cut_10"), Measure.parse("P_1")], task="T", scale=100)
    assert line.startswith("ties (T): 1 of 2 queries") and "P@1 " in line and "(range 50.00–100.00)" in line


# -- the commands, the record, the report ----------------------------------------------------------


def _collection(folder: Path) -> Path:
    folder.mkdir(parents=True)
    docs = [f"d{i}" for i in range(8)]
    (folder / "corpus.jsonl").write_text("".join(json.dumps({"id": d, "text": f"text {d}"}) + "\n" for d in docs))
    (folder / "query.jsonl").write_text("".join(json.dumps({"id": f"q{i}", "text": f"q {i}"}) + "\n" for i in range(3)))
    rows = [("q0", "d1", 1), ("q0", "d5", 2), ("q1", "d2", 1), ("q2", "d7", 1)]
    (folder / "qrels.jsonl").write_text(
        "".join(json.dumps({"q_id": q, "p_id": d, "score": g}) + "\n" for q, d, g in rows)
    )
    return folder


def _tied_run(levels: int, seed: int) -> dict[str, dict[str, float]]:
    rng = random.Random(seed)
    return {f"q{q}": {f"d{d}": float(rng.randrange(levels)) for d in range(8)} for q in range(3)}


def _qrels(folder: Path) -> dict[str, dict[str, int]]:
    return dict(load_folder(folder).qrels)


@pytest.fixture
def tied_root(tmp_path):
    data = _collection(tmp_path / "data" / "toy")
    out = tmp_path / "runs"
    collection = load_folder(data)
    r2med.import_run(_tied_run(2, 1), collection, name="coarse", out=out)
    r2med.import_run(_tied_run(2, 2), collection, name="coarse2", out=out)
    r2med.import_run(
        {q: {d: s + 0.01 * i for i, (d, s) in enumerate(docs.items())} for q, docs in _tied_run(8, 3).items()},
        collection,
        name="fine",
        out=out,
    )
    return data, out


def test_metrics_json_holds_the_block_and_the_reader_checks_it(tied_root, tmp_path):
    data, out = tied_root
    folder = out / "coarse" / "toy"
    stored = json.loads((folder / "metrics.json").read_text())
    run = r2med.read_trec(folder / "run.trec")
    per_query, aggregate, depends = brute_force(run, _qrels(data), DEFAULT_MEASURES)
    block = stored["ties"]
    assert set(block["measures"]) == {m for m in DEFAULT_MEASURES if depends[m]}
    for m, entry in block["measures"].items():
        assert (entry["best"], entry["worst"]) == pytest.approx(aggregate[m], abs=1e-12)
        assert entry["queries"] == len(depends[m])
        for q in depends[m]:
            assert (block["per_query"][q][m]["best"], block["per_query"][q][m]["worst"]) == pytest.approx(
                per_query[q][m], abs=1e-12
            )
    assert read_record(folder).ties == block
    assert json.loads((out / "fine" / "toy" / "metrics.json").read_text())["ties"]["measures"] == {}
    # an old file without the block reads as before
    old = {k: v for k, v in stored.items() if k != "ties"}
    assert parse_record(old, "metrics.json").ties is None
    m = next(m for m, e in block["measures"].items() if e["best"] > stored["aggregate"][m] + 0.001)
    q = next(q for q in block["per_query"] if m in block["per_query"][q])
    bad_cases = {
        "worst 0.9 is above best": lambda b: b["measures"][m].update(worst=0.9, best=0.1),
        "lies outside": lambda b: b["measures"][m].update(worst=stored["aggregate"][m] + 0.0005),
        "not a measure r2med stores": lambda b: b["measures"].update({"ndcg": b["measures"][m]}),
        "per_query lists": lambda b: b["measures"][m].update(queries=b["measures"][m]["queries"] + 1),
        "a query the record did not score": lambda b: b["per_query"].update({"nope": {}}),
        "not a number within 0..1": lambda b: b["per_query"][q][m].update(best="high"),
        "unknown key": lambda b: b.update(extra=1),
    }
    for message, damage in bad_cases.items():
        broken = json.loads(json.dumps(stored))
        damage(broken["ties"])
        with pytest.raises(DataError, match=message) as caught:
            parse_record(broken, folder / "metrics.json")
        assert "ties" in str(caught.value) and "\n" not in str(caught.value)


def test_import_prints_the_line_and_a_reused_old_folder_is_left_as_it_was(tmp_path):
    data = _collection(tmp_path / "data" / "toy")
    trec = tmp_path / "coarse.trec"
    r2med.write_trec(_tied_run(2, 1), trec, tag="coarse")
    out = tmp_path / "runs"
    done = run_r2med("import", str(trec), "-d", str(data), "--name", "coarse", "-o", str(out))
    assert done.returncode == 0, done.stderr
    folder = out / "coarse" / "toy"
    metrics = evaluate(r2med.read_trec(folder / "run.trec"), _qrels(data), ["ndcg_cut_10"])
    _, aggregate, depends = brute_force(r2med.read_trec(folder / "run.trec"), _qrels(data), ["ndcg_cut_10"])
    best, worst = aggregate["ndcg_cut_10"]
    expected = (
        f"ties (toy): {len(depends['ndcg_cut_10'])} of 3 queries depend on the order of tied documents; "
        f"nDCG@10 {100 * metrics['ndcg_cut_10']:.2f} (range {100 * worst:.2f}–{100 * best:.2f})"
    )
    assert expected in " ".join(done.stdout.split())
    stored = json.loads((folder / "metrics.json").read_text())
    del stored["ties"], stored["judgments_fingerprint"]  # as r2med wrote it before it recorded them
    (folder / "metrics.json").write_text(json.dumps(stored))
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    again = run_r2med("import", str(trec), "-d", str(data), "--name", "coarse", "-o", str(out))
    assert again.returncode == 0 and "reused" in again.stdout, again.stdout
    assert expected in " ".join(again.stdout.split())  # the ties scored in memory
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before  # a reuse rewrites nothing


def test_a_reused_evaluate_folder_from_before_ties_and_judgments_is_scored_in_memory_and_left_unchanged(tmp_path):
    """A finished folder written before r2med recorded its ties and its judgments' fingerprint is reused as it
    stands: the result carries the measures and ties scored in memory (as the scorer gives them for ``run.trec``),
    and the folder's files keep their bytes and modification times."""
    from r2med.jobs.evaluate import run_task
    from r2med.steps import EvaluateStep

    collection = load_folder(shared_collection("medline-med"))
    step = EvaluateStep.of("bm25", top_k=100)
    out = tmp_path / "runs" / "bm25"
    run_task(collection, step, out)
    folder = out / collection.name
    stored = json.loads((folder / "metrics.json").read_text())
    written = stored.pop("ties")
    del stored["judgments_fingerprint"]  # as r2med wrote it before it recorded them
    (folder / "metrics.json").write_text(json.dumps(stored, indent=1) + "\n")
    before = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in folder.iterdir()}
    again = run_task(load_folder(shared_collection("medline-med")), step, out)
    assert again.reused
    assert {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in folder.iterdir()} == before
    ranked, cut = r2med.read_trec(folder / "run.trec"), read_cut_ties(folder)  # the depth cut's ties too
    expected = evaluate_with_ties(ranked, collection.qrels, again.metrics.measures, cut=cut)
    assert again.metrics.aggregate == pytest.approx(stored["aggregate"])
    assert again.metrics.aggregate == pytest.approx(expected.aggregate)
    assert again.metrics.ties is not None and expected.ties is not None
    assert again.metrics.ties.aggregate == expected.ties.aggregate
    assert json.loads(json.dumps(again.metrics.ties.to_json())) == written  # what a fresh run records


def test_score_says_it_on_stderr_and_in_json(tied_root):
    data, out = tied_root
    run_path = out / "coarse" / "toy" / "run.trec"
    done = run_r2med("score", str(data), str(run_path), "-m", "nDCG@10", "-m", "P@1")
    assert done.returncode == 0
    assert "ties" not in done.stdout  # stdout stays trec_eval's lines
    metrics = evaluate_with_ties(r2med.read_trec(run_path), _qrels(data), ["ndcg_cut_10", "P_1"])
    assert " ".join(done.stderr.split()) == tie_line(metrics.ties, metrics.measures)
    payload = json.loads(run_r2med("score", str(data), str(run_path), "-f", "json", "-p").stdout)
    assert payload["ties"]["measures"]["ndcg_cut_10"]["best"] == pytest.approx(
        metrics.ties.aggregate["ndcg_cut_10"].best
    )
    assert set(payload["ties"]["per_query"]) == set(metrics.ties.per_query)
    fine = run_r2med("score", str(data), str(out / "fine" / "toy" / "run.trec"))
    assert fine.returncode == 0 and "ties" not in fine.stderr


def test_report_marks_the_cells_ties_decide_in_every_format(tied_root, tmp_path):
    _, out = tied_root
    coarse = read_record(out / "coarse" / "toy")
    best, worst = (coarse.ties["measures"]["ndcg_cut_10"][k] for k in ("best", "worst"))
    value = 100 * coarse.aggregate["ndcg_cut_10"]
    md = run_r2med("report", str(out / "coarse"), str(out / "fine"), "-f", "markdown").stdout
    assert f"| {value:.2f}{TIED_MARK} |" in md
    fine_value = 100 * read_record(out / "fine" / "toy").aggregate["ndcg_cut_10"]
    assert f"| {fine_value:.2f} |" in md  # no ties: no mark
    assert "ties decide this value" in md and f"coarse: toy {100 * worst:.2f}–{100 * best:.2f}" in md
    table = run_r2med("report", str(out / "coarse"), "--wide").stdout
    assert f"{value:.2f}{TIED_MARK}" in table and "ties decide this value" in " ".join(table.split())
    latex = run_r2med("report", str(out / "coarse"), "-f", "latex").stdout
    assert rf"{value:.2f}$^{{\diamond}}$" in latex
    # the mark is explained in the table's note, printed under it (issue 39: not a `%` comment no reader sees)
    assert r"\noindent $^{\diamond}$ ties decide this value" in latex
    assert not [line for line in latex.splitlines() if line.startswith("%")]
    page = tmp_path / "r.html"
    assert run_r2med("report", str(out / "coarse"), "--html", str(page)).returncode == 0
    html = page.read_text()
    assert f'class="tied" title="ties decide this value: {100 * worst:.2f}–{100 * best:.2f}' in html
    assert "ties decide this value: another order of tied (equal-scored) documents changes it" in html


def test_the_mark_is_never_on_a_gap_and_the_average_range_is_its_tasks_mean(tmp_path):
    """Two tasks; ``partial`` has only the first, so its second task and its Average are n/a (one stated set):
    those cells carry no mark in any renderer, while every cell with a value that ties decide does, with its
    range against the brute force, and the full system's Average range is the mean of its tasks' ranges."""
    out = tmp_path / "runs"
    data = {t: _collection(tmp_path / "data" / t) for t in ("toy", "toy2")}
    for seed, folder in enumerate(data.values()):
        r2med.import_run(_tied_run(2, 10 + seed), load_folder(folder), name="full", out=out)
    r2med.import_run(_tied_run(2, 20), load_folder(data["toy"]), name="partial", out=out)
    ranges = {}
    for system, task in (("full", "toy"), ("full", "toy2"), ("partial", "toy")):
        run = r2med.read_trec(out / system / task / "run.trec")
        _, aggregate, depends = brute_force(run, _qrels(data[task]), ["ndcg_cut_10"])
        assert depends["ndcg_cut_10"]  # two score values over 8 documents: ties decide nDCG@10
        best, worst = aggregate["ndcg_cut_10"]
        ranges[system, task] = (100 * worst, 100 * best)
    average = tuple(sum(ranges["full", t][i] for t in data) / len(data) for i in (0, 1))
    systems = [str(out / "full"), str(out / "partial")]

    done = run_r2med("report", *systems, "-f", "json")
    assert done.returncode == 0, done.stderr
    board = json.loads(done.stdout)
    cells = {s["name"]: s["cells"] for s in board["systems"]}
    for (system, task), expected in [*ranges.items(), (("full", "Average"), average)]:
        cell = cells[system][task]
        assert cell["marks"] == [TIED_MARK]
        assert (cell["ties"]["worst"], cell["ties"]["best"]) == pytest.approx(expected, abs=1e-6)
        assert cell["ties"]["worst"] <= cell["value"] <= cell["ties"]["best"]
    for col in ("toy2", "Average"):
        assert cells["partial"][col]["value"] is None
        assert cells["partial"][col]["marks"] == [] and cells["partial"][col]["ties"] is None
    worst, best = ranges["partial", "toy"]
    assert f"{TIED_MARK} partial: toy {worst:.2f}–{best:.2f}." in board["legend"]

    md = run_r2med("report", *systems, "-f", "markdown").stdout
    [partial] = [line for line in md.splitlines() if line.startswith("| **partial**")]
    row = [c.strip() for c in partial.strip("|").split("|")]
    assert row[1].endswith(TIED_MARK) and row[2:] == ["n/a", "n/a"]
    latex = run_r2med("report", *systems, "-f", "latex").stdout
    [partial] = [line for line in latex.splitlines() if line.startswith("partial &")]
    row = partial.removesuffix(r" \\").split(" & ")
    assert row[1].endswith(r"$^{\diamond}$}") and row[2:] == ["n/a", "n/a"]  # ranked: \underline{...}
    table = run_r2med("report", *systems, "--wide").stdout
    page = tmp_path / "r.html"
    assert run_r2med("report", *systems, "--html", str(page)).returncode == 0
    html = page.read_text()
    assert html.count('class="tied"') == 4  # the three task cells and full's Average
    for text in (md, latex, table, html):
        assert f"n/a{TIED_MARK}" not in text and "n/a$^" not in text


def test_compare_notes_a_difference_within_the_tie_ranges(tied_root):
    data, out = tied_root
    done = run_r2med("compare", str(out / "coarse"), str(out / "coarse2"))
    assert done.returncode == 0
    a, b = read_record(out / "coarse" / "toy"), read_record(out / "coarse2" / "toy")
    ra, rb = ((r.ties["measures"]["ndcg_cut_10"]["worst"], r.ties["measures"]["ndcg_cut_10"]["best"]) for r in (a, b))
    low, high = rb[0] - ra[1], rb[1] - ra[0]
    text = " ".join(done.stderr.split())  # a note, on stderr like compare's others: stdout stays the table
    assert "tie ranges" not in done.stdout
    assert (low <= 0 <= high) == ("lies within the two systems' tie ranges" in text)
    assert low <= 0 <= high  # two coarse random runs of 8 documents: the ranges overlap
    assert f"anywhere from {100 * low:+.2f} to {100 * high:+.2f}" in text
    untied = {q: {d: s + 0.02 * i for i, (d, s) in enumerate(docs.items())} for q, docs in _tied_run(8, 4).items()}
    r2med.import_run(untied, load_folder(data), name="fine2", out=out)
    fine = run_r2med("compare", str(out / "fine"), str(out / "fine2"))
    assert fine.returncode == 0 and "tie ranges" not in fine.stderr + fine.stdout


def test_a_six_valued_llm_style_run_on_medline_med(tmp_path):
    """The situation of the issue on real data: BM25's top 100 on medline-med with scores bucketed into six
    values (as a pointwise LLM scores), against random orders of its ties and the two orders built here."""
    data = shared_collection("medline-med")
    collection = load_folder(data)
    bm25 = r2med.BM25().index(collection.corpus).search(collection.queries, k=100)
    six = {}
    for q, docs in bm25.items():
        top = max(docs.values())
        six[q] = {d: float(min(5, int(6 * s / top))) for d, s in docs.items()}
    qrels = dict(collection.qrels)
    metrics = evaluate_with_ties(six, qrels, ["ndcg_cut_10", "recip_rank"])
    r = metrics.ties.aggregate["ndcg_cut_10"]
    assert r.queries > len(six) // 2 and r.worst < r.reported < r.best
    rng = random.Random(0)
    for _ in range(20):  # any order of the ties lies within the range
        shuffled = {q: {d: s + rng.random() * 1e-3 for d, s in docs.items()} for q, docs in six.items()}
        value = evaluate(shuffled, qrels, ["ndcg_cut_10"])["ndcg_cut_10"]
        assert r.worst - 1e-12 <= value <= r.best + 1e-12
    for sign, end in ((1, r.best), (-1, r.worst)):  # and both ends are attained: grades break the ties
        ordered = {q: {d: s + sign * 1e-3 * qrels[q].get(d, 0) for d, s in docs.items()} for q, docs in six.items()}
        assert evaluate(ordered, qrels, ["ndcg_cut_10"])["ndcg_cut_10"] == pytest.approx(end, abs=1e-12)


def test_fuse_of_coarse_runs_prints_the_line_with_the_stored_range(tied_root):
    _, out = tied_root
    done = run_r2med(
        "fuse", str(out / "coarse"), str(out / "coarse2"), "--method", "combsum", "--norm", "none", "--name", "sum"
    )
    assert done.returncode == 0, done.stderr
    record = read_record(out / "sum" / "toy")
    entry = record.ties["measures"]["ndcg_cut_10"]  # sums of 0/1 scores tie
    line = " ".join(done.stdout.split())
    assert (
        f"nDCG@10 {100 * record.aggregate['ndcg_cut_10']:.2f} "
        f"(range {100 * entry['worst']:.2f}–{100 * entry['best']:.2f})" in line
    )
    assert f"{entry['queries']} of 3 queries depend on the order of tied documents" in line
