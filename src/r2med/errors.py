"""User-facing error types: one line of text, exit code 2 at the CLI.

A value echoed inside a message (a name, an option's value) goes through :func:`shown`, which
quotes it and cuts it to a bounded length, so a 5 MB argument gives a short line; the CLI also
caps the whole line (:data:`MAX_ERROR_CHARS`).

Each kind is also the built-in exception it is, so code that does not know r2med catches it as it would
any other library's: :class:`OptionError` and :class:`DataError` are ``ValueError`` (``BM25(k1=-1)``, as
in bm25s), :class:`NotFound` is ``FileNotFoundError`` (a missing collection folder or data file), and
:class:`NothingToScore` (a run sharing no query with its judgments) is a ``ValueError``.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable
from pathlib import Path

SHOWN_CHARS = 80  # of a value echoed in a message
PATH_CHARS = 1000  # of a path echoed in a message (a path is shown whole where the system allows it)
MAX_ERROR_CHARS = 2000  # of a whole one-line error, as the CLI prints it


def shown(value: object, limit: int = SHOWN_CHARS) -> str:
    """``value`` quoted for a message (``repr`` of text), cut to about ``limit`` characters with its length."""
    text = repr(value) if isinstance(value, str) else str(value)
    if len(text) <= limit:
        return text
    size = f"{len(value):,} characters" if isinstance(value, str) else f"{len(text):,} characters shown"
    return f"{text[:limit]}... ({size})"


def bounded(message: str, limit: int = MAX_ERROR_CHARS, total: int | None = None) -> str:
    """A whole message cut to ``limit`` characters (the last resort behind :func:`shown`); ``total``: the
    length of the message ``message`` was cut from, when it was."""
    total = len(message) if total is None else total
    return message if total <= limit else f"{message[:limit]}... ({total:,} characters in all)"


class R2MedError(Exception):
    """An error caused by the user's input or environment; the CLI prints it in one line and exits 2."""

    exit_code = 2


class OptionError(R2MedError, ValueError):
    """A parameter or option with a value r2med does not take (a negative ``k1``, an unknown task or
    retriever name); the message says what it takes."""


class NothingToScore(R2MedError, ValueError):
    """A run that shares no query with its judgments (trec_eval's ``num_q`` would be 0): no figure is made of it,
    since "0 queries, nDCG@10 0.00" reads as a result.  The message says what the run and the judgments hold;
    :meth:`at` puts where (the task, the file) in front."""

    def at(self, where: str) -> NothingToScore:
        return NothingToScore(f"{where}: {self}")


class NotFound(R2MedError, FileNotFoundError):
    """A file or folder the user named does not exist; the message names it."""


class DataError(R2MedError, ValueError):
    """Bad input data, located at ``file:line``; ``context`` (what the reader took the file for, e.g.
    ``BEIR layout (queries.jsonl found)``) goes in front of the location."""

    def __init__(self, path: str | os.PathLike[str], line: int | None, message: str, context: str | None = None):
        self.path = str(path)
        self.line = line
        self.message = message
        self.context = context
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{context}: {where}: {message}" if context else f"{where}: {message}")


class MissingDataFile(DataError, NotFound):
    """A data file a reader was given does not exist: a :class:`DataError` (it names the file) that is also
    :class:`NotFound` (``FileNotFoundError``)."""


class MissingExtraError(R2MedError):
    """An optional dependency is not installed; the message names the extra to install."""

    def __init__(self, package: str, extra: str, purpose: str):
        super().__init__(f"{purpose} needs the '{package}' package: pip install 'r2med[{extra}]'")


def closest(name: str, choices: Iterable[str]) -> str | None:
    """The known name closest to ``name`` (case aside), when one is close and differs from it, else None."""
    if len(name) > 100:  # nothing that long is a typo of a name, and difflib's time grows with it
        return None
    by_lower: dict[str, str] = {}
    for choice in choices:
        by_lower.setdefault(choice.lower(), choice)
    close = difflib.get_close_matches(name.lower(), list(by_lower), n=1, cutoff=0.6)
    if not close or by_lower[close[0]] == name:
        return None
    return by_lower[close[0]]


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    """``" (did you mean 'Biology'?)"`` when a known name is close to ``name`` (case aside), else ``""``: the one
    place every unknown-name error (tasks, retrievers, rerankers, measures...) gets its suggestion from."""
    match = closest(name, choices)
    return "" if match is None else f" (did you mean {match!r}?)"


def did_you_mean_folder(path: str | os.PathLike[str]) -> str:
    """``" (did you mean 'runs/bm25'?)"`` when a folder beside a missing ``path`` has a close name (a mistyped
    results root or data folder), else ``""``."""
    missing = Path(path)
    parent = missing.parent
    try:
        folders = [entry.name for entry in parent.iterdir() if entry.is_dir()] if parent.is_dir() else []
    except OSError:
        return ""
    match = closest(missing.name, folders)
    if match is None:
        return ""
    suggestion = match if str(parent) == "." else str(parent / match)
    return f" (did you mean {suggestion!r}?)"
