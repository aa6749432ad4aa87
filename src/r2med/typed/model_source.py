"""Whether a model name is a local folder or a hub id, decided without loading anything (no torch, no network).

The one rule for "does this model name point at a folder that is not there?": a name that exists on disk is a
folder; a name that looks like a path (starts with ``.``, ``/`` or ``~``, holds a backslash, or more than one
``/``) and does not exist is an error; anything else (``org/name``, ``name``) is a hub id, checked when it loads.
The step specs ask it at parse time, so a missing folder is refused before any work; the loaders ask it again.
"""

from __future__ import annotations

import re
from pathlib import Path

#: a claimed checkpoint: a hub id (``org/name``), optionally ``@`` a commit (7 to 40 hex digits)
CLAIM = re.compile(r"(?P<repo>[A-Za-z0-9][\w.-]*/[\w.-]+)(?:@(?P<commit>[0-9a-f]{7,40}))?")


def looks_like_path(model: str) -> bool:
    """Whether ``model`` is written as a path rather than a hub id (``org/name``)."""
    return model.startswith((".", "/", "~")) or model.count("/") > 1 or "\\" in model


def revision_problem(model: str | None, revision: str | None) -> str | None:
    """Why ``revision`` (a model's ``model_revision``) cannot apply to ``model``, or None: a commit names a hub
    repository's state; a local folder's files are what they are, so a revision given with one would be recorded
    as if it had chosen them."""
    if revision is None or model is None or not (Path(model).expanduser().exists() or looks_like_path(model)):
        return None
    return (
        f"model_revision {revision!r}: {model!r} is a local folder, whose files are what they are (a commit chooses "
        "a hub repository's files): leave model_revision out, or give the hub id"
    )


def is_local_folder(model: str) -> bool:
    """Whether ``model`` names a local folder (it exists on disk, or is written as a path) rather than a hub id."""
    return Path(model).expanduser().exists() or looks_like_path(model)


def parse_claim(claim: str) -> tuple[str, str | None] | None:
    """(hub id, commit or None) of a ``model_claim`` value (``org/name`` or ``org/name@<commit>``); None: not one."""
    found = CLAIM.fullmatch(claim.strip())
    if found is None or ".." in found["repo"]:
        return None
    return found["repo"], found["commit"]


def claim_problem(model: str | None, claim: str | None) -> str | None:
    """Why ``claim`` (a ``model_claim``) cannot apply to ``model``, or None: a claim names the hub checkpoint a
    local folder holds (``org/name``, optionally ``@<commit>``); a hub id or a preset's own checkpoint shows its
    identity without one."""
    if claim is None:
        return None
    if parse_claim(claim) is None:
        return f"model_claim {claim!r}: expected a hub id, optionally with a commit (org/name or org/name@<commit>)"
    if model is None or not is_local_folder(model):
        shown_as = f"{model!r} is a hub id" if model else "no model folder was given (the preset's checkpoint)"
        return (
            f"model_claim {claim!r}: {shown_as}, whose identity the hub shows; a claim is for a local folder "
            "(--model <folder>)"
        )
    return None


def missing_model_path(model: str) -> str | None:
    """The problem with ``model`` as a model source (a path-looking name that does not exist), else None."""
    if Path(model).expanduser().exists() or not looks_like_path(model):
        return None
    return f"model path {model!r} does not exist; pass an existing folder or a hub id"
