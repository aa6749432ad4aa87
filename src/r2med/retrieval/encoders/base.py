"""What every text encoder shares: its settings, the ``Encoder`` protocol and the ``BaseEncoder`` logic.

* :class:`EncoderSettings` -- everything that changes a vector (the embedding cache is keyed by it).
* :class:`BaseEncoder` -- instructions per role (query / expansion / document), the token limit per
  role, (query, expansion) averaging (the R2MED paper's rule for generation-augmented queries), and
  :meth:`BaseEncoder.in_length_order`: texts cut into batches by a token budget, longest first, and
  the rows put back in input order.  Implementations only embed one batch (:mod:`.hf`, :mod:`.api`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal, Protocol, TypeVar, get_args, runtime_checkable

import numpy as np

from ...errors import R2MedError, shown
from ...infra.json_types import JsonObject, JsonValue
from ...typed.dense_choices import DTYPE_ALIASES, Dtype, Pooling, choices_of
from ..base import QueryText

log = logging.getLogger(__name__)

POOLINGS: tuple[Pooling, ...] = tuple(Pooling)
#: Weight precisions (:class:`~r2med.typed.dense_choices.Dtype` says what each does).
DTYPES: tuple[Dtype, ...] = tuple(Dtype)
API_LOADERS = ("openai", "voyage")
LOADERS = ("auto", "transformers", "sentence-transformers", "remote-code", "gritlm", *API_LOADERS)
ROLES = ("query", "expansion", "doc")
#: The special tokens around every text a model reads (``EncoderSettings.framing``), named by their TEXT and
#: resolved through the tokenizer's vocabulary: a template whose ``{text}`` stands for the text, with the
#: tokens before and after it separated by spaces -- ``"<s> {text} </s>"``, ``"{text} <|endoftext|>"``,
#: ``"{text}"`` (none).  r2med builds those ids itself (the text tokenized without special tokens, then these
#: tokens put around it), so neither a tokenizer's post-processor -- which differs between library versions --
#: nor which token a tokenizer calls its "EOS" can change them.  :data:`TOKENIZER_FRAMING` instead: what the
#: tokenizer adds, once its own files are checked to agree with each other (:mod:`.framing`).
Framing = str
TEXT = "{text}"
#: A framing that is the tokenizer's own, used only when its files agree (``tokenizer_config.json`` and the
#: ``tokenizer.json`` post-processor): the rule for a published run whose framing no published file states.
TOKENIZER_FRAMING = "tokenizer"
#: The placeholders of a (query, document) pair's template (a reranker's input): ``"<s> {query} <s> {document}"``.
QUERY, DOCUMENT = "{query}", "{document}"
#: Who put the special tokens in around the texts of a model's published run.
FramedBy = Literal["tokenizer", "r2med", "model"]
#: the values ``added_by`` takes (r2med: the tool itself adds them), read from :data:`FramedBy`
ADDERS: tuple[FramedBy, ...] = get_args(FramedBy)


def _template_error(template: str, why: str) -> R2MedError:
    return R2MedError(
        f"framing {shown(template)} {why}; name the special tokens by their text around {TEXT}, "
        "e.g. '<s> {text} </s>' or '{text} <|endoftext|>' ('{text}': none)"
    )


def framing_tokens(template: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The token texts before and after ``{text}`` in a framing template (``"<s> {text} </s>"`` ->
    ``(("<s>",), ("</s>",))``); a template without exactly one ``{text}`` is a one-line error."""
    if not isinstance(template, str) or template.count(TEXT) != 1:
        raise _template_error(str(template), f"must hold {TEXT} once")
    before, after = template.split(TEXT)
    return tuple(before.split()), tuple(after.split())


def pair_framing_tokens(template: str) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """The token texts before ``{query}``, between it and ``{document}``, and after ``{document}``."""
    if template.count(QUERY) != 1 or template.count(DOCUMENT) != 1 or template.index(QUERY) > template.index(DOCUMENT):
        raise R2MedError(f"pair framing {shown(template)} must hold {QUERY} then {DOCUMENT}, once each")
    before, rest = template.split(QUERY)
    middle, after = rest.split(DOCUMENT)
    return tuple(before.split()), tuple(middle.split()), tuple(after.split())


def framing_template(before: Sequence[str], after: Sequence[str]) -> Framing:
    """The template of token texts ``before`` and ``after`` a text (``framing_tokens``' inverse)."""
    return " ".join((*before, TEXT, *after))


@dataclass(frozen=True)
class FramingRecord:
    """The special tokens a model saw in its published runs, by their text, and where that was read.

    ``tokens``: the template (``"<s> {text} </s>"``; a reranker's pair: ``"<s> {query} <s> {document}"``);
    ``added_by``: who put them there in the published run (its tokenizer's post-processor, the published
    code -- r2med does the same --, or the model's own ``encode``); ``source``: file:line of the published
    code, the model card, the issue thread; ``ASSUMED`` in it where nothing published says.
    ``checked``: r2med builds (transformers loader) or checks (a model's own tokenization) these ids;
    False where a package tokenizes out of r2med's sight (gritlm) or a template is the tokenizer's alone.

    A record that is ASSUMED and whose tokens the tokenizer added (:attr:`follows_tokenizer`) never overrides
    the tokenizer: its runs use what the tokenizer adds, as the published harness did, once the tokenizer's
    files are checked to agree (:data:`TOKENIZER_FRAMING`).
    """

    tokens: str
    added_by: FramedBy
    source: str
    checked: bool = True

    def __post_init__(self) -> None:
        if self.pair:
            pair_framing_tokens(self.tokens)
        else:
            framing_tokens(self.tokens)

    @property
    def pair(self) -> bool:
        """A (query, document) pair's template (a reranker's), not a single text's."""
        return QUERY in self.tokens

    @property
    def name(self) -> Framing:
        return self.tokens

    @property
    def bos(self) -> str | None:
        """The text of the first token before the text (None: none)."""
        before = self.tokens.split(QUERY if self.pair else TEXT)[0].split()
        return before[0] if before else None

    @property
    def eos(self) -> str | None:
        """The text of the last token after the text (None: none)."""
        after = self.tokens.split(DOCUMENT if self.pair else TEXT)[-1].split()
        return after[-1] if after else None

    @property
    def assumed(self) -> bool:
        return "ASSUMED" in self.source

    @property
    def follows_tokenizer(self) -> bool:
        """ASSUMED tokens the tokenizer added in the published run: the tokenizer's own are used (checked)."""
        return self.assumed and self.added_by == "tokenizer"

    @property
    def encoder_framing(self) -> Framing:
        """What an encoder is told (``EncoderSettings.framing``): these tokens, or the tokenizer's own."""
        return TOKENIZER_FRAMING if self.follows_tokenizer else self.tokens

    def describe(self) -> JsonObject:
        """A JSON-able summary (``r2med models``, ``metrics.json``)."""
        return {
            "framing": self.tokens,
            "bos": self.bos,
            "eos": self.eos,
            "added_by": self.added_by,
            "checked": self.checked,
            "assumed": self.assumed,
            "used": self.encoder_framing,
            "source": self.source,
        }

    @classmethod
    def from_data(cls, data: Mapping[str, JsonValue]) -> FramingRecord:
        """A record from its protocol-data form (``{"tokens": "{text} <|endoftext|>", "added_by": ..., "source":
        ...}``); a record naming tokens by role (``"eos": true``) is refused."""
        if "tokens" not in data or {"bos", "eos"} & set(data):
            raise R2MedError(
                f"framing record {shown(str(data))}: name its tokens by text in 'tokens' "
                "(e.g. '<s> {text} </s>'), not by role (bos / eos)"
            )
        added_by = next((adder for adder in ADDERS if adder == data.get("added_by")), None)
        if added_by is None:
            choices = f"{', '.join(ADDERS[:-1])} or {ADDERS[-1]}"
            raise R2MedError(f"framing record {shown(str(data))}: added_by must be {choices}")
        return cls(str(data["tokens"]), added_by, str(data["source"]), bool(data.get("checked", True)))


def canonical_dtype(dtype: str) -> Dtype:
    """``float16`` -> ``fp16`` etc.; an unknown name is a one-line error."""
    name = str(dtype).lower()
    if name in DTYPE_ALIASES:
        return DTYPE_ALIASES[name]
    try:
        return Dtype(name)
    except ValueError:
        raise R2MedError(f"unknown dtype {str(dtype)!r}; choose from {choices_of(Dtype)}") from None


def canonical_pooling(pooling: str) -> Pooling:
    """``pooling`` as a :class:`Pooling`; an unknown name is a one-line error listing the choices."""
    try:
        return Pooling(pooling)
    except ValueError:
        raise R2MedError(f"unknown pooling {str(pooling)!r}; choose from {choices_of(Pooling)}") from None


@dataclass(frozen=True)
class EncoderSettings:
    """Everything that changes a vector (the embedding cache is keyed by ``asdict(settings)``).

    Runtime knobs that do not change vectors (batch size, device) are not part of it.
    ``model`` encodes documents (and queries unless ``query_model`` is set).
    """

    model: str
    loader: str = "auto"
    query_model: str | None = None
    #: the model's commit on the hub (``from_pretrained(revision=...)``); None: its default branch
    model_revision: str | None = None
    pooling: Pooling = Pooling.MEAN
    normalize: bool = False
    #: tokens per text; None: the model's own (sentence-transformers ``max_seq_length``, else the
    #: tokenizer's / config's limit)
    max_length: int | None = None
    query_max_length: int | None = None
    #: None: the model's own prompt (sentence-transformers ``prompts``), else none; "" forces none
    query_instruction: str | None = None
    doc_instruction: str | None = None
    #: instruction put before expansion texts of a (query, expansion) pair: "none" or "query"
    expansion_instruction: str = "none"
    append_eos: bool = False
    #: encode documents as a (empty title, text) pair, as MedCPT's Article encoder expects
    doc_as_pair: bool = False
    trust_remote_code: bool = False
    dtype: Dtype = Dtype.FP32
    #: a loader's own settings beyond these fields (``exclude_prompt_from_pooling``): open JSON, keyed by the loader
    extra: JsonObject = field(default_factory=dict)
    #: special tokens around each text by their text (:data:`Framing`: ``"<s> {text} </s>"``), built by r2med
    #: whatever the tokenizer adds; ``"tokenizer"``: the tokenizer's own, its files checked to agree; None:
    #: what the tokenizer adds, unchecked (a model that is not a preset)
    framing: Framing | None = None

    def __post_init__(self) -> None:
        if self.loader not in LOADERS:
            raise R2MedError(f"unknown encoder loader {self.loader!r}; choose from {', '.join(LOADERS)}")
        object.__setattr__(self, "pooling", canonical_pooling(self.pooling))
        if self.max_length is not None and self.max_length < 2:
            raise R2MedError(f"max_length must be at least 2 (got {self.max_length})")
        object.__setattr__(self, "dtype", canonical_dtype(self.dtype))
        if self.expansion_instruction not in ("none", "query"):
            raise R2MedError("expansion_instruction must be 'none' or 'query'")
        if self.framing is not None and self.framing != TOKENIZER_FRAMING:
            after = framing_tokens(self.framing)[1]
            if self.append_eos and not after:
                raise R2MedError(f"append_eos contradicts framing {shown(self.framing)} (no token after the text)")
        if self.framing == TOKENIZER_FRAMING and self.append_eos:
            raise R2MedError("append_eos contradicts framing 'tokenizer' (the tokenizer's own tokens); set one of them")

    def key(self) -> JsonObject:
        """The vector-defining settings as a JSON-able dict (for fingerprints and run configs); ``framing``
        only when set (the keys of runs that leave it to the tokenizer stay as they were)."""
        key: JsonObject = asdict(self)
        if key["framing"] is None:
            del key["framing"]
        if self.loader == "sentence-transformers":  # its own Pooling module runs (recorded as it ran: ``pooling``
            key["pooling"] = None  # in the run's encoding facts), never ``pooling``
        return key

    # Any: each change is forwarded by name to dataclasses.replace, which types it against that field
    def with_(self, **changes: Any) -> EncoderSettings:
        """public: a copy with ``changes`` (``settings.with_(max_length=512)``), as :func:`dataclasses.replace`."""
        return replace(self, **changes)


@runtime_checkable
class Encoder(Protocol):
    """What dense retrieval (and the Ray scale-out) needs from a model.

    ``encode_corpus(texts)`` and ``encode_queries(queries)`` return ``float32`` arrays of
    shape ``(len(texts), dim)`` in input order; the document instruction / query instruction
    are added by the encoder.  ``config()`` is everything that changes a vector.
    """

    settings: EncoderSettings

    def encode_queries(self, queries: Sequence[QueryText], batch_size: int | None = None) -> np.ndarray: ...

    def encode_corpus(self, texts: Sequence[str], batch_size: int | None = None) -> np.ndarray: ...

    def config(self) -> JsonObject: ...


def plan_batches(
    lengths: Sequence[int], batch_size: int, token_budget: int | None = None, max_batch: int | None = None
) -> list[np.ndarray]:
    """Cut texts into batches: longest first, each batch holding at most ``token_budget`` padded tokens.

    ``lengths`` are token counts; the budget defaults to ``batch_size * max(lengths)`` (so the
    longest texts go ``batch_size`` at a time and short ones in bigger batches, up to
    ``max_batch`` = ``8 * batch_size``).  Returns index arrays into the original order.
    """
    n = len(lengths)
    if n == 0:
        return []
    lens = np.maximum(np.asarray(lengths, dtype=np.int64), 1)
    budget = token_budget or int(batch_size * lens.max())
    cap = max_batch or 8 * batch_size
    order = np.argsort(-lens, kind="stable")
    batches, start = [], 0
    while start < n:
        longest = int(lens[order[start]])  # sorted: the first text of a batch is its longest
        size = max(1, min(cap, budget // longest, n - start))
        batches.append(order[start : start + size])
        start += size
    return batches


#: what one batch of an encoder gives before the batches are joined (a host array, or a device tensor)
_Batch = TypeVar("_Batch")


class BaseEncoder:
    """Shared logic: instructions, token limits per role, (query, expansion) averaging, length-sorted
    batching.  Subclasses implement ``_embed(texts, role, batch_size)`` for a non-empty list."""

    def __init__(self, settings: EncoderSettings, batch_size: int = 32, token_budget: int | None = None):
        self.settings = settings
        self.batch_size = batch_size
        self.token_budget = token_budget
        self.texts_encoded = 0  # counter (tests, logs): texts that went through a model
        #: called with the number of texts after each batch (a progress display listens; None: nobody)
        self.on_batch: Callable[[int], None] | None = None
        #: the token limit each side was encoded with (``used["max_length"]``, the same dict): side -> tokens
        self.max_lengths: dict[str, JsonValue] = {}
        #: what the last encoding actually used, for ``metrics.json``: ``max_length`` per role, the
        #: ``framing`` (asked for, and what the tokenizer alone would have given), the ``dtype``
        #: (facts a loader reports, each its own shape: open JSON, read back only into ``metrics.json``)
        self.used: JsonObject = {"dtype": settings.dtype, "max_length": self.max_lengths}

    def config(self) -> JsonObject:
        return self.settings.key()

    def note_max_length(self, role: str, max_length: int | None) -> None:
        """Record the token limit ``role`` was encoded with (queries and expansions share ``query``)."""
        self.max_lengths["doc" if role == "doc" else "query"] = max_length

    def _embed(self, texts: Sequence[str], role: str, batch_size: int) -> np.ndarray:
        """Embed texts of ``role`` (query / expansion / doc); the instruction is the encoder's to add."""
        raise NotImplementedError

    def instruction(self, role: str) -> str:
        """The text put before each text of ``role`` (``""`` when the settings give none)."""
        s = self.settings
        if role == "doc":
            return s.doc_instruction or ""
        if role == "expansion" and s.expansion_instruction == "none":
            return ""
        return s.query_instruction or ""

    def max_tokens(self, role: str, model_limit: int | None = None) -> int | None:
        """The token limit for ``role``: the settings' (queries may have their own), else ``model_limit``."""
        s = self.settings
        own = (s.query_max_length or s.max_length) if role != "doc" else s.max_length
        return own or model_limit

    def in_length_order(
        self,
        lengths: Sequence[int],
        batch_size: int,
        encode_batch: Callable[[np.ndarray], _Batch],
        stack: Callable[[list[_Batch]], np.ndarray],
    ) -> np.ndarray:
        """Encode in batches planned by :func:`plan_batches` (longest first, within the token budget):
        ``encode_batch(indices)`` embeds the texts at those indices; ``stack`` joins the batch outputs
        (e.g. device tensors, copied to the host once); the rows come back in input order."""
        batches = plan_batches(lengths, batch_size, self.token_budget)
        outputs = []
        for idx in batches:
            outputs.append(encode_batch(idx))
            self.batch_done(len(idx))
        stacked = stack(outputs)
        result = np.empty_like(stacked)
        result[np.concatenate(batches)] = stacked
        return result

    def batch_done(self, n: int) -> None:
        """Report ``n`` more texts embedded (implementations that batch on their own call it too)."""
        if self.on_batch is not None:
            self.on_batch(n)

    def _encode(self, texts: list[str], role: str, batch_size: int) -> np.ndarray:
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        start = time.perf_counter()
        out = self._embed(texts, role, batch_size)
        self.texts_encoded += len(texts)
        log.debug("encoded %d %s text(s) in %.1fs", len(texts), role, time.perf_counter() - start)
        return out

    def encode_corpus(self, texts: Sequence[str], batch_size: int | None = None) -> np.ndarray:
        return self._encode(list(texts), "doc", batch_size or self.batch_size)

    def encode_queries(self, queries: Sequence[QueryText], batch_size: int | None = None) -> np.ndarray:
        bs = batch_size or self.batch_size
        items = [q if isinstance(q, tuple) else (q,) for q in queries]
        if not items:
            return np.zeros((0, 0), dtype=np.float32)
        if any(len(q) == 0 for q in items):
            raise R2MedError("a query tuple is empty; give at least the query text")
        width = max(len(q) for q in items)
        first = self._encode([q[0] for q in items], "query", bs)
        if width == 1:
            return first
        # every part embedded (the query with its instruction, expansions per `expansion_instruction`),
        # then the parts of each query averaged
        out = first.astype(np.float64)
        counts = np.ones(len(items))
        for part in range(1, width):
            rows = [i for i, q in enumerate(items) if len(q) > part]
            out[rows] += self._encode([items[i][part] for i in rows], "expansion", bs)
            counts[rows] += 1
        return (out / counts[:, None]).astype(np.float32)
