"""What the reports say of figures made by a model trained on data rebuilt from a benchmark's documents: a mark on
every such figure and a line naming the model, its training data and the source that shows it.

The facts are ``protocol/bright_contamination.json`` (:func:`r2med.protocol.bright.contamination`): ReasonIR's
synthetic data is generated from documents of all 12 BRIGHT corpora, and ReasonIR-8B, every DIVER-Retriever
checkpoint and Reason-ModernColBERT are trained on it; RaDeR's training data retrieves from BRIGHT's TheoremQA
theorems.  R2MED's Biology *is* BRIGHT biology's corpus, so it is touched too; a long-document setting
(``bright:biology:long``) holds the same pages' text and is marked with its task.

Which models made a result is read from its record (``metrics.json``'s ``config``), through lookups, never from
its name: the checkpoints it recorded (a dense run's ``encoder.model`` and ``query_model``, a reranker's ``model``),
else its registry record's (:attr:`r2med.retrieval.registry.RetrieverMeta.contamination`), and the same for every
run it was made from (a reranked run's ``first_stage``, a fused run's ``inputs``).  The leaderboard marks cells
through its mark hook (:attr:`r2med.report.board.BoardCell.marks`) with :data:`MARK` -- every task cell a model of the
row's result was trained on, and the row's Average when a task behind it is marked -- and one legend line per model.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

from ..data.names import hub_task, is_hub_task
from ..infra.json_types import JsonValue
from ..protocol.bright import Contamination, contamination_of, tasks
from ..reranking.base import RERANKERS
from ..retrieval.registry import RETRIEVERS
from ..runs.record import RecordedConfig

if TYPE_CHECKING:
    from ..results.folders import System
    from .mark_hooks import BoardView

#: The mark of a figure made by a model trained on data rebuilt from the task's documents.
MARK = "‡"


def _checkpoints(config: RecordedConfig) -> list[str]:
    """The checkpoints one step of a record names: its encoder's (documents and queries), its reranker's."""
    found = []
    if config.encoder is not None:
        found += [m for m in (config.encoder.model, config.encoder.query_model) if m is not None]
    if config.reranker is not None and config.reranker.model is not None:
        found.append(config.reranker.model)
    return found


def _steps(config: RecordedConfig) -> Iterator[RecordedConfig]:
    """``config`` and the records of every run it was made from (a reranked run's first stage, a fused run's
    inputs), depth first."""
    yield config
    inner = [config.first_stage.config] if config.first_stage is not None else []
    inner += [item.config for item in config.inputs or ()]
    for step in inner:
        if step is not None:
            yield from _steps(step)


def _registry_facts(config: RecordedConfig) -> tuple[Contamination, ...]:
    """The contamination of the registry record a step ran (its retriever or reranker by name), for a step that
    recorded no checkpoint (an API embedder, BM25, an older record)."""

    out: list[Contamination] = []
    retriever = config.retriever
    if retriever is not None and (meta := RETRIEVERS.get(retriever)) is not None:
        out += meta.contamination
    name = config.reranker.reranker if config.reranker is not None else None
    if name is not None and (rmeta := RERANKERS.get(name)) is not None:
        out += rmeta.contamination
    return tuple(out)


def contamination_of_record(config: RecordedConfig | None) -> tuple[Contamination, ...]:
    """Every contamination fact of the models a recorded result ran (see the module docstring), each once."""
    found: dict[tuple[str, str], Contamination] = {}
    for step in _steps(config) if config is not None else ():
        checkpoints = _checkpoints(step)
        facts = [c for ckpt in checkpoints for c in contamination_of(ckpt)] if checkpoints else _registry_facts(step)
        for c in facts:
            found.setdefault((c.model, c.training_set), c)
    return tuple(found.values())


def touches(fact: Contamination, task: str) -> bool:
    """Whether ``fact``'s training data was built from the documents of ``task`` (an r2med task name: BRIGHT's
    long-document setting reads its task's documents' pages; R2MED's Biology is BRIGHT biology's corpus)."""
    if not is_hub_task(task):
        return False
    return hub_task(task) in fact.qualified_tasks()


def tasks_text(touched: Sequence[str]) -> str:
    """Tasks a training set touches (``Contamination.qualified_tasks()``) in words: ``all 12 BRIGHT tasks and R2MED's
    Biology``, or their names."""
    every = [t.qualified_name for t in tasks()]
    if all(t in touched for t in every):
        others = [t for t in touched if t not in every]
        return f"all {len(every)} BRIGHT tasks" + (f" and R2MED's {', '.join(others)}" if others else "")
    return ", ".join(touched)


def legend_line(fact: Contamination) -> str:
    """The line explaining :data:`MARK` for one model: its training data, the tasks whose documents it was built
    from, how sure the source is, and the first source."""
    return (
        f"{MARK} {fact.model} was trained on {fact.training_set}, built from the documents of "
        f"{tasks_text(fact.qualified_tasks())} "
        f"({fact.certainty}: {fact.sources[0]})."
    )


def mark_contamination(board: BoardView, systems: Sequence[System]) -> None:
    """Mark each leaderboard cell whose figure a model trained on that task's documents made (and the Average of a
    row with such a task), through the board's mark hook, with one legend line per model."""
    used: dict[tuple[str, str], Contamination] = {}
    for row, system in zip(board.rows, systems):  # the system rows come first, in order
        marked: set[str] = set()
        for task in board.tasks:
            result = system.tasks.get(task)
            cell = row.cells[task]
            if result is None or cell.value is None:
                continue
            facts = [c for c in contamination_of_record(result.config) if touches(c, task)]
            if facts and MARK not in cell.marks:
                cell.marks.append(MARK)
            if facts:
                marked.add(task)
            for c in facts:
                used.setdefault((c.model, c.training_set), c)
        for col in board.columns[len(board.tasks) :]:  # an average over a marked task
            over = marked.intersection(board.average_tasks(col))
            if over and row.cells[col].value is not None and MARK not in row.cells[col].marks:
                row.cells[col].marks.append(MARK)
    lines = [legend_line(c) for c in used.values()]
    if lines:  # the first explains the mark; one more line per other model
        board.marks[MARK] = lines[0]
        board.notes += lines[1:]


def _names(value: JsonValue) -> list[str]:
    """A record's list of task names (anything else: none)."""
    return [str(v) for v in value] if isinstance(value, list) else []


def models_line(facts: Sequence[Mapping[str, JsonValue]]) -> str:
    """What ``r2med models`` shows of a model's contamination (its records' ``training_set``, ``tasks`` and
    ``certainty``): the training data and the tasks whose documents it was built from."""
    return "; ".join(
        f"{MARK} trained on {f['training_set']}, built from the documents of {tasks_text(_names(f['tasks']))} "
        f"({f['certainty']})"
        for f in facts
    )
