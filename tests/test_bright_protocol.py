"""BRIGHT's protocol data (r2med.protocol.bright) checked against independent facts.

References: BRIGHT's real examples rows and Anserini's qrels in ../shared/data/bright (skipped when absent); BRIGHT's
own instruction filling rebuilt here from its code (retrievers.py ``add_instruct_concatenate``); instruction texts
typed here from BRIGHT's configs/<model>/<task>.json; the leaderboard's averages against the paper's per-task rows
(two sources); r2med's own preset registry; and every instruction and every Pyserini figure against BRIGHT's
configs and Pyserini's 2cr matrix as ../shared/reference keeps them (skipped when ../shared is absent: tests read
references only from the repository and ../shared).
"""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import pytest

from r2med.errors import OptionError, R2MedError
from r2med.measures import Measure
from r2med.protocol import bright

SHARED_BRIGHT = Path(__file__).resolve().parents[2] / "shared" / "data" / "bright"
#: BRIGHT's configs/<model>/<task>.json (xlang-ai/BRIGHT d99e8391) and Pyserini's pyserini/2cr/bright.yaml
#: (castorini/pyserini 0a0be296), as ../shared/README.md names them
SHARED_REFERENCE = Path(__file__).resolve().parents[2] / "shared" / "reference"
ALL = [
    "biology", "earth_science", "economics", "psychology", "robotics", "stackoverflow", "sustainable_living",
    "leetcode", "pony", "aops", "theoremqa_theorems", "theoremqa_questions",
]  # fmt: skip
LONG = ALL[:7] + ["pony"]


def shared_rows(name: str) -> list[dict]:
    path = SHARED_BRIGHT / "examples" / f"{name.replace('_', '-')}.jsonl.gz"
    if not path.exists():
        pytest.skip("../shared/data/bright is not available")
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def reference_file(path: str) -> str:
    """A file of ../shared/reference (skip when ../shared is absent, as on a user's fresh clone)."""
    full = SHARED_REFERENCE / path
    if not SHARED_REFERENCE.is_dir():
        pytest.skip("../shared/reference is not available")
    return full.read_text(encoding="utf-8")  # a file missing from a present ../shared fails: never a silent skip


# ---------------------------------------------------------------- tasks


def test_twelve_tasks_in_brights_order():
    assert [t.name for t in bright.tasks()] == ALL
    assert [t.name for t in bright.tasks() if t.has_long_documents] == LONG
    assert bright.hub().long_document_tasks == tuple(LONG)


@pytest.mark.shared
@pytest.mark.parametrize("name", ALL)
def test_task_counts_equal_the_shared_examples(name):
    rows = shared_rows(name)
    spec = bright.task(name)
    assert spec.queries == len(rows)
    assert spec.gold_ids == sum(len(r["gold_ids"]) for r in rows)
    pairs = {(r["id"], g) for r in rows for g in r["gold_ids"]}
    assert spec.gold_pairs == len(pairs)
    excluded = [e for r in rows for e in r["excluded_ids"] if e != "N/A"]
    assert spec.excluded_ids == len(excluded)
    assert spec.queries_with_exclusions == sum(1 for r in rows if any(e != "N/A" for e in r["excluded_ids"]))
    long_gold = [g for r in rows for g in r["gold_ids_long"] if g != "N/A"]
    assert spec.long_gold_ids == (len(long_gold) if name in LONG else None)
    if name not in LONG:  # tasks without long documents hold ["N/A"] there
        assert all(r["gold_ids_long"] == ["N/A"] for r in rows)


@pytest.mark.shared
@pytest.mark.parametrize("name", ALL)
def test_plain_qrels_are_the_gold_pairs(name):
    """Anserini's plain qrels (a second file) hold exactly the examples' (query, gold id) pairs, relevance 1."""
    rows = shared_rows(name)
    lines = (SHARED_BRIGHT / "qrels" / f"{name.replace('_', '-')}.txt").read_text().splitlines()
    judged = {(q, d) for q, _, d, rel in (line.split() for line in lines) if rel == "1"}
    assert judged == {(r["id"], g) for r in rows for g in r["gold_ids"]}
    spec = bright.task(name)
    assert spec.qrels_lines == len(lines) == spec.gold_pairs
    fixed = (SHARED_BRIGHT / "qrels" / f"{name.replace('_', '-')}.fixed.txt").read_text().splitlines()
    assert spec.fixed_qrels_lines == len(fixed)


def test_published_sizes_of_the_issue():
    """Sizes stated in issue 32 and ../shared/README.md (R2MED Biology = BRIGHT biology)."""
    assert bright.task("leetcode").documents == 413_932
    assert bright.task("biology").documents == 57_359
    assert bright.task("biology").gold_pairs == 372
    assert bright.task("aops").documents == bright.task("theoremqa_questions").documents  # one corpus
    assert bright.task("stackoverflow").fixed_qrels_lines == 580
    assert bright.task("sustainable_living").fixed_qrels_lines == 1073


def test_task_names_accept_hyphens_prefix_and_case():
    assert bright.task("bright:earth-science").name == "earth_science"
    assert bright.task("Sustainable-Living").name == "sustainable_living"
    assert bright.task("theoremqa_theorems").qualified_name == "bright:theoremqa_theorems"
    assert bright.task("theoremqa_theorems").anserini_name == "theoremqa-theorems"
    with pytest.raises(OptionError, match=r"did you mean 'biology'"):
        bright.task("biolgy")


def test_every_task_count_has_a_source():
    for t in bright.tasks():
        for key in ("documents", "queries, gold_ids, gold_pairs, long_gold_ids, exclusions", "qrels_lines"):
            assert t.sources[key], (t.name, key)
        assert ("long_documents" in t.sources) == t.has_long_documents
        assert t.paper["source"]


# ---------------------------------------------------------------- hub layout


def test_hub_layout_paths():
    h = bright.hub()
    # the commit mteb's BRIGHT v1.1 tasks read (mteb@1fb1d57 mteb/tasks/retrieval/eng/bright_v1_1_retrieval.py)
    assert (h.repo_id, h.revision) == ("xlangai/BRIGHT", "3066d29c9651a576c8aba4832d249807b181ecae")
    assert h.path("examples", "earth-science") == "examples/earth_science-00000-of-00001.parquet"
    assert h.path("documents", "leetcode") == "documents/leetcode-00000-of-00001.parquet"
    assert h.path("long_documents", "pony") == "long_documents/pony-00000-of-00001.parquet"
    assert h.path("Gemini-1.0_reason", "aops") == "Gemini-1.0_reason/aops-00000-of-00001.parquet"
    with pytest.raises(OptionError, match="no long documents"):
        h.path("long_documents", "leetcode")
    with pytest.raises(OptionError, match="no BRIGHT hub config"):
        h.path("gpt5_reason", "biology")
    assert h.document_columns == ("id", "content")
    assert set(h.example_columns) == {
        "query",
        "reasoning",
        "id",
        "excluded_ids",
        "gold_ids",
        "gold_ids_long",
        "gold_answer",
    }
    assert [r.config for r in h.reasoning_sets] == [
        "gpt4_reason", "llama3-70b_reason", "claude-3-opus_reason", "Gemini-1.0_reason", "grit_reason",
    ]  # fmt: skip
    assert bright.reasoning_set("gpt4").config == bright.reasoning_set("gpt4_reason").config == "gpt4_reason"


# ---------------------------------------------------------------- instructions


def brights_add_instruct_concatenate(texts, task, instruction):
    """BRIGHT's retrievers.py:96-97, rebuilt: the instruction formatted with ``task``, then each text."""
    return [instruction.format(task=task) + t for t in texts]


def test_instruction_filling_is_brights():
    """BRIGHT calls the retriever with task=args.task (run.py:100), the --task value: ``earth_science``."""
    for name, m in bright.models().items():
        for t in ALL:
            for long in (False, True) if t in LONG else (False,):
                template = m.instruction_template(t, "query", long)
                if template is None:
                    assert m.instruction(t, "query", long) == ""
                    continue
                ours = m.instruction(bright.task(t).anserini_name, "query", long) + "QUERY"  # asked with hyphens
                assert [ours] == brights_add_instruct_concatenate(["QUERY"], t, template), (name, t, long)


def test_instruction_texts_as_brights_configs_hold_them():
    """Typed here from BRIGHT's configs (xlang-ai/BRIGHT@d99e839 configs/<model>/<task>.json), filled by hand."""
    e5 = bright.model("e5")
    assert e5.instruction("earth_science") == (
        "Instruct: Given a earth_science post, retrieve relevant passages that help answer the post\nQuery: "
    )
    assert e5.instruction("pony", long=True) == (
        "Instruct: Given a pony question, retrieve relevant documents that help answer the question\nQuery: "
    )
    assert bright.model("bge").instruction("pony") == "Represent this Pony question for searching relevant passages: "
    assert bright.model("bge").instruction("theoremqa_theorems") == (
        "Represent this Math problem for searching relevant theorems: "
    )
    assert bright.model("inst-xl").instruction("leetcode", "document") == "Represent the Coding example for retrieval: "
    assert bright.model("inst-l").instruction("sustainable_living", "document", long=True) == (
        "Represent the sustainable_living document for retrieval: "
    )
    assert bright.model("grit").instruction("aops") == (
        "<|user|>\nGiven a Math problem, retrieve relevant examples that help answer the problem\n<|embed|>\n"
    )
    assert bright.model("grit").instruction("biology", "document") == "<|embed|>\n"
    for name in ("bm25", "sbert", "openai", "cohere", "voyage", "google"):
        assert all(bright.model(name).instruction(t) == "" for t in ALL), name


def test_shared_configs_as_brights_generator_writes_them():
    """generate_configs.py writes one table for sf/qwen/e5 (and qwen2's copy), one for inst-l/inst-xl."""
    e5 = bright.model("e5").instructions
    assert all(bright.model(n).instructions == e5 for n in ("sf", "qwen", "qwen2"))
    assert bright.model("inst-l").instructions == bright.model("inst-xl").instructions
    for name, m in bright.models().items():
        for key, table in m.instructions.items():
            expected = LONG if key.startswith("long") else ALL
            assert sorted(table) == sorted(expected), (name, key)


def test_long_setting_only_for_long_tasks():
    with pytest.raises(OptionError, match="no long-document setting"):
        bright.model("e5").instruction("leetcode", long=True)


def test_grit_document_instruction_needs_no_formatting():
    """retrievers.py:289 passes grit's document instruction unformatted: it must hold no placeholder."""
    for t in ALL:
        assert "{" not in bright.model("grit").instruction_template(t, "document")


@pytest.mark.shared
def test_instructions_equal_brights_config_files():
    """Every stored template equals BRIGHT's configs/<model>/<task>.json (../shared/reference/bright-configs)."""
    for name, m in bright.models().items():
        for t in ALL:
            config = json.loads(reference_file(f"bright-configs/{name}/{t}.json"))
            for setting, key in (("instructions", "standard"), ("instructions_long", "long")):
                for kind in ("query", "document"):
                    stored = m.instructions.get(f"{key}_{kind}", {}).get(t)
                    assert stored == config.get(setting, {}).get(kind), (name, t, setting, kind)


# ---------------------------------------------------------------- models


def test_leaderboard_name_sfr_is_brights_sf():
    assert bright.model("sfr").name == "sf"
    with pytest.raises(OptionError, match="unknown BRIGHT retriever"):
        bright.model("nomic")


def test_presets_map_to_the_same_checkpoint():
    """Each r2med preset named in the data exists and loads BRIGHT's checkpoint (hub ids are case-insensitive)."""
    import r2med.retrieval.later_presets  # noqa: F401  (registers the later presets)
    from r2med.retrieval.presets import get_preset
    from r2med.retrieval.registry import retriever_meta

    mapped = {n: m.r2med_preset for n, m in bright.models().items() if m.r2med_preset}
    assert mapped == {
        "bm25": "bm25", "bge": "bge", "e5": "e5", "sf": "sfr", "grit": "grit", "inst-l": "inst-l", "inst-xl": "inst-xl",
        "openai": "openai", "qwen2": "gte-qwen2-7b", "sbert": "sbert", "qwen": "qwen",
        "voyage": "voyage-large-2-instruct",
    }  # fmt: skip
    assert {n for n, m in bright.models().items() if m.defines_preset} == {"sbert", "qwen", "voyage"}
    for name, preset in mapped.items():
        retriever_meta(preset)
        if name != "bm25":
            assert get_preset(preset).hub_id.lower() == bright.model(name).model.lower(), name
    assert bright.model_for_preset("sfr").name == "sf"
    assert bright.model_for_preset("medcpt") is None
    assert bright.model("bm25").extra["k1"] == 0.9 and bright.model("bm25").extra["b"] == 0.4


def test_pyserini_query_prefixes():
    assert bright.pyserini_query_prefix("bm25", "biology") is None
    assert bright.pyserini_query_prefix("reason-embed-qwen3-4b-0928", "earth-science") == (
        "Instruct: Given an Earth Science post, retrieve relevant passages that help answer the post.\nQuery: "
    )
    assert bright.pyserini_query_prefix("diver-retriever-4b", "pony") == (
        "Instruct: Given a web search query, retrieve relevant passages that answer the query\nQuery:"
    )


def test_rerank_conventions_name_their_lines():
    conventions = bright.rerank_conventions()
    assert "k - rank" in conventions["llm_scores"]
    assert all("rerank.py:" in v or k.startswith("_") or k == "leaderboard_rows" for k, v in conventions.items())


# ---------------------------------------------------------------- published figures


def test_every_published_row_has_a_source_and_known_fields():
    rows = bright.published_rows()
    assert len(rows) > 500
    measures = {"nDCG@10", "R@100", "R@1000", "Recall@1"}
    for r in rows:
        assert r.source.strip()
        assert r.task in (*ALL, "Average"), r
        assert bright.csv_measure(r.measure) in measures, r
        assert r.documents in ("short", "long")
        assert (r.documents == "long") == (r.qrels == "gold_ids_long"), r
        assert 0.0 <= r.value <= 100.0, r
        if r.documents == "long" and r.task != "Average":
            assert r.task in LONG


def test_one_figure_per_configuration_and_task():
    keys = [
        (r.setting, r.retriever, r.queries, r.reranker, r.documents, r.measure, r.task) for r in bright.published_rows()
    ]
    assert len(keys) == len(set(keys))


def test_paper_rows_average_to_the_leaderboard():
    """The paper's per-task figures (one source) average, rounded to 0.1, to the leaderboard's averages (another)."""
    checked = 0
    for queries in ("original", "gpt4_reason"):
        for name in bright.models():
            per_task = bright.published(name, setting="paper", queries=queries)
            board = bright.published(name, setting="leaderboard", queries=queries)
            if not per_task:
                continue
            assert sorted(per_task) == sorted(ALL), (name, queries)
            assert math.isclose(bright.mean(per_task.values()), board["Average"], abs_tol=0.051), (name, queries)
            checked += 1
    assert checked == 13 + 5  # the paper's 13 retrievers; BRIGHT's GPT-4-reasoning rows for 5 of them


def test_leaderboard_has_every_reasoning_set_for_the_13():
    for config in ("gpt4_reason", "llama3-70b_reason", "claude-3-opus_reason", "Gemini-1.0_reason", "grit_reason"):
        names = {r.retriever for r in bright.published_rows() if r.setting == "leaderboard" and r.queries == config}
        assert len(names) == 13, config
    long_rows = bright.published("bm25", setting="leaderboard", documents="long", measure=Measure.parse("Recall@1"))
    assert long_rows == {"Average": 11.4}


@pytest.mark.shared
def test_pyserini_rows_equal_the_2cr_file():
    """Every Pyserini figure equals castorini/pyserini's pyserini/2cr/bright.yaml (../shared/reference), x100."""
    yaml = pytest.importorskip("yaml")
    conditions = yaml.safe_load(reference_file("pyserini-2cr-bright.yaml"))["conditions"]
    expected = {
        (c["name"], d["dataset"].replace("-", "_"), measure): value * 100
        for c in conditions
        for d in c["datasets"]
        for scores in d["scores"]
        for measure, value in scores.items()
    }
    ours = {
        (r.retriever, r.task, bright.csv_measure(r.measure)): r.value
        for r in bright.published_rows()
        if r.setting == "pyserini_2cr"
    }
    assert ours.keys() == expected.keys()
    assert all(math.isclose(ours[k], expected[k], abs_tol=1e-9) for k in expected)


def test_published_prefers_the_papers_own_rows():
    assert bright.published("bm25")["biology"] == 18.9  # the paper's; Pyserini's Lucene BM25 is 18.24
    assert bright.published("bm25", setting="pyserini_2cr")["biology"] == 18.24
    assert bright.published("no-such-retriever") == {}


# ---------------------------------------------------------------- contamination


def test_contamination_facts():
    diver = bright.contaminated_tasks("diver-4b")
    assert set(diver) == {f"bright:{t}" for t in ALL} | {"Biology"}  # R2MED's Biology shares BRIGHT biology's documents
    assert bright.contaminated_tasks("AQ-MedAI/Diver-Retriever-4B") == diver
    assert bright.contaminated_tasks("reasonir-8b") == diver
    assert bright.contaminated_tasks("rader-7b") == ("bright:theoremqa_theorems",)
    assert bright.contaminated_tasks("bge") == ()
    for c in bright.contamination():
        assert c.sources and all(s.strip() for s in c.sources)
        assert c.certainty in ("stated", "inferred")


def test_a_model_entry_of_another_type_is_a_packaging_error_naming_model_and_key():
    """bright_models.json's entries are read field by field against BrightModel's types (declared once there)."""
    entry = dict(bright._models_file()["models"]["sf"])
    assert bright._model_from("sf", entry) == bright.model("sf")
    with pytest.raises(ValueError, match=r"model 'sf': query_max_length is 'long'"):
        bright._model_from("sf", {**entry, "query_max_length": "long"})
    with pytest.raises(ValueError, match=r"model 'sf': sources is"):
        bright._model_from("sf", {**entry, "sources": {"pooling": 3}})
    with pytest.raises(R2MedError, match="unknown"):  # a key BrightModel has no field for
        bright._model_from("sf", {**entry, "poolin": "mean"})
