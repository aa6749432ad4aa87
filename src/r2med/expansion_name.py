"""An expansion's name, ``METHOD:LLM``: the one value every layer passes, and its one text form and one parse.

``hyde:qwen-7b`` names the expansions a method (``hyde``, or ``reason`` for BRIGHT's reasoning query sets) had an
LLM write.  The text is what users, files and old records spell: the ``--expansion`` flag, the keys of
``protocol/r2med_expansion_commits.json``, a version-1 record's ``queries``, the messages.  Inside, the name is an
:class:`ExpansionName` -- the keys of ``Collection.expansion_files``, the expansions a hub request reads, the
commits recorded for them -- so only :attr:`ExpansionName.text` joins the two parts and only
:meth:`ExpansionName.parse` splits them (``tests/test_expansion_name.py`` finds any other place that does).

A leaf below the paper's package data and the collections, whose files name expansions; it checks the form only
(``METHOD:LLM``, both parts present).  Whether the method and the LLM are known, and their canonical spelling, is
:class:`r2med.expansion.spec.ExpansionSpec`'s, which parses the flag into this name and more.
"""

from __future__ import annotations

from typing import NamedTuple

from .errors import shown

#: the words of a malformed expansion name, at every edge
EXPECTED = "expected METHOD:LLM (e.g. hyde:gpt4, hyde:qwen_7b or reason:gpt4)"


class ExpansionName(NamedTuple):
    """One expansion's name: the ``method`` and the ``llm`` that wrote it, as the caller spells them (frozen; a
    pair, so ``method, llm = name`` reads it).  ``str(name)`` is its :attr:`text`."""

    method: str
    llm: str

    @classmethod
    def parse(cls, text: str) -> ExpansionName:
        """``"hyde:gpt4"`` -> ``ExpansionName("hyde", "gpt4")`` (as written); text without both parts is a
        ``ValueError`` in the words every edge shows."""
        method, sep, llm = text.partition(":")
        if not sep or not method.strip() or not llm.strip():
            raise ValueError(f"{EXPECTED}, got {shown(text)}")
        return cls(method, llm)

    @property
    def text(self) -> str:
        """``METHOD:LLM`` (``hyde:qwen-7b``): the flag's, the files' and the records' spelling."""
        return f"{self.method}:{self.llm}"

    def __str__(self) -> str:
        return self.text
