"""Package data carried over from the R2MED paper and repository, with typed access.

Files (each names its source inside): ``r2med_protocol.json`` (instructions and
generation prompts per task), ``r2med_models.json`` (retriever/reranker/LLM
settings), ``r2med_hub_configs.json`` (hub configs, splits, task sizes),
``r2med_expansion_commits.json`` (the hub commit holding each expansion config, where one is known) and
``r2med_published_ndcg10.csv`` (every published nDCG@10 figure with its source).
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import TypedDict

from ..expansion_name import ExpansionName


def _read(name: str) -> str:
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


# The shapes of the package data files (what each file holds; the files are r2med's own, checked by the tests).


class R2medProtocol(TypedDict):
    """``r2med_protocol.json``: instructions and generation prompts per task."""

    _source: str
    task_name_aliases_in_original_code: dict[str, str]
    #: model -> one instruction for every task, or task -> instruction
    query_instruction: dict[str, str | dict[str, str]]
    doc_instruction: dict[str, str | dict[str, str]]
    #: method -> task -> prompt
    generation_prompts: dict[str, dict[str, str]]
    query2doc_few_shot_examples: dict[str, str]
    answer_check_prompt: str


class RetrieverSpec(TypedDict, total=False):
    """A retriever of ``r2med_models.json`` as the paper's code runs it (each holds the keys its kind needs)."""

    kind: str
    k1: float
    b: float
    analyzer: str
    scoring: str
    hub_id: str
    hub_id_query: str
    hub_id_doc: str
    api_model: str
    loader: str
    pooling: str
    normalize: bool
    max_length: int
    batch_size: int
    truncate_tokens: int
    query_instruction: str | None
    doc_instruction: str | None
    note: str


class RerankerSpec(TypedDict, total=False):
    """A reranker of ``r2med_models.json`` as the paper's code runs it."""

    hub_id: str
    hub_id_lora: str
    hub_id_base: str
    max_length: int
    first_stage: str
    score: str
    input: str


class GenerationSpec(TypedDict):
    """How the paper generated query expansions: the LLMs, sampling, system prompt and LaMer's context."""

    llms: dict[str, str]
    sampling: dict[str, str]
    system_prompt: str
    lamer_context: str


class R2medModels(TypedDict):
    """``r2med_models.json``: retriever, reranker and LLM settings."""

    _source: str
    retrievers: dict[str, RetrieverSpec]
    rerankers: dict[str, RerankerSpec]
    #: retriever kind -> method -> how the expansion is combined with the query
    gar_query_combination: dict[str, dict[str, str]]
    generation: GenerationSpec
    metrics: dict[str, str]


class HubTask(TypedDict):
    """One R2MED task on the hub: its repository, sizes and pinned commit."""

    name: str
    display_name: str
    hub_id: str
    queries: int
    docs: int
    avg_positives_per_query: float
    avg_query_length: float
    avg_doc_length: float
    revision: str


class HubConfigs(TypedDict):
    """``r2med_hub_configs.json``: hub configs (method -> split -> path), the tasks, where their commits come from."""

    _source: str
    license: str
    _revision_source: str
    configs: dict[str, dict[str, str]]
    tasks: list[HubTask]


class ExpansionCommit(TypedDict, total=False):
    """An expansion config of ``r2med_expansion_commits.json``: its path, the commit per task holding it, the source."""

    path: str
    commits: dict[str, str]
    status: str
    source: str


class ExpansionCommits(TypedDict):
    """``r2med_expansion_commits.json``: card config (``method:llm``) -> its commits."""

    _source: str
    _findings: list[str]
    expansions: dict[str, ExpansionCommit]


@cache
def protocol() -> R2medProtocol:
    data: R2medProtocol = json.loads(_read("r2med_protocol.json"))
    return data


@cache
def models() -> R2medModels:
    data: R2medModels = json.loads(_read("r2med_models.json"))
    return data


@cache
def hub_configs() -> HubConfigs:
    data: HubConfigs = json.loads(_read("r2med_hub_configs.json"))
    return data


@cache
def expansion_commits() -> ExpansionCommits:
    """``r2med_expansion_commits.json``, checked: every entry a card config (``method:llm``, folder spelling) whose
    ``commits`` map R2MED task names to full commit hashes (a malformed entry is a packaging error, raised)."""
    data: ExpansionCommits = json.loads(_read("r2med_expansion_commits.json"))
    configs = hub_configs()
    known = {
        ExpansionName(method, split.replace("_", "-")).text
        for method, splits in configs["configs"].items()
        if method not in ("corpus", "query", "qrels")
        for split in splits
    }
    tasks = {row["name"] for row in configs["tasks"]}
    for key, entry in data["expansions"].items():
        commits = entry.get("commits")
        bad = (
            key not in known
            or not isinstance(commits, dict)
            or any(t not in tasks or not re.fullmatch(r"[0-9a-f]{40}", str(c)) for t, c in commits.items())
        )
        if bad or (commits and not entry.get("source")):
            raise ValueError(f"r2med_expansion_commits.json: entry {key!r} is malformed (or names no source)")
    return data


@dataclass(frozen=True)
class PublishedFigure:
    setting: str
    retriever: str
    expansion: str
    llm: str
    task: str
    ndcg10: float
    source: str


@cache
def published_figures() -> tuple[PublishedFigure, ...]:
    rows = csv.DictReader(_read("r2med_published_ndcg10.csv").splitlines())
    return tuple(
        PublishedFigure(
            setting=r["setting"],
            retriever=r["retriever"],
            expansion=r["expansion"],
            llm=r["llm"],
            task=r["task"],
            ndcg10=float(r["ndcg10"]),
            source=r["source"],
        )
        for r in rows
    )


def preferred_setting(settings: Iterable[str]) -> str:
    """Which of several settings that publish the same configuration to show: the paper's own rows
    (``base``, ``gar``, ``reranker...``) before leaderboards, leaderboards before later papers."""
    return sorted(settings, key=lambda s: ("leaderboard" in s, "later" in s, s))[0]


def published_ndcg10(
    retriever: str, expansion: str = "none", llm: str = "none", setting: str | None = None
) -> dict[str, float]:
    """Published nDCG@10 (x100) per task (plus ``Average``) for one configuration.

    When several settings publish the same configuration, the paper's own
    (``base``/``gar``/``reranker...``) rows are preferred over leaderboards.
    """
    found: dict[str, dict[str, float]] = {}
    for f in published_figures():
        same_configuration = f.retriever == retriever and f.expansion == expansion and f.llm == llm
        if same_configuration and (setting is None or f.setting == setting):
            found.setdefault(f.setting, {})[f.task] = f.ndcg10
    return found[preferred_setting(found)] if found else {}
