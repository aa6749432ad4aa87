"""Commands ``r2med models`` (every retriever of the registry and its settings) and ``r2med cache ls|rm``
(every artifact under the r2med home: BM25 indexes, embeddings, LLM caches...; :mod:`r2med.jobs.cache`)."""

from __future__ import annotations

import json
import time
from typing import Any, Optional

import typer
from rich.markup import escape
from rich.table import Table

from . import app
from ._ui import console

cache_app = typer.Typer(help="List or remove cached artifacts under the r2med home ($R2MED_HOME).",
                        no_args_is_help=True)
app.add_typer(cache_app, name="cache")


def retriever_settings() -> dict[str, dict[str, Any]]:
    """name -> {description, family, settings...} for every registered retriever."""
    from ..retrieval.registry import all_retrievers

    return {name: {"description": meta.description, "family": meta.family, **meta.summary}
            for name, meta in all_retrievers().items()}


@app.command("models")
def models_command(as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table.")) -> None:
    """List every retriever (BM25 and the paper's dense presets) with its settings."""
    rows = retriever_settings()
    if as_json:
        typer.echo(json.dumps(rows, indent=1, ensure_ascii=False))
        return
    table = Table(title="retrievers (use with `r2med evaluate --retriever NAME`)")
    for col in ("name", "family", "model", "pooling", "norm", "similarity", "dtype", "eos", "max len", "batch",
                "query instruction", "doc instruction"):
        table.add_column(col, overflow="fold")
    for name, r in rows.items():
        if r.get("family") == "lexical":
            table.add_row(name, "lexical", f"k1={r['k1']} b={r['b']}", *[""] * 9)
            continue
        pooling = r.get("pooling", "") if r.get("loader") in (None, "transformers") else r.get("loader", "")
        eos = "appended" if r.get("append_eos") else "model's own" if r.get("loader") == "remote-code" else \
            "no" if "append_eos" in r else ""
        max_len = str(r.get("max_length", ""))
        if r.get("query_max_length"):
            max_len += f" (queries {r['query_max_length']})"
        table.add_row(name, r.get("family", ""), str(r.get("hub_id", "")), str(pooling),
                      "yes" if r.get("normalize") else "no" if "normalize" in r else "",
                      str(r.get("similarity", "")), str(r.get("dtype", "")), eos, max_len,
                      str(r.get("batch_size", "")), _short(r.get("query_instruction")), _short(r.get("doc_instruction")))
    console.print(table)
    console.print("similarity: how query and document vectors are scored (the paper: cosine for every retriever); "
                  "dtype: the precision the paper's code ran each model in (fp16-autocast: fp32 weights under "
                  "CUDA fp16 autocast; auto: the checkpoint's own).")


def _short(value: Any, width: int = 40) -> str:
    if not value:
        return ""
    text = str(value).replace("\n", "\\n")
    return text if len(text) <= width else text[: width - 1] + "…"


# -- cache ---------------------------------------------------------------------------------------

def _size(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n}"


@cache_app.command("ls")
def cache_ls(kind: Optional[str] = typer.Argument(None, help="Only this kind (bm25, embeddings, llm...)."),
             as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """List cached artifacts with their size."""
    from ..cache import home
    from ..jobs.cache import cache_entries

    entries = cache_entries(kind)
    if as_json:
        typer.echo(json.dumps([e.to_dict() for e in entries], indent=1))
        return
    table = Table(title=escape(f"r2med cache: {home()}"))
    for col in ("kind", "name", "size", "modified", "what"):
        table.add_column(col, justify="right" if col == "size" else "left", overflow="fold")
    for e in entries:  # names and details come from the file system and cached files: printed as text
        table.add_row(escape(e.kind), escape(e.name), _size(e.bytes),
                      time.strftime("%Y-%m-%d %H:%M", time.localtime(e.modified)), escape(e.detail))
    console.print(table)
    console.print(f"{len(entries)} entr{'y' if len(entries) == 1 else 'ies'}, {_size(sum(e.bytes for e in entries))}")


@cache_app.command("rm")
def cache_rm(kind: str = typer.Argument(..., help="Kind of artifact (bm25, embeddings, llm...)."),
             names: Optional[list[str]] = typer.Argument(None, help="Entries to remove (see `r2med cache ls`)."),
             all_: bool = typer.Option(False, "--all", help="Remove every entry of this kind."),
             partial: bool = typer.Option(False, "--partial", help="Remove unfinished embedding encodings and "
                                                                   "temps left by interrupted writes.")) -> None:
    """Remove cached artifacts (safe: anything removed is rebuilt on demand)."""
    from ..jobs.cache import remove_entries

    count, freed = remove_entries(kind, names, everything=all_, partial=partial)
    console.print(f"removed {count} {escape(kind)} entr{'y' if count == 1 else 'ies'}, freed {_size(freed)}")
