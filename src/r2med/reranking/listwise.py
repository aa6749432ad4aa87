"""LLM listwise reranking: RankGPT-style sliding-window permutations, optionally InsertRank-style.

Each query's candidates are reordered by an LLM behind an OpenAI-compatible endpoint, one
window at a time.  Windows slide from the bottom of the list to the top (RankGPT): with
``n`` candidates, window ``w`` and step ``s`` they cover ``[n-w, n)``, ``[n-w-s, n-s)``, ... and
end with the top window ``[0, w)``, so a relevant document can climb from the bottom of the list
to the top in one pass.  Each window's prompt numbers the passages ``[1]..[m]`` and asks for a
ranking like ``[2] > [1] > [3]``; ``with_scores`` adds each passage's first-stage score to the
prompt (InsertRank).  Every reply is parsed robustly (:func:`parse_permutation`): a reasoning
trace before ``</think>`` is dropped, out-of-range and repeated identifiers are ignored, and the
missing ones follow in their previous order.  A request that still fails after retries leaves
its window as it was (counted in a warning).

Requests go through :class:`r2med.infra.llm.LLMClient` (bounded concurrency across queries, retries
with backoff, the on-disk answer cache): the windows of different queries are sent together,
and a re-run makes no request at all.  Scores are ``n - position`` (higher first).

:class:`ListwiseReranker` runs the window loop; what a recipe decides -- the window plan, the
passage text, the messages of a window, how a reply is read, what is counted and warned about --
are methods a recipe overrides (ReasonRank: :mod:`r2med.reranking.reasonrank`).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence

from ..errors import R2MedError
from ..expansion.traces import strip_trace
from ..infra import progress
from ..infra.json_types import JsonObject, JsonValue
from ..infra.llm import LLMClient, Result
from ..typed.options import ListwiseOptions, LlmEndpointOptions
from ..typed.parse import RerankerOptions
from .base import Candidates, RerankerMeta, options_as, register_reranker

log = logging.getLogger(__name__)

PROMPT_VERSION = 1
SYSTEM = "You are an expert medical search assistant that ranks passages by how relevant they are to a query."


def windows(n: int, window: int, step: int) -> list[tuple[int, int]]:
    """The ``[start, end)`` windows of one pass, bottom to top, the last one ``[0, window)``."""
    if window < 2 or step < 1:
        raise R2MedError("listwise reranking needs window >= 2 and step >= 1")
    if n <= 1:
        return []
    out = []
    end, start = n, max(0, n - window)
    while start > 0:
        out.append((start, end))
        end, start = end - step, start - step
    out.append((0, min(window, n)))  # always finish with the full top window
    return out


def parse_permutation(text: str, m: int) -> tuple[list[int], bool]:
    """0-based order of ``m`` passages from an LLM reply, repaired; and whether it needed repair.

    Identifiers are read as ``[k]`` (or bare numbers when the reply has no brackets), after any
    reasoning trace ending in ``</think>``.  Identifiers outside ``1..m`` and repeats are dropped;
    passages never named follow in their previous order.
    """
    answer = strip_trace(text or "", "think")
    found = re.findall(r"\[\s*(\d+)\s*\]", answer) or re.findall(r"\b(\d+)\b", answer)
    order: list[int] = []
    seen: set[int] = set()
    repaired = False
    for token in found:
        k = int(token) - 1
        if not 0 <= k < m or k in seen:
            repaired = True
            continue
        seen.add(k)
        order.append(k)
    missing = [k for k in range(m) if k not in seen]
    return order + missing, repaired or bool(missing)


def _cut_words(text: str, limit: int | None) -> str:
    if not limit:
        return " ".join(text.split())
    words = text.split()
    return " ".join(words[:limit])


def ranking_messages(
    query: str, passages: Sequence[str], scores: Sequence[float] | None = None, score_label: str = "first-stage score"
) -> list[dict[str, str]]:
    """The chat messages asking for a ranking of ``passages`` (numbered ``[1]..[m]``)."""
    m = len(passages)
    lines = [f"Rank the {m} passages below by their relevance to the search query.", "", f"Query: {query}", ""]
    if scores is not None:
        lines += [
            f"Each passage shows its {score_label} from a first-stage retriever; higher means the retriever "
            "found it more relevant. Use it as a hint, not as the answer.",
            "",
        ]
    for i, passage in enumerate(passages, start=1):
        hint = f" ({score_label}: {scores[i - 1]:.4g})" if scores is not None else ""
        lines.append(f"[{i}]{hint} {passage}")
    lines += [
        "",
        f"Query: {query}",
        f"List all {m} passage identifiers from most to least relevant, in the form [2] > [1] > [3]. "
        "Answer with the ranking only.",
    ]
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "\n".join(lines)}]


class ListwiseReranker:
    """Sliding-window permutation reranking with an LLM (see the module docstring)."""

    #: the request timeout (seconds) when its options set none
    timeout = 300.0

    def __init__(
        self,
        endpoint: LlmEndpointOptions,
        window: int = 20,
        step: int = 10,
        with_scores: bool = False,
        temperature: float | None = 0.0,
        max_tokens: int | None = None,
        max_passage_words: int | None = 300,
        name: str = "listwise",
        client: LLMClient | None = None,
    ):
        """A listwise reranker asking the LLM ``endpoint`` names (its :meth:`LlmEndpointOptions.client`, unless
        ``client`` is given) with the window plan, prompt and sampling given."""
        windows(2, window, step)  # validate
        self.window, self.step = int(window), int(step)
        self.with_scores = bool(with_scores)
        self.temperature, self.max_tokens = temperature, max_tokens
        self.max_passage_words = max_passage_words
        self.name = name
        self.client = client if client is not None else endpoint.client(self.timeout)
        self.stats = self.fresh_stats()

    @classmethod
    def from_options(cls, options: RerankerOptions) -> ListwiseReranker:
        """The reranker ``listwise`` options name (what is not set: RankGPT's window 20, step 10, temperature 0,
        passages cut at 300 words)."""
        o = options_as(options, ListwiseOptions)
        return cls(
            o,
            window=o.window if o.window is not None else 20,
            step=o.step if o.step is not None else 10,
            with_scores=bool(o.with_scores),
            temperature=o.temperature if o.temperature is not None else 0.0,
            max_tokens=o.max_tokens,
            max_passage_words=o.max_passage_words if o.max_passage_words is not None else 300,
        )

    def config(self) -> JsonObject:
        return {
            "reranker": self.name,
            "kind": "listwise",
            **self.client.describe(),
            "window": self.window,
            "step": self.step,
            "with_scores": self.with_scores,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "max_passage_words": self.max_passage_words,
            "prompt_version": PROMPT_VERSION,
        }

    def _sampling(self) -> dict[str, JsonValue]:
        return {k: v for k, v in (("temperature", self.temperature), ("max_tokens", self.max_tokens)) if v is not None}

    # -- what a listwise recipe decides (subclasses: ReasonRank, r2med.reranking.reasonrank) ----------------------
    def plan(self, n: int) -> list[tuple[int, int]]:
        """The ``[start, end)`` windows of one pass over ``n`` candidates, in the order they are sent."""
        return windows(n, self.window, self.step)

    def passage(self, text: str) -> str:
        """A document's text as it goes into the prompt."""
        return _cut_words(text, self.max_passage_words)

    def messages(
        self, query: str, passages: Sequence[str], scores: Sequence[float] | None = None
    ) -> list[dict[str, str]]:
        """The chat messages for one window (``passages`` from :meth:`passage`; ``scores``: their first-stage
        scores)."""
        return ranking_messages(query, passages, scores if self.with_scores else None)

    def read(self, result: Result, m: int) -> list[int]:
        """The 0-based order of a window of ``m`` passages from a successful reply (counted in ``stats``)."""
        perm, repaired = parse_permutation(result.text or "", m)
        self.stats["repaired"] += repaired
        return perm

    def fresh_stats(self) -> dict[str, int]:
        """The counters of one :meth:`rerank` call (the warnings after it are per task)."""
        return {"windows": 0, "repaired": 0, "failed": 0}

    def report(self) -> None:
        """Warn about what went wrong in the last :meth:`rerank` call."""
        if self.stats["failed"]:
            log.warning(
                "%s: %d of %d window request(s) failed after retries; those windows keep their order",
                self.name,
                self.stats["failed"],
                self.stats["windows"],
            )
        if self.stats["repaired"]:
            log.warning(
                "%s: %d of %d repl(ies) named missing, repeated or unknown passages and were repaired",
                self.name,
                self.stats["repaired"],
                self.stats["windows"],
            )

    # -- the sliding window ---------------------------------------------------------------------------------
    def rerank(
        self, queries: Mapping[str, str], candidates: Candidates, corpus: Mapping[str, str]
    ) -> dict[str, dict[str, float]]:
        self.stats = self.fresh_stats()
        order = {qid: [did for did, _ in docs] for qid, docs in candidates.items()}
        first_score = {qid: dict(docs) for qid, docs in candidates.items()}
        plans = {qid: self.plan(len(ids)) for qid, ids in order.items()}
        rounds = max((len(p) for p in plans.values()), default=0)
        texts = {did: self.passage(corpus[did]) for ids in order.values() for did in ids}
        total = sum(len(p) for p in plans.values())
        with progress.task(f"{self.name}: windows", total=total, unit="windows", counters=("failed", "retried")) as bar:
            for r in range(rounds):
                batch, owners = [], []
                for qid, plan in plans.items():
                    if r >= len(plan):
                        continue
                    start, end = plan[r]
                    ids = order[qid][start:end]
                    batch.append(
                        self.messages(queries[qid], [texts[d] for d in ids], [first_score[qid][d] for d in ids])
                    )
                    owners.append((qid, start, end))
                results = self.client.chat_many(
                    batch,
                    on_result=lambda i, res: bar.advance(1, failed=int(not res.ok)),
                    on_retry=lambda error: bar.count(retried=1),
                    **self._sampling(),
                )
                for (qid, start, end), result in zip(owners, results):
                    self.stats["windows"] += 1
                    ids = order[qid][start:end]
                    if not result.ok:
                        self.stats["failed"] += 1
                        log.debug("%s window %d-%d kept as is: %s", qid, start, end, result.error)
                        continue
                    order[qid][start:end] = [ids[k] for k in self.read(result, len(ids))]
        self.report()
        return {qid: {did: float(len(ids) - i) for i, did in enumerate(ids)} for qid, ids in order.items()}


register_reranker(
    RerankerMeta(
        "listwise",
        ListwiseReranker.from_options,
        "LLM sliding-window permutation reranking (RankGPT; --with-scores: InsertRank) via --model/--base-url",
        options=ListwiseOptions,
        packages=("openai",),
        install="pip install 'r2med[llm]'",
        weights=(),
        llm=True,
    )
)
