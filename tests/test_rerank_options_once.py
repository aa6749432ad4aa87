"""One value, one reading (issue 35 item 4, the rerankers): a reranker's options are parsed once, at the edge they
came from (the step's parse, or :func:`make_reranker`'s keywords); every registry factory gets that typed object and
builds from its fields, parsing nothing again; a wrong value is one typed line before any factory or constructor
runs.  The pointwise rerankers keep their Python keywords as a path parsed once, as ``BM25()`` does.

The expected values are the values given (batch 3, commit ``v1``...), never the code's output."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from r2med.errors import R2MedError
from r2med.reranking.base import RERANKERS, all_rerankers, make_reranker
from r2med.reranking.bright import BrightCrossEncoder
from r2med.reranking.cross_encoder import CrossEncoderReranker
from r2med.reranking.qwen3 import Qwen3Reranker
from r2med.reranking.rankllama import RankLlamaReranker
from r2med.steps import RerankStep
from r2med.typed.options import CrossEncoderOptions, Qwen3Options
from r2med.typed.parse import RerankerOptions, SpecError, field_names

POINTWISE = (CrossEncoderReranker, Qwen3Reranker, RankLlamaReranker, BrightCrossEncoder)


class Overlap:
    """A scorer of one's own (``custom``): words shared with the query."""

    def score(self, query: str, docs: list[str]) -> list[float]:
        return [float(len(set(query.split()) & set(d.split()))) for d in docs]


def _valid(name: str) -> dict[str, Any]:
    """The fewest values reranker ``name``'s options take (an LLM: its name and a local endpoint)."""
    fields = set(field_names(all_rerankers()[name].options))
    values: dict[str, Any] = {}
    if "scorer" in fields:
        values["scorer"] = Overlap()
    if "base_url" in fields:
        values.update(model="served-llm", base_url="http://127.0.0.1:9/v1", cache=False)
    elif name == "cross-encoder":
        values["model"] = "org/cross-encoder"
    return values


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every parse of any reranker's options (pydantic's ``model_validate`` of a ``RerankerOptions`` type)."""
    seen: list[Any] = []
    validate = RerankerOptions.model_validate.__func__  # type: ignore[attr-defined]

    def counted(cls: type, data: Any, **kw: Any) -> Any:
        seen.append((cls.__name__, data))
        return validate(cls, data, **kw)

    monkeypatch.setattr(RerankerOptions, "model_validate", classmethod(counted))
    return seen


@pytest.fixture
def factories(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[Any]]:
    """reranker name -> the options each call of its registry factory received."""
    calls: dict[str, list[Any]] = {}
    for name, meta in all_rerankers().items():

        def spy(options: Any, factory: Any = meta.factory, name: str = name) -> Any:
            calls.setdefault(name, []).append(options)
            return factory(options)

        monkeypatch.setitem(RERANKERS.records, name, dataclasses.replace(meta, factory=spy))
    return calls


@pytest.fixture
def built(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, dict[str, Any]]]:
    """Every constructor call of the pointwise rerankers: (class, keywords)."""
    calls: list[tuple[str, dict[str, Any]]] = []
    for kind in POINTWISE:
        init = kind.__init__

        def spy(self: Any, *args: Any, _init: Any = init, _kind: type = kind, **kwargs: Any) -> None:
            calls.append((_kind.__name__, kwargs))
            _init(self, *args, **kwargs)

        monkeypatch.setattr(kind, "__init__", spy)
    return calls


@pytest.mark.parametrize("name", sorted(all_rerankers()))
def test_every_factory_gets_the_parsed_options_object_and_parses_nothing_again(name, parses, factories):
    step = RerankStep.of("runs", name, **_valid(name))
    assert len(parses) == 1 and parses[0][0] == type(step.options).__name__  # the edge: the step's parse
    reranker = make_reranker(step.reranker, options=step.options)
    assert factories[name] == [step.options] and factories[name][0] is step.options
    assert len(parses) == 1, parses[1:]  # the factory and the constructor read the object, never parse it again
    if isinstance(reranker, POINTWISE):
        assert reranker.options is step.options


@pytest.mark.parametrize("name", sorted(all_rerankers()))
def test_a_wrong_value_fails_at_the_edge_before_any_factory_or_constructor(name, factories, built):
    fields = set(field_names(all_rerankers()[name].options))
    wrong = [{"nope": 1}]
    if "batch_size" in fields:
        wrong += [{"batch_size": 0}, {"batch_size": "high"}, {"batch_size": True}]
    if "max_length" in fields:
        wrong.append({"max_length": 2.5})
    for bad in wrong:
        with pytest.raises(SpecError) as caught:
            RerankStep.of("runs", name, **{**_valid(name), **bad})
        assert "\n" not in str(caught.value) and next(iter(bad)) in str(caught.value)
        with pytest.raises(SpecError):
            make_reranker(name, **{**_valid(name), **bad})
    assert factories == {} and built == []


def test_each_field_reaches_the_pointwise_model_as_given(built):
    step = RerankStep.of(
        "runs", "bge-reranker", batch_size=3, max_length=64, model_revision="v1", dtype="bf16", device="cpu", label=0
    )
    reranker = make_reranker("bge-reranker", options=step.options)
    assert isinstance(reranker, CrossEncoderReranker)
    assert (reranker.batch_size, reranker.max_length, reranker.label) == (3, 64, 0)
    assert (reranker.dtype_option, reranker.device_option) == ("bf16", "cpu")
    assert reranker.model_revision == "v1" and reranker.config()["model_revision"] == "v1"  # the option, one name
    assert reranker.model_id == "BAAI/bge-reranker-v2-m3"  # the preset's checkpoint where none is set
    qwen = make_reranker("qwen3-reranker-4b", model_revision="abc", instruction="Find it", batch_size=2)
    assert isinstance(qwen, Qwen3Reranker)
    assert (qwen.model_revision, qwen.instruction, qwen.batch_size) == ("abc", "Find it", 2)
    assert qwen.model_id == "Qwen/Qwen3-Reranker-4B"  # the card's (protocol/later_models.json)
    llama = make_reranker("rankllama", merge=False, max_length=512)
    assert isinstance(llama, RankLlamaReranker) and (llama.merge, llama.max_length) == (False, 512)
    assert (llama.base, llama.lora) == ("meta-llama/Llama-2-7b-hf", "castorini/rankllama-v1-7b-lora-passage")
    bright = make_reranker("bright-cross-encoder", k=5)
    assert isinstance(bright, BrightCrossEncoder) and (bright.k, bright.batch_size) == (5, 8)  # rerank.py: batch 8
    assert [kind for kind, kwargs in built] == [
        "CrossEncoderReranker",
        "Qwen3Reranker",
        "RankLlamaReranker",
        "BrightCrossEncoder",
    ]
    assert all(set(kwargs) <= {"options", "preset"} for _, kwargs in built)  # the typed object, no flattened values


def test_the_python_keywords_are_parsed_once_with_the_options_words(parses):
    reranker = CrossEncoderReranker("org/cross-encoder", batch_size=4, model_revision="v2")
    assert len(parses) == 1 and parses[0][0] == "AnyCrossEncoderOptions"
    assert (reranker.batch_size, reranker.model_revision) == (4, "v2")
    assert isinstance(reranker.options, CrossEncoderOptions) and reranker.options.model_revision == "v2"
    with pytest.raises(SpecError, match=r"^CrossEncoderReranker\(\): batch_size: expected an integer >= 1, got 0$"):
        CrossEncoderReranker("org/cross-encoder", batch_size=0)
    with pytest.raises(SpecError, match=r"^Qwen3Reranker\(\): max_length: expected an integer >= 8, got 4$"):
        Qwen3Reranker(max_length=4)
    with pytest.raises(SpecError, match="needs model="):
        CrossEncoderReranker()
    with pytest.raises(R2MedError, match="not both"):
        Qwen3Reranker(batch_size=2, options=Qwen3Options())
