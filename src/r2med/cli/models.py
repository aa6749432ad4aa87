"""``r2med models``: every retriever and reranker of the registries and its settings (the paper's,
then later work on R2MED, then BRIGHT's presets r2med defines); ``--wide`` shows every setting and its source.

A preset another family has its own settings for shows them beside its own (``bright``: BRIGHT's settings on BRIGHT's
tasks, :meth:`r2med.data.benchmarks.Benchmark.settings_summary`); a model trained on data rebuilt from a benchmark's
documents carries its ``contamination`` (``‡``: the training data, the tasks it touches, the sources)."""

from __future__ import annotations

import json
from typing import Any

import typer
from rich.markup import escape
from rich.table import Table

from ..errors import R2MedError
from . import app
from ._ui import PrintableConsole, console
from .options import LISTING_FORMAT_EXACT


def retriever_settings() -> dict[str, dict[str, Any]]:
    """name -> {kind, description, family, settings...} for every registered retriever; a later model's also
    carries its published row, the source of each setting, its gaps and tolerance class."""
    from ..data.benchmarks import benchmarks
    from ..infra.registry import TOLERANCES
    from ..retrieval.registry import all_retrievers

    out = {}
    for name, meta in all_retrievers().items():
        row: dict[str, object] = {
            "kind": "retriever",
            "description": meta.description,
            "family": meta.family,
            **meta.summary,
        }
        if meta.needs_gpu:
            row["needs_gpu"] = meta.needs_gpu
        if meta.later:
            row.update(
                later=True, **meta.provenance, tolerance={"class": meta.tolerance, "points": TOLERANCES[meta.tolerance]}
            )
        row["home"] = meta.home
        others = {b.name: s for b in benchmarks() if (s := b.settings_summary(name)) is not None}
        if others:
            row["settings_on"] = others
        if meta.contamination:
            row["contamination"] = [_contamination(c) for c in meta.contamination]
        out[name] = row
    return out


def _contamination(fact: Any) -> dict[str, Any]:
    return {
        "training_set": fact.training_set,
        "tasks": list(fact.qualified_tasks()),
        "how": fact.how,
        "certainty": fact.certainty,
        "sources": list(fact.sources),
    }


def reranker_settings() -> dict[str, dict[str, Any]]:
    """name -> {kind, description, what it needs...} for every registered reranker (later work: its provenance)."""
    from ..infra.registry import TOLERANCES
    from ..reranking.base import all_rerankers, published_depth

    out = {}
    for name, meta in all_rerankers().items():
        row: dict[str, Any] = {
            "kind": "reranker",
            "description": meta.description,
            "hub_id": meta.hub_id,
            "depth": published_depth(name),
            "needs_gpu": meta.needs_gpu,
            "llm": meta.llm,
            "install": meta.install,
        }
        if meta.framing is not None:
            row["framing"] = meta.framing.describe()
        if meta.contamination:
            row["contamination"] = [_contamination(c) for c in meta.contamination]
        if meta.later:
            row.update(later=True, **meta.provenance)
            if meta.tolerance:
                row["tolerance"] = {"class": meta.tolerance, "points": TOLERANCES[meta.tolerance]}
        out[name] = row
    return out


@app.command("models")
def models_command(
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
    fmt: str = typer.Option(
        "table",
        "--format",
        "-f",
        metavar=LISTING_FORMAT_EXACT.choices_metavar,
        callback=LISTING_FORMAT_EXACT.callback,
        help="table or json (= --json).",
    ),
    wide: bool = typer.Option(
        False, "--wide", help="Every setting in one wide table per section (default: a layout that fits the terminal)."
    ),
) -> None:
    """List every retriever and reranker with its settings: the paper's, then later work on R2MED."""
    if fmt not in ("table", "json"):
        raise R2MedError(f"unknown --format {fmt!r}; choose table or json")
    retrievers = retriever_settings()
    # a reranker named as a retriever (``custom``, a package's entry point) keeps its own row
    rows = {**retrievers, **{(f"{n} (reranker)" if n in retrievers else n): r for n, r in reranker_settings().items()}}
    if as_json or fmt == "json":
        typer.echo(json.dumps(rows, indent=1, ensure_ascii=False))
        return
    sections = [
        (
            "retrievers: r2med evaluate --retriever NAME",
            {n: r for n, r in rows.items() if r["kind"] == "retriever" and not r.get("later") and _own(r)},
        ),
        (
            "rerankers: r2med rerank --reranker NAME",
            {n: r for n, r in rows.items() if r["kind"] == "reranker" and not r.get("later")},
        ),
        (
            "later work (published on R2MED after the paper; docs/later-models.md): retrievers",
            {n: r for n, r in rows.items() if r["kind"] == "retriever" and r.get("later")},
        ),
        ("later work: rerankers", {n: r for n, r in rows.items() if r["kind"] == "reranker" and r.get("later")}),
        (
            "BRIGHT's retrievers r2med defines (their settings are BRIGHT's; docs/bright.md): retrievers",
            {n: r for n, r in rows.items() if r["kind"] == "retriever" and not _own(r)},
        ),
    ]
    out = PrintableConsole(width=10_000, emoji=False) if wide else console  # wide: never folded (pipe it, or scroll)
    for title, section in sections:
        out.print(_wide_table(title, section) if wide else _narrow_table(title, section))
    if wide:
        out.print(framing_table(rows))
    out.print(
        "similarity: how query and document vectors are scored (the paper: cosine for every retriever); "
        "dtype: the precision the published code ran each model in (fp16-autocast: fp32 weights under CUDA "
        "fp16 autocast; auto: the checkpoint's own; CPU: the precision used on a CPU); gaps: settings the "
        "authors did not publish (r2med models --json: each setting's source); BRIGHT: the settings a preset runs "
        "on BRIGHT's tasks (configs/<model>/<task>.json, retrievers.py); ‡: trained on data rebuilt from a "
        "benchmark's documents (the tasks it touches; r2med report marks those figures).",
        soft_wrap=wide,
    )


def _own(r: dict[str, Any]) -> bool:
    """A retriever whose own settings are the default family's (R2MED's) or r2med's (not one of the presets defined
    from another family's records: BRIGHT's)."""
    from ..results.grading import default_family

    return r.get("home") in (None, default_family())


def _recipe(r: dict[str, Any]) -> list[str]:
    """A model's settings as short phrases (``last-token``, ``normalised``, ``fp16 (CPU: fp32)``...)."""
    if r["kind"] == "reranker":
        parts = [
            "an LLM at an endpoint (--base-url)" if r.get("llm") else "",
            f"reranks the top {r['depth']}",
            f"needs a GPU ({r['needs_gpu']})" if r.get("needs_gpu") else "",
        ]
        return [p for p in parts if p]
    if r.get("family") == "lexical":
        return [f"k1={r['k1']} b={r['b']}"]
    if r.get("loader") is None and "normalize" not in r:  # `dense`: the user's model
        return [str(r.get("pooling", "")), str(r.get("similarity", "")), str(r.get("dtype", ""))]
    loader = r.get("loader")
    dtype = str(r.get("dtype", "")) + (f" (CPU: {r['cpu_dtype']})" if r.get("cpu_dtype") else "")
    length = f"{r['max_length']} tokens" if isinstance(r.get("max_length"), int) else str(r.get("max_length", ""))
    if r.get("query_max_length") and r.get("query_max_length") != r.get("max_length"):
        length += f" (queries {r['query_max_length']})"
    parts = [
        str(r.get("pooling", "")) if loader in (None, "transformers") else str(loader),
        "normalised" if r.get("normalize") else "",
        str(r.get("similarity", "")),
        dtype,
        length,
        "EOS appended" if r.get("append_eos") else "",
        f"framing {r['framing']['framing']}" if isinstance(r.get("framing"), dict) else "",
        "own hub code" if r.get("trust_remote_code") else "",
        f"needs a GPU ({r['needs_gpu']})" if r.get("needs_gpu") else "",
    ]
    return [p for p in parts if p]


def _family_lines(r: dict[str, Any]) -> list[str]:
    """Another family's settings for the model, one line each (``BRIGHT (sf): last-token · normalised ...``)."""
    out = []
    for family, summary in (r.get("settings_on") or {}).items():
        if not summary.get("loader"):  # BM25: the same function as its own
            out.append(f"{family.upper()} ({summary['model']}): the same as its own")
            continue
        shown = {**summary, "max_length": summary.get("max_length") or "model's own"}
        recipe = _recipe({"kind": "retriever", **shown})
        extra = summary.get("extra") or {}
        recipe += [
            "prompt excluded from pooling" if extra.get("exclude_prompt_from_pooling") else "",
            f"texts sent {extra['text_form']}" if extra.get("text_form") else "",
        ]
        for side in ("query", "doc"):
            if summary.get(f"{side}_instruction"):
                recipe.append(f"{side} instruction {_short(summary[f'{side}_instruction'])}")
        recipe = [part for part in recipe if part]
        out.append(f"{family.upper()} ({summary['model']}): " + " · ".join(recipe))
    return out


def _contamination_line(r: dict[str, Any]) -> str:
    from ..report.contamination import models_line

    return models_line(r.get("contamination") or [])


def _later_line(r: dict[str, Any]) -> str:
    """Published figure, gaps and whether the settings were assumed, for a later model."""
    if not r.get("later"):
        return ""
    pub = r.get("published") or {}
    bits = []
    if pub.get("average") is not None:
        bits.append(f"published {pub['average']:.2f} ({pub['setting']})")
    elif pub.get("elsewhere"):
        bits.append(f"no R2MED figure in the package (elsewhere {pub['elsewhere']['average']})")
    elif "published" in r:
        bits.append("no published R2MED figure")
    if r.get("assumed"):
        bits.append("settings ASSUMED (none published): ungraded")
    if r.get("gaps"):
        bits.append(f"{len(r['gaps'])} gap{'s' if len(r['gaps']) != 1 else ''}")
    return " · ".join(bits)


def _narrow_table(title: str, rows: dict[str, dict[str, Any]]) -> Table:
    """Two columns: the name, and what it runs -- model, recipe, published figure -- wrapped to the width."""
    table = Table(title=title, title_justify="left", show_header=False, box=None, padding=(0, 1), pad_edge=False)
    table.add_column("name", no_wrap=True, style="bold")
    table.add_column("settings", overflow="fold")
    for name, r in rows.items():
        table.add_row(escape(name), escape("\n".join(line for line in _lines(r) if line)))
    return table


def _lines(r: dict[str, Any]) -> list[str]:
    """What the narrow layout shows of a model: what it loads, what it is (rerankers), its recipe, its figure."""
    model = "" if r.get("family") == "lexical" else str(r.get("hub_id") or "")
    what = str(r.get("description", "")) if r["kind"] == "reranker" or not model else ""
    if model and what.startswith(model):
        what = what[len(model) :].lstrip(": ")
    return [model, what, " · ".join(_recipe(r)), *_family_lines(r), _later_line(r), _contamination_line(r)]


def _wide_table(title: str, rows: dict[str, dict[str, Any]]) -> Table:
    """Every setting as a column (``--wide``)."""
    table = Table(title=title, title_justify="left")
    retriever = any(r["kind"] == "retriever" for r in rows.values())
    cols = ["name", "model", "settings"]
    if retriever:
        cols += ["batch", "query instruction", "doc instruction"]
        cols += ["BRIGHT settings"]
    cols += ["published", "contamination", "description"]
    for col in cols:
        table.add_column(col, no_wrap=True)
    for name, r in rows.items():
        cells = [name, "" if r.get("family") == "lexical" else str(r.get("hub_id") or ""), " · ".join(_recipe(r))]
        if retriever:
            cells += [
                str(r.get("batch_size", "")),
                _short(r.get("query_instruction")),
                _short(r.get("doc_instruction")),
                " | ".join(_family_lines(r)),
            ]
        cells += [_later_line(r), _contamination_line(r), str(r.get("description", ""))]
        table.add_row(*(escape(c) for c in cells))
    return table


def framing_table(rows: dict[str, dict[str, Any]]) -> Table:
    """The special tokens around each text in every model's published runs, by text, with the source (``--wide``)."""
    table = Table(
        title="framing: the special tokens each model saw in its published runs, by text (r2med builds: the ids "
        "are made by r2med whatever the tokenizer adds; tokenizer's: an assumed framing, so the tokenizer's own "
        "is used where its files agree, and a run stops where they do not; checks: the first text's ids are "
        "checked; no: the model's own code or its tokenizer's template, as published)",
        title_justify="left",
    )
    for col in ("name", "tokens", "added by", "r2med", "source"):
        table.add_column(col, no_wrap=True)
    for name, r in rows.items():
        framing = r.get("framing")
        if not isinstance(framing, dict):
            continue
        if not framing["checked"]:
            enforced = "no"
        elif framing.get("used") == "tokenizer":
            enforced = "tokenizer's"
        else:
            enforced = "builds" if r.get("loader") == "transformers" or r["kind"] == "reranker" else "checks"
        cells = (name, framing["framing"], framing["added_by"], enforced, framing["source"])
        table.add_row(*(escape(c) for c in cells))
    return table


def _short(value: Any, width: int = 40) -> str:
    if not value:
        return ""
    text = str(value).replace("\n", "\\n")
    return text if len(text) <= width else text[: width - 1] + "…"
