"""MTEB export: measure names checked against mteb's own evaluator, files round-tripped through mteb's loaders.

The translation tests that need mteb's scorer, and every round trip, are skipped when ``mteb`` (extra
``r2med[mteb]``) is not installed.
"""

from __future__ import annotations

import json
import logging
import random
import sys

import pytest

from r2med.data.tasks import TASKS
from r2med.errors import MissingExtraError, R2MedError
from r2med.evaluation.metrics import evaluate
from r2med.export.mteb import K_VALUES, export_mteb, mteb_score_keys, mteb_scores, run_depth, summarize_keys
from r2med.runs.record import parse_record

TOL = 5e-7  # TaskResult.to_disk rounds scores to 6 decimals


def _toy(seed: int, n_queries: int = 12, depth: int = 30, ties: bool = True):
    """A run with tied scores (the case where rankers can disagree) and graded judgments."""
    rng = random.Random(seed)
    docs = [f"d{i:03d}" for i in range(80)]
    run, qrels = {}, {}
    for q in range(n_queries):
        qid = f"q{q}"
        chosen = rng.sample(docs, depth)
        run[qid] = {d: (round(rng.random(), 1) if ties else rng.random()) for d in chosen}
        judged = rng.sample(docs, 10)
        qrels[qid] = {d: rng.choice([0, 0, 1, 2]) for d in judged}
    qrels["q0"] = {d: 0 for d in qrels["q0"]}  # a query with no relevant doc
    return run, qrels


def _payload(task: str, run, qrels, revision: str | None = "pin") -> dict:
    metrics = evaluate(run, qrels)
    return {
        "task": task,
        "retriever": "toy",
        "aggregate": metrics.aggregate,
        "per_query": metrics.per_query,
        "revision": TASKS[task].revision if revision == "pin" else revision,
        "timing": {"total_s": 1.25},
    }


# -- translation ---------------------------------------------------------------------------------


def test_translation_without_depth_leaves_mrr_out_and_lists_absent_keys():
    run, qrels = _toy(1)
    scores = mteb_scores(parse_record(_payload("Biology", run, qrels), "m"))
    assert scores.values["main_score"] == scores.values["ndcg_at_10"]
    assert not any(k.startswith("mrr_at") for k in scores.values)
    assert "recip_rank" in scores.left_out
    assert set(scores.left_out) >= {"ndcg_cut_25", "ndcg_cut_50", "map_cut_25", "recall_50", "P_25"}
    exported = set(scores.values) - {"main_score"}
    assert set(scores.absent) == set(mteb_score_keys()) - exported
    assert exported == {
        f"{f}_at_{k}" for f in ("ndcg", "map", "recall", "precision", "hit_rate") for k in (1, 10, 100)
    } | {"accuracy"}
    assert (
        summarize_keys(["ndcg_at_3", "ndcg_at_5", "accuracy", "nauc_map_at_1_max"])
        == "ndcg_at_{3,5}, accuracy, nauc_* (1)"
    )


def test_depth_beyond_mtebs_cutoffs_leaves_mrr_out():
    run, qrels = _toy(2)
    scores = mteb_scores(parse_record(_payload("Biology", run, qrels), "m"), depth=5000)
    assert "recip_rank" in scores.left_out and not any(k.startswith("mrr") for k in scores.values)


def test_scores_equal_mtebs_own_evaluator_on_the_same_run():
    """Every key r2med exports has the value mteb's retrieval evaluator computes from the same run and
    judgments (mteb rounds to 5 decimals), and r2med's list of MTEB keys is the evaluator's."""
    pytest.importorskip("mteb")
    retrieval_metrics = pytest.importorskip("mteb._evaluators.retrieval_metrics")
    for seed, ties in ((3, True), (4, False)):
        run, qrels = _toy(seed, ties=ties)
        depth = run_depth(run)
        assert depth == 30
        ours = mteb_scores(parse_record(_payload("Biology", run, qrels), "m"), depth=depth)
        r = retrieval_metrics.calculate_retrieval_scores(run, qrels, k_values=K_VALUES)
        theirs = retrieval_metrics.make_score_dict(
            ndcg=r.ndcg,
            _map=r.map,
            recall=r.recall,
            precision=r.precision,
            mrr=r.mrr,
            naucs=r.naucs,
            naucs_mrr=r.naucs_mrr,
            hit_rate=r.hit_rate,
            task_scores={},
        )
        assert sorted(mteb_score_keys()) == sorted(theirs)
        assert set(ours.values) - {"main_score"} >= {"mrr_at_100", "mrr_at_1000", "hit_rate_at_10", "accuracy"}
        for key, value in ours.values.items():
            if key != "main_score":
                assert value == pytest.approx(theirs[key], abs=5e-6), (seed, key)


# -- round trip through mteb ---------------------------------------------------------------------


@pytest.fixture
def mteb():
    return pytest.importorskip("mteb")


def _loaded(mteb, out, model, tasks):
    bench = mteb.ResultCache(cache_path=out).load_results(
        models=[model], tasks=tasks, include_remote=False, validate_and_filter=True
    )
    assert len(bench.model_results) == 1
    return {t.task_name: t for t in bench.model_results[0].task_results}


def test_round_trip_through_mtebs_loaders(mteb, tmp_path):
    payloads = {}
    for seed, task in enumerate(("Biology", "MedQA-Diag", "IIYi-Clinical")):
        run, qrels = _toy(10 + seed)
        payloads[task] = _payload(task, run, qrels)
    out = tmp_path / "mteb"
    report = export_mteb(payloads.values(), out, "bm25", depths={t: 30 for t in payloads})
    assert report.model_name == "r2med/bm25" and report.model_revision == "no_revision_available"
    names = {
        "Biology": "R2MEDBiologyRetrieval",
        "MedQA-Diag": "R2MEDMedQADiagRetrieval",
        "IIYi-Clinical": "R2MEDIIYiClinicalRetrieval",
    }
    assert {t.task: t.mteb_task for t in report.tasks} == names
    loaded = _loaded(mteb, out, "r2med/bm25", list(names.values()))
    assert set(loaded) == set(names.values())
    for task, payload in payloads.items():
        result = loaded[names[task]]
        assert result.dataset_revision == mteb.get_task(names[task]).metadata.revision == TASKS[task].revision
        assert result.evaluation_time == 1.25
        (entry,) = result.scores["test"]
        assert entry["hf_subset"] == "default" and entry["languages"] == ["eng-Latn"]
        agg = payload["aggregate"]
        assert entry["main_score"] == pytest.approx(agg["ndcg_cut_10"], abs=TOL)
        assert result.get_score() == pytest.approx(agg["ndcg_cut_10"], abs=TOL)
        for ours, theirs in (
            ("ndcg_cut_10", "ndcg_at_10"),
            ("ndcg_cut_100", "ndcg_at_100"),
            ("map_cut_10", "map_at_10"),
            ("recall_100", "recall_at_100"),
            ("P_10", "precision_at_10"),
            ("recall_1", "accuracy"),
            ("recip_rank", "mrr_at_100"),
            ("recip_rank", "mrr_at_1000"),
        ):
            assert entry[theirs] == pytest.approx(agg[ours], abs=TOL), (task, theirs)
        hits = sum(1 for row in payload["per_query"].values() if row["recall_10"] > 0) / len(payload["per_query"])
        assert entry["hit_rate_at_10"] == pytest.approx(hits, abs=TOL)
        assert "ndcg_at_25" not in entry and "nauc_ndcg_at_10_max" not in entry
        one = mteb.TaskResult.from_disk(
            out / "results" / "r2med__bm25" / "no_revision_available" / f"{names[task]}.json"
        )
        assert one.get_score() == pytest.approx(agg["ndcg_cut_10"], abs=TOL)
    meta = json.loads((report.folder / "model_meta.json").read_text())
    assert meta["name"] == "r2med/bm25"


def test_a_second_export_keeps_the_tasks_already_there(mteb, tmp_path):
    out = tmp_path / "mteb"
    run, qrels = _toy(20)
    export_mteb([_payload("Biology", run, qrels)], out, "org/model", "abc123")
    run2, qrels2 = _toy(21)
    second = _payload("PMC-Treatment", run2, qrels2)
    export_mteb([second], out, "org/model", "abc123")
    loaded = _loaded(mteb, out, "org/model", None)
    assert set(loaded) == {"R2MEDBiologyRetrieval", "R2MEDPMCTreatmentRetrieval"}
    settings = (out / "results" / "org__model" / "abc123" / "run_settings.jsonl").read_text().splitlines()
    assert sorted(json.loads(line)["task"] for line in settings) == [
        "R2MEDBiologyRetrieval",
        "R2MEDPMCTreatmentRetrieval",
    ]
    assert [p.name for p in (out / "results" / "org__model").iterdir()] == ["abc123"]  # no temp left
    assert loaded["R2MEDPMCTreatmentRetrieval"].get_score() == pytest.approx(
        second["aggregate"]["ndcg_cut_10"], abs=TOL
    )


def test_a_failed_export_leaves_the_previous_folder_whole(mteb, tmp_path, monkeypatch):
    out = tmp_path / "mteb"
    run, qrels = _toy(22)
    report = export_mteb([_payload("Biology", run, qrels)], out, "org/model", "abc123")
    before = {p.name: p.read_bytes() for p in report.folder.iterdir()}
    calls = []

    def failing(self, task_result, model_name, model_revision=None, **kw):
        calls.append(task_result.task_name)
        if len(calls) == 2:
            raise OSError("disk full")
        return original(self, task_result, model_name, model_revision, **kw)

    original = mteb.ResultCache.save_to_cache
    monkeypatch.setattr(mteb.ResultCache, "save_to_cache", failing)
    payloads = [_payload("Biology", *_toy(23)), _payload("MedQA-Diag", *_toy(24))]
    with pytest.raises(OSError, match="disk full"):
        export_mteb(payloads, out, "org/model", "abc123")
    assert {p.name: p.read_bytes() for p in report.folder.iterdir()} == before
    assert [p.name for p in report.folder.parent.iterdir()] == ["abc123"]


def test_revision_mismatch_is_refused_before_anything_is_written(mteb, tmp_path):
    run, qrels = _toy(30)
    out = tmp_path / "mteb"
    local = _payload("Biology", run, qrels, revision=None)
    branch = _payload("MedQA-Diag", run, qrels, revision="main")
    with pytest.raises(R2MedError) as info:
        export_mteb([local, branch], out, "org/model")
    message = str(info.value)
    assert "Biology" in message and TASKS["Biology"].revision in message and "local folder" in message
    assert "MedQA-Diag" in message and "main" in message
    assert not out.exists()


def test_forced_export_writes_the_true_revision_or_mtebs_pin_on_the_users_word(mteb, tmp_path, caplog):
    run, qrels = _toy(31)
    out = tmp_path / "mteb"
    with caplog.at_level(logging.WARNING, logger="r2med.export.mteb"):
        report = export_mteb(
            [_payload("Biology", run, qrels, revision=None), _payload("MedQA-Diag", run, qrels, revision="main")],
            out,
            "org/model",
            force=True,
        )
    assert {t.task: t.dataset_revision for t in report.tasks} == {
        "Biology": TASKS["Biology"].revision,
        "MedQA-Diag": "main",
    }
    loaded = _loaded(mteb, out, "org/model", None)
    assert loaded["R2MEDBiologyRetrieval"].dataset_revision == TASKS["Biology"].revision
    assert loaded["R2MEDMedQADiagRetrieval"].dataset_revision == "main"
    assert "on your word" in caplog.text and "written with revision main" in caplog.text


def test_other_collections_are_skipped_with_a_warning(mteb, tmp_path, caplog):
    run, qrels = _toy(40)
    other = dict(_payload("Biology", run, qrels), task="medline-med")
    with caplog.at_level(logging.WARNING, logger="r2med.export.mteb"):
        report = export_mteb([other, _payload("Biology", run, qrels)], tmp_path / "o", "org/m")
    assert report.skipped == {"medline-med": "not an R2MED task: MTEB has no task for it"}
    assert "medline-med: skipped" in caplog.text
    assert [t.task for t in report.tasks] == ["Biology"]
    with pytest.raises(R2MedError, match="nothing to export"):
        export_mteb([other], tmp_path / "o2", "org/m")
    assert not (tmp_path / "o2").exists()


def test_bad_inputs_are_one_line_errors(mteb, tmp_path):
    run, qrels = _toy(41)
    bio = _payload("Biology", run, qrels)
    with pytest.raises(R2MedError, match="two results for Biology"):
        export_mteb([bio, bio], tmp_path / "o", "org/m")
    with pytest.raises(R2MedError, match="model revision"):
        export_mteb([bio], tmp_path / "o", "org/m", "../../x")
    no_ndcg = dict(bio, aggregate={k: v for k, v in bio["aggregate"].items() if k != "ndcg_cut_10"})
    with pytest.raises(R2MedError, match="no ndcg_cut_10"):
        export_mteb([no_ndcg], tmp_path / "o", "org/m")
    with pytest.raises(R2MedError, match="not a finite number"):
        export_mteb([dict(bio, aggregate={"ndcg_cut_10": float("nan")})], tmp_path / "o", "org/m")
    assert not (tmp_path / "o").exists()


def test_a_model_mteb_knows_keeps_its_registry_metadata(mteb, tmp_path):
    run, qrels = _toy(42)
    name = "sentence-transformers/all-MiniLM-L6-v2"
    known = mteb.get_model_meta(name)
    report = export_mteb([_payload("Biology", run, qrels)], tmp_path / "o", name)
    assert report.model_revision == known.revision
    meta = json.loads((report.folder / "model_meta.json").read_text())
    assert meta["n_parameters"] == known.n_parameters and meta["n_parameters"]
    assert report.folder.name == known.revision


def test_without_mteb_the_error_names_the_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "mteb", None)
    run, qrels = _toy(43)
    with pytest.raises(MissingExtraError, match=r"r2med\[mteb\]"):
        export_mteb([_payload("Biology", run, qrels)], tmp_path / "o", "org/m")
    assert not (tmp_path / "o").exists()


def test_r2med_pins_the_revisions_mteb_pins(mteb):
    from r2med.export.mteb import mteb_task_names

    names = mteb_task_names()
    assert set(names) == set(TASKS)
    for task, mtask in names.items():
        assert mtask.metadata.revision == TASKS[task].revision, task
        assert mtask.metadata.main_score == "ndcg_at_10"


def test_export_writes_nothing_outside_out_and_the_r2med_home(mteb, tmp_path, r2med_home):
    """``import mteb`` makes ``~/.cache/mteb``: the export points it into the r2med home instead."""
    import os
    import subprocess

    home = tmp_path / "user-home"
    home.mkdir()
    script = (
        "import random, sys; sys.path.insert(0, sys.argv[2]); import test_export_mteb as t;"
        "from r2med.export.mteb import export_mteb;"
        "export_mteb([t._payload('Biology', *t._toy(50))], sys.argv[1], 'org/m')"
    )
    env = {k: v for k, v in os.environ.items() if k != "MTEB_CACHE"}
    env.update(HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"))
    subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "out"), os.path.dirname(__file__)],
        check=True,
        env=env,
        timeout=120,
    )
    assert list(home.iterdir()) == []
    assert (tmp_path / "out" / "results" / "org__m").is_dir()
    assert (r2med_home / "mteb").is_dir()


def test_export_command_round_trips_a_results_root(mteb, tmp_path):
    """`r2med export --format mteb RUNS -o DIR`: a results root's systems, each as its own model, read back by
    mteb's loader with the scores of their metrics.json; local data is refused until --force."""
    from conftest import run_r2med
    from r2med.runs.record import read_record
    from test_report import synthetic, write_collection

    data = tmp_path / "data"
    write_collection(data, "Biology")
    write_collection(data, "MedQA-Diag", *synthetic())
    for system in ("bm25", "bm25-standard"):
        res = run_r2med("evaluate", "-r", system, "-d", str(data), "-o", str(tmp_path / "runs"))
        assert res.returncode == 0, res.stderr
    out = tmp_path / "mteb"
    refused = run_r2med("export", "--format", "mteb", str(tmp_path / "runs"), "-o", str(out))
    assert refused.returncode == 2 and "data revision" in refused.stderr and not out.exists()
    res = run_r2med("export", "--format", "mteb", str(tmp_path / "runs"), "-o", str(out), "--force")
    assert res.returncode == 0, res.stderr
    assert "R2MEDMedQADiagRetrieval" in res.stdout and "written:" in res.stdout
    names = {"Biology": "R2MEDBiologyRetrieval", "MedQA-Diag": "R2MEDMedQADiagRetrieval"}
    for system in ("bm25", "bm25-standard"):
        loaded = _loaded(mteb, out, f"r2med/{system}", list(names.values()))
        for task, mteb_task in names.items():
            stored = read_record(tmp_path / "runs" / system / task).to_json()["aggregate"]
            (entry,) = loaded[mteb_task].scores["test"]
            assert entry["main_score"] == pytest.approx(stored["ndcg_cut_10"], abs=TOL)
            assert entry["recall_at_100"] == pytest.approx(stored["recall_100"], abs=TOL)
            assert entry["mrr_at_100"] == pytest.approx(stored["recip_rank"], abs=TOL)  # runs are 100 deep at most
    one = run_r2med(
        "export",
        "-f",
        "mteb",
        str(tmp_path / "runs" / "bm25"),
        "-o",
        str(tmp_path / "m2"),
        "--force",
        "--model",
        "me/my-bm25",
        "--model-revision",
        "v1",
    )
    assert one.returncode == 0, one.stderr
    assert (tmp_path / "m2" / "results" / "me__my-bm25" / "v1" / "R2MEDBiologyRetrieval.json").is_file()
    two = run_r2med("export", str(tmp_path / "runs"), "-o", str(tmp_path / "m3"), "--model", "me/x")
    assert two.returncode == 2 and "export one system at a time" in two.stderr


# -- a local collection named as an MTEB task (--mteb-task) ---------------------------------------


def _beir_with_counts(root, docs: int, queries: int, judgments: int, zero_grades: int = 5):
    """A BEIR folder with these counts (``zero_grades`` extra judgments of grade 0, which MTEB does not count)."""
    rng = random.Random(7)
    words = [f"w{i}" for i in range(60)]
    (root / "qrels").mkdir(parents=True)
    with open(root / "corpus.jsonl", "w") as f:
        for d in range(docs):
            f.write(json.dumps({"_id": f"d{d}", "title": "", "text": " ".join(rng.choices(words, k=12))}) + "\n")
    with open(root / "queries.jsonl", "w") as f:
        for q in range(queries):
            f.write(json.dumps({"_id": f"q{q}", "text": " ".join(rng.choices(words, k=4))}) + "\n")
    rows = [(f"q{i % queries}", f"d{(i * 7) % docs}", 1 + i % 2) for i in range(judgments)]
    rows += [(f"q{i}", f"d{(i * 7 + 3) % docs}", 0) for i in range(zero_grades)]
    (root / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t{g}\n" for q, d, g in rows)
    )
    (root / "qrels" / "dev.tsv").write_text("query-id\tcorpus-id\tscore\nq0\td0\t1\n")
    return root


def test_mteb_task_counts_come_from_the_installed_package(mteb):
    from r2med.export.mteb import MtebCounts, find_mteb_task, mteb_task_counts

    # NFCorpus test split, as MTEB's own statistics file counts it (mteb/descriptive_stats/Retrieval/NFCorpus.json)
    stats_file = json.loads(
        (
            __import__("pathlib").Path(mteb.__file__).parent / "descriptive_stats" / "Retrieval" / "NFCorpus.json"
        ).read_text()
    )["test"]
    assert mteb_task_counts(find_mteb_task("NFCorpus"), "test") == MtebCounts(
        stats_file["num_documents"],
        stats_file["num_queries"],
        stats_file["relevant_docs_statistics"]["num_relevant_docs"],
    )
    assert stats_file["num_documents"] == 3633
    assert mteb_task_counts(find_mteb_task("NFCorpus"), "dev") is None
    with pytest.raises(R2MedError, match=r"--mteb-task SciFactt: 'SciFactt' not found\. Did you mean: 'SciFact'"):
        find_mteb_task("SciFactt")


def test_export_a_local_beir_run_as_the_mteb_task_its_counts_match(mteb, tmp_path):
    """`export --mteb-task AILAStatutes`: a BEIR folder with AILAStatutes' counts (82 docs, 50 queries, 217 non-zero
    judgments in mteb's statistics) is written as that task, with MTEB's pin, and read back by mteb's loader."""
    from conftest import run_r2med
    from r2med.runs.record import read_record

    stats = mteb.get_task("AILAStatutes").metadata.descriptive_stats["test"]
    data = _beir_with_counts(
        tmp_path / "aila",
        stats["num_documents"],
        stats["num_queries"],
        stats["relevant_docs_statistics"]["num_relevant_docs"],
    )
    assert run_r2med("evaluate", "-d", data, "-o", tmp_path / "runs").returncode == 0
    out = tmp_path / "mteb"
    plain = run_r2med("export", tmp_path / "runs", "-o", out)
    assert plain.returncode == 2 and "--mteb-task" in plain.stderr
    res = run_r2med("export", tmp_path / "runs", "-o", out, "--mteb-task", "AILAStatutes")
    assert res.returncode == 0, res.stderr
    loaded = _loaded(mteb, out, "r2med/bm25", ["AILAStatutes"])
    result = loaded["AILAStatutes"]
    assert result.dataset_revision == mteb.get_task("AILAStatutes").metadata.revision
    (entry,) = result.scores["test"]
    stored = read_record(tmp_path / "runs" / "bm25" / "aila").to_json()["aggregate"]
    assert entry["main_score"] == pytest.approx(stored["ndcg_cut_10"], abs=TOL)
    # the dev split of the same folder is not MTEB's task (MTEB evaluates AILAStatutes on test)
    assert run_r2med("evaluate", "-d", data, "--split", "dev", "-o", tmp_path / "dev").returncode == 0
    dev = run_r2med("export", tmp_path / "dev", "-o", tmp_path / "m2", "--mteb-task", "AILAStatutes")
    assert dev.returncode == 2 and "the results are on the dev split" in dev.stderr
    assert not (tmp_path / "m2").exists()


def test_mteb_task_with_other_counts_is_refused_in_one_line(mteb, tmp_path, shared_dir):
    """The shared nfcorpus-test (3,162 docs) is not MTEB's NFCorpus (3,633 docs): refused, nothing written."""
    from conftest import run_r2med

    data = shared_dir / "data" / "nfcorpus-test"
    if not data.is_dir():
        pytest.skip("../shared/data/nfcorpus-test is absent")
    assert run_r2med("evaluate", "-d", data, "-o", tmp_path / "runs", "-k", "10").returncode == 0
    res = run_r2med("export", tmp_path / "runs", "-o", tmp_path / "mteb", "--mteb-task", "NFCorpus")
    assert res.returncode == 2
    assert res.stderr.strip().splitlines()[-1] == (
        "error: --mteb-task NFCorpus: nfcorpus-test (test) has 3,162 documents where MTEB's statistics have 3,633: "
        "not the same collection, not exported"
    )
    assert not (tmp_path / "mteb").exists()


class _Stats:
    """A task whose metadata holds ``stats`` as its descriptive statistics (mteb's own files, quoted below)."""

    def __init__(self, stats):
        from types import SimpleNamespace

        self.metadata = SimpleNamespace(
            name="T", descriptive_stats={"test": stats}, eval_splits=["test"], hf_subsets=["default"]
        )


#: mteb's descriptive statistics of three R2MED tasks (embeddings-benchmark/mteb
#: mteb/descriptive_stats/Retrieval/R2MED<Task>Retrieval.json), the fields that count
PMC_TREATMENT = {  # num_queries 5 beside 150 query texts, 28,954 documents beside 28,809 texts: not determined
    "num_documents": 28954,
    "num_queries": 5,
    "documents_text_statistics": {"total_text_length": 20063067, "average_text_length": 696.4166406331354},
    "queries_text_statistics": {"total_text_length": 263374, "average_text_length": 1755.8266666666666},
    "relevant_docs_statistics": {"num_relevant_docs": 315},
}
BIOINFORMATICS = {  # no num_documents / num_queries: counted from the text statistics
    "documents_text_statistics": {"total_text_length": 31273315, "average_text_length": 658.7877862273809},
    "queries_text_statistics": {"total_text_length": 68555, "average_text_length": 890.3246753246754},
    "relevant_docs_statistics": {"num_relevant_docs": 227},
}
MEDQA_DIAG = {"num_documents": 56194, "num_queries": 118, "num_relevant_docs": 522}  # an older mteb's layout


def test_only_the_counts_mtebs_statistics_determine_are_compared():
    """PMC-Treatment's true 150 queries are not refused for mteb's num_queries 5 (the statistics' own query texts
    say 150), and the documents and judgments are still checked; Bioinformatics' statistics without num_* keys
    still determine its counts; an older layout's flat keys are read."""
    from r2med.export.mteb import CollectionCounts, MtebCounts, check_mteb_task, mteb_task_counts

    counts = mteb_task_counts(_Stats(PMC_TREATMENT), "test")  # its document texts: 28,809, num_documents 28,954
    assert (counts.documents, counts.queries, counts.judgments) == (None, None, 315)
    assert counts.undetermined == (
        "documents: the statistics say 28,809 and 28,954",
        "queries: the statistics say 5 and 150",
    )
    warnings = check_mteb_task(_Stats(PMC_TREATMENT), "test", CollectionCounts(28954, 150, 315), "pmc")
    assert warnings == [
        "--mteb-task T: not compared, documents: the statistics say 28,809 and 28,954",
        "--mteb-task T: not compared, queries: the statistics say 5 and 150",
    ]
    with pytest.raises(R2MedError, match="314 non-zero judgments where MTEB's statistics have 315"):
        check_mteb_task(_Stats(PMC_TREATMENT), "test", CollectionCounts(28954, 150, 314), "pmc")
    assert mteb_task_counts(_Stats(BIOINFORMATICS), "test") == MtebCounts(47471, 77, 227)
    assert check_mteb_task(_Stats(BIOINFORMATICS), "test", CollectionCounts(47471, 77, 227), "bio") == []
    with pytest.raises(R2MedError, match="76 queries where MTEB's statistics have 77"):
        check_mteb_task(_Stats(BIOINFORMATICS), "test", CollectionCounts(47471, 76, 227), "bio")
    assert mteb_task_counts(_Stats(MEDQA_DIAG), "test") == MtebCounts(56194, 118, 522)
