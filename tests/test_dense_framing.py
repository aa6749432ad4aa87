"""The special tokens each model saw in its published runs, whatever the tokenizer's files say (issue 20).

A tiny random Mistral is saved with tokenizers like intfloat/e5-mistral-7b-instruct's: ``tokenizer_config.json``
says ``add_eos_token: true`` while ``tokenizer.json``'s post-processor adds only ``<s>`` (transformers >= 5 reads
``<s> text``), and with a consistent one (``<s> text </s>``, what transformers < 5 built).  The expected ids are
built by hand (one id per UTF-8 byte, ``tiny_lm.mistral_byte_ids``); the pooled vector is checked against a
direct forward pass of those ids; and the same ``r2med evaluate -r e5`` run comes from both.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from conftest import run_r2med, shared_collection
from hub_server import fill_hf_cache
from tiny_lm import byte_tokenizer, mistral_byte_ids, tiny_mistral, tiny_model

torch = pytest.importorskip("torch")

from r2med.errors import R2MedError  # noqa: E402 - after the torch skip
from r2med.retrieval.encoders import EncoderSettings, FramingRecord, make_encoder  # noqa: E402
from r2med.retrieval.presets import get_preset  # noqa: E402

E5_HUB_ID = "intfloat/e5-mistral-7b-instruct"
BOS, EOS = 1, 2  # <s>, </s> in Mistral's vocabulary (and the tiny one's)
TEXTS = ["insulin lowers glucose", "a much longer passage about the kidney and its tubules " * 3, "x"]


@pytest.fixture(scope="module")
def mistrals(tmp_path_factory) -> dict[bool, Path]:
    """post-processor adds </s> -> folder; the same weights (seed) in both."""
    return {adds: tiny_mistral(tmp_path_factory.mktemp(f"mistral-eos{int(adds)}"), adds) for adds in (True, False)}


def test_the_two_tokenizers_really_disagree(mistrals):
    """The premise: loaded as they are, one tokenizer gives <s> text </s> and the other <s> text."""
    from transformers import AutoTokenizer

    text = TEXTS[0]
    with_eos = AutoTokenizer.from_pretrained(mistrals[True])(text)["input_ids"]
    without = AutoTokenizer.from_pretrained(mistrals[False])(text)["input_ids"]
    assert with_eos == [BOS, *mistral_byte_ids(text), EOS]
    assert without == [BOS, *mistral_byte_ids(text)]
    config = json.loads((mistrals[False] / "tokenizer_config.json").read_text())
    assert config["add_eos_token"] is True and config["add_bos_token"] is True


@pytest.mark.parametrize("adds_eos", [True, False])
def test_e5_ids_are_the_published_framing_whatever_the_tokenizer_adds(mistrals, adds_eos):
    settings = get_preset("e5").settings("Biology", model=str(mistrals[adds_eos]))
    assert settings.framing == "<s> {text} </s>"
    encoder = make_encoder(settings, device="cpu", batch_size=2)
    tok, _ = encoder._load(settings.model)
    for text in TEXTS:
        assert encoder._tokenize(tok, [text], "doc", 2048)["input_ids"] == [[BOS, *mistral_byte_ids(text), EOS]]
    # max_length counts the special tokens (as a tokenizer's own truncation does): 1 + 8 + 1
    assert encoder._tokenize(tok, [TEXTS[1]], "doc", 10)["input_ids"] == [[BOS, *mistral_byte_ids(TEXTS[1])[:8], EOS]]
    with pytest.raises(R2MedError, match="no room"):
        encoder._tokenize(tok, [TEXTS[0]], "doc", 2)


def test_e5_vectors_pool_the_eos_state_and_are_equal_from_both_tokenizers(mistrals):
    from transformers import AutoModel

    got = {}
    for adds in (True, False):
        settings = get_preset("e5").settings("Biology", model=str(mistrals[adds]))
        got[adds] = make_encoder(settings, device="cpu", batch_size=2).encode_corpus(TEXTS)
    np.testing.assert_array_equal(got[True], got[False])
    model = AutoModel.from_pretrained(mistrals[True]).eval()
    for row, text in zip(got[True], TEXTS):
        with torch.no_grad():
            hidden = model(input_ids=torch.tensor([[BOS, *mistral_byte_ids(text), EOS]])).last_hidden_state[0, -1]
        np.testing.assert_allclose(row, (hidden / hidden.norm()).numpy(), atol=2e-5)


def test_a_tokenizer_without_the_framings_token_is_a_one_line_error(tmp_path):
    """A model saved without a BOS token cannot be framed <s> text </s>: one line, before any vector."""
    folder = tmp_path / "no-bos"
    tiny_model(folder, "qwen3", "plain")
    settings = get_preset("e5").settings("Biology", model=str(folder))
    with pytest.raises(R2MedError, match="names the token '<s>', which its tokenizer's vocabulary lacks") as info:
        make_encoder(settings, device="cpu").encode_corpus(TEXTS[:1])
    assert "\n" not in str(info.value)


def test_a_sentence_transformers_model_whose_tokenizer_lacks_the_framing_is_refused(tmp_path):
    """sentence-transformers tokenizes itself: r2med checks the first text and refuses a mismatch."""
    from sentence_transformers import SentenceTransformer

    try:
        from sentence_transformers.sentence_transformer.modules import (
            Pooling,
            Transformer,
        )
    except ImportError:  # sentence-transformers < 6
        from sentence_transformers.models import Pooling, Transformer
    model, _ = tiny_model(tmp_path / "hf", "llama", "plain")  # no <|begin_of_text|>: ReasonIR's framing says BOS
    SentenceTransformer(
        modules=[Transformer(str(tmp_path / "hf")), Pooling(model.config.hidden_size, "mean")], device="cpu"
    ).save(str(tmp_path / "st"))
    settings = EncoderSettings(
        model=str(tmp_path / "st"), loader="sentence-transformers", framing="<|begin_of_text|> {text}"
    )
    with pytest.raises(R2MedError, match="are not framed '<\\|begin_of_text\\|> \\{text\\}'"):
        make_encoder(settings, device="cpu").encode_corpus(TEXTS[:1])
    ok = make_encoder(settings.with_(framing="{text}"), device="cpu").encode_corpus(TEXTS[:1])
    assert ok.shape[0] == 1


def test_every_preset_whose_framing_matters_has_a_sourced_record():
    import r2med.retrieval.later_presets  # noqa: F401  (registers the later presets)
    from r2med.reranking.base import reranker_meta

    dense = [
        "e5",
        "sfr",
        "bmr-410m",
        "bmr-2b",
        "bmr-7b",
        "nv",
        "grit",
        "reasonembed-qwen3-8b",
        "reasonembed-qwen3-4b",
        "reasonembed-llama-8b",
        "reasonembed-basic-qwen3-8b",
        "reasonembed-basic-qwen3-4b",
        "reasonembed-basic-llama-8b",
        "qwen3-emb-8b",
        "qwen3-emb-4b",
        "diver-4b",
        "rader-7b",
        "gte-qwen2-7b",
        "reasonir-8b",
    ]
    records = {name: get_preset(name).framing for name in dense}
    records.update(
        {
            name: reranker_meta(name).framing
            for name in (
                "rankllama",
                "qwen3-reranker-0.6b",
                "qwen3-reranker-4b",
                "qwen3-reranker-8b",
                "bge-reranker",
                "monobert",
            )
        }
    )
    for name, record in records.items():
        assert isinstance(record, FramingRecord), name
        assert record.added_by in ("tokenizer", "r2med", "model") and len(record.source) > 20, name
    # what is known from the published files / code, independently of r2med's table (tokens by text)
    assert records["e5"].tokens == records["sfr"].tokens == "<s> {text} </s>"
    assert records["qwen3-emb-8b"].tokens == "{text} <|endoftext|>" and records["qwen3-emb-8b"].bos is None
    assert records["nv"].added_by == "model" and not records["nv"].checked  # its encode() appends EOS itself
    assert [records[f"bmr-{s}"].eos for s in ("410m", "2b", "7b")] == ["<|endoftext|>", "<eos>", "</s>"]
    assert all(records[f"bmr-{s}"].added_by == "r2med" for s in ("410m", "2b", "7b"))
    assert "ASSUMED" in records["gte-qwen2-7b"].source and "ASSUMED" not in records["e5"].source
    # every transformers-loaded preset with a record gets it in its settings; the model's own encode does not
    assert get_preset("qwen3-emb-8b").settings("Biology").framing == "{text} <|endoftext|>"
    assert get_preset("gte-qwen2-7b").settings("Biology").framing == "tokenizer"  # assumed: the tokenizer's own
    assert get_preset("nv").settings("Biology").framing is None
    assert get_preset("bge").settings("Biology").framing is None  # BERT: the tokenizer's own [CLS] ... [SEP]


def test_qwen3_reranker_pair_gets_no_special_tokens_from_an_eos_appending_tokenizer(tmp_path):
    """The card's frame is the chat prompt alone: a tokenizer that appends <|endoftext|> adds nothing to it."""
    from r2med.reranking.qwen3 import Qwen3Reranker

    plain_dir, eos_dir = tmp_path / "plain", tmp_path / "eos"
    tiny_model(plain_dir, "qwen3", "plain", causal_lm=True)
    shutil.copytree(plain_dir, eos_dir)
    byte_tokenizer(eos_dir, "eos")  # same vocabulary, a post-processor appending <|endoftext|>
    pairs = [("why a smear?", "primer dimers")]
    ids = [Qwen3Reranker(model=str(d), device="cpu").input_ids(pairs) for d in (plain_dir, eos_dir)]
    from transformers import AutoTokenizer

    eos = AutoTokenizer.from_pretrained(eos_dir).eos_token_id
    assert AutoTokenizer.from_pretrained(eos_dir)("x")["input_ids"][-1] == eos  # the tokenizer appends it
    assert ids[0] == ids[1] and eos not in ids[1][0]


def _e5_cache(cache: Path, folder: Path) -> None:
    files = {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}
    fill_hf_cache(cache, E5_HUB_ID, files, "e5" + "0" * 38, repo_type="model")


def _evaluate_e5(cache: Path, home: Path, out: Path, data: Path, monkeypatch) -> dict:
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    result = run_r2med(
        "evaluate",
        "-r",
        "e5",
        "-d",
        str(data),
        "--out",
        str(out),
        env={"HF_HUB_CACHE": str(cache), "R2MED_HOME": str(home)},
    )
    assert result.returncode == 0, result.stderr
    return json.loads((out / "e5" / data.name / "metrics.json").read_text())


def _two_cache_runs(mistrals, tmp_path, monkeypatch, data: Path) -> dict[bool, tuple[dict, bytes]]:
    out = {}
    for adds in (True, False):
        cache = tmp_path / f"hf-cache-{int(adds)}"
        _e5_cache(cache, mistrals[adds])
        metrics = _evaluate_e5(cache, tmp_path / f"home-{int(adds)}", tmp_path / f"out-{int(adds)}", data, monkeypatch)
        out[adds] = (metrics, (tmp_path / f"out-{int(adds)}" / "e5" / data.name / "run.trec").read_bytes())
    return out


def _small_collection(root: Path) -> Path:
    folder = root / "tiny-med"
    folder.mkdir()
    docs = {
        f"d{i}": t
        for i, t in enumerate(
            [
                "insulin lowers blood glucose",
                "asthma and inhaled steroids",
                "pneumonia with fever and cough",
                "migraine relief in the dark",
                "kidney tubules reabsorb sodium",
                "stroke risk and blood pressure",
            ]
        )
    }
    queries = {"q1": "insulin and glucose", "q2": "fever cough", "q3": "kidney sodium"}
    qrels = {"q1": "d0", "q2": "d2", "q3": "d4"}
    (folder / "corpus.jsonl").write_text("".join(json.dumps({"id": k, "text": v}) + "\n" for k, v in docs.items()))
    (folder / "query.jsonl").write_text("".join(json.dumps({"id": k, "text": v}) + "\n" for k, v in queries.items()))
    (folder / "qrels.jsonl").write_text(
        "".join(json.dumps({"q_id": q, "p_id": d, "score": 1}) + "\n" for q, d in qrels.items())
    )
    return folder


def test_two_hf_caches_one_run_and_metrics_record_what_made_the_vectors(mistrals, tmp_path, monkeypatch):
    """The e5 preset from two HF caches (offline) holding the same Mistral with the two tokenizers: one run.trec;
    metrics.json records the versions, max lengths, framing (and what the tokenizer alone gives) and dtype."""
    import tokenizers
    import transformers

    runs = _two_cache_runs(mistrals, tmp_path, monkeypatch, _small_collection(tmp_path))
    assert runs[True][1] == runs[False][1]
    for adds, (metrics, _) in runs.items():
        enc = metrics["encoding"]
        assert enc["versions"]["transformers"] == transformers.__version__
        assert enc["versions"]["tokenizers"] == tokenizers.__version__ and "torch" in enc["versions"]
        assert enc["max_length"] == {"doc": 2048, "query": 2048}
        framing = enc["framing"]
        assert framing["framing"] == "<s> {text} </s>" and framing["built_by"] == "r2med"
        assert framing["tokens"] == {
            "framing": "<s> {text} </s>",
            "before": [{"token": "<s>", "id": BOS}],
            "after": [{"token": "</s>", "id": EOS}],
        }
        alone = {"token": "</s>", "id": EOS}
        assert framing["tokenizer_alone"] == {
            "framing": "<s> {text} </s>" if adds else "<s> {text}",
            "before": [{"token": "<s>", "id": BOS}],
            "after": [alone] if adds else [],
        }
        assert enc["dtype"] == "fp32" and enc["weights"] == "float32" and enc["made_by"] == "this run"


@pytest.mark.slow(seconds=150)
def test_the_issue_bar_medline_med_gives_one_run_from_both_caches(mistrals, tmp_path, monkeypatch):
    """The issue's bar on the full medline-med collection (1,033 docs, 30 queries): before the fix the two
    caches gave nDCG@10 0.0166 (</s> appended) and 0.0231 (not); now one identical run.trec."""
    data = shared_collection("medline-med")
    runs = _two_cache_runs(mistrals, tmp_path, monkeypatch, data)
    assert runs[True][1] == runs[False][1]
    assert runs[True][0]["aggregate"]["ndcg_cut_10"] == runs[False][0]["aggregate"]["ndcg_cut_10"]


def test_models_wide_prints_the_framing_table_with_sources():
    result = run_r2med("models", "--wide")
    assert result.returncode == 0, result.stderr
    table = result.stdout[result.stdout.index("framing: the special tokens") :]
    rows = {
        line.split("│")[1].strip(): [c.strip() for c in line.split("│")[2:-1]]
        for line in table.splitlines()
        if line.startswith("│") and line.split("│")[1].strip()
    }
    assert rows["e5"][:3] == ["<s> {text} </s>", "tokenizer", "builds"] and "add_eos_token" in rows["e5"][3]
    assert rows["qwen3-emb-8b"][:3] == ["{text} <|endoftext|>", "tokenizer", "builds"]
    assert rows["nv"][:3] == ["<s> {text} </s>", "model", "no"] and rows["reasonir-8b"][2] == "tokenizer's"
    assert rows["rankllama"][:3] == ["<s> {query} <s> {document}", "tokenizer", "tokenizer's"]
    assert rows["gte-qwen2-7b"][2] == "tokenizer's" and "ASSUMED" in rows["gte-qwen2-7b"][3]
    listed = json.loads(run_r2med("models", "--json").stdout)
    assert listed["e5"]["framing"]["framing"] == "<s> {text} </s>"
    assert listed["monobert"]["framing"]["framing"] == "[CLS] {query} [SEP] {document} [SEP]"
