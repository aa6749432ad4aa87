"""Whether a run was made on the data a published figure was computed on: component by component, by commit.

A run's data is what its task folder recorded (``metrics.json``: ``source`` and ``revision``, the hub commit of its
documents and examples; for a BRIGHT reasoning query set, the file it read -- whose snapshot names the commit it was
read at -- and that file's fingerprint, ``expansion_fingerprint``).  :mod:`r2med.protocol.data_states` turns a
commit into *content ids* (which upload each file at that commit is) and says which data each published figure was
computed on.  A run is graded against a figure only when every component the figure names has the run's content:
documents (or long documents), examples and -- for a reasoning figure -- the reasoning set.  A figure of unknown
data is shown and never graded; a commit the hub's record does not know is unknown data too.  Where they differ the
reason names both: which data the figure used and which the run used.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from ..data.bright import parse_name, protocol_problem, reasoning_config
from ..data.hub import snapshot_commit
from ..measures import HEADLINE, Measure
from ..protocol import bright, data_states
from ..protocol.data_states import UNKNOWN, DataState


class FigureKey(Protocol):
    """What this module asks of a published configuration (:class:`r2med.results.published.PublishedKey` and
    BRIGHT's key, which also answers ``sources``): its family, LLM, setting, source and figures."""

    @property
    def family(self) -> str: ...

    @property
    def llm(self) -> str: ...

    def setting(self, measure: Measure | None = None) -> str: ...

    def source(self) -> str: ...

    def figures(self, measure: Measure = HEADLINE) -> dict[str, float]: ...


@dataclass(frozen=True)
class RunState:
    """The hub data one task folder's run read: repository, the commit of its documents and examples and their
    content ids (None: the record does not know the commit), and of its reasoning set when it read one."""

    repo: str | None
    commit: str | None
    documents: str | None
    examples: str | None
    reasoning_commit: str | None = None
    reasoning: str | None = None

    def words(self, reasoning: bool) -> str:
        where = f"{self.repo}@{self.commit[:12]}" if self.repo and self.commit else "data not from the hub"
        if self.documents is None or self.examples is None:
            what = "a commit whose content no source shows"
        elif self.documents == self.examples:
            what = f"documents and examples of {self.documents}"
        else:
            what = f"documents of {self.documents}, examples of {self.examples}"
        out = f"{where} ({what})"
        if reasoning:
            at = self.reasoning_commit[:12] if self.reasoning_commit else "an unrecorded commit"
            out += f", reasoning set read at {at} ({self.reasoning or 'content no source shows'})"
        return out


def _source_repo(source: object) -> tuple[str | None, str | None]:
    """(repository, commit) of a ``hf://datasets/<repo>@<commit>`` source."""
    if not isinstance(source, str) or not source.startswith("hf://datasets/") or "@" not in source:
        return None, None
    repo, _, commit = source[len("hf://datasets/") :].rpartition("@")
    return repo, commit


def _reasoning_of(config: object) -> tuple[str, str | None] | None:
    """(the reasoning config read, its commit) of a run of a BRIGHT reasoning set; None: no reasoning set."""

    if not isinstance(config, Mapping):
        return None
    expansion = config.get("expansion")
    if not isinstance(expansion, Mapping) or expansion.get("method") != "reason" or not expansion.get("llm"):
        return None
    file = expansion.get("file")
    commit = snapshot_commit(file) if isinstance(file, str) else None
    return reasoning_config(str(expansion["llm"])), commit or expansion.get("revision")


def run_state(task: str, record: Mapping[str, Any]) -> RunState:
    """The data one BRIGHT task folder's run (its ``metrics.json``) read, as content ids."""
    repo, commit = _source_repo(record.get("source"))
    commit = str(record.get("revision") or commit or "") or None
    if repo is None:
        return RunState(None, commit, None, None)
    corpus = "long_documents" if parse_name(task).long else "documents"
    state = RunState(
        repo, commit, data_states.content(repo, commit, corpus), data_states.content(repo, commit, "examples")
    )
    reasoning = _reasoning_of(record.get("config"))
    if reasoning is None:
        return state
    config, at = reasoning
    return RunState(
        state.repo, state.commit, state.documents, state.examples, at, data_states.content(repo, at, config)
    )


def figure_state(key: FigureKey, task: str, measure: Measure = HEADLINE) -> DataState:
    """The data ``key``'s published figure of ``measure`` on ``task`` was computed on."""
    sources = getattr(key, "sources", None)
    if callable(sources):  # a key with a source per task (BRIGHT's) and its queries column
        setting, source = sources(measure).get(task, ("", ""))
        return data_states.figure_state(key.family, setting, source, _queries_column(key.llm))
    return data_states.figure_state(key.family, key.setting(measure), key.source())


def _queries_column(llm: str) -> str:
    """BRIGHT's published-figures queries column of reasoning set ``llm`` (``gpt4`` -> ``gpt4_reason``;
    ``none``: ``original``)."""
    if llm == "none":
        return "original"
    for r in bright.hub().reasoning_sets:
        if llm.lower() == r.name.lower():
            return r.config
    return llm


def pinned_state(task: str) -> DataState:
    """The data BRIGHT's pin holds for ``task`` (what a run is compared with when no figure is named)."""

    hub = bright.hub()
    corpus = "long_documents" if parse_name(task).long else "documents"
    documents = data_states.content(hub.repo_id, hub.revision, corpus) or UNKNOWN
    examples = data_states.content(hub.repo_id, hub.revision, "examples") or UNKNOWN
    return DataState(documents, examples, None, f"{hub.repo_id} at the pin {hub.revision[:12]}", "the pin")


def _figure_words(figure: float | None) -> str:
    return "figure" if figure is None else f"published {figure:.2f}"


def state_problem(task: str, record: Mapping[str, Any], state: DataState, figure: float | None = None) -> str | None:
    """Why a BRIGHT run (its ``metrics.json``) was not made on the data ``state`` names (the data of the published
    ``figure``, shown in the reason), or None when it was."""
    run = run_state(task, record)
    reasoning = state.reasoning is not None
    what = _figure_words(figure)
    if not state.known:
        return f"{task}: {what} made on unknown data ({state.name}): not graded; run on {run.words(reasoning)}"
    same = run.documents == state.documents and run.examples == state.examples
    if reasoning:
        same = same and run.reasoning == state.reasoning
    if same:
        return None
    return f"{task}: {what} made on {state.words()} ({state.name}), not graded; run on {run.words(reasoning)}"


def bright_data_problem(
    task: str, record: Mapping[str, Any], key: FigureKey | None = None, measure: Measure = HEADLINE
) -> str | None:
    """Why one BRIGHT task folder's run is not graded against ``key``'s figure on ``task`` for its data (None: the
    pin's data when no key is named), or None when it is made on the figure's data."""
    problem = protocol_problem(task, record)
    if problem is not None:
        return problem
    if key is None:
        return state_problem(task, record, pinned_state(task))
    return state_problem(task, record, figure_state(key, task, measure), key.figures(measure).get(task))


def unknown_figure(task: str, key: FigureKey | None, measure: Measure = HEADLINE) -> str | None:
    """A reason when ``key``'s figure on ``task`` (an R2MED figure) was made on data no source shows, else None."""
    if key is None:
        return None
    state = figure_state(key, task, measure)
    if state.known:
        return None
    return f"{task}: {_figure_words(key.figures(measure).get(task))} made on unknown data ({state.name}): not graded"
