"""Reasoning-trace stripping: keep only the answer part of a reasoning LLM's output.

The R2MED paper strips the reasoning trace of reasoning models before retrieval, per
trace format (``r2med_models.json`` -> ``gar_query_combination.reasoning_trace_stripping``):

=================  ==========================================================================
format             rule
=================  ==========================================================================
``think``          text after the first ``</think>`` (R1 distills, QwQ, Qwen3), stripped
``final-response`` text after ``Final Response`` (HuatuoGPT-o1: "## Thinking ... ## Final Response")
``solution``       text between ``<|begin_of_solution|>`` and ``<|end_of_solution|>`` (Sky-T1)
``answer``         text inside the first ``<answer>...</answer>`` (Search-R1's Qwen "-ins" models)
``none``           the text unchanged
=================  ==========================================================================

When a format's marker is missing the whole text is kept, unchanged (the paper's fallback).
LLM names are matched in the hub-folder spelling (``r1-qwen-32b``; ``r1_qwen_32b`` is accepted).
"""

from __future__ import annotations

import re
from enum import StrEnum

from ..errors import R2MedError


class TraceFormat(StrEnum):
    """A reasoning LLM's trace format (the module table gives each rule)."""

    THINK = "think"
    FINAL_RESPONSE = "final-response"
    SOLUTION = "solution"
    ANSWER = "answer"
    NONE = "none"


TRACE_FORMATS: tuple[TraceFormat, ...] = tuple(TraceFormat)

#: The paper's table: LLM name -> trace format (these are its "reasoning LLMs").
REASONING_LLMS: dict[str, TraceFormat] = {
    "r1-llama-8b": TraceFormat.THINK,
    "r1-qwen-32b": TraceFormat.THINK,
    "r1-llama-70b": TraceFormat.THINK,
    "qwq-32b": TraceFormat.THINK,
    "qwen3-32b": TraceFormat.THINK,
    "qwen3-8b": TraceFormat.THINK,
    "huatuo-o1-8b": TraceFormat.FINAL_RESPONSE,
    "huatuo-o1-70b": TraceFormat.FINAL_RESPONSE,
    "sky-32b": TraceFormat.SOLUTION,
    "qwen-7b-ins": TraceFormat.ANSWER,
    "qwen-3b-ins": TraceFormat.ANSWER,
}

_FINAL = re.compile(r"Final Response\s*(.*)", re.DOTALL)
_SOLUTION = re.compile(r"<\|begin_of_solution\|>\s*(.*?)\s*<\|end_of_solution\|>", re.DOTALL)
_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)


def normalize_llm(name: str) -> str:
    """Hub split names use underscores (``qwen_7b``), folders hyphens (``qwen-7b``): use the folder form."""
    return name.strip().lower().replace("_", "-")


def trace_format_of(llm: str) -> TraceFormat:
    """The trace format of an LLM: the paper's table first, then name patterns, else ``none``."""
    name = normalize_llm(llm)
    if name in REASONING_LLMS:
        return REASONING_LLMS[name]
    if "huatuo" in name and "o1" in name:
        return TraceFormat.FINAL_RESPONSE
    if "sky-t1" in name or name.startswith("sky-"):
        return TraceFormat.SOLUTION
    if "searchr1" in name or "search-r1" in name:
        return TraceFormat.ANSWER
    if re.search(r"(^|[-/])(r1|qwq|qwen3|deepseek-r1)([-/.]|$)", name) or "thinking" in name:
        return TraceFormat.THINK
    return TraceFormat.NONE


def strip_trace(text: str, trace_format: str) -> str:
    """Apply one format's rule to ``text`` (see the module table)."""
    if trace_format == "none":
        return text
    if trace_format == "think":
        _, sep, tail = text.partition("</think>")
        return tail.strip() if sep else text
    if trace_format == "final-response":
        m = _FINAL.search(text)
        return m.group(1).strip() if m else text
    if trace_format == "solution":
        m = _SOLUTION.search(text)
        return m.group(1).strip() if m else text
    if trace_format == "answer":
        m = _ANSWER.search(text)
        return m.group(1).strip() if m else text
    raise R2MedError(f"unknown reasoning-trace format {trace_format!r}; choose from: {', '.join(TRACE_FORMATS)}")


def strip_for(llm: str, text: str, trace_format: str | None = None) -> str:
    """Strip ``text`` as the paper does for ``llm`` (or with an explicit ``trace_format``)."""
    return strip_trace(text, trace_format or trace_format_of(llm))
