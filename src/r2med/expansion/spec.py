"""The expansion a step names, ``METHOD:LLM``, parsed once at the edge into one typed record.

``-e hyde:gpt4`` on the command line, ``expansion = "hyde:gpt4"`` in an experiment file and
``EvaluateStep.of("bm25", expansion="hyde:gpt4")`` (or ``ExpansionSpec.of("hyde:gpt4")``) in Python all become an
:class:`ExpansionSpec` through the step's parse (:func:`r2med.typed.parse.parse`), so the three say the same words
for the same fault (``hyde:``, ``:gpt4``, ``magic:gpt4``) after the key that names it.  The record holds the method
in its canonical spelling (``HyDE`` -> ``hyde``, ``search_r1`` -> ``search-r1``) and the LLM in its folder spelling
(``qwen_7b`` -> ``qwen-7b``); BRIGHT's reasoning query sets (``reason:<llm>``, :mod:`.reasoning`) keep the LLM as
BRIGHT's ``--reasoning`` spells it (``reason:GEMINI-1.0`` -> ``Gemini-1.0``).  The text is split by
:meth:`r2med.expansion_name.ExpansionName.parse` and joined by its ``text`` only; nothing downstream splits or joins
it again: the builder of the query texts (:func:`r2med.expansion.precomputed.expansion_builder`) reads the
two fields, a recorded run's ``config["expansion"]`` is read back into the same record.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated

from pydantic import BeforeValidator, model_validator

from ..data.bright import REASON, reasoning_name
from ..errors import R2MedError, shown
from ..expansion_name import EXPECTED, ExpansionName
from ..typed.parse import Origin, Spec, parse
from .combine import check_method
from .traces import normalize_llm


def split_text(text: str) -> dict[str, str]:
    """``"hyde:gpt4"`` -> ``{"method": "hyde", "llm": "gpt4"}`` (as written, through the one parse:
    :meth:`ExpansionName.parse`); text without both parts is a ``ValueError`` in the words every edge shows."""
    return ExpansionName.parse(text)._asdict()


class ExpansionSpec(Spec):
    """One expansion: its ``method`` (an R2MED method, or ``reason``: one of BRIGHT's reasoning query sets) and the
    ``llm`` that wrote it, both in their canonical spelling."""

    method: str
    llm: str

    @model_validator(mode="before")
    @classmethod
    def _canonical(cls, value: object) -> object:
        if not isinstance(value, Mapping) or not isinstance(value.get("method"), str):
            return value  # the field checks name what is missing or of another kind
        llm = value.get("llm")
        if not isinstance(llm, str) or not llm.strip():
            return value
        method = value["method"]
        try:
            if method.strip().lower() == REASON:
                return {**value, "method": REASON, "llm": reasoning_name(llm)}
            return {**value, "method": check_method(method).value, "llm": normalize_llm(llm)}
        except R2MedError as exc:  # an unknown method or reasoning set: the words of its one-line error
            raise ValueError(str(exc)) from None

    @classmethod
    def of(cls, text: str) -> ExpansionSpec:
        """The expansion ``text`` names (``"hyde:gpt4"``): what a Python caller writes in place of the flag."""
        try:
            values = split_text(text)
        except ValueError as exc:
            raise Origin.python(f"ExpansionSpec.of({text!r})").fail(str(exc)) from None
        return parse(cls, values, Origin.python(f"ExpansionSpec.of({text!r})"))

    @property
    def reasoning(self) -> bool:
        """Whether it names one of BRIGHT's reasoning query sets (it replaces the query)."""
        return self.method == REASON

    @property
    def name(self) -> ExpansionName:
        """Its name, the value the layers below pass (the collections' files, the hub's records): the one place
        an expansion spec becomes one."""
        return ExpansionName(self.method, self.llm)

    @property
    def text(self) -> str:
        """``METHOD:LLM``, as the flag takes it (``hyde:qwen-7b``)."""
        return self.name.text

    def __str__(self) -> str:
        return self.text


def _from_text(value: object) -> object:
    """A step field's value: text (``hyde:gpt4``) split into the record's fields; a record or a table as it is."""
    if isinstance(value, str):
        return split_text(value)
    if value is not None and not isinstance(value, (ExpansionSpec, Mapping)):
        raise ValueError(f"{EXPECTED}, got {shown(value)}")
    return value


#: a step's ``expansion`` field: ``METHOD:LLM`` text, a ``{method, llm}`` table or an :class:`ExpansionSpec`
Expansion = Annotated[ExpansionSpec, BeforeValidator(_from_text)]
