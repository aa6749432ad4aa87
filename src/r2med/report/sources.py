"""Published figures of a row's configuration that are shown beside its runs and never graded: a source whose data
no source names (BRIGHT's first table, :meth:`r2med.results.published.PublishedKey.beside`), named with its data
state from ``protocol/figure_states.json`` (:func:`r2med.protocol.data_states.figure_state`).

One legend line per row and source: the figures on the tasks the run has, where they come from, and that their
data is unknown -- in every renderer (the board's notes)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..protocol import data_states

if TYPE_CHECKING:
    from ..results.folders import System
    from .mark_hooks import BoardView


def note_beside(board: BoardView, systems: Sequence[System]) -> None:
    """Add to ``board``'s notes, for each system row with a published configuration, the figures of that
    configuration's other sources (shown, never graded) on the tasks the row has."""
    for row, system in zip(board.rows, systems):  # the system rows come first, in order
        key = row.published or system.published
        if key is None:
            continue
        for name, setting, source, figures in key.beside(board.measure):
            tasks = [t for t in board.tasks if t in figures and t in system.tasks]
            if not tasks:
                continue
            shown = [f"{t} {figures[t]:.1f}" for t in tasks]
            state = data_states.figure_state(key.family, setting, source)
            data = "unknown data" if not state.known else state.words()
            board.notes.append(
                f"{row.system}: {name} ({source}) has {key.title} at {', '.join(shown)}; made on {data} "
                f"({state.name}): shown beside the run, never graded."
            )
