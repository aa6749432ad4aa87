"""User-facing error types: one line of text, exit code 2 at the CLI."""

from __future__ import annotations

import os
from collections.abc import Iterable


class R2MedError(Exception):
    """An error caused by the user's input or environment; the CLI prints it in one line and exits 2."""

    exit_code = 2


class DataError(R2MedError):
    """Bad input data, located at ``file:line``; ``context`` (what the reader took the file for, e.g.
    ``BEIR layout (queries.jsonl found)``) goes in front of the location."""

    def __init__(self, path: str | os.PathLike[str], line: int | None, message: str, context: str | None = None):
        self.path = str(path)
        self.line = line
        self.message = message
        self.context = context
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{context}: {where}: {message}" if context else f"{where}: {message}")


class MissingExtraError(R2MedError):
    """An optional dependency is not installed; the message names the extra to install."""

    def __init__(self, package: str, extra: str, purpose: str):
        super().__init__(
            f"{purpose} needs the '{package}' package: pip install 'r2med[{extra}]'"
        )


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    """``" (did you mean 'Biology'?)"`` when a known name is close to ``name`` (case aside), else ``""``: the one
    place every unknown-name error (tasks, retrievers, rerankers, measures...) gets its suggestion from."""
    import difflib

    by_lower: dict[str, str] = {}
    for choice in choices:
        by_lower.setdefault(choice.lower(), choice)
    close = difflib.get_close_matches(name.lower(), list(by_lower), n=1, cutoff=0.6)
    if not close or by_lower[close[0]] == name:
        return ""
    return f" (did you mean {by_lower[close[0]]!r}?)"
