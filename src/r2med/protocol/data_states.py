"""The data states of the hubs and of the published figures, typed, read lazily from the package data.

Files (every entry names its sources inside; docs/bright.md, "Which data each figure was made on", explains them):

* ``hub_history.json``: each hub repository r2med reads (``xlangai/BRIGHT``, ``mteb/BRIGHT``, ``R2MED/<Task>``),
  commit by commit as far as public sources reach -- the full commit where a source gives it, its date, which
  configs a source shows it holds or lacks, which it (re)uploaded, counts, and a *content id* per config naming the
  upload its file is (two commits with the same content id hold the same file).  What no source shows is absent;
* ``figure_states.json``: the data each published figure was computed on (documents, examples and -- for a figure
  of a reasoning query set -- the reasoning set, as content ids), with its evidence, or ``unknown``;
* ``mteb_results.json``: mteb's results repository's figures for R2MED and BRIGHT (v1 and v1.1, short and long
  documents) with the dataset revision and the model revision each was made at: a second published source.

:mod:`r2med.results.data_states` compares a run's data with a figure's, component by component.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import TypedDict

from ..measures import HEADLINE, Measure
from ..measures import measure as parse_measure

#: a component or figure whose data no source shows
UNKNOWN = "unknown"
#: an R2MED figure made on the task's pinned commit (R2MED/<Task>@<pin>)
PIN = "pin"
#: the BRIGHT components a state names (a long-document run reads ``long_documents`` in place of ``documents``)
COMPONENTS = ("documents", "examples", "reasoning")


def _text(name: str) -> str:
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


# The shapes of the package data files read here (r2med's own, checked by the tests).


class _CommitRow(TypedDict, total=False):
    """A commit of ``hub_history.json`` (:class:`HubCommit`'s fields as the file holds them)."""

    repo: str
    short: str
    sha: str | None
    date: str
    holds: list[str]
    lacks: list[str]
    uploaded: list[str]
    content: dict[str, str]
    counts: dict[str, int]
    evidence: str
    sources: list[str]
    note: str


class _RepoRow(TypedDict):
    repo: str
    #: component -> its path template
    components: dict[str, str]
    commits: list[_CommitRow]


class _HubHistory(TypedDict):
    _source: str
    _audit: str
    repos: list[_RepoRow]


class _RuleRow(TypedDict, total=False):
    """A rule of ``figure_states.json``: the figures it applies to and the data they were computed on."""

    family: str
    setting: str
    source: str
    queries: str
    documents: str
    examples: str
    reasoning: str | None
    name: str
    evidence: str


class _FigureStates(TypedDict):
    _source: str
    rules: list[_RuleRow]


class _MtebRow(TypedDict):
    """A row of ``mteb_results.json``: :class:`MtebFigure`'s fields, the measure as its name."""

    model: str
    model_revision: str
    mteb_task: str
    mteb_version: str
    version: str
    dataset: str
    dataset_revision: str
    task: str
    measure: str
    value: float
    evaluated: bool


class _MtebResults(TypedDict):
    _source: str
    _fields: str
    results_commit: str
    rows: list[_MtebRow]


@cache
def _hub_history() -> _HubHistory:
    data: _HubHistory = json.loads(_text("hub_history.json"))
    return data


@cache
def _figure_states() -> _FigureStates:
    data: _FigureStates = json.loads(_text("figure_states.json"))
    return data


@cache
def _mteb_results() -> _MtebResults:
    data: _MtebResults = json.loads(_text("mteb_results.json"))
    return data


# ---------------------------------------------------------------- the hubs' histories


@dataclass(frozen=True)
class HubCommit:
    """One commit of a hub repository as public sources show it."""

    repo: str
    short: str
    sha: str | None  #: the full commit; None: only the short form is known
    date: str  #: ``YYYY-MM-DD`` or ``unknown``
    holds: tuple[str, ...]  #: configs a source shows at this commit
    lacks: tuple[str, ...]  #: configs a source shows absent at this commit
    uploaded: tuple[str, ...]  #: configs a source shows (re)written by this commit
    content: tuple[tuple[str, str], ...]  #: config or component -> content id
    counts: tuple[tuple[str, int], ...]
    evidence: str  #: ``shown`` or ``inferred``
    sources: tuple[str, ...]

    def is_(self, revision: str) -> bool:
        """Whether ``revision`` (a full commit or a prefix of 7 or more characters) names this commit."""
        rev = revision.strip().lower()
        if len(rev) < 7:
            return False
        if self.sha:
            return self.sha.lower().startswith(rev)
        return rev.startswith(self.short.lower()) or self.short.lower().startswith(rev)

    def content_of(self, component: str) -> str | None:
        """The content id of ``component`` here (``documents``, ``examples``, ``long_documents``, ``reasoning`` or
        a reasoning config such as ``gpt4_reason``); None: no source shows it."""
        found = dict(self.content)
        if component in found:
            return found[component]
        if component.endswith("_reason"):
            return found.get("reasoning")
        return None

    def holds_config(self, config: str) -> bool | None:
        """Whether a source shows ``config`` here (True), shows it absent (False), or neither (None)."""
        if config in self.holds:
            return True
        if config in self.lacks:
            return False
        return None


def _commit(repo: str, row: _CommitRow) -> HubCommit:
    return HubCommit(
        repo=str(row.get("repo", repo)),
        short=str(row["short"]),
        sha=row.get("sha"),
        date=str(row.get("date", UNKNOWN)),
        holds=tuple(row.get("holds", ())),
        lacks=tuple(row.get("lacks", ())),
        uploaded=tuple(row.get("uploaded", ())),
        content=tuple(sorted((str(k), str(v)) for k, v in row.get("content", {}).items())),
        counts=tuple(sorted((str(k), int(v)) for k, v in row.get("counts", {}).items())),
        evidence=str(row.get("evidence", UNKNOWN)),
        sources=tuple(row.get("sources", ())),
    )


@cache
def hub_commits() -> tuple[HubCommit, ...]:
    """Every commit ``hub_history.json`` records, in its order (per repository: oldest first where dates are known)."""
    return tuple(_commit(r["repo"], c) for r in _hub_history()["repos"] for c in r["commits"])


def commits_of(repo: str) -> tuple[HubCommit, ...]:
    """The recorded commits of hub repository ``repo`` (``xlangai/BRIGHT``, ``R2MED/Biology``)."""
    return tuple(c for c in hub_commits() if c.repo.lower() == repo.lower())


def hub_commit(repo: str, revision: str | None) -> HubCommit | None:
    """The record of ``repo`` at ``revision`` (a commit, full or 7+ characters); None: no source names it."""
    if not revision:
        return None
    for c in commits_of(repo):
        if c.is_(revision):
            return c
    return None


def content(repo: str, revision: str | None, component: str) -> str | None:
    """The content id of ``component`` of ``repo`` at ``revision``; None: unknown (the commit or the component)."""
    found = hub_commit(repo, revision)
    return None if found is None else found.content_of(component)


def holds(repo: str, revision: str | None, config: str) -> bool | None:
    """Whether ``repo`` holds ``config`` at ``revision`` as sources show it (None: no source says)."""
    found = hub_commit(repo, revision)
    return None if found is None else found.holds_config(config)


# ---------------------------------------------------------------- the figures' states


@dataclass(frozen=True)
class DataState:
    """The data a published figure was computed on: content ids (``unknown``; ``pin``: an R2MED task's pinned
    commit), ``reasoning`` None where the figure's queries are the original ones."""

    documents: str
    examples: str
    reasoning: str | None
    name: str
    evidence: str

    @property
    def known(self) -> bool:
        parts = [self.documents, self.examples] + ([self.reasoning] if self.reasoning is not None else [])
        return UNKNOWN not in parts

    def words(self) -> str:
        """``documents and examples as at mteb/BRIGHT@c26703e, reasoning <id>`` (or ``unknown data``)."""
        if not self.known:
            return "unknown data"
        if self.documents == PIN:
            base = "the task's pinned commit"
        elif self.documents == self.examples:
            base = f"documents and examples of {self.documents}"
        else:
            base = f"documents of {self.documents}, examples of {self.examples}"
        return base + (f", reasoning set of {self.reasoning}" if self.reasoning else "")


@dataclass(frozen=True)
class _Rule:
    family: str
    setting: str
    source: str
    queries: str | None
    state: DataState

    def applies(self, family: str, setting: str, source: str, queries: str | None) -> bool:
        return (
            self.family == family
            and (not self.setting or self.setting == setting)
            and source.startswith(self.source)
            and (self.queries is None or self.queries == queries)
        )


@cache
def _rules() -> tuple[_Rule, ...]:
    out = []
    for r in _figure_states()["rules"]:
        state = DataState(
            documents=str(r["documents"]),
            examples=str(r["examples"]),
            reasoning=r.get("reasoning"),
            name=str(r["name"]),
            evidence=str(r["evidence"]),
        )
        out.append(_Rule(str(r["family"]), str(r["setting"]), str(r["source"]), r.get("queries"), state))
    return tuple(out)


def figure_state(family: str, setting: str, source: str, queries: str | None = None) -> DataState:
    """The data a figure of ``family`` (``bright``, ``r2med``) from ``setting`` and ``source`` was computed on;
    ``queries``: BRIGHT's queries column (``original``, ``gpt4_reason``).  A reasoning figure whose rule names no
    reasoning set has an unknown one."""
    original = queries in (None, "original")
    state = next(
        (rule.state for rule in _rules() if rule.applies(family, setting, source, queries)),
        DataState(UNKNOWN, UNKNOWN, None, "a figure whose data no source shows", "no rule names its source"),
    )
    reasoning = None if original else (state.reasoning or UNKNOWN)  # a reasoning figure always names its set
    return DataState(state.documents, state.examples, reasoning, state.name, state.evidence)


# ---------------------------------------------------------------- mteb's results


@dataclass(frozen=True)
class MtebFigure:
    """One figure of embeddings-benchmark/results: ``model`` at ``model_revision`` on ``task`` (r2med's name) of
    ``dataset`` at ``dataset_revision``, ``measure`` x100."""

    model: str
    model_revision: str
    mteb_task: str
    mteb_version: str
    version: str  #: ``R2MED``, ``BRIGHT v1`` or ``BRIGHT v1.1``
    dataset: str
    dataset_revision: str
    task: str
    measure: Measure  #: parsed where the file is read (``nDCG@10``, ``R@1``)
    value: float
    evaluated: bool  #: False: a figure imported into mteb (evaluation_time 0, no model revision), not run by it


@cache
def mteb_figures() -> tuple[MtebFigure, ...]:
    return tuple(
        MtebFigure(
            model=row["model"],
            model_revision=row["model_revision"],
            mteb_task=row["mteb_task"],
            mteb_version=row["mteb_version"],
            version=row["version"],
            dataset=row["dataset"],
            dataset_revision=row["dataset_revision"],
            task=row["task"],
            measure=parse_measure(row["measure"]),
            value=row["value"],
            evaluated=row["evaluated"],
        )
        for row in _mteb_results()["rows"]
    )


def mteb_results_commit() -> str:
    return _mteb_results()["results_commit"]


def mteb_figures_of(model: str, task: str | None = None, measure: Measure = HEADLINE) -> tuple[MtebFigure, ...]:
    """mteb's figures of hub model ``model`` (``BAAI/bge-large-en-v1.5``; case aside), on ``task`` (None: any)."""
    return tuple(
        f
        for f in mteb_figures()
        if f.model.lower() == model.lower() and f.measure == measure and (task is None or f.task == task)
    )
