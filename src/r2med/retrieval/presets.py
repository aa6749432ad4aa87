"""The R2MED paper's dense retrievers as presets: data, resolved per task into ``EncoderSettings``.

A preset is a data record: an entry of :data:`PRESET_FIELDS` (plus its row in the protocol data)
becomes a registered retriever with its :class:`~r2med.retrieval.registry.RetrieverMeta`
(:func:`preset_meta`) -- nothing else needs to know its name.  Presets from other data (later
models) are :class:`Preset` records registered with :func:`r2med.retrieval.dense.register_preset`.

Hub ids, max lengths, normalisation and instructions come from the package's protocol data
(``r2med_models.json`` / ``r2med_protocol.json``, carried from the R2MED repository at commit
62b7074); :data:`PRESET_FIELDS` adds what those files leave implicit (loader, pooling name,
precision, EOS handling, batch size), read from the published code -- ``src/eval_bench.py`` (the
retriever set-up, later renamed ``eval_retrieval.py``) and ``src/utils.py`` (the encoder classes)
at commit 45cbac5; the comments cite file:line there.
Instruction tables are keyed by the hub task names (``Biology``, ``PMC-Clinical``...).

Scoring is cosine for every preset: the paper's ``retrieval_by_dense`` scores all retrievers
with BEIR's ``cos_sim`` (``eval_bench.py:150``, passed to ``EvaluateRetrieval`` at 168; the
call at 312 keeps that default), whether or not the encoder normalises its vectors -- which
still matters for (query, expansion) pairs, whose raw vectors are averaged before scoring.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import Field, field_validator

from ..errors import R2MedError
from ..infra.json_types import JsonObject, JsonValue
from ..infra.records import field_names, refuse_unknown_keys
from ..protocol import models, protocol
from ..typed.dense_choices import Dtype, Pooling
from ..typed.parse import Count, Origin, Spec, parse
from ..typed.parse import field_names as spec_fields
from .encoders import EncoderSettings, FramingRecord
from .encoders.base import LOADERS
from .registry import DENSE_EXTRA, RetrieverMeta

if TYPE_CHECKING:
    from ..data.benchmarks import ModelSettings

log = logging.getLogger(__name__)

#: How every paper retriever is scored (eval_bench.py:150 ``score_function="cos_sim"``).
PAPER_SIMILARITY = "cosine"


class PresetSettings(Spec):
    """The one schema of a preset's fields, whatever holds them -- the paper's table (:data:`PRESET_FIELDS`),
    BRIGHT's (``bright_models.json``: a record's ``r2med_encoder``, :mod:`.bright_presets`), the later models'
    (``later_models.json``, :mod:`.later_presets`) or a :class:`Preset` built in Python: encoder settings
    (:class:`EncoderSettings`' own names; those resolved per run or per task are not a preset's) and registry facts.
    Each source parses its rows through it (:func:`preset_fields`): a bad row is one line naming the source, the
    row and the field."""

    loader: str | None = Field(default=None, json_schema_extra={"expected": "one of: " + ", ".join(LOADERS)})
    pooling: str | None = Field(default=None, json_schema_extra={"expected": "one of: " + ", ".join(Pooling)})
    normalize: bool | None = None
    #: None: the model's own maximum (a key set to None is kept: it is no default's place to fill)
    max_length: Count | None = None
    query_max_length: Count | None = None
    expansion_instruction: str | None = None
    append_eos: bool | None = None
    doc_as_pair: bool | None = None
    trust_remote_code: bool | None = None
    dtype: str | None = Field(default=None, json_schema_extra={"expected": "one of: " + ", ".join(Dtype)})
    extra: dict[str, JsonValue] | None = None
    #: texts per batch
    batch_size: Count | None = None
    #: too large for a CPU: its size ("7B")
    needs_gpu: str | None = None
    #: Python packages beyond the ``dense`` extra, with how to install them
    packages: tuple[tuple[str, ...], str] | None = None
    #: an embedding API: the variable holding its key
    api_key_env: str | None = None
    #: the precision its published code falls back to on a CPU (used there unless --dtype says)
    cpu_dtype: str | None = Field(default=None, json_schema_extra={"expected": "one of: " + ", ".join(Dtype)})

    @field_validator("loader")
    @classmethod
    def _loader(cls, value: str) -> str:
        return _one_of(value, LOADERS)

    @field_validator("pooling")
    @classmethod
    def _pooling(cls, value: str) -> str:
        return _one_of(value, tuple(Pooling))

    @field_validator("dtype", "cpu_dtype")
    @classmethod
    def _dtype(cls, value: str) -> str:
        return _one_of(value, tuple(Dtype))


def _one_of(value: str, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise ValueError(f"expected one of: {', '.join(choices)}, got {value!r}")
    return value


#: The keys a preset's ``fields`` may hold: :class:`PresetSettings`' fields.
PRESET_FIELD_NAMES: tuple[str, ...] = spec_fields(PresetSettings)
#: Every key an ``r2med_encoder`` block of the package data may hold (BRIGHT's ``bright_models.json``, the later
#: models' ``later_models.json``): the preset fields, and those read on their own (the similarity, the instruction
#: template and document prefix, the framing, the settings' sources).
ENCODER_BLOCK_KEYS: tuple[str, ...] = (
    *PRESET_FIELD_NAMES,
    "similarity",
    "query_instruction_template",
    "doc_instruction",
    "framing",
    "sources",
)


#: what one of a preset's fields holds (:class:`PresetSettings`' field types)
PresetValue = str | bool | int | dict[str, JsonValue] | tuple[tuple[str, ...], str] | None


def preset_fields(values: Mapping[str, object], where: str) -> dict[str, PresetValue]:
    """``values`` (one source's row) checked against :class:`PresetSettings`, in their order -- a key set to None
    kept (``max_length = None``: the model's own) -- or one line naming ``where`` (the source and its row) and
    the field."""
    checked = parse(PresetSettings, values, Origin.file(where))
    return {k: None if values[k] is None else getattr(checked, k) for k in values}


#: Per-preset fields that the protocol JSON does not spell out as values.  Besides the encoder settings:
#: ``batch_size`` (texts per batch), ``needs_gpu`` (too large for a CPU: its size), ``packages`` (Python
#: packages beyond the ``dense`` extra, with how to install them), ``api_key_env`` (an embedding API: the
#: variable holding its key).
PRESET_FIELDS: dict[str, dict[str, object]] = {
    # Contriever: FlagDRESModel, mean pooling, no normalisation (eval_bench.py:216-218), 512 tokens
    # (utils.py:42 default); AutoModel.from_pretrained without a dtype = fp32 (utils.py:47).
    "contriever": {"loader": "transformers", "pooling": "mean", "normalize": False, "dtype": "fp32", "batch_size": 128},
    # MedCPT: BiEncoderModel, CLS of each encoder, no normalisation, 512 tokens (eval_bench.py:253-256);
    # docs as ("", text) pairs (utils.py:392-397); fp32 (utils.py:297-299).
    "medcpt": {
        "loader": "transformers",
        "pooling": "cls",
        "normalize": False,
        "doc_as_pair": True,
        "dtype": "fp32",
        "batch_size": 128,
    },
    # INSTRUCTOR: SentenceTransformer (utils.py:211, fp32), prompt excluded from pooling (212), the
    # model's own max_seq_length (the override at 214 is commented out), normalised (280).
    "inst-l": {
        "loader": "sentence-transformers",
        "normalize": True,
        "max_length": None,
        "dtype": "fp32",
        "expansion_instruction": "query",
        "extra": {"exclude_prompt_from_pooling": True},
    },
    "inst-xl": {
        "loader": "sentence-transformers",
        "normalize": True,
        "max_length": None,
        "dtype": "fp32",
        "expansion_instruction": "query",
        "extra": {"exclude_prompt_from_pooling": True},
        "needs_gpu": "1.5B",
    },
    # BMRetriever ("BMR" mode): truncate to max_length - 1, append EOS (utils.py:155, 162), left padding
    # (54), last token; never normalised (the BMR branch, 148-167); fp32 weights under
    # torch.cuda.amp.autocast() = fp16 autocast on GPU (161; 528 for bmr-7b's HighScaleModel).
    "bmr-410m": {
        "loader": "transformers",
        "pooling": "last-token",
        "append_eos": True,
        "normalize": False,
        "dtype": "fp16-autocast",
        "batch_size": 64,
    },
    "bmr-2b": {
        "loader": "transformers",
        "pooling": "last-token",
        "append_eos": True,
        "normalize": False,
        "dtype": "fp16-autocast",
        "batch_size": 16,
        "needs_gpu": "2B",
    },
    "bmr-7b": {
        "loader": "transformers",
        "pooling": "last-token",
        "append_eos": True,
        "normalize": False,
        "dtype": "fp16-autocast",
        "batch_size": 8,
        "needs_gpu": "7B",
    },
    # BGE: FlagDRESModel, CLS, normalised (utils.py:38 default), 512 tokens (eval_bench.py:231-234), fp32 (47).
    "bge": {"loader": "transformers", "pooling": "cls", "normalize": True, "dtype": "fp32", "batch_size": 128},
    # E5-Mistral / SFR: HighScaleModel "Base" mode, last token, no EOS, normalised, 2048 tokens
    # (eval_bench.py:225-229; utils.py:496-511); fp32 (utils.py:422, no dtype).
    "e5": {
        "loader": "transformers",
        "pooling": "last-token",
        "normalize": True,
        "dtype": "fp32",
        "batch_size": 8,
        "needs_gpu": "7B",
    },
    "sfr": {
        "loader": "transformers",
        "pooling": "last-token",
        "normalize": True,
        "dtype": "fp32",
        "batch_size": 8,
        "needs_gpu": "7B",
    },
    # GritLM: the gritlm package with torch_dtype="auto" (utils.py:578), docs 2048 / queries 512 tokens
    # (573-574), its encode() output as is (no normalisation, 632).
    "grit": {
        "loader": "gritlm",
        "normalize": False,
        "max_length": 2048,
        "query_max_length": 512,
        "dtype": "auto",
        "expansion_instruction": "query",
        "batch_size": 8,
        "needs_gpu": "7B",
        "packages": (("gritlm",), "pip install 'r2med[dense]' gritlm"),
    },
    # NV-Embed-v2: the model's own encode(texts, instruction, max_length) (utils.py:704), which appends
    # EOS itself -- so no append_eos; fp16 (649), normalised (705-706), 4096 tokens (eval_bench.py:267).
    "nv": {
        "loader": "remote-code",
        "normalize": True,
        "dtype": "fp16",
        "trust_remote_code": True,
        "expansion_instruction": "query",
        "batch_size": 8,
        "needs_gpu": "7B",
    },
    "openai": {
        "loader": "openai",
        "normalize": False,
        "batch_size": 128,
        "expansion_instruction": "query",
        "api_key_env": "OPENAI_API_KEY",
    },
    "voyage": {
        "loader": "voyage",
        "normalize": False,
        "batch_size": 128,
        "expansion_instruction": "query",
        "api_key_env": "VOYAGE_API_KEY",
    },
}

#: The special tokens around each text in the paper presets' published runs (issues 20, 26), named by their
#: text.  r2med builds them itself for the transformers loader (:attr:`EncoderSettings.framing`), whatever the
#: tokenizer's post-processor adds -- which depends on the transformers version for e5-mistral and SFR, whose
#: ``tokenizer_config.json`` (``add_eos_token: true``) and ``tokenizer.json`` (only ``<s>``) disagree.
#: BERT-style presets (contriever, medcpt, bge: ``[CLS] text [SEP]``, consistent files) have no record.
_E5_CODE = (
    "R2MED src/utils.py:496-511 HighScaleModel 'Base' mode (eval_bench.py:225-229): a plain tokenizer(...) "
    "call, then the last token pooled"
)
_BMR_CODE = (
    "R2MED src/utils.py:155, 162 (BMR mode: tokenizer(..., max_length - 1), then tokenizer.eos_token_id appended "
    "-- the EOS by role; its text for the checkpoint"
)
PAPER_FRAMING: dict[str, FramingRecord] = {
    "e5": FramingRecord(
        "<s> {text} </s>",
        "tokenizer",
        (
            "intfloat/e5-mistral-7b-instruct tokenizer_config.json add_eos_token: true, bos <s>, eos </s> (its "
            "tokenizer.json post-processor adds only <s>; transformers < 5 rebuilt it from the config as <s> $A </s>, "
            f"transformers >= 5 does not: mteb pull request #5237); {_E5_CODE}"
        ),
    ),
    "sfr": FramingRecord(
        "<s> {text} </s>",
        "tokenizer",
        (
            "Salesforce/SFR-Embedding-Mistral tokenizer_config.json add_eos_token: true, bos <s>, eos </s> (the same "
            f"LlamaTokenizer files as e5-mistral); {_E5_CODE}"
        ),
    ),
    "bmr-410m": FramingRecord(
        "{text} <|endoftext|>",
        "r2med",
        (
            f"EOS: {_BMR_CODE} ASSUMED <|endoftext|>, id 0: a Pythia-410M fine-tune, whose GPT-NeoX tokenizer "
            "names <|endoftext|> its BOS, EOS and UNK); BOS: ASSUMED none (the GPT-NeoX tokenizer adds none)"
        ),
    ),
    "bmr-2b": FramingRecord(
        "<bos> {text} <eos>",
        "r2med",
        (
            f"EOS: {_BMR_CODE} ASSUMED <eos>, id 1: a Gemma-2B fine-tune); BOS: ASSUMED <bos>, id 2 (the Gemma "
            "tokenizer prepends it: add_bos_token true)"
        ),
    ),
    "bmr-7b": FramingRecord(
        "<s> {text} </s>",
        "r2med",
        (
            f"EOS: {_BMR_CODE} ASSUMED </s>, id 2: a BioMistral-7B fine-tune); BOS: ASSUMED <s>, id 1 (the Mistral "
            "tokenizer prepends it: add_bos_token true)"
        ),
    ),
    "nv": FramingRecord(
        "<s> {text} </s>",
        "model",
        (
            "R2MED src/utils.py:704 model.encode(texts, instruction, max_length): nvidia/NV-Embed-v2's own encode() "
            "appends the EOS text (tokenizer.eos_token: </s>) to each input (always_add_eos) and tokenizes itself, "
            "so r2med adds none; BOS: ASSUMED <s> (its Mistral-7B tokenizer)"
        ),
        checked=False,
    ),
    "grit": FramingRecord(
        "<s> {text}",
        "model",
        (
            "R2MED src/utils.py:578-632: the gritlm package's GritLM.encode() builds and tokenizes its own inputs "
            "('<|user|>\\n{instruction}\\n<|embed|>\\n' + text, mean-pooled over the text); ASSUMED: <s> from its "
            "Mistral tokenizer, no EOS"
        ),
        checked=False,
    ),
}

DENSE_PRESETS = tuple(PRESET_FIELDS)
#: Fields of a preset entry that describe the retriever rather than the vectors (not encoder settings);
#: ``cpu_dtype``: the precision its published code falls back to on a CPU (used there unless --dtype says).
REGISTRY_FIELDS = ("batch_size", "needs_gpu", "packages", "api_key_env", "cpu_dtype")
#: Options that change what a preset computes (batch size and device do not; dtype widens the tolerance):
#: a run that sets any of them is not the paper's configuration.
PRESET_OVERRIDES = ("model", "pooling", "max_length", "query_instruction", "doc_instruction", "normalize", "framing")


@dataclass(frozen=True)
class Preset:
    """One paper retriever: its settings with per-task instructions still unresolved."""

    name: str
    hub_id: str
    fields: dict[str, PresetValue]  # its source's row, checked by preset_fields (PresetSettings)
    query_instructions: dict[str, str] | str | None
    doc_instructions: dict[str, str] | str | None
    note: str = ""
    #: a separate query encoder (MedCPT's Query encoder; ``hub_id`` is then the Article encoder)
    query_hub_id: str | None = None
    #: the special tokens around each text in its published runs (None: the tokenizer's, not fixed by r2med)
    framing: FramingRecord | None = None
    #: more facts of its registry record (:class:`~r2med.retrieval.registry.RetrieverMeta` fields: a later
    #: model's ``published_as``, ``later``, ``provenance``, ``tolerance``)
    facts: Mapping[str, object] = field(default_factory=dict)
    #: the benchmark family whose settings these are (``r2med``; ``bright`` for the presets defined from BRIGHT's
    #: records): on another family's task, that family's own settings run where it has any
    #: (:mod:`r2med.retrieval.family_settings`)
    home: str = "r2med"
    #: how ``r2med models`` calls it (a later model's record: ``later work``)
    kind: str = "paper preset"

    def __post_init__(self) -> None:
        preset_fields(self.fields, f"preset {self.name!r}")  # its source checked it; one built in Python too

        refuse_unknown_keys(self.facts, field_names(RetrieverMeta), f"preset {self.name!r} facts")

    @property
    def batch_size(self) -> int:
        size = self.fields.get("batch_size")
        return size if isinstance(size, int) else 32

    @property
    def similarity(self) -> str:
        """How the paper scores this retriever (cosine for all of them)."""
        return PAPER_SIMILARITY

    @property
    def dtype(self) -> str | None:
        """The precision the paper's code ran this model in (None for API embedders)."""
        dtype = self.fields.get("dtype")
        return dtype if isinstance(dtype, str) else None

    def per_task(self) -> bool:
        return isinstance(self.query_instructions, dict) or isinstance(self.doc_instructions, dict)

    def describe(self) -> JsonObject:
        """A JSON-able summary for ``r2med models``."""
        f: JsonObject = {
            k: v
            for k, v in self.fields.items()
            if k not in ("extra", "needs_gpu", "packages", "api_key_env", "cpu_dtype")
            and not isinstance(v, (dict, tuple))  # (what is left: settings, each a text, number, flag or None)
        }
        f.setdefault("append_eos", False)
        if f.get("max_length", 0) is None:
            f["max_length"] = "model's own"
        f["similarity"] = self.similarity
        f["dtype"] = self.dtype or "api"
        f["framing"] = self.framing.describe() if self.framing else None
        cpu_dtype = self.fields.get("cpu_dtype")
        if isinstance(cpu_dtype, str) and cpu_dtype:
            f["cpu_dtype"] = cpu_dtype
        hub_id = self.hub_id
        if self.query_hub_id:  # two encoders (MedCPT): queries through the Query encoder by default
            hub_id = f"{self.query_hub_id} (queries) + {self.hub_id} (docs)"
        return {
            "hub_id": hub_id,
            **f,
            "query_instruction": "per task" if isinstance(self.query_instructions, dict) else self.query_instructions,
            "doc_instruction": "per task" if isinstance(self.doc_instructions, dict) else self.doc_instructions,
            **({"note": self.note} if self.note else {}),
        }

    def settings(
        self,
        task: str | None = None,
        medcpt_published: bool = False,
        family: ModelSettings | None = None,
        # Any: each override is its option's own type, forwarded by field name to EncoderSettings (which types it)
        **overrides: Any,
    ) -> EncoderSettings:
        """The encoder settings for ``task`` (hub task name), with user overrides applied; ``family``: another
        family's own settings for this model on ``task`` (:meth:`r2med.data.benchmarks.Bright.model_settings`),
        which replace the preset's encoder settings (the user's overrides still apply on top)."""
        # Any: the preset's fields, a family's and the overrides, by EncoderSettings' field names (which types them)
        fields: dict[str, Any] = {k: v for k, v in self.fields.items() if k not in REGISTRY_FIELDS}
        if family is not None:
            fields.update({**_unset_by_family(), **family.encoder})  # its fields, r2med's defaults for the rest
        else:
            if self.framing is not None and self.framing.checked:  # r2med builds / checks these tokens
                fields["framing"] = self.framing.encoder_framing  # the tokenizer's own (checked) for an assumed one
            fields["query_instruction"] = _instruction(self, self.query_instructions, task, "query")
            fields["doc_instruction"] = _instruction(self, self.doc_instructions, task, "document")
        if self.query_hub_id:  # MedCPT: a Query encoder beside the Article encoder
            fields["query_model"] = self.hub_id if medcpt_published else self.query_hub_id
        fields.update({k: v for k, v in overrides.items() if v is not None})
        if self.query_hub_id and "model" in overrides and "query_model" not in overrides and overrides["model"]:
            fields["query_model"] = None  # a user model replaces both encoders
        fields.setdefault("model", self.hub_id)
        return EncoderSettings(**fields)


def _unset_by_family() -> dict[str, object]:
    """What a family's encoder settings leave unset, as r2med's encoders' defaults: every field is set, so nothing of
    the preset's own family leaks in (``expansion_instruction`` stays the preset's: r2med's rule for expansions)."""
    skip = ("model", "query_model", "model_revision", "query_instruction", "doc_instruction", "expansion_instruction")
    return {k: v for k, v in asdict(EncoderSettings(model="")).items() if k not in skip}


def _instruction(preset: Preset, table: dict[str, str] | str | None, task: str | None, kind: str) -> str:
    if table is None or isinstance(table, str):
        return table or ""
    if task in table:
        return table[task]
    log.warning(
        "%s has per-task %s instructions for the %s tasks only; %r gets none "
        "(pass query_instruction/doc_instruction to choose one)",
        preset.name,
        kind,
        preset.home.upper(),
        task,
    )
    return ""


#: Presets added at run time (:func:`r2med.retrieval.dense.register_preset`), e.g. from another data file.
_ADDED: dict[str, Preset] = {}


def add_preset(preset: Preset) -> Preset:
    """Make ``preset`` known by name (its retriever record: :func:`r2med.retrieval.dense.register_preset`)."""
    if preset.name in PRESET_FIELDS or _ADDED.get(preset.name, preset) != preset:
        raise ValueError(f"dense preset {preset.name!r} is already defined")
    _ADDED[preset.name] = preset
    return preset


def get_preset(name: str) -> Preset:
    if name in _ADDED:
        return _ADDED[name]
    if name not in PRESET_FIELDS:
        raise R2MedError(f"unknown dense preset {name!r}; choose from: {', '.join((*DENSE_PRESETS, *_ADDED))}")
    spec = models()["retrievers"][name]
    proto = protocol()
    fields = preset_fields(PRESET_FIELDS[name], f"the paper's presets (retrieval/presets.py): {name!r}")
    for key in ("max_length", "normalize", "batch_size"):
        if spec.get(key) is not None:
            fields.setdefault(key, spec[key])
    if fields.get("api_key_env"):  # an embedding API: texts cut to the provider's token limit
        fields["extra"] = {"truncate_tokens": spec.get("truncate_tokens")}
        fields.setdefault("max_length", int(spec.get("truncate_tokens") or 8000))
    if fields.get("loader") != "sentence-transformers":
        fields.setdefault("max_length", 512)  # the paper's encoder classes default to 512 (utils.py:42)
    hub_id = spec.get("hub_id") or spec.get("hub_id_doc") or spec.get("api_model")
    if hub_id is None:  # pragma: no cover - every dense retriever of the protocol data names its checkpoint
        raise R2MedError(f"protocol data names no checkpoint for {name}")
    query_table = proto["query_instruction"].get(name, spec.get("query_instruction"))
    doc_table = proto["doc_instruction"].get(name, spec.get("doc_instruction"))
    if isinstance(query_table, str) and query_table.startswith("per task"):
        raise R2MedError(f"protocol data lacks the {name} query instruction table")  # pragma: no cover
    return Preset(
        name=name,
        hub_id=hub_id,
        fields=fields,
        query_instructions=query_table,
        doc_instructions=doc_table,
        note=spec.get("note", ""),
        query_hub_id=spec.get("hub_id_query"),
        framing=PAPER_FRAMING.get(name),
    )


def preset_meta(name: str) -> dict[str, object]:
    """The registry facts of preset ``name`` (:class:`~r2med.retrieval.registry.RetrieverMeta` fields)."""
    preset = get_preset(name)
    api_key, packages = preset.fields.get("api_key_env"), preset.fields.get("packages")
    kind = "later work" if preset.facts.get("later") else preset.kind
    paper: JsonObject = {"similarity": preset.similarity}
    if preset.query_hub_id:  # MedCPT: the published figures encoded queries with the Article encoder
        paper["medcpt_published"] = True  # (eval_bench.py:253-254); r2med's default, the Query encoder, is
        # recorded as such (MedcptOptions.medcpt_published = False), so it is never graded against them
    return {
        "description": f"{kind}: {preset.describe()['hub_id']}",
        "family": "dense",
        "hub_id": None if api_key else preset.hub_id,
        "api_key_env": api_key,
        "needs_gpu": preset.fields.get("needs_gpu"),
        "trust_remote_code": bool(preset.fields.get("trust_remote_code")),
        "extra": None if api_key else _extra(packages if isinstance(packages, tuple) else None, DENSE_EXTRA),
        "tolerance": "api" if api_key else "dense",
        "paper_dtype": preset.dtype,
        "cpu_dtype": preset.fields.get("cpu_dtype"),
        "paper": paper,
        "overrides": PRESET_OVERRIDES,
        "summary": preset.describe(),
        "home": preset.home,
        **preset.facts,
    }


def _extra(
    packages: tuple[tuple[str, ...], str] | None, base: tuple[tuple[str, ...], str]
) -> tuple[tuple[str, ...], str]:
    """The dense extra's packages, plus a preset's own (with its install line)."""
    if packages is None:
        return base
    modules, install = packages
    return (tuple(dict.fromkeys((*(m for m in base[0] if m != "sentence_transformers"), *modules))), install)
