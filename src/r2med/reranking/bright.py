"""BRIGHT's ``rerank.py`` conventions as two rerankers: ``bright-llm`` and ``bright-cross-encoder`` (issue 32).

BRIGHT reranks a first stage's score file (xlang-ai/BRIGHT@d99e839 ``rerank.py``; the facts, each with its lines:
``protocol/bright_models.json`` ``rerank`` and ``rerank_prompt``).  Both rerankers here follow it:

* **input**: each query's top ``--input_k`` by first-stage score (rerank.py:241) -- r2med's rerank depth,
  ``--top-k``; ties in corpus order, as the first stage's stable sort left them;
* **query**: always the examples' original query (rerank.py:217-220, 246, 258): the task's collection queries, also
  when the first stage ran on a reasoning query set (``-e reason:gpt4``), whose texts never reach a reranker;
* **the run is what they rank** (rerank.py:253-259): no first-stage tail follows (the registry record says
  ``tail = False``; ``keep_tail = true`` is refused).

``bright-llm`` (rerank.py:140-183, ``OpenAIModel.rerank``): one request per query to an OpenAI-compatible endpoint
(:class:`r2med.infra.llm.LLMClient`: bounded concurrency, retries, the answer cache), system message ``You are a
helpful assistant``, the user message numbering the documents ``[i]. text`` (their newlines collapsed; the query's
newlines as two spaces) and asking for ``k`` ids as JSON; temperature 0.8, top_p 0.8, 2048 tokens.  The reply is read
as rerank.py reads it (:func:`parse_reply`, :func:`ranked_ids`): the text from the first ````json`` to the last ````` ``
``json.loads``'ed; each element that is one of the inputs' numbers names that document (others are dropped, as is a
non-number), and the scores are **``k - rank``** over that list (:func:`llm_scores`): a repeated id keeps its later
(lower) score, documents the reply leaves out leave the run.  No parsable list (no block, not JSON) or a request that
failed after retries: ``k - rank`` over all the inputs in first-stage order, negative below rank ``k``
(rerank.py:248-251).  Where rerank.py stops with an exception -- a JSON number, or a list holding a list or an object,
which ``r in indices_map`` cannot hash -- r2med takes the same fallback (counted).  ``k`` is rerank.py's ``--k``
(``--set k=N``; default: the rerank depth, as the leaderboard's top-10 and top-100 rows rerank).

``bright-cross-encoder`` (rerank.py:186-197, ``STReranker``): sentence-transformers ``CrossEncoder(model)
.predict([(query, text)...], batch_size=8)`` per query (the library's own defaults: the model's max length, its
activation), the top ``k`` by score kept (ties in input order: Python's stable sort).  Default model: the
leaderboard's cross-encoder/ms-marco-MiniLM-L-12-v2.

A query whose reply names no input document has none: BRIGHT keeps its empty entry and pytrec_eval scores it 0, and so
does r2med (an empty entry of the run, scored 0 in every average; ``metrics.json`` lists it in ``empty_queries``, as a
run file cannot hold a query without documents).  A task whose replies all name nothing scores 0.  Counted in a
warning.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping, Sequence
from typing import Protocol

from ..errors import MissingExtraError, R2MedError
from ..infra import progress
from ..infra.json_types import JsonObject
from ..infra.llm import LLMClient
from ..protocol.bright import rerank_prompt
from ..retrieval.encoders import resolve_device
from ..retrieval.encoders.hf import WeightedModel, check_weights_dtype, dtype_kwargs, weights_dtype
from ..typed.options import BrightCrossEncoderOptions, BrightLlmOptions
from ..typed.parse import RerankerOptions
from .base import Candidates, RerankerMeta, options_as, options_or_keywords, register_reranker
from .cross_encoder import ensure_available

log = logging.getLogger(__name__)

PROMPT_VERSION = 1
#: the leaderboard's cross-encoder (brightbenchmark leaderboard_scores/utils.py:129-134)
DEFAULT_CROSS_ENCODER = "cross-encoder/ms-marco-MiniLM-L-12-v2"
#: What rerank.py's loop does with an element of the reply's list that is a JSON list or object (``r in indices_map``
#: cannot hash it), or with a reply that is a bare number (not iterable): it stops; r2med falls back.
_UNHASHABLE = (list, dict)


def llm_messages(query: str, documents: Sequence[str], k: int) -> list[dict[str, str]]:
    """rerank.py's chat for one query (rerank.py:143-157): ``documents`` in first-stage order, numbered from 1."""
    prompt = rerank_prompt()
    lines = "".join(
        prompt["document_line"].format(number=i, text=re.sub("\n+", " ", text)) for i, text in enumerate(documents, 1)
    )
    user = prompt["user"].format(query=query.replace("\n", prompt["query_newline"]), documents=lines, k=k)
    return [{"role": "system", "content": prompt["system"]}, {"role": "user", "content": user}]


_NO_REPLY = object()


def parse_reply(text: str | None) -> object:
    """The JSON rerank.py reads from a reply (rerank.py:167-174): the last match of ````json\\s*(.+)```` (greedy,
    across lines: from the first ````json`` to the last `````), ``json.loads``'ed; :data:`_NO_REPLY` when there is no
    match or it is not JSON (rerank.py returns None)."""
    if not isinstance(text, str):
        return _NO_REPLY
    matches = re.findall(rerank_prompt()["answer_pattern"], text, re.DOTALL)
    if not matches:
        return _NO_REPLY
    try:
        return json.loads(matches[-1].strip())
    except ValueError:
        return _NO_REPLY


def ranked_ids(response: object, inputs: Sequence[str]) -> list[str] | None:
    """The documents a parsed reply names, as rerank.py:181 reads them: ``[indices_map[r] for r in response if r in
    indices_map]`` with ``indices_map`` = {1: the first input, ...}.  Python's rules: a list's elements, an object's
    keys, a string's characters are iterated; 2 and 2.0 (and ``true``: 1) name the same document; the rest is dropped.
    None where rerank.py stops (:data:`_UNHASHABLE` elements, a bare number or ``null``) or no list was parsed."""
    if response is _NO_REPLY or not isinstance(response, (list, dict, str)):
        return None
    items = list(response)
    if any(isinstance(r, _UNHASHABLE) for r in items):
        return None
    numbers = {i: did for i, did in enumerate(inputs, start=1)}
    return [numbers[r] for r in items if r in numbers]


def llm_scores(named: list[str] | None, inputs: Sequence[str], k: int) -> dict[str, float]:
    """rerank.py:247-255: ``k - rank`` over the named documents (a repeated one keeps its later score), or over every
    input in first-stage order when nothing was parsed (``named`` None)."""
    order = list(inputs) if named is None else named
    scores: dict[str, float] = {}
    for rank, did in enumerate(order):
        scores[did] = float(k - rank)
    return scores


def rerank_k(k: int | None, depth: int | None, candidates: Candidates) -> int:
    """rerank.py's ``--k`` for both rerankers: as set, else the rerank depth (``--top-k``), else the most candidates
    any query has."""
    return k or depth or max((len(docs) for docs in candidates.values()), default=1)


class PairScorer(WeightedModel, Protocol):
    """What r2med calls on a sentence-transformers ``CrossEncoder`` (a library without types): one score per
    (query, document) pair."""

    def predict(
        self, sentences: list[tuple[str, str]], *, batch_size: int, show_progress_bar: bool
    ) -> Sequence[float]: ...


class BrightLlmReranker:
    """rerank.py's LLM reranking (see the module docstring)."""

    #: its run is what it ranks; it is told the rerank depth (the default ``k``); candidates it leaves unscored
    #: leave the run (:func:`r2med.reranking.base.rerank`)
    tail = False
    takes_depth = True
    leaves_out = True

    #: the request timeout (seconds) when its options set none
    timeout = 300.0

    def __init__(self, options: BrightLlmOptions, name: str = "bright-llm", client: LLMClient | None = None):
        """rerank.py's reranking through the LLM ``options`` name (their
        :meth:`~r2med.typed.options.LlmEndpointOptions.client`, unless ``client`` is given); sampling as rerank.py's
        where the options set none."""
        sampling = rerank_prompt()["sampling"]
        self.k = options.k
        self.temperature = sampling["temperature"] if options.temperature is None else options.temperature
        self.top_p = sampling["top_p"] if options.top_p is None else options.top_p
        self.max_tokens = sampling["max_tokens"] if options.max_tokens is None else options.max_tokens
        self.name = name
        self.client = client if client is not None else options.client(self.timeout)
        self.stats = self.fresh_stats()

    @classmethod
    def from_options(cls, options: RerankerOptions) -> BrightLlmReranker:
        return cls(options_as(options, BrightLlmOptions))

    def config(self) -> JsonObject:
        return {
            "reranker": self.name,
            "kind": "bright-llm",
            **self.client.describe(),
            "k": self.k if self.k is not None else "the rerank depth",
            "temperature": self.temperature,
            "top_p": self.top_p,
            "max_tokens": self.max_tokens,
            "prompt_version": PROMPT_VERSION,
            "protocol": "xlang-ai/BRIGHT rerank.py",
        }

    @staticmethod
    def fresh_stats() -> dict[str, int]:
        return {"queries": 0, "failed": 0, "unparsed": 0, "dropped": 0, "repeated": 0, "left_out": 0, "empty": 0}

    def rerank(
        self,
        queries: Mapping[str, str],
        candidates: Candidates,
        corpus: Mapping[str, str],
        depth: int | None = None,
    ) -> dict[str, dict[str, float]]:
        """``k - rank`` scores of the documents each query's reply names (see the module docstring)."""
        self.stats = self.fresh_stats()
        k = rerank_k(self.k, depth, candidates)
        qids = list(candidates)
        inputs = {qid: [did for did, _ in candidates[qid]] for qid in qids}
        batch = [llm_messages(queries[qid], [corpus[d] for d in inputs[qid]], k) for qid in qids]
        with progress.task(f"{self.name}: queries", total=len(batch), unit="queries", counters=("failed",)) as bar:
            results = self.client.chat_many(
                batch,
                on_result=lambda i, res: bar.advance(1, failed=int(not res.ok)),
                temperature=self.temperature,
                top_p=self.top_p,
                max_tokens=self.max_tokens,
            )
        out: dict[str, dict[str, float]] = {}
        for qid, result in zip(qids, results):
            self.stats["queries"] += 1
            named = None
            if result.ok:
                response = parse_reply(result.text)
                named = ranked_ids(response, inputs[qid])
                if named is not None and isinstance(response, list):
                    self.stats["dropped"] += len(response) - len(named)
            else:
                self.stats["failed"] += 1
                log.debug("%s: query %s kept in first-stage order: %s", self.name, qid, result.error)
            if named is None:
                self.stats["unparsed"] += int(result.ok)
            else:
                self.stats["repeated"] += len(named) - len(set(named))
                self.stats["left_out"] += len(inputs[qid]) - len(set(named))
                self.stats["empty"] += not named
            out[qid] = llm_scores(named, inputs[qid], k)
        self.report()
        return out

    def report(self) -> None:
        s = self.stats
        if s["failed"]:
            log.warning(
                "%s: %d of %d request(s) failed after retries; those queries keep their first-stage order with "
                "k - rank scores (rerank.py:249-251)",
                self.name,
                s["failed"],
                s["queries"],
            )
        if s["unparsed"]:
            log.warning(
                "%s: %d of %d repl(ies) held no ```json list rerank.py can read; first-stage order, k - rank",
                self.name,
                s["unparsed"],
                s["queries"],
            )
        if s["dropped"] or s["repeated"] or s["left_out"]:
            log.info(
                "%s: the replies named %d id(s) that are no input (dropped) and %d twice (the later score kept); "
                "%d input document(s) were not named and left the run (rerank.py:181, 253-255)",
                self.name,
                s["dropped"],
                s["repeated"],
                s["left_out"],
            )
        if s["empty"]:
            log.warning(
                "%s: %d quer(ies) got a reply naming none of their documents and have none: each scores 0 in the "
                "average, as BRIGHT's rerank.py keeps its empty entry and pytrec_eval scores it",
                self.name,
                s["empty"],
            )


class BrightCrossEncoder:
    """rerank.py's cross-encoder reranking: sentence-transformers ``CrossEncoder.predict``, batch 8, the top k."""

    tail = False
    takes_depth = True
    leaves_out = True

    def __init__(
        self,
        model: str | None = None,
        k: int | None = None,
        batch_size: int | None = None,
        device: str | None = None,
        name: str = "bright-cross-encoder",
        *,
        options: RerankerOptions | None = None,
    ):
        """Its options are :class:`~r2med.typed.options.BrightCrossEncoderOptions`: ``options`` as parsed (what the
        registry's factory passes), or the keywords, parsed here once; rerank.py's model and batch size stand for
        what is not set."""
        keywords = {"model": model, "k": k, "batch_size": batch_size, "device": device}
        o = options_or_keywords(BrightCrossEncoderOptions, options, keywords, "BrightCrossEncoder()")
        self.options = o
        self.model_id = o.model or DEFAULT_CROSS_ENCODER
        self.k = o.k
        self.batch_size = o.batch_size if o.batch_size is not None else int(rerank_prompt()["cross_encoder_batch_size"])
        self.device = o.device
        self.name = name
        self._model: PairScorer | None = None
        self.used: JsonObject = {}

    def config(self) -> JsonObject:
        return {
            "reranker": self.name,
            "kind": "bright-cross-encoder",
            "model": self.model_id,
            "k": self.k if self.k is not None else "the rerank depth",
            "batch_size": self.batch_size,
            "max_length": "the model's own",
            "protocol": "xlang-ai/BRIGHT rerank.py",
        }

    def load(self) -> PairScorer:
        if self._model is None:
            try:
                from sentence_transformers import CrossEncoder
            except ImportError:
                raise MissingExtraError("sentence-transformers", "dense", "bright-cross-encoder") from None

            ensure_available(self.model_id)
            device = resolve_device(self.device)
            # fp32, as rerank.py's CrossEncoder(model_name) loaded it (passed: transformers 5 keeps a checkpoint's own)
            try:
                self._model = CrossEncoder(self.model_id, device=device, model_kwargs=dtype_kwargs("fp32", device))
            except (OSError, ValueError) as exc:
                first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                raise R2MedError(f"cannot load cross-encoder {self.model_id!r}: {first}") from None
            self.used["weights"] = loaded = weights_dtype(self._model)
            check_weights_dtype(self.model_id, "fp32", loaded)
        return self._model

    def rerank(
        self,
        queries: Mapping[str, str],
        candidates: Candidates,
        corpus: Mapping[str, str],
        depth: int | None = None,
    ) -> dict[str, dict[str, float]]:
        """The top ``k`` of each query's candidates by the cross-encoder's score (rerank.py:192-197)."""
        model = self.load()
        k = rerank_k(self.k, depth, candidates)
        out: dict[str, dict[str, float]] = {}
        with progress.task(f"{self.name}: reranking", total=len(candidates), unit="queries") as bar:
            for qid, docs in candidates.items():
                pairs = [(queries[qid], corpus[did]) for did, _ in docs]
                scores = model.predict(pairs, batch_size=self.batch_size, show_progress_bar=False)
                ranking = {did: float(score) for (did, _), score in zip(docs, scores)}
                out[qid] = dict(sorted(ranking.items(), key=lambda item: item[1], reverse=True)[:k])
                bar.advance(1)
        return out


register_reranker(
    RerankerMeta(
        "bright-llm",
        BrightLlmReranker.from_options,
        "BRIGHT's rerank.py LLM reranking (k - rank over the ids the LLM lists) via --model/--base-url",
        options=BrightLlmOptions,
        packages=("openai",),
        install="pip install 'r2med[llm]'",
        weights=(),
        llm=True,
        tail=False,
    )
)
register_reranker(
    RerankerMeta(
        "bright-cross-encoder",
        lambda options: BrightCrossEncoder(options=options),
        f"BRIGHT's rerank.py cross-encoder (sentence-transformers, batch 8, top k): {DEFAULT_CROSS_ENCODER}",
        options=BrightCrossEncoderOptions,
        packages=("torch", "transformers", "sentence_transformers"),
        install="pip install 'r2med[dense]'",
        hub_id=DEFAULT_CROSS_ENCODER,
        paper_dtype="fp32",
        tail=False,
    )
)
