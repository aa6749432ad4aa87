"""Credentials never reach disk or logs: URL userinfo (``https://user:secret@host``) is redacted.

:func:`redact_url` is applied to every endpoint URL r2med records (``metrics.json`` configs,
error messages); :class:`RedactingFilter` sits on the CLI's log handler, so a URL with
credentials logged by any library (httpx, openai) is printed as ``https://***@host``.
"""

from __future__ import annotations

import logging
import re

_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^\s/?#@]+)@")


def redact_urls(text: str) -> str:
    """``text`` with the userinfo of every URL in it replaced by ``***``."""
    return _USERINFO.sub(lambda m: f"{m.group('scheme')}***@", text) if "@" in text else text


def redact_url(url: str | None) -> str | None:
    """One URL with its userinfo (user name, password, token) replaced by ``***``."""
    return None if url is None else redact_urls(url)


class RedactingFilter(logging.Filter):
    """A log filter that redacts URL credentials in the formatted message (and drops the args)."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a broken log call: leave it to the handler to report
            return True
        clean = redact_urls(message)
        if clean != message:
            record.msg, record.args = clean, None
        return True
