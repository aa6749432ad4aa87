"""Whether a run was made on the data a published figure was computed on: component by component, by commit.

A run's data is what its task folder recorded, read as a typed :class:`~r2med.runs.record.RunData` (``source`` and
``revision``, the hub commit of its documents and examples; for a BRIGHT reasoning query set, its config's
``expansion``: the file it read -- whose snapshot names the commit it was read at -- and that commit).
:mod:`r2med.protocol.data_states` turns a commit into *content ids* (which upload each file at that commit is) and
says which data each published figure was computed on.  A run is graded against a figure only when every component
the figure names has the run's content: documents (or long documents), examples and -- for a reasoning figure -- the
reasoning set.  A figure of unknown data is shown and never graded; a commit the hub's record does not know is
unknown data too.  Where they differ the reason names both: which data the figure used and which the run used.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from ..data.bright import parse_name, protocol_problem, reasoning_config
from ..data.hub import snapshot_commit
from ..measures import HEADLINE, Measure
from ..protocol import bright, data_states
from ..protocol.data_states import UNKNOWN, DataState
from ..runs.record import ExpansionRecord, RunData


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


def _source_repo(source: str | None) -> tuple[str | None, str | None]:
    """(repository, commit) of a ``hf://datasets/<repo>@<commit>`` source."""
    if source is None or not source.startswith("hf://datasets/") or "@" not in source:
        return None, None
    repo, _, commit = source[len("hf://datasets/") :].rpartition("@")
    return repo, commit


def _reasoning_of(expansion: ExpansionRecord | None) -> tuple[str, str | None] | None:
    """(the reasoning config read, its commit) of a run of a BRIGHT reasoning set (its recorded ``expansion``);
    None: no reasoning set."""

    if expansion is None or expansion.method != "reason" or not expansion.llm:
        return None
    commit = snapshot_commit(expansion.file) if expansion.file is not None else None
    return reasoning_config(expansion.llm), commit or expansion.revision


def run_state(task: str, run: RunData) -> RunState:
    """The data one BRIGHT task folder's run (``run``: what its ``metrics.json`` records of its data) read, as
    content ids."""
    repo, commit = _source_repo(run.source)
    commit = run.revision or commit
    if repo is None:
        return RunState(None, commit, None, None)
    corpus = "long_documents" if parse_name(task).long else "documents"
    state = RunState(
        repo, commit, data_states.content(repo, commit, corpus), data_states.content(repo, commit, "examples")
    )
    reasoning = _reasoning_of(run.expansion)
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


def state_problem(task: str, data: RunData, state: DataState, figure: float | None = None) -> str | None:
    """Why a BRIGHT run (``data``: what its ``metrics.json`` records of its data) was not made on the data ``state``
    names (the data of the published ``figure``, shown in the reason), or None when it was."""
    run = run_state(task, data)
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
    task: str, run: RunData, key: FigureKey | None = None, measure: Measure = HEADLINE
) -> str | None:
    """Why one BRIGHT task folder's run (``run``: the data it recorded) is not graded against ``key``'s figure on
    ``task`` for its data (None: the pin's data when no key is named), or None when it is made on the figure's
    data."""
    setting = (run.protocol.documents, run.protocol.judgments) if run.protocol is not None else None
    problem = protocol_problem(task, run.source, setting)
    if problem is not None:
        return problem
    if key is None:
        return state_problem(task, run, pinned_state(task))
    return state_problem(task, run, figure_state(key, task, measure), key.figures(measure).get(task))


def unknown_figure(task: str, key: FigureKey | None, measure: Measure = HEADLINE) -> str | None:
    """A reason when ``key``'s figure on ``task`` (an R2MED figure) was made on data no source shows, else None."""
    if key is None:
        return None
    state = figure_state(key, task, measure)
    if state.known:
        return None
    return f"{task}: {_figure_words(key.figures(measure).get(task))} made on unknown data ({state.name}): not graded"
