"""BRIGHT's published figures as graded rows (issue 32, "Published figures and runs"): a run is graded against the
BRIGHT row its recorded spec is -- field by field, on the hub's data at the pinned commit, with the task's own
judgments -- and shows no published figure otherwise, with the field that differs.

References: the figures are ``protocol/bright_published.csv``'s as published (the paper's Table 2, the
leaderboard's averages), typed here from their sources; BRIGHT's settings for a model are written out here from
xlang-ai/BRIGHT@d99e839 (retrievers.py:131-193 for e5: last token, normalised, 4096 tokens; configs/e5/biology.json
for its instruction), never read back from r2med's records.
"""

from __future__ import annotations

import json

import pytest

from bright_hub import BRIGHT_PIN, SHARED_BRIGHT, bright_files, fill_bright_cache, have_shared_bright
from conftest import recorded, run_r2med
from r2med.measures import Measure

PIN_FILE = f"/hf/hub/datasets--xlangai--BRIGHT/snapshots/{BRIGHT_PIN}/gpt4_reason/biology-00000-of-00001.parquet"
OTHER_COMMIT = "a" * 40
#: the long documents' headline, as BRIGHT's leaderboard grades it
R1 = Measure.parse("recall_1")


def bright_settings(model: str, task: str = "bright:biology") -> dict:
    """``config["settings"]`` as a run of BRIGHT's settings for ``model`` records it."""
    return {"family": "bright", "model": model, "task": task, "similarity": None, "score_scale": 1.0}


def bm25_config(k: int = 1000, task: str = "bright:biology", **options) -> dict:
    used = {"k1": 0.9, "b": 0.4, **options}
    return {
        "step": "evaluate",
        "retriever": "bm25",
        "options": {"cache": True, "k1": 0.9, "b": 0.4, "analyzer": "english", **options},
        "k": k,
        "flavour": "paper",
        "k1": used["k1"],
        "b": used["b"],
        "settings": bright_settings("bm25", task),
        "expansion": None,
    }


REASON_GPT4 = {"method": "reason", "llm": "gpt4", "rule": "replace", "file": PIN_FILE}

#: what BRIGHT's code runs e5 with on biology (retrievers.py:131-193, configs/e5/biology.json), as r2med's
#: encoder settings name them
E5_BIOLOGY = {
    "model": "intfloat/e5-mistral-7b-instruct",
    "loader": "transformers",
    "query_model": None,
    "revision": None,
    "pooling": "last-token",
    "normalize": True,
    "max_length": 4096,
    "query_max_length": None,
    "query_instruction": (
        "Instruct: Given a biology post, retrieve relevant passages that help answer the post\nQuery: "
    ),
    "doc_instruction": "",
    "append_eos": False,
    "doc_as_pair": False,
    "trust_remote_code": False,
    "dtype": "fp32",
    "extra": {},
    "framing": "<s> {text} </s>",
}


def dense_config(retriever: str, bright_model: str, encoder: dict, /, **options) -> dict:
    return {
        "step": "evaluate",
        "retriever": retriever,
        "options": {"cache": True, **options},
        "k": 1000,
        "encoder": encoder,
        "similarity": "cosine",
        "search": "exact",
        "settings": bright_settings(bright_model),
    }


E5 = dense_config("e5", "e5", E5_BIOLOGY)


def reranked(reranker: dict, first: dict, top_k: int = 10, **options) -> dict:
    return {
        "step": "rerank",
        "options": options,
        "top_k": top_k,
        "keep_tail": False,
        "reranker": reranker,
        "first_stage": {"retriever": first.get("retriever"), "folder": "/runs/bm25/bright-biology", "config": first},
    }


MINILM = {"reranker": "bright-cross-encoder", "kind": "bright-cross-encoder"}
MINILM |= {"model": "cross-encoder/ms-marco-MiniLM-L-12-v2", "k": "the rerank depth", "batch_size": 8}
GPT4 = {"reranker": "bright-llm", "kind": "bright-llm", "model": "gpt-4-0125-preview", "k": "the rerank depth"}
GPT4 |= {"temperature": 0.8, "top_p": 0.8, "max_tokens": 2048}
GEMINI = {**GPT4, "model": "gemini-1.0-pro"}


def key(retriever, expansion="none", llm="none", model="", depth=None):
    from r2med.results.bright_published import BrightKey

    return BrightKey(retriever, expansion, llm, model, depth)


BM25 = key("bm25")
BM25_GPT4 = key("bm25", "reason", "gpt4")
E5_KEY = key("e5")
GRIT = key("grit")
MINILM_10 = key("bm25", "rerank:bright-cross-encoder", "none", "cross-encoder/ms-marco-MiniLM-L-12-v2", 10)
MINILM_100 = key("bm25", "rerank:bright-cross-encoder", "none", "cross-encoder/ms-marco-MiniLM-L-12-v2", 100)
GPT4_100 = key("bm25", "rerank:bright-llm", "none", "gpt-4-0125-preview", 100)
GEMINI_10 = key("bm25", "rerank:bright-llm", "none", "Gemini-1.0-pro", 10)
GRIT_BIOLOGY = {
    **E5_BIOLOGY,
    "model": "GritLM/GritLM-7B",
    "loader": "gritlm",
    "pooling": "mean",
    "normalize": False,
    "max_length": 2048,
    "query_max_length": 256,
    "query_instruction": (
        "<|user|>\nGiven a biology post, retrieve relevant passages that help answer the post\n<|embed|>\n"
    ),
    "doc_instruction": "<|embed|>\n",
    "expansion_instruction": "query",
    "dtype": "auto",
}
del GRIT_BIOLOGY["framing"]

#: (id, recorded config, the row it is graded against, the row it names, the reason after "not the published
#: <row>: ", or None)
BRIGHT_TABLE = [
    # BM25: BRIGHT's settings recorded, k1, b, depth, and the judgments
    ("bm25", bm25_config(), BM25, BM25, None),
    ("bm25 k1", bm25_config(k1=1.2), None, BM25, "k1 1.2, published 0.9"),
    ("bm25 b", bm25_config(b=0.75), None, BM25, "b 0.75, published 0.4"),
    ("bm25 top-k 5", bm25_config(k=5), None, BM25, "top_k 5, published at least 10"),
    ("bm25 top-k 10", bm25_config(k=10), BM25, BM25, None),
    ("bm25 flavour", {**bm25_config(), "flavour": "standard"}, None, BM25, "flavour standard, published paper"),
    (
        "bm25 settings not recorded",
        {**bm25_config(), "settings": None},
        None,
        BM25,
        "settings not recorded (the preset's own), published BRIGHT's bm25",
    ),
    (
        "bm25 R2MED's settings",
        {**bm25_config(), "settings": {"family": "r2med", "task": "bright:biology"}},
        None,
        BM25,
        "settings r2med's bm25, published BRIGHT's bm25",
    ),
    ("bm25 --qrels", {**bm25_config(), "judgments": {"file": "/q.txt", "sha256": "0" * 64}}, None, None, None),
    ("bm25 long documents", bm25_config(task="bright:biology:long"), BM25, BM25, None),
    # the queries: a reasoning set from the hub at the pinned commit
    ("bm25 reason:gpt4", {**bm25_config(), "expansion": REASON_GPT4}, BM25_GPT4, BM25_GPT4, None),
    (
        "bm25 reason:gpt4 at another commit",
        {**bm25_config(), "expansion": {**REASON_GPT4, "file": PIN_FILE.replace(BRIGHT_PIN, OTHER_COMMIT)}},
        None,
        BM25_GPT4,
        f"expansion read from hub commit aaaaaaaaaaaa, published: the hub's gpt4 reasoning set at {BRIGHT_PIN[:12]}",
    ),
    (
        "bm25 reason:gpt4 rule",
        {**bm25_config(), "expansion": {**REASON_GPT4, "rule": "paper-v1"}},
        None,
        BM25_GPT4,
        "expansion rule paper-v1, published replace",
    ),
    (
        "bm25 a reasoning set with no row",
        {**bm25_config(), "expansion": {**REASON_GPT4, "llm": "nope"}},
        None,
        None,
        None,
    ),
    # a dense preset: BRIGHT's settings for its model, every score-changing field
    ("e5", E5, E5_KEY, E5_KEY, None),
    (
        "e5 max length option",
        dense_config("e5", "e5", E5_BIOLOGY, max_length=2048),
        None,
        E5_KEY,
        "max_length 2048, published 4096",
    ),
    (
        "e5 recorded R2MED's length",
        dense_config("e5", "e5", {**E5_BIOLOGY, "max_length": 2048}),
        None,
        E5_KEY,
        "encoder max_length 2048, published 4096",
    ),
    (
        "e5 recorded another instruction",
        dense_config("e5", "e5", {**E5_BIOLOGY, "query_instruction": "Instruct: Given a Biology post\nQuery: "}),
        None,
        E5_KEY,
        "encoder query_instruction Instruct: Given a Biology post\nQuery: , published Instruct: Given a biology post",
    ),
    (
        "e5 query instruction option",
        dense_config("e5", "e5", E5_BIOLOGY, query_instruction="Q: "),
        None,
        E5_KEY,
        "query_instruction Q: , published not set",
    ),
    ("e5 model", dense_config("e5", "e5", E5_BIOLOGY, model="org/other"), None, E5_KEY, "model org/other"),
    (  # a folder's name shows nothing of its weights (random weights could sit in a folder so named)
        "e5 a folder named after it",
        dense_config("e5", "e5", E5_BIOLOGY, model="/models/e5-mistral-7b-instruct"),
        None,
        E5_KEY,
        "model /models/e5-mistral-7b-instruct, published intfloat/e5-mistral-7b-instruct",
    ),
    (
        "e5 its Hugging Face cache snapshot",
        dense_config(
            "e5", "e5", E5_BIOLOGY, model="/hf/models--intfloat--e5-mistral-7b-instruct/snapshots/" + "e" * 40
        ),
        E5_KEY,
        E5_KEY,
        None,
    ),
    (
        "e5 pooling",
        dense_config("e5", "e5", E5_BIOLOGY, pooling="mean"),
        None,
        E5_KEY,
        "pooling mean, published last-token",
    ),
    (
        "e5 fp16 (BRIGHT: fp32)",
        dense_config("e5", "e5", {**E5_BIOLOGY, "dtype": "fp16"}),
        None,
        E5_KEY,
        "dtype fp16, published fp32 (half precision, published full (fp32))",
    ),
    ("e5 faiss", {**E5, "search": "HNSW32"}, None, E5_KEY, "search HNSW32, published exact"),
    # torch_dtype="auto": graded on what the run recorded of its weights (tests/test_precision_auto.py); a record
    # without it (written before r2med recorded the precision its checkpoint declares) is not graded
    (
        "grit with no recorded precision",
        dense_config("grit", "grit", GRIT_BIOLOGY),
        None,
        GRIT,
        "precision unknown: the record names no weight precision",
    ),
    # rerank.py's rerankers over BRIGHT's BM25: model, depth, sampling, first stage
    ("minilm top-10", reranked(MINILM, bm25_config()), MINILM_10, MINILM_10, None),
    ("minilm top-100", reranked(MINILM, bm25_config(), top_k=100), MINILM_100, MINILM_100, None),
    ("minilm another model", reranked({**MINILM, "model": "org/ce"}, bm25_config(), model="org/ce"), None, None, None),
    ("minilm k", reranked({**MINILM, "k": 5}, bm25_config(), k=5), None, MINILM_10, "k 5, published 10"),
    (
        "minilm over a shallow first stage",
        reranked(MINILM, bm25_config(k=50), top_k=100),
        None,
        MINILM_100,
        "first stage top_k 50, published at least 100",
    ),
    (
        "minilm over reasoning queries",
        reranked(MINILM, {**bm25_config(), "expansion": REASON_GPT4}),
        None,
        MINILM_10,
        "first stage expansion reason:gpt4, published none",
    ),
    ("gpt-4 top-100", reranked(GPT4, bm25_config(), top_k=100, model="gpt-4-0125-preview"), GPT4_100, GPT4_100, None),
    (
        "gpt-4 temperature 0",
        reranked({**GPT4, "temperature": 0.0}, bm25_config(), top_k=100, model="gpt-4-0125-preview", temperature=0.0),
        None,
        GPT4_100,
        "temperature 0.0, published 0.8",
    ),
    ("gemini top-10", reranked(GEMINI, bm25_config(), model="gemini-1.0-pro"), GEMINI_10, GEMINI_10, None),
]


@pytest.mark.parametrize("config, graded, row, reason", [r[1:] for r in BRIGHT_TABLE], ids=[r[0] for r in BRIGHT_TABLE])
def test_bright_grading_table_keyed_by_recorded_specs(config, graded, row, reason):
    from r2med.results.grading import grade, grade_system

    task = (config.get("settings") or {}).get("task") or "bright:biology"
    got = grade(recorded(config), task)
    assert (got.key, got.row) == (graded, row), got
    if reason is None:
        assert got.reason is None
    else:
        assert got.reason is not None and got.reason.startswith(f"not the published {row.title}: {reason}"), got.reason
    assert grade_system({task: recorded(config)}) == got
    if config.get("settings") or "first_stage" in config:
        assert grade(recorded(config)) == got  # the task unknown: the one its settings record names


def test_bright_rows_carry_the_published_figures():
    """The figures each graded row shows, as published: the paper's Table 2 per task, the leaderboard's averages,
    the long documents' Recall@1 (a third party's per-task copy only where it averages to the leaderboard's)."""
    assert BM25.figures()["bright:biology"] == 18.9 and BM25.figures()["bright:pony"] == 7.9
    assert BM25.figures()["Average"] == 14.5
    assert BM25.figures(R1)["bright:biology:long"] == 10.7 and BM25.figures(R1)["Average"] == 11.4
    assert BM25_GPT4.figures()["bright:biology"] == 53.6 and BM25_GPT4.figures()["Average"] == 27.0
    assert key("sf", "reason", "gpt4").figures() == {"Average": 22.0}  # the leaderboard's only
    assert key("openai").figures(R1) == {"Average": 21.9}  # the third party's per-task mean is 21.3
    assert MINILM_10.figures() == {"Average": 13.1} and MINILM_100.figures() == {"Average": 8.3}
    assert GPT4_100.figures() == {"Average": 17.0}
    assert BM25.figures(Measure.parse("recall_100")) == {}  # Pyserini's measures grade nothing


def test_which_bright_rows_r2med_grades_and_why_not_the_others():
    from r2med.results.bright_published import bright_keys, not_reproducible
    from r2med.results.grading import published_specs, table_of
    from r2med.results.published import tolerance_of

    specs = published_specs(table_of("bright"))
    assert set(specs) == set(bright_keys())
    labels = {k.label for k in specs}
    assert {"bm25", "bge", "inst-l", "inst-xl", "sbert", "e5", "sfr", "grit", "qwen", "openai"} <= labels
    assert "voyage-large-2-instruct" in labels and "bm25+reason-gemini-1.0" in labels
    assert not {k for k in specs if k.retriever in ("cohere", "google")}  # no r2med preset runs them
    assert tolerance_of(BM25) == 0.5 and tolerance_of(GEMINI_10) is None  # Gemini's path: r2med's assumption
    why = {name.split(" / ")[0] + " " + name.split(" / ")[1]: reason for name, reason, _ in not_reproducible()}
    assert "Anserini's processed corpus" in why["pyserini_2cr bm25"]
    assert "Anserini's processed corpus" in why["pyserini_2cr bm25qs"]
    assert "no r2med preset" in why["later_paper DIVER-Retriever-4B"]
    assert "leaderboard pipeline" in why["later_leaderboard ReasonRank"]
    assert "Cohere's embed endpoint" in why["paper cohere"]
    assert "not the leaderboard's Average (21.9)" in why["later_third_party openai"]
    # R2MED's rows are untouched
    assert all(k.family == "r2med" for k in published_specs(table_of("r2med")))


def test_a_bright_run_is_graded_on_the_pinned_hub_data_only():
    from r2med.results.grading import data_problem
    from r2med.runs.record import ProtocolRecord, RunData

    pinned = RunData.model_validate(
        {
            "source": f"hf://datasets/xlangai/BRIGHT@{BRIGHT_PIN}",
            "revision": BRIGHT_PIN,
            "protocol": {"family": "bright", "documents": "documents", "judgments": "gold_ids"},
        }
    )
    assert data_problem("bright:biology", pinned) is None
    moved = pinned.model_copy(
        update={"revision": OTHER_COMMIT, "source": f"hf://datasets/xlangai/BRIGHT@{OTHER_COMMIT}"}
    )
    assert data_problem("bright:biology", moved) == (
        "bright:biology: figure made on documents and examples of mteb/BRIGHT@c26703e (xlangai/BRIGHT at the pin "
        f"{BRIGHT_PIN[:12]}), not graded; run on xlangai/BRIGHT@aaaaaaaaaaaa (a commit whose content no source shows)"
    )
    long = pinned.model_copy(update={"protocol": ProtocolRecord(documents="long_documents", judgments="gold_ids_long")})
    assert data_problem("bright:biology:long", long) is None
    assert "corpus documents and judgments gold_ids" in data_problem("bright:biology:long", pinned)


# -- end to end, on the emulated hub ---------------------------------------------------------------------------


@pytest.fixture
def offline(hf_cache):
    pytest.importorskip("pyarrow")
    if not have_shared_bright():
        pytest.skip("../shared/data/bright is not available")
    fill_bright_cache(hf_cache, bright_files(("biology", "pony"), queries=4, distractors=30))


def ok(*args: str) -> str:
    res = run_r2med(*args)
    assert res.returncode == 0, res.stderr + res.stdout
    return res.stdout


@pytest.mark.shared
def test_a_bm25_run_on_the_hub_is_graded_against_brights_row_and_a_qrels_run_is_not(offline, tmp_path):
    """BM25 on the emulated hub (at the pin) shows BRIGHT's published figures beside its own in ``evaluate``,
    ``report`` and its JSON; the same run judged with Anserini's fixed judgments (``--qrels``) shows none.  The
    emulated documents are not BRIGHT's: only which figure is shown is checked, not the delta."""
    runs = tmp_path / "runs"
    out = ok("evaluate", "-r", "bm25", "--tasks", "bright:biology,bright:pony", "-o", str(runs))
    assert "published" in out and "18.90" in out and "7.90" in out
    board = json.loads(ok("report", str(runs), "--format", "json"))
    system = board["systems"][0]
    assert system["published"]["label"] == "bm25"
    assert system["cells"]["bright:biology"]["published"] == 18.9
    assert system["cells"]["bright:pony"]["published"] == 7.9
    assert system["cells"]["Average"]["published"] == pytest.approx((18.9 + 7.9) / 2)  # over the same 2 tasks
    assert any("BRIGHT bm25: published figures from" in line for line in board["legend"])
    assert not any("R2MED paper repo" in line for line in board["legend"])  # BRIGHT's sources only
    markdown = ok("report", str(runs), "--format", "markdown")
    assert "| published bm25 | 18.90 | 7.90 |" in markdown
    fixed = SHARED_BRIGHT / "qrels" / "biology.fixed.txt"
    judged = tmp_path / "judged"
    out = ok("evaluate", "-r", "bm25", "--tasks", "bright:biology", "--qrels", str(fixed), "-o", str(judged))
    assert "18.90" not in out
    system = json.loads(ok("report", str(judged), "--format", "json"))["systems"][0]
    assert system["published"] is None and system["cells"]["bright:biology"]["published"] is None


@pytest.mark.shared
def test_long_documents_show_the_long_recall_at_1(offline, tmp_path):
    runs = tmp_path / "runs"
    out = ok("evaluate", "-r", "bm25", "--tasks", "bright:biology:long", "-o", str(runs))
    # the long documents' Recall@1 of biology: a third party's per-task copy, on data no source names -- shown with
    # the data it and the run were made on, never graded
    assert "published 10.70 made on unknown data" in " ".join(out.split())
    board = json.loads(ok("report", str(runs), "--format", "json"))
    assert board["measure"] == "recall_1"
    cell = board["systems"][0]["cells"]["bright:biology:long"]
    assert cell["published"] is None and "10.70 made on unknown data" in cell["ungraded"]
    assert "run on xlangai/BRIGHT@3066d29c9651" in cell["ungraded"]


@pytest.mark.shared
def test_reproduce_lists_and_runs_brights_targets(offline, tmp_path):
    planned = json.loads(
        ok("reproduce", "--dry-run", "--tasks", "bright:biology,bright:pony", "-r", "bm25", "--format", "json")
    )
    got = {(p["config"], p["setting"], p["task"]): p["published"] for p in planned}
    assert got == {
        ("bm25", "paper", "bright:biology"): 18.9,
        ("bm25", "paper", "bright:pony"): 7.9,
        ("bm25+reason-gpt4", "paper", "bright:biology"): 53.6,
        ("bm25+reason-gpt4", "paper", "bright:pony"): 17.6,
    }
    assert all(p["runnable"] for p in planned)
    table = ok("reproduce", "--dry-run", "--tasks", "bright")
    assert "BRIGHT" in table and "graded by r2med report" in " ".join(table.split())
    res = run_r2med("reproduce", "--tasks", "bright:biology", "-r", "bm25", "-o", str(tmp_path / "r"), "-f", "json")
    outcomes = json.loads(res.stdout)  # the emulated documents are not BRIGHT's: a fail, graded
    assert [(o["config"], o["task"], o["published"], o["measure"]) for o in outcomes] == [
        ("bm25", "bright:biology", 18.9, "ndcg_cut_10"),
        ("bm25+reason-gpt4", "bright:biology", 53.6, "ndcg_cut_10"),
    ]
    assert all(o["status"] in ("pass", "fail") and o["tolerance"] == 0.5 for o in outcomes)
    # R2MED's matrix is unchanged by BRIGHT's rows
    r2med = json.loads(ok("reproduce", "--dry-run", "-r", "bm25", "--format", "json"))
    assert {p["task"] for p in r2med} == {"Biology", "Bioinformatics", "Medical-Sciences", "MedXpertQA-Exam",
                                           "MedQA-Diag", "PMC-Treatment", "PMC-Clinical", "IIYi-Clinical"}  # fmt: skip
    assert all("measure" not in p for p in r2med)


def _bright_rows():
    from r2med.results.grading import RerankSpec, published_specs, table_of

    for row, spec in published_specs(table_of("bright")).items():
        if not row.expanded:
            yield row, spec.step, isinstance(spec.step, RerankSpec)


@pytest.mark.parametrize("row, step, is_rerank", list(_bright_rows()), ids=lambda v: getattr(v, "label", ""))
def test_every_score_changing_field_of_every_bright_row_is_compared(row, step, is_rerank):
    """Each BRIGHT row's own record (BRIGHT's settings recorded, no option set) is graded; each field that changes
    scores set to a value the row did not run is not, and the reason names the field (the R2MED rows' rule,
    tests/test_grading.py)."""
    from r2med.results.grading import grade
    from r2med.typed.parse import Origin, SpecError, parse
    from test_grading import ALL_PUBLISHED, OTHER_VALUES

    def record(**options):
        if is_rerank:
            reranker = {"reranker": step.reranker, "model": row.rerank_model}
            llm = {"model": row.rerank_model} if step.reranker == "bright-llm" else {}
            return reranked(reranker, bm25_config(), top_k=step.depth, **{**llm, **options})
        if step.retriever == "bm25":
            return bm25_config(**options)
        config = dense_config(step.retriever, row.retriever, {}, **options)
        del config["encoder"]  # the options alone (the recorded encoder: the table above)
        return config

    def kind():
        from r2med.reranking.base import RERANKERS
        from r2med.retrieval.registry import RETRIEVERS

        meta = RERANKERS.get(step.reranker) if is_rerank else RETRIEVERS.get(step.retriever)
        return meta.options

    assert grade(recorded(record()), "bright:biology").key == row
    for name, published in step.options.items():
        if name in ALL_PUBLISHED or (is_rerank and name == "model"):
            continue  # the model picks the row (another one names none: the table above)
        for value in OTHER_VALUES:
            try:
                needs = {"model": row.rerank_model} if is_rerank and step.reranker == "bright-llm" else {}
                parse(kind(), {**needs, name: value}, Origin.python("test"))
            except SpecError:
                continue
            if not published.accepts(value):
                break
        else:
            pytest.fail(f"{row.label}: no value to try for {name}")
        got = grade(recorded(record(**{name: value})), "bright:biology")
        assert got.key is None and got.row == row, (name, value, got)
        assert f": {name} " in got.reason or f"; {name} " in got.reason, got.reason
