"""What the reports say of a grade that rests on a user's claim: a mark on every graded figure of a run whose local
model folder -- a dense encoder's, a reranker's, or the first stage's of a reranked run -- the user claimed to hold a
published checkpoint (``--set model_claim=org/name[@commit]``), and one legend line per claim naming the folder and
the claim.

r2med shows a local folder's identity only from a Hugging Face cache snapshot (its repository and commit); any other
folder is graded only on the user's word, recorded in ``metrics.json`` as the option ``model_claim``
(:func:`r2med.results.grading.claimed_checkpoint`).  Such a grade is marked :data:`MARK` in every renderer (the
terminal, Markdown, CSV/JSON, LaTeX and HTML: the board's mark hook, :attr:`r2med.report.board.BoardCell.marks`),
so a figure graded on a claim is never read as one r2med verified.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..results.grading import claimed_checkpoint

if TYPE_CHECKING:
    from ..results.folders import System
    from .mark_hooks import BoardView

#: The mark of a figure graded on the user's claim of which checkpoint its model folder holds.
MARK = "¶"
LEGEND = (
    f"{MARK} graded on your claim: the run's model is a local folder the user claimed to hold the published "
    "checkpoint (model_claim, recorded as a claim); r2med did not verify its weights."
)


def claims_of(system: System) -> list[tuple[str, str]]:
    """(the model folder, the claimed checkpoint) of each claim a system's tasks recorded, once each: a reranked
    run's reranker (its options: ``r2med rerank --model <folder> --set model_claim=...``) first, then the first stage
    it reranked; [] when none did."""
    found: dict[tuple[str, str], None] = {}
    for result in system.tasks.values():
        config = result.config
        first = config.first_stage.config if config is not None and config.first_stage is not None else None
        for step in (config, first):
            claim = claimed_checkpoint(step)
            if claim is not None and step is not None:
                found[str((step.options or {}).get("model")), claim] = None
    return list(found)


def mark_claims(board: BoardView, systems: Sequence[System]) -> None:
    """Mark each graded figure (a cell shown beside a published one, and its averages) of a row whose grade rests on a
    claim, with one legend line naming each such run's folder and claim."""
    lines = []
    for row, system in zip(board.rows, systems):  # the system rows come first, in order
        found = claims_of(system)
        if not found or row.published is None:
            continue
        marked = False
        for cell in row.cells.values():
            if cell.published is not None and cell.value is not None and MARK not in cell.marks:
                cell.marks.append(MARK)
                marked = True
        if marked:
            lines += [f"{MARK} {row.system}: model folder {folder}, claimed {claim}." for folder, claim in found]
    if lines:
        board.marks[MARK] = LEGEND
        board.notes += lines
