"""The options types: what each retriever, reranker, fusion and expansion takes, with its constraints.

One :class:`~r2med.typed.parse.Spec` per kind of model, named by its registry record
(:attr:`r2med.retrieval.registry.RetrieverMeta.options`, :attr:`r2med.reranking.base.RerankerMeta.options`):

* retrievers: :class:`Bm25Options` (``bm25``, ``bm25-standard``), :class:`DenseOptions` (``dense``: ``model``
  required), :class:`PresetOptions` (every dense preset, the later ones and API embedders; ``model`` overrides
  the preset's), :class:`MedcptOptions` (``medcpt``: also ``medcpt_published``), :class:`CustomEncoderOptions`
  (``custom``: ``encoder`` required) and :class:`EntryPointEncoderOptions` (a package's encoder);
* rerankers: :class:`CrossEncoderOptions` (``bge-reranker``, ``monobert``; ``cross-encoder`` needs ``model``),
  :class:`RankLlamaOptions`, :class:`Qwen3Options`; behind an LLM endpoint, on one base (:class:`LlmEndpointOptions`:
  the endpoint, the requests, the sampling, and the client they name), :class:`ReasonRankOptions`,
  :class:`ListwiseOptions` and :class:`BrightLlmOptions` (and ``r2med expand``'s LLM, :class:`ExpandLlmOptions`);
  :class:`BrightCrossEncoderOptions` (BRIGHT's rerank.py conventions),
  :class:`CustomScorerOptions` (``custom``: ``scorer`` required) and :class:`EntryPointScorerOptions`;
* :class:`FusionOptions` (``r2med fuse``, ``[[fusion]]``).

Values keep the spelling they were given (``dtype = "float16"``, ``analyzer = "python"``): the code behind reads
and records them as before.  A field set to None is "not set": the model's own default applies, and it is left
out of the record (``metrics.json``'s ``options``), as it always was.

A model's own commit is ``model_revision`` (``--set model_revision=``, ``model_revision = ...`` in a table), and
the models record it by that name (the encoder settings and record, a reranker's ``config()``): a step's flat
``revision`` is the data's (:attr:`r2med.steps.Data.revision`, ``--revision``), which is what the option's old
name, ``revision``, was read as from the command line and a file.  A record written before the rename (a model's
``revision``) is read as ``model_revision`` by the record's reader (:func:`r2med.runs.record.upgrade_model_revision`).

``model_claim`` (a dense encoder's, and a reranker's whose ``model`` may be a local folder: the cross-encoders,
Qwen3, BRIGHT's cross-encoder) is the hub checkpoint the user says the folder holds: recorded, read by grading
(:func:`r2med.results.grading.claimed_checkpoint`), never read by the model (each model reads its own fields).
"""

from __future__ import annotations

from typing import Annotated, Literal, Protocol, TypeVar

from pydantic import Field, ValidationInfo, field_validator, model_validator

from ..errors import OptionError
from ..infra.json_types import JsonObject
from ..infra.llm import LLMClient
from ..runs.fusion import RRF_K
from ..runs.fusion_choices import FusionMethod, Normalisation
from .dense_choices import DTYPE_SPELLINGS, Pooling, Similarity
from .lexical_choices import ANALYZER_ALIASES, AnalyzerName
from .model_source import claim_problem, missing_model_path, revision_problem
from .parse import (
    Count,
    NonNegative,
    NonNegativeInt,
    Positive,
    RefName,
    RerankerOptions,
    RetrieverOptions,
    Share,
    Spec,
    is_recorded,
)

#: the choices of the fields below, as their text
POOLINGS = tuple(p.value for p in Pooling)
SIMILARITIES = tuple(s.value for s in Similarity)
ANALYZERS = (*(a.value for a in AnalyzerName), *ANALYZER_ALIASES)
LOADERS = ("auto", "transformers", "sentence-transformers", "remote-code", "gritlm", "openai", "voyage")


def _choice(value: object, choices: tuple[str, ...], what: str, fold: bool = False) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError(f"expected one of: {', '.join(choices)}, got {value!r}")
    if (value.lower() if fold else value) not in choices:
        raise ValueError(f"unknown {what} {value!r}; choose from: {', '.join(choices)}")
    return value


# the extra facts of a field (pydantic's ``json_schema_extra``, a JSON object): the keys :mod:`r2med.typed.parse`
# reads (``flag``, ``record``, ``scores``, ``compare``, ``expected``)
#: a field the command line sets as ``--set name=value`` (no flag of its own)
SET: JsonObject = {"flag": "--set"}
#: an API key: set, never recorded
SECRET: JsonObject = {"record": False}
#: an endpoint: recorded without the credentials a URL may hold
REDACTED: JsonObject = {"record": "redact"}
#: a field that does not change scores (how a model runs: batch size, device, retries, caches): grading
#: (:mod:`r2med.results.grading`) compares every other field, a field marked :data:`PRECISION` by its own rule
RUNTIME: JsonObject = {"scores": False}
#: the precision a model runs in: compared by its class (the published precision, or its CPU fallback); another
#: one keeps the grade with a wider tolerance (:func:`r2med.results.grading.precision_change`)
PRECISION: JsonObject = {"scores": "precision"}
#: a user's claim of which published checkpoint a local folder holds (``model_claim``): it changes no score (not in
#: the embedding cache's key); grading reads it by its own rule and every output marks such a grade as a claim
#: (:func:`r2med.results.grading.claimed_checkpoint`)
CLAIM: JsonObject = {"scores": "claim"}
#: the ``model_claim`` field's facts: set with ``--set``, read by its own rule, its words
CLAIMED: JsonObject = {**SET, **CLAIM, "expected": "a hub id, optionally @<commit>"}
#: a model (or tokenizer) compared by its repository's name when graded: a local copy or a Hugging Face cache
#: snapshot of the published checkpoint is that checkpoint
CHECKPOINT: JsonObject = {"compare": "checkpoint"}


class Bm25Options(RetrieverOptions):
    """BM25's options: k1 >= 0, 0 <= b <= 1, the analyzer (the paper's 0.9, 0.4, english)."""

    k1: NonNegative = 0.9
    b: Share = 0.4
    analyzer: str = Field(default="english", json_schema_extra={"expected": "one of: " + ", ".join(ANALYZERS)})

    @field_validator("analyzer")
    @classmethod
    def _analyzer(cls, value: str) -> str | None:
        return _choice(value, ANALYZERS, "analyzer")

    def record(self) -> dict[str, object]:
        return {"cache": self.cache, "k1": self.k1, "b": self.b, "analyzer": self.analyzer}


def _dtype(value: str | None) -> str | None:
    return _choice(value, DTYPE_SPELLINGS, "dtype", fold=True)


class _HubModel(Protocol):
    """An options type naming a model by hub id or local folder, its commit and the checkpoint a folder holds."""

    @property
    def model(self) -> str | None: ...

    @property
    def model_revision(self) -> str | None: ...


class _ClaimedModel(Protocol):
    """An options type naming a model (hub id or local folder) and the hub checkpoint a folder is said to hold."""

    @property
    def model(self) -> str | None: ...

    @property
    def model_claim(self) -> str | None: ...


HubModelT = TypeVar("HubModelT", bound=_HubModel)
ClaimedModelT = TypeVar("ClaimedModelT", bound=_ClaimedModel)


def _revision_applies(spec: HubModelT, info: ValidationInfo) -> HubModelT:
    """A model validator: ``model_revision`` only with a hub id (:func:`~r2med.typed.model_source.revision_problem`);
    a recorded spec is read back as it was written."""
    if not is_recorded(info):
        problem = revision_problem(spec.model, spec.model_revision)
        if problem:
            raise ValueError(problem)
    return spec


def _claim_applies(spec: ClaimedModelT, info: ValidationInfo) -> ClaimedModelT:
    """A model validator: ``model_claim`` is a hub id (``org/name[@commit]``) and only with a local folder
    (:func:`~r2med.typed.model_source.claim_problem`); a recorded spec is read back as it was written."""
    if not is_recorded(info):
        problem = claim_problem(spec.model, spec.model_claim)
        if problem:
            raise ValueError(problem)
    return spec


def _existing_model(cls: type, value: str | None, info: ValidationInfo) -> str | None:
    """A model or tokenizer folder that is not there is refused at parse time, before any work (a hub id is
    checked when it loads): :func:`r2med.typed.model_source.missing_model_path`.  A recorded spec read back
    names the folder a run used, which need not be there any more (:func:`~r2med.typed.parse.is_recorded`)."""
    if is_recorded(info):
        return value
    problem = missing_model_path(value) if isinstance(value, str) else None
    if problem:
        raise ValueError(problem)
    return value


class EncoderOptions(RetrieverOptions):
    """What a dense encoder takes (``r2med evaluate`` flags, and ``--set`` for the rest)."""

    model: str | None = Field(default=None, json_schema_extra=CHECKPOINT)
    batch_size: Count | None = Field(default=None, json_schema_extra=RUNTIME)
    device: str | None = Field(default=None, json_schema_extra=RUNTIME)
    max_length: Annotated[int, Field(ge=2)] | None = None
    pooling: str | None = Field(default=None, json_schema_extra={"expected": "one of: " + ", ".join(POOLINGS)})
    similarity: str | None = Field(default=None, json_schema_extra={"expected": "one of: " + ", ".join(SIMILARITIES)})
    dtype: str | None = Field(
        default=None, json_schema_extra={**PRECISION, "expected": "one of: " + ", ".join(DTYPE_SPELLINGS)}
    )
    #: an opt-in to run a hub repository's own code (the preset decides the loader): not a setting of the model
    trust_remote_code: bool | None = Field(default=None, json_schema_extra=RUNTIME)
    query_model: str | None = Field(default=None, json_schema_extra={**SET, **CHECKPOINT})
    model_revision: RefName | None = Field(default=None, json_schema_extra=SET)
    _revision_applies = model_validator(mode="after")(_revision_applies)
    #: the hub checkpoint (``org/name``, optionally ``@<commit>``) the user says a local folder ``model`` holds
    model_claim: str | None = Field(default=None, json_schema_extra=CLAIMED)
    _claim_applies = model_validator(mode="after")(_claim_applies)
    normalize: bool | None = Field(default=None, json_schema_extra=SET)
    query_max_length: Annotated[int, Field(ge=2)] | None = Field(default=None, json_schema_extra=SET)
    query_instruction: str | None = Field(default=None, json_schema_extra=SET)
    doc_instruction: str | None = Field(default=None, json_schema_extra=SET)
    expansion_instruction: Literal["none", "query"] | None = Field(default=None, json_schema_extra=SET)
    append_eos: bool | None = Field(default=None, json_schema_extra=SET)
    doc_as_pair: bool | None = Field(default=None, json_schema_extra=SET)
    loader: str | None = Field(default=None, json_schema_extra={**SET, "expected": "one of: " + ", ".join(LOADERS)})
    framing: str | None = Field(default=None, json_schema_extra={**SET, "expected": "a framing (bos+eos, eos...)"})
    chunk_size: Count | None = Field(default=None, json_schema_extra={**SET, **RUNTIME})
    ignore_identical_ids: bool | None = Field(default=None, json_schema_extra=SET)
    faiss: str | None = Field(default=None, json_schema_extra={**SET, "expected": "a FAISS index factory string"})
    token_budget: Count | None = Field(default=None, json_schema_extra={**SET, **RUNTIME})
    search_chunk: Count | None = Field(default=None, json_schema_extra={**SET, **RUNTIME})
    api_key: str | None = Field(default=None, json_schema_extra={**SET, **SECRET, **RUNTIME})
    base_url: str | None = Field(default=None, json_schema_extra={**SET, **REDACTED, **RUNTIME})
    timeout: Positive | None = Field(default=None, json_schema_extra={**SET, **RUNTIME})
    max_retries: NonNegativeInt | None = Field(default=None, json_schema_extra={**SET, **RUNTIME})
    backoff_base: NonNegative | None = Field(default=None, json_schema_extra={**SET, **RUNTIME})
    backoff_max: NonNegative | None = Field(default=None, json_schema_extra={**SET, **RUNTIME})

    @field_validator("pooling")
    @classmethod
    def _pooling(cls, value: str | None) -> str | None:
        return _choice(value, POOLINGS, "pooling")

    _model_source = field_validator("model", "query_model")(_existing_model)

    @field_validator("similarity")
    @classmethod
    def _similarity(cls, value: str | None) -> str | None:
        return _choice(value, SIMILARITIES, "similarity")

    @field_validator("dtype")
    @classmethod
    def _dtype(cls, value: str | None) -> str | None:
        return _dtype(value)

    @field_validator("loader")
    @classmethod
    def _loader(cls, value: str | None) -> str | None:
        return _choice(value, LOADERS, "loader")


class DenseOptions(EncoderOptions):
    """``dense``: any embedding model; ``model`` (a hub id or a local folder) is required."""

    @model_validator(mode="after")
    def _needs_model(self) -> DenseOptions:
        if not self.model:
            raise ValueError("--retriever dense needs --model <hub id or local folder>")
        return self


class PresetOptions(EncoderOptions):
    """A dense preset (the paper's, the later ones, an API embedder): ``model`` overrides the preset's checkpoint."""


class MedcptOptions(PresetOptions):
    """``medcpt``: also ``medcpt_published`` (queries through the Article encoder, as the published code did)."""

    medcpt_published: bool = Field(default=False, json_schema_extra={"flag": "--medcpt-published-encoder"})


class CustomEncoderOptions(RetrieverOptions):
    """``custom``: your encoder (``MODULE:OBJ``, or the object itself in Python), its batch size and similarity."""

    #: a spec (``MODULE:OBJ``) or the encoder object itself (Python): loaded by :func:`r2med.infra.user_code.as_loaded`
    encoder: object = Field(default=None, json_schema_extra={"expected": "MODULE:OBJ (text) or an encoder object"})
    batch_size: Count | None = Field(default=None, json_schema_extra=RUNTIME)
    similarity: str | None = Field(default=None, json_schema_extra={"expected": "one of: " + ", ".join(SIMILARITIES)})

    @field_validator("encoder")
    @classmethod
    def _encoder(cls, value: object) -> object:
        if isinstance(value, str) and not value.strip():
            raise ValueError("expected MODULE:OBJ, got ''")
        if isinstance(value, (bool, int, float, list, dict)):
            raise ValueError(f"expected MODULE:OBJ (text) or an encoder object, got {value!r}")
        return value

    @field_validator("similarity")
    @classmethod
    def _similarity(cls, value: str | None) -> str | None:
        return _choice(value, SIMILARITIES, "similarity")

    @model_validator(mode="after")
    def _needs_encoder(self) -> CustomEncoderOptions:
        if self.encoder is None:
            raise ValueError("--retriever custom needs --encoder MODULE:OBJ (an object with encode(texts, role))")
        return self


class EntryPointEncoderOptions(RetrieverOptions):
    """A package's encoder (entry point ``r2med.retrievers``): its batch size and similarity."""

    batch_size: Count | None = Field(default=None, json_schema_extra=RUNTIME)
    similarity: str | None = Field(default=None, json_schema_extra={"expected": "one of: " + ", ".join(SIMILARITIES)})

    @field_validator("similarity")
    @classmethod
    def _similarity(cls, value: str | None) -> str | None:
        return _choice(value, SIMILARITIES, "similarity")


# -- rerankers ---------------------------------------------------------------------------------------------


class _ModelRuntime(RerankerOptions):
    batch_size: Count | None = Field(default=None, json_schema_extra=RUNTIME)
    device: str | None = Field(default=None, json_schema_extra=RUNTIME)
    dtype: str | None = Field(
        default=None, json_schema_extra={**PRECISION, "expected": "one of: " + ", ".join(DTYPE_SPELLINGS)}
    )

    @field_validator("dtype")
    @classmethod
    def _dtype(cls, value: str | None) -> str | None:
        return _dtype(value)


class CrossEncoderOptions(_ModelRuntime):
    """A sequence-classification cross-encoder (``bge-reranker``, ``monobert``, or any model by id or folder)."""

    model: str | None = Field(default=None, json_schema_extra=CHECKPOINT)
    tokenizer: str | None = Field(default=None, json_schema_extra={**SET, **CHECKPOINT})
    model_revision: RefName | None = Field(default=None, json_schema_extra=SET)
    _revision_applies = model_validator(mode="after")(_revision_applies)
    #: the hub checkpoint (``org/name``, optionally ``@<commit>``) the user says a local folder ``model`` holds
    model_claim: str | None = Field(default=None, json_schema_extra=CLAIMED)
    _claim_applies = model_validator(mode="after")(_claim_applies)
    max_length: Annotated[int, Field(ge=8)] | None = None
    label: NonNegativeInt | None = Field(default=None, json_schema_extra=SET)

    _model_source = field_validator("model", "tokenizer")(_existing_model)


class AnyCrossEncoderOptions(CrossEncoderOptions):
    """``cross-encoder`` (or a model id / folder given as the reranker): ``model`` is required."""

    @model_validator(mode="after")
    def _needs_model(self) -> AnyCrossEncoderOptions:
        if not self.model:
            raise ValueError("--reranker cross-encoder needs model=<hub id or local folder>")
        return self


class RankLlamaOptions(_ModelRuntime):
    """RankLLaMA: the base model, its LoRA adapter, the tokenizer, the pair length, whether to merge the adapter."""

    base: str | None = Field(default=None, json_schema_extra={**SET, **CHECKPOINT})
    lora: str | None = Field(default=None, json_schema_extra={**SET, **CHECKPOINT})
    tokenizer: str | None = Field(default=None, json_schema_extra={**SET, **CHECKPOINT})
    max_length: Annotated[int, Field(ge=8)] | None = None
    #: the adapter merged into the base weights or applied beside them: the same model (round-off apart)
    merge: bool | None = Field(default=None, json_schema_extra={**SET, **RUNTIME})


class Qwen3Options(_ModelRuntime):
    """A Qwen3-Reranker checkpoint (yes/no logit scoring)."""

    model: str | None = Field(default=None, json_schema_extra=CHECKPOINT)
    tokenizer: str | None = Field(default=None, json_schema_extra={**SET, **CHECKPOINT})
    model_revision: RefName | None = Field(default=None, json_schema_extra=SET)
    _revision_applies = model_validator(mode="after")(_revision_applies)
    #: the hub checkpoint (``org/name``, optionally ``@<commit>``) the user says a local folder ``model`` holds
    model_claim: str | None = Field(default=None, json_schema_extra=CLAIMED)
    _claim_applies = model_validator(mode="after")(_claim_applies)
    instruction: str | None = Field(default=None, json_schema_extra=SET)
    max_length: Annotated[int, Field(ge=8)] | None = None


class LlmEndpointOptions(RerankerOptions):
    """What every reranker behind an OpenAI-compatible endpoint takes (``listwise``, ``reasonrank``, ``bright-llm``):
    the LLM's name and its endpoint, how requests run (concurrency, timeout, retries and their backoff, the answer
    cache) and the sampling every one of them sets (temperature, max_tokens, seed).  :meth:`client` is the one
    :class:`~r2med.infra.llm.LLMClient` they name."""

    #: the name the endpoint serves the LLM under (graded: the published checkpoint's, by repository name)
    model: str | None = Field(default=None, json_schema_extra=CHECKPOINT)
    base_url: str | None = Field(default=None, json_schema_extra={**REDACTED, **RUNTIME})
    api_key: str | None = Field(default=None, json_schema_extra={**SECRET, **RUNTIME})
    concurrency: Count | None = Field(default=None, json_schema_extra=RUNTIME)
    timeout: Positive | None = Field(default=None, json_schema_extra={**SET, **RUNTIME})
    max_retries: NonNegativeInt | None = Field(default=None, json_schema_extra={**SET, **RUNTIME})
    cache: bool | str | None = Field(
        default=None, json_schema_extra={**SET, **RUNTIME, "expected": "true, false or a file"}
    )
    temperature: Annotated[float, Field(ge=0, le=2)] | None = Field(default=None, json_schema_extra=SET)
    max_tokens: Count | None = Field(default=None, json_schema_extra=SET)
    backoff_base: NonNegative | None = Field(default=None, json_schema_extra={**SET, **RUNTIME})
    backoff_max: NonNegative | None = Field(default=None, json_schema_extra={**SET, **RUNTIME})
    seed: NonNegativeInt | None = Field(default=None, json_schema_extra=SET)

    def client(self, timeout: float) -> LLMClient:
        """The LLM client these options name: each field set reaches it, the client's defaults stand for the rest,
        ``timeout`` (seconds) for an unset ``timeout`` (the reranker's own: a long listwise reply takes minutes)."""
        if not self.model:
            raise OptionError("an LLM reranker needs the LLM's name: --model (and --base-url for a local endpoint)")
        ways = {
            k: v
            for k in ("concurrency", "max_retries", "cache", "backoff_base", "backoff_max", "seed")
            if (v := getattr(self, k)) is not None
        }
        return LLMClient(
            self.model,
            base_url=self.base_url,
            api_key=self.api_key,
            timeout=self.timeout if self.timeout is not None else timeout,
            **ways,
        )


class ExpandLlmOptions(LlmEndpointOptions):
    """``r2med expand``'s LLM: the endpoint options every LLM step takes (:class:`LlmEndpointOptions`, whose
    :meth:`~LlmEndpointOptions.client` builds its client), each set by a flag of its own (``--timeout``,
    ``--temperature``...), plus ``top_p``; the answer cache is on unless ``--no-cache``.  The client's defaults
    stand for what is not set (16 requests at once, 6 retries), the job's for the timeout
    (:data:`r2med.jobs.expand.TIMEOUT`)."""

    #: the name the endpoint serves the LLM under (required: the expansions are its answers)
    model: str
    timeout: Positive | None = Field(default=None, json_schema_extra=RUNTIME)
    max_retries: NonNegativeInt | None = Field(default=None, json_schema_extra=RUNTIME)
    cache: bool = Field(default=True, json_schema_extra={"flag": "--no-cache", **RUNTIME})
    temperature: Annotated[float, Field(ge=0, le=2)] | None = None
    top_p: Annotated[float, Field(gt=0, le=1)] | None = None
    max_tokens: Count | None = None
    seed: NonNegativeInt | None = None


class _LlmClient(LlmEndpointOptions):
    """A listwise recipe's endpoint options and its window plan."""

    window: Annotated[int, Field(ge=2)] | None = None
    step: Count | None = None


class ListwiseOptions(_LlmClient):
    """Listwise LLM reranking (RankGPT; ``with_scores``: InsertRank); ``model`` names the LLM at the endpoint."""

    with_scores: bool | None = None
    max_passage_words: Count | None = Field(default=None, json_schema_extra=SET)

    @model_validator(mode="after")
    def _needs_model(self) -> ListwiseOptions:
        if not self.model:
            raise ValueError("listwise reranking needs the LLM's name: --model (and --base-url for a local endpoint)")
        return self


class ReasonRankOptions(_LlmClient):
    """ReasonRank behind an OpenAI-compatible endpoint (a preset names its checkpoint; ``reasonrank`` needs
    ``model``)."""

    tokenizer: str | None = Field(default=None, json_schema_extra={**SET, **CHECKPOINT})
    max_passage_tokens: Count | None = Field(default=None, json_schema_extra=SET)


class AnyReasonRankOptions(ReasonRankOptions):
    """``reasonrank``: any ReasonRank checkpoint; ``model`` (the name the endpoint serves it under) is required."""

    @model_validator(mode="after")
    def _needs_model(self) -> AnyReasonRankOptions:
        if not self.model:
            raise ValueError(
                "--reranker reasonrank needs --model: the name the endpoint serves a ReasonRank checkpoint "
                "under (for the published ReasonRank-32B, --reranker reasonrank-32b)"
            )
        return self


class BrightLlmOptions(LlmEndpointOptions):
    """``bright-llm``: BRIGHT's rerank.py LLM reranking behind an OpenAI-compatible endpoint; ``model`` names the LLM
    (``gpt-4-0125-preview``), ``k`` is rerank.py's ``--k`` (None: the rerank depth, ``--top-k`` = its ``--input_k``);
    sampling as rerank.py's unless set (temperature 0.8, top_p 0.8, 2048 tokens)."""

    k: Count | None = Field(default=None, json_schema_extra=SET)
    top_p: Annotated[float, Field(gt=0, le=1)] | None = Field(default=None, json_schema_extra=SET)

    @model_validator(mode="after")
    def _needs_model(self) -> BrightLlmOptions:
        if not self.model:
            raise ValueError(
                "bright-llm needs the LLM's name: --model (the leaderboard's: gpt-4-0125-preview, gemini-1.0-pro), "
                "and --base-url for an endpoint other than OpenAI's"
            )
        return self


class BrightCrossEncoderOptions(RerankerOptions):
    """``bright-cross-encoder``: a sentence-transformers ``CrossEncoder`` as BRIGHT's rerank.py runs it (``model``:
    the leaderboard's cross-encoder/ms-marco-MiniLM-L-12-v2 unless set; batch 8; ``k``: the top kept, None: the
    rerank depth)."""

    model: str | None = Field(default=None, json_schema_extra=CHECKPOINT)
    #: the hub checkpoint (``org/name``, optionally ``@<commit>``) the user says a local folder ``model`` holds
    model_claim: str | None = Field(default=None, json_schema_extra=CLAIMED)
    _claim_applies = model_validator(mode="after")(_claim_applies)
    k: Count | None = Field(default=None, json_schema_extra=SET)
    batch_size: Count | None = Field(default=None, json_schema_extra=RUNTIME)
    device: str | None = Field(default=None, json_schema_extra=RUNTIME)

    _model_source = field_validator("model")(_existing_model)


class CustomScorerOptions(RerankerOptions):
    """``custom``: your scorer (``MODULE:OBJ``, or the object itself in Python)."""

    #: a spec (``MODULE:OBJ``) or the scorer object itself (Python): loaded by :func:`r2med.infra.user_code.as_loaded`
    scorer: object = Field(default=None, json_schema_extra={"expected": "MODULE:OBJ (text) or a scorer object"})

    @field_validator("scorer")
    @classmethod
    def _scorer(cls, value: object) -> object:
        if isinstance(value, str) and not value.strip():
            raise ValueError("expected MODULE:OBJ, got ''")
        if isinstance(value, (bool, int, float, list, dict)):
            raise ValueError(f"expected MODULE:OBJ (text) or a scorer object, got {value!r}")
        return value

    @model_validator(mode="after")
    def _needs_scorer(self) -> CustomScorerOptions:
        if self.scorer is None:
            raise ValueError("--reranker custom needs --scorer MODULE:OBJ (an object with score(query, docs))")
        return self


class EntryPointScorerOptions(RerankerOptions):
    """A package's scorer (entry point ``r2med.rerankers``): it takes no options (set them on your scorer)."""


# -- fusion ------------------------------------------------------------------------------------------------


class FusionOptions(Spec):
    """How runs are fused: the method, RRF's constant k, CombSUM/CombMNZ's normalisation, a weight per run."""

    method: str = Field(
        default=FusionMethod.RRF.value, json_schema_extra={"expected": "one of: " + ", ".join(FusionMethod)}
    )
    #: RRF's constant: the fusion library's (:data:`r2med.runs.fusion.RRF_K`), recorded as a float
    k: NonNegative = Field(default=float(RRF_K), json_schema_extra={"flag": "--rrf-k"})
    norm: str = Field(
        default=Normalisation.MINMAX.value, json_schema_extra={"expected": "one of: " + ", ".join(Normalisation)}
    )
    weights: list[NonNegative] | None = None

    @field_validator("method")
    @classmethod
    def _method(cls, value: str) -> str | None:
        return _choice(value, tuple(m.value for m in FusionMethod), "fusion method")

    @field_validator("norm")
    @classmethod
    def _norm(cls, value: str) -> str | None:
        return _choice(value, tuple(n.value for n in Normalisation), "normalisation")

    @field_validator("weights")
    @classmethod
    def _weights(cls, value: list[float] | None) -> list[float] | None:
        if value is not None and not any(value):
            raise ValueError("at least one weight must be above 0")
        return value
