"""A third benchmark family defined only in the tests: ``tiny`` -- two tasks (``tiny:alpha``, ``tiny:beta``) in one
hub dataset (``tiny-org/TinyBench``), its own names, aliases and protocol (depth 50, nDCG@10 and R@50).

Invented for the tests (it emulates no published benchmark): its documents and queries are generated words, its
judgments say which generated documents answer which query.  Everything it does goes through r2med's public family
type (:class:`r2med.data.benchmarks.Benchmark`) and hub helpers; it is registered with one line
(``register(TINY)``) -- no file of r2med names it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from r2med.data.benchmarks import Benchmark, HubRequest, Protocol, TaskColumn, TaskRow, TaskTable
from r2med.data.collection import Collection
from r2med.data.hub import download, resolve_files
from r2med.errors import OptionError
from r2med.measures import HEADLINE, Family, Measure

REPO = "tiny-org/TinyBench"
PIN = "7" * 40
TASKS = ("alpha", "beta")
PREFIX = "tiny:"
FILES = ("corpus.jsonl", "queries.jsonl", "qrels.jsonl")
PROTOCOL = Protocol(
    family="tiny",
    depth=50,
    measures=(HEADLINE, Measure(Family.RECALL, 50)),
    headline=HEADLINE,
    judgments="qrels.jsonl",
    documents="corpus.jsonl",
    exclusions=False,
    average="the mean of the 2 tasks' nDCG@10",
)

_WORDS = "heart lung kidney liver brain bone blood nerve skin muscle".split()


def hub_files() -> dict[str, bytes]:
    """The hub's files: ``<task>/corpus.jsonl``, ``<task>/queries.jsonl``, ``<task>/qrels.jsonl``."""
    files: dict[str, bytes] = {}
    for task in TASKS:
        docs = [{"id": f"{task}-d{i}", "text": f"{_WORDS[i]} tissue of {task}"} for i in range(10)]
        queries = [{"id": f"q{i}", "text": f"which {_WORDS[i]} tissue"} for i in range(4)]
        qrels = [{"q_id": f"q{i}", "p_id": f"{task}-d{i}", "score": 1} for i in range(4)]
        for name, rows in zip(FILES, (docs, queries, qrels)):
            files[f"{task}/{name}"] = "".join(json.dumps(r) + "\n" for r in rows).encode()
    return files


class Tiny(Benchmark):
    name = "tiny"
    title = "TINY"

    def task_names(self) -> tuple[str, ...]:
        return tuple(f"{PREFIX}{t}" for t in TASKS)

    def aliases(self) -> Mapping[str, tuple[str, ...]]:
        return {"tiny": self.task_names()}

    def canonical(self, name: str) -> str | None:
        text = name.strip().lower()
        if not text.startswith(PREFIX):
            return None
        if text[len(PREFIX) :] not in TASKS:
            raise OptionError(f"unknown TINY task {name!r}; choose from: {', '.join(TASKS)}")
        return text

    def hub_task(self, name: str) -> str:
        return str(self.canonical(name))

    def protocol(self, name: str) -> Protocol:
        return PROTOCOL

    def choices(self) -> str:
        return "TINY's tiny:<task> (tiny: the 2)"

    def hub_request(
        self, name: str, revision: str | None, expansions: Sequence[tuple[str, str]] = (), corpus: bool = True
    ) -> HubRequest:
        if expansions:
            raise OptionError(f"{name}: TINY's hub holds no expansions")
        task = str(self.canonical(name))[len(PREFIX) :]
        files = [f for f in FILES if corpus or f != "corpus.jsonl"]
        return HubRequest(REPO, tuple(f"{task}/{f}" for f in files), revision or PIN, "" if revision else "TINY's pin")

    def load(self, name: str, revision: str | None = None, strict: bool = False, corpus: bool = True) -> Collection:
        request = self.hub_request(name, revision, corpus=corpus)
        commit = resolve_files(request.repo_id, request.paths, request.revision).commit
        rows = {p.rsplit("/", 1)[1]: download(REPO, p, commit).read_text().splitlines() for p in request.paths}
        docs = {r["id"]: r["text"] for r in map(json.loads, rows.get("corpus.jsonl", []))}
        queries = {r["id"]: r["text"] for r in map(json.loads, rows["queries.jsonl"])}
        qrels: dict[str, dict[str, int]] = {}
        for r in map(json.loads, rows["qrels.jsonl"]):
            qrels.setdefault(r["q_id"], {})[r["p_id"]] = int(r["score"])
        return Collection(
            name=str(self.canonical(name)),
            corpus=docs,
            queries=queries,
            qrels=qrels,
            source=f"hf://datasets/{REPO}@{commit}",
            revision=commit,
            benchmark=self.name,
            corpus_read=corpus,
        )

    def rows(self) -> list[TaskRow]:
        facts = {"hub_id": REPO, "revision": PIN}
        return [TaskRow(n, self.name, 4, 10, 4, "generated", PIN, {"name": n, **facts}) for n in self.task_names()]

    def task_table(self, wide: bool) -> TaskTable:
        rows = tuple((r.name, f"{r.queries:,}", f"{r.docs:,}") for r in self.rows())
        columns = (TaskColumn("task", "left"), TaskColumn("queries"), TaskColumn("docs"))
        return TaskTable(f"TINY tasks (hub: {REPO})", columns, rows)


TINY = Tiny()
