"""Facets: per-facet means against hand groupings, on a hand-made example and on R2MED's real query metadata."""

from __future__ import annotations

import random

import pytest

from conftest import shared_collection
from r2med.errors import R2MedError
from r2med.evaluation.facets import NONE, facet_keys, facet_label, facet_table

VALUES = {
    "bm25": {"MedQA-Diag": {"a": 0.2, "b": 0.4, "c": 1.0}, "PMC-Clinical": {"x": 0.5, "y": 0.0}},
    "dense": {"MedQA-Diag": {"a": 0.6, "b": 0.0, "c": 0.3}, "PMC-Clinical": {"x": 1.0}},  # no value for y
}
META = {
    "MedQA-Diag": {
        "a": {"body_system": "Cardiovascular"},
        "b": {"body_system": "Renal"},
        "c": {"body_system": "Cardiovascular", "answer": "B"},
    },
    "PMC-Clinical": {"x": {"body_system": "Cardiovascular"}, "y": {"body_system": ""}},
}


def test_pooled_means_equal_a_hand_grouping():
    facets = facet_table(VALUES, META, "body_system")
    assert facets.average == "pooled" and facets.systems == ["bm25", "dense"]
    assert [r.value for r in facets.rows] == ["Cardiovascular", "Renal", NONE]
    cardio = facets.row("Cardiovascular")
    assert cardio.queries == 3 and cardio.tasks == {"MedQA-Diag": 2, "PMC-Clinical": 1}
    assert cardio.mean["bm25"] == pytest.approx((0.2 + 1.0 + 0.5) / 3)
    assert cardio.mean["dense"] == pytest.approx((0.6 + 0.3 + 1.0) / 3)
    assert cardio.counts == {"bm25": 3, "dense": 3}
    assert cardio.per_task["bm25"] == pytest.approx({"MedQA-Diag": 0.6, "PMC-Clinical": 0.5})
    renal = facets.row("Renal")
    assert (renal.queries, renal.mean) == (1, {"bm25": 0.4, "dense": 0.0})
    none = facets.row(NONE)  # a blank value is "(none)"; dense has no value for that query
    assert (none.queries, none.mean, none.counts) == (1, {"bm25": 0.0}, {"bm25": 1})


def test_macro_means_are_means_of_task_means():
    facets = facet_table(VALUES, META, "body_system", average="macro")
    cardio = facets.row("Cardiovascular")
    assert cardio.mean["bm25"] == pytest.approx(((0.2 + 1.0) / 2 + 0.5) / 2)  # 0.55, pooled 0.567
    assert cardio.mean["dense"] == pytest.approx(((0.6 + 0.3) / 2 + 1.0) / 2)  # 0.725, pooled 0.633


def test_missing_keys_and_scenarios():
    answers = facet_table(VALUES, META, "answer")
    assert [(r.value, r.queries) for r in answers.rows] == [("B", 1), (NONE, 4)]
    by_scenario = facet_table(VALUES, META, "scenario")
    assert {r.value: r.queries for r in by_scenario.rows} == {
        "Clinical evidence retrieval": 3,
        "Clinical case retrieval": 2,
    }
    assert by_scenario.row("Clinical case retrieval").mean == pytest.approx({"bm25": 0.25, "dense": 1.0})
    other = facet_table({"s": {"medline-med": {"q": 1.0}}}, {}, "scenario")
    assert [r.value for r in other.rows] == [NONE]
    custom = facet_table({"s": {"medline-med": {"q": 1.0}}}, {}, "scenario", scenarios={"medline-med": "MEDLINE"})
    assert [r.value for r in custom.rows] == ["MEDLINE"]


def test_pooled_facets_partition_the_queries():
    """On random data, each facet's pooled mean is the brute-force mean of its queries, and the
    facets' query-weighted means add up to the overall mean."""
    rng = random.Random(5)
    systems = ["s1", "s2"]
    values = {s: {t: {f"q{i}": rng.random() for i in range(30)} for t in ("T1", "T2")} for s in systems}
    meta = {
        t: {f"q{i}": ({"k": rng.choice(["x", "y", "z", None])} if i % 7 else {}) for i in range(30)}
        for t in ("T1", "T2")
    }
    facets = facet_table(values, meta, "k")
    assert sum(r.queries for r in facets.rows) == 60
    for s in systems:
        overall = sum(v for t in values[s].values() for v in t.values()) / 60
        assert sum(r.mean[s] * r.counts[s] for r in facets.rows) / 60 == pytest.approx(overall)
        for row in facets.rows:
            chosen = [values[s][t][q] for t in meta for q in meta[t] if facet_label(meta[t][q].get("k")) == row.value]
            assert row.mean[s] == pytest.approx(sum(chosen) / len(chosen))


def test_labels_for_odd_values():
    assert facet_label(None) == facet_label("") == facet_label("  ") == facet_label([]) == NONE
    assert facet_label(True) == "true" and facet_label(3) == "3" and facet_label(2.5) == "2.5"
    assert facet_label(["a", "b"]) == "a, b"
    assert facet_label({"b": 1, "a": [2]}) == '{"a":[2],"b":1}'
    assert facet_label("two\nlines") == "two lines"
    long1, long2 = "x" * 50 + "1", "x" * 50 + "2"
    assert facet_label(long1) != facet_label(long2)
    assert facet_label(long1).startswith("x" * 40 + "… #") and len(facet_label(long1)) == 40 + 3 + 6
    values = {"s": {"T": {"a": 1.0, "b": 0.0, "c": 0.5}}}
    meta = {"T": {"a": {"tags": ["x", "y"]}, "b": {"tags": ["y"]}, "c": {"tags": {"unhashable": ["dict"]}}}}
    whole = facet_table(values, meta, "tags")
    assert {r.value: r.queries for r in whole.rows} == {"x, y": 1, "y": 1, '{"unhashable":["dict"]}': 1}
    split = facet_table(values, meta, "tags", split_lists=True)
    assert {r.value: r.mean["s"] for r in split.rows} == {"x": 1.0, "y": 0.5, '{"unhashable":["dict"]}': 0.5}


def test_bad_arguments():
    with pytest.raises(R2MedError, match="unknown average"):
        facet_table(VALUES, META, "body_system", average="median")
    with pytest.raises(R2MedError, match="metadata key"):
        facet_table(VALUES, META, "")


def test_real_r2med_query_metadata():
    from r2med.data import load_folder

    coll = load_folder(shared_collection("r2med-biology-demo"), name="Biology")
    meta = {"Biology": coll.query_meta}
    assert facet_keys(meta) == {"answer": 2, "body_system": 0, "doc_id": 2, "scenario": 2}
    values = {"bm25": {"Biology": {"0": 0.25, "1": 0.75}}, "dense": {"Biology": {"0": 1.0}}}
    by_system = facet_table(values, meta, "body_system")  # Biology's body_system is blank: one "(none)" group
    assert [(r.value, r.queries, r.mean) for r in by_system.rows] == [(NONE, 2, {"bm25": 0.5, "dense": 1.0})]
    by_scenario = facet_table(values, meta, "scenario")
    assert [(r.value, r.queries) for r in by_scenario.rows] == [("Q&A reference retrieval", 2)]
    by_doc = facet_table(values, meta, "doc_id")  # lists of doc ids, long: cut, hashed, still two groups
    assert len(by_doc.rows) == 2 and all(r.queries == 1 and "… #" in r.value for r in by_doc.rows)
    first = next(r for r in by_doc.rows if r.value.startswith("insects_attracted_to_light/"))
    assert first.mean == {"bm25": 0.25, "dense": 1.0}
    by_answer = facet_table(values, meta, "answer", split_lists=True)
    assert sorted(r.mean["bm25"] for r in by_answer.rows) == [0.25, 0.75]


def test_values_of_different_types_stay_different_groups():
    """``--by`` merged 1 with "1", true with "true", and a literal "(none)" with missing values."""
    assert len({facet_label(1), facet_label("1")}) == 2
    assert len({facet_label(True), facet_label("true")}) == 2
    assert len({facet_label(None), facet_label("(none)")}) == 2 and facet_label(None) == NONE
    assert len({facet_label(None), facet_label("null")}) == 2
    assert facet_label("Renal") == "Renal" and facet_label("1a") == "1a"  # plain text is shown as it is
    values = {"s": {"T": {"a": 1.0, "b": 0.0, "c": 0.5, "d": 0.25, "e": 0.75, "f": 0.1}}}
    meta = {"T": {"a": {"k": 1}, "b": {"k": "1"}, "c": {"k": True}, "d": {"k": "true"}, "e": {"k": "(none)"}, "f": {}}}
    table = facet_table(values, meta, "k")
    assert len(table.rows) == 6 and all(r.queries == 1 for r in table.rows)
    assert table.row(NONE).mean["s"] == 0.1 and table.row(facet_label("(none)")).mean["s"] == 0.75
    assert table.row("1").mean["s"] == 1.0 and table.row(facet_label("1")).mean["s"] == 0.0
