"""Commands ``r2med models`` (every retriever and its settings) and ``r2med cache ls|rm``
(every artifact under the r2med home: BM25 indexes, embeddings, LLM caches...)."""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from pathlib import Path
from typing import Any, Optional

import typer
from rich.markup import escape
from rich.table import Table

from ..cache import dir_size, home, temp_is_stale
from ..errors import R2MedError
from ..paths import ensure_within, name_problem
from . import app, console

cache_app = typer.Typer(help="List or remove cached artifacts under the r2med home ($R2MED_HOME).",
                        no_args_is_help=True)
app.add_typer(cache_app, name="cache")


def retriever_settings() -> dict[str, dict[str, Any]]:
    """name -> {description, family, settings...} for every registered retriever."""
    from ..retrieval.registry import all_retrievers

    return {name: {"description": meta.description, "family": "lexical" if meta.family == "lexical" else "dense",
                   **meta.summary} for name, meta in all_retrievers().items()}


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

LEGACY_DETAIL = "temp left by an interrupted write of an earlier r2med (`cache rm KIND --partial` removes it)"
_LEGACY_TEMP = re.compile(r"\..+\.(?:[a-z0-9_]{8}\.tmp|old\.\d+)")
TEMP_DETAIL = "temp left by an interrupted write (the next write of it, or `cache rm KIND --partial`, removes it)"


def _kind_folders(root: Path) -> list[Path]:
    """The kinds under the home: real (not linked) folders with plain, unhidden names."""
    return sorted(p for p in root.iterdir() if p.is_dir() and not p.is_symlink() and not p.name.startswith("."))


def cache_entries(kind: Optional[str] = None) -> list[dict[str, Any]]:
    """Every entry under the home, as {kind, name, path, bytes, modified, state, detail}.

    Only these entries can be removed by ``cache rm``: ``kind`` must be one of the home's own
    kind folders (a plain name, not a link), so no argument reaches outside the home.
    ``state`` is ``partial`` for unfinished embeddings and temps of interrupted writes.
    """
    root = home()
    kinds = _kind_folders(root)
    if kind is not None:
        chosen = [k for k in kinds if k.name == kind and name_problem(kind) is None]
        if not chosen:
            known = ", ".join(k.name for k in kinds) or "none yet"
            raise R2MedError(f"no cached {kind!r} under {root} (kinds: {known}); see `r2med cache ls`")
        kinds = chosen
    out = []
    for folder in kinds:
        for entry in sorted(folder.iterdir()):
            stale = temp_is_stale(entry.name)
            legacy = stale is None and _LEGACY_TEMP.fullmatch(entry.name) is not None
            if legacy:  # an earlier r2med's temp (no writer id): listed, removed by --partial only
                stale = True
            if entry.name.startswith(".") and stale is None:
                continue
            link = entry.is_symlink()
            info = entry.lstat()
            size = dir_size(entry) if entry.is_dir() and not link else info.st_size
            if stale is not None:
                state, detail = ("partial", LEGACY_DETAIL if legacy else TEMP_DETAIL) if stale else (
                    "writing", "temp of a write in progress")
            else:
                detail = "link (only the link is removed)" if link else _detail(folder.name, entry)
                state = "partial" if detail.endswith("partial") else ""
                leftovers = 0 if link or not entry.is_dir() else _stale_temps_inside(entry)
                if leftovers:
                    detail += f" · {leftovers} temp file(s) left by an interrupted write"
            out.append({"kind": folder.name, "name": entry.name, "path": entry, "bytes": size,
                        "modified": info.st_mtime, "state": state, "detail": detail})
    return out


def _stale_temps_inside(entry: Path) -> int:
    return sum(1 for _, dirs, files in os.walk(entry) for n in dirs + files if temp_is_stale(n))


def _detail(kind: str, entry: Path) -> str:
    try:
        if kind == "embeddings":
            meta = json.loads((entry / "meta.json").read_text(encoding="utf-8"))
            state = "complete" if (entry / "embeddings.npy").exists() else "partial"
            enc = meta["encoder"]
            extras = " ".join(f"{k}={enc[k]}" for k in ("pooling", "max_length") if enc.get(k) is not None)
            role = meta.get("role", "documents")
            unit = "docs" if role == "documents" else "queries"
            return f"{enc.get('model')} {extras} · {meta['n_docs']} {unit} · {state}"
        if kind == "bm25":
            params = json.loads((entry / "params.json").read_text(encoding="utf-8"))
            return f"k1={params['k1']} b={params['b']} {params['analyzer']['name']} · {params['n_docs']} docs"
        if entry.is_file() and entry.suffix == ".jsonl":
            with entry.open("rb") as fh:
                return f"{sum(1 for _ in fh)} records"
    except (OSError, ValueError, KeyError):
        return "unreadable"
    return ""


def _size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n}"


@cache_app.command("ls")
def cache_ls(kind: Optional[str] = typer.Argument(None, help="Only this kind (bm25, embeddings, llm...)."),
             as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """List cached artifacts with their size."""
    entries = cache_entries(kind)
    if as_json:
        typer.echo(json.dumps([{**e, "path": str(e["path"])} for e in entries], indent=1))
        return
    table = Table(title=escape(f"r2med cache: {home()}"))
    for col in ("kind", "name", "size", "modified", "what"):
        table.add_column(col, justify="right" if col == "size" else "left", overflow="fold")
    for e in entries:  # names and details come from the file system and cached files: printed as text
        table.add_row(escape(e["kind"]), escape(e["name"]), _size(e["bytes"]),
                      time.strftime("%Y-%m-%d %H:%M", time.localtime(e["modified"])), escape(e["detail"]))
    console.print(table)
    console.print(f"{len(entries)} entr{'y' if len(entries) == 1 else 'ies'}, {_size(sum(e['bytes'] for e in entries))}")


@cache_app.command("rm")
def cache_rm(kind: str = typer.Argument(..., help="Kind of artifact (bm25, embeddings, llm...)."),
             names: Optional[list[str]] = typer.Argument(None, help="Entries to remove (see `r2med cache ls`)."),
             all_: bool = typer.Option(False, "--all", help="Remove every entry of this kind."),
             partial: bool = typer.Option(False, "--partial", help="Remove unfinished embedding encodings and "
                                                                   "temps left by interrupted writes.")) -> None:
    """Remove cached artifacts (safe: anything removed is rebuilt on demand)."""
    entries = {e["name"]: e for e in cache_entries(kind)}
    if partial:
        chosen = [e for e in entries.values() if e["state"] == "partial"]
    elif all_:
        chosen = list(entries.values())
    elif names:
        missing = [n for n in names if n not in entries]
        if missing:
            raise R2MedError(f"no {kind} entry named {missing[0]!r}; see `r2med cache ls {kind}`")
        chosen = [entries[n] for n in names]
    else:
        raise R2MedError(f"name the {kind} entries to remove, or pass --all (see `r2med cache ls {kind}`)")
    root = home()
    freed = 0
    for e in chosen:
        path: Path = e["path"]
        ensure_within(root / e["kind"], path)  # listed entries only: never above the home
        if path.is_symlink() or not path.is_dir():
            path.unlink(missing_ok=True)  # a link is removed, never followed
        else:
            shutil.rmtree(path)
        freed += e["bytes"]
    console.print(f"removed {len(chosen)} {escape(kind)} entr{'y' if len(chosen) == 1 else 'ies'}, freed {_size(freed)}")
