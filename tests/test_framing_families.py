"""Every decoder preset's token ids against its published harness's own call, on tokenizers with the real
family's special tokens (issue 26).

The tokenizers (``tiny_families``) carry each family's token texts, ids and roles as its hub files do --
Qwen3-Embedding's appended ``<|endoftext|>`` 151643 is its PAD token while its EOS is ``<|im_end|>`` 151645;
Gemma's EOS ``<eos>`` 1 is not its PAD ``<pad>`` 0 nor its BOS ``<bos>`` 2; Pythia's ``<|endoftext|>`` is BOS,
EOS and UNK at once.  The harness calls are written here as each model's code does them, independently of
r2med: FlagEmbedding's decoder-only embedder (``tokenizer(text, truncation=True, max_length=512)``), the
R2MED paper's BMRetriever code (``tokenizer(text, max_length=L - 1, truncation=True)`` + ``eos_token_id``),
its HighScaleModel for e5 / SFR (``tokenizer(text, max_length=2048, truncation=True)`` as transformers < 5
read e5-mistral's files: ``<s> text </s>``), and RankLLaMA's ``tokenizer(q, p, max_length=1024)``.  Pooled
vectors are compared with a last-token pool computed by hand from an unpadded forward pass.
"""

from __future__ import annotations

import json
import logging
import warnings

import numpy as np
import pytest

from conftest import run_r2med
from tiny_families import FAMILIES, family_model, family_tokenizer, load, text_ids

torch = pytest.importorskip("torch")

import r2med.retrieval.later_presets  # noqa: E402,F401 - registers the later presets
from r2med.errors import R2MedError  # noqa: E402
from r2med.retrieval.encoders import EncoderSettings, FramingRecord, make_encoder  # noqa: E402
from r2med.retrieval.presets import get_preset  # noqa: E402

SHORT = "insulin lowers glucose"
LONG = "a much longer passage about the kidney and its tubules, read to the end " * 12  # > 512 tokens
TEXTS = [SHORT, LONG, "x"]

# the published harness of each preset: FE = FlagEmbedding decoder-only (encode_single_device), BMR = R2MED
# src/utils.py:155,162, E5 = R2MED HighScaleModel 'Base' mode under transformers < 5
PRESET_FAMILY = {
    "qwen3-emb-8b": ("qwen3-embedding", "FE", 512),
    "qwen3-emb-4b": ("qwen3-embedding", "FE", 512),
    "diver-4b": ("qwen3-embedding", "FE", 512),
    "reasonembed-qwen3-8b": ("qwen3", "FE", 512),
    "reasonembed-qwen3-4b": ("qwen3", "FE", 512),
    "reasonembed-basic-qwen3-8b": ("qwen3", "FE", 512),
    "reasonembed-basic-qwen3-4b": ("qwen3", "FE", 512),
    "reasonembed-llama-8b": ("llama3", "FE", 512),
    "reasonembed-basic-llama-8b": ("llama3", "FE", 512),
    "rader-7b": ("gte-qwen2-appending", "FE", 512),
    "gte-qwen2-7b": ("gte-qwen2-appending", "FE", 512),
    "bmr-410m": ("pythia", "BMR", 512),
    "bmr-2b": ("gemma", "BMR", 1024),
    "bmr-7b": ("mistral", "BMR", 2048),
    "e5": ("e5-mistral", "E5", 2048),
    "sfr": ("e5-mistral", "E5", 2048),
}


def harness_ids(kind: str, tok, texts: list[str], max_length: int, family: str) -> list[list[int]]:
    """The published code's own tokenizer call (written as it is there, not with r2med's code)."""
    if kind == "FE":
        return [list(ids) for ids in tok(texts, truncation=True, max_length=max_length)["input_ids"]]
    if kind == "BMR":
        ids = tok(texts, max_length=max_length - 1, return_attention_mask=False, truncation=True)["input_ids"]
        return [list(one) + [tok.eos_token_id] for one in ids]
    # e5 / SFR: transformers < 5 built <s> $A </s> from the config's add_eos_token; the same call on the files
    # as that version read them is the text's ids between <s> and </s>, cut to fit
    return [[1, *text_ids(family, t)[: max_length - 2], 2] for t in texts]


@pytest.fixture(scope="module")
def tokenizers(tmp_path_factory):
    """family -> (folder, tokenizer), built once."""
    made = {}

    def get(name):
        if name not in made:
            folder = family_tokenizer(tmp_path_factory.mktemp(name), name)
            made[name] = (folder, load(folder))
        return made[name]

    return get


def r2med_ids(preset: str, folder, tok, texts: list[str], max_length: int) -> list[list[int]]:
    settings = get_preset(preset).settings("Biology", model=str(folder), dtype="fp32")
    encoder = make_encoder(settings, device="cpu")
    return encoder._tokenize(tok, list(texts), "doc", max_length)["input_ids"]


def test_the_family_tokenizers_carry_the_real_roles(tokenizers):
    """The premise, against ids typed from the sources named in tiny_families: eos != pad != bos where the real
    ones differ, and what each tokenizer alone adds."""
    expect = {  # family -> (bos id, eos id, pad id, ids around "x" as loaded here)
        "qwen3-embedding": (None, 151645, 151643, ([], [151643])),
        "qwen3": (None, 151645, 151643, ([], [])),
        "gte-qwen2-appending": (None, 151643, 151643, ([], [151643])),
        "llama3": (128000, 128001, None, ([128000], [])),
        "mistral": (1, 2, None, ([1], [])),
        "gemma": (2, 1, 0, ([2], [])),
        "pythia": (0, 0, None, ([], [])),
    }
    for name, (bos, eos, pad, (before, after)) in expect.items():
        _, tok = tokenizers(name)
        assert (tok.bos_token_id, tok.eos_token_id, tok.pad_token_id) == (bos, eos, pad), name
        assert tok("x")["input_ids"] == [*before, *text_ids(name, "x"), *after], name


@pytest.mark.parametrize("preset", list(PRESET_FAMILY))
def test_preset_ids_are_the_published_harness_call(preset, tokenizers):
    family, kind, max_length = PRESET_FAMILY[preset]
    folder, tok = tokenizers(family)
    texts = [*TEXTS, "y" * (max_length - 2)]  # the last one fills the limit beside two special tokens
    got = r2med_ids(preset, folder, tok, texts, max_length)
    assert got == harness_ids(kind, tok, texts, max_length, family)
    assert len(got[1]) == max_length or len(text_ids(family, LONG)) < max_length  # the long text is cut


def test_qwen3_embedding_pools_endoftext_not_its_eos_token(tokenizers):
    """The bug of issue 26: r2med appended eos_token_id (<|im_end|> 151645); the harness pools <|endoftext|>."""
    folder, tok = tokenizers("qwen3-embedding")
    ids = r2med_ids("qwen3-emb-8b", folder, tok, [SHORT], 512)[0]
    assert ids[-1] == 151643 and 151645 not in ids and ids[:-1] == text_ids("qwen3-embedding", SHORT)


def test_metrics_record_what_the_tokenizer_alone_adds_by_text_and_id(tokenizers):
    folder, tok = tokenizers("qwen3-embedding")
    settings = get_preset("qwen3-emb-8b").settings("Biology", model=str(folder), dtype="fp32")
    encoder = make_encoder(settings, device="cpu")
    encoder._tokenize(tok, [SHORT], "doc", 512)
    framing = encoder.used["framing"]
    endoftext = [{"token": "<|endoftext|>", "id": 151643}]
    assert framing["tokenizer_alone"] == {"framing": "{text} <|endoftext|>", "before": [], "after": endoftext}
    assert framing["tokens"] == framing["tokenizer_alone"] and framing["built_by"] == "r2med"


# -- an assumed framing never overrides the tokenizer ----------------------------------------------------------


def test_an_assumed_framing_follows_a_tokenizer_whose_files_agree(tokenizers):
    """reasonembed-qwen3-8b assumes '{text}'; a tokenizer whose files agree on '{text} <|endoftext|>' wins, as the
    harness's plain call would have it (before issue 26 r2med built its assumption instead)."""
    folder, tok = tokenizers("qwen3-embedding")
    assert get_preset("reasonembed-qwen3-8b").framing.tokens == "{text}"
    got = r2med_ids("reasonembed-qwen3-8b", folder, tok, TEXTS, 512)
    assert got == harness_ids("FE", tok, TEXTS, 512, "qwen3-embedding") and got[0][-1] == 151643


def _disagreeing_qwen3(tmp_path):
    """A Qwen3 tokenizer whose config says add_eos_token (as a FlagEmbedding fine-tune can save it) while its
    tokenizer.json adds nothing -- transformers versions read such files differently."""
    folder = family_tokenizer(tmp_path / "qwen3-eos-config", "qwen3")
    _disagreeing_qwen3_config(folder)
    return folder


def _disagreeing_qwen3_config(folder):
    config = json.loads((folder / "tokenizer_config.json").read_text())
    config.update({"add_eos_token": True, "eos_token": "<|endoftext|>"})
    (folder / "tokenizer_config.json").write_text(json.dumps(config))


@pytest.mark.parametrize("family", ["gte-qwen2", "qwen3-eos-config"])
def test_an_assumed_framing_stops_where_the_tokenizer_files_disagree(family, tmp_path):
    folder = _disagreeing_qwen3(tmp_path) if family == "qwen3-eos-config" else family_tokenizer(tmp_path, family)
    preset = "rader-7b" if family == "gte-qwen2" else "reasonembed-qwen3-8b"
    with pytest.raises(R2MedError) as info:
        r2med_ids(preset, folder, load(folder), [SHORT], 512)
    message = str(info.value)
    assert "\n" not in message and "'{text} <|endoftext|>'" in message and "'{text}'" in message
    assert "tokenizer_config.json" in message and "tokenizer.json" in message


def test_a_verified_framing_is_built_whatever_the_files_say(tokenizers):
    """e5 keeps its verified record on e5-mistral's disagreeing files (the harness's transformers < 5 ids)."""
    folder, tok = tokenizers("e5-mistral")
    assert tok(SHORT)["input_ids"][-1] != 2  # this transformers reads tokenizer.json: no </s>
    assert r2med_ids("e5", folder, tok, [SHORT], 2048) == [[1, *text_ids("e5-mistral", SHORT), 2]]


def test_the_cli_stops_in_one_line_and_writes_nothing(tmp_path):
    folder = tmp_path / "qwen3-eos-config"
    family_model(folder, "qwen3", "qwen3")
    _disagreeing_qwen3_config(folder)
    data = tmp_path / "tiny"
    data.mkdir()
    (data / "corpus.jsonl").write_text(json.dumps({"id": "d1", "text": "kidney tubules"}) + "\n")
    (data / "query.jsonl").write_text(json.dumps({"id": "q1", "text": "kidney"}) + "\n")
    (data / "qrels.jsonl").write_text(json.dumps({"q_id": "q1", "p_id": "d1", "score": 1}) + "\n")
    out = tmp_path / "out"
    args = ("evaluate", "-r", "reasonembed-qwen3-8b", "--model", str(folder), "-d", str(data), "--out", str(out))
    result = run_r2med(*args, env={"R2MED_HOME": str(tmp_path / "home")})
    assert result.returncode == 2, result.stderr
    lines = [line for line in result.stderr.splitlines() if "disagree" in line]
    assert len(lines) == 1 and "'{text} <|endoftext|>'" in lines[0]
    assert not out.exists() or not any(p.is_file() for p in out.rglob("*"))


def test_a_token_the_vocabulary_lacks_is_one_line(tokenizers):
    folder, tok = tokenizers("qwen3")
    settings = EncoderSettings(model=str(folder), loader="transformers", pooling="last-token", framing="<s> {text}")
    with pytest.raises(R2MedError, match="names the token '<s>', which its tokenizer's vocabulary lacks") as info:
        make_encoder(settings, device="cpu")._tokenize(tok, [SHORT], "doc", 512)
    assert "\n" not in str(info.value)


def test_records_name_tokens_by_text_never_by_role():
    with pytest.raises(R2MedError, match="by text"):
        FramingRecord.from_data({"bos": False, "eos": True, "added_by": "tokenizer", "source": "x" * 30})
    with pytest.raises(R2MedError, match="must hold"):
        EncoderSettings(model="m", framing="eos")
    record = FramingRecord.from_data({"tokens": "{text} <|endoftext|>", "added_by": "tokenizer", "source": "ASSUMED"})
    assert (record.bos, record.eos, record.encoder_framing) == (None, "<|endoftext|>", "tokenizer")


# -- pooled vectors ---------------------------------------------------------------------------------------------

POOLED = {  # preset -> (family, architecture)
    "qwen3-emb-8b": ("qwen3-embedding", "qwen3"),
    "rader-7b": ("gte-qwen2-appending", "qwen2"),
    "reasonembed-llama-8b": ("llama3", "llama"),
    "bmr-410m": ("pythia", "gpt_neox"),
    "bmr-2b": ("gemma", "gemma"),
    "bmr-7b": ("mistral", "mistral"),
}


@pytest.mark.parametrize("preset", list(POOLED))
def test_pooled_vectors_are_the_hand_pooled_last_token(preset, tmp_path):
    """r2med's batched, left-padded vectors against a last-token pool of an unpadded forward pass of the
    harness's ids, by hand (normalised where the preset normalises)."""
    family, arch = POOLED[preset]
    model = family_model(tmp_path / family, family, arch)
    folder = tmp_path / family
    tok = load(folder)
    settings = get_preset(preset).settings("Biology", model=str(folder), dtype="fp32")
    kind, max_length = PRESET_FAMILY[preset][1], settings.max_length or 512
    texts = [SHORT, LONG[:300], "x"]
    expected = []
    prefixed = [(settings.doc_instruction or "") + t for t in texts]  # BMRetriever's passage prompt
    for ids in harness_ids(kind, tok, prefixed, max_length, family):
        with torch.no_grad():
            last = model(input_ids=torch.tensor([ids])).last_hidden_state[0, -1].double()
        expected.append((last / last.norm() if settings.normalize else last).numpy())
    got = make_encoder(settings, device="cpu", batch_size=3).encode_corpus(texts)
    np.testing.assert_allclose(got, np.stack(expected), atol=3e-5, rtol=1e-4)


def test_the_old_eos_token_gives_another_vector(tmp_path):
    """The figure of issue 26 on a tiny Qwen3 with the real roles: vectors pooled at <|im_end|> (the old
    eos_token_id) against the harness's <|endoftext|> ones."""
    folder = tmp_path / "q3e"
    family_model(folder, "qwen3-embedding", "qwen3")
    settings = get_preset("qwen3-emb-8b").settings("Biology", model=str(folder), dtype="fp32")
    new = make_encoder(settings, device="cpu").encode_corpus(TEXTS)
    old = make_encoder(settings.with_(framing="{text} <|im_end|>"), device="cpu").encode_corpus(TEXTS)
    cosine = (new * old).sum(1)
    assert cosine.max() < 0.99 and cosine.mean() < 0.95  # a different token's state, not a rounding


# -- precision as loaded ------------------------------------------------------------------------------------------


def _fp16_checkpoint(tmp_path):
    folder = tmp_path / "fp16"
    family_model(folder, "qwen3-embedding", "qwen3", dtype="float16")
    config = json.loads((folder / "config.json").read_text())
    assert config.get("dtype", config.get("torch_dtype")) == "float16"
    return folder


def _sentence_transformers_folder(hf_folder, out):
    from sentence_transformers import SentenceTransformer

    try:
        from sentence_transformers.sentence_transformer.modules import Pooling, Transformer
    except ImportError:  # sentence-transformers < 6
        from sentence_transformers.models import Pooling, Transformer
    modules = [Transformer(str(hf_folder), max_seq_length=64), Pooling(16, "lasttoken")]
    SentenceTransformer(modules=modules, device="cpu").save(str(out))
    return out


@pytest.mark.parametrize("loader", ["transformers", "sentence-transformers"])
def test_an_fp16_checkpoint_asked_for_in_fp32_runs_in_fp32(loader, tmp_path):
    folder = _fp16_checkpoint(tmp_path)
    if loader == "sentence-transformers":
        folder = _sentence_transformers_folder(folder, tmp_path / "st")
    settings = EncoderSettings(model=str(folder), loader=loader, pooling="last-token", dtype="fp32", max_length=64)
    encoder = make_encoder(settings, device="cpu")
    vectors = encoder.encode_corpus(TEXTS)
    assert vectors.dtype == np.float32
    assert encoder.used["weights"] == "float32" and encoder.used["dtype"] == "fp32"


@pytest.mark.parametrize("loader", ["transformers", "sentence-transformers"])
def test_weights_in_another_precision_than_asked_are_refused(loader, tmp_path, monkeypatch):
    """A loader that drops the precision (as sentence-transformers' did for fp32: transformers 5 then loads an
    fp16 checkpoint as fp16) is caught by reading the dtype back from the weights."""
    from r2med.retrieval.encoders import hf

    folder = _fp16_checkpoint(tmp_path)
    if loader == "sentence-transformers":
        folder = _sentence_transformers_folder(folder, tmp_path / "st")
    monkeypatch.setattr(hf, "dtype_kwargs", lambda dtype, device=None: {})
    settings = EncoderSettings(model=str(folder), loader=loader, pooling="last-token", dtype="fp32", max_length=64)
    with pytest.raises(R2MedError, match="loaded in float16, not the float32 that dtype fp32 asks for"):
        make_encoder(settings, device="cpu").encode_corpus(TEXTS)


# -- RankLLaMA's pairs ----------------------------------------------------------------------------------------------


def _rankllama(folder, tok):
    from r2med.reranking.rankllama import RankLlamaReranker

    reranker = RankLlamaReranker(base=str(folder), lora=str(folder), device="cpu")
    reranker._tokenizer = tok
    return reranker


def test_rankllama_pairs_are_the_papers_call(tokenizers):
    """R2MED src/utils.py:910-915: tokenizer(f'query: {q}', f'document: {p}', max_length=1024) -- longest_first
    truncation by default -- on the Llama-2 tokenizer; a pair longer than 1024 tokens included."""
    folder, tok = tokenizers("llama2")
    pairs = [("why a smear?", "primer dimers"), ("kidney " * 200, "tubules reabsorb sodium " * 80), ("q", "d" * 1500)]
    reranker = _rankllama(folder, tok)
    firsts, seconds = zip(*(reranker.format_pair(q, d) for q, d in pairs))
    got = reranker.encode_pairs(list(firsts), list(seconds))["input_ids"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Truncation was not explicitly activated..." (the paper's call)
        paper = [tok(f"query: {q}", f"document: {d}", max_length=1024)["input_ids"] for q, d in pairs]
    assert got == [list(p) for p in paper]
    assert got[0][0] == 1 and got[0].count(1) == 2 and 2 not in got[0]  # <s> q <s> d, no </s>
    assert max(len(g) for g in got) == 1024
    assert reranker.used["framing"]["framing"] == "<s> {query} <s> {document}"


def test_rankllama_stops_on_a_tokenizer_whose_files_disagree(tmp_path, caplog):
    folder = family_tokenizer(tmp_path / "llama2-eos", "llama2")
    config = json.loads((folder / "tokenizer_config.json").read_text())
    config["add_eos_token"] = True
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    reranker = _rankllama(folder, load(folder))
    with caplog.at_level(logging.INFO), pytest.raises(R2MedError, match="disagree on the special tokens around a pair"):
        reranker.encode_pairs(["query: q"], ["document: d"])


def test_family_table_covers_every_family_the_presets_use():
    assert {family for family, _, _ in PRESET_FAMILY.values()} <= set(FAMILIES)


def test_the_report_line_names_the_tokens_by_text():
    from r2med.report.board import encoding_line

    endoftext = [{"token": "<|endoftext|>", "id": 151643}]
    framing = {
        "framing": "tokenizer",
        "tokens": {"framing": "{text} <|endoftext|>", "before": [], "after": endoftext},
        "tokenizer_alone": {"framing": "{text}", "before": [], "after": []},
        "built_by": "r2med",
    }
    line = encoding_line({"framing": framing, "dtype": "fp32", "weights": "float32", "compute": "float32"})
    assert "framing {text} <|endoftext|> (tokenizer alone: {text})" in line
