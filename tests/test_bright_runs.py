"""BRIGHT's tasks through the commands: what is downloaded (and when nothing is), released runs imported and scored
from the examples alone, judgment variants (``--qrels``), the long-document headline.

References: the hub emulator's request log (tests/hub_server.py: which files were sent, at which commit), BRIGHT's
rules rebuilt here for scoring a run (judgments = ``gold_ids``, relevance 1; each query's ``excluded_ids`` never in
a run; pytrec_eval averaged over the queries in both the run and the judgments: BRIGHT's
``calculate_retrieval_metrics``), pytrec_eval itself, hashlib for the recorded sha256, and Anserini's fixed
judgments in ../shared/data/bright/qrels.
"""

from __future__ import annotations

import hashlib
import json
import random

import pytest

from bright_hub import (
    BRIGHT_PIN,
    BRIGHT_REPO,
    SHARED_BRIGHT,
    add_bright,
    bright_files,
    fill_bright_cache,
    have_shared_bright,
)
from conftest import recorded, run_r2med
from hub_server import HubEmulator
from test_hub import cli, downloads, one_line_error

pytestmark = [pytest.mark.shared]
pytest.importorskip("pyarrow")

NEWER = "3333333333333333333333333333333333333333"


@pytest.fixture(scope="module")
def files() -> dict[str, bytes]:
    if not have_shared_bright():
        pytest.skip("../shared/data/bright is not available")
    return bright_files(("leetcode", "biology", "pony"), queries=4, distractors=30)


def examples_of(files, task):
    from bright_hub import hub_path, read_parquet

    return read_parquet(files[hub_path("examples", task)])


def brights_scores(run, rows, measure="ndcg_cut_10"):
    """A run scored under BRIGHT's rules: excluded ids popped (BRIGHT asserts none is left), gold ids at relevance 1,
    pytrec_eval's queries summed and divided by their number."""
    import pytrec_eval

    qrels = {r["id"]: {g: 1 for g in r["gold_ids"]} for r in rows}
    excluded = {r["id"]: set(r["excluded_ids"]) - {"N/A"} for r in rows}
    clean = {q: {d: s for d, s in docs.items() if d not in excluded.get(q, ())} for q, docs in run.items()}
    scores = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "recall.1,1000", "recip_rank"}).evaluate(clean)
    return sum(s[measure] for s in scores.values()) / len(scores)


def released_run(rows, corpus_ids, seed=0) -> dict[str, dict[str, float]]:
    """A run as a third party releases one: some gold ids, some excluded ids on top, other documents."""
    rng = random.Random(seed)
    run = {}
    for r in rows[:-1]:  # one judged query left out: BRIGHT's averaging leaves it out too
        picks = [*r["gold_ids"][:1], *[e for e in r["excluded_ids"] if e != "N/A"][:3], *rng.sample(corpus_ids, 8)]
        picks = list(dict.fromkeys(picks))
        rng.shuffle(picks)
        run[r["id"]] = {d: float(len(picks) - i) for i, d in enumerate(picks)}
    return run


def write_trec(run, path):
    path.write_text(
        "".join(f"{q} Q0 {d} {i + 1} {s} mine\n" for q, docs in run.items() for i, (d, s) in enumerate(docs.items()))
    )


def test_evaluate_downloads_at_the_pin_then_nothing_and_revision_pairs_move_one_task(files, tmp_path):
    """The first run downloads each task's examples and documents at mteb's pin; the second makes no request (every
    file is cached at a commit); ``--revision bright:leetcode=main`` reads that task from the head's commit."""
    cache, home, out = tmp_path / "hf" / "hub", tmp_path / "home", tmp_path / "out"
    newer = {**files, "documents/leetcode-00000-of-00001.parquet": bright_files(("leetcode",), 4, 31, ())[
        "documents/leetcode-00000-of-00001.parquet"
    ]}  # fmt: skip
    with HubEmulator() as hub:
        hub.add(BRIGHT_REPO, files, BRIGHT_PIN)
        hub.add(BRIGHT_REPO, newer, NEWER, refs=("main",))
        args = ("evaluate", "-r", "bm25", "--tasks", "bright:leetcode,bright:pony", "-o", str(out))
        res = cli(*args, hub=hub, cache=cache, home=home)
        assert res.returncode == 0, res.stderr
        got = sorted(p.split("/resolve/", 1)[1] for p in downloads(hub))
        assert got == sorted(
            f"{BRIGHT_PIN}/{c}/{t}-00000-of-00001.parquet"
            for c in ("examples", "documents")
            for t in ("leetcode", "pony")
        )
        metrics = json.loads((out / "bm25" / "bright-leetcode" / "metrics.json").read_text())
        assert metrics["revision"] == BRIGHT_PIN and metrics["source"] == f"hf://datasets/{BRIGHT_REPO}@{BRIGHT_PIN}"
        before = len(hub.requests)
        res = cli(*args, hub=hub, cache=cache, home=home)
        assert res.returncode == 0, res.stderr
        assert [p for _, p in hub.requests[before:] if "/resolve/" in p] == []
        res = cli(*args, "--revision", "bright:leetcode=main", hub=hub, cache=cache, home=home)
        assert res.returncode == 0, res.stderr
        assert json.loads((out / "bm25" / "bright-leetcode" / "metrics.json").read_text())["revision"] == NEWER
        assert json.loads((out / "bm25" / "bright-pony" / "metrics.json").read_text())["revision"] == BRIGHT_PIN


def test_a_file_the_asked_commit_lacks_is_refused_before_any_download(files, tmp_path):
    """The hub as the record shows it (the pin holds the reasoning sets) and a later head of the test's own
    (``NEWER``: a commit the record does not know) without GPT-4's reasoning on pony: ``--revision main`` with
    ``-e reason:gpt4`` is refused in one line before a byte is downloaded."""
    cache, home = tmp_path / "hf" / "hub", tmp_path / "home"
    head = {k: v for k, v in files.items() if not k.startswith("gpt4_reason/")}
    with HubEmulator() as hub:
        add_bright(hub, files, head=NEWER)
        hub.add(BRIGHT_REPO, head, NEWER, refs=("main",))
        res = cli(
            "evaluate", "-r", "bm25", "--tasks", "bright:pony,bright:leetcode", "-e", "reason:gpt4", "--revision",
            "main", "-o", str(tmp_path / "o"), hub=hub, cache=cache, home=home,
        )  # fmt: skip
        line = one_line_error(res)
        assert f"{BRIGHT_REPO} has no file 'gpt4_reason/pony-00000-of-00001.parquet'" in line
        assert NEWER in line and line.endswith("nothing was downloaded")
        assert downloads(hub) == [] and hub.body_bytes == 0


def test_import_and_score_need_only_the_examples(files, tmp_path):
    """A released run (TREC) against a hub BRIGHT task: only its examples file is downloaded; each query's excluded
    documents are removed before scoring, and the figures are BRIGHT's rules' (rebuilt above from its code)."""
    cache, home, out = tmp_path / "hf" / "hub", tmp_path / "home", tmp_path / "out"
    rows = examples_of(files, "leetcode")
    from bright_hub import hub_path, read_parquet

    corpus_ids = [d["id"] for d in read_parquet(files[hub_path("documents", "leetcode")])]
    run = released_run(rows, corpus_ids)
    path = tmp_path / "mine.trec"
    write_trec(run, path)
    removed = sum(
        len(set(docs) & (set(r["excluded_ids"]) - {"N/A"})) for r in rows for q, docs in run.items() if q == r["id"]
    )
    assert removed > 0
    with HubEmulator() as hub:
        hub.add(BRIGHT_REPO, files, BRIGHT_PIN, refs=("main",))
        res = cli(
            "import",
            str(path),
            "--name",
            "mine",
            "--tasks",
            "bright:leetcode",
            "-o",
            str(out),
            hub=hub,
            cache=cache,
            home=home,
        )
        assert res.returncode == 0, res.stderr
        assert [p.rsplit("/", 2)[-2] for p in downloads(hub)] == ["examples"]  # no documents file was served
        metrics = json.loads((out / "mine" / "bright-leetcode" / "metrics.json").read_text())
        assert metrics["config"]["imported"]["excluded_removed"] == removed
        assert f"{removed} entries the protocol of bright:leetcode excludes removed" in res.stderr
        assert metrics["data"]["docs"] is None and metrics["dataset_fingerprint"] is None
        assert metrics["protocol"]["family"] == "bright"
        for measure in ("ndcg_cut_10", "recall_1000", "recip_rank"):
            assert metrics["aggregate"][measure] == pytest.approx(brights_scores(run, rows, measure), abs=1e-12)
        assert len(metrics["per_query"]) == len(rows) - 1  # the unanswered judged query is not counted
        # BRIGHT's own score file form ({qid: {docid: score}}, as run.py writes score.json): the same figures
        score_json = tmp_path / "score.json"
        score_json.write_text(json.dumps(run))
        res = cli(
            "import",
            str(score_json),
            "--name",
            "mine-json",
            "-t",
            "bright:leetcode",
            "-o",
            str(out),
            hub=hub,
            cache=cache,
            home=home,
        )
        assert res.returncode == 0, res.stderr
        as_json = json.loads((out / "mine-json" / "bright-leetcode" / "metrics.json").read_text())
        assert as_json["aggregate"] == metrics["aggregate"]
        scored = cli("score", "bright:leetcode", str(path), "--json", hub=hub, cache=cache, home=home)
        assert scored.returncode == 0, scored.stderr
        assert [p.rsplit("/", 2)[-2] for p in downloads(hub)] == ["examples"]  # cached: nothing more
        aggregate = json.loads(scored.stdout)["aggregate"]
        assert aggregate["ndcg_cut_10"] == pytest.approx(brights_scores(run, rows), abs=1e-12)
        assert "ndcg_cut_5" in aggregate and "recall_1000" in aggregate  # BRIGHT's measures by default


@pytest.fixture
def offline(files, hf_cache):
    fill_bright_cache(hf_cache, files)
    return files


def test_qrels_file_is_recorded_by_hash_shown_beside_its_figures_and_never_graded(offline, tmp_path):
    """Anserini's fixed judgments of biology (393 lines for the plain 372) in place of the task's own."""
    from r2med.data import read_qrels
    from r2med.evaluation.metrics import evaluate
    from r2med.results.grading import grade

    def recorded_key(config):  # the row a record is graded against, its task unknown (issue 30: results/grading)
        return grade(recorded(config)).key

    from r2med.runs.run import read_trec

    fixed = SHARED_BRIGHT / "qrels" / "biology.fixed.txt"
    assert len(fixed.read_text().splitlines()) == 393
    out = tmp_path / "out"
    res = run_r2med("evaluate", "-r", "bm25", "--tasks", "bright:biology", "--qrels", str(fixed), "-o", str(out))
    assert res.returncode == 0, res.stderr
    assert "§ judged with" in res.stdout and str(fixed) in res.stdout.replace("\n", "")
    folder = out / "bm25" / "bright-biology"
    metrics = json.loads((folder / "metrics.json").read_text())
    digest = hashlib.sha256(fixed.read_bytes()).hexdigest()
    assert metrics["config"]["judgments"] == {"file": str(fixed), "sha256": digest}
    assert metrics["protocol"]["qrels"] == {"file": str(fixed), "sha256": digest}
    judged = evaluate(read_trec(folder / "run.trec"), read_qrels(fixed))
    assert metrics["aggregate"]["ndcg_cut_10"] == pytest.approx(judged["ndcg_cut_10"], abs=1e-12)
    assert recorded_key(metrics["config"]) is None  # never graded against rows made with the task's own
    plain = run_r2med("evaluate", "-r", "bm25", "--tasks", "bright:biology", "-o", str(tmp_path / "plain"))
    assert plain.returncode == 0, plain.stderr
    other = json.loads((tmp_path / "plain" / "bm25" / "bright-biology" / "metrics.json").read_text())
    assert other["judgments_fingerprint"] != metrics["judgments_fingerprint"] and "judgments" not in other["config"]
    assert recorded_key(other["config"]) is not None  # the same run on the task's own judgments would be matched
    # the report marks every figure made with it, and says which file
    report = run_r2med("report", str(out), "--format", "json")
    assert report.returncode == 0, report.stderr
    board = json.loads(report.stdout)
    cells = board["systems"][0]["cells"]
    assert "§" in cells["bright:biology"]["marks"] and "§" in cells["Average"]["marks"]
    assert any(line.startswith("§ judged with") and digest[:16] in line for line in board["legend"])
    # one file judges one task
    two = run_r2med("evaluate", "--tasks", "bright:biology,bright:pony", "--qrels", str(fixed), "-o", str(out))
    assert two.returncode == 2 and "holds the judgments of one task" in two.stderr


def test_import_with_a_qrels_file(offline, tmp_path):
    fixed = SHARED_BRIGHT / "qrels" / "biology.fixed.txt"
    rows = examples_of(offline, "biology")
    run = {r["id"]: {g: 2.0 for g in r["gold_ids"]} for r in rows}
    path = tmp_path / "run.trec"
    write_trec(run, path)
    res = run_r2med(
        "import", str(path), "--name", "x", "-t", "bright:biology", "--qrels", str(fixed), "-o", str(tmp_path)
    )
    assert res.returncode == 0, res.stderr
    metrics = json.loads((tmp_path / "x" / "bright-biology" / "metrics.json").read_text())
    assert metrics["config"]["judgments"]["sha256"] == hashlib.sha256(fixed.read_bytes()).hexdigest()


def test_the_long_document_report_shows_recall_at_1(offline, tmp_path):
    """BRIGHT's leaderboard reports the long-document setting by Recall@1 (averaged over its 8 tasks): a report of
    long-document runs shows it without -m; the evaluate table too."""
    out = tmp_path / "out"
    res = run_r2med(
        "evaluate", "-r", "bm25", "--tasks", "bright:biology,bright:pony", "--long-documents", "-o", str(out)
    )
    assert res.returncode == 0, res.stderr
    assert "bm25: R@1 (x100)" in res.stdout
    metrics = json.loads((out / "bm25" / "bright-pony-long" / "metrics.json").read_text())
    assert metrics["task"] == "bright:pony:long" and metrics["protocol"]["judgments"] == "gold_ids_long"
    report = run_r2med("report", str(out), "--format", "json")
    assert report.returncode == 0, report.stderr
    board = json.loads(report.stdout)
    assert board["measure"] == "recall_1" and board["tasks"] == ["bright:biology:long", "bright:pony:long"]
    values = [metrics["aggregate"]["recall_1"]]
    values.append(
        json.loads((out / "bm25" / "bright-biology-long" / "metrics.json").read_text())["aggregate"]["recall_1"]
    )
    assert board["systems"][0]["cells"]["Average"]["value"] == pytest.approx(100 * sum(values) / 2, abs=1e-6)


def test_expansions_of_the_other_family_are_refused_before_any_download(offline, tmp_path):
    hyde = run_r2med("evaluate", "-r", "bm25", "--tasks", "bright:pony", "-e", "hyde:gpt4", "-o", str(tmp_path))
    assert hyde.returncode == 2 and "BRIGHT's hub holds no hyde:gpt4 expansions" in hyde.stderr
    reason = run_r2med("evaluate", "-r", "bm25", "--tasks", "Biology", "-e", "reason:gpt4", "-o", str(tmp_path))
    assert reason.returncode == 2 and "R2MED's tasks have none" in reason.stderr
    assert not list(tmp_path.rglob("metrics.json"))


def test_score_a_hub_task_with_a_qrels_file(offline, tmp_path):
    from r2med.data import read_qrels
    from r2med.evaluation.metrics import evaluate

    fixed = SHARED_BRIGHT / "qrels" / "biology.fixed.txt"
    rows = examples_of(offline, "biology")
    run = {r["id"]: {g: 2.0 for g in r["gold_ids"][:1]} for r in rows}
    path = tmp_path / "run.trec"
    write_trec(run, path)
    res = run_r2med("score", "bright:biology", str(path), "--qrels", str(fixed), "--json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["aggregate"]["ndcg_cut_10"] == pytest.approx(
        evaluate(run, read_qrels(fixed))["ndcg_cut_10"], abs=1e-12
    )
    bad = run_r2med("score", str(fixed), str(path), "--qrels", str(fixed))
    assert bad.returncode == 2 and "go with a hub task" in bad.stderr


def test_an_experiment_file_runs_the_long_document_setting(offline, tmp_path):
    (tmp_path / "exp.toml").write_text(
        'out = "runs"\n[data]\ntasks = ["bright:pony"]\nlong_documents = true\n[[retrievers]]\nname = "bm25"\n'
    )
    res = run_r2med("run", str(tmp_path / "exp.toml"))
    assert res.returncode == 0, res.stderr
    metrics = json.loads((tmp_path / "runs" / "bm25" / "bright-pony-long" / "metrics.json").read_text())
    assert metrics["task"] == "bright:pony:long" and metrics["config"]["k"] == 1000
