"""BRIGHT's retrievers that r2med had no preset for, as dense presets defined from BRIGHT's records (issue 32).

One :class:`~r2med.retrieval.presets.Preset` per ``bright_models.json`` entry with ``defines_preset``:
``sbert`` (sentence-transformers/all-mpnet-base-v2), ``qwen`` (Alibaba-NLP/gte-Qwen1.5-7B-instruct, its own hub
code) and ``voyage-large-2-instruct`` (the Voyage API).  Their settings are BRIGHT's (the entry's ``r2med_encoder``
block, each with its source in ``retrievers.py``), and their home family is BRIGHT: on a BRIGHT task they run
BRIGHT's settings for that task (:meth:`r2med.data.benchmarks.Bright.model_settings`, instructions filled as BRIGHT
fills them); on an R2MED task R2MED has none for them (:mod:`r2med.retrieval.family_settings`: ``qwen``, whose
instructions are per BRIGHT task, is refused unless given ``--set query_instruction=...``; ``sbert`` and
``voyage-large-2-instruct`` run their task-independent settings, warned).

BRIGHT's other retrievers map to presets r2med has (``bm25``, ``bge``, ``e5``, ``sfr``, ``grit``, ``inst-l``,
``inst-xl``, ``openai``, ``gte-qwen2-7b``).  Not defined: ``cohere`` (its embed endpoint is not one r2med's API
encoder speaks, :mod:`r2med.retrieval.encoders.api`) and ``google`` (Vertex AI; BRIGHT's own function cannot run as
published).
"""

from __future__ import annotations

from ..infra.records import refuse_unknown_keys
from ..protocol import bright
from .dense import register_preset
from .presets import ENCODER_BLOCK_KEYS, PRESET_FIELD_NAMES, Preset, preset_fields


def bright_preset(model: bright.BrightModel) -> Preset:
    """The preset a ``defines_preset`` record of ``bright_models.json`` defines."""
    if not model.defines_preset or not model.r2med_preset or not model.model:
        raise ValueError(f"bright_models.json: {model.name!r} defines no preset")  # pragma: no cover - data
    block = model.r2med_encoder
    if block.get("similarity", "cosine") != "cosine":  # Preset.similarity is cosine
        raise ValueError(f"{model.name}: similarity {block['similarity']!r} is not cosine")  # pragma: no cover
    row = {k: v for k, v in block.items() if k in PRESET_FIELD_NAMES and v is not None}  # the rest: read below
    fields = preset_fields(row, f"bright_models.json: model {model.name!r} r2med_encoder")
    if fields.get("loader") in ("openai", "voyage"):
        fields.setdefault("extra", {})
    tables = {
        kind: {
            t.qualified_name: model.instruction(t.name, kind)
            for t in bright.tasks()
            if model.instruction_template(t.name, kind) is not None
        }
        for kind in ("query", "document")
    }
    return Preset(
        name=model.r2med_preset,
        hub_id=model.model,
        fields=fields,
        query_instructions=tables["query"] or None,
        doc_instructions=tables["document"] or None,
        note=f"BRIGHT's {model.display_name} ({model.name}): its settings as BRIGHT's retrievers.py runs it",
        framing=None,
        home="bright",
        kind="BRIGHT preset",
        facts={"provenance": {"sources": model.encoder_sources(), "bright_model": model.name}},
    )


def check_encoder_block(model: bright.BrightModel) -> None:
    """A record's ``r2med_encoder`` block holds only the keys such a block may hold (the one list,
    :data:`~.presets.ENCODER_BLOCK_KEYS`, the later models' blocks share); else a packaging error naming the model
    and the key."""
    refuse_unknown_keys(
        model.r2med_encoder, ENCODER_BLOCK_KEYS, f"bright_models.json: model {model.name!r} r2med_encoder"
    )


for _model in bright.models().values():
    check_encoder_block(_model)
    if _model.defines_preset:
        register_preset(bright_preset(_model))
