"""Encoding paths of the later embedder families against hand-pooled forward passes of tiny random models.

For each later preset (the table PRESET_STANDINS, keyed by the preset names of
``protocol/later_models.json``), a tiny random model of the same architecture (Qwen3Model,
Qwen2Model, LlamaModel) and a byte-level tokenizer that adds what the real one adds stand in for the
hub checkpoint.  The expected vectors are computed here by hand, from the published recipe typed
below with its source: format the text with the template, tokenize it (truncation at 512 tokens),
one unpadded forward pass, pool (the last token, or the mean over the mask), L2-normalise.  They
are compared with what r2med's encoder produces (batched, sorted by length, left-padded) from the
registered preset's settings (``get_preset(name).settings(task, model=<stand-in>, dtype="fp32")``).

The tiny models run in fp32 (the presets' own precision, fp16 / the checkpoint's bf16, is asserted
in test_later_protocol.py); the tolerance is float32 round-off of a padded vs an unpadded pass.
"""

from __future__ import annotations

import numpy as np
import pytest

from tiny_lm import tiny_model

torch = pytest.importorskip("torch")

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
# VectorSpaceLab/agentic-search ReasonEmbed/evaluation_r2med/code/prompts.py@344179f:2-9
INSTRUCTIONS = {
    "Biology": "Given a Biology post, retrieve relevant passages that help answer the post.",
    "Medical-Sciences": "Given a Medical Science post, retrieve relevant passages that help answer the post.",
    "Bioinformatics": "Given a Bioinformatics post, retrieve relevant passages that help answer the post.",
    "MedXpertQA-Exam": "Given a Medical Exam, retrieve relevant passages that help answer the exam.",
    "MedQA-Diag": "Given a Medical Exam, retrieve relevant passages that help answer the exam.",
    "PMC-Treatment": "Given a Clinical Case, retrieve relevant passages that help answer the case.",
    "PMC-Clinical": "Given a Clinical Case, retrieve similar cases that help diagnose the case.",
    "IIYi-Clinical": "Given a Clinical Case, retrieve similar cases that help diagnose the case.",
}
# recipe -> (query template, document template, pooling)
RECIPES = {
    # FlagEmbedding decoder-only-base: scripts/*.sh:26 'Instruct: {}\nQuery: {}' (AbsEmbedder turns the '\n' into
    # a newline); documents bare; last_token_pool (decoder_only/base.py@90ac133)
    "last-token": ("Instruct: {instruction}\nQuery: {query}", "{doc}", "last"),
    # ReasonIREncoder (reasonir_models.py@344179f:65, :52): sentence-transformers prompt + text, the hub's
    # mean Pooling module, prompt tokens included (the harness never calls set_pooling_include_prompt(False))
    "reasonir": ("<|user|>\n{instruction}\n<|embed|>\n{query}", "<|embed|>\n{doc}", "mean"),
}
# preset -> (recipe, architecture of the checkpoint, what its tokenizer adds around a text)
PRESET_STANDINS = {
    "reasonembed-qwen3-8b": ("last-token", "qwen3", "plain"),
    "reasonembed-qwen3-4b": ("last-token", "qwen3", "plain"),
    "reasonembed-llama-8b": ("last-token", "llama", "bos"),  # Llama 3.1 prepends <|begin_of_text|>
    "reasonembed-basic-qwen3-8b": ("last-token", "qwen3", "plain"),
    "reasonembed-basic-qwen3-4b": ("last-token", "qwen3", "plain"),
    "reasonembed-basic-llama-8b": ("last-token", "llama", "bos"),
    "qwen3-emb-8b": ("last-token", "qwen3", "eos"),  # the hub tokenizer appends <|endoftext|> itself
    "qwen3-emb-4b": ("last-token", "qwen3", "eos"),
    # Qwen3-Embedding-4B / gte-Qwen2-7B-instruct fine-tunes: their tokenizers append <|endoftext|> (ASSUMED in
    # later_models.json's framing records)
    "diver-4b": ("last-token", "qwen3", "eos"),
    "rader-7b": ("last-token", "qwen2", "eos"),
    "gte-qwen2-7b": ("last-token", "qwen2", "eos"),  # assumed recipe (see later_models.json)
    "reasonir-8b": ("reasonir", "llama", "bos"),
}

QUERIES = [
    "Why does my PCR give a smear?",
    "A 54-year-old man presents with crushing chest pain radiating to the left arm. " * 10,  # > 512 bytes
    "What is [3] in this figure?",
]
DOCS = [
    "Primer dimers and too many cycles smear PCR products.",
    "Myocardial infarction presents with chest pain; troponin rises within hours. " * 9,
    "x",
]


@pytest.fixture(scope="module")
def standins(tmp_path_factory):
    """(architecture, tokenizer flavour) -> (folder, model, tokenizer), built once."""
    built = {}

    def get(arch, flavour):
        if (arch, flavour) not in built:
            folder = tmp_path_factory.mktemp(f"{arch}-{flavour}")
            model, tok = tiny_model(folder, arch, flavour, seed=len(built))
            built[arch, flavour] = (folder, model, tok)
        return built[arch, flavour]

    return get


def sentence_transformers_folder(hf_folder, hidden_size, out):
    """The stand-in as a sentence-transformers model (Transformer + mean Pooling), as ReasonIR ships."""
    from sentence_transformers import SentenceTransformer

    try:
        from sentence_transformers.sentence_transformer.modules import Pooling, Transformer
    except ImportError:  # sentence-transformers < 6
        from sentence_transformers.models import Pooling, Transformer
    modules = [Transformer(str(hf_folder), max_seq_length=512), Pooling(hidden_size, "mean")]
    SentenceTransformer(modules=modules, device="cpu").save(str(out))
    return out


def hand_embed(model, tokenizer, texts, pooling):
    out = []
    for text in texts:
        ids = tokenizer(text, truncation=True, max_length=512)["input_ids"]
        with torch.no_grad():
            hidden = model(input_ids=torch.tensor([ids])).last_hidden_state[0].double()
        vec = hidden[-1] if pooling == "last" else hidden.mean(0)
        out.append((vec / vec.norm()).numpy())
    return np.stack(out)


def encoder_settings(preset: str, task: str, model: str):
    """r2med's EncoderSettings for ``preset`` on ``task``: the registered preset's, the stand-in as the model."""
    from r2med.retrieval.presets import get_preset
    from r2med.retrieval.registry import retriever_meta

    assert retriever_meta(preset).later  # registered from later_models.json
    return get_preset(preset).settings(task, model=model, dtype="fp32")


@pytest.mark.parametrize("preset", list(PRESET_STANDINS))
def test_preset_encoding_equals_the_hand_pooled_forward_pass(preset, standins, tmp_path):
    from r2med.retrieval.encoders import make_encoder

    recipe, arch, flavour = PRESET_STANDINS[preset]
    folder, model, tok = standins(arch, flavour)
    if recipe == "reasonir":
        folder = sentence_transformers_folder(folder, model.config.hidden_size, tmp_path / "st")
    task = TASKS[list(PRESET_STANDINS).index(preset) % len(TASKS)]  # every task's instruction gets a turn
    query_template, doc_template, pooling = RECIPES[recipe]
    expected_q = hand_embed(
        model, tok, [query_template.format(instruction=INSTRUCTIONS[task], query=q) for q in QUERIES], pooling
    )
    expected_d = hand_embed(model, tok, [doc_template.format(doc=d) for d in DOCS], pooling)

    encoder = make_encoder(encoder_settings(preset, task, str(folder)), device="cpu", batch_size=3)
    got_q, got_d = encoder.encode_queries(QUERIES), encoder.encode_corpus(DOCS)
    np.testing.assert_allclose(got_q, expected_q, atol=2e-5)
    np.testing.assert_allclose(got_d, expected_d, atol=2e-5)
    # the instruction matters: another task's query vectors differ (unless both tasks share the text)
    other = next(t for t in TASKS if INSTRUCTIONS[t] != INSTRUCTIONS[task])
    other_q = hand_embed(
        model, tok, [query_template.format(instruction=INSTRUCTIONS[other], query=QUERIES[0])], pooling
    )
    assert np.abs(other_q[0] - got_q[0]).max() > 1e-3


def test_the_last_token_is_the_tokenizers_eos_when_it_appends_one(standins):
    """Qwen3-Embedding's tokenizer appends <|endoftext|>; the harness adds none, nor does the preset."""
    from r2med.retrieval.encoders import make_encoder

    folder, model, tok = standins("qwen3", "eos")
    text = "Instruct: " + INSTRUCTIONS["Biology"] + "\nQuery: " + QUERIES[0]
    ids = tok(text, truncation=True, max_length=512)["input_ids"]
    assert ids[-1] == tok.eos_token_id and ids[-2] != tok.eos_token_id and len(ids) == len(text.encode()) + 1
    long_ids = tok(QUERIES[1], truncation=True, max_length=512)["input_ids"]
    assert len(long_ids) == 512 and long_ids[-1] == tok.eos_token_id  # cut to 511 + EOS
    # the preset frames texts with exactly one EOS (append_eos cannot add a second); without it, another vector
    settings = encoder_settings("qwen3-emb-8b", "Biology", str(folder))
    assert settings.framing == "{text} <|endoftext|>"
    once = make_encoder(settings, device="cpu").encode_queries(QUERIES[:1])
    np.testing.assert_allclose(once, hand_embed(model, tok, [text], "last"), atol=2e-5)
    np.testing.assert_array_equal(
        make_encoder(settings.with_(append_eos=True), device="cpu").encode_queries(QUERIES[:1]), once
    )
    bare = make_encoder(settings.with_(framing="{text}"), device="cpu").encode_queries(QUERIES[:1])
    assert np.abs(bare - once).max() > 1e-3
