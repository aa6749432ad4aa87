"""The embedders published on R2MED after the paper, as dense presets (issue 14).

One :class:`~r2med.retrieval.presets.Preset` record per ``retrievers`` entry of
``protocol/later_models.json`` (``reasonembed-qwen3-8b``, ``qwen3-emb-8b``, ``rader-7b``,
``reasonir-8b``...), registered like the paper's presets: its encoder settings are the entry's
``r2med_encoder`` block, its query prefix per task the entry's template filled with the task's
instruction, and its registry record says what else the entry says -- the published CSV row it
reproduces (``published_as``), the size that needs a GPU, the precision on a GPU and on a CPU, the
sources and gaps of its settings (``provenance``), and its tolerance class:

* ``dense-fp16`` for figures published from an fp16 forward pass (the FlagEmbedding harness);
* ``dense`` for the others (ReasonIR-8B: the checkpoint's bf16);
* ``assumed`` when the entry's settings are r2med's assumption (gte-Qwen2-7B-instruct): the report
  shows the delta to the published figure but grades nothing.

Its ``framing`` block (BOS / EOS around each text, who added them in the published run, the source)
becomes the preset's :class:`~r2med.retrieval.encoders.FramingRecord`, which r2med builds whatever the
tokenizer adds.
"""

from __future__ import annotations

from ..infra.records import refuse_unknown_keys
from ..protocol.later_models import (
    LaterRetriever,
    later_models,
    later_retriever,
    needs_gpu,
    provenance,
    query_instructions,
)
from .dense import register_preset
from .encoders import FramingRecord
from .presets import ENCODER_BLOCK_KEYS, PRESET_FIELD_NAMES, Preset, preset_fields


def tolerance_class(entry: LaterRetriever) -> str:
    """The entry's tolerance class (:data:`r2med.infra.registry.TOLERANCES`), from its data."""
    if entry.get("assumed"):
        return "assumed"
    encoder = entry["r2med_encoder"]
    return "dense-fp16" if isinstance(encoder, dict) and encoder.get("dtype") == "fp16" else "dense"


def later_preset(name: str) -> Preset:
    """The preset record of the ``retrievers`` entry ``name`` of ``later_models.json``."""
    entry = later_retriever(name)
    encoder = entry["r2med_encoder"]
    refuse_unknown_keys(encoder, ENCODER_BLOCK_KEYS, f"later_models.json: retriever {name!r} r2med_encoder")
    if encoder.get("similarity", "cosine") != "cosine":  # every later figure is cosine (Preset.similarity)
        raise ValueError(f"{name}: later_models.json names similarity {encoder['similarity']!r}")  # pragma: no cover
    fields = preset_fields(
        {k: v for k, v in encoder.items() if k in PRESET_FIELD_NAMES},
        f"later_models.json: retriever {name!r} r2med_encoder",
    )
    fields["needs_gpu"] = needs_gpu(entry)
    facts = {
        "published_as": entry["published"]["retriever"],
        "later": True,
        "provenance": provenance(entry),
        "tolerance": tolerance_class(entry),
    }
    note = f"later work: {entry['display_name']}" + (" (settings assumed)" if entry.get("assumed") else "")
    framing = FramingRecord.from_data(encoder["framing"]) if "framing" in encoder else None
    return Preset(
        name=name,
        hub_id=entry["settings"]["hub_id"],
        fields=fields,
        query_instructions=query_instructions(name),
        doc_instructions=encoder["doc_instruction"],
        note=note,
        facts=facts,
        framing=framing,
    )


for _name in later_models()["retrievers"]:
    register_preset(later_preset(_name))
