"""Choices are types: each string choice is a StrEnum, checked once at the edge (issue 22 item 1)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import run_r2med
from r2med.errors import R2MedError
from r2med.expansion.combine import ExpansionMethod, check_method
from r2med.expansion.traces import TraceFormat, trace_format_of
from r2med.runs.fusion import FusionMethod, Normalisation
from r2med.typed.dense_choices import Dtype, Pooling, Similarity
from r2med.typed.lexical_choices import AnalyzerName, Bm25Flavour

# (command line before the option, option, the choices it must list), written out by hand from the docs
CASES = [
    (["evaluate", "-r", "dense"], "--similarity", ["cosine", "dot"], "similarity"),
    (["evaluate", "-r", "dense"], "--pooling", ["cls", "mean", "last-token"], "pooling"),
    (["evaluate", "-r", "dense"], "--dtype", ["fp32", "fp16", "bf16", "fp16-autocast", "auto"], "dtype"),
    (["evaluate"], "--analyzer", ["english", "lucene"], "analyzer"),
    (["encode"], "--pooling", ["cls", "mean", "last-token"], "pooling"),
    (
        ["rerank", "--run", "x", "--reranker", "y"],
        "--dtype",
        ["fp32", "fp16", "bf16", "fp16-autocast", "auto"],
        "dtype",
    ),
    (["fuse", "a", "b"], "--method", ["rrf", "combsum", "combmnz"], "fusion method"),
    (["fuse", "a", "b"], "--norm", ["minmax", "zscore", "none"], "normalisation"),
    (
        ["expand", "--model", "m"],
        "--method",
        ["hyde", "query2doc", "lamer", "search-r1", "search-o1"],
        "expansion method",
    ),
    (["report", "runs"], "--format", ["table", "markdown", "csv", "latex", "json"], "format"),
    (["compare", "a", "b"], "--format", ["table", "markdown", "csv", "latex", "json"], "format"),
    (["tasks"], "--format", ["table", "json"], "format"),
    (["cache", "ls"], "--format", ["table", "json"], "format"),
    (["models"], "--format", ["table", "json"], "format"),
    (["reproduce"], "--format", ["table", "json"], "format"),
    (["score", "q", "r"], "--format", ["trec", "json"], "format"),
]


@pytest.mark.parametrize(("base", "option", "choices", "what"), CASES)
def test_a_choice_outside_the_enum_is_refused_while_parsing_with_the_choices_listed(
    base: list[str], option: str, choices: list[str], what: str, tmp_path: Path
) -> None:
    extra = ["-o", str(tmp_path / "out")] if base[0] == "evaluate" else []
    proc = run_r2med(*base, option, "bogus", *extra, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    expected = f"{option}: unknown {what} 'bogus'; choose from: {', '.join(choices)}"
    assert expected in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert list(tmp_path.iterdir()) == []  # refused before anything was written


@pytest.mark.parametrize(("base", "option", "choices", "what"), CASES)
def test_help_shows_the_choices(base: list[str], option: str, choices: list[str], what: str) -> None:
    command = base[:2] if base[0] == "cache" else base[:1]
    res = run_r2med(*command, "--help", env={"COLUMNS": "400"})
    assert res.returncode == 0, res.stderr
    assert "[" + "|".join(choices) + "]" in res.stdout


def test_the_enums_hold_todays_strings_and_dump_as_plain_json_strings() -> None:
    expected = {
        Pooling: ["cls", "mean", "last-token"],
        Similarity: ["cosine", "dot"],
        Dtype: ["fp32", "fp16", "bf16", "fp16-autocast", "auto"],
        AnalyzerName: ["english", "lucene"],
        Bm25Flavour: ["paper", "standard"],
        FusionMethod: ["rrf", "combsum", "combmnz"],
        Normalisation: ["minmax", "zscore", "none"],
        ExpansionMethod: ["hyde", "query2doc", "lamer", "search-r1", "search-o1"],
        TraceFormat: ["think", "final-response", "solution", "answer", "none"],
    }
    for enum, values in expected.items():
        assert [m.value for m in enum] == values
        assert json.loads(json.dumps({"v": list(enum)})) == {"v": values}
        assert json.dumps(list(enum)) == json.dumps(values)


def test_encoder_settings_are_typed_inside_and_key_as_before() -> None:
    from r2med.retrieval.encoders import EncoderSettings

    settings = EncoderSettings(model="m", pooling="cls", dtype="float16")
    assert settings.pooling is Pooling.CLS and settings.dtype is Dtype.FP16
    key = json.loads(json.dumps(settings.key()))
    assert key["pooling"] == "cls" and key["dtype"] == "fp16"
    with pytest.raises(R2MedError, match="unknown pooling 'max'; choose from cls, mean, last-token"):
        EncoderSettings(model="m", pooling="max")
    with pytest.raises(R2MedError, match="unknown dtype 'fp8'; choose from fp32, fp16, bf16, fp16-autocast, auto"):
        EncoderSettings(model="m", dtype="fp8")


def test_fingerprint_of_enum_settings_equals_that_of_todays_strings() -> None:
    from r2med.infra.home import fingerprint

    assert fingerprint({"pooling": Pooling.MEAN, "dtype": Dtype.FP32}) == fingerprint(
        {"pooling": "mean", "dtype": "fp32"}
    )


def test_aliases_and_spellings_still_accepted() -> None:
    from r2med.cli.options import ANALYZER_CHOICE, DTYPE_CHOICE, EXPANSION_METHOD_CHOICE

    assert DTYPE_CHOICE.convert("FP16") is Dtype.FP16
    assert DTYPE_CHOICE.convert("float16") == "float16"  # passed on as given; EncoderSettings canonicalises it
    assert ANALYZER_CHOICE.convert("python") == "python"
    assert EXPANSION_METHOD_CHOICE.convert("HyDE") is ExpansionMethod.HYDE
    assert check_method("Search_R1") is ExpansionMethod.SEARCH_R1
    assert trace_format_of("r1-qwen-32b") is TraceFormat.THINK


def test_format_spellings_accepted_as_before() -> None:
    from r2med.cli.options import LISTING_FORMAT_CHOICE, LISTING_FORMAT_EXACT, REPORT_FORMAT_CHOICE
    from r2med.report.format import ListingFormat, ReportFormat, check_format

    assert REPORT_FORMAT_CHOICE.convert("MD") == "MD" and check_format("MD") is ReportFormat.MARKDOWN
    assert check_format("tex") is ReportFormat.LATEX and REPORT_FORMAT_CHOICE.convert("CSV") is ReportFormat.CSV
    assert LISTING_FORMAT_CHOICE.convert("JSON") is ListingFormat.JSON
    with pytest.raises(R2MedError, match="unknown format 'JSON'; choose from: table, json"):
        LISTING_FORMAT_EXACT.convert("JSON")  # r2med models / reproduce: as written, as before


# -- records built from data refuse unknown fields ----------------------------------------------------------


def test_retriever_meta_from_a_mapping_refuses_an_unknown_key_by_name() -> None:
    from r2med.retrieval.registry import RetrieverMeta

    meta = RetrieverMeta.from_mapping({"name": "x", "factory": dict, "family": "lexical"})
    assert meta.family == "lexical"
    with pytest.raises(R2MedError, match=r"retriever 'x': unknown field 'needs_gpus' \(did you mean 'needs_gpu'\?\)"):
        RetrieverMeta.from_mapping({"name": "x", "factory": dict, "needs_gpus": "7B"})


def test_reranker_meta_from_a_mapping_refuses_an_unknown_key_by_name() -> None:
    from r2med.reranking.base import RerankerMeta

    assert RerankerMeta.from_mapping({"name": "r", "factory": dict, "depth": 100}).depth == 100
    with pytest.raises(R2MedError, match="reranker 'r': unknown field 'deepth'"):
        RerankerMeta.from_mapping({"name": "r", "factory": dict, "deepth": 100})


def test_a_preset_refuses_an_unknown_field_or_fact() -> None:
    from r2med.retrieval.presets import Preset

    Preset("p", "org/m", {"pooling": "cls", "batch_size": 8}, None, None)
    with pytest.raises(R2MedError, match="preset 'p': unknown option 'poolng' \\(did you mean 'pooling'\\?\\)"):
        Preset("p", "org/m", {"poolng": "cls"}, None, None)
    with pytest.raises(R2MedError, match="preset 'p' facts: unknown field 'publishd_as'"):
        Preset("p", "org/m", {}, None, None, facts={"publishd_as": "X"})


def test_every_built_in_preset_and_later_entry_passes_the_check() -> None:
    from r2med.protocol.later_models import later_models, later_reranker, later_retriever
    from r2med.retrieval.later_presets import later_preset
    from r2med.retrieval.presets import DENSE_PRESETS, get_preset

    assert len(DENSE_PRESETS) >= 12
    for name in DENSE_PRESETS:
        get_preset(name)  # built from its fields and facts: unknown keys would be refused here
    for name in later_models()["retrievers"]:
        later_retriever(name)
        later_preset(name)
    for name in later_models()["rerankers"]:
        later_reranker(name)


def test_a_later_models_entry_with_an_unknown_key_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    import copy

    from r2med.protocol import later_models as module
    from r2med.retrieval import later_presets

    data = copy.deepcopy(module.later_models())
    name = next(iter(data["retrievers"]))
    reranker = next(iter(data["rerankers"]))
    data["retrievers"][name]["r2med_encoder"]["pooling_mode"] = "mean"
    monkeypatch.setattr(module, "later_models", lambda: data)
    monkeypatch.setattr(later_presets, "later_retriever", module.later_retriever)
    with pytest.raises(R2MedError, match=f"retriever '{name}' r2med_encoder: unknown field 'pooling_mode'"):
        later_presets.later_preset(name)
    data["retrievers"][name]["hub"] = "x"
    with pytest.raises(R2MedError, match=f"later_models.json: retriever '{name}': unknown field 'hub'"):
        module.later_retriever(name)
    data["rerankers"][reranker]["kinds"] = "x"
    with pytest.raises(R2MedError, match=f"later_models.json: reranker '{reranker}': unknown field 'kinds'"):
        module.later_reranker(reranker)


def test_task_ref_source_is_a_kind_and_a_path(tmp_path: Path) -> None:
    from r2med.data.resolve import TaskRef, resolve

    folder = tmp_path / "mini"
    folder.mkdir()
    (folder / "corpus.jsonl").write_text('{"_id": "d1", "text": "x"}\n')
    (ref,) = resolve(None, data_dir=folder)
    assert ref.kind == "folder" and ref.folder == folder and ref.source == str(folder)
    assert TaskRef.on_hub("Biology").source == "hub" and TaskRef.the_demo().source == "demo"
    with pytest.raises(R2MedError, match="unknown source kind 'web'"):
        TaskRef("Biology", "web")  # type: ignore[arg-type]
    with pytest.raises(R2MedError, match="a folder source needs its folder"):
        TaskRef("Biology", "folder")


def test_preset_fields_type_names_every_preset_field() -> None:
    """The one preset schema (PresetSettings) names the run-time check's keys, and every built-in entry of the
    paper's table parses through it unchanged."""
    from r2med.retrieval.presets import PRESET_FIELD_NAMES, PRESET_FIELDS, PresetSettings, preset_fields
    from r2med.typed.parse import field_names

    assert field_names(PresetSettings) == PRESET_FIELD_NAMES
    for name, fields in PRESET_FIELDS.items():
        assert preset_fields(fields, name) == fields
