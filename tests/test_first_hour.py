"""A researcher's first hour, run as a script: one folder model across commands, measures that add up,
progress in log lines, results grouped by query metadata.

Two collections in one data folder (the shared MEDLINE collection and a small clinic collection with
query metadata), two first-stage systems evaluated into one results root, fused and reranked into the
same root, then read back by report, compare and score -- every command through the real command
line (``main()`` in this process), every figure checked against the run folders written on disk.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import minilm_path, run_r2med, shared_collection
from r2med.evaluation.metrics import DEFAULT_MEASURES
from r2med.runs.record import read_record

pytest.importorskip("torch")
from test_dense_fixtures import tiny_bert
from test_rerank import _tiny_bert as tiny_cross_encoder

DOCS = {
    "c1": "chest pain radiating to the left arm with sweating suggests myocardial infarction",
    "c2": "atrial fibrillation causes an irregular pulse and palpitations",
    "c3": "heart failure presents with ankle swelling and breathlessness on lying flat",
    "c4": "acute kidney injury follows dehydration and nephrotoxic drugs",
    "c5": "nephrotic syndrome gives heavy proteinuria oedema and low albumin",
    "c6": "kidney stones cause colicky flank pain and blood in the urine",
    "c7": "asthma attacks are relieved by inhaled salbutamol",
    "c8": "pneumonia presents with fever cough and lobar consolidation",
    "c9": "migraine headaches respond to triptans and rest in a dark room",
    "c10": "stroke causes sudden weakness of one side and slurred speech",
}
QUERIES = [  # id, text, body_system (blank: none), answer
    ("q1", "crushing chest pain and sweating", "cardiovascular", "myocardial infarction"),
    ("q2", "irregular pulse palpitations", "cardiovascular", "atrial fibrillation"),
    ("q3", "swollen ankles breathless lying down", "cardiovascular", "heart failure"),
    ("q4", "protein in urine and oedema", "renal", "nephrotic syndrome"),
    ("q5", "flank pain with blood in urine", "renal", "kidney stones"),
    ("q6", "wheeze relieved by inhaler", "respiratory", "asthma"),
    ("q7", "fever cough consolidation", "respiratory", "pneumonia"),
    ("q8", "sudden one sided weakness", "", "stroke"),
]
QRELS = {
    "q1": ["c1"],
    "q2": ["c2"],
    "q3": ["c3"],
    "q4": ["c5"],
    "q5": ["c6"],
    "q6": ["c7"],
    "q7": ["c8"],
    "q8": ["c10"],
}
SYSTEMS = ["bm25", "bm25+tiny-ce", "dense-tiny-bert", "rrf-bm25+dense-tiny-bert"]


def write_clinic(folder: Path) -> Path:
    folder.mkdir(parents=True)
    (folder / "corpus.jsonl").write_text("".join(json.dumps({"id": d, "text": t}) + "\n" for d, t in DOCS.items()))
    (folder / "query.jsonl").write_text(
        "".join(json.dumps({"id": q, "text": t, "body_system": b, "answer": a}) + "\n" for q, t, b, a in QUERIES)
    )
    (folder / "qrels.jsonl").write_text(
        "".join(json.dumps({"q_id": q, "p_id": d, "score": 1}) + "\n" for q, ds in QRELS.items() for d in ds)
    )
    return folder


def cli(root: Path, *args: str, ok: bool = True):
    res = run_r2med(*args, cwd=root)
    if ok:
        assert res.returncode == 0, (args, res.stderr[-3000:])
    return res


@pytest.fixture(scope="module")
def hour(tmp_path_factory):
    """The first hour, as a script; returns the working folder and each command's output."""
    root = tmp_path_factory.mktemp("first_hour")
    medline = shared_collection("medline-med")
    data = root / "data"
    data.mkdir()
    (data / "medline-med").symlink_to(medline, target_is_directory=True)
    write_clinic(data / "clinic")
    models = root / "models"
    tiny_bert(models / "tiny-bert")
    tiny_cross_encoder(models / "tiny-ce", 1, seed=3)
    out: dict[str, object] = {}
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("R2MED_HOME", str(root / "home"))
        # two systems into one results root; -m chooses the table's columns
        out["bm25"] = cli(
            root, "evaluate", "-r", "bm25", "-d", "data", "-o", "runs", "-m", "nDCG@10", "-m", "R@100", "-m", "MRR"
        )
        out["dense"] = cli(
            root,
            "evaluate",
            "-r",
            "dense",
            "--model",
            "models/tiny-bert",
            "--pooling",
            "mean",
            "-d",
            "data",
            "-o",
            "runs",
            "-m",
            "P@5",
        )
        # fuse the root's systems, rerank one system: both into the same root
        out["fuse"] = cli(root, "fuse", "runs")
        out["fuse again"] = cli(root, "fuse", "runs", "-o", "runs")  # the fused system is not fused into itself
        out["rerank"] = cli(root, "rerank", "--run", "runs/bm25", "--reranker", "models/tiny-ce", "-o", "runs")
        out["report"] = cli(root, "report", "runs", "-m", "MRR", "--format", "json")
        out["compare"] = cli(root, "compare", "runs", "-m", "R@100", "--format", "json")
        out["score"] = cli(root, "score", "data/medline-med", "runs/bm25", "--format", "json")
        out["score file"] = cli(
            root, "score", "data/medline-med/qrels.jsonl", "runs/bm25/medline-med/run.trec", "--format", "json"
        )
        out["one collection"] = cli(root, "evaluate", "-d", "data/medline-med", "-t", "clinic", "-o", "runs", ok=False)
    return root, out


def test_systems_names_and_folders(hour):
    root, out = hour
    runs = root / "runs"
    assert sorted(p.name for p in runs.iterdir()) == SYSTEMS  # one root, one folder per system, nothing nested
    for system in SYSTEMS:
        assert sorted(p.name for p in (runs / system).iterdir()) == ["clinic", "medline-med"]
        for task in ("clinic", "medline-med"):
            meta = read_record(runs / system / task).to_json()
            assert meta["retriever"] == system and meta["task"] == task
    # the custom model's system is named after the model; the rerank and fuse results after their inputs
    assert "results: runs/dense-tiny-bert" in out["dense"].stdout
    assert "runs: results root, 2 systems (bm25, dense-tiny-bert)" in out["fuse"].stderr
    assert "runs/bm25: system folder bm25 (2 tasks)" in out["rerank"].stderr
    again = out["fuse again"]
    assert "left out (rrf-bm25+dense-tiny-bert)" in again.stderr and "reused" in again.stdout
    report = json.loads(out["report"].stdout)
    assert [s["name"] for s in report["systems"]] == SYSTEMS
    assert "runs: results root, 4 systems" in out["report"].stderr


def test_measures_stored_and_shown(hour):
    root, out = hour
    runs = root / "runs"
    for system in SYSTEMS:
        stored = list(read_record(runs / system / "clinic").to_json()["aggregate"])
        assert stored == [*DEFAULT_MEASURES, *(["P_5"] if system == "dense-tiny-bert" else [])]
    header = next(line for line in out["bm25"].stdout.splitlines() if "queries" in line)
    assert re.findall(r"nDCG@10|R@100|MRR|P@5", header) == ["nDCG@10", "R@100", "MRR"]
    header = next(line for line in out["dense"].stdout.splitlines() if "queries" in line)
    assert re.findall(r"nDCG@10|R@100|MRR|P@5", header) == ["P@5"]
    # report -m MRR: a measure the evaluate commands did not ask for, read from every metrics.json
    report = json.loads(out["report"].stdout)
    assert report["measure"] == "recip_rank"
    for system in report["systems"]:
        for task in ("clinic", "medline-med"):
            stored = read_record(runs / system["name"] / task).to_json()["aggregate"]["recip_rank"]
            assert system["cells"][task]["value"] == pytest.approx(100 * stored, abs=1e-6)
    compared = json.loads(out["compare"].stdout)
    assert {(r["baseline"], r["measure"]) for r in compared} == {("bm25", "recall_100")}
    assert sorted({r["system"] for r in compared}) == SYSTEMS[1:]
    assert {r["task"] for r in compared} == {"clinic", "medline-med", "all queries (pooled)"}


def test_score_takes_folders_and_a_one_collection_data_dir_refuses_other_tasks(hour):
    root, out = hour
    assert json.loads(out["score"].stdout) == json.loads(out["score file"].stdout)
    stored = read_record(root / "runs" / "bm25" / "medline-med").to_json()["aggregate"]
    assert json.loads(out["score"].stdout)["aggregate"] == pytest.approx(stored, abs=1e-12)
    bad = out["one collection"]
    assert bad.returncode == 2 and "is one collection (medline-med)" in bad.stderr
    assert not (root / "runs" / "bm25" / "clinic-x").exists()


def test_demo_writes_apart_from_the_users_results(tmp_path, r2med_home):
    res = cli(tmp_path, "demo")  # the hub is offline here: the built-in demo collection
    demo = r2med_home / "demo"
    assert f"report with: r2med report {demo}" in " ".join(res.stdout.split())
    assert read_record(demo / "bm25" / "demo").to_json()["task"] == "demo"
    assert list(tmp_path.iterdir()) == []  # nothing in the working folder (no ./runs/demo)


def test_by_equals_a_hand_grouping_of_per_query_values(hour):
    """`report --by body_system`: each system's mean per body system over the queries of every task, and
    the counts, as grouped by hand from the metrics.json files and the query file."""
    root, _ = hour
    res = cli(root, "report", "runs", "--by", "body_system", "--format", "json")
    table = json.loads(res.stdout)
    assert table["by"] == "body_system" and table["average"] == "pooled" and table["systems"] == SYSTEMS
    groups: dict[str, list[str]] = {}
    for qid, _, body, _ in QUERIES:
        groups.setdefault(body or "(none)", []).append(qid)
    medline = sorted(read_record(root / "runs" / "bm25" / "medline-med").to_json()["per_query"])
    groups["(none)"] = groups["(none)"] + [f"medline-med/{q}" for q in medline]  # no metadata there
    rows = {r["value"]: r for r in table["rows"]}
    assert set(rows) == set(groups)
    for value, members in groups.items():
        assert rows[value]["queries"] == len(members)
        for system in SYSTEMS:
            per = {t: read_record(root / "runs" / system / t).to_json()["per_query"] for t in ("clinic", "medline-med")}
            values = [
                per["medline-med"][m.split("/", 1)[1]]["ndcg_cut_10"] if "/" in m else per["clinic"][m]["ndcg_cut_10"]
                for m in members
            ]
            assert rows[value]["mean"][system] == pytest.approx(100 * sum(values) / len(values), abs=1e-6)
            assert rows[value]["counts"][system] == len(members)
    # macro: the mean of per-task means over the tasks that have the value
    macro = json.loads(
        cli(root, "report", "runs", "--by", "body_system", "--average", "macro", "--format", "json").stdout
    )
    none = {r["value"]: r for r in macro["rows"]}["(none)"]
    per = {t: read_record(root / "runs" / "bm25" / t).to_json()["per_query"] for t in ("clinic", "medline-med")}
    task_means = [
        per["clinic"]["q8"]["ndcg_cut_10"],
        sum(v["ndcg_cut_10"] for v in per["medline-med"].values()) / len(per["medline-med"]),
    ]
    assert none["mean"]["bm25"] == pytest.approx(100 * sum(task_means) / 2, abs=1e-6)
    # an unknown key is an error listing those there are; the terminal table has the query counts
    bad = cli(root, "report", "runs", "--by", "organ", ok=False)
    assert bad.returncode == 2 and bad.stderr.strip().endswith(
        "available: answer (8 queries), body_system (7 queries), scenario"
    )
    text = cli(root, "report", "runs", "--by", "body_system").stdout
    assert re.search(r"cardiovascular\s+3\s", text), text


def test_by_in_the_html_report(hour):
    root, _ = hour
    page = root / "report.html"
    cli(root, "report", "runs", "--by", "body_system", "--html", str(page))
    text = page.read_text(encoding="utf-8")
    assert '<option value="body_system" selected>' in text
    # answer has one value per query, and no task is an R2MED task (one "(none)" scenario group): neither offered
    assert '<option value="scenario">' not in text and text.count('<div class="facet"') == 1
    assert "4 systems · 2 tasks" in text


# -- progress: the log lines of real command-line runs (stderr is not a terminal here) -------------


@pytest.fixture
def every_step(monkeypatch):
    """Progress log lines at every update (the default spaces them 10 s apart)."""
    from r2med.infra import progress

    progress.configure(interval_s=0, min_gap_s=0)
    yield
    progress.reset()


def progress_lines(stderr: str, prefix: str) -> list[str]:
    return [line[len("INFO ") :] for line in stderr.splitlines() if line.startswith("INFO " + prefix)]


def test_progress_of_bm25_indexing_and_the_task_loop(tmp_path, every_step, monkeypatch):
    from r2med.retrieval import bm25

    monkeypatch.setattr(bm25, "PROGRESS_MIN_DOCS", 1000)  # a low threshold: MEDLINE's 1,033 docs show steps
    data = shared_collection("medline-med")
    res = run_r2med("evaluate", "-d", str(data.parent), "-t", "medline-med,nfcorpus-test", "-o", str(tmp_path / "o"))
    assert res.returncode == 0, res.stderr
    steps = progress_lines(res.stderr, "BM25 index of 1,033 docs")
    assert [line.split(":")[0].split(" · ")[1] for line in steps] == [
        "analysing text",
        "weighting terms",
        "saving",
        "saving",
    ]  # each step's line as it ends, then the close
    assert [re.search(r": (\d)/3", line).group(1) for line in steps] == ["1", "2", "3", "3"]
    assert "took" in steps[-1]
    loop = progress_lines(res.stderr, "bm25 · ")
    assert [re.search(r"(\d)/2 \(", line).group(1) for line in loop] == ["1", "2", "2"]
    assert "took" in loop[-1] and "tasks/s" in loop[0]
    quiet = run_r2med("-q", "evaluate", "-d", str(data), "-o", str(tmp_path / "q"), "--no-cache")
    assert quiet.returncode == 0 and quiet.stderr == ""


def test_progress_of_dense_encoding(tmp_path, every_step):
    """Dense encoding with all-MiniLM-L6-v2: docs encoded of the total, docs/s, ETA, then cache hits."""
    lines = (shared_collection("medline-med") / "corpus.jsonl").read_text().splitlines()[:40]
    data = tmp_path / "medline-40"
    data.mkdir()
    (data / "corpus.jsonl").write_text("\n".join(lines) + "\n")
    for name in ("query.jsonl", "qrels.jsonl"):
        (data / name).write_text((shared_collection("medline-med") / name).read_text())
    model = tmp_path / "all-MiniLM-L6-v2"
    model.symlink_to(minilm_path(), target_is_directory=True)
    args = (
        "evaluate",
        "-r",
        "dense",
        "--model",
        str(model),
        "-d",
        str(data),
        "-o",
        str(tmp_path / "o"),
        "--batch-size",
        "8",
    )
    first = run_r2med(*args)
    assert first.returncode == 0, first.stderr
    assert (tmp_path / "o" / "dense-all-MiniLM-L6-v2" / "medline-40" / "metrics.json").exists()
    docs = progress_lines(first.stderr, "dense: encoding docs")
    done = [int(re.search(r"docs: (\d+)/40 ", line).group(1)) for line in docs]
    assert done[0] == 0 and done == sorted(done) and done[-1] == 40 and len(set(done)) >= 3  # a line per batch
    assert all(re.search(r", 0 cached$", line) for line in docs)
    moving = [line for line, n in zip(docs, done) if n]
    assert all(re.search(r"\d docs/s", line) for line in moving)
    assert all("ETA" in line for line in moving[:-1]) and "took" in docs[-1]
    queries = progress_lines(first.stderr, "dense: encoding queries")
    assert queries and "30/30" in queries[-1]
    again = run_r2med(*args, "--overwrite")  # results recomputed, embeddings from the cache
    assert again.returncode == 0, again.stderr
    docs = progress_lines(again.stderr, "dense: encoding docs")
    assert docs and all(line.endswith(", 40 cached") for line in docs) and not any("/40 " in line for line in docs)


def test_progress_of_reranking(tmp_path, every_step):
    from r2med.data.loaders import load_folder
    from r2med.jobs.evaluate import run_task
    from r2med.steps import EvaluateStep

    coll = load_folder(write_clinic(tmp_path / "data" / "clinic"))
    run_task(coll, EvaluateStep.of("bm25", cache=False, top_k=5), tmp_path / "runs" / "bm25")
    model = tiny_cross_encoder(tmp_path / "ce", 1, seed=3)
    res = run_r2med(
        "rerank", "--run", str(tmp_path / "runs"), "--reranker", str(model), "--top-k", "4", "--batch-size", "8"
    )
    assert res.returncode == 0, res.stderr
    pairs = progress_lines(res.stderr, f"{model}: reranking")
    assert [re.search(r": (\d+)/32 ", line).group(1) for line in pairs] == ["8", "16", "24", "32", "32"]
    assert all(re.search(r"[\d.]+ pairs/s", line) for line in pairs) and "took" in pairs[-1]


def test_progress_of_expansion_requests(tmp_path, every_step):
    """`r2med expand`: queries done of the total, failed, retried, retrying now, tokens -- retries counted as the
    server injected them."""
    pytest.importorskip("openai")
    from llm_server import Faults, LLMServer
    from test_expansion_generate import make_collection

    data = make_collection(tmp_path / "Biology", n_queries=12)
    faults = Faults(rate_429=0.2, retry_after=0.01, rate_500=0.2, seed=4)
    with LLMServer(faults) as server:
        res = run_r2med(
            "expand",
            "--method",
            "hyde",
            "--model",
            "test-model",
            "--base-url",
            server.base_url,
            "--data-dir",
            str(data),
            "--out",
            str(tmp_path / "exp"),
            "--concurrency",
            "1",
        )
        injected = sum(server.faults_sent.values())
    assert res.returncode == 0, res.stderr
    lines = progress_lines(res.stderr, "hyde · Biology")
    done = [int(re.search(r": (\d+)/12 ", line).group(1)) for line in lines]
    assert done == sorted(done) and done[-1] == 12 and "took" in lines[-1]
    last = re.search(
        r"(\d+) failed, (\d+) retried, (\d+) retrying, ([\d,]+) tokens in, ([\d,]+) tokens out$", lines[-1]
    )
    # at the end nothing waits to be sent again; one request at a time, so at most one was waiting before
    assert last and (int(last.group(1)), int(last.group(2)), int(last.group(3))) == (0, injected, 0) and injected > 0
    assert {int(re.search(r"(\d+) retrying", line).group(1)) for line in lines} <= {0, 1}
    assert int(last.group(4).replace(",", "")) > 0 and int(last.group(5).replace(",", "")) > 0


def test_progress_of_listwise_reranking(tmp_path, every_step):
    pytest.importorskip("openai")
    from llm_server import LLMServer
    from r2med.data.loaders import load_folder
    from r2med.jobs.evaluate import run_task
    from r2med.steps import EvaluateStep

    coll = load_folder(write_clinic(tmp_path / "data" / "clinic"))
    run_task(coll, EvaluateStep.of("bm25", cache=False, top_k=6), tmp_path / "runs" / "bm25")
    with LLMServer(responder=lambda messages, body: "[2] > [1]") as server:
        res = run_r2med(
            "rerank",
            "--run",
            str(tmp_path / "runs" / "bm25"),
            "--reranker",
            "listwise",
            "--model",
            "test-model",
            "--base-url",
            server.base_url,
            "--window",
            "4",
            "--step",
            "2",
            "--top-k",
            "6",
        )
    assert res.returncode == 0, res.stderr
    lines = progress_lines(res.stderr, "listwise: windows")
    done = [int(re.search(r": (\d+)/16 ", line).group(1)) for line in lines]  # 8 queries x 2 windows
    assert done == sorted(done) and done[-1] == 16 and lines[-1].endswith("0 failed, 0 retried")
