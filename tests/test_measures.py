"""The one table of measures (r2med.measures): every spelling of every default measure round-trips,
pytrec_eval computes exactly the keys the table names, and the other modules' spellings come from it."""

from __future__ import annotations

import pytest

from r2med.errors import R2MedError
from r2med.evaluation import metrics
from r2med.measures import DEFAULT_MEASURES, HEADLINE, Family, Measure, from_trec, pytrec_eval_spec

#: written out by hand: what every metrics.json stores (pytrec_eval's names), in the order files list them
TREC_NAMES = [
    *(f"ndcg_cut_{k}" for k in (1, 10, 25, 50, 100)),
    *(f"map_cut_{k}" for k in (1, 10, 25, 50, 100)),
    *(f"recall_{k}" for k in (1, 10, 25, 50, 100)),
    *(f"P_{k}" for k in (1, 10, 25, 50, 100)),
    "recip_rank",
]
LABELS = [
    *(f"nDCG@{k}" for k in (1, 10, 25, 50, 100)),
    *(f"MAP@{k}" for k in (1, 10, 25, 50, 100)),
    *(f"R@{k}" for k in (1, 10, 25, 50, 100)),
    *(f"P@{k}" for k in (1, 10, 25, 50, 100)),
    "MRR",
]
#: the keys of an r2med_results.json as r2med wrote it before the table (the R2MED repository's results files)
R2MED_RESULTS_KEYS = [
    *(f"ndcg_at_{k}" for k in (1, 10, 25, 50, 100)),
    *(f"map_at_{k}" for k in (1, 10, 25, 50, 100)),
    *(f"recall_at_{k}" for k in (1, 10, 25, 50, 100)),
    *(f"precision_at_{k}" for k in (1, 10, 25, 50, 100)),
    "mrr",
]


def test_default_measures_have_the_names_files_and_tables_use():
    assert [m.trec for m in DEFAULT_MEASURES] == TREC_NAMES
    assert [m.label for m in DEFAULT_MEASURES] == LABELS
    assert [m.r2med_results for m in DEFAULT_MEASURES] == R2MED_RESULTS_KEYS
    assert list(metrics.DEFAULT_MEASURES) == TREC_NAMES
    assert Measure(Family.NDCG, 10) == HEADLINE and HEADLINE.trec == "ndcg_cut_10"


@pytest.mark.parametrize("measure", DEFAULT_MEASURES, ids=str)
def test_every_spelling_round_trips(measure: Measure):
    spellings = {measure.label, measure.trec, measure.label.lower(), measure.label.upper(), f" {measure.label} "}
    if measure.cutoff is not None:
        spellings |= {f"{measure.family.trec}.{measure.cutoff}", f"{measure.family.trec}@{measure.cutoff}"}
    else:
        spellings |= {"mrr", "RR", "MRR@all"}
    for spelling in spellings:
        assert Measure.parse(spelling) == measure, spelling
        assert metrics.canonical(spelling) == measure.trec, spelling
    assert from_trec(measure.trec) == measure
    if measure.cutoff is not None:
        assert measure.mteb == measure.r2med_results  # MTEB and R2MED share the "_at_k" keys for these
    else:
        assert measure.mteb is None and measure.mteb_at(10) == "mrr_at_10"


def test_pytrec_eval_computes_exactly_the_tables_keys():
    """Independent check: pytrec_eval, given the table's spec, returns per query exactly the names the table
    (and metrics.json) uses, no more, no fewer."""
    import pytrec_eval

    qrels = {"q1": {"d1": 1, "d2": 0}, "q2": {"d3": 2}}
    run = {"q1": {"d1": 2.0, "d2": 1.0}, "q2": {"d4": 1.0, "d3": 0.5}}
    spec = pytrec_eval_spec(DEFAULT_MEASURES)
    assert spec == {"ndcg_cut.1,10,25,50,100", "map_cut.1,10,25,50,100", "recall.1,10,25,50,100"} | {
        "P.1,10,25,50,100",
        "recip_rank",
    }
    raw = pytrec_eval.RelevanceEvaluator(qrels, spec).evaluate(run)
    for values in raw.values():
        assert set(values) == set(TREC_NAMES)
    assert raw["q2"]["recip_rank"] == 0.5  # relevant doc at rank 2


def test_r2med_results_file_keys_are_unchanged():
    from r2med.runs.run import r2med_results

    aggregate = {name: 0.5 for name in TREC_NAMES} | {"not_a_measure": 0.1}
    payload = r2med_results("Biology", "bm25", aggregate)
    assert list(payload["test"]) == R2MED_RESULTS_KEYS
    assert payload["dataset_name"] == "Biology" and payload["model_name"] == "bm25"


def test_mteb_keys_come_from_the_table():
    from r2med.export.mteb import MAIN_SCORE, mteb_scores

    assert MAIN_SCORE == "ndcg_at_10"
    from r2med.runs.record import parse_record

    record = parse_record({"aggregate": {name: 0.25 for name in TREC_NAMES}}, "a metrics.json written by hand")
    scores = mteb_scores(record, k_values=(1, 10, 100), depth=10)
    expected = {f"{f}_at_{k}" for f in ("ndcg", "map", "recall", "precision") for k in (1, 10, 100)}
    expected |= {"mrr_at_10", "mrr_at_100", "accuracy", "main_score"}
    assert set(scores.values) == expected
    assert set(scores.left_out) == {"ndcg_cut_25", "ndcg_cut_50", "map_cut_25", "map_cut_50"} | {
        "recall_25",
        "recall_50",
        "P_25",
        "P_50",
    }


@pytest.mark.parametrize(
    ("typed", "message"),
    [
        ("nDGC@10", "unknown measure 'nDGC@10' (did you mean 'nDCG@10'?)"),
        ("recal_100", "(did you mean 'Recall_100'?)"),
        ("MMR", "(did you mean 'MRR'?)"),
        ("x" * 200, "unknown measure '" + "x" * 40 + "...'"),
    ],
)
def test_unknown_measures_get_one_suggestion_from_did_you_mean(typed: str, message: str):
    with pytest.raises(R2MedError, match="unknown measure") as caught:
        Measure.parse(typed)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_measures_has_no_suggestion_code_of_its_own():
    import r2med.measures as table

    assert not hasattr(table, "_close_match")


def test_no_cut_off_where_the_family_needs_one():
    with pytest.raises(R2MedError, match="needs"):
        Measure(Family.NDCG)
    with pytest.raises(R2MedError, match="takes no"):
        Measure(Family.MRR, 10)
    with pytest.raises(R2MedError, match="at least 1"):
        Measure.parse("nDCG@0")
    with pytest.raises(R2MedError, match="not a pytrec_eval measure name"):
        from_trec("nDCG@10")
