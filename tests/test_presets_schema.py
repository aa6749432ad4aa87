"""One preset schema (``PresetSettings``) for the three sources of dense presets -- the paper's table
(retrieval/presets.py), BRIGHT's records (bright_models.json) and the later models' (later_models.json): each loads
through it, and a bad row is one line naming its source, its row and the field."""

from __future__ import annotations

import copy
import dataclasses

import pytest

import r2med.retrieval.bright_presets as bright_presets
import r2med.retrieval.later_presets as later_presets
import r2med.retrieval.presets as presets
from r2med.errors import R2MedError
from r2med.protocol import bright
from r2med.protocol.later_models import later_models, later_retriever
from r2med.retrieval.presets import PRESET_FIELD_NAMES, PresetSettings, preset_fields
from r2med.typed.parse import field_names


def _defining_bright_model() -> bright.BrightModel:
    return next(m for m in bright.models().values() if m.defines_preset)


def test_the_three_sources_load_through_the_one_schema():
    assert field_names(PresetSettings) == PRESET_FIELD_NAMES
    assert presets.ENCODER_BLOCK_KEYS[: len(PRESET_FIELD_NAMES)] == PRESET_FIELD_NAMES
    loaded = [presets.get_preset(n) for n in presets.DENSE_PRESETS]
    loaded.append(bright_presets.bright_preset(_defining_bright_model()))
    loaded += [later_presets.later_preset(n) for n in later_models()["retrievers"]]
    assert {p.home for p in loaded} == {"r2med", "bright"} and any(p.facts.get("later") for p in loaded)
    for preset in loaded:
        assert set(preset.fields) <= set(PRESET_FIELD_NAMES)
        assert preset_fields(preset.fields, preset.name) == preset.fields  # already in the schema's form
    # by hand, from the table's comment: Contriever is mean pooling, no normalisation, fp32, 128 a batch
    contriever = presets.get_preset("contriever").fields
    assert {k: contriever[k] for k in ("pooling", "normalize", "dtype", "batch_size")} == {
        "pooling": "mean",
        "normalize": False,
        "dtype": "fp32",
        "batch_size": 128,
    }
    assert presets.get_preset("inst-l").fields["max_length"] is None  # a None kept: the model's own length


def test_a_bad_row_of_the_papers_table_names_it_and_the_field(monkeypatch):
    monkeypatch.setitem(presets.PRESET_FIELDS, "contriever", {**presets.PRESET_FIELDS["contriever"], "pooling": "max"})
    with pytest.raises(R2MedError) as info:
        presets.get_preset("contriever")
    assert str(info.value) == (
        "the paper's presets (retrieval/presets.py): 'contriever': pooling: expected one of: cls, mean, last-token, "
        "got 'max'"
    )


def test_a_bad_row_of_brights_records_names_it_and_the_field():
    model = _defining_bright_model()
    bad = dataclasses.replace(model, r2med_encoder={**model.r2med_encoder, "batch_size": "8"})
    with pytest.raises(R2MedError) as info:
        bright_presets.bright_preset(bad)
    assert str(info.value) == (
        f"bright_models.json: model {model.name!r} r2med_encoder: batch_size: expected an integer >= 1, got '8'"
    )


def test_a_bad_row_of_the_later_models_names_it_and_the_field(monkeypatch):
    name = next(iter(later_models()["retrievers"]))
    entry = copy.deepcopy(later_retriever(name))
    entry["r2med_encoder"]["normalize"] = "yes"
    monkeypatch.setattr(later_presets, "later_retriever", lambda _: entry)
    with pytest.raises(R2MedError) as info:
        later_presets.later_preset(name)
    assert str(info.value) == (
        f"later_models.json: retriever {name!r} r2med_encoder: normalize: expected true or false, got 'yes'"
    )


def test_a_preset_built_in_python_is_checked_by_the_same_schema():
    with pytest.raises(R2MedError, match=r"^preset 'mine': unknown option 'pooler' \(did you mean 'pooling'\?\)"):
        presets.Preset("mine", "org/model", {"pooler": "cls"}, None, None)


def test_an_r2med_encoder_block_of_either_file_takes_only_the_one_list_of_keys():
    """BRIGHT's and the later models' ``r2med_encoder`` blocks are checked against one list (the preset fields and
    the keys read on their own): an unknown key in BRIGHT's block is refused naming the model and the key."""
    model = _defining_bright_model()
    bright_presets.check_encoder_block(model)  # the packaged block passes
    bad = dataclasses.replace(model, r2med_encoder={**model.r2med_encoder, "pooling_mode": "mean"})
    with pytest.raises(R2MedError, match=f"model {model.name!r} r2med_encoder: unknown field 'pooling_mode'"):
        bright_presets.check_encoder_block(bad)
    assert set(presets.ENCODER_BLOCK_KEYS) >= {"similarity", "framing", "sources", *PRESET_FIELD_NAMES}
