"""A run is graded only against the configuration it recorded, on the hub task's data, and runs are paired
only when made on the same data (issue 20, part 2): the CLI end to end, for each defect measured before."""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from conftest import minilm_path, recorded, run_r2med, shared_collection
from test_report import DOCS, QRELS, QUERIES, synthetic, write_collection


def hub_sized(monkeypatch, task: str, queries: int, docs: int) -> None:
    """The published counts of ``task`` made those of a tiny collection (so it counts as the hub task)."""
    from r2med.data.tasks import TASKS

    monkeypatch.setitem(TASKS, task, replace(TASKS[task], queries=queries, docs=docs))


def ok(*args: str) -> str:
    res = run_r2med(*args)
    assert res.returncode == 0, res.stderr + res.stdout
    return res.stdout


def one_line_error(*args: str) -> str:
    res = run_r2med(*args)
    assert res.returncode == 2, res.stdout + res.stderr
    lines = [line for line in res.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, res.stderr
    return lines[0]


def report_json(*paths: Path) -> dict:
    return json.loads(ok("report", *map(str, paths), "--format", "json"))


@pytest.fixture
def biology(tmp_path, monkeypatch) -> Path:
    """A local folder named Biology whose counts are (patched to be) the hub task's."""
    hub_sized(monkeypatch, "Biology", len(QUERIES), len(DOCS))
    return write_collection(tmp_path / "data", "Biology")


def test_a_bm25_run_named_contriever_is_graded_as_bm25(biology, tmp_path):
    out = ok("evaluate", "-r", "bm25", "--name", "contriever", "-d", str(biology), "--out", str(tmp_path / "runs"))
    assert "contriever" in out
    system = report_json(tmp_path / "runs")["systems"][0]
    assert system["name"] == "contriever" and system["published"]["label"] == "bm25"
    assert system["cells"]["Biology"]["published"] == 19.19  # BM25's figure, not contriever's 9.15


def test_a_minilm_run_named_bm25_is_not_graded(biology, tmp_path):
    ok(
        "evaluate",
        "-r",
        "dense",
        "--model",
        minilm_path(),
        "--name",
        "bm25",
        "-d",
        str(biology),
        "--out",
        str(tmp_path / "runs"),
    )
    system = report_json(tmp_path / "runs")["systems"][0]
    assert system["name"] == "bm25" and system["published"] is None
    assert system["cells"]["Biology"]["published"] is None
    table = ok("report", str(tmp_path / "runs"), "--format", "markdown")
    assert "19.19" not in table and "published" not in table


@pytest.mark.parametrize("name", ["nv", "bm25+hyde-gpt4", "bm25"])
def test_a_fused_run_is_graded_against_no_row_whatever_its_name(biology, tmp_path, name):
    runs = tmp_path / "runs"
    ok("evaluate", "-r", "bm25", "-d", str(biology), "--out", str(runs))
    ok("evaluate", "-r", "bm25-standard", "-d", str(biology), "--out", str(runs))
    ok(
        "fuse",
        str(runs / "bm25"),
        str(runs / "bm25-standard"),
        "--name",
        name,
        "-d",
        str(biology),
        "--out",
        str(tmp_path / "fused"),
    )
    system = report_json(tmp_path / "fused")["systems"][0]
    assert system["name"] == name and system["published"] is None
    assert system["cells"]["Biology"]["published"] is None


def test_a_local_folder_with_other_data_under_a_task_name_is_not_graded(tmp_path):
    data = tmp_path / "data" / "Biology"
    shutil.copytree(shared_collection("medline-med"), data)  # 30 queries, 1,033 docs: not the hub's Biology
    out = ok("evaluate", "-r", "bm25", "-d", str(data), "--out", str(tmp_path / "runs"))
    assert "19.19" not in out
    assert (
        "no published bm25 figure: Biology: data from a local folder has 30 queries and 1033 docs, "
        "the hub task 103 and 57359" in " ".join(out.split())
    )
    payload = report_json(tmp_path / "runs")
    cell = payload["systems"][0]["cells"]["Biology"]
    assert cell["published"] is None and cell["delta"] is None
    assert (
        cell["ungraded"] == "Biology: data from a local folder has 30 queries and 1033 docs, the hub task 103 and 57359"
    )
    assert any("no published figure for bm25: Biology: data from a local folder" in line for line in payload["legend"])
    table = ok("report", str(tmp_path / "runs"), "--format", "markdown")
    assert "19.19" not in table and "30 queries and 1033 docs" in table


def test_a_local_folder_with_the_hub_counts_is_graded(biology, tmp_path):
    ok("evaluate", "-r", "bm25", "-d", str(biology), "--out", str(tmp_path / "runs"))
    cell = report_json(tmp_path / "runs")["systems"][0]["cells"]["Biology"]
    assert cell["published"] == 19.19 and cell["ungraded"] is None


def test_a_run_that_recorded_no_counts_is_not_graded(tmp_path):
    from r2med.runs.run import write_task_results

    payload = {
        "task": "Biology",
        "retriever": "bm25",
        "config": {"retriever": "bm25"},
        "aggregate": {"ndcg_cut_10": 0.2},
        "per_query": {"q1": {"ndcg_cut_10": 0.2}},
    }
    write_task_results(tmp_path / "runs" / "bm25" / "Biology", {"q1": {"d1": 1.0}}, payload)
    cell = report_json(tmp_path / "runs")["systems"][0]["cells"]["Biology"]
    assert cell["published"] is None and "no recorded counts" in cell["ungraded"]


def test_a_jobs_result_holds_the_data_its_record_reads_back(tmp_path):
    """What a job's result grades (``TaskResult.data``, made from the collection) is what its ``metrics.json``,
    read back by the one reader, says of the data (``RunRecord.run_data``): counts, fingerprints, source, protocol
    and the expansion the config recorded -- written, reused and read back alike."""
    from r2med.data import load_folder
    from r2med.measures import HEADLINE
    from r2med.results.folders import finish_task, reuse
    from r2med.runs.record import read_record

    data = write_collection(tmp_path / "data", "Biology")
    coll = load_folder(data)
    run = {q: {d: float(len(DOCS) - i) for i, d in enumerate(DOCS)} for q in QUERIES}
    expansion = {"method": "reason", "llm": "gpt4", "file": "/elsewhere/gpt4_reason.parquet", "revision": "a" * 40}
    config = {"step": "evaluate", "retriever": "bm25", "expansion": expansion}
    made = finish_task(coll, "bm25", run, config, tmp_path / "runs" / "bm25", [HEADLINE], False, {})
    assert made.folder is not None
    stored = read_record(made.folder).run_data()
    assert made.data == stored
    # the hand-checked fields: the collection's own counts and source, the local protocol, the recorded expansion
    assert stored.data is not None and (stored.data.queries, stored.data.docs) == (len(QUERIES), len(DOCS))
    assert stored.source is not None and str(data) in stored.source and stored.revision is None
    assert stored.protocol is not None and stored.protocol.family is None
    assert stored.expansion is not None and (stored.expansion.llm, stored.expansion.revision) == ("gpt4", "a" * 40)
    again = reuse(tmp_path / "runs" / "bm25", config, coll, [HEADLINE], False)
    assert again is not None and again.reused and again.data == stored


def two_runs_on_different_judgments(tmp_path: Path, monkeypatch) -> tuple[Path, Path]:
    """``bm25`` on Biology and ``bm25-standard`` on another Biology: same corpus, unrelated judgments."""
    docs, queries, qrels = synthetic()
    other = {q: {d: 1 for d in list(docs)[i % 7 * 5 : i % 7 * 5 + 3]} for i, q in enumerate(qrels)}
    first = write_collection(tmp_path / "a", "Biology", docs, queries, qrels)
    second = write_collection(tmp_path / "b", "Biology", docs, queries, other)
    ok("evaluate", "-r", "bm25", "-d", str(first), "--out", str(tmp_path / "runs"))
    ok("evaluate", "-r", "bm25-standard", "-d", str(second), "--out", str(tmp_path / "runs"))
    return tmp_path / "runs" / "bm25", tmp_path / "runs" / "bm25-standard"


def test_compare_refuses_runs_on_different_data(tmp_path, monkeypatch):
    a, b = two_runs_on_different_judgments(tmp_path, monkeypatch)
    line = one_line_error("compare", str(a), str(b))
    assert "Biology: bm25 and bm25-standard were made on different data (another queries or judgments" in line
    line = one_line_error("report", str(a), str(b), "--baseline", "bm25")
    assert "made on different data" in line
    ok("report", str(a), str(b))  # no pairing asked for: the table itself is fine


def test_compare_refuses_runs_on_different_corpora(tmp_path):
    first = write_collection(tmp_path / "a", "Biology")
    second = write_collection(tmp_path / "b", "Biology", {**DOCS, "d11": "another document"}, QUERIES, QRELS)
    ok("evaluate", "-r", "bm25", "-d", str(first), "--out", str(tmp_path / "runs"))
    ok("evaluate", "-r", "bm25-standard", "-d", str(second), "--out", str(tmp_path / "runs"))
    line = one_line_error("compare", str(tmp_path / "runs" / "bm25"), str(tmp_path / "runs" / "bm25-standard"))
    assert "another corpus" in line


def test_fuse_refuses_runs_on_different_data(tmp_path, monkeypatch):
    a, b = two_runs_on_different_judgments(tmp_path, monkeypatch)
    line = one_line_error("fuse", str(a), str(b), "--out", str(tmp_path / "fused"))
    assert "made on different data" in line
    assert not (tmp_path / "fused").exists() or not any((tmp_path / "fused").rglob("metrics.json"))


def test_runs_on_the_same_data_still_compare(tmp_path):
    data = write_collection(tmp_path / "data", "Biology")
    ok("evaluate", "-r", "bm25", "-d", str(data), "--out", str(tmp_path / "runs"))
    ok("evaluate", "-r", "bm25-standard", "-d", str(data), "--out", str(tmp_path / "runs"))
    ok("compare", str(tmp_path / "runs" / "bm25"), str(tmp_path / "runs" / "bm25-standard"))


def test_a_reranked_run_keeps_its_first_stage_record_and_is_graded_by_it(biology, tmp_path):
    """``rerank`` keeps the first stage's recorded configuration; a BM25 first stage named ``nv`` reranked by
    monobert's record is not the published nv+monobert row (no reranked BM25 row is published)."""
    pytest.importorskip("torch")
    from r2med.results.grading import grade, match_published
    from r2med.results.published import PublishedKey
    from test_rerank import _tiny_bert

    runs = tmp_path / "runs"
    ok("evaluate", "-r", "bm25", "--name", "nv", "-d", str(biology), "--out", str(runs))
    model = _tiny_bert(tmp_path / "model", 1, seed=5)
    ok("rerank", "--run", str(runs / "nv"), "--reranker", str(model), "-d", str(biology), "--name", "nv+monobert")
    first = json.loads((runs / "nv" / "Biology" / "metrics.json").read_text())["config"]
    config = json.loads((runs / "nv+monobert" / "Biology" / "metrics.json").read_text())["config"]
    assert config["first_stage"]["config"] == first
    assert match_published([recorded(config)]) is None  # a random cross-encoder under the name nv+monobert
    # monobert's own record sets no option (schema 3 records the step's options beside what they resolved to):
    # the tiny model's ``model`` option is left out, else it would be graded as another model (below)
    as_monobert = {**config, "options": {}, "reranker": {"reranker": "monobert"}}
    assert match_published([recorded(as_monobert)]) is None  # its first stage ran BM25, whatever it was named
    nv_first = {**as_monobert, "first_stage": {**config["first_stage"], "config": {"retriever": "nv", "options": {}}}}
    assert match_published([recorded(nv_first)]) == PublishedKey("nv", "rerank:monobert")
    tiny = {**nv_first, "options": config["options"]}  # the tiny model under monobert's name: another checkpoint
    got = grade(recorded(tiny))
    assert got.key is None and got.row == PublishedKey("nv", "rerank:monobert")
    assert got.reason == f"not the published nv+monobert: model {model}, published castorini/monobert-large-msmarco"
    system = report_json(runs / "nv+monobert")["systems"][0]
    assert system["published"] is None


# -- graded from the whole spec (issue 30): a table keyed by recorded specs ---------------------------------------
#
# Each config is a task's ``metrics.json`` ``config`` as r2med writes it (schema 3: the step spec's ``options``
# beside the facts the run recorded), written by hand; the expected row and reason are typed from the records'
# published settings (the R2MED paper's code, the model cards, ReasonRank's scripts) -- names play no part.

from r2med.data.tasks import get_task  # noqa: E402
from r2med.expansion.precomputed import NO_LOCAL_FILES  # noqa: E402
from r2med.results.published import PublishedKey  # noqa: E402

PINNED = get_task("Biology").revision
HUB_FILE = f"/hf/hub/datasets--R2MED--Biology/snapshots/{PINNED}/hyde/gpt4/query_with_hydoc.jsonl"
#: an expansion read from the hub (no local file or folder: the stamp of none; a cache snapshot's file)
HUB_HYDE = {
    "method": "hyde",
    "llm": "gpt4",
    "trace": "auto",
    "rule": "paper-v1",
    "files": NO_LOCAL_FILES,
    "file": HUB_FILE,
}
#: the same expansion from a file given by hand (``--expansion-file``: its stamp is of that file)
LOCAL_HYDE = {**HUB_HYDE, "files": "0123456789abcdef0123", "file": "/my/hyde/gpt4/query_with_hydoc.jsonl"}
AUTHORS_BIOLOGY = "030a9b57ccd490cd323584d48a62b107a5ec819648d6bfe43b445276ff8cefb8"  # sha256, ReasonRank@306df51


def bm25_config(k: int = 100, **options) -> dict:
    used = {"k1": 0.9, "b": 0.4, **options}
    return {
        "step": "evaluate",
        "retriever": "bm25",
        "options": {"cache": True, "k1": 0.9, "b": 0.4, "analyzer": "english", **options},
        "k": k,
        "flavour": "paper",
        "k1": used["k1"],
        "b": used["b"],
    }


def dense_config(retriever: str, k: int = 100, scored: str = "cosine", **options) -> dict:
    """A dense run's record: its options, and the similarity it ``scored`` with (what it recorded it computed)."""
    return {
        "step": "evaluate",
        "retriever": retriever,
        "options": {"cache": True, **options},
        "k": k,
        "similarity": scored,
        "search": "exact",
    }


NV_RUN = dense_config("nv", trust_remote_code=True)
E5_RUN = dense_config("e5")


def reranked(reranker: dict, first: dict, top_k: int = 10, **options) -> dict:
    return {
        "step": "rerank",
        "options": options,
        "top_k": top_k,
        "keep_tail": True,
        "reranker": reranker,
        "first_stage": {"retriever": first.get("retriever"), "folder": "/runs/x/Biology", "config": first},
    }


BGE_R = {"reranker": "bge-reranker", "model": "BAAI/bge-reranker-v2-m3", "tokenizer": "BAAI/bge-reranker-v2-m3"}
BGE_R = {**BGE_R, "revision": None, "max_length": 512, "label": None, "dtype": "fp32", "kind": "cross-encoder"}
MONOBERT = {**BGE_R, "reranker": "monobert", "model": "castorini/monobert-large-msmarco", "label": 1}
MONOBERT["tokenizer"] = MONOBERT["model"]
RANKLLAMA = {
    "reranker": "rankllama",
    "base": "meta-llama/Llama-2-7b-hf",
    "lora": "castorini/rankllama-v1-7b-lora-passage",
    "tokenizer": "meta-llama/Llama-2-7b-hf",
    "max_length": 1024,
    "kind": "rankllama",
}
REASONRANK = {
    "reranker": "reasonrank-32b",
    "kind": "reasonrank",
    "preset": "reasonrank-32b",
    "model": "liuwenhan/reasonrank-32B",
    "base_url": "http://127.0.0.1:8000/v1",
    "window": 20,
    "step": 10,
    "published_depth": 100,
    "temperature": 0.0,
    "max_tokens": 3172,
    "tokenizer": "liuwenhan/reasonrank-32B",
    "max_passage_tokens": 512,
    "prompt_version": 1,
}
AUTHORS_E5 = {"step": "import", "retriever": "imported", "imported": {"file": "/e5.txt", "sha256": AUTHORS_BIOLOGY}}

BM25 = PublishedKey("bm25")
HYDE = PublishedKey("bm25", "hyde", "gpt4")
NV = PublishedKey("nv")
BGE = PublishedKey("bge")
NV_BGE_R = PublishedKey("nv", "rerank:bge-reranker")
NV_MONOBERT = PublishedKey("nv", "rerank:monobert")
NV_RANKLLAMA = PublishedKey("nv", "rerank:rankllama")
E5_REASONRANK = PublishedKey("e5", "rerank:ReasonRank(32B)")
SNAPSHOT = "/hf/hub/models--BAAI--bge-reranker-v2-m3/snapshots/953dc6f6f85a1b2dbfca4c34a2796e7dde08d41e"
ONE_STAGE = "first stage r2med's e5 run, published the authors' E5-Mistral-7B-Instruct top 100"

#: (id, recorded config, the row it is graded against, the row it names, the reason's text after "not the
#: published <row>: ", or None when graded / naming no row)
SPEC_TABLE = [
    # BM25: flavour, k1, b, analyzer, depth
    ("bm25", bm25_config(), BM25, BM25, None),
    ("bm25 k1", bm25_config(k1=1.2), None, BM25, "k1 1.2, published 0.9"),
    ("bm25 b", bm25_config(b=0.75), None, BM25, "b 0.75, published 0.4"),
    ("bm25 lucene analyzer", bm25_config(analyzer="lucene"), BM25, BM25, None),  # the same tokens (README)
    ("bm25 top-k 5", bm25_config(k=5), None, BM25, "top_k 5, published at least 10"),
    ("bm25 top-k 10", bm25_config(k=10), BM25, BM25, None),
    (
        "bm25 flavour recorded",
        {**bm25_config(), "flavour": "standard"},
        None,
        BM25,
        "flavour standard, published paper",
    ),
    ("bm25-standard", {**bm25_config(), "retriever": "bm25-standard", "flavour": "standard"}, None, None, None),
    (
        "bm25 v2 k1 (no options)",
        {"retriever": "bm25", "flavour": "paper", "k1": 1.2, "b": 0.4},
        None,
        BM25,
        "k1 1.2, published 0.9",
    ),
    # expansions: method, LLM, trace, rule and the hub's file
    ("hyde from the hub", {**bm25_config(), "expansion": HUB_HYDE}, HYDE, HYDE, None),
    (
        "hyde from the hub at another commit",
        {**bm25_config(), "expansion": {**HUB_HYDE, "file": HUB_FILE.replace(PINNED, "a" * 40)}},
        None,
        HYDE,
        f"expansion read at hub commit aaaaaaaaaaaa, published: the hub's file at {PINNED[:12]}",
    ),
    (
        "hyde from a file given by hand",
        {**bm25_config(), "expansion": LOCAL_HYDE, "expansion_fingerprint": "ffffffffffffffffffff"},
        None,
        HYDE,
        "expansion file /my/hyde/gpt4/query_with_hydoc.jsonl (fingerprint ffffffffffff), published the hub's "
        "hyde/gpt4 file of Biology (r2med has verified no copy of it here: it records each one it downloads)",
    ),
    (
        "hyde from a file with no fingerprint (schema 2)",
        {**bm25_config(), "expansion": LOCAL_HYDE},
        None,
        HYDE,
        "expansion file /my/hyde/gpt4/query_with_hydoc.jsonl with no recorded fingerprint (made before r2med "
        "recorded one), published the hub's hyde/gpt4 file of Biology",
    ),
    (
        "hyde trace",
        {**bm25_config(), "expansion": {**HUB_HYDE, "trace": "none"}},
        None,
        HYDE,
        "expansion trace none, published auto (by the LLM's name)",
    ),
    (
        "hyde rule",
        {**bm25_config(), "expansion": {**HUB_HYDE, "rule": "v0"}},
        None,
        HYDE,
        "expansion rule v0, published paper-v1",
    ),
    ("an LLM with no row", {**bm25_config(), "expansion": {**HUB_HYDE, "llm": "not-an-llm"}}, None, None, None),
    ("no expansion", {**bm25_config(), "expansion": None}, BM25, BM25, None),
    # dense presets: every option that changes what they compute; batch size, device and the opt-in do not
    ("nv", {**NV_RUN, "options": {**NV_RUN["options"], "batch_size": 4, "device": "cuda"}}, NV, NV, None),
    ("bge", dense_config("bge"), BGE, BGE, None),
    ("bge max length", dense_config("bge", max_length=128), None, BGE, "max_length 128, published 512"),
    ("bge its own max length", dense_config("bge", max_length=512), BGE, BGE, None),
    ("bge pooling", dense_config("bge", pooling="mean"), None, BGE, "pooling mean, published cls"),
    ("bge normalisation", dense_config("bge", normalize=False), None, BGE, "normalize False, published True"),
    (
        "bge similarity",
        dense_config("bge", scored="dot", similarity="dot"),
        None,
        BGE,
        "similarity dot, published cosine",
    ),
    ("bge similarity recorded", dense_config("bge", scored="dot"), None, BGE, "similarity dot, published cosine"),
    (
        "bge instructions",
        dense_config("bge", query_instruction="Q: "),
        None,
        BGE,
        "query_instruction Q: , published not set",
    ),
    (
        "bge model",
        dense_config("bge", model="org/other"),
        None,
        BGE,
        "model org/other, published BAAI/bge-large-en-v1.5",
    ),
    # a folder named after the checkpoint: its name shows nothing of its weights (random weights could sit there)
    (
        "bge a folder named after it",
        dense_config("bge", model="/models/bge-large-en-v1.5"),
        None,
        BGE,
        "model /models/bge-large-en-v1.5, published BAAI/bge-large-en-v1.5",
    ),
    ("bge the hub id", dense_config("bge", model="BAAI/bge-large-en-v1.5"), BGE, BGE, None),
    (
        "bge its Hugging Face cache snapshot",
        dense_config("bge", model="/hf/hub/models--BAAI--bge-large-en-v1.5/snapshots/" + "d" * 40),
        BGE,
        BGE,
        None,
    ),
    (
        "bge model_revision",
        dense_config("bge", model_revision="abc"),
        None,
        BGE,
        "model_revision abc, published not set",
    ),
    (  # a record written while the option was named ``revision``: read as the option it was
        "bge revision recorded before its rename",
        dense_config("bge", revision="abc"),
        None,
        BGE,
        "model_revision abc, published not set",
    ),
    ("bge faiss", dense_config("bge", faiss="IVF64,Flat"), None, BGE, "faiss IVF64,Flat, published not set"),
    ("bge search recorded", {**dense_config("bge"), "search": "HNSW32"}, None, BGE, "search HNSW32, published exact"),
    ("bge bf16 asked, not recorded as run", dense_config("bge", dtype="bf16"), BGE, BGE, None),
    (
        "bge ran in bf16 (another precision class than the paper's fp32)",
        {**dense_config("bge", dtype="bf16"), "encoder": {"dtype": "bf16"}},
        None,
        BGE,
        "dtype bf16, published fp32 (half precision, published full (fp32))",
    ),
    (
        "nv ran in bf16 (the paper's fp16: the same class, graded with a wider tolerance)",
        {**NV_RUN, "encoder": {"dtype": "bf16"}},
        PublishedKey("nv"),
        PublishedKey("nv"),
        None,
    ),
    (
        "nv ran in fp32 (the paper's fp16: another class)",
        {**NV_RUN, "encoder": {"dtype": "fp32"}},
        None,
        PublishedKey("nv"),
        "dtype fp32, published fp16 (full (fp32) precision, published half)",
    ),
    (
        "qwen3-emb-8b in fp32 on a CPU (its published code's CPU fallback: the published precision)",
        {**dense_config("qwen3-emb-8b"), "encoder": {"dtype": "fp32"}},
        PublishedKey("Qwen3-Embedding-8B"),
        PublishedKey("Qwen3-Embedding-8B"),
        None,
    ),
    ("bge top-k 5", dense_config("bge", k=5), None, BGE, "top_k 5, published at least 10"),
    (
        "medcpt article encoder",
        dense_config("medcpt", medcpt_published=True),
        PublishedKey("medcpt"),
        PublishedKey("medcpt"),
        None,
    ),
    (
        "medcpt query encoder",
        dense_config("medcpt", medcpt_published=False),
        None,
        PublishedKey("medcpt"),
        "medcpt_published False, published True",
    ),
    (
        "medcpt unrecorded",
        {"retriever": "medcpt", "options": {}},
        None,
        PublishedKey("medcpt"),
        "medcpt_published False, published True",
    ),
    (
        "medcpt model",
        dense_config("medcpt", medcpt_published=True, model="ncbi/MedCPT-Article-Encoder"),
        None,
        PublishedKey("medcpt"),
        "model ncbi/MedCPT-Article-Encoder, published not set",
    ),
    (
        "reasonembed",
        dense_config("reasonembed-qwen3-8b"),
        PublishedKey("ReasonEmbed-Qwen3-8B"),
        PublishedKey("ReasonEmbed-Qwen3-8B"),
        None,
    ),
    (
        "reasonembed query length",
        dense_config("reasonembed-qwen3-8b", query_max_length=256),
        None,
        PublishedKey("ReasonEmbed-Qwen3-8B"),
        "query_max_length 256, published 512",
    ),
    ("any model by path", {**dense_config("dense", model="/models/all-MiniLM-L6-v2")}, None, None, None),
    ("unregistered", {"retriever": "not-registered"}, None, None, None),
    ("empty", {}, None, None, None),
    # rerankers over the paper's nv: model, tokenizer, revision, max length, label, depth, first stage
    ("nv+bge-reranker", reranked(BGE_R, NV_RUN), NV_BGE_R, NV_BGE_R, None),
    (
        "bge-reranker --max-length 32",
        reranked({**BGE_R, "max_length": 32}, NV_RUN, max_length=32),
        None,
        NV_BGE_R,
        "max_length 32, published 512",
    ),
    (
        "bge-reranker label 0 (its single logit)",
        reranked({**BGE_R, "label": 0}, NV_RUN, label=0),
        NV_BGE_R,
        NV_BGE_R,
        None,
    ),
    (
        "bge-reranker another model",
        reranked({**BGE_R, "model": "/models/my-reranker"}, NV_RUN, model="/models/my-reranker"),
        None,
        NV_BGE_R,
        "model /models/my-reranker, published BAAI/bge-reranker-v2-m3",
    ),
    (
        "bge-reranker a cache snapshot",
        reranked({**BGE_R, "model": SNAPSHOT}, NV_RUN, model=SNAPSHOT),
        NV_BGE_R,
        NV_BGE_R,
        None,
    ),
    (
        "bge-reranker tokenizer",
        reranked({**BGE_R, "tokenizer": "org/tok"}, NV_RUN, tokenizer="org/tok"),
        None,
        NV_BGE_R,
        "tokenizer org/tok, published BAAI/bge-reranker-v2-m3",
    ),
    (  # the option is model_revision; the cross-encoder records it as its revision
        "bge-reranker model_revision",
        reranked({**BGE_R, "revision": "v1"}, NV_RUN, model_revision="v1"),
        None,
        NV_BGE_R,
        "model_revision v1, published not set",
    ),
    (  # a record written while the option was named revision
        "bge-reranker revision recorded before its rename",
        reranked({**BGE_R, "revision": "v1"}, NV_RUN, revision="v1"),
        None,
        NV_BGE_R,
        "model_revision v1, published not set",
    ),
    (  # a record from before schema 3's options: only the cross-encoder's own record, which names it revision
        "bge-reranker revision in the resolved record alone",
        {k: v for k, v in reranked({**BGE_R, "revision": "v1"}, NV_RUN).items() if k != "options"},
        None,
        NV_BGE_R,
        "model_revision v1, published not set",
    ),
    (
        "bge-reranker fp16 (another precision class than the paper's fp32)",
        reranked({**BGE_R, "dtype": "fp16"}, NV_RUN, dtype="fp16"),
        None,
        NV_BGE_R,
        "dtype fp16, published fp32 (half precision, published full (fp32))",
    ),
    (
        "rankllama bf16 (the paper's auto: the checkpoint's own, no class to compare; graded, wider)",
        reranked(RANKLLAMA, NV_RUN, dtype="bf16"),
        NV_RANKLLAMA,
        NV_RANKLLAMA,
        None,
    ),
    ("bge-reranker batch and device", reranked(BGE_R, NV_RUN, batch_size=4, device="cpu"), NV_BGE_R, NV_BGE_R, None),
    ("nv+monobert", reranked(MONOBERT, NV_RUN), NV_MONOBERT, NV_MONOBERT, None),
    (
        "monobert --set label=0",
        reranked({**MONOBERT, "label": 0}, NV_RUN, label=0),
        None,
        NV_MONOBERT,
        "label 0, published 1",
    ),
    ("monobert depth 100", reranked(MONOBERT, NV_RUN, top_k=100), None, NV_MONOBERT, "depth (top_k) 100, published 10"),
    (
        "monobert v2 record (no options)",
        {**reranked({**MONOBERT, "max_length": 64}, NV_RUN), "options": None},
        None,
        NV_MONOBERT,
        "max_length 64, published 512",
    ),
    ("nv+rankllama", reranked(RANKLLAMA, NV_RUN), NV_RANKLLAMA, NV_RANKLLAMA, None),
    (
        "rankllama --set lora",
        reranked({**RANKLLAMA, "lora": "org/other-adapter"}, NV_RUN, lora="org/other-adapter"),
        None,
        NV_RANKLLAMA,
        "lora org/other-adapter, published castorini/rankllama-v1-7b-lora-passage",
    ),
    (
        "rankllama --set base",
        reranked({**RANKLLAMA, "base": "org/other-base"}, NV_RUN, base="org/other-base"),
        None,
        NV_RANKLLAMA,
        "base org/other-base, published meta-llama/Llama-2-7b-hf",
    ),
    (
        "rankllama max length",
        reranked({**RANKLLAMA, "max_length": 512}, NV_RUN, max_length=512),
        None,
        NV_RANKLLAMA,
        "max_length 512, published 1024",
    ),
    ("rankllama merge (runtime)", reranked(RANKLLAMA, NV_RUN, merge=False), NV_RANKLLAMA, NV_RANKLLAMA, None),
    (
        "rankllama v2 record with another lora",
        {**reranked({**RANKLLAMA, "lora": "org/x"}, NV_RUN), "options": None},
        None,
        NV_RANKLLAMA,
        "lora org/x, published castorini/rankllama-v1-7b-lora-passage",
    ),
    (
        "first stage not the paper's nv",
        reranked(BGE_R, dense_config("nv", max_length=128)),
        None,
        NV_BGE_R,
        "first stage max_length 128, published 4096",
    ),
    (
        "first stage too shallow",
        reranked(BGE_R, dense_config("nv", k=5)),
        None,
        NV_BGE_R,
        "first stage top_k 5, published at least 10",
    ),
    (
        "first stage expanded",
        reranked(BGE_R, {**NV_RUN, "expansion": HUB_HYDE}),
        None,
        NV_BGE_R,
        "first stage expansion hyde:gpt4, published none",
    ),
    ("first stage bm25 (no row)", reranked(BGE_R, bm25_config()), None, None, None),
    ("first stage unrecorded", {**reranked(BGE_R, NV_RUN), "first_stage": {"retriever": "nv"}}, None, None, None),
    ("no reranker recorded", {**reranked(BGE_R, NV_RUN), "reranker": {}}, None, None, None),
    (
        "a cross-encoder by path",
        reranked({**BGE_R, "reranker": "/models/ce", "model": "/models/ce"}, NV_RUN),
        None,
        None,
        None,
    ),
    # ReasonRank: the published figure reranked its authors' E5 top 100 (not r2med's e5 run)
    ("reasonrank over r2med's e5", reranked(REASONRANK, E5_RUN, top_k=100), None, E5_REASONRANK, ONE_STAGE),
    (
        "reasonrank over the authors' run",
        reranked(REASONRANK, AUTHORS_E5, top_k=100),
        E5_REASONRANK,
        E5_REASONRANK,
        None,
    ),
    (
        "reasonrank over another imported run",
        reranked(REASONRANK, {**AUTHORS_E5, "imported": {"sha256": "0" * 64}}, top_k=100),
        None,
        E5_REASONRANK,
        "first stage an imported run (sha256 000000000000 for Biology), published the authors'",
    ),
    (
        "reasonrank served under another name",
        reranked({**REASONRANK, "model": "my-alias"}, AUTHORS_E5, top_k=100, model="my-alias"),
        None,
        E5_REASONRANK,
        "model my-alias, published liuwenhan/reasonrank-32B",
    ),
    (
        "reasonrank window",
        reranked({**REASONRANK, "window": 10}, AUTHORS_E5, top_k=100, window=10),
        None,
        E5_REASONRANK,
        "window 10, published 20",
    ),
    (
        "reasonrank temperature",
        reranked({**REASONRANK, "temperature": 0.7}, AUTHORS_E5, top_k=100, temperature=0.7),
        None,
        E5_REASONRANK,
        "temperature 0.7, published 0.0",
    ),
    (
        "reasonrank passage cut",
        reranked({**REASONRANK, "tokenizer": "words"}, AUTHORS_E5, top_k=100, tokenizer="words"),
        None,
        E5_REASONRANK,
        "tokenizer words, published liuwenhan/reasonrank-32B",
    ),
    (
        "reasonrank depth 20",
        reranked(REASONRANK, AUTHORS_E5, top_k=20),
        None,
        E5_REASONRANK,
        "depth (top_k) 20, published 100",
    ),
    (
        "reasonrank endpoint and cache (runtime)",
        reranked(REASONRANK, AUTHORS_E5, top_k=100, base_url="http://x/v1", cache=False),
        E5_REASONRANK,
        E5_REASONRANK,
        None,
    ),
    # fused and imported runs are no published configuration, whatever they hold
    (
        "fused",
        {"step": "fuse", "fusion": "rrf", "k": 60, "inputs": [{"retriever": "nv", "config": NV_RUN}]},
        None,
        None,
        None,
    ),
    ("imported", AUTHORS_E5, None, None, None),
]


@pytest.mark.parametrize("config, key, row, reason", [r[1:] for r in SPEC_TABLE], ids=[r[0] for r in SPEC_TABLE])
def test_grading_table_keyed_by_recorded_specs(config, key, row, reason):
    from r2med.results.grading import grade, grade_system, match_published

    got = grade(recorded(config), "Biology")
    assert (got.key, got.row) == (key, row)
    if reason is None:
        assert got.reason is None
    else:
        assert got.reason is not None and got.reason.startswith(f"not the published {row.label}: {reason}"), got.reason
    assert grade_system({"Biology": recorded(config)}) == got  # a system of one task grades as the task
    if key is not None and "expansion" not in config and config.get("first_stage", {}).get("config") is not AUTHORS_E5:
        assert (
            match_published([recorded(config), recorded(config)]) == key
        )  # nothing per task: the same without the task


def test_a_non_paper_precision_keeps_the_grade_and_says_so():
    from r2med.results.grading import nonpaper_precision

    assert (
        nonpaper_precision(recorded({**dense_config("bge", dtype="bf16"), "encoder": {"dtype": "bf16"}}))
        == "bf16 (paper: fp32)"
    )
    assert (
        nonpaper_precision(recorded(reranked({**BGE_R, "dtype": "fp16"}, NV_RUN, dtype="fp16"))) == "fp16 (paper: fp32)"
    )
    # RankLLaMA's record names no dtype: the step's own option says it (the paper's is auto: fp16 on a GPU)
    assert nonpaper_precision(recorded(reranked(RANKLLAMA, NV_RUN, dtype="bf16"))) == "bf16 (paper: auto)"
    assert nonpaper_precision(recorded(reranked(RANKLLAMA, NV_RUN))) is None


#: values tried, in order, for a field set to what no published row ran (the first its type takes and the row's
#: published spec does not accept)
OTHER_VALUES = (True, False, 7, 64, 3, 0.3, 1.7, "mean", "cls", "dot", "query", "none", "sentence-transformers")
OTHER_VALUES += ("transformers", "remote-code", "gritlm")
OTHER_VALUES += ("<s> {text}", "Flat", "org/other-model", "other text")


def _published_rows():
    from r2med.results.grading import RerankSpec, published_specs, table_of

    for key, spec in published_specs(table_of("r2med")).items():
        if key.expanded:
            continue  # the same options as the plain row (its expansion: the rows above)
        yield key, spec.step, isinstance(spec.step, RerankSpec)


def _first_stage_of(step):
    from r2med.results.grading import ImportedRun

    if isinstance(step.first_stage, ImportedRun):
        return AUTHORS_E5
    return bm25_config() if step.first_stage.retriever == "bm25" else dense_config(step.first_stage.retriever)


def _recorded(key, spec, is_rerank, /, **options):
    if is_rerank:
        return reranked({"reranker": spec.reranker}, _first_stage_of(spec), top_k=spec.depth, **options)
    if spec.retriever == "medcpt":  # its published figures encoded queries with the Article encoder
        options = {"medcpt_published": True, **options}
    return bm25_config(**options) if spec.retriever == "bm25" else dense_config(spec.retriever, **options)


#: fields every value of which is the published run's: BM25's analyzer (both make Lucene's English tokens)
ALL_PUBLISHED = {"analyzer"}


@pytest.mark.parametrize("key, step, is_rerank", list(_published_rows()), ids=lambda v: getattr(v, "label", ""))
def test_every_score_changing_field_of_every_graded_row_is_compared(key, step, is_rerank):
    """Each row's own record is graded; each field that changes scores, set to a value the row did not run, is
    not, and the reason names the field; set to the published value it is graded (a local copy of the checkpoint
    counts).  Fields that do not change scores (batch size, device, caches, endpoints) never ungrade."""
    from r2med.results.grading import grade
    from r2med.typed.parse import Origin, SpecError, parse

    def kind():
        from r2med.reranking.base import RERANKERS
        from r2med.retrieval.registry import RETRIEVERS

        meta = RERANKERS.get(step.reranker) if is_rerank else RETRIEVERS.get(step.retriever)
        assert meta is not None
        return meta.options

    assert grade(recorded(_recorded(key, step, is_rerank)), "Biology").key == key
    medcpt = {"medcpt_published": True} if key.retriever == "medcpt" else {}
    for name, published in step.options.items():
        if name in ALL_PUBLISHED:
            continue
        concrete = [v for v in published.values if v is not None]
        if concrete:  # the published value given explicitly is the published run
            config = _recorded(key, step, is_rerank, **{**medcpt, name: concrete[0]})
            assert grade(recorded(config), "Biology").key == key, (
                name,
                concrete[0],
                grade(recorded(config), "Biology"),
            )
        for value in OTHER_VALUES:
            try:
                parse(kind(), {**medcpt, name: value}, Origin.python("test"))
            except SpecError:
                continue
            if not published.accepts(value):
                break
        else:
            pytest.fail(f"{key.label}: no value to try for {name}")
        got = grade(recorded(_recorded(key, step, is_rerank, **{**medcpt, name: value})), "Biology")
        assert got.key is None and got.row == key, (name, value)
        assert (got.reason is not None and f": {name} " in got.reason) or f"; {name} " in got.reason, got.reason
    runtime = {"batch_size": 4, "device": "cpu"} if "batch_size" in kind().model_fields else {}
    assert grade(recorded(_recorded(key, step, is_rerank, **{**medcpt, **runtime})), "Biology").key == key


# -- the three cases, end to end: no published figure, each with its reason -------------------------------


def said_in(line: str, out: str) -> bool:
    """Whether a command printed ``line``, however the terminal wrapped it (a long path may break anywhere)."""
    return "".join(line.split()) in "".join(out.split())


def _relabel(folder: Path, config: dict) -> None:
    """Make a finished task folder's record say it ran ``config`` (a stand-in for a model too large to run here)."""
    path = folder / "metrics.json"
    payload = json.loads(path.read_text())
    path.write_text(json.dumps({**payload, "config": config}))


def _cache_folder(hf_cache: Path, repo_id: str, folder: Path) -> None:
    from hub_server import fill_hf_cache

    files = {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}
    fill_hf_cache(hf_cache, repo_id, files, "1" * 40, repo_type="model")


def test_a_reranked_run_with_another_length_or_label_shows_no_published_figure(biology, tmp_path, hf_cache):
    """Case (a): the paper's cross-encoders (their checkpoints in the cache, tiny stand-ins) over a first stage
    recorded as the paper's nv: graded as published; ``--max-length 32`` or ``--set label=0`` is not, and the
    report and ``rerank`` say which field differs."""
    pytest.importorskip("torch")
    from test_rerank import _tiny_bert

    _cache_folder(hf_cache, "BAAI/bge-reranker-v2-m3", _tiny_bert(tmp_path / "bge", 1, seed=5))
    _cache_folder(hf_cache, "castorini/monobert-large-msmarco", _tiny_bert(tmp_path / "mono", 2, seed=6))
    runs = tmp_path / "runs"
    ok("evaluate", "-r", "bm25", "--name", "nv", "-d", str(biology), "--out", str(runs))
    _relabel(runs / "nv" / "Biology", NV_RUN)
    first = ["--run", str(runs / "nv"), "-d", str(biology)]
    ok("rerank", *first, "--reranker", "bge-reranker")
    out = ok("rerank", *first, "--reranker", "bge-reranker", "--max-length", "32", "--name", "bge-32")
    assert said_in(
        "no published figure for bge-32: not the published nv+bge-reranker: max_length 32, published 512", out
    )
    ok("rerank", *first, "--reranker", "monobert", "--set", "label=0", "--name", "mono-0")
    systems = {s["name"]: s for s in report_json(runs)["systems"]}
    assert systems["nv+bge-reranker"]["published"]["label"] == "nv+bge-reranker"
    assert systems["nv+bge-reranker"]["cells"]["Biology"]["published"] == published_figure(NV_BGE_R)
    assert systems["nv+bge-reranker"]["ungraded"] is None
    for name, why in (
        ("bge-32", "not the published nv+bge-reranker: max_length 32, published 512"),
        ("mono-0", "not the published nv+monobert: label 0, published 1"),
    ):
        assert systems[name]["published"] is None and systems[name]["cells"]["Biology"]["published"] is None
        assert systems[name]["ungraded"] == why
    legend = report_json(runs)["legend"]
    assert "no published figure for mono-0: not the published nv+monobert: label 0, published 1." in legend
    table = ok("report", str(runs), "--format", "markdown")
    assert "max_length 32, published 512" in table


def published_figure(key) -> float:
    return key.figures()["Biology"]


def test_an_expansion_file_given_by_hand_is_graded_only_as_the_hub_file(tmp_path, hf_cache):
    """Case (b): ``-e hyde:gpt4`` read from the hub (a filled cache at the pinned commit) is graded, and r2med
    records the file's fingerprint as it verifies it; ``--expansion-file`` with a copy of that file is graded too,
    with any other file not -- the reason names the file and its fingerprint."""
    from hub_server import EXPANSION, fill_hf_cache, r2med_task_files
    from r2med.data.hub_integrity import FINGERPRINTS_FILE

    files = r2med_task_files()
    hyde = files.pop(EXPANSION)
    fill_hf_cache(hf_cache, "R2MED/Biology", {**files, "hyde/gpt4/query_with_hydoc.jsonl": hyde}, PINNED)
    runs = tmp_path / "runs"
    out = ok("evaluate", "-t", "Biology", "-e", "hyde:gpt4", "--out", str(runs))
    assert "57.34" in out  # the paper's BM25 + HyDE (GPT-4o) on Biology, shown beside the run
    assert (Path(os.environ["R2MED_HOME"]) / FINGERPRINTS_FILE).is_file()
    copy = tmp_path / "copy" / "hyde" / "gpt4" / "query_with_hydoc.jsonl"
    copy.parent.mkdir(parents=True)
    copy.write_bytes(hyde)
    ok("evaluate", "-t", "Biology", "-e", "hyde:gpt4", "--expansion-file", str(copy), "--name", "copy", "-o", str(runs))
    other = tmp_path / "other.jsonl"
    records = [json.loads(line) for line in hyde.decode().splitlines() if line.strip()]
    other.write_text("".join(json.dumps({**r, "hy_doc": "an expansion of my own"}) + "\n" for r in records))
    out = ok(
        "evaluate",
        "-t",
        "Biology",
        "-e",
        "hyde:gpt4",
        "--expansion-file",
        str(other),
        "--name",
        "mine",
        "-o",
        str(runs),
    )
    assert "57.34" not in out
    assert said_in(
        f"no published figure for mine: not the published bm25+hyde-gpt4: expansion file {other} (fingerprint", out
    )
    assert said_in("published the hub's hyde/gpt4 file of Biology (r2med verified that file as", out)
    systems = {s["name"]: s for s in report_json(runs)["systems"]}
    assert systems["bm25+hyde-gpt4"]["published"]["label"] == "bm25+hyde-gpt4"
    assert systems["copy"]["published"]["label"] == "bm25+hyde-gpt4"
    assert systems["copy"]["cells"]["Biology"]["published"] == 57.34
    assert systems["mine"]["published"] is None and "expansion file" in systems["mine"]["ungraded"]


def test_the_memo_of_hub_fingerprints_vouches_only_with_its_seal(tmp_path, hf_cache):
    """A fingerprint is recorded only for a cache blob (named by its content hash, verified), and an entry edited
    by hand vouches for nothing."""
    from hub_server import fill_hf_cache
    from r2med.data import hub_integrity
    from r2med.infra.file_hash import file_hash

    snap = fill_hf_cache(hf_cache, "R2MED/Biology", {"hyde/gpt4/query_with_hydoc.jsonl": b'{"id": "q"}\n'}, PINNED)
    path = snap / "hyde" / "gpt4" / "query_with_hydoc.jsonl"
    got = hub_integrity.remember_fingerprint("R2MED/Biology", PINNED, "hyde/gpt4/query_with_hydoc.jsonl", path)
    assert got == file_hash(path, "blake2b-80")
    assert hub_integrity.hub_fingerprints("R2MED/Biology", PINNED, "hyde/gpt4/query_with_hydoc.jsonl") == {got}
    copy = tmp_path / "plain.jsonl"  # not a blob: nothing names its content
    copy.write_bytes(path.read_bytes())
    assert hub_integrity.remember_fingerprint("R2MED/Biology", "2" * 40, "x.jsonl", copy) is None
    memo = Path(os.environ["R2MED_HOME"]) / hub_integrity.FINGERPRINTS_FILE
    data = json.loads(memo.read_text())
    name = f"R2MED/Biology@{PINNED}:hyde/gpt4/query_with_hydoc.jsonl"
    data["files"][name]["fingerprint"] = "f" * 20  # edited: the seal no longer holds
    memo.write_text(json.dumps(data))
    assert hub_integrity.hub_fingerprints("R2MED/Biology", PINNED, "hyde/gpt4/query_with_hydoc.jsonl") == set()


def test_reasonrank_over_r2meds_own_e5_run_shows_no_published_figure(biology, tmp_path, hf_cache):
    """Case (c): ReasonRank-32B's published figure reranked its authors' E5 top 100; over r2med's e5 run (here a
    first stage recorded as it) it is not graded, and an imported run of another file neither -- each says why."""
    pytest.importorskip("openai")
    pytest.importorskip("ftfy")
    from llm_server import LLMServer
    from tiny_lm import byte_tokenizer

    byte_tokenizer(tmp_path / "tok")
    (tmp_path / "tok" / "config.json").write_text('{"model_type": "qwen2"}')  # as the hub repo has one
    _cache_folder(hf_cache, "liuwenhan/reasonrank-32B", tmp_path / "tok")
    runs = tmp_path / "runs"
    ok("evaluate", "-r", "bm25", "--name", "e5", "-d", str(biology), "--out", str(runs))
    _relabel(runs / "e5" / "Biology", E5_RUN)
    run_file = tmp_path / "authors.txt"  # a stand-in: the authors' file cannot be downloaded here
    run_file.write_text((runs / "e5" / "Biology" / "run.trec").read_text())
    ok("import", str(run_file), "-t", "Biology", "-d", str(biology), "--name", "e5-imported", "--out", str(runs))
    with LLMServer(model="liuwenhan/reasonrank-32B") as server:  # served as `vllm serve <hub id>` names it
        for first in ("e5", "e5-imported"):
            out = ok(
                "rerank",
                "--run",
                str(runs / first),
                "--reranker",
                "reasonrank-32b",
                "--base-url",
                server.base_url,
                "-d",
                str(biology),
                "--set",
                "cache=false",
                "--name",
                f"{first}+rr",
            )
            assert said_in(f"no published figure for {first}+rr: not the published e5+reasonrank-32b: first stage", out)
    systems = {s["name"]: s for s in report_json(runs)["systems"]}
    assert systems["e5+rr"]["ungraded"].startswith(f"not the published e5+reasonrank-32b: {ONE_STAGE} (")
    assert "r2med import it, then rerank that" in systems["e5+rr"]["ungraded"]
    assert systems["e5-imported+rr"]["ungraded"].startswith(
        "not the published e5+reasonrank-32b: first stage an imported run (sha256 "
    )
    assert systems["e5+rr"]["published"] is None and systems["e5-imported+rr"]["published"] is None
