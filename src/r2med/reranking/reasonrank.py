"""ReasonRank (arXiv 2508.07050): a reasoning listwise reranker served behind an OpenAI-compatible endpoint.

A recipe of :class:`r2med.reranking.listwise.ListwiseReranker` (its loop and client: bounded
concurrency, retries, the on-disk answer cache; windows of all queries sent together round by
round), overriding what ReasonRank's published code does differently -- the window plan, the
passage text, the messages and how a reply is read.  Prompts and settings are protocol data
(``protocol/later_models.json``, each with its source in 8421BCD/ReasonRank); the records
(``reasonrank-32b``, ``reasonrank-7b``, and ``reasonrank`` for any checkpoint served as ``--model``)
carry the published depth (100), the published row and the tolerance class:

* **prompt** (``rank_GPT_reasoning``): its system message (think in ``<think>``, answer in
  ``<answer>``) and user message ``prefix + "\\n" + "[i] passage\\n"... + post``; the endpoint applies
  the model's chat template, as ``apply_chat_template(add_generation_prompt=True)`` does;
* **text preparation**: each passage is stripped, fixed with ``ftfy.fix_text``, cut to its first
  512 tokens of the model's tokenizer (``convert_tokens_to_string(tokenize(text)[:512])``) and its
  ``[n]`` written ``(n)``; the query gets the same ``[n]`` rewrite and a strip; the user message is
  fixed again with ftfy as the published prompt is (HTML entities left alone there, as ftfy leaves
  them in a prompt holding ``<`` characters);
* **windows** (window 20, step 10 over the top 100, one pass, back to front): the published loop,
  ``[80,100), [70,90), ..., [0,20)`` -- see :func:`plan_windows` for where it differs from
  :func:`r2med.reranking.listwise.windows` on other list lengths;
* **answer parsing** (:func:`parse_answer`): the ``<answer>`` block after the think block, else the
  text after the last ``<answer>``, else the whole reply (the reasoning included -- as published);
  digits only, repeats dropped (first kept), out-of-window ids dropped, unnamed passages appended in
  their previous order;
* **sampling**: temperature 0, at most 3172 new tokens (reasoning_maxlen 3072 + 100).

The reasoning trace is not kept in the run; the replies stay in the LLM answer cache.  Counts of
how each reply was read (a complete ``<answer>`` block, an unclosed one, none; replies cut by the
token limit) are in ``stats`` and logged.  Scores are ``n - position``.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from ..errors import MissingExtraError, R2MedError
from ..infra.json_types import JsonObject, JsonValue
from ..infra.llm import LLMClient, Result
from ..infra.optional import required_module
from ..protocol.later_models import LaterReranker, RerankerSettings, later_models, later_reranker, provenance
from ..typed.options import AnyReasonRankOptions, ReasonRankOptions
from ..typed.parse import RerankerOptions
from .base import Candidates, RerankerFactory, RerankerMeta, options_as, register_reranker
from .listwise import ListwiseReranker

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

log = logging.getLogger(__name__)

PRESETS = ("reasonrank-32b", "reasonrank-7b")
PROMPT_VERSION = 1
_NUMBER = re.compile(r"\[(\d+)\]")


def published_settings(preset: str = "reasonrank-32b") -> RerankerSettings:
    settings: RerankerSettings = later_reranker(preset)["settings"]
    return settings


def replace_number(text: str) -> str:
    """``[3]`` -> ``(3)``: passage and query texts must not look like passage identifiers."""
    return _NUMBER.sub(r"(\1)", text)


def plan_windows(n: int, window: int = 20, step: int = 10) -> list[tuple[int, int]]:
    """The ``[start, end)`` windows of one pass over ``n`` candidates, as ReasonRank's loop makes them.

    ``end = n, start = n - window``; while ``end > 0`` and ``start + step != 0``: the window
    ``[max(start, 0), end)``, then both move up by ``step`` (from the clamped start).  For 100
    candidates, window 20 and step 10 that is ``[80,100) ... [0,20)`` (9 windows), the same as
    :func:`r2med.reranking.listwise.windows`; for other lengths the top window may be shorter than
    ``window`` (25 candidates: ``[5,25), [0,15)``).  The published loop makes no window at all when
    ``n == window - step``; r2med then ranks the whole list in one window (its one deviation).
    """
    if window < 2 or step < 1:
        raise R2MedError("ReasonRank needs window >= 2 and step >= 1")
    if n <= 1:
        return []
    out: list[tuple[int, int]] = []
    end, start = n, n - window
    while end > 0 and start + step != 0:
        start = max(start, 0)
        out.append((start, end))
        end, start = end - step, start - step
    return out or [(0, n)]


def parse_answer(text: str | None, m: int) -> tuple[list[int], str, bool]:
    """The 0-based order of a window of ``m`` passages from a ReasonRank reply.

    Returns ``(order, how, repaired)``: ``how`` says where the ranking was read -- ``answer``
    (the ``<answer>`` block after ``</think>``), ``open-answer`` (the text after the last
    ``<answer>``), ``no-answer`` (the whole reply) or ``unreadable`` (a digit ``int`` cannot read:
    the window keeps its order) -- and ``repaired`` whether ids were repeated, out of range or
    missing.  The rules are ReasonRank's ``_clean_response`` / ``receive_permutation``.
    """
    pattern = later_models()["rerankers"]["reasonrank-32b"]["settings"]["answer_pattern"]
    text = text or ""
    match = re.search(pattern, text.lower(), re.DOTALL)
    if match:
        body, how = match.group(1).strip(), "answer"
    elif "<answer>" in text:
        body, how = text.split("<answer>")[-1], "open-answer"
    else:
        body, how = text, "no-answer"
    digits = "".join(c if c.isdigit() else " " for c in body).strip()
    try:
        named = [int(x) - 1 for x in digits.split()]
    except ValueError:  # a Unicode digit int() cannot read: the published code keeps the window as it was
        return list(range(m)), "unreadable", True
    order: list[int] = []
    for k in named:
        if k not in order:
            order.append(k)
    kept = [k for k in order if 0 <= k < m]
    missing = [k for k in range(m) if k not in kept]
    return kept + missing, how, len(kept) != len(named) or bool(missing)


def _fix_text(text: str, *, unescape_html: bool | str = "auto") -> str:
    """``ftfy.fix_text`` with its defaults but ``unescape_html`` (ReasonRank's prompt lines pass False)."""
    ftfy = required_module("ftfy", "llm", "ReasonRank reranking (its prompts are cleaned with ftfy)")
    fixed: str = ftfy.fix_text(text, unescape_html=unescape_html)
    return fixed


class ReasonRankReranker(ListwiseReranker):
    """ReasonRank's listwise reranking through an OpenAI-compatible endpoint (see the module docstring).

    ``model`` is the name the endpoint serves (default: the preset's hub id, as ``vllm serve`` names
    it); ``tokenizer`` the tokenizer that cuts passages to ``max_passage_tokens`` (default: the hub
    id, read from a folder or the Hugging Face cache; ``"words"`` cuts at whitespace words instead,
    ReasonRank's ``truncate_by_word`` mode -- not the published setting).
    """

    #: the request timeout (seconds) when its options set none (a reasoning reply of 2048 tokens takes minutes)
    timeout = 900.0

    def __init__(
        self,
        options: ReasonRankOptions,
        preset: str = "reasonrank-32b",
        name: str | None = None,
        client: LLMClient | None = None,
    ):
        """``options`` over the published settings of ``preset`` (what is not set: the preset's)."""
        spec = published_settings(preset)
        model = options.model or spec["hub_id"]
        window = options.window or spec["window_size"]
        step = options.step or spec["step"]
        tokenizer, max_passage_tokens = options.tokenizer, options.max_passage_tokens
        super().__init__(
            options.model_copy(update={"model": model}),
            window=window,
            step=step,
            with_scores=False,
            temperature=spec["temperature"] if options.temperature is None else options.temperature,
            max_tokens=options.max_tokens or spec["max_tokens"],
            max_passage_words=None,
            name=name or preset,
            client=client,
        )
        plan_windows(2, self.window, self.step)  # validate
        self.preset = preset
        self.prompt = dict(spec["prompt"])
        self.depth = int(spec["rerank_depth"])
        self.tokenizer_id = tokenizer or spec["hub_id"]
        self.max_passage_tokens = int(max_passage_tokens or spec["passage_max_tokens"])
        self._tokenizer: PreTrainedTokenizerBase | None = None

    def fresh_stats(self) -> dict[str, int]:
        return {
            "windows": 0,
            "answer": 0,
            "open-answer": 0,
            "no-answer": 0,
            "unreadable": 0,
            "repaired": 0,
            "failed": 0,
            "cut_by_max_tokens": 0,
        }

    def config(self) -> JsonObject:
        return {
            "reranker": self.name,
            "kind": "reasonrank",
            "preset": self.preset,
            **self.client.describe(),
            "window": self.window,
            "step": self.step,
            "published_depth": self.depth,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "tokenizer": self.tokenizer_id,
            "max_passage_tokens": self.max_passage_tokens,
            "prompt_version": PROMPT_VERSION,
        }

    # -- text preparation -----------------------------------------------------------------------------
    def _load_tokenizer(self) -> PreTrainedTokenizerBase | None:
        """The tokenizer that cuts passages (None: ``tokenizer='words'``, cut at whitespace words)."""
        if self._tokenizer is None and self.tokenizer_id != "words":
            try:
                from transformers import AutoTokenizer
            except ImportError:
                raise MissingExtraError("transformers", "dense", "ReasonRank's token-based passage cut") from None
            try:
                self._tokenizer = AutoTokenizer.from_pretrained(self.tokenizer_id)
            except (OSError, ValueError) as exc:
                first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                raise R2MedError(
                    f"{self.name}: cannot load the tokenizer {self.tokenizer_id!r} that cuts passages to "
                    f"{self.max_passage_tokens} tokens ({first}); pass tokenizer=<folder or hub id in the cache>, "
                    "or tokenizer='words' to cut at whitespace words (not the published setting)"
                ) from None
        return self._tokenizer

    def passage(self, text: str) -> str:
        """One passage as ReasonRank puts it in the prompt (``convert_doc_to_prompt_content``)."""
        content = _fix_text(text.strip())
        tok = self._load_tokenizer()
        if tok is None:
            content = " ".join(content.split()[: self.max_passage_tokens])
        else:
            content = tok.convert_tokens_to_string(tok.tokenize(content)[: self.max_passage_tokens])
        return replace_number(content)

    def messages(
        self, query: str, passages: Sequence[str], scores: Sequence[float] | None = None
    ) -> list[dict[str, str]]:
        """The chat messages for one window (``passages`` already prepared by :meth:`passage`; the published
        prompt shows no first-stage scores)."""
        p = self.prompt
        query = replace_number(query).strip()
        num = len(passages)
        user = p["user_prefix"].format(num=num, query=query) + p["after_prefix"]
        user += "".join(p["passage_line"].format(rank=i, content=c) for i, c in enumerate(passages, start=1))
        user += p["user_post"].format(query=query, num=num)
        return [
            {"role": "system", "content": _fix_text(p["system"], unescape_html=False)},
            {"role": "user", "content": _fix_text(user, unescape_html=False)},
        ]

    # -- the published loop and answer format -----------------------------------------------------------
    def plan(self, n: int) -> list[tuple[int, int]]:
        return plan_windows(n, self.window, self.step)

    def read(self, result: Result, m: int) -> list[int]:
        if result.finish_reason == "length":
            self.stats["cut_by_max_tokens"] += 1
        perm, how, repaired = parse_answer(result.text, m)
        self.stats[how] += 1
        self.stats["repaired"] += repaired
        return perm

    def rerank(
        self, queries: Mapping[str, str], candidates: Candidates, corpus: Mapping[str, str]
    ) -> dict[str, dict[str, float]]:
        other = sorted(qid for qid, docs in candidates.items() if len(docs) != self.depth)
        if other:
            log.info(
                "%s: %d quer%s do not have the published %d candidates (e.g. %r: %d)",
                self.name,
                len(other),
                "y" if len(other) == 1 else "ies",
                self.depth,
                other[0],
                len(candidates[other[0]]),
            )
        return super().rerank(queries, candidates, corpus)

    def report(self) -> None:
        s = self.stats
        if s["failed"]:
            log.warning(
                "%s: %d of %d window request(s) failed after retries; those windows keep their order",
                self.name,
                s["failed"],
                s["windows"],
            )
        unusual = s["open-answer"] + s["no-answer"] + s["unreadable"]
        if unusual or s["cut_by_max_tokens"]:
            log.warning(
                "%s: of %d replies, %d had no closed <answer> block after the reasoning (%d read after an "
                "unclosed <answer>, %d from the whole reply, %d unreadable); %d hit the %s-token limit",
                self.name,
                s["windows"],
                unusual,
                s["open-answer"],
                s["no-answer"],
                s["unreadable"],
                s["cut_by_max_tokens"],
                self.max_tokens,
            )
        if s["repaired"]:
            log.warning(
                "%s: %d of %d replies named missing, repeated or unknown passages and were repaired",
                self.name,
                s["repaired"],
                s["windows"],
            )


def _preset(name: str) -> Callable[[RerankerOptions], ReasonRankReranker]:
    def factory(options: RerankerOptions) -> ReasonRankReranker:
        return ReasonRankReranker(options_as(options, ReasonRankOptions), preset=name)

    return factory


def _any_checkpoint(options: RerankerOptions) -> ReasonRankReranker:
    return ReasonRankReranker(options_as(options, AnyReasonRankOptions))  # its options refuse a missing model


def _record(name: str, factory: RerankerFactory, description: str, entry: LaterReranker | None = None) -> RerankerMeta:
    """A ReasonRank record: an LLM behind an OpenAI-compatible endpoint; the tokenizer of the 512-token
    passage cut is read here; the published depth (100) and, for a preset, its published row."""
    published = (entry.get("published") if entry else None) or {}
    expansion = published.get("expansion") or ""
    settings = entry["settings"] if entry else {}
    ran: dict[str, JsonValue] = {  # the published settings, as the options name them (a preset runs exactly these)
        "model": settings.get("hub_id"),
        "tokenizer": settings.get("hub_id"),
        "window": settings.get("window_size"),
        "step": settings.get("step"),
        "temperature": settings.get("temperature"),
        "max_tokens": settings.get("max_tokens"),
        "max_passage_tokens": settings.get("passage_max_tokens"),
    }
    return RerankerMeta(
        name,
        factory,
        description,
        options=ReasonRankOptions if entry else AnyReasonRankOptions,
        packages=("openai", "ftfy", "transformers"),
        install="pip install 'r2med[llm,dense]'",
        weights=(("tokenizer", "tokenizer_config.json"),),
        llm=True,
        hub_id=entry["settings"]["hub_id"] if entry else None,
        depth=int(later_reranker("reasonrank-32b")["settings"]["rerank_depth"]),
        published_as=expansion[len("rerank:") :] if expansion.startswith("rerank:") else None,
        tolerance="llm-rerank",
        later=True,
        provenance=provenance(entry) if entry else {},
        published_options={k: v for k, v in ran.items() if v is not None},
    )


register_reranker(
    _record(
        "reasonrank",
        _any_checkpoint,
        "any ReasonRank checkpoint served as --model, with ReasonRank-32B's published prompt and settings (--base-url)",
    )
)
for _name in PRESETS:
    register_reranker(
        _record(
            _name,
            _preset(_name),
            f"{published_settings(_name)['hub_id']} listwise via "
            "--base-url (published prompt, window 20 / step 10, top 100)",
            later_reranker(_name),
        )
    )
