"""Which published BRIGHT configuration a run reproduces: BRIGHT's rows as graded keys, and the rows r2med cannot run.

``protocol/bright_published.csv`` holds 1,223 figures, one per setting x retriever x queries x reranker x documents x
measure x task.  A configuration r2med can run is a :class:`BrightKey` -- (BRIGHT's retriever, its queries: the
original or a reasoning set, its reranker with the model and depth) -- whose figures are looked up per measure
(:meth:`BrightKey.figures`): nDCG@10 on the short documents (``bright:<task>``), Recall@1 on the long ones
(``bright:<task>:long``, the leaderboard's long-document headline).  Which rows grade:

* per task, the paper's rows (``paper``: 13 retrievers on the original queries, 5 with GPT-4's reasoning), and the
  long-document Recall@1 per task of ``later_third_party`` (the only per-task copy, a third party's) where its mean
  rounds to the leaderboard's own Average (it does not for openai and voyage: those per-task figures are shown
  nowhere);
* the Average, the leaderboard's (``leaderboard``: the 13 retrievers on each of the 5 reasoning sets, the long
  documents, the reranking rows), else the per-task source's own.

A row is one r2med can run when its retriever has an r2med preset running BRIGHT's settings for it
(``bright_models.json``'s ``r2med_preset``) and its reranker is one of rerank.py's (``bright-llm``,
``bright-cross-encoder``) over a first stage r2med runs.  Every other row is listed by :func:`not_reproducible`
with the reason -- never graded against something else.  Spec, field by field, and data: :mod:`r2med.results.grading`
(the same rule as R2MED's rows), :mod:`r2med.results.data_states` (graded only on the data each figure was computed
on, by commit: documents, examples, reasoning set).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

from ..data import bright as data_bright
from ..errors import OptionError
from ..measures import HEADLINE, Family, Measure
from ..protocol import bright
from ..protocol.bright import csv_measure
from ..reranking.base import RERANKERS
from ..typed.parse import by_checkpoint, score_fields
from .grading import HEADLINE_DEPTH, Published, RerankSpec, RetrieverSpec, checkpoint_name, retriever_spec
from .published import RERANK, PublishedKey

if TYPE_CHECKING:
    from ..protocol.bright import BrightModel, PublishedRow
    from ..steps import RerankStep

#: the benchmark family of these rows (the prefix of its task names)
BRIGHT = "bright"
#: the documents (short, long) of each measure the CSV grades with: nDCG@10 on the short, Recall@1 on the long ones
MEASURES: Mapping[Measure, str] = {HEADLINE: "short", Measure(Family.RECALL, 1): "long"}
#: the settings whose per-task figures grade, in order of preference
PER_TASK_SETTINGS = ("paper", "later_third_party")
#: the setting whose Average grades (BRIGHT's own leaderboard)
AVERAGE_SETTING = "leaderboard"
#: the settings ``r2med reproduce`` covers for BRIGHT (its per-task figures)
REPRODUCE_SETTINGS = PER_TASK_SETTINGS
#: BRIGHT's first table (xlang-ai/BRIGHT@190575e scripts/collect_results.py): made on data no source names, so
#: shown beside a run of the same model (:meth:`BrightKey.beside`), never graded
FIRST_TABLE = "first_table"
#: rerank.py's rerankers r2med runs, by the CSV's reranker model
RERANKER_OF = {
    "gpt-4-0125-preview": "bright-llm",
    "Gemini-1.0-pro": "bright-llm",
    "cross-encoder/ms-marco-MiniLM-L-12-v2": "bright-cross-encoder",
}
#: rerank.py has no Gemini path: reaching it through an OpenAI-compatible endpoint with rerank.py's prompt is
#: r2med's assumption, so its delta is shown and not graded
ASSUMED_RERANK_MODELS = ("Gemini-1.0-pro",)
AVERAGE = "Average"
#: why r2med runs no preset of these BRIGHT retrievers (docs/bright.md, "Each model's settings")
NOT_RUN = {
    "cohere": "Cohere's embed endpoint is not the OpenAI-style /embeddings exchange r2med's API encoder speaks",
    "google": "Vertex AI, and BRIGHT's own function cannot run as published (its import is commented out)",
}


def _rows() -> tuple[PublishedRow, ...]:
    return bright.published_rows()


def reasoning_llm(queries: str) -> str | None:
    """The reasoning set's name (``gpt4``) of the CSV's queries column (``gpt4_reason``); None: another kind."""
    for r in bright.hub().reasoning_sets:
        if queries == r.config:
            return r.name
    return None


def queries_config(llm: str) -> str:
    """The CSV's queries column of reasoning set ``llm`` (``gpt4`` -> ``gpt4_reason``; ``none``: ``original``)."""
    if llm == "none":
        return "original"
    for r in bright.hub().reasoning_sets:
        if llm.lower() == r.name.lower():
            config: str = r.config
            return config
    return llm


def split_reranker(text: str) -> tuple[str, int] | None:
    """``gpt-4-0125-preview top-10`` -> (model, 10); None: not a ``<model> top-<k>`` reranker."""
    model, _, depth = text.rpartition(" top-")
    return (model, int(depth)) if model and depth.isdigit() else None


def task_name(task: str, documents: str) -> str:
    """r2med's name of a BRIGHT task in a documents setting: ``bright:biology``, ``bright:biology:long``."""
    return f"{BRIGHT}:{task}" + (":long" if documents == "long" else "")


def _folder(model: str) -> str:
    """A hub model's name as ``r2med rerank`` names its result folders (``org/model`` -> ``model``:
    :func:`r2med.jobs.rerank.folder_name`, which this module below ``jobs`` does not import)."""
    return "_".join(model.rstrip("/").rsplit("/", 1)[-1].split()) or "model"


@dataclass(frozen=True)
class BrightKey(PublishedKey):
    """A published BRIGHT configuration: ``retriever`` is BRIGHT's model name (``sf``), ``expansion`` ``none``,
    ``reason`` (``llm``: the reasoning set, ``gpt4``) or ``rerank:<r2med reranker>`` with ``rerank_model`` (the CSV's
    model, ``gpt-4-0125-preview``) and ``depth`` (the leaderboard's top-10 / top-100)."""

    rerank_model: str = ""
    depth: int | None = None

    @property
    def family(self) -> str:
        return BRIGHT

    @property
    def measures(self) -> tuple[Measure, ...]:
        """nDCG@10 on the short documents, Recall@1 on the long ones."""
        return tuple(MEASURES)

    @property
    def average_alone(self) -> bool:
        """BRIGHT's leaderboard publishes Averages only for most rows: shown beside a run of all their tasks."""
        return True

    @property
    def tolerance_source(self) -> str:
        return ""  # its own legend line names the source

    def legend(self, measure: Measure) -> str | None:
        return f"{self.title}: published figures from {self.setting(measure)} (protocol/bright_published.csv)."

    @property
    def family_settings(self) -> tuple[str, str] | None:
        """BRIGHT's own settings for its model (``configs/<model>/<task>.json``, ``retrievers.py``): its runs ran
        them."""
        return (BRIGHT, self.retriever)

    @property
    def model(self) -> BrightModel:
        found: BrightModel = bright.model(self.retriever)
        return found

    @property
    def system(self) -> str:
        """r2med's preset running BRIGHT's settings for this retriever (its first stage, when reranked)."""
        return self.model.r2med_preset or self.retriever

    @property
    def reranker_name(self) -> str | None:
        return self.reranker

    @property
    def label(self) -> str:
        """r2med's folder name: ``bm25``, ``sfr+reason-gpt4``, ``bm25+bright-llm-gpt-4-0125-preview-top100``."""
        if self.expanded:
            return f"{self.system}+{self.expansion}-{self.llm.lower()}"
        if self.reranker:
            model = f"-{_folder(self.rerank_model).lower()}" if self.reranker == "bright-llm" else ""
            return f"{self.system}+{self.reranker}{model}-top{self.depth}"
        return self.system

    @property
    def title(self) -> str:
        """How a legend names it: ``BRIGHT bm25 (gpt4_reason queries)``."""
        parts = [f"BRIGHT {self.retriever}"]
        if self.expanded:
            parts.append(f"({queries_config(self.llm)} queries)")
        if self.reranker:
            parts.append(f"+ {self.rerank_model} top-{self.depth}")
        return " ".join(parts)

    @property
    def csv_reranker(self) -> str:
        return "none" if not self.reranker else f"{self.rerank_model} top-{self.depth}"

    def _matches(self, row: PublishedRow) -> bool:
        wanted = (self.retriever, queries_config(self.llm), self.csv_reranker)
        return (row.retriever, row.queries, row.reranker) == wanted

    def figures(self, measure: Measure = HEADLINE) -> dict[str, float]:
        """r2med task name (``bright:biology``, ``bright:biology:long``) and ``Average`` -> the published figure (x100)
        of ``measure`` (nDCG@10 on the short documents, Recall@1 on the long ones; any other: none)."""
        return dict(_figures(self, measure)[0])

    def beside(self, measure: Measure = HEADLINE) -> tuple[tuple[str, str, str, dict[str, float]], ...]:
        """BRIGHT's first table's per-task figures of this retriever on the original queries (nDCG@10, by r2med's task
        names), as (name, setting, source, figures): shown beside its runs, never graded (their data is unknown)."""
        if measure != HEADLINE or self.expanded or self.reranker:
            return ()
        rows = [
            r
            for r in _rows()
            if (r.setting, r.retriever, r.queries, r.reranker, r.measure)
            == (FIRST_TABLE, self.retriever, "original", "none", measure)
        ]
        if not rows:
            return ()
        # per task only: the table's Average column is not the mean of its 12 figures (the CSV's note)
        figures = {task_name(r.task, r.documents): r.value for r in rows if r.task != AVERAGE}
        return (("BRIGHT's first table", FIRST_TABLE, rows[0].source, figures),)

    def average_tasks(self, measure: Measure = HEADLINE) -> tuple[str, ...]:
        """The tasks its published Average is over: the 12 (nDCG@10) or the 8 long-document settings (Recall@1)."""
        return data_bright.names(long=MEASURES.get(measure, "short") == "long")

    def graded_tasks(self, measure: Measure = HEADLINE) -> set[str]:
        """The tasks a figure of ``measure`` covers: its per-task figures' and, with an Average, every task of it."""
        figures = self.figures(measure)
        tasks = {t for t in figures if t != AVERAGE}
        return tasks | set(self.average_tasks(measure)) if AVERAGE in figures else tasks

    def all_graded_tasks(self) -> set[str]:
        return {t for m in MEASURES for t in self.graded_tasks(m)}

    def setting(self, measure: Measure | None = None) -> str:
        """The settings its figures (of ``measure``; None: of any) come from: ``leaderboard, paper``..."""
        measures = MEASURES if measure is None else (measure,)
        return ", ".join(sorted({setting for m in measures for setting, _ in self.sources(m).values()}))

    def source(self) -> str:
        return " | ".join(sorted({source for m in MEASURES for _, source in self.sources(m).values()}))

    def sources(self, measure: Measure = HEADLINE) -> dict[str, tuple[str, str]]:
        """task -> (setting, source) of each figure of ``measure``."""
        return dict(_figures(self, measure)[1])

    def tolerance_hint(self) -> str | None:
        """Its tolerance class (:data:`~r2med.infra.registry.TOLERANCES`): BM25 ``lexical``, an API embedder ``api``,
        a local model ``dense`` (fp32, as BRIGHT's code ran all but GritLM) or ``dense-fp16`` (GritLM's checkpoint
        precision); rerank.py's LLM ``llm-rerank`` (sampled at temperature 0.8), Gemini's ``assumed``."""
        if self.reranker == "bright-llm":
            return "assumed" if self.rerank_model in ASSUMED_RERANK_MODELS else "llm-rerank"
        if self.reranker:
            return "dense"
        model = self.model
        if model.kind == "bm25":
            return "lexical"
        if model.kind == "api" or model.r2med_encoder.get("loader") in ("openai", "voyage"):
            return "api"
        return "dense" if model.r2med_encoder.get("dtype") == "fp32" else "dense-fp16"

    def first_stage(self) -> BrightKey:
        """The key of the first stage it reranked (itself when not reranked)."""
        return BrightKey(self.retriever) if self.reranker else self


def _consistent(rows: list[PublishedRow], average: float | None) -> bool:
    """Whether a per-task source's figures agree with the leaderboard's Average (their mean, rounded to BRIGHT's 0.1,
    is it): a third party's copy that does not is left out."""
    tasks = [r.value for r in rows if r.task != AVERAGE]
    return average is None or (bool(tasks) and round(sum(tasks) / len(tasks), 1) == round(average, 1))


#: (task -> figure, task -> (setting, source)) as frozen pairs
_Figures = tuple[tuple[tuple[str, float], ...], tuple[tuple[str, tuple[str, str]], ...]]


@cache
def _figures(key: BrightKey, measure: Measure) -> _Figures:
    if measure not in MEASURES:
        return (), ()
    documents = MEASURES[measure]
    rows = [r for r in _rows() if key._matches(r) and (r.documents, r.measure) == (documents, measure)]
    averages = [r for r in rows if r.setting == AVERAGE_SETTING and r.task == AVERAGE]
    average = averages[0] if averages else None
    per_task: list[PublishedRow] = []
    for setting in PER_TASK_SETTINGS:
        found = [r for r in rows if r.setting == setting]
        if found and setting != "paper" and not _consistent(found, average.value if average else None):
            continue
        if found:
            per_task = found
            break
    figures: dict[str, float] = {}
    sources: dict[str, tuple[str, str]] = {}
    for r in per_task:
        if r.task != AVERAGE:
            name = task_name(r.task, documents)
            figures[name], sources[name] = r.value, (r.setting, r.source)
    chosen = average or next((r for r in per_task if r.task == AVERAGE), None)  # none is made up
    if chosen is not None:
        figures[AVERAGE], sources[AVERAGE] = chosen.value, (chosen.setting, chosen.source)
    return tuple(figures.items()), tuple(sources.items())


def key_of_row(row: PublishedRow) -> BrightKey | None:
    """The configuration of one CSV row that r2med can run, or None (:func:`why_not_reproducible` says why)."""
    return None if why_not_reproducible(row) else _key(row)


def _key(row: PublishedRow) -> BrightKey:
    llm = reasoning_llm(row.queries) or "none"
    split = split_reranker(row.reranker)
    if split is not None:
        model, depth = split
        return BrightKey(row.retriever, RERANK + RERANKER_OF.get(model, model), "none", model, depth)
    return BrightKey(row.retriever, "reason" if llm != "none" else "none", llm)


def why_not_reproducible(row: PublishedRow) -> str | None:
    """Why r2med cannot run the configuration of ``row`` under BRIGHT's protocol (None: it can), in one line."""
    facts = bright
    if row.setting == FIRST_TABLE:
        return (
            "BRIGHT's first table: made on examples and documents no source names (before the revised table); "
            "`report` shows it beside a run of the same model, never graded"
        )
    if row.setting == "pyserini_2cr":
        return (
            "Pyserini's two-click reproduction: Anserini's processed corpus (not the hub's data), exclusions for 3 "
            "tasks removed after the 1000-hit search, trec_eval -c; not BRIGHT's protocol"
        )
    if row.setting in ("later_leaderboard", "leaderboard_submission") or row.reranker == "pipeline":
        return "a leaderboard pipeline (its own retrievers, rerankers and query rewriting): no configuration r2med runs"
    if row.setting == "later_release":
        return "a released reranked run (RaDeR's): import it (r2med import) to score it; its pipeline is not r2med's"
    if row.queries not in ("original", *(r.config for r in facts.hub().reasoning_sets)):
        return f"queries {row.queries!r}: not the examples' or one of BRIGHT's reasoning sets on the hub"
    try:
        model = facts.model(row.retriever)
    except OptionError:
        return (
            f"{row.retriever}: no r2med preset runs it with the settings its authors used on BRIGHT "
            "(instructions, lengths: not in BRIGHT's code)"
        )
    if model.r2med_preset is None:
        why = NOT_RUN.get(row.retriever, "no r2med preset runs its checkpoint")
        return f"{row.retriever}{' first stage' if row.reranker != 'none' else ''}: not run by r2med ({why})"
    if row.setting == "later_third_party":
        average = [
            r.value
            for r in _rows()
            if (r.setting, r.retriever, r.queries, r.documents, r.measure, r.task)
            == (AVERAGE_SETTING, row.retriever, row.queries, row.documents, row.measure, AVERAGE)
        ]
        same = [
            r
            for r in _rows()
            if (r.setting, r.retriever, r.queries, r.documents, r.measure)
            == (row.setting, row.retriever, row.queries, row.documents, row.measure)
        ]
        if not _consistent(same, average[0] if average else None):
            return (
                f"a third party's per-task copy whose mean is not the leaderboard's Average ({average[0]}): "
                "the Average grades, these do not"
            )
    if MEASURES.get(row.measure) != row.documents:
        return (
            f"{csv_measure(row.measure)} on {row.documents} documents: not a measure BRIGHT's rows grade "
            "(nDCG@10, long Recall@1)"
        )
    split = split_reranker(row.reranker)
    if row.reranker != "none" and (split is None or split[0] not in RERANKER_OF):
        return f"reranker {row.reranker!r}: not one of rerank.py's that r2med runs"
    return None


@cache
def bright_keys() -> tuple[BrightKey, ...]:
    """Every BRIGHT configuration r2med can run that has a graded figure, in the CSV's order."""
    seen: dict[BrightKey, None] = {}
    for row in _rows():
        key = key_of_row(row)
        graded = MEASURES.get(row.measure) == row.documents  # nDCG@10 of the short documents, Recall@1 of the long
        if key is not None and ((graded and row.task in key.figures(row.measure)) or row.task == AVERAGE):
            seen.setdefault(key)
    return tuple(seen)


def not_reproducible() -> list[tuple[str, str, int]]:
    """(configuration as the CSV names it, why r2med cannot run it, how many figures) for every other row."""
    found: dict[tuple[str, str], int] = {}
    for row in _rows():
        why = why_not_reproducible(row)
        if why is None:
            continue
        parts = [row.setting, row.retriever, row.queries]
        if row.reranker != "none":
            parts.append(row.reranker)
        parts += [row.documents, csv_measure(row.measure)]
        name = " / ".join(parts)
        found[(name, why)] = found.get((name, why), 0) + 1
    return [(name, why, n) for (name, why), n in found.items()]


def bright_key_for(retriever: str, method: str, llm: str) -> BrightKey | None:
    """The configuration a run of r2med's ``retriever`` with expansion ``method:llm`` (``none``) names, if any."""
    model = bright.model_for_preset(retriever)
    if model is None:
        return None
    if method == "none":
        return BrightKey(model.name)
    if method != "reason":
        return None
    return BrightKey(model.name, "reason", _reasoning_name(llm))


def _reasoning_name(llm: str) -> str:
    for r in bright.hub().reasoning_sets:
        if llm.lower() == r.name.lower():
            name: str = r.name
            return name
    return llm


# -- as the spec grading compares a run with ---------------------------------------------------------------------


def spec(key: PublishedKey) -> RetrieverSpec | RerankSpec | None:
    """The spec of BRIGHT's row ``key``: its retriever with BRIGHT's settings, or rerank.py's reranking over it."""
    if not isinstance(key, BrightKey):
        return None
    return _rerank_spec(key) if key.reranker else retriever_spec(key, Published(at_least=HEADLINE_DEPTH))


def _rerank_spec(key: BrightKey) -> RerankSpec | None:
    """A leaderboard reranking row as rerank.py ran it: the reranker's model, ``--k`` = ``--input_k`` (the
    leaderboard's top-10 / top-100: r2med's reading), rerank.py's sampling, over BRIGHT's BM25."""

    name = key.reranker_name
    meta = RERANKERS.get(name) if name else None
    if meta is None or name is None or key.depth is None:
        return None
    sampling = dict(bright.rerank_prompt().get("sampling") or {})
    published: dict[str, tuple[object, ...]] = {
        "model": (key.rerank_model,) if meta.llm else (None, key.rerank_model),
        "k": (None, key.depth, "the rerank depth"),  # unset, it records the depth it reranked at in words
        **{option: (None, sampling[option]) for option in ("temperature", "top_p", "max_tokens") if option in sampling},
    }
    options = {
        field_name: Published(published.get(field_name, (None,)), by_checkpoint(meta.options, field_name))
        for field_name in score_fields(meta.options)
    }
    first = retriever_spec(key.first_stage(), Published(at_least=key.depth))
    return None if first is None else RerankSpec(name, options, key.depth, first)


def rerank_candidates(rows: Mapping[PublishedKey, RerankSpec], first: str, step: RerankStep) -> list[PublishedKey]:
    """The one BRIGHT reranking row a rerank of ``first``'s run names: its first stage, the reranker's model (by
    checkpoint), then the depth (the top-10 row when the depth is neither published one)."""
    first_key = bright_key_for(first, "none", "none")
    if first_key is None:
        return []
    model = getattr(step.options, "model", None)
    found = [k for k in rows if isinstance(k, BrightKey) and k.retriever == first_key.retriever]
    meta_model: list[PublishedKey] = [
        k for k in found if model is None or checkpoint_name(str(model)) == checkpoint_name(k.rerank_model)
    ]
    if model is None:  # the reranker's own model: the rows it published
        meta_model = [k for k in found if rows[k].options["model"].accepts(None)]
    if not meta_model:
        return []
    deep: list[PublishedKey] = [k for k in meta_model if rows[k].depth == step.depth()]
    return deep or sorted(meta_model, key=lambda k: rows[k].depth)[:1]


def by_label(label: str) -> BrightKey | None:
    """BRIGHT's row whose r2med label is ``label`` (``bm25``, ``reasonir-8b+reason-gpt4``; any case)."""
    wanted = label.strip().lower()
    return next((k for k in bright_keys() if k.label.lower() == wanted), None)


def settings_dtype(model: str) -> tuple[str | None] | None:
    """(the precision BRIGHT's code ran its model ``model`` in; None: none stated), or None: no such model."""
    try:
        dtype = bright.model(model).r2med_encoder.get("dtype")
    except OptionError:
        return None
    return (str(dtype) if dtype else None,)
