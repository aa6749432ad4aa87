"""A third benchmark family defined only in the tests: ``tiny`` -- two tasks (``tiny:alpha``, ``tiny:beta``) in one
hub dataset (``tiny-org/TinyBench``), its own names, aliases and protocol (depth 50, nDCG@10 and R@50), and a
published table of two figures (BM25's nDCG@10 on each task, :data:`FIGURES`).

Invented for the tests (it emulates no published benchmark): its documents and queries are generated words, its
judgments say which generated documents answer which query, and its "published" figures are made up for the tests
(BM25 ranks each query's one relevant document first, nDCG@10 1.0 by hand: alpha's figure 100.0 is met, beta's 90.0
is 10 points off -- beyond BM25's tolerance).  Everything it does goes through r2med's public family
type (:class:`r2med.data.benchmarks.Benchmark`) and hub helpers; it is registered with one line
(``register(TINY)``) -- no file of r2med names it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from r2med.data.benchmarks import Benchmark, HubRequest, Protocol, TaskColumn, TaskRow, TaskTable
from r2med.data.collection import Collection
from r2med.data.hub import download, resolve_files
from r2med.errors import OptionError
from r2med.measures import HEADLINE, Family, Measure
from r2med.results.grading import HEADLINE_DEPTH, Published, RerankSpec, RetrieverSpec, retriever_spec
from r2med.results.published import PublishedKey
from r2med.results.reproduction import Target
from r2med.runs.record import RunData
from r2med.steps import RerankStep

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

#: its published table: BM25's nDCG@10 (x100) per task (invented for the tests, see above)
FIGURES = {"tiny:alpha": 100.0, "tiny:beta": 90.0}
SETTING = "tiny_paper"
SOURCE = "TINY's invented table (tests/tiny_benchmark.py)"

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


class TinyKey(PublishedKey):
    """A row of TINY's table: its family, measure, figures and source."""

    @property
    def family(self) -> str:
        return "tiny"

    @property
    def tolerance_source(self) -> str:
        return " (published figures: TINY's invented table)"

    def figures(self, measure: Measure = HEADLINE) -> dict[str, float]:
        return dict(FIGURES) if measure == HEADLINE and self.retriever == "bm25" else {}

    def average_tasks(self, measure: Measure = HEADLINE) -> tuple[str, ...]:
        return tuple(FIGURES)

    def setting(self, measure: Measure | None = None) -> str:
        return SETTING

    def source(self) -> str:
        return SOURCE


KEY = TinyKey("bm25")


class TinyTable:
    """TINY's published table as r2med grades it (:class:`r2med.results.grading.PublishedTable`): one row, BM25,
    graded on the hub's data at the pin only."""

    settings = (SETTING,)
    run_depth: int | None = None
    expansions_with_data = False

    def targets(
        self, settings: tuple[str, ...], retrievers: Iterable[str] | None, tasks: list[str] | None
    ) -> list[Target]:
        if SETTING not in settings or (retrievers and KEY.system not in set(retrievers)):
            return []
        wanted = set(tasks) if tasks is not None else set(FIGURES)
        return [Target(KEY, SETTING, task, figure, SOURCE) for task, figure in FIGURES.items() if task in wanted]

    def no_targets(self, retrievers: Iterable[str], settings: tuple[str, ...], tasks: list[str] | None) -> str:
        return f"no published TINY figures for {', '.join(sorted(retrievers))}; TINY's retrievers: bm25"

    def unpublished(self, settings: tuple[str, ...] | None) -> list[tuple[str, str]]:
        return []

    def unreproduced(self, settings: tuple[str, ...] | None) -> list[tuple[str, str]]:
        return []

    def query_builder(self, key: PublishedKey, folders: list[Path], revision: str | None) -> None:
        return None  # no expanded rows

    def configurations(self) -> tuple[PublishedKey, ...]:
        return (KEY,)

    def spec(self, key: PublishedKey) -> RetrieverSpec | RerankSpec | None:
        return retriever_spec(key, Published(at_least=HEADLINE_DEPTH)) if key == KEY else None

    def by_label(self, label: str) -> PublishedKey | None:
        return KEY if label == KEY.label else None

    def examples(self) -> tuple[str, ...]:
        return (KEY.label,)

    def key_for(self, retriever: str, method: str, llm: str) -> PublishedKey | None:
        return KEY if (retriever, method) == (KEY.system, "none") else None

    def rerank_candidates(
        self, rows: Mapping[PublishedKey, RerankSpec], first: str, step: RerankStep
    ) -> list[PublishedKey]:
        return []

    def data_problem(
        self, task: str, run: RunData, key: PublishedKey | None = None, measure: Measure = HEADLINE
    ) -> str | None:
        if run.source == f"hf://datasets/{REPO}@{PIN}":  # the typed record's field: TINY's hub data at its pin
            return None
        return f"{task}: not TINY's hub data at {PIN[:12]}"

    def settings_dtype(self, model: str) -> tuple[str | None] | None:
        return None

    def not_reproducible(self) -> list[tuple[str, str, int]]:
        return []


TABLE = TinyTable()


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

    def published(self) -> TinyTable:
        return TABLE


TINY = Tiny()
