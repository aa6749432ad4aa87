"""Fusion: RRF / CombSUM / CombMNZ against hand computation; the ``fuse`` command on real runs."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats

from conftest import run_r2med, shared_collection
from r2med.errors import R2MedError
from r2med.evaluation.metrics import evaluate
from r2med.runs.fusion import comb, fuse, normalise, rrf
from r2med.runs.run import ranked, read_trec

A = {"q1": {"a": 3.0, "b": 2.0, "c": 1.0}, "q2": {"x": 0.5, "y": 0.5}}
B = {"q1": {"b": 0.9, "d": 0.5, "a": 0.1}, "q3": {"z": 7.0}}


def test_rrf_by_hand():
    got = rrf([A, B])
    assert got["q1"] == pytest.approx({"a": 1 / 61 + 1 / 63, "b": 1 / 62 + 1 / 61, "c": 1 / 63, "d": 1 / 62})
    assert [d for d, _ in ranked(got["q1"])] == ["b", "a", "d", "c"]
    # tied scores rank as trec_eval ranks them: doc id descending, so y is rank 1
    assert got["q2"] == pytest.approx({"y": 1 / 61, "x": 1 / 62})
    assert got["q3"] == pytest.approx({"z": 1 / 61})  # a query only one run answers keeps that run's docs


def test_weighted_rrf_other_k_and_depth():
    got = rrf([A, B], k=10, weights=[2.0, 1.0], depth=2)
    full = {"a": 2 / 11 + 1 / 13, "b": 2 / 12 + 1 / 11, "c": 2 / 13, "d": 1 / 12}
    top2 = dict(sorted(full.items(), key=lambda kv: -kv[1])[:2])
    assert got["q1"] == pytest.approx(top2)


def test_combsum_and_combmnz_minmax_by_hand():
    # min-max: A/q1 -> a 1, b .5, c 0; B/q1 -> b 1, d .5, a 0
    assert comb([A, B], "combsum")["q1"] == pytest.approx({"a": 1.0, "b": 1.5, "c": 0.0, "d": 0.5})
    assert comb([A, B], "combmnz")["q1"] == pytest.approx({"a": 2.0, "b": 3.0, "c": 0.0, "d": 0.5})
    assert comb([A, B], "combsum", weights=[1.0, 3.0])["q1"] == pytest.approx({"a": 1.0, "b": 3.5, "c": 0.0, "d": 1.5})
    assert comb([A, B], "combsum")["q2"] == {"x": 1.0, "y": 1.0}  # all-equal scores -> 1


def test_zscore_matches_scipy():
    rng = np.random.default_rng(0)
    runs = [
        {"q": {f"d{i}": float(v) for i, v in enumerate(rng.normal(size=12))}},
        {"q": {f"d{i}": float(v) for i, v in enumerate(rng.normal(5, 3, size=12)) if i % 3}},
    ]
    expected: dict[str, float] = {}
    for run in runs:
        ids = list(run["q"])
        for did, z in zip(ids, stats.zscore([run["q"][d] for d in ids])):
            expected[did] = expected.get(did, 0.0) + z
    assert comb(runs, "combsum", norm="zscore")["q"] == pytest.approx(expected)
    assert normalise({"a": 2.0, "b": 2.0}, "zscore") == {"a": 0.0, "b": 0.0}
    assert normalise({"a": 2.0, "b": 4.0}, "none") == {"a": 2.0, "b": 4.0}


def test_bad_settings_are_errors():
    with pytest.raises(R2MedError, match="one weight per run"):
        fuse([A, B], "rrf", weights=[1.0])
    with pytest.raises(R2MedError, match="unknown fusion method"):
        fuse([A, B], "borda")
    with pytest.raises(R2MedError, match="unknown normalisation"):
        fuse([A, B], "combsum", norm="rank")


def _evaluate(out, retriever, data, extra=()):
    result = run_r2med("evaluate", "-r", retriever, "-d", str(data), "-o", str(out), *extra)
    assert result.returncode == 0, result.stderr


def test_fuse_command_on_real_runs(tmp_path):
    data = shared_collection("medline-med")
    out = tmp_path / "runs"
    _evaluate(out, "bm25", data)
    # a second, different lexical run: BM25 with other parameters, written under its own name
    _evaluate(tmp_path / "other", "bm25", data, ["--k1", "1.5", "--b", "0.9"])
    (tmp_path / "other" / "bm25").rename(out / "bm25-k15")
    result = run_r2med("fuse", str(out / "bm25"), str(out / "bm25-k15"), "--method", "rrf", "--weights", "1,2")
    assert result.returncode == 0, result.stderr
    folder = out / "rrf-bm25+bm25-k15" / "medline-med"
    fused = read_trec(folder / "run.trec")
    first, second = (
        read_trec(out / "bm25" / "medline-med" / "run.trec"),
        read_trec(out / "bm25-k15" / "medline-med" / "run.trec"),
    )
    for qid in first:  # hand formula over the files, independent of r2med.runs.fusion
        scores: dict[str, float] = {}
        for run, w in ((first, 1.0), (second, 2.0)):
            for rank, (did, _) in enumerate(sorted(run[qid].items(), key=lambda kv: (kv[1], kv[0]), reverse=True), 1):
                scores[did] = scores.get(did, 0.0) + w / (60 + rank)
        top = sorted(scores.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)[:100]
        # the file keeps 9 significant digits: order the hand result as trec_eval will read it
        top = sorted(((d, float(f"{s:.9g}")) for d, s in top), key=lambda kv: (kv[1], kv[0]), reverse=True)
        assert [d for d, _ in ranked(fused[qid])] == [d for d, _ in top]
    metrics = json.loads((folder / "metrics.json").read_text())
    from r2med.data.loaders import load_folder

    assert metrics["aggregate"]["ndcg_cut_10"] == pytest.approx(
        evaluate(fused, load_folder(data).qrels).aggregate["ndcg_cut_10"], abs=1e-6
    )
    assert metrics["config"]["fusion"] == "rrf" and metrics["config"]["weights"] == [1.0, 2.0]
    # a re-run reuses the finished task
    again = run_r2med("fuse", str(out / "bm25"), str(out / "bm25-k15"), "--weights", "1,2")
    assert again.returncode == 0 and "reused" in again.stdout + again.stderr


def test_fuse_command_errors(tmp_path):
    result = run_r2med("fuse", str(tmp_path / "nope"), str(tmp_path / "nope2"))
    assert result.returncode == 2 and "no such run folder" in result.stderr
    result = run_r2med("fuse", str(tmp_path), str(tmp_path), "--weights", "1,x")
    assert result.returncode == 2 and "comma-separated numbers" in result.stderr
    res = run_r2med("fuse", str(tmp_path), str(tmp_path), "--method", "borda")
    assert res.returncode == 2 and "unknown fusion method 'borda'; choose from: rrf, combsum, combmnz" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []  # nothing written


hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_runs = st.lists(
    st.dictionaries(
        st.sampled_from([f"d{i}" for i in range(12)]), st.floats(-50, 50, allow_nan=False), min_size=1, max_size=12
    ),
    min_size=1,
    max_size=4,
)


@settings(max_examples=100, deadline=None)
@given(_runs, st.floats(0, 100))
def test_rrf_equals_brute_force(lists, k):
    runs = [{"q": docs} for docs in lists]
    expected: dict[str, float] = {}
    for docs in lists:
        order = sorted(docs, key=lambda d: (docs[d], d), reverse=True)
        for did in docs:
            expected[did] = expected.get(did, 0.0) + 1.0 / (k + 1 + order.index(did))
    assert rrf(runs, k=k)["q"] == pytest.approx(expected)


@settings(max_examples=100, deadline=None)
@given(_runs)
def test_combmnz_is_combsum_times_hits(lists):
    runs = [{"q": docs} for docs in lists]
    total, mnz = comb(runs, "combsum")["q"], comb(runs, "combmnz")["q"]
    for did in total:
        hits = sum(did in docs for docs in lists)
        assert mnz[did] == pytest.approx(total[did] * hits)
        assert 0.0 <= total[did] <= hits + 1e-9  # min-max scores lie in [0, 1]


def test_fuse_counts_unknown_docs_and_unshared_tasks(tmp_path, caplog):
    from r2med.data.loaders import load_folder
    from r2med.jobs.fuse import fuse_inputs
    from r2med.jobs.rerank import load_inputs
    from r2med.results.folders import metrics_payload
    from r2med.runs.run import write_task_results
    from r2med.steps import FuseStep

    for task in ("t1", "t2"):
        data = tmp_path / "data" / task
        data.mkdir(parents=True)
        (data / "corpus.jsonl").write_text("".join(json.dumps({"id": d, "text": d}) + "\n" for d in "abcd"))
        (data / "query.jsonl").write_text(json.dumps({"id": "q1", "text": "q"}) + "\n")
        (data / "qrels.jsonl").write_text(json.dumps({"q_id": "q1", "p_id": "b", "score": 1}) + "\n")
    runs = {
        "one": {"t1": {"q1": {"a": 2.0, "b": 1.0}}, "t2": {"q1": {"a": 1.0}}},
        "two": {"t1": {"q1": {"b": 5.0, "zz": 4.0}}},
    }  # 'zz' is not in the corpus; t2 only in "one"
    for name, tasks in runs.items():
        for task, run in tasks.items():
            coll = load_folder(tmp_path / "data" / task)
            write_task_results(
                tmp_path / "runs" / name / task, run, metrics_payload(coll, name, {}, evaluate(run, coll.qrels), {})
            )
    cache: dict = {}
    groups = [load_inputs(tmp_path / "runs" / n, require_docs=False, collections=cache) for n in runs]
    assert "'zz' (query 'q1') is not in the corpus of t1 (1 unknown doc entry in all)" in caplog.text
    step = FuseStep.of([tmp_path / "runs" / n for n in runs], top_k=1000)  # deeper than any run: every doc kept
    results = fuse_inputs(groups, list(runs), step, "rrf-test", tmp_path / "out")
    assert [r.task for r in results] == ["t1"]
    assert "task(s) t2 are not in every run folder" in caplog.text
    assert read_trec(tmp_path / "out" / "t1" / "run.trec")["q1"] == pytest.approx(
        {"b": 1 / 62 + 1 / 61, "a": 1 / 61, "zz": 1 / 62}, rel=1e-8
    )
    with pytest.raises(R2MedError, match=r"run.trec:2: doc 'zz'"):
        load_inputs(tmp_path / "runs" / "two")  # rerankers need the text: an error there
