"""Qwen3-Reranker yes/no scoring against a hand computation on a tiny random Qwen3ForCausalLM.

The hand computation follows the model card's Transformers code (fenghaitao/Qwen3-Embedding
README.md@14f0f21, the official card's 'Reranker Model' section): the prompt strings are typed
here from the card, each pair is one unpadded forward pass, and the score is
softmax([logit(no), logit(yes)])[1] at the last position.
"""

from __future__ import annotations

import math

import pytest

from tiny_lm import tiny_model

torch = pytest.importorskip("torch")

# typed from the card (README.md@14f0f21: prefix = ..., suffix = ..., format_instruction())
CARD_PREFIX = (
    "<|im_start|>system\nJudge whether the Document meets the requirements based on the Query and the "
    'Instruct provided. Note that the answer can only be "yes" or "no".<|im_end|>\n<|im_start|>user\n'
)
CARD_SUFFIX = "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
CARD_INSTRUCTION = "Given a web search query, retrieve relevant passages that answer the query"

QUERIES = {
    "q1": "What causes insulin resistance in muscle cells?",
    "q2": "Which enzyme is deficient in phenylketonuria?",
}
CORPUS = {
    "d1": "Insulin resistance develops when muscle cells respond poorly to insulin.",
    "d2": "Phenylalanine hydroxylase deficiency causes phenylketonuria (PKU).",
    "d3": "The mitochondria is the powerhouse of the cell, as every student learns.",
    "d4": "Short.",
    "d5": "A much longer passage about lipid accumulation, inflammation and signalling defects " * 3,
}
CANDIDATES = {"q1": [("d1", 3.0), ("d3", 2.0), ("d5", 1.0), ("d4", 0.5)], "q2": [("d2", 2.0), ("d4", 1.0), ("d3", 0.0)]}


@pytest.fixture(scope="module")
def tiny_reranker(tmp_path_factory):
    folder = tmp_path_factory.mktemp("qwen3-reranker")
    model, tokenizer = tiny_model(folder, "qwen3", causal_lm=True, seed=1)
    return folder, model, tokenizer


def hand_score(model, tokenizer, query, doc, instruction=CARD_INSTRUCTION, max_length=8192):
    """The card's process_inputs + compute_logits for one pair, unpadded."""
    pair = f"<Instruct>: {instruction}\n<Query>: {query}\n<Document>: {doc}"
    prefix = tokenizer.encode(CARD_PREFIX, add_special_tokens=False)
    suffix = tokenizer.encode(CARD_SUFFIX, add_special_tokens=False)
    middle = tokenizer(pair, truncation="longest_first", max_length=max_length - len(prefix) - len(suffix))
    ids = prefix + middle["input_ids"] + suffix
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([ids])).logits[0, -1].double()
    yes, no = tokenizer.convert_tokens_to_ids("yes"), tokenizer.convert_tokens_to_ids("no")
    return math.exp(logits[yes]) / (math.exp(logits[yes]) + math.exp(logits[no])), ids


def test_scores_and_order_equal_the_card_computed_by_hand(tiny_reranker):
    from r2med.reranking import make_reranker

    folder, model, tokenizer = tiny_reranker
    reranker = make_reranker("qwen3-reranker-0.6b", model=str(folder), batch_size=3, device="cpu")
    assert reranker.max_length == 8192 and reranker.instruction == CARD_INSTRUCTION
    got = reranker.rerank(QUERIES, CANDIDATES, CORPUS)
    for qid, docs in CANDIDATES.items():
        expected = {did: hand_score(model, tokenizer, QUERIES[qid], CORPUS[did])[0] for did, _ in docs}
        values = sorted(expected.values())
        assert min(b - a for a, b in zip(values, values[1:])) > 1e-4  # distinct enough for the order check
        for did in expected:
            assert got[qid][did] == pytest.approx(expected[did], abs=1e-5)
        assert sorted(got[qid], key=got[qid].get) == sorted(expected, key=expected.get)


def test_prompt_ids_are_prefix_pair_suffix_with_the_middle_truncated(tiny_reranker):
    from r2med.reranking.qwen3 import Qwen3Reranker

    folder, model, tokenizer = tiny_reranker
    prefix = tokenizer.encode(CARD_PREFIX, add_special_tokens=False)
    suffix = tokenizer.encode(CARD_SUFFIX, add_special_tokens=False)
    assert tokenizer.convert_ids_to_tokens(prefix[:1]) == ["<|im_start|>"]  # special tokens stay whole
    budget = 60
    reranker = Qwen3Reranker(model=str(folder), max_length=len(prefix) + len(suffix) + budget, device="cpu")
    query, doc = QUERIES["q1"], CORPUS["d5"]
    (ids,) = reranker.input_ids([(query, doc)])
    pair = f"<Instruct>: {CARD_INSTRUCTION}\n<Query>: {query}\n<Document>: {doc}"
    assert ids[: len(prefix)] == prefix and ids[len(ids) - len(suffix) :] == suffix
    middle = ids[len(prefix) : len(ids) - len(suffix)]
    # one byte per token: the middle part keeps the first `budget` characters of the pair (its end is cut)
    assert len(middle) == budget and tokenizer.decode(middle) == pair[:budget]
    expected, hand_ids = hand_score(model, tokenizer, query, doc, max_length=reranker.max_length)
    assert hand_ids == ids
    (score,) = reranker.score_pairs([(query, doc)])
    assert score == pytest.approx(expected, abs=1e-5)


def test_left_padding_in_a_batch_changes_no_score(tiny_reranker):
    from r2med.reranking.qwen3 import Qwen3Reranker

    folder, _model, _tokenizer = tiny_reranker
    pairs = [(QUERIES["q1"], CORPUS[d]) for d in ("d4", "d5", "d1", "d3")]  # very different lengths
    one_by_one = Qwen3Reranker(model=str(folder), batch_size=1, device="cpu").score_pairs(pairs)
    together = Qwen3Reranker(model=str(folder), batch_size=4, device="cpu").score_pairs(pairs)
    assert together == pytest.approx(one_by_one, abs=1e-6)


def test_custom_instruction_reaches_the_prompt(tiny_reranker):
    from r2med.reranking.qwen3 import Qwen3Reranker

    folder, model, tokenizer = tiny_reranker
    instruction = "Given a Biology post, retrieve relevant passages that help answer the post."
    reranker = Qwen3Reranker(model=str(folder), instruction=instruction, device="cpu")
    (score,) = reranker.score_pairs([(QUERIES["q1"], CORPUS["d1"])])
    expected, _ = hand_score(model, tokenizer, QUERIES["q1"], CORPUS["d1"], instruction=instruction)
    default, _ = hand_score(model, tokenizer, QUERIES["q1"], CORPUS["d1"])
    assert score == pytest.approx(expected, abs=1e-5) and abs(expected - default) > 1e-5
    assert reranker.config()["instruction"] == instruction


def test_a_model_without_yes_no_tokens_is_refused(tmp_path):
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    from r2med.errors import R2MedError
    from r2med.reranking.qwen3 import Qwen3Reranker
    from tiny_lm import tiny_config

    vocab = {"[UNK]": 0, "a": 1, "b": 2}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[UNK]").save_pretrained(tmp_path)
    from transformers import AutoModelForCausalLM

    AutoModelForCausalLM.from_config(tiny_config("qwen3", 3)).save_pretrained(tmp_path)
    with pytest.raises(R2MedError, match="no 'no' token"):
        Qwen3Reranker(model=str(tmp_path), device="cpu").score_pairs([("a", "b")])
