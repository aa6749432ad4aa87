"""The core CLI: tasks, evaluate (outputs, resume, errors), score, demo."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import run_r2med, shared_collection
from r2med import evaluate, load_folder, read_trec
from r2med.data import read_qrels
from test_data import make_r2med


def r2med(*args: str, cwd: Path | None = None, env_home: Path | None = None) -> subprocess.CompletedProcess:
    return run_r2med(*args, cwd=cwd, env={"R2MED_HOME": str(env_home)} if env_home is not None else None)


def test_tasks_lists_all_eight_then_brights_twelve():
    res = r2med("tasks", "--json")
    assert res.returncode == 0, res.stderr
    rows = json.loads(res.stdout)
    assert [r["name"] for r in rows if r["family"] == "bright"] == [
        f"bright:{t}"
        for t in (
            "biology", "earth_science", "economics", "psychology", "robotics", "stackoverflow", "sustainable_living",
            "leetcode", "pony", "aops", "theoremqa_theorems", "theoremqa_questions",
        )
    ]  # fmt: skip
    assert [r["name"] for r in rows if r["family"] == "r2med"] == [
        "Biology",
        "Bioinformatics",
        "Medical-Sciences",
        "MedXpertQA-Exam",
        "MedQA-Diag",
        "PMC-Treatment",
        "PMC-Clinical",
        "IIYi-Clinical",
    ]
    assert sum(r["queries"] for r in rows if r["family"] == "r2med") == 876
    assert sum(r["queries"] for r in rows if r["family"] == "bright") == 1384  # the 12 tasks (../shared README)


def test_evaluate_writes_run_folder_and_resumes(tmp_path):
    data = shared_collection("medline-med")
    out = tmp_path / "out"
    res = r2med("evaluate", "--retriever", "bm25", "--data-dir", str(data), "--out", str(out))
    assert res.returncode == 0, res.stderr
    folder = out / "bm25" / "medline-med"
    metrics = json.loads((folder / "metrics.json").read_text())
    assert set(metrics) >= {
        "task",
        "retriever",
        "config",
        "aggregate",
        "per_query",
        "timing",
        "versions",
        "dataset_fingerprint",
    }
    # The written run re-scores to the stored figures (independent path: file -> pytrec_eval).
    coll = load_folder(data)
    run = read_trec(folder / "run.trec")
    assert all(len(docs) == 100 for docs in run.values())
    rescored = evaluate(run, coll.qrels)
    assert rescored.aggregate["ndcg_cut_10"] == pytest.approx(metrics["aggregate"]["ndcg_cut_10"], abs=1e-9)
    assert metrics["per_query"]["Q1"]["ndcg_cut_10"] == pytest.approx(rescored.per_query["Q1"]["ndcg_cut_10"])
    export = json.loads((folder / "r2med_results.json").read_text())
    assert export["dataset_name"] == "medline-med" and export["model_name"] == "bm25"
    assert export["test"]["ndcg_at_10"] == pytest.approx(metrics["aggregate"]["ndcg_cut_10"])
    assert "mrr" in export["test"] and "recall_at_100" in export["test"]
    # A second run reuses the finished task (no rewrite).
    mtime = (folder / "run.trec").stat().st_mtime_ns
    res2 = r2med("evaluate", "--retriever", "bm25", "--data-dir", str(data), "--out", str(out))
    assert res2.returncode == 0 and "reused" in res2.stdout
    assert (folder / "run.trec").stat().st_mtime_ns == mtime
    # score: trec_eval-like output over the written run agrees.
    res3 = r2med("score", str(data / "qrels.jsonl"), str(folder / "run.trec"), "-m", "nDCG@10", "--json")
    assert res3.returncode == 0, res3.stderr
    assert json.loads(res3.stdout)["aggregate"]["ndcg_cut_10"] == pytest.approx(
        metrics["aggregate"]["ndcg_cut_10"], abs=1e-9
    )


def test_bm25_index_is_cached_and_reused(tmp_path):
    from r2med import BM25

    coll = load_folder(make_r2med(tmp_path / "c"))
    first = BM25().index(coll.corpus, corpus_fingerprint=coll.fingerprint)
    second = BM25().index(coll.corpus, corpus_fingerprint=coll.fingerprint)
    assert not first.built_from_cache and second.built_from_cache
    assert first.index_path == second.index_path
    other = BM25(k1=1.2).index(coll.corpus, corpus_fingerprint=coll.fingerprint)
    assert other.index_path != first.index_path and not other.built_from_cache
    params = json.loads((first.index_path / "params.json").read_text())
    assert params["k1"] == 0.9 and params["n_docs"] == 2 and params["corpus_fingerprint"] == coll.fingerprint
    q = {"q1": "glucose lowering"}
    assert first.search(q) == second.search(q)


@pytest.mark.parametrize(
    "file,content,where",
    [
        ("corpus.jsonl", '{"id": "d1", "text": "ok"}\n{"id": "d2" "text": "x"}\n', "corpus.jsonl:2:"),
        ("query.jsonl", '{"id": "q1"}\n', "query.jsonl:1:"),
        ("qrels.jsonl", '{"q_id": "q1", "p_id": "d1", "score": 1}\nnot json\n', "qrels.jsonl:2:"),
    ],
)
def test_bad_input_exits_2_with_file_line_and_no_output(tmp_path, file, content, where):
    root = make_r2med(tmp_path / "coll")
    (root / file).write_text(content, encoding="utf-8")
    out = tmp_path / "out"
    res = r2med("evaluate", "--data-dir", str(root), "--out", str(out))
    assert res.returncode == 2
    assert where in res.stderr and "Traceback" not in res.stderr
    assert len([line for line in res.stderr.strip().splitlines() if line.strip()]) <= 2
    assert not (out / "bm25" / "coll").exists()


def test_unknown_retriever_and_task(tmp_path):
    res = r2med("evaluate", "--retriever", "nope", "--data-dir", str(make_r2med(tmp_path / "c")))
    assert res.returncode == 2 and "unknown retriever 'nope'" in res.stderr
    res = r2med("evaluate", "--tasks", "Cardiology")
    assert res.returncode == 2 and "unknown task" in res.stderr


def test_qrels_pointing_outside_are_a_counted_warning(tmp_path):
    data = shared_collection("r2med-biology-demo")
    res = r2med("evaluate", "--data-dir", str(data), "--out", str(tmp_path / "o"))
    assert res.returncode == 0, res.stderr
    assert "2 judgment(s) name docs not in the corpus" in res.stderr
    assert (tmp_path / "o" / "bm25" / "r2med-biology-demo" / "metrics.json").exists()


def test_score_matches_trec_format(tmp_path):
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("1 0 a 1\n1 0 b 2\n2 0 x 1\n")
    run = tmp_path / "run.trec"
    run.write_text("1 Q0 b 1 2.0 t\n1 Q0 c 2 1.0 t\n2 Q0 y 1 1.0 t\n")
    res = r2med("score", str(qrels), str(run), "-m", "P@1", "-m", "MRR")
    assert res.returncode == 0, res.stderr
    lines = {tuple(line.split()[:2]): line.split()[2] for line in res.stdout.splitlines()}
    assert lines[("P_1", "all")] == "0.5000" and lines[("recip_rank", "all")] == "0.5000"
    assert lines[("num_q", "all")] == "2"
    bad = tmp_path / "bad.trec"
    bad.write_text("1 Q0 b 1 high t\n")
    res = r2med("score", str(qrels), str(bad))
    assert res.returncode == 2 and "bad.trec:1: score 'high' is not a number" in res.stderr
    bad.write_text("1 Q0 b 1 2.0 t\n1 Q0 c 2 nan t\n")
    res = r2med("score", str(qrels), str(bad))
    assert res.returncode == 2 and "bad.trec:2: score 'nan' is not a finite number" in res.stderr
    assert read_qrels(qrels)["1"] == {"a": 1, "b": 2}


def test_demo_falls_back_to_builtin_collection(tmp_path):
    res = r2med("demo", "--out", str(tmp_path / "demo"))
    assert res.returncode == 0, res.stderr
    assert "cannot be reached" in res.stdout and "demo" in res.stdout
    assert "offline mode is set (HF_HUB_OFFLINE)" in res.stdout  # which it was, in the same line
    folder = tmp_path / "demo" / "bm25" / "demo"
    metrics = json.loads((folder / "metrics.json").read_text())
    # the figure the README states for the demo, and the same from ir_measures on the written run
    import ir_measures

    from r2med.data import load_demo

    ndcg = metrics["aggregate"]["ndcg_cut_10"]
    reference = ir_measures.calc_aggregate(
        [ir_measures.nDCG @ 10], load_demo().qrels, ir_measures.read_trec_run(str(folder / "run.trec"))
    )[ir_measures.nDCG @ 10]
    assert ndcg == pytest.approx(reference, abs=1e-12) and round(ndcg, 4) == 0.7182
    assert "71.82" in res.stdout


def test_changed_queries_are_not_reused(tmp_path):
    from r2med.jobs.evaluate import run_task
    from r2med.steps import EvaluateStep

    root = make_r2med(tmp_path / "c")
    coll = load_folder(root)
    first = run_task(coll, EvaluateStep.of("bm25"), tmp_path / "o")
    assert not first.reused
    assert run_task(load_folder(root), EvaluateStep.of("bm25"), tmp_path / "o").reused
    (root / "query.jsonl").write_text('{"id": "q1", "text": "aspirin cox"}\n', encoding="utf-8")
    again = run_task(load_folder(root), EvaluateStep.of("bm25"), tmp_path / "o")
    assert not again.reused and next(iter(again.run["q1"])) == "d1"


def test_evaluate_with_other_measures_and_readable_outputs(tmp_path):
    import stat

    from r2med.evaluation.metrics import DEFAULT_MEASURES

    res = r2med(
        "evaluate",
        "--data-dir",
        str(make_r2med(tmp_path / "c")),
        "--out",
        str(tmp_path / "o"),
        "-m",
        "MRR",
        "-m",
        "nDCG@3",
    )
    assert res.returncode == 0, res.stderr
    folder = tmp_path / "o" / "bm25" / "c"
    metrics = json.loads((folder / "metrics.json").read_text())
    # -m adds to what is stored (the default set is always there) and chooses the table's columns
    assert list(metrics["aggregate"]) == [*DEFAULT_MEASURES, "ndcg_cut_3"]
    header = next(line for line in res.stdout.splitlines() if "queries" in line)
    assert [c for c in ("nDCG@10", "MRR", "nDCG@3", "R@100") if c in header] == ["MRR", "nDCG@3"]
    assert (folder / "run.trec").stat().st_mode & stat.S_IROTH  # not the 0600 of a bare temp file
    assert folder.stat().st_mode & stat.S_IXOTH


def test_import_and_help_load_no_heavy_modules():
    """``import r2med`` and ``r2med --help`` start without numpy, scipy, nltk or torch."""
    heavy = ("numpy", "scipy", "nltk", "torch", "pytrec_eval")
    # fresh processes, not conftest.run_r2med: this one has imported everything already
    code = (
        "import sys, runpy; sys.argv = ['r2med', '--help']\n"
        "try:\n    runpy.run_module('r2med', run_name='__main__')\nexcept SystemExit:\n    pass\n"
        f"print(sorted(m for m in {heavy!r} if m in sys.modules))"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert res.stdout.strip().splitlines()[-1] == "[]", res.stdout[-500:] + res.stderr[-2000:]
    res = subprocess.run(
        [sys.executable, "-c", f"import sys, r2med; print(sorted(m for m in {heavy!r} if m in sys.modules))"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.stdout.strip() == "[]", res.stderr
    res = subprocess.run(
        [sys.executable, "-c", "import r2med; print(r2med.BM25.__name__, r2med.load_folder.__name__)"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.stdout.split() == ["BM25", "load_folder"], res.stderr


def test_asking_for_a_new_measure_rescores_a_finished_task_without_recomputing_it(tmp_path):
    """-m only adds: a finished folder lacking the measure is re-scored from its run.trec (reused, same run),
    so `report -m X` then works; a folder stored by an older r2med with a subset of measures is completed."""
    from r2med.evaluation.metrics import DEFAULT_MEASURES

    data = make_r2med(tmp_path / "c")
    first = r2med("evaluate", "-d", str(data), "-o", str(tmp_path / "o"))
    assert first.returncode == 0, first.stderr
    folder = tmp_path / "o" / "bm25" / "c"
    run_before = (folder / "run.trec").read_bytes()
    report = r2med("report", str(tmp_path / "o"), "-m", "nDCG@3")
    assert report.returncode == 2 and "re-run `r2med evaluate -m nDCG@3`" in report.stderr
    again = r2med("evaluate", "-d", str(data), "-o", str(tmp_path / "o"), "-m", "nDCG@3")
    assert again.returncode == 0 and "reused" in again.stdout
    stored = json.loads((folder / "metrics.json").read_text())
    assert list(stored["aggregate"]) == [*DEFAULT_MEASURES, "ndcg_cut_3"]
    assert (folder / "run.trec").read_bytes() == run_before
    assert r2med("report", str(tmp_path / "o"), "-m", "nDCG@3").returncode == 0
    # an older folder that stored only nDCG@10 (`-m` used to limit what was stored)
    stored["aggregate"] = {"ndcg_cut_10": stored["aggregate"]["ndcg_cut_10"]}
    stored["per_query"] = {q: {"ndcg_cut_10": v["ndcg_cut_10"]} for q, v in stored["per_query"].items()}
    (folder / "metrics.json").write_text(json.dumps(stored))
    assert r2med("evaluate", "-d", str(data), "-o", str(tmp_path / "o")).returncode == 0
    assert list(json.loads((folder / "metrics.json").read_text())["aggregate"]) == list(DEFAULT_MEASURES)


class _Stop(Exception):
    """Raised by the spy below once it has the values (nothing after the parse runs)."""


@pytest.mark.parametrize(
    ("command", "flags", "expected"),
    [
        (
            ["evaluate", "-r", "dense"],
            ["--no-cache", "--model", "m/x", "--batch-size", "3", "--device", "cpu", "--max-length", "64"],
            {"cache": False, "model": "m/x", "batch_size": 3, "device": "cpu", "max_length": 64},
        ),
        (
            ["evaluate"],
            ["--k1", "1.2", "--b", "0.3", "--analyzer", "lucene", "--medcpt-published-encoder", "--encoder", "a:B"],
            {"cache": None, "k1": 1.2, "b": 0.3, "analyzer": "lucene", "medcpt_published": True, "encoder": "a:B"},
        ),
        (
            ["serve", "-t", "Biology"],
            ["--pooling", "mean", "--similarity", "dot", "--dtype", "fp16", "--trust-remote-code", "--k1", "2"],
            {"pooling": "mean", "similarity": "dot", "dtype": "fp16", "trust_remote_code": True, "k1": 2},
        ),
    ],
)
def test_evaluate_and_serve_give_the_retriever_options_their_flags_set(monkeypatch, command, flags, expected):
    """``evaluate`` and ``serve`` share one list of the retriever's own options (``cli/options.retriever_options``):
    each flag given reaches the step's parse as its option, each left off as not set (None), and ``serve`` has no
    ``--medcpt-published-encoder``.  The expected values are the flags' own."""
    import r2med.steps

    seen: list[dict[str, object]] = []

    def spy(values, origin):
        seen.append(dict(values))
        raise _Stop

    monkeypatch.setattr(r2med.steps, "evaluate_step", spy)
    with pytest.raises(_Stop):
        run_r2med(*command, *flags)
    names = ("cache", "k1", "b", "analyzer", "model", "batch_size", "device", "max_length", "pooling")
    names += ("similarity", "dtype", "trust_remote_code", "medcpt_published", "encoder")
    options = {k: v for k, v in seen[0].items() if k in names}
    assert options == {
        **{k: None for k in names if not (command[0] == "serve" and k == "medcpt_published")},
        **expected,
    }
