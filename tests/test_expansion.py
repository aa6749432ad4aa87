"""Precomputed expansions: trace stripping, the paper's combination rules, loading, and `evaluate --expansion`."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from conftest import recorded, run_r2med, shared_collection
from r2med.data import load_folder
from r2med.errors import DataError, R2MedError
from r2med.expansion import (
    ExpansionQueries,
    ExpansionSpec,
    combine,
    load_expansions,
    strip_for,
    trace_format_of,
)
from r2med.expansion.precomputed import expansion_builder
from r2med.jobs.evaluate import Plan, run_task
from r2med.retrieval.bm25 import BM25
from r2med.runs.run import as_written
from r2med.steps import EvaluateStep


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return run_r2med(*args)


# -- reasoning traces -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "llm,text,expected",
    [
        ("r1-qwen-32b", "<think>weigh the options</think>\n  The answer is DKA. ", "The answer is DKA."),
        ("r1_llama_70b", "reasoning</think>final", "final"),
        ("qwq-32b", "a</think>b</think>c", "b</think>c"),  # only the first marker splits
        ("qwen3-32b", "no marker at all", "no marker at all"),  # fallback: whole text, untouched
        (
            "huatuo-o1-70b",
            "## Thinking\nhmm, polyuria...\n\n## Final Response\n\nType 1 diabetes.\n",
            "Type 1 diabetes.",
        ),
        ("huatuo-o1-8b", "just an answer", "just an answer"),
        (
            "sky-32b",
            "<|begin_of_thought|>t<|end_of_thought|>\n<|begin_of_solution|>\n Solution S \n<|end_of_solution|>",
            "Solution S",
        ),
        ("sky-32b", "<|begin_of_solution|> unterminated", "<|begin_of_solution|> unterminated"),
        ("qwen-7b-ins", "<think>r</think><search>x</search><answer> A1 </answer> <answer>A2</answer>", "A1"),
        ("qwen_3b_ins", "no answer tags", "no answer tags"),
        ("gpt4", "<think>kept</think> as is", "<think>kept</think> as is"),  # not a reasoning LLM in the paper
        ("qwen-7b", "Final Response: kept", "Final Response: kept"),
    ],
)
def test_trace_stripping_per_family(llm, text, expected):
    assert strip_for(llm, text) == expected


@pytest.mark.parametrize(
    "model,family",
    [
        ("deepseek-ai/DeepSeek-R1-Distill-Qwen-32B", "think"),
        ("Qwen/QwQ-32B", "think"),
        ("Qwen/Qwen3-8B", "think"),
        ("FreedomIntelligence/HuatuoGPT-o1-70B", "final-response"),
        ("NovaSky-AI/Sky-T1-32B-Preview", "solution"),
        ("PeterJinGo/SearchR1-nq_hotpotqa_train-qwen2.5-7b-it-em-ppo", "answer"),
        ("Qwen/Qwen2.5-7B-Instruct", "none"),
        ("gpt-4o-2024-11-20", "none"),
        ("o3-mini", "none"),
        ("meta-llama/Meta-Llama-3.1-70B-Instruct", "none"),
    ],
)
def test_family_from_model_ids(model, family):
    assert trace_format_of(model) == family


# -- combination rules ------------------------------------------------------------------------------
Q, E = "why insulin", "Insulin lowers glucose."


@pytest.mark.parametrize(
    "method,llm,family,expansion,expected",
    [
        ("hyde", "gpt4", "lexical", E, E),
        ("query2doc", "gpt4", "lexical", E, "why insulinwhy insulin " + E),  # the paper's text*2: no space between
        ("lamer", "qwen-72b", "lexical", E, "why insulin " + E),
        ("hyde", "r1-qwen-32b", "lexical", "<think>t</think>" + E, E),
        ("lamer", "r1-qwen-32b", "lexical", "<think>t</think>" + E, E),  # reasoning LLMs: stripped expansion alone
        ("search-r1", "qwen-7b-ins", "lexical", "<answer>" + E + "</answer>", E),
        ("search-o1", "qwq-32b", "lexical", "plan</think>" + E, E),
        ("hyde", "gpt4", "dense", E, (Q, E)),
        ("query2doc", "gpt4", "dense", E, Q + "[SEP]" + E),
        ("lamer", "gpt4", "dense", E, (Q, E)),
        ("hyde", "huatuo-o1-70b", "dense", "## Thinking x ## Final Response " + E, (Q, E)),
        ("search-r1", "qwen-3b-ins", "dense", "<answer>" + E + "</answer>", (Q, E)),
    ],
)
def test_combination_rules(method, llm, family, expansion, expected):
    assert combine(Q, expansion, method, llm, family) == expected


def test_combination_rejects_unknown_method_and_family():
    with pytest.raises(R2MedError, match="unknown expansion method"):
        combine(Q, E, "hyde2", "gpt4", "lexical")
    with pytest.raises(R2MedError, match="retriever family"):
        combine(Q, E, "hyde", "gpt4", "sparse")


@pytest.mark.parametrize(
    "spec,expected",
    [
        ("hyde:gpt4", ("hyde", "gpt4")),
        ("hyde:qwen_7b", ("hyde", "qwen-7b")),
        ("Search_R1:qwen_7b_ins", ("search-r1", "qwen-7b-ins")),
        ("reason:GEMINI-1.0", ("reason", "Gemini-1.0")),  # BRIGHT's --reasoning spelling (its hub's config names)
    ],
)
def test_expansion_spec_canonical_spelling(spec, expected):
    parsed = ExpansionSpec.of(spec)
    assert (parsed.method, parsed.llm) == expected
    assert parsed.text == ":".join(expected)


_MALFORMED = "expected METHOD:LLM (e.g. hyde:gpt4, hyde:qwen_7b or reason:gpt4), got "
_MAGIC = "unknown expansion method 'magic'; choose from: hyde, query2doc, lamer, search-r1, search-o1"


@pytest.mark.parametrize(
    "spec,words",
    [
        ("hyde", _MALFORMED + "'hyde'"),
        ("hyde:", _MALFORMED + "'hyde:'"),
        (":gpt4", _MALFORMED + "':gpt4'"),
        ("magic:gpt4", _MAGIC),
    ],
)
def test_expansion_spec_errors_say_the_same_at_every_edge(spec, words, tmp_path):
    """The expansion is parsed once, at the edge it came from: the command line names the flag, an experiment file
    its file, table and key, Python the call -- and each says the same words after that."""
    from r2med.jobs.experiment import load_experiment
    from r2med.typed.parse import SpecError

    with pytest.raises(SpecError) as python:
        EvaluateStep.of("bm25", expansion=spec)
    assert str(python.value) == f"EvaluateStep.of('bm25'): expansion: {words}"
    with pytest.raises(SpecError) as of:
        ExpansionSpec.of(spec)
    assert str(of.value) == f"ExpansionSpec.of({spec!r}): {words}"
    exp = tmp_path / "exp.toml"
    exp.write_text(f'out = "res"\n[[retrievers]]\nname = "bm25"\nexpansion = "{spec}"\n', encoding="utf-8")
    with pytest.raises(R2MedError) as file:
        load_experiment(exp)
    assert str(file.value) == f"{exp}: [[retrievers]] 1: expansion: {words}"
    res = run_cli("evaluate", "--tasks", "Biology", "-e", spec, "--out", str(tmp_path / "out"))
    assert res.returncode == 2
    assert res.stderr.strip().splitlines()[-1] == f"error: --expansion: {words}"
    assert not (tmp_path / "out").exists()


def test_a_recorded_expansion_reads_back_as_the_same_spec():
    """A run's ``config["expansion"]`` (method, LLM: any schema, text-era ones upgraded) is the step's spec again."""
    from r2med.runs.record import upgrade_config_v1
    from r2med.steps import evaluate_from_record

    old = upgrade_config_v1({"retriever": "bm25", "options": {}, "k": 100, "queries": "hyde:qwen-7b trace=auto"})
    step = evaluate_from_record(recorded(old))
    assert step is not None and step.expansion == ExpansionSpec.of("hyde:qwen_7b")
    new = evaluate_from_record(
        recorded(
            {
                "step": "evaluate",
                "retriever": "bm25",
                "options": {},
                "k": 100,
                "expansion": {"method": "reason", "llm": "gpt4", "rule": "replace"},
            }
        )
    )
    assert new is not None and new.expansion == ExpansionSpec(method="reason", llm="gpt4")


# -- the demo collection, checked by hand ------------------------------------------------------------
def _raw_records(path: Path) -> dict[str, dict]:
    return {r["id"]: r for r in map(json.loads, path.read_text(encoding="utf-8").splitlines())}


def test_biology_demo_combined_queries_by_hand():
    folder = shared_collection("r2med-biology-demo")
    coll = load_folder(folder)
    raw = _raw_records(folder / "hyde" / "qwen-7b" / "query_with_hydoc.jsonl")
    builder = ExpansionQueries("hyde", "qwen_7b")
    lexical = builder(coll, "lexical")
    dense = builder(coll, "dense")
    assert set(lexical) == set(coll.queries) == {"0", "1"}
    for qid in ("0", "1"):
        # BM25 + HyDE: the expansion alone (qwen-7b is not a reasoning model: nothing stripped)
        assert lexical[qid] == raw[qid]["hy_doc"]
        assert dense[qid] == (coll.queries[qid], raw[qid]["hy_doc"])
    assert lexical["0"].startswith("Certainly! Here’s a passage to help address the claim")
    assert lexical["1"].startswith("The phenomenon of only breathing through one nostril")
    # the same file read as Query2doc / LameR output combines differently
    q2d = combine(coll.queries["1"], raw["1"]["hy_doc"], "query2doc", "qwen-7b", "lexical")
    assert q2d == coll.queries["1"] + coll.queries["1"] + " " + raw["1"]["hy_doc"]
    assert builder.loaded["r2med-biology-demo"].path == folder / "hyde" / "qwen-7b" / "query_with_hydoc.jsonl"


def test_expanded_bm25_run_equals_searching_the_expansions_directly(tmp_path):
    folder = shared_collection("r2med-biology-demo")
    coll = load_folder(folder)
    raw = _raw_records(folder / "hyde" / "qwen-7b" / "query_with_hydoc.jsonl")
    result = run_task(
        coll,
        Plan(EvaluateStep.of("bm25", cache=False, top_k=10), "bm25+hyde-qwen-7b", ExpansionQueries("hyde", "qwen-7b")),
        tmp_path,
    )
    direct = BM25(cache=False).index(coll.corpus).search({q: raw[q]["hy_doc"] for q in coll.queries}, k=10)
    assert result.run == as_written(direct)  # the run as run.trec holds it
    plain = BM25(cache=False).index(coll.corpus).search(coll.queries, k=10)
    assert plain != direct  # the expansion changed the ranking
    stored = json.loads((tmp_path / coll.name / "metrics.json").read_text())
    expansion = stored["config"]["expansion"]  # a structured record (method, LLM, trace rule, files, the file read)
    assert {k: expansion[k] for k in ("method", "llm", "trace", "rule")} == {
        "method": "hyde",
        "llm": "qwen-7b",
        "trace": "auto",
        "rule": "paper-v1",
    }
    assert expansion["file"] == str(folder / "hyde" / "qwen-7b" / "query_with_hydoc.jsonl")


# -- loading errors ----------------------------------------------------------------------------------
def _write_collection(root: Path, n_queries: int = 3) -> Path:
    root.mkdir(parents=True)
    (root / "corpus.jsonl").write_text(
        "\n".join(json.dumps({"id": f"d{i}", "text": f"doc {i} insulin"}) for i in range(5)) + "\n"
    )
    (root / "query.jsonl").write_text(
        "\n".join(json.dumps({"id": f"q{i}", "text": f"query {i}"}) for i in range(n_queries)) + "\n"
    )
    (root / "qrels.jsonl").write_text(json.dumps({"q_id": "q0", "p_id": "d0", "score": 1}) + "\n")
    return root


def test_missing_expansions_and_bad_lines_are_data_errors(tmp_path):
    root = _write_collection(tmp_path / "c")
    exp = root / "hyde" / "m" / "query_with_hydoc.jsonl"
    exp.parent.mkdir(parents=True)
    exp.write_text(json.dumps({"id": "q0", "hy_doc": "a"}) + "\n" + json.dumps({"id": "q1", "hy_doc": "b"}) + "\n")
    coll = load_folder(root)
    with pytest.raises(DataError, match=r"1 of 3 queries .* no expansion \(first: 'q2'\)"):
        load_expansions(coll, "hyde", "m")
    exp.write_text(json.dumps({"id": "q0", "hy_doc": "a"}) + "\n" + json.dumps({"id": "q1"}) + "\n")
    with pytest.raises(DataError, match=r"query_with_hydoc.jsonl:2: missing field 'hy_doc'"):
        load_expansions(coll, "hyde", "m")
    exp.write_text(json.dumps({"id": "q0", "hy_doc": "a"}) + "\n" + json.dumps({"id": "q0", "hy_doc": "b"}) + "\n")
    with pytest.raises(DataError, match=r":2: duplicate query id 'q0'"):
        load_expansions(coll, "hyde", "m")
    with pytest.raises(R2MedError, match=r"no hyde:other expansions .*available: hyde:m"):
        load_expansions(coll, "hyde", "other")


def test_builder_checks_inputs_up_front(tmp_path):
    with pytest.raises(R2MedError, match="unknown hyde split 'gpt5'"):
        expansion_builder("hyde:gpt5")
    with pytest.raises(R2MedError, match="unknown expansion method"):
        expansion_builder("hyde3:gpt4")
    with pytest.raises(R2MedError, match="expansion file not found"):
        expansion_builder("hyde:gpt4", file=tmp_path / "nope.jsonl")
    with pytest.raises(R2MedError, match="needs --expansion"):
        expansion_builder(None, folder=tmp_path)
    assert expansion_builder("hyde:qwen_7b").label == "hyde-qwen-7b"


def test_describe_changes_when_a_local_file_changes(tmp_path):
    root = _write_collection(tmp_path / "c")
    exp = root / "hyde" / "m" / "query_with_hydoc.jsonl"
    exp.parent.mkdir(parents=True)
    exp.write_text("".join(json.dumps({"id": f"q{i}", "hy_doc": "a"}) + "\n" for i in range(3)))
    builder = expansion_builder("hyde:m", data_dir=root)
    first = builder.describe()
    exp.write_text("".join(json.dumps({"id": f"q{i}", "hy_doc": "longer text"}) + "\n" for i in range(3)))
    assert builder.describe() != first


# -- the CLI -----------------------------------------------------------------------------------------
def test_evaluate_cli_with_expansion_writes_labelled_folder(tmp_path):
    folder = shared_collection("r2med-biology-demo")
    res = run_cli("evaluate", "--data-dir", str(folder), "--expansion", "hyde:qwen_7b", "--out", str(tmp_path))
    assert res.returncode == 0, res.stderr
    task = tmp_path / "bm25+hyde-qwen-7b" / "r2med-biology-demo"
    assert (task / "run.trec").exists() and (task / "metrics.json").exists()
    assert "bm25+hyde-qwen-7b" in res.stdout


def test_evaluate_cli_bad_expansion_is_one_line_exit_2(tmp_path):
    res = run_cli("evaluate", "--tasks", "Biology", "--expansion", "hyde:nonexistent", "--out", str(tmp_path))
    assert res.returncode == 2
    assert "unknown hyde split 'nonexistent'" in res.stderr and "Traceback" not in res.stderr
    assert not any(tmp_path.iterdir())
    res = run_cli("evaluate", "--tasks", "Biology", "--expansion", "rewrite:gpt4", "--out", str(tmp_path))
    assert res.returncode == 2 and "unknown expansion method 'rewrite'" in res.stderr


def _fill_hub_cache(cache: Path, task: str, source: Path, expansions: dict[str, str]) -> None:
    """huggingface_hub's cache layout (datasets--R2MED--<Task>/{refs/main, snapshots/<rev>/...}) at the pinned
    commit."""
    from hub_server import fill_hf_cache
    from r2med.data.tasks import get_task

    files = {name: (source / name).read_bytes() for name in ("corpus.jsonl", "query.jsonl", "qrels.jsonl")}
    files.update({rel: content.encode("utf-8") for rel, content in expansions.items()})
    fill_hf_cache(cache, f"R2MED/{task}", files, get_task(task).revision)


def test_hub_expansions_from_a_filled_cache_with_published_column(hf_cache, tmp_path):
    folder = shared_collection("r2med-biology-demo")
    raw = _raw_records(folder / "hyde" / "qwen-7b" / "query_with_hydoc.jsonl")
    r1 = "".join(
        json.dumps({"id": q, "text": r["text"], "hy_doc": "<think>long musing</think>" + r["hy_doc"]}) + "\n"
        for q, r in raw.items()
    )
    _fill_hub_cache(
        hf_cache,
        "Biology",
        folder,
        {
            "hyde/gpt4/query_with_hydoc.jsonl": (folder / "hyde" / "qwen-7b" / "query_with_hydoc.jsonl").read_text(),
            "hyde/r1-qwen-32b/query_with_hydoc.jsonl": r1,
        },
    )
    from r2med.data import load_task

    coll = load_task("Biology")
    stripped = ExpansionQueries("hyde", "r1_qwen_32b")(coll, "lexical")
    assert stripped == {q: r["hy_doc"] for q, r in raw.items()}  # the trace is gone
    res = run_cli("evaluate", "--tasks", "Biology", "--expansion", "hyde:gpt4", "--out", str(tmp_path))
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "bm25+hyde-gpt4" / "Biology" / "run.trec").exists()
    assert "published" in res.stdout and "57.34" in res.stdout  # the paper's BM25 + HyDE(GPT-4o) on Biology


@pytest.mark.slow
def test_dense_hyde_scores_are_the_mean_of_query_and_expansion_embeddings(tmp_path):
    """Dense + HyDE: the query vector is the mean of emb(query) and emb(hy_doc) (checked with a direct forward pass)."""
    pytest.importorskip("sentence_transformers")
    import numpy as np
    from sentence_transformers import SentenceTransformer

    from conftest import minilm_path

    folder = shared_collection("r2med-biology-demo")
    coll = load_folder(folder)
    raw = _raw_records(folder / "hyde" / "qwen-7b" / "query_with_hydoc.jsonl")
    path = minilm_path()
    result = run_task(
        coll,
        Plan(
            EvaluateStep.of("dense", model=path, max_length=64, cache=False, device="cpu", top_k=10),
            "",
            ExpansionQueries("hyde", "qwen-7b"),
        ),
    )
    model = SentenceTransformer(path, device="cpu")
    model.max_seq_length = 64
    doc_ids = list(coll.corpus)
    docs = model.encode(list(coll.corpus.values())).astype(np.float64)
    for qid, query in coll.queries.items():
        vec = (model.encode([query])[0].astype(np.float64) + model.encode([raw[qid]["hy_doc"]])[0]) / 2
        vec /= np.linalg.norm(vec)  # scored with cosine, as the paper's BEIR cos_sim (docs are unit already)
        expected = {d: float(s) for d, s in zip(doc_ids, docs @ vec)}
        got = result.run[qid]
        assert set(got) == set(expected)
        for d in got:
            assert got[d] == pytest.approx(expected[d], abs=1e-5)
