"""Agentic retrieval (Search-R1 / Search-O1 style): the LLM searches the task's own index in a loop.

Each turn the LLM writes reasoning and either a search request between the protocol's
search tags or a final answer.  r2med answers a search from the task's own retriever
(BM25 or dense: anything with ``search(queries, k) -> Run`` over the collection's corpus),
sends the top passages back between the protocol's result tags, and loops until the model
answers, stops searching, or the turn limit is reached.  The final answer becomes the
query's expansion (``hy_doc``).

Conversations advance turn by turn in lock-step: all open conversations' next requests go
to :meth:`r2med.infra.llm.LLMClient.chat_many` together (bounded concurrency, retries, cache), and
all their searches run as one retriever batch.  Because every request is cached by its full
message list, a re-run replays the loop without sending a request.

Tag formats are data (:class:`TagFormat`); the two built in follow Search-R1
(``<search>``/``<information>``/``<answer>``) and Search-O1 (``<|begin_search_query|>`` ...
``<|end_search_result|>``; the answer is the text after the reasoning).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Protocol

from ..errors import R2MedError
from ..runs.run import ranked
from .traces import strip_trace

if TYPE_CHECKING:
    from ..infra.json_types import JsonObject, JsonValue
    from ..infra.llm import LLMClient
    from ..retrieval.base import QueryText
    from ..runs.run import Run

log = logging.getLogger(__name__)


class Searcher(Protocol):
    """What the loop searches with: an indexed retriever of this process, or a running server's
    (:class:`~r2med.serve.client.RemoteRetriever`)."""

    def search(self, queries: Mapping[str, QueryText], k: int = ...) -> Run: ...


@dataclass(frozen=True)
class TagFormat:
    """The tags of one agentic protocol and its instruction template (``{question}``, ``{max_searches}``)."""

    name: str
    search_open: str
    search_close: str
    result_open: str
    result_close: str
    answer_open: str | None
    answer_close: str | None
    template: str

    def prompt(self, question: str, max_searches: int) -> str:
        """The instructions with the tags filled in (``{search_open}``...), then the question."""
        text = self.template.replace("{max_searches}", str(max_searches))
        for name in ("search_open", "search_close", "result_open", "result_close", "answer_open", "answer_close"):
            text = text.replace("{" + name + "}", getattr(self, name) or "")
        return text.replace("{question}", question)


SEARCH_R1 = TagFormat(
    name="search-r1",
    search_open="<search>",
    search_close="</search>",
    result_open="<information>",
    result_close="</information>",
    answer_open="<answer>",
    answer_close="</answer>",
    template=(
        "Answer the given question. Reason inside <think> and </think> every time you get new "
        "information. If you lack some knowledge, call the search engine by writing {search_open} query "
        "{search_close}; it returns the top results between {result_open} and {result_close}. You may "
        "search up to {max_searches} times. When no more knowledge is needed, give the answer inside "
        "{answer_open} and {answer_close}.\nQuestion: {question}\n"
    ),
)

SEARCH_O1 = TagFormat(
    name="search-o1",
    search_open="<|begin_search_query|>",
    search_close="<|end_search_query|>",
    result_open="<|begin_search_result|>",
    result_close="<|end_search_result|>",
    answer_open=None,
    answer_close=None,
    template=(
        "You are a reasoning assistant that can search a medical corpus to answer the question accurately. "
        "To search, write {search_open} your query {search_close}; the system then returns the most "
        "relevant passages as {result_open} ... {result_close}. You may search up to {max_searches} times. "
        "When you have enough information, write your final answer.\n\nQuestion: {question}\n"
    ),
)

PROTOCOLS: dict[str, TagFormat] = {SEARCH_R1.name: SEARCH_R1, SEARCH_O1.name: SEARCH_O1}


def get_protocol(name: str, **overrides: str) -> TagFormat:
    """A built-in tag format, optionally with some tags replaced (``search_open="<q>"``...)."""
    if name not in PROTOCOLS:
        raise R2MedError(f"unknown agentic protocol {name!r}; choose from: {', '.join(PROTOCOLS)}")
    return replace(PROTOCOLS[name], **{k: v for k, v in overrides.items() if v is not None})


def extract_answer(text: str, tags: TagFormat) -> str | None:
    if not tags.answer_open or not tags.answer_close:
        return None
    start = text.find(tags.answer_open)
    if start < 0:
        return None
    end = text.find(tags.answer_close, start + len(tags.answer_open))
    if end < 0:
        return None
    return text[start + len(tags.answer_open) : end].strip()


def extract_search(text: str, tags: TagFormat) -> str | None:
    """The last search request in a reply (the closing tag may be missing: it is the stop sequence)."""
    start = text.rfind(tags.search_open)
    if start < 0:
        return None
    query = text[start + len(tags.search_open) :]
    end = query.find(tags.search_close)
    if end >= 0:
        query = query[:end]
    query = query.strip()
    return query or None


def final_text(text: str, tags: TagFormat) -> str:
    """The expansion from a last reply: the answer tags' content, else the reply after any reasoning."""
    answer = extract_answer(text, tags)
    if answer is not None:
        return answer
    start = text.rfind(tags.search_open)
    if start >= 0:  # a dangling search at the turn limit is not part of the answer
        text = text[:start]
    return strip_trace(text, "think").strip()


@dataclass
class AgentTrace:
    """What happened for one query: searches (query, doc ids returned), turns used, how it stopped."""

    qid: str
    answer: str = ""
    searches: list[tuple[str, list[str]]] = field(default_factory=list)
    turns: int = 0
    stopped: str = ""  # "answer", "no-search", "turn-limit" or "error"
    error: str | None = None
    transcript: str = ""


class AgenticExpander:
    """Run the search loop for many queries against one indexed retriever over ``corpus``."""

    def __init__(
        self,
        client: LLMClient,
        retriever: Searcher,
        corpus: Mapping[str, str],
        tags: TagFormat = SEARCH_R1,
        max_turns: int = 4,
        top_k: int = 3,
        passage_words: int | None = 512,
        sampling: Mapping[str, JsonValue] | None = None,
        system: str | None = None,
    ):
        if max_turns < 1:
            raise R2MedError("--max-turns must be at least 1")
        if top_k < 1:
            raise R2MedError("--search-k must be at least 1")
        self.client, self.retriever, self.corpus = client, retriever, corpus
        self.position = {did: i for i, did in enumerate(corpus)}
        self.tags, self.max_turns, self.top_k = tags, int(max_turns), int(top_k)
        self.passage_words = passage_words
        self.sampling = dict(sampling or {})
        self.system = system

    def passages(self, doc_ids: list[str]) -> str:
        """The result block for retrieved docs: ``Doc i: text`` lines between the result tags."""
        lines = []
        for i, did in enumerate(doc_ids, start=1):
            text = " ".join(self.corpus[did].split())
            if self.passage_words:
                text = " ".join(text.split()[: self.passage_words])
            lines.append(f"Doc {i}: {text}")
        return f"{self.tags.result_open}\n" + "\n".join(lines) + f"\n{self.tags.result_close}"

    def search(self, requests: Mapping[str, str]) -> dict[str, list[str]]:
        """The top passages of each search request, best first (ties in corpus order)."""
        run = self.retriever.search(dict(requests), k=self.top_k)
        return {key: [d for d, _ in ranked(run.get(key, {}), self.position)][: self.top_k] for key in requests}

    def run(
        self,
        queries: Mapping[str, str],
        on_turn: Callable[[int, int], None] | None = None,
        on_retry: Callable[[str], None] | None = None,
    ) -> dict[str, AgentTrace]:
        traces = {qid: AgentTrace(qid) for qid in queries}
        conversations: dict[str, list[dict[str, str]]] = {}
        for qid, question in queries.items():
            messages = [{"role": "system", "content": self.system}] if self.system else []
            messages.append({"role": "user", "content": self.tags.prompt(question, self.max_turns - 1)})
            conversations[qid] = messages
        open_ids = list(queries)
        sampling: JsonObject = {**self.sampling, "stop": [self.tags.search_close]}
        for turn in range(1, self.max_turns + 1):
            if not open_ids:
                break
            batch = [conversations[q] for q in open_ids]
            results = self.client.chat_many(batch, on_result=None, on_retry=on_retry, **sampling)
            requests: dict[str, str] = {}
            for qid, res in zip(open_ids, results):
                trace = traces[qid]
                trace.turns = turn
                if not res.ok or res.text is None:  # ``ok`` holds a text
                    trace.stopped, trace.error = "error", res.error
                    continue
                text = res.text
                query = extract_search(text, self.tags)
                answer = extract_answer(text, self.tags)
                opened = self.tags.answer_open  # set wherever an answer is found
                if answer is not None and (
                    query is None or (opened is not None and text.rfind(opened) > text.rfind(self.tags.search_open))
                ):
                    trace.answer, trace.stopped = answer, "answer"
                elif query is None:
                    trace.answer, trace.stopped = final_text(text, self.tags), "no-search"
                elif turn == self.max_turns:
                    trace.answer, trace.stopped = final_text(text, self.tags), "turn-limit"
                else:
                    requests[qid] = query
                    continue
                trace.transcript += text
            found = self.search(requests) if requests else {}
            replies = {qid: res.text for qid, res in zip(open_ids, results) if res.text is not None}
            for qid, query in requests.items():
                docs = found[qid]
                traces[qid].searches.append((query, docs))
                assistant = replies[qid]
                if self.tags.search_close not in assistant[assistant.rfind(self.tags.search_open) :]:
                    assistant += self.tags.search_close  # the stop sequence is not echoed back
                block = self.passages(docs)
                traces[qid].transcript += f"{assistant}\n{block}\n"
                conversations[qid] = conversations[qid] + [
                    {"role": "assistant", "content": assistant},
                    {"role": "user", "content": block},
                ]
            open_ids = list(requests)
            if on_turn:
                on_turn(turn, len(open_ids))
        return traces
