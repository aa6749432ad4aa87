"""The JSON reader's values are narrowed where they are read (issue 35: no ``Any`` from the one reader): a value of
another shape than the reader expects is damage (a ``ValueError``, as malformed JSON is), never a ``TypeError`` deep
inside, and a memo's entry that is not all text is left out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from r2med.infra.home import parse_json
from r2med.infra.json_shapes import as_object, json_object, text_object
from r2med.retrieval.embedding_cache import describe_entry


@pytest.mark.parametrize("text", ["[]", '"x"', "1", "null", "[{}]"])
def test_a_value_that_is_not_an_object_is_a_value_error(text: str) -> None:
    with pytest.raises(ValueError, match=r"meta\.json is not a JSON object"):
        as_object(parse_json(text), "meta.json")
    assert as_object(parse_json('{"a": [1]}')) == {"a": [1]}


def test_an_object_of_text_only() -> None:
    assert text_object(parse_json('{"name": "a", "source": ""}')) == {"name": "a", "source": ""}
    assert text_object(parse_json('{"name": "a", "n": 1}')) is None
    assert text_object(parse_json('["a"]')) is None


def test_a_mapping_made_json_as_json_dumps_with_str_writes_it(tmp_path: Path) -> None:
    values = {"path": tmp_path, "n": 1.5, "nested": {"t": (1, 2)}}
    assert json_object(values) == json.loads(json.dumps(values, default=str))
    assert json_object(values)["path"] == str(tmp_path)


def test_a_cache_entry_whose_meta_is_of_another_shape_is_unreadable_not_a_crash(tmp_path: Path) -> None:
    (tmp_path / "meta.json").write_text('["encoder"]')
    with pytest.raises(ValueError, match="not a JSON object"):
        describe_entry(tmp_path)
    (tmp_path / "meta.json").write_text('{"encoder": "bge", "n_docs": 3}')
    with pytest.raises(ValueError, match="encoder is not a JSON object"):
        describe_entry(tmp_path)
    (tmp_path / "meta.json").write_text('{"encoder": {"model": "bge", "pooling": "cls"}, "n_docs": 3}')
    assert describe_entry(tmp_path) == ("bge pooling=cls · 3 docs", False)
