"""protocol/later_models.json against tables typed from the sources it cites (file and line), and the CSV.

AS = VectorSpaceLab/agentic-search (ReasonEmbed's R2MED evaluation), RR = 8421BCD/ReasonRank,
CARD = the Qwen3-Reranker model card's Transformers code (fenghaitao/Qwen3-Embedding README.md@14f0f21).
"""

from __future__ import annotations

import re

import pytest

from r2med.protocol import published_figures
from r2med.protocol.later_models import later_models, later_reranker, later_retriever, query_instruction

TASKS = [
    "Biology",
    "Bioinformatics",
    "Medical-Sciences",
    "MedXpertQA-Exam",
    "MedQA-Diag",
    "PMC-Treatment",
    "PMC-Clinical",
    "IIYi-Clinical",
]
# AS ReasonEmbed/evaluation_r2med/code/prompts.py@344179f, lines 2-9 (note the trailing periods)
INSTRUCTIONS = {
    "Biology": "Given a Biology post, retrieve relevant passages that help answer the post.",  # :2
    "Medical-Sciences": "Given a Medical Science post, retrieve relevant passages that help answer the post.",  # :3
    "Bioinformatics": "Given a Bioinformatics post, retrieve relevant passages that help answer the post.",  # :4
    "MedXpertQA-Exam": "Given a Medical Exam, retrieve relevant passages that help answer the exam.",  # :5
    "MedQA-Diag": "Given a Medical Exam, retrieve relevant passages that help answer the exam.",  # :6
    "PMC-Treatment": "Given a Clinical Case, retrieve relevant passages that help answer the case.",  # :7
    "PMC-Clinical": "Given a Clinical Case, retrieve similar cases that help diagnose the case.",  # :8
    "IIYi-Clinical": "Given a Clinical Case, retrieve similar cases that help diagnose the case.",  # :9
}
S = "ReasonEmbed/evaluation_r2med/scripts/"
# preset -> (hub id, the script line naming it, CSV retriever name, published average)
PRESETS = {
    "reasonembed-qwen3-8b": (
        "hanhainebula/reason-embed-qwen3-8b-0928",
        S + "ours/eval_reason_embed_qwen3_8b.sh@d9438d6:6",
        "ReasonEmbed-Qwen3-8B",
        43.18,
    ),
    "reasonembed-qwen3-4b": (
        "hanhainebula/reason-embed-qwen3-4b-0928",
        S + "ours/eval_reason_embed_qwen3_4b.sh@d9438d6:6",
        "ReasonEmbed-Qwen3-4B",
        41.16,
    ),
    "reasonembed-llama-8b": (
        "hanhainebula/reason-embed-llama-3.1-8b-0928",
        S + "ours/eval_reason_embed_llama_3.1_8b.sh@d9438d6:6",
        "ReasonEmbed-Llama-3.1-8B",
        42.76,
    ),
    "reasonembed-basic-qwen3-8b": (
        "hanhainebula/reason-embed-basic-qwen3-8b-0928",
        S + "ours/eval_reason_embed_basic_qwen3_8b.sh@d9438d6:6",
        "ReasonEmbed-Basic-Qwen3-8B",
        42.36,
    ),
    "reasonembed-basic-qwen3-4b": (
        "hanhainebula/reason-embed-basic-qwen3-4b-0928",
        S + "ours/eval_reason_embed_basic_qwen3_4b.sh@d9438d6:6",
        "ReasonEmbed-Basic-Qwen3-4B",
        39.94,
    ),
    "reasonembed-basic-llama-8b": (
        "hanhainebula/reason-embed-basic-llama-3.1-8b-0928",
        S + "ours/eval_reason_embed_basic_llama_3.1_8b.sh@d73843d:6",
        "ReasonEmbed-Basic-Llama-3.1-8B",
        41.97,
    ),
    "qwen3-emb-8b": (
        "Qwen/Qwen3-Embedding-8B",
        S + "baselines/eval_qwen3_embedding_8b.sh@344179f:6",
        "Qwen3-Embedding-8B",
        34.22,
    ),
    "qwen3-emb-4b": (
        "Qwen/Qwen3-Embedding-4B",
        S + "baselines/eval_qwen3_embedding_4b.sh@344179f:6",
        "Qwen3-Embedding-4B",
        31.75,
    ),
    "diver-4b": (
        "AQ-MedAI/Diver-Retriever-4B",
        S + "baselines/eval_diver_retriever_4b.sh@344179f:6",
        "DIVER-Retriever-4B",
        32.23,
    ),
    "rader-7b": (
        "Raderspace/RaDeR_gte_Qwen2-7B_MATH_LLMq_CoT_lexical",
        S + "baselines/eval_rader_gte_qwen2_7b.sh@344179f:6",
        "RaDeR-gte-Qwen2-7B",
        35.21,
    ),
    "gte-qwen2-7b": ("Alibaba-NLP/gte-Qwen2-7B-instruct", None, "gte-Qwen2-7B-instruct", 32.56),
    "reasonir-8b": ("reasonir/ReasonIR-8B", S + "baselines/eval_reasonir_8b.sh@344179f:6", "ReasonIR-8B", 27.94),
}
# the FlagEmbedding recipe: setting -> (value, script line); RaDeR's script has --trust_remote_code at :23,
# so its later lines are one further down
FE_RECIPE = {
    "pooling": ("last-token", 24),
    "query_template": ("Instruct: {instruction}\nQuery: {query}", 26),
    "batch_size": (256, 27),
    "query_max_length": (512, 28),
    "doc_max_length": (512, 29),
}
SOURCE = re.compile(r"[\w.-]+/[\w.-]+ \S+@[0-9a-f]{7}(:\d+(-\d+)?)?")


def csv_rows(setting, retriever, expansion="none"):
    return {
        f.task: f.ndcg10
        for f in published_figures()
        if (f.setting, f.retriever, f.expansion) == (setting, retriever, expansion)
    }


def test_instruction_table_is_prompts_py_verbatim():
    data = later_models()
    assert data["tasks"] == TASKS
    assert data["query_instructions"]["reasonembed-r2med"] == INSTRUCTIONS
    assert query_instruction("qwen3-emb-8b", "Biology") == f"Instruct: {INSTRUCTIONS['Biology']}\nQuery: "
    assert query_instruction("reasonir-8b", "PMC-Clinical") == f"<|user|>\n{INSTRUCTIONS['PMC-Clinical']}\n<|embed|>\n"


def test_every_later_csv_row_has_exactly_one_preset_and_its_figures():
    retrievers = later_models()["retrievers"]
    assert set(retrievers) == set(PRESETS)
    csv_names = {f.retriever for f in published_figures() if f.setting == "later_embedder"}
    assert sorted(r["published"]["retriever"] for r in retrievers.values()) == sorted(csv_names)
    for name, (_hub, _line, csv_name, average) in PRESETS.items():
        pub = retrievers[name]["published"]
        assert (pub["setting"], pub["retriever"], pub["expansion"], pub["llm"]) == (
            "later_embedder",
            csv_name,
            "none",
            "none",
        )
        rows = csv_rows("later_embedder", csv_name)
        assert set(rows) == set(TASKS) | {"Average"} and rows["Average"] == pub["average"] == average
        assert round(sum(rows[t] for t in TASKS) / 8, 2) == pytest.approx(average, abs=0.011)
    rr = later_reranker("reasonrank-32b")["published"]
    rows = csv_rows("later_leaderboard", "e5", "rerank:ReasonRank(32B)")
    assert (rr["setting"], rr["retriever"], rr["expansion"]) == ("later_leaderboard", "e5", "rerank:ReasonRank(32B)")
    assert rows["Average"] == rr["average"] == 42.85


@pytest.mark.parametrize("name", list(PRESETS))
def test_preset_settings_and_their_sources(name):
    entry = later_retriever(name)
    hub, line, _, _ = PRESETS[name]
    settings, sources, enc = entry["settings"], entry["sources"], entry["r2med_encoder"]
    assert settings["hub_id"] == hub and settings["revision"] is None
    if line:
        assert sources["hub_id"] == f"VectorSpaceLab/agentic-search {line}"
    assert set(sources) >= set(settings) - {"upstream_runner", "dtype_detail"}, "a setting without a source"
    assert any("revision" in gap for gap in entry["gaps"])
    assert settings["normalize"] is True and enc["normalize"] is True and enc["similarity"] == "cosine"
    assert (
        settings["query_max_length"]
        == settings["doc_max_length"]
        == enc["max_length"]
        == enc["query_max_length"]
        == 512
    )
    assert settings["query_instructions"] == "reasonembed-r2med" and settings["append_eos"] is False
    # r2med's prefixes are the templates up to the text
    assert settings["query_template"] == enc["query_instruction_template"] + "{query}"
    assert settings["doc_template"] == enc["doc_instruction"] + "{doc}"
    assert enc["trust_remote_code"] is settings["trust_remote_code"]
    if name == "reasonir-8b":  # AS code/reasonir_models.py@344179f
        assert settings["query_template"] == "<|user|>\n{instruction}\n<|embed|>\n{query}"  # :65
        assert settings["doc_template"] == "<|embed|>\n{doc}"  # :52
        assert enc["loader"] == "sentence-transformers" and settings["dtype"] == enc["dtype"] == "auto"
        assert enc["extra"] == {"exclude_prompt_from_pooling": False}  # the harness never excludes the prompt
        assert settings["batch_size"] == 8 and "eval_reasonir_8b.sh@344179f:25" in sources["batch_size"]
        assert (
            settings["trust_remote_code"] is True and "eval_reasonir_8b.sh@344179f:23" in sources["trust_remote_code"]
        )
        return
    assert enc["loader"] == "transformers" and enc["pooling"] == "last-token" and enc["append_eos"] is False
    assert settings["dtype"] == enc["dtype"] == "fp16" and settings["doc_template"] == "{doc}"
    shift = 1 if name in ("rader-7b", "gte-qwen2-7b") else 0
    script = (line or PRESETS["rader-7b"][1]).rsplit(":", 1)[0]
    for key, (value, n) in FE_RECIPE.items():
        assert settings[key] == value, key
        assert f"{script}:{n + shift}" in sources[key], (key, sources[key])
    assert settings["trust_remote_code"] is (name in ("rader-7b", "gte-qwen2-7b"))
    assert "prompts.py@344179f:2-9" in sources["query_instructions"]
    if name == "gte-qwen2-7b":  # no published settings: every one is marked as r2med's assumption
        assert entry["assumed"] is True and entry["default_choice"]
        assert all(v.startswith("ASSUMED") for k, v in sources.items() if k not in ("hub_id", "revision"))
        assert any("No published R2MED evaluation script" in gap for gap in entry["gaps"])
    else:
        assert "assumed" not in entry


def test_every_source_names_a_file_version_or_says_why_not():
    data = later_models()
    for group in ("retrievers", "rerankers"):
        for name, entry in data[group].items():
            for key, src in entry["sources"].items():
                assert src and (
                    SOURCE.search(src)
                    or "not named" in src
                    or "suggestion" in src
                    or "third-party" in src
                    or "published table" in src
                ), (name, key, src)


# -- rerankers ----------------------------------------------------------------------------------------------


def test_reasonrank_prompt_and_settings_verbatim():
    for name in ("reasonrank-32b", "reasonrank-7b"):
        s = later_reranker(name)["settings"]
        # RR listwise_prompt_r1.toml@e6d3ab4:3
        assert s["prompt"]["system"] == (
            "You are RankLLM, an intelligent assistant that can rank passages based on their relevance to the query. "
            "Given a query and a passage list, you first thinks about the reasoning process in the mind and then "
            "provides the answer (i.e., the reranked passage list). The reasoning process and answer are enclosed "
            "within <think> </think> and <answer> </answer> tags, respectively, i.e., <think> reasoning process "
            "here </think> <answer> answer here </answer>."
        )
        # RR utils.py@e6d3ab4 add_prefix_prompt() / add_post_prompt(), rank_listwise_os_llm.py create_prompt()
        assert s["prompt"]["user_prefix"] == (
            "I will provide you with {num} passages, each indicated by a numerical "
            "identifier []. Rank the passages based on their relevance to the "
            "search query: {query}.\n"
        )
        assert s["prompt"]["after_prefix"] == "\n" and s["prompt"]["passage_line"] == "[{rank}] {content}\n"
        assert s["prompt"]["user_post"] == (
            "Search Query: {query}.\nRank the {num} passages above based on their relevance to the search query. "
            "All the passages should be included and listed using identifiers, in descending order of relevance. "
            "The format of the answer should be [] > [], e.g., [2] > [1]."
        )
        assert s["answer_pattern"] == r"<think>.*?</think>\s*<answer>(.*?)</answer>"  # listwise_prompt_r1.toml:5
        # RR run_rank_llm.sh@70f5b61 :10 window, :16 step, :17 depth, :18 passes, :19 reasoning_maxlen, :25 context
        assert (s["window_size"], s["step"], s["rerank_depth"], s["num_passes"]) == (20, 10, 100, 1)
        assert (s["temperature"], s["max_tokens"], s["context_size"]) == (0.0, 3072 + 100, 32768)
        assert s["passage_max_tokens"] == 512  # index_and_topics.py DOC_MAXLEN['r2med_*']
    assert later_reranker("reasonrank-32b")["settings"]["hub_id"] == "liuwenhan/reasonrank-32B"
    assert later_reranker("reasonrank-7b")["settings"]["hub_id"] == "liuwenhan/reasonrank-7B"
    assert later_reranker("reasonrank-7b")["published"]["elsewhere"]["average"] == 39.53


@pytest.mark.parametrize(
    "name, hub",
    [
        ("qwen3-reranker-0.6b", "Qwen/Qwen3-Reranker-0.6B"),
        ("qwen3-reranker-4b", "Qwen/Qwen3-Reranker-4B"),
        ("qwen3-reranker-8b", "Qwen/Qwen3-Reranker-8B"),
    ],
)
def test_qwen3_reranker_card_strings_verbatim(name, hub):
    entry = later_reranker(name)
    s = entry["settings"]
    assert s["hub_id"] == hub and entry["published"] is None and entry["gaps"]
    assert s["prefix"] == (
        "<|im_start|>system\nJudge whether the Document meets the requirements based on the Query "
        'and the Instruct provided. Note that the answer can only be "yes" or "no".<|im_end|>\n'
        "<|im_start|>user\n"
    )
    assert s["suffix"] == "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
    assert s["pair_template"] == "<Instruct>: {instruction}\n<Query>: {query}\n<Document>: {doc}"
    assert s["default_instruction"] == "Given a web search query, retrieve relevant passages that answer the query"
    assert (s["max_length"], s["padding_side"], s["yes_token"], s["no_token"]) == (8192, "left", "yes", "no")
