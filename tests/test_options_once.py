"""One value, one reading (issue 35 item 4, the retrievers): an option is parsed once, at the edge it came from;
the registry builds a retriever from the typed options; a fact is recorded once in ``metrics.json`` (BM25's k1 and b:
in ``config.options``), and a record written before (k1 and b beside the options too) is read back and reused
unchanged; a retriever's optional capabilities are its protocol's, with their defaults in a base.

The expected values are the command's own numbers (k1 1.2) and hand-made records, never the code's output."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conftest import recorded
from r2med.data import Collection, load_folder
from r2med.data.exclusions import Exclusions
from r2med.errors import R2MedError
from r2med.jobs.evaluate import check_excludes, run_task
from r2med.retrieval.base import BaseRetriever, Retriever, as_retriever, index_collection
from r2med.retrieval.bm25 import BM25
from r2med.retrieval.registry import RETRIEVERS, RetrieverMeta, make_retriever
from r2med.runs.record import read_record
from r2med.steps import EvaluateStep, evaluate_from_record
from r2med.typed.options import Bm25Options
from r2med.typed.parse import RetrieverOptions, SpecError
from test_report import write_collection


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every parse of BM25's options (pydantic's ``model_validate`` of :class:`Bm25Options`), by its values."""
    seen: list[Any] = []
    validate = Bm25Options.model_validate.__func__  # type: ignore[attr-defined]

    def counted(cls: type, data: Any, **kw: Any) -> Any:
        seen.append(data)
        return validate(cls, data, **kw)

    monkeypatch.setattr(Bm25Options, "model_validate", classmethod(counted))
    return seen


@pytest.fixture
def built(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """The arguments of every ``BM25.__init__``."""
    calls: list[dict[str, Any]] = []
    init = BM25.__init__

    def spy(self: BM25, *args: Any, **kwargs: Any) -> None:
        calls.append(dict(kwargs, args=args))
        init(self, *args, **kwargs)

    monkeypatch.setattr(BM25, "__init__", spy)
    return calls


def test_a_bm25_run_parses_k1_and_b_once_and_bm25_gets_the_typed_options(parses, built):
    step = EvaluateStep.of("bm25", k1=1.2, b=0.5)
    assert len(parses) == 1  # the edge: the step's parse
    retriever = make_retriever(step.retriever, task=None, options=step.options)
    assert len(parses) == 1  # the registry and BM25 read the same object, they never parse again
    assert len(built) == 1 and built[0]["options"] is step.options
    assert isinstance(retriever, BM25) and (retriever.k1, retriever.b) == (1.2, 0.5)
    assert (retriever.options.k1, retriever.options.b) == (1.2, 0.5)


def test_keywords_from_python_are_parsed_once_too(parses, built):
    make_retriever("bm25", k1=1.2)
    assert len(parses) == 1 and built[0]["options"].k1 == 1.2
    BM25(k1=1.3)  # BM25 built directly: its keywords are the edge
    assert len(parses) == 2


@pytest.mark.parametrize("value", ["high", -1.0, float("nan"), True])
def test_a_wrong_k1_fails_at_the_edge_and_never_reaches_bm25(built, value):
    with pytest.raises(SpecError) as caught:
        EvaluateStep.of("bm25", k1=value)
    assert "\n" not in str(caught.value) and "k1" in str(caught.value)
    with pytest.raises(SpecError):
        make_retriever("bm25", k1=value)
    assert built == []


def test_bm25_takes_its_options_as_one_object_or_as_keywords_not_both():
    with pytest.raises(R2MedError, match="not both"):
        BM25(k1=1.2, options=Bm25Options())


def _one_task(tmp_path: Path) -> Collection:
    return load_folder(write_collection(tmp_path, "Biology"))


def test_metrics_json_records_k1_and_b_once(tmp_path):
    coll = _one_task(tmp_path)
    run_task(coll, EvaluateStep.of("bm25", k1=1.2, top_k=10), tmp_path / "out" / "bm25")
    config = json.loads((tmp_path / "out" / "bm25" / "Biology" / "metrics.json").read_text())["config"]
    assert config["options"] == {"cache": True, "k1": 1.2, "b": 0.4, "analyzer": "english"}
    assert "k1" not in config and "b" not in config  # not a second time beside them
    assert config["flavour"] == "paper" and config["analyzer"]["name"] == "english"  # what it computed: once


def _recorded_twice(path: Path) -> None:
    """Rewrite ``path`` as r2med wrote it before issue 35: k1 and b after ``flavour`` too (tests/data/metrics_v2)."""
    data = json.loads(path.read_text())
    config = data["config"]
    rebuilt: dict[str, Any] = {}
    for key, value in config.items():
        rebuilt[key] = value
        if key == "flavour":
            rebuilt["k1"], rebuilt["b"] = config["options"]["k1"], config["options"]["b"]
    path.write_text(json.dumps({**data, "config": rebuilt}, indent=1) + "\n")


def test_an_old_record_with_k1_twice_reads_back_and_is_reused_unchanged(tmp_path):
    coll = _one_task(tmp_path)
    out = tmp_path / "out" / "k12"
    first = run_task(coll, EvaluateStep.of("bm25", k1=1.2, top_k=10), out)
    path = out / "Biology" / "metrics.json"
    _recorded_twice(path)
    assert json.loads(path.read_text())["config"]["k1"] == 1.2
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    again = run_task(coll, EvaluateStep.of("bm25", k1=1.2, top_k=10), out)
    assert again.reused and again.run == first.run
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before  # a reuse rewrites nothing
    assert evaluate_from_record(read_record(out / "Biology").config) == EvaluateStep.of("bm25", k1=1.2, top_k=10)
    other = run_task(coll, EvaluateStep.of("bm25", k1=0.9, top_k=10), out)
    assert not other.reused  # another k1 is another run


def test_an_old_record_whose_two_copies_disagree_is_never_reused(tmp_path):
    coll = _one_task(tmp_path)
    out = tmp_path / "out" / "bm25"
    run_task(coll, EvaluateStep.of("bm25", top_k=10), out)
    path = out / "Biology" / "metrics.json"
    _recorded_twice(path)
    data = json.loads(path.read_text())
    data["config"]["k1"] = 1.5  # the record no longer says which k1 ran
    path.write_text(json.dumps(data, indent=1) + "\n")
    assert not run_task(coll, EvaluateStep.of("bm25", top_k=10), out).reused
    assert not run_task(coll, EvaluateStep.of("bm25", k1=1.5, top_k=10), out).reused


def test_a_v2_record_with_k1_only_beside_the_options_reads_it_from_there():
    """A schema-2 record that held no ``options`` (k1 and b only as the retriever's facts) is the step it ran."""
    config = {
        "retriever": "bm25",
        "k": 100,
        "flavour": "paper",
        "k1": 1.2,
        "b": 0.3,
        "analyzer": {"name": "english", "stopwords": 33, "stem": True, "version": 1},
    }
    assert evaluate_from_record(recorded(config)) == EvaluateStep.of("bm25", k1=1.2, b=0.3, top_k=100)


# -- optional capabilities: the protocol's, with defaults in a base -----------------------------------------


class Minimal:
    """A retriever that implements only the protocol's minimum (no capability), ranking by word overlap."""

    name = "minimal"
    family = "lexical"

    def __init__(self) -> None:
        self.corpus: dict[str, str] = {}
        self.indexed_with: dict[str, Any] = {}

    def index(self, corpus, corpus_fingerprint=None):
        self.corpus, self.indexed_with = dict(corpus), {"corpus_fingerprint": corpus_fingerprint}
        return self

    def search(self, queries, k=100):
        out = {}
        for qid, text in queries.items():
            words = set(str(text).lower().split())
            scores = {d: float(len(words & set(t.lower().split()))) for d, t in self.corpus.items()}
            out[qid] = dict(sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:k])
        return out

    def config(self):
        return {"retriever": self.name}


class Based(BaseRetriever, Minimal):
    """The same, subclassing the base: it states no capability, so it has the defaults."""


def test_a_retriever_states_only_the_capabilities_it_has():
    assert isinstance(BM25(cache=False), Retriever) and BM25.indexes_repeats and BM25.excludes
    based = as_retriever(Based(), "based")
    assert based.__class__ is Based  # a base subclass is complete: used as it is
    for retriever in (based, as_retriever(Minimal(), "minimal")):
        assert isinstance(retriever, Retriever)
        assert (retriever.indexes_repeats, retriever.excludes, retriever.encoding_facts()) == (False, False, None)


def test_a_plain_implementer_keeps_the_capabilities_it_has():
    class Excluding(Minimal):
        excludes = True

    assert as_retriever(Excluding(), "x").excludes is True
    with pytest.raises(R2MedError, match="has no family, index, config"):
        as_retriever(type("Half", (), {"name": "half", "search": lambda self, q, k=100: {}})(), "half")


@pytest.mark.parametrize("kind", [Minimal, Based])
def test_a_retriever_without_capabilities_runs_as_before(tmp_path, monkeypatch, kind):
    """Registered as a retriever of its own: it runs through ``run_task`` (no repeats given to its index, no encoding
    facts recorded), and a task with exclusions is refused in one line, as before."""
    made: list[Any] = []

    def factory(task: str | None, options: RetrieverOptions) -> Any:
        made.append(kind())
        return made[-1]

    monkeypatch.setitem(RETRIEVERS.records, "overlap-test", RetrieverMeta("overlap-test", factory, family="lexical"))
    coll = _one_task(tmp_path)
    result = run_task(coll, EvaluateStep.of("overlap-test", top_k=5), tmp_path / "out" / "overlap")
    assert made and made[0].indexed_with == {"corpus_fingerprint": coll.fingerprint}
    record = read_record(tmp_path / "out" / "overlap" / "Biology")
    assert record.encoding is None and record.config is not None and record.config.retriever == "minimal"
    words = {q: set(t.lower().split()) for q, t in coll.queries.items()}
    for qid, ranked in result.run.items():  # the hand computation: word overlap, ties by id
        best = max(len(words[qid] & set(t.lower().split())) for t in coll.corpus.values())
        assert next(iter(ranked.values())) == best
    first_query, first_doc = next(iter(coll.queries)), next(iter(coll.corpus))
    excluded = Collection(
        "t", coll.corpus, coll.queries, coll.qrels, exclusions=Exclusions.of({first_query: [first_doc]})
    )
    with pytest.raises(R2MedError, match=r"cannot do inside its search"):
        check_excludes(as_retriever(kind(), "overlap-test"), excluded)


def test_index_collection_gives_repeats_only_to_a_retriever_that_takes_them():
    docs = {"a": "heart attack", "b": "lung"}
    coll = Collection("t", docs, {"q": "heart"}, {"q": {"a": 1}}, corpus_repeats=("heart heart",))
    plain = as_retriever(Minimal(), "m")
    index_collection(plain, coll)  # no repeats keyword: its index() takes none
    bm25 = BM25(cache=False)
    index_collection(bm25, coll)
    assert bm25.avgdl == pytest.approx((2 + 1 + 2) / 3)  # the repeat counts in the statistics (3 texts)


# -- dense: the factory reads the typed options, nothing re-listed or re-checked --------------------------------


def test_the_dense_factory_reads_every_option_from_the_typed_object(monkeypatch):
    """Each option reaches what uses it (the model's commit as the settings', and the model's, ``revision``); an
    option left unset is the retriever's own default (32 texts a batch, identical ids ignored, 65,536 documents a
    search block, cosine for a model that names no similarity). Nothing loads: the encoder is built on first use."""
    from r2med.retrieval.dense import DenseRetriever

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    set_ = make_retriever(
        "dense",
        model="org/name",
        model_revision="v1.0",
        loader="transformers",
        pooling="cls",
        max_length=64,
        batch_size=7,
        ignore_identical_ids=False,
        search_chunk=128,
        similarity="dot",
    )
    assert isinstance(set_, DenseRetriever)
    s = set_.settings
    assert (s.model, s.model_revision, s.loader) == ("org/name", "v1.0", "transformers")
    assert (s.pooling, s.max_length) == ("cls", 64)
    assert (set_.batch_size, set_.ignore_identical_ids, set_.search_chunk, set_.similarity) == (7, False, 128, "dot")
    unset = make_retriever("dense", model="org/name", pooling="mean")
    assert isinstance(unset, DenseRetriever)
    # a pooling: plain transformers
    assert (unset.settings.model_revision, unset.settings.loader) == (None, "transformers")
    assert (unset.batch_size, unset.ignore_identical_ids, unset.search_chunk, unset.similarity) == (
        32,
        True,
        65536,
        "cosine",
    )


def test_a_dense_option_the_type_refuses_never_reaches_the_factory(monkeypatch):
    """The checks the dense factory used to repeat (a pooling it does not know, no model) are the type's, once."""
    import r2med.retrieval.dense as dense

    called: list[object] = []
    monkeypatch.setattr(dense, "encoder_settings", lambda options: called.append(options) or {})
    with pytest.raises(SpecError, match="pooling"):
        make_retriever("dense", model="org/name", pooling="maxx")
    with pytest.raises(SpecError, match="needs --model"):
        make_retriever("dense")
    assert called == []


def test_what_a_search_says_of_its_cut_is_the_protocols_member():
    """``cut_ties`` is the protocol's (None in the base: unknown); a plain implementer keeps its own after each
    search, and a value of another shape is one line naming the retriever (never a half-written folder)."""
    from r2med.evaluation.tie_data import CutTie
    from r2med.jobs.evaluate import checked_cut_ties

    assert Based().cut_ties is None and checked_cut_ties(as_retriever(Based(), "based")) is None
    plain = Minimal()
    wrapped = as_retriever(plain, "minimal")
    plain.index({"d1": "a b", "d2": "a b"})
    wrapped.search({"q": "a"}, k=1)
    assert wrapped.cut_ties is None  # it said nothing: unknown
    plain.cut_ties = {"q": CutTie(("d2",), 1)}  # type: ignore[attr-defined]
    wrapped.search({"q": "a"}, k=1)
    assert checked_cut_ties(wrapped) == {"q": CutTie(("d2",), 1)}
    plain.cut_ties = {"q": ["d2"]}  # type: ignore[attr-defined]
    wrapped.search({"q": "a"}, k=1)
    with pytest.raises(R2MedError, match="retriever 'minimal': cut_ties must map query ids to CutTie"):
        checked_cut_ties(wrapped)
