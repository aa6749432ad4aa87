"""`reproduce`: the matrix covers every published retriever configuration, says why cells cannot run,
and runs (then reuses) what it can, graded against the published figure."""

from __future__ import annotations

import json

import pytest

from conftest import run_r2med
from r2med.data.loaders import load_folder
from r2med.evaluation.metrics import evaluate
from r2med.jobs import reproduce as rp
from r2med.protocol import published_figures
from r2med.report.reproduce_tables import plan_rows
from r2med.runs.record import read_record
from r2med.runs.run import read_trec
from test_dense_fixtures import bert_dir, bert_dir_2  # noqa: F401
from test_report import QUERIES, write_collection

#: The CSV's names of the later systems -> the r2med presets that run them (docs/later-models.md's table).
LATER_NAMES = {
    "ReasonEmbed-Qwen3-8B": "reasonembed-qwen3-8b",
    "ReasonEmbed-Qwen3-4B": "reasonembed-qwen3-4b",
    "ReasonEmbed-Llama-3.1-8B": "reasonembed-llama-8b",
    "ReasonEmbed-Basic-Qwen3-8B": "reasonembed-basic-qwen3-8b",
    "ReasonEmbed-Basic-Qwen3-4B": "reasonembed-basic-qwen3-4b",
    "ReasonEmbed-Basic-Llama-3.1-8B": "reasonembed-basic-llama-8b",
    "Qwen3-Embedding-8B": "qwen3-emb-8b",
    "Qwen3-Embedding-4B": "qwen3-emb-4b",
    "DIVER-Retriever-4B": "diver-4b",
    "RaDeR-gte-Qwen2-7B": "rader-7b",
    "gte-Qwen2-7B-instruct": "gte-qwen2-7b",
    "ReasonIR-8B": "reasonir-8b",
    "rerank:ReasonRank(32B)": "reasonrank-32b",
}


def test_dry_run_lists_every_published_retriever_configuration(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("VOYAGE_API_KEY", raising=False)
    env = rp.Environment(None)
    planned = rp.plan(rp.targets(), env)
    rows = plan_rows(planned)

    def label(f):
        if f.expansion.startswith("rerank:"):
            return f"{f.retriever}+{LATER_NAMES.get(f.expansion, f.expansion[len('rerank:') :])}"
        name = LATER_NAMES.get(f.retriever, f.retriever)
        return name if f.expansion == "none" else f"{name}+{f.expansion}-{f.llm}"

    expected = {
        (f.setting, label(f))
        for f in published_figures()
        if f.setting in ("base", "gar", "lrm_agentic", "reranker_top_10", "later_embedder", "later_leaderboard")
    }
    expected.add(("base", "medcpt-query-encoder"))  # the corrected MedCPT, run beside the published one
    assert {(r["setting"], r["config"]) for r in rows} == expected
    assert len(rows) == 68 + 3 + 12 + 1 + 1 and all(r["tasks"] == 8 for r in rows)
    by = {r["config"]: r for r in rows}
    # offline (HF_HUB_OFFLINE=1 in tests) with no data: nothing can run, and each says why
    assert not any(r["can_run"] for r in rows)
    assert "no data" in by["bm25"]["reason"] and "--data-dir" in by["bm25"]["reason"]
    assert "OPENAI_API_KEY" in by["openai"]["reason"] and "VOYAGE_API_KEY" in by["voyage"]["reason"]
    assert "no expansions" in by["bm25+hyde-gpt4"]["reason"]
    if env.gpu is None:
        assert "no GPU" in by["nv"]["reason"] and "no GPU" in by["e5"]["reason"]
        assert "no GPU" not in by["bge"]["reason"]  # small enough for CPU; blocked by weights/data instead
        # a reranker row needs its first stage (NV-Embed-v2) and its reranker
        assert "no GPU: nv" in by["nv+bge-reranker"]["reason"] and "no GPU: rankllama" in by["nv+rankllama"]["reason"]


class OverlapReranker:
    """A stand-in reranker: the number of query words a doc shares (ties are frequent on purpose)."""

    name = "overlap"

    def rerank(self, queries, candidates, corpus):
        return {
            qid: {did: float(len(set(queries[qid].split()) & set(corpus[did].split()))) for did, _ in cands}
            for qid, cands in candidates.items()
        }

    def config(self):
        return {"name": self.name}


def test_reranker_cells_rerank_the_first_stage_top10_and_score_only_it(tmp_path, monkeypatch):
    """As src/eval_reranker.py: the first stage's top 10 (ties in corpus order), reranked, scored alone."""
    from dataclasses import replace

    import pytrec_eval

    from r2med.reranking.base import RERANKERS
    from r2med.retrieval.bm25 import BM25
    from r2med.retrieval.registry import RETRIEVERS
    from test_report import synthetic

    docs, queries, qrels = synthetic(ndocs=60, nq=12)
    data = tmp_path / "data"
    write_collection(data, "Biology", docs, queries, qrels)
    # stand-ins: paper BM25 for NV-Embed-v2 (no GPU/weights here), word overlap for bge-reranker
    monkeypatch.setitem(  # BM25 runs no hub code; the record's options are the preset's: BM25 takes its defaults
        RETRIEVERS.records,
        "nv",
        replace(RETRIEVERS.get("nv"), factory=lambda task, options: BM25(cache=options.cache), trust_remote_code=False),
    )
    monkeypatch.setitem(
        RERANKERS.records,
        "bge-reranker",
        replace(RERANKERS.get("bge-reranker"), factory=lambda options: OverlapReranker()),
    )
    monkeypatch.setattr(
        rp, "spec_problem", lambda target, config, encoding=None: None
    )  # stand-ins run no published spec
    env = rp.Environment(data)
    matrix = rp.targets(settings=["base", "reranker_top_10"], retrievers=["nv"], tasks=["Biology"])
    planned = [rp.Planned(c, True, data="test") for c in matrix if c.label in ("nv", "nv+bge-reranker")]
    assert [p.target.label for p in planned] == ["nv", "nv+bge-reranker"]
    out = tmp_path / "repro"
    outcomes = rp.run_matrix(planned, out, env)
    assert all(o.status in ("pass", "fail") for o in outcomes), [o.detail for o in outcomes]
    first = read_trec(out / "nv" / "Biology" / "run.trec")
    coll = load_folder(data / "Biology")
    expected = {}
    for qid, ranking in first.items():
        # the paper: topk_pids from a stable sort over the corpus, then [:10], then the reranker's scores
        topk = [
            d
            for d, _ in sorted(
                ((d, ranking[d]) for d in coll.corpus if d in ranking), key=lambda item: item[1], reverse=True
            )
        ][:10]
        expected[qid] = {d: float(len(set(coll.queries[qid].split()) & set(coll.corpus[d].split()))) for d in topk}
    folder = out / "nv+bge-reranker" / "Biology"
    assert len(next(iter(first.values()))) == 60  # the first stage lists every doc; only its top 10 remain
    assert read_trec(folder / "run.trec") == expected
    stored = read_record(folder).to_json()
    assert stored["config"]["top_k"] == 10 and stored["config"]["keep_tail"] is False
    measures = {"ndcg_cut.10", "recall.100", "recip_rank"}
    ref = pytrec_eval.RelevanceEvaluator(coll.qrels, measures).evaluate(expected)
    for m in ("ndcg_cut_10", "recall_100", "recip_rank"):
        assert stored["aggregate"][m] == pytest.approx(sum(r[m] for r in ref.values()) / len(ref), abs=1e-12)
    graded = outcomes[1]
    assert graded.target.published == 22.79 and graded.value == pytest.approx(100 * stored["aggregate"]["ndcg_cut_10"])
    # the first stage is shared with the nv cell and everything is reused on a second run
    again = rp.run_matrix(planned, out, env)
    assert all(o.reused for o in again) and [o.value for o in again] == [o.value for o in outcomes]


def test_api_key_present_removes_that_reason(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    planned = rp.plan(rp.targets(settings=["base"], retrievers=["openai"]), rp.Environment(None))
    assert all("API key" not in r for p in planned for r in p.reasons)


@pytest.fixture
def data_dir(tmp_path):
    data = tmp_path / "data"
    folder = write_collection(data, "Biology")
    exp = folder / "hyde" / "gpt4"
    exp.mkdir(parents=True)
    hydocs = {
        "q1": "insulin fluids potassium ketoacidosis",
        "q2": "inhaled corticosteroids asthma children",
        "q3": "amoxicillin pneumonia",
        "q4": "triptans migraine dark room",
    }
    (exp / "query_with_hydoc.jsonl").write_text(
        "".join(json.dumps({"id": q, "text": QUERIES[q], "hy_doc": hydocs[q]}) + "\n" for q in QUERIES)
    )
    return data


def test_runs_what_it_can_grades_and_reuses(data_dir, tmp_path):
    env = rp.Environment(data_dir)
    matrix = rp.targets(settings=["base", "gar"], retrievers=["bm25"], tasks=["Biology"])
    planned = rp.plan(matrix, env)
    runnable = {p.target.label for p in planned if p.runnable}
    assert runnable == {"bm25", "bm25+hyde-gpt4"}  # the only expansion present locally
    out = tmp_path / "repro"
    outcomes = rp.run_matrix(planned, out, env)
    done = {o.target.label: o for o in outcomes if o.status != "skip"}
    assert set(done) == runnable
    coll = load_folder(data_dir / "Biology")
    for label, o in done.items():
        folder = out / label / "Biology"
        # the graded value is the trec_eval value of the written run
        ref = evaluate(read_trec(folder / "run.trec"), coll.qrels, ["ndcg_cut_10"]).aggregate["ndcg_cut_10"]
        assert o.value == pytest.approx(100 * ref, abs=1e-9)
        assert o.delta == pytest.approx(o.value - o.target.published)
        if label == "bm25+hyde-gpt4":  # issue 30: a local expansion file is graded only as the hub's (by content)
            assert o.status == "ungraded" and o.tolerance is None
            assert (
                o.detail.startswith("not the published bm25+hyde-gpt4: expansion file ") and "fingerprint" in o.detail
            )
        else:
            assert o.status == ("pass" if abs(o.delta) <= o.tolerance else "fail")
        assert read_record(folder).to_json()["retriever"] == label
    # the expansion was used: HyDE-only BM25 queries differ from the plain ones
    assert read_trec(out / "bm25" / "Biology" / "run.trec") != read_trec(
        out / "bm25+hyde-gpt4" / "Biology" / "run.trec"
    )
    skipped = [o for o in outcomes if o.status == "skip"]
    assert skipped and all("no expansions" in o.detail for o in skipped)
    again = rp.run_matrix(planned, out, env)
    assert all(o.reused for o in again if o.status != "skip")
    assert [o.value for o in again] == [o.value for o in outcomes]


def test_cli_dry_run_json_and_run_exit_code(data_dir, tmp_path):
    dry = run_r2med("reproduce", "--dry-run", "-r", "bm25", "--settings", "base", "-d", str(data_dir), "-f", "json")
    assert dry.returncode == 0, dry.stderr
    rows = json.loads(dry.stdout)
    assert len(rows) == 8 and [r["task"] for r in rows if r["runnable"]] == ["Biology"]
    run = run_r2med(
        "reproduce",
        "-r",
        "bm25",
        "--settings",
        "base",
        "-t",
        "Biology",
        "-d",
        str(data_dir),
        "-o",
        str(tmp_path / "o"),
        "-f",
        "json",
    )
    result = json.loads(run.stdout)
    assert result[0]["config"] == "bm25" and result[0]["published"] == 19.19
    # a toy collection does not reproduce the paper: FAIL, and the exit code says so
    assert result[0]["status"] == "fail" and run.returncode == 1
    bad = run_r2med("reproduce", "--dry-run", "-r", "nope")
    assert bad.returncode == 2 and "no published figures" in bad.stderr


def test_offline_hub_cache_is_a_data_source(hf_cache, tmp_path):
    """As on an offline cluster node: task files only in the standard Hugging Face cache, at the pinned commit."""
    from hub_server import fill_hf_cache
    from r2med.data.tasks import get_task

    src = write_collection(tmp_path / "src", "Bioinformatics")
    files = {name: (src / name).read_bytes() for name in ("corpus.jsonl", "query.jsonl", "qrels.jsonl")}
    fill_hf_cache(hf_cache, "R2MED/Bioinformatics", files, get_task("Bioinformatics").revision)
    env = rp.Environment(None)
    planned = rp.plan(rp.targets(settings=["base"], retrievers=["bm25"]), env)
    ready = [p for p in planned if p.runnable]
    assert [p.target.task for p in ready] == ["Bioinformatics"] and ready[0].data == "hub cache"
    outcomes = rp.run_matrix(planned, tmp_path / "out", env)
    ran = [o for o in outcomes if o.status != "skip"]
    assert len(ran) == 1 and ran[0].target.published == 21.55 and ran[0].value is not None
    assert (
        read_record(tmp_path / "out" / "bm25" / "Bioinformatics").to_json()["revision"]
        == get_task("Bioinformatics").revision
    )


# -- MedCPT: the graded row runs the published configuration, the corrected encoder runs beside it ----------

ARTICLE, QUERY = "ncbi/MedCPT-Article-Encoder", "ncbi/MedCPT-Query-Encoder"


def _cache_model(hf_cache, repo_id: str, folder: str, commit: str) -> None:
    from pathlib import Path

    from hub_server import fill_hf_cache

    files = {p.name: p.read_bytes() for p in Path(folder).iterdir() if p.is_file()}
    fill_hf_cache(hf_cache, repo_id, files, commit, repo_type="model")


def _medcpt_matrix(data_dir):
    env = rp.Environment(data_dir)
    return env, rp.plan(rp.targets(settings=["base"], retrievers=["medcpt"], tasks=["Biology"]), env)


def test_medcpt_graded_row_encodes_queries_with_the_article_encoder(data_dir, tmp_path, hf_cache, bert_dir):
    """Only the Article encoder is here: the published configuration needs nothing else (its queries go through
    it, as eval_bench.py:253-254 loads it twice) and is graded; the corrected row beside it needs the Query
    encoder and says so."""
    _cache_model(hf_cache, ARTICLE, bert_dir, "a" * 40)
    env, planned = _medcpt_matrix(data_dir)
    by = {p.target.label: p for p in planned}
    assert set(by) == {"medcpt", "medcpt-query-encoder"}
    assert by["medcpt"].runnable and by["medcpt"].target.graded
    assert not by["medcpt-query-encoder"].runnable and not by["medcpt-query-encoder"].target.graded
    assert by["medcpt-query-encoder"].reasons == [
        f"no weights: {QUERY} is not in the Hugging Face cache and the hub is unreachable"
    ]
    assert any("not graded" in n for n in by["medcpt-query-encoder"].notes)
    assert rp.paper_options("medcpt") == {"medcpt_published": True}
    outcomes = rp.run_matrix(planned, tmp_path / "o", env)
    graded = {o.target.label: o for o in outcomes}
    assert graded["medcpt"].status in ("pass", "fail") and graded["medcpt"].tolerance is not None
    assert graded["medcpt"].target.published == 2.15
    assert graded["medcpt-query-encoder"].status == "skip"
    config = read_record(tmp_path / "o" / "medcpt" / "Biology").to_json()["config"]
    assert config["options"]["medcpt_published"] is True
    assert config["encoder"]["model"] == config["encoder"]["query_model"] == ARTICLE


def test_medcpt_corrected_encoder_runs_beside_ungraded_and_report_grades_only_the_published(
    data_dir, tmp_path, hf_cache, bert_dir, bert_dir_2
):
    from r2med.report.reproduce_tables import to_json
    from r2med.results.folders import load_system
    from r2med.results.published import PublishedKey

    _cache_model(hf_cache, ARTICLE, bert_dir, "a" * 40)
    _cache_model(hf_cache, QUERY, bert_dir_2, "b" * 40)
    env, planned = _medcpt_matrix(data_dir)
    assert all(p.runnable for p in planned)
    dry = {r["config"]: r for r in plan_rows(planned)}
    assert dry["medcpt"]["notes"] == [] and "not graded" in dry["medcpt-query-encoder"]["notes"][0]
    out = tmp_path / "o"
    outcomes = {o.target.label: o for o in rp.run_matrix(planned, out, env)}
    beside = outcomes["medcpt-query-encoder"]
    assert beside.status == "ungraded" and beside.tolerance is None and "not graded" in beside.detail
    assert outcomes["medcpt"].status in ("pass", "fail")
    rows = {r["config"]: r for r in json.loads(to_json(outcomes=list(outcomes.values())))}
    assert rows["medcpt"]["graded"] is True and rows["medcpt-query-encoder"]["graded"] is False
    corrected = read_record(out / "medcpt-query-encoder" / "Biology").to_json()["config"]
    assert corrected["options"]["medcpt_published"] is False and corrected["encoder"]["query_model"] == QUERY
    # other query vectors: another ranking
    assert read_trec(out / "medcpt" / "Biology" / "run.trec") != read_trec(
        out / "medcpt-query-encoder" / "Biology" / "run.trec"
    )
    # `r2med report` grades the published configuration's folder, never the corrected one's
    assert load_system(out / "medcpt").published == PublishedKey("medcpt")
    assert load_system(out / "medcpt-query-encoder").published is None
    renamed = out / "renamed"
    (out / "medcpt-query-encoder").rename(renamed)
    assert load_system(renamed, name="medcpt").published is None  # by its recorded config, whatever its name
