"""One framing record (``FileFramings``) for both of its uses: what a tokenizer's files say around one text (an
encoder's input) and around a (query, document) pair (a reranker's), read from tiny tokenizers of the real
families' layouts (tests/tiny_families.py), recorded and read back, and their disagreement said in one line."""

from __future__ import annotations

import json

import pytest

from tiny_families import family_tokenizer, load

pytest.importorskip("transformers")

from r2med.retrieval.encoders.framing import (
    FileFramings,
    file_framings,
    pair_file_framings,
)


@pytest.fixture(scope="module")
def disagreeing(tmp_path_factory):
    """A Qwen3 tokenizer whose config says add_eos_token (as a FlagEmbedding fine-tune can save it) while its
    tokenizer.json's post-processor adds nothing (the case tests/test_framing_families.py stops on)."""
    folder = family_tokenizer(tmp_path_factory.mktemp("qwen3-eos-config"), "qwen3")
    config = json.loads((folder / "tokenizer_config.json").read_text())
    config.update({"add_eos_token": True, "eos_token": "<|endoftext|>"})
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    return folder, load(folder)


def test_one_record_for_a_text_and_for_a_pair_round_trips_through_the_recorded_form(disagreeing):
    folder, tok = disagreeing
    text = file_framings(tok, str(folder))
    pair = pair_file_framings(tok, str(folder))
    assert type(text) is type(pair) is FileFramings
    assert (text.around, pair.around) == ("text", "pair")
    # by hand: the config adds <|endoftext|> after a text; transformers' own pair template for add_eos_token is
    # A <eos> B <eos>; the post-processor and the loaded tokenizer add nothing
    assert text.config == "{text} <|endoftext|>" and text.loaded == "{text}"
    assert pair.config == "{query} <|endoftext|> {document} <|endoftext|>"
    assert not text.agree and not pair.agree
    for record in (text, pair):
        recorded = json.loads(json.dumps(record.describe()))  # as metrics.json holds it
        assert set(recorded) == {"tokenizer_config", "tokenizer_json", "loaded"}
        assert FileFramings.from_described(recorded, record.around) == record


def test_the_disagreement_is_one_line_naming_what_it_is_around(disagreeing):
    _, tok = disagreeing
    for record, around in ((file_framings(tok), "text"), (pair_file_framings(tok), "pair")):
        line = record.disagreement("m")
        assert "\n" not in line and f"around a {around} --" in line
        assert repr(record.config) in line and repr(record.post_processor) in line and repr(record.loaded) in line


def test_files_that_agree_state_their_framing():
    agreeing = FileFramings(config=None, post_processor="<s> {text} </s>", loaded="<s> {text} </s>", around="text")
    assert agreeing.agree and agreeing.stated == "<s> {text} </s>"
    silent = FileFramings(config=None, post_processor=None, loaded="{text}", around="pair")
    assert silent.agree and silent.stated == "{text}"
