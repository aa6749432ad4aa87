"""Dense presets on BRIGHT's tasks run BRIGHT's own settings for their model; on R2MED's tasks, R2MED's, unchanged.

References: BRIGHT's instruction filling rebuilt here from its code (retrievers.py:96-97 ``add_instruct_concatenate``:
``instruction.format(task=task)`` with ``task`` the ``--task`` value, run.py:100) over the instruction texts of
``bright_models.json`` read here as plain JSON (copied from BRIGHT's configs/<model>/<task>.json; checked against the
files by tests/test_bright_protocol.py); BRIGHT's lengths, pooling and loaders typed here from retrievers.py (file and
line beside each); R2MED's settings typed from R2MED's code as retrieval/presets.py cites it; BRIGHT's OpenAI text
preparation (retrievers.py:29-33, 56) rebuilt for the embedding server; a real offline MiniLM through the command
line on the emulated hub (tests/bright_hub.py).
"""

from __future__ import annotations

import json
import logging
from importlib import resources

import pytest

from conftest import minilm_path, run_r2med
from r2med.errors import R2MedError
from r2med.retrieval import make_retriever

ALL = (
    "biology", "earth_science", "economics", "psychology", "robotics", "stackoverflow", "sustainable_living",
    "leetcode", "pony", "aops", "theoremqa_theorems", "theoremqa_questions",
)  # fmt: skip
LONG = ALL[:7] + ("pony",)
#: r2med preset -> BRIGHT's --model value (bright_models.json's mapping, typed here)
MAPPED = {
    "bge": "bge", "e5": "e5", "sfr": "sf", "grit": "grit", "inst-l": "inst-l", "inst-xl": "inst-xl",
    "openai": "openai", "gte-qwen2-7b": "qwen2", "sbert": "sbert", "qwen": "qwen", "voyage-large-2-instruct": "voyage",
}  # fmt: skip
#: presets that run their model's own hub code (an opt-in)
REMOTE = {"gte-qwen2-7b", "qwen"}


def raw_models() -> dict:
    text = resources.files("r2med.protocol").joinpath("bright_models.json").read_text(encoding="utf-8")
    return json.loads(text)["models"]


def brights_add_instruct_concatenate(texts, task, instruction):
    """retrievers.py:96-97, as BRIGHT calls it with task=args.task (run.py:100)."""
    return [instruction.format(task=task) + t for t in texts]


def brights_instruction(model: str, task: str, kind: str, long: bool) -> str:
    """What BRIGHT puts before a text of ``kind`` on ``task``: its config's instruction (``instructions_long`` in the
    long setting), filled with the raw task id; "" where the config has none (bm25, sbert, openai, voyage)."""
    table = raw_models()[model]["instructions"] or {}
    template = table.get(f"{'long' if long else 'standard'}_{kind}", {}).get(task)
    if template is None:
        return ""
    if model == "grit" and kind == "document":  # retrievers.py:289: used as is, not formatted
        return template
    return brights_add_instruct_concatenate([""], task, template)[0]


def built(preset: str, task: str, **options):
    if preset in REMOTE:
        options.setdefault("trust_remote_code", True)
    if preset in ("openai", "voyage-large-2-instruct"):
        options.setdefault("api_key", "test-key")
    return make_retriever(preset, task=task, **options)


@pytest.mark.parametrize("preset", sorted(MAPPED))
def test_instructions_on_brights_tasks_are_brights_own_filling(preset):
    model = MAPPED[preset]
    for task in ("biology", "earth_science", "stackoverflow", "sustainable_living", "pony", "leetcode",
                 "aops", "theoremqa_theorems"):  # fmt: skip
        settings = built(preset, f"bright:{task}").settings
        assert settings.query_instruction == brights_instruction(model, task, "query", False), (preset, task)
        assert settings.doc_instruction == brights_instruction(model, task, "document", False), (preset, task)
    for task in LONG:  # the long-document setting reads instructions_long
        settings = built(preset, f"bright:{task}:long").settings
        assert settings.query_instruction == brights_instruction(model, task, "query", True), (preset, task)
        assert settings.doc_instruction == brights_instruction(model, task, "document", True), (preset, task)


def test_task_is_filled_with_the_raw_task_id_not_its_display_name():
    """Typed from BRIGHT's configs and filled by hand: "a earth_science post", "a pony question"."""
    assert built("e5", "bright:Earth-Science").settings.query_instruction == (
        "Instruct: Given a earth_science post, retrieve relevant passages that help answer the post\nQuery: "
    )
    assert built("sfr", "bright:pony:long").settings.query_instruction == (
        "Instruct: Given a pony question, retrieve relevant documents that help answer the question\nQuery: "
    )
    assert built("bge", "bright:sustainable_living").settings.query_instruction == (
        "Represent this sustainable_living post for searching relevant passages: "
    )
    assert built("inst-l", "bright:leetcode").settings.doc_instruction == "Represent the Coding example for retrieval: "
    assert built("grit", "bright:biology").settings.doc_instruction == "<|embed|>\n"


#: BRIGHT's lengths, pooling, loader and normalisation per model, typed from retrievers.py:
#: preset -> (loader, pooling or None for the model's own, normalize, doc max length, query max length, dtype)
BRIGHTS_CODE = {
    "bge": ("sentence-transformers", None, True, None, None, "fp32"),  # 229-246: SentenceTransformer, model's own
    "sbert": ("sentence-transformers", None, True, None, None, "fp32"),  # 232-246
    "inst-l": ("sentence-transformers", None, True, 2048, 2048, "fp32"),  # 254-262: max_seq_length = 2048
    "inst-xl": ("sentence-transformers", None, True, 2048, 2048, "fp32"),
    "sfr": ("transformers", "last-token", True, 4096, 4096, "fp32"),  # 132-135, 166, 183
    "e5": ("transformers", "last-token", True, 4096, 4096, "fp32"),  # 144-147
    "qwen": ("transformers", "last-token", True, 8192, 8192, "fp32"),  # 136-139
    "gte-qwen2-7b": ("transformers", "last-token", True, 8192, 8192, "fp32"),  # 140-143
    "grit": ("gritlm", None, False, 2048, 256, "auto"),  # 287-291
    "openai": ("openai", None, False, 6000, 6000, "fp32"),  # 315-323: 6000 cl100k tokens
    "voyage-large-2-instruct": ("voyage", None, False, 16000, 16000, "fp32"),  # 405-413: 16000 tokens
}


@pytest.mark.parametrize("preset", sorted(BRIGHTS_CODE))
def test_lengths_pooling_and_loader_are_brights(preset):
    loader, pooling, normalize, doc_len, query_len, dtype = BRIGHTS_CODE[preset]
    retriever = built(preset, "bright:biology")
    s = retriever.settings
    assert (s.loader, s.normalize, s.max_length, s.query_max_length or s.max_length, s.dtype) == (
        loader, normalize, doc_len, query_len, dtype,
    ), preset  # fmt: skip
    if pooling is not None:
        assert s.pooling == pooling
    # the data's own record of BRIGHT's lengths agrees (two fields of bright_models.json, written apart)
    entry = raw_models()[MAPPED[preset]]
    assert (entry["doc_max_length"], entry["query_max_length"]) == (doc_len, query_len)
    assert s.model.lower() == entry["model"].lower()  # BRIGHT's checkpoint (hub ids are case-insensitive)
    assert retriever.similarity == "cosine"  # cosine, or cosine x 100: the same ranking
    settings = retriever.config()["settings"]
    assert (
        settings["family"] == "bright" and settings["model"] == MAPPED[preset] and settings["task"] == "bright:biology"
    )
    assert settings["score_scale"] == entry["score_scale"]


def test_instructor_excludes_the_prompt_from_pooling_and_openai_quotes_its_texts():
    assert built("inst-xl", "bright:pony").settings.extra == {"exclude_prompt_from_pooling": True}  # retrievers.py:259
    assert built("openai", "bright:pony").settings.extra == {"truncate_tokens": 6000, "text_form": "json-quoted"}
    assert built("voyage-large-2-instruct", "bright:pony").settings.extra == {"text_form": "as-is"}
    assert built("sfr", "bright:pony").settings.framing == "<s> {text} </s>"  # transformers 4.40's e5 tokenizer


def test_bm25_records_brights_settings_which_are_its_own():
    from r2med.protocol import bright
    from r2med.typed.options import Bm25Options

    retriever = make_retriever("bm25", task="bright:leetcode")
    assert retriever.config()["settings"]["family"] == "bright"
    assert (retriever.k1, retriever.b) == (bright.model("bm25").extra["k1"], bright.model("bm25").extra["b"])
    assert (Bm25Options().k1, Bm25Options().b) == (0.9, 0.4)  # retrievers.py:204
    assert "settings" not in make_retriever("bm25", task="Biology").config()
    assert make_retriever("bm25-standard", task="bright:leetcode").config()["settings"]["family"] == "r2med"


#: R2MED's settings on R2MED's Biology, typed from R2MED's code (eval_bench.py, utils.py@45cbac5, as
#: retrieval/presets.py cites them): what these presets ran before BRIGHT's settings existed
R2MED_BIOLOGY = {
    "e5": {
        "loader": "transformers", "pooling": "last-token", "normalize": True, "max_length": 2048,
        "query_instruction": (
            "Instruct: Given a Biology post, retrieve relevant passages that help answer the post\nQuery: "
        ),
        "doc_instruction": "", "framing": "<s> {text} </s>",
    },
    "bge": {
        "loader": "transformers", "pooling": "cls", "normalize": True, "max_length": 512,
        "query_instruction": "Represent this sentence for searching relevant passages: ", "doc_instruction": "",
    },
    "grit": {"loader": "gritlm", "max_length": 2048, "query_max_length": 512, "dtype": "auto"},
    "inst-l": {"loader": "sentence-transformers", "max_length": None},
}  # fmt: skip


@pytest.mark.parametrize("preset", sorted(R2MED_BIOLOGY))
def test_an_r2med_task_keeps_r2meds_settings(preset):
    retriever = make_retriever(preset, task="Biology")
    key = retriever.config()["encoder"]
    for field, value in R2MED_BIOLOGY[preset].items():
        assert key[field] == value, (preset, field)
    assert "settings" not in retriever.config()  # nothing new in the record: embedding caches and reuse unchanged
    from r2med.retrieval.presets import get_preset

    assert retriever.settings == get_preset(preset).settings("Biology")


def test_r2med_vectors_are_unchanged_by_brights_settings(tmp_path, monkeypatch):
    """The same model (MiniLM as the bge preset's checkpoint) on an R2MED task and on a BRIGHT task: the R2MED run
    encodes as bge's R2MED settings say (CLS pooling, no prompt on documents), the BRIGHT run as BRIGHT's
    (sentence-transformers' own pooling); the document vectors differ, and the R2MED ones equal a direct CLS
    forward pass of the model."""
    import numpy as np
    import torch
    from transformers import AutoModel, AutoTokenizer

    monkeypatch.setenv("R2MED_HOME", str(tmp_path))
    docs = {"d1": "the moth is drawn to the light", "d2": "enzymes fold proteins"}
    r2med_run = make_retriever("bge", task="Biology", model=minilm_path(), cache=False).index(docs)
    bright_run = make_retriever("bge", task="bright:biology", model=minilm_path(), cache=False).index(docs)
    tok, model = AutoTokenizer.from_pretrained(minilm_path()), AutoModel.from_pretrained(minilm_path()).eval()
    with torch.no_grad():
        enc = tok(list(docs.values()), padding=True, truncation=True, max_length=512, return_tensors="pt")
        cls = torch.nn.functional.normalize(model(**enc).last_hidden_state[:, 0], dim=-1).numpy()
    np.testing.assert_allclose(r2med_run.embeddings, cls, atol=1e-5)
    assert not np.allclose(r2med_run.embeddings, bright_run.embeddings, atol=1e-3)


def test_a_preset_without_brights_settings(caplog):
    """Refused where its instructions are per R2MED task (it has none for a BRIGHT task), unless given one; warned
    and run with its own settings where they are task-independent; BRIGHT's presets on R2MED tasks likewise."""
    with pytest.raises(R2MedError, match=r"reasonir-8b has no BRIGHT settings.*--set query_instruction="):
        make_retriever("reasonir-8b", task="bright:biology", trust_remote_code=True)
    mine = make_retriever("reasonir-8b", task="bright:biology", trust_remote_code=True, query_instruction="Q: ")
    assert mine.settings.query_instruction == "Q: " and mine.config()["settings"]["family"] == "r2med"
    with caplog.at_level(logging.WARNING):
        contriever = make_retriever("contriever", task="bright:pony")
    assert "contriever has no BRIGHT settings" in caplog.text and "bright:pony" in caplog.text
    assert contriever.config()["settings"] == {
        "family": "r2med", "task": "bright:pony", "note": "BRIGHT has no settings for contriever",
    }  # fmt: skip
    with pytest.raises(R2MedError, match=r"qwen has no R2MED settings.*per BRIGHT task"):
        make_retriever("qwen", task="Biology", trust_remote_code=True)
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        sbert = make_retriever("sbert", task="Biology")
    assert "sbert has no R2MED settings" in caplog.text
    assert sbert.config()["settings"]["family"] == "bright" and sbert.settings.query_instruction in (None, "")
    assert "settings" not in make_retriever("contriever", task="Biology").config()


def test_brights_openai_text_is_cut_then_json_quoted():
    """BRIGHT cuts each text to 6000 cl100k tokens (retrievers.py:315-323), then sends json.dumps(text with newlines
    as spaces) (56): the quotes and escapes are part of what is embedded."""
    from r2med.retrieval.encoders.api import truncate_tokens
    from test_dense_api import EmbeddingServer

    docs = {"d1": 'insulin\n"resistance"', "d2": "caf\u00e9 au lait", "d3": " ".join(["word"] * 7000)}
    with EmbeddingServer() as server:
        make_retriever("openai", task="bright:biology", base_url=server.base_url, api_key="test-key").index(docs)
        sent = [t for body in server.bodies for t in body["input"]]
    brights = [json.dumps(truncate_tokens(t, 6000).replace("\n", " ")) for t in docs.values()]
    assert sorted(sent) == sorted(brights)
    assert '"insulin \\"resistance\\""' in sent and '"caf\\u00e9 au lait"' in sent


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    from bright_hub import bright_files, fill_bright_cache, have_shared_bright

    pytest.importorskip("pyarrow")
    if not have_shared_bright():
        pytest.skip("../shared/data/bright is not available")
    root = tmp_path_factory.mktemp("bright_settings_cache")
    fill_bright_cache(
        root, bright_files(("biology", "pony"), queries=2, distractors=8, long_distractors=2, reasoning=())
    )
    return root


@pytest.fixture
def bright_cache(cache, monkeypatch, tmp_path):
    from huggingface_hub import constants

    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("R2MED_HOME", str(tmp_path / "home"))
    return cache


@pytest.mark.shared
def test_a_tiny_model_through_the_cli_records_brights_settings(bright_cache, tmp_path):
    """``r2med evaluate -r bge --model MiniLM -t bright:biology``: BRIGHT's bge settings for biology run and are
    recorded; the R2MED task's record of the same command has none; inst-l's 2048 tokens per side are recorded."""
    out = tmp_path / "out"
    res = run_r2med("evaluate", "-r", "bge", "--model", minilm_path(), "-t", "bright:biology", "-o", out, "--name", "b")
    assert res.returncode == 0, res.stderr
    metrics = json.loads((out / "b" / "bright-biology" / "metrics.json").read_text())
    config = metrics["config"]
    assert config["settings"]["family"] == "bright" and config["settings"]["model"] == "bge"
    assert config["encoder"]["query_instruction"] == "Represent this biology post for searching relevant passages: "
    assert config["encoder"]["loader"] == "sentence-transformers" and config["encoder"]["max_length"] is None
    assert metrics["encoding"]["max_length"] == {"doc": 256, "query": 256}  # MiniLM's own max_seq_length
    res = run_r2med(
        "evaluate", "-r", "inst-l", "--model", minilm_path(), "-t", "bright:pony:long", "-o", out, "--name", "i"
    )
    assert res.returncode == 0, res.stderr
    metrics = json.loads((out / "i" / "bright-pony-long" / "metrics.json").read_text())
    assert metrics["encoding"]["max_length"] == {"doc": 2048, "query": 2048}  # retrievers.py:262
    assert (
        metrics["config"]["encoder"]["doc_instruction"] == "Represent the Pony document for retrieval: "
    )  # a literal in its config
    assert metrics["config"]["settings"]["task"] == "bright:pony:long"


def test_voyage_large_2_instruct_sends_brights_model_and_input_types():
    """retrievers.py:445, 475: voyage_client.embed(texts, model="voyage-large-2-instruct", input_type="document" /
    "query"), the texts as they are (no instruction, newlines kept)."""
    from test_dense_api import EmbeddingServer

    docs = {"d1": "moths and\nlight", "d2": "rivers"}
    with EmbeddingServer() as server:
        retriever = make_retriever(
            "voyage-large-2-instruct", task="bright:biology", base_url=server.base_url, api_key="test-key"
        )
        retriever.index(docs)
        retriever.search({"q": "why moths"}, k=2)
    assert [b["model"] for b in server.bodies] == ["voyage-large-2-instruct"] * len(server.bodies)
    assert server.bodies[0]["input_type"] == "document" and server.bodies[-1]["input_type"] == "query"
    assert sorted(server.bodies[0]["input"]) == sorted(docs.values()) and server.bodies[-1]["input"] == ["why moths"]
