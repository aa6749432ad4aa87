"""Credentials never reach disk or logs: URL userinfo and query values are redacted.

An endpoint URL may carry a secret in its userinfo (``https://user:secret@host``) or in its
query string (``https://host/v1?key=secret``); :func:`redact_url` replaces both with ``***``
(``https://***@host/v1?key=***``) and is applied to every endpoint URL r2med records
(``metrics.json`` configs, error messages, the reproduce commands and HTML report built from
them); :class:`RedactingFilter` sits on the CLI's log handler, so a URL with credentials logged
by any library (httpx, openai) is printed redacted, and the CLI's one-line errors pass
through :func:`redact_urls` too.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable

# a URL in running text: scheme://..., ending at white space, a quote or a bracket
_URL = re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s\"'<>()\[\]{}`]*")
_USERINFO = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^/?#@]+)@")


def _redact_pairs(part: str) -> str:
    """``a=1&b`` -> ``a=***&***``: every value of a query string (or fragment) hidden, names kept."""
    pairs = []
    for pair in re.split(r"([&;])", part):
        if pair in ("&", ";") or not pair:
            pairs.append(pair)
        elif "=" in pair:
            pairs.append(pair.split("=", 1)[0] + "=***")
        else:
            pairs.append("***")
    return "".join(pairs)


def _redact_one(url: str) -> str:
    url = _USERINFO.sub(lambda m: f"{m.group('scheme')}***@", url)
    base, hash_mark, fragment = url.partition("#")
    path, question, query = base.partition("?")
    if question:
        path += "?" + _redact_pairs(query)
    if hash_mark and "=" in fragment:  # e.g. #access_token=...
        fragment = _redact_pairs(fragment)
    return path + hash_mark + fragment


def redact_urls(text: str) -> str:
    """``text`` with the userinfo and query values of every URL in it replaced by ``***``."""
    return _URL.sub(lambda m: _redact_one(m.group(0)), text) if "://" in text else text


def redact_url(url: str | None) -> str | None:
    """One URL with its userinfo (user name, password, token) and query values replaced by ``***``."""
    return None if url is None else redact_urls(url)


class MessageFilter(logging.Filter):
    """A log filter that rewrites each formatted message with ``rewrite`` (and drops the args when it changed)."""

    def __init__(self, rewrite: Callable[[str], str]) -> None:
        super().__init__()
        self.rewrite = rewrite

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a broken log call: leave it to the handler to report
            return True
        clean = self.rewrite(message)
        if clean != message:
            record.msg, record.args = clean, None
        return True


def RedactingFilter() -> MessageFilter:
    """A log filter that redacts URL credentials and query values in the formatted message."""
    return MessageFilter(redact_urls)
