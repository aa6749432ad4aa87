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
from typing import Any

from ..expansion_name import ExpansionName


def _read(name: str) -> str:
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


@cache
def protocol() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(_read("r2med_protocol.json"))
    return data


@cache
def models() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(_read("r2med_models.json"))
    return data


@cache
def hub_configs() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(_read("r2med_hub_configs.json"))
    return data


@cache
def expansion_commits() -> dict[str, Any]:
    """``r2med_expansion_commits.json``, checked: every entry a card config (``method:llm``, folder spelling) whose
    ``commits`` map R2MED task names to full commit hashes (a malformed entry is a packaging error, raised)."""
    data: dict[str, Any] = json.loads(_read("r2med_expansion_commits.json"))
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
        bad = key not in known or not isinstance(commits, dict)
        bad = bad or any(t not in tasks or not re.fullmatch(r"[0-9a-f]{40}", str(c)) for t, c in commits.items())
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
