"""An emulated BRIGHT hub dataset (``xlangai/BRIGHT``) for tests: BRIGHT's real examples rows, generated documents.

BRIGHT's documents (1 MB for pony up to 210 MB for leetcode) cannot be reached here; its ``examples`` rows can:
``../shared/data/bright/examples/<task>.jsonl.gz`` (Anserini's copy of the hub's rows). :func:`bright_files` builds,
from those rows, the parquet files of the hub's layout::

    examples/<task>-00000-of-00001.parquet        BRIGHT's columns, the real rows (the first ``queries`` of them)
    documents/<task>-00000-of-00001.parquet       id, content: every gold id and every excluded id of those rows,
                                                  plus ``distractors`` generated ones (some ids hold spaces)
    long_documents/<task>-00000-of-00001.parquet  the 8 long-document tasks: every long gold id, plus distractors
    <config>/<task>-00000-of-00001.parquet        reasoning sets (``gpt4_reason``...): the rows with a generated
                                                  "reasoning" text in ``query``, as BRIGHT's reason.py writes them

Everything is deterministic (same arguments, same bytes). Gold documents repeat words of their query and excluded
documents repeat more of them, so a lexical retriever ranks excluded documents high unless it removes them.
Serve the files as the hub's recorded history holds them with :func:`add_bright` (tests/hub_server.py's emulator:
mteb's v1 pin ``a75a0eb`` without the reasoning sets, r2med's pin ``3066d29`` with them; :data:`HISTORY`) or lay
them into a standard Hugging Face cache with :func:`fill_bright_cache` (the same rule per commit).

The hub's path and column names are written out here independently of r2med's protocol data, so tests can check
one against the other.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import random
from pathlib import Path

from hub_server import fill_hf_cache

REASONING_CONFIGS_ = ("gpt4_reason", "llama3-70b_reason", "claude-3-opus_reason", "Gemini-1.0_reason", "grit_reason")
SHARED_BRIGHT = Path(__file__).resolve().parents[2] / "shared" / "data" / "bright"
BRIGHT_REPO = "xlangai/BRIGHT"
#: The commit r2med reads BRIGHT at by default: the one mteb's BRIGHT v1.1 tasks read (mteb@1fb1d57
#: mteb/tasks/retrieval/eng/bright_v1_1_retrieval.py), whose data the revised figures were computed on; an
#: independent copy. It holds examples, documents, long documents and the five reasoning sets.
BRIGHT_PIN = "3066d29c9651a576c8aba4832d249807b181ecae"
#: The commit mteb's BrightRetrieval (v1) pins (mteb/tasks/retrieval/eng/bright_retrieval.py), 2024-06-18: examples,
#: documents and long documents, and no reasoning set (the hub's tree pages show none before 230a6a6, three at
#: 101f939, five at 9a93318, all later: issue 36's audit of huggingface.co/datasets/xlangai/BRIGHT/tree/<rev>).
MTEB_V1_PIN = "a75a0eb483f6a5233a6efc2d63d71540a4443dfb"
#: What the emulated hub serves at each commit, as the public record shows it (configs; the emulation serves a file
#: at a commit only where its config is listed here)
HISTORY = {
    MTEB_V1_PIN: ("examples", "documents", "long_documents"),
    BRIGHT_PIN: ("examples", "documents", "long_documents", *REASONING_CONFIGS_),
}
TASKS = (
    "biology", "earth_science", "economics", "psychology", "robotics", "stackoverflow", "sustainable_living",
    "leetcode", "pony", "aops", "theoremqa_theorems", "theoremqa_questions",
)  # fmt: skip
LONG_TASKS = TASKS[:7] + ("pony",)
EXAMPLE_COLUMNS = ("query", "reasoning", "id", "excluded_ids", "gold_ids_long", "gold_ids", "gold_answer")
DOCUMENT_COLUMNS = ("id", "content")
REASONING_CONFIGS = REASONING_CONFIGS_

_WORDS = (
    "cell membrane protein enzyme light insect moth gene signal energy river climate soil carbon market price "
    "demand supply memory bias robot sensor motor joint array string graph tree theorem prime integer matrix "
    "vector function limit series proof angle triangle circle probability ocean plate volcano water heat"
).split()


def have_shared_bright() -> bool:
    return (SHARED_BRIGHT / "examples" / "biology.jsonl.gz").exists()


def shared_rows(task: str) -> list[dict]:
    """BRIGHT's real examples rows of ``task`` (hub name), as Anserini ships them."""
    path = SHARED_BRIGHT / "examples" / f"{task.replace('_', '-')}.jsonl.gz"
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def hub_path(config: str, task: str) -> str:
    return f"{config}/{task}-00000-of-00001.parquet"


def _rng(*parts: object) -> random.Random:
    return random.Random(hashlib.sha256(repr(parts).encode()).hexdigest())


def _text(rng: random.Random, n: int, extra: list[str] | None = None) -> str:
    words = [rng.choice(_WORDS) for _ in range(n)] + list(extra or [])
    rng.shuffle(words)
    return " ".join(words)


def _query_words(row: dict, n: int) -> list[str]:
    return [w.strip(".,?!:;()[]`*").lower() for w in row["query"].split()[:n] if w.strip(".,?!:;()[]`*")]


def _parquet(rows: list[dict], columns: tuple[str, ...], list_columns: tuple[str, ...] = ()) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema([(c, pa.list_(pa.string()) if c in list_columns else pa.string()) for c in columns])
    table = pa.Table.from_pylist([{c: r[c] for c in columns} for r in rows], schema=schema)
    out = io.BytesIO()
    pq.write_table(table, out)
    return out.getvalue()


def _documents(task: str, rows: list[dict], distractors: int, seed: int) -> list[dict]:
    """Every gold and excluded id of ``rows`` as a document, plus ``distractors`` generated ones, shuffled."""
    docs: dict[str, str] = {}
    for row in rows:
        rng = _rng(seed, task, "query", row["id"])
        for gid in row["gold_ids"]:
            docs.setdefault(gid, _text(rng, 30, _query_words(row, 6)))
        for eid in row["excluded_ids"]:
            if eid != "N/A":
                docs.setdefault(eid, _text(rng, 20, _query_words(row, 15)))
    for i in range(distractors):
        rng = _rng(seed, task, "distractor", i)
        # BRIGHT's document ids are paths, and some hold spaces (released runs keep them)
        doc_id = f"{task}_distractor/page {i} of notes.txt" if i % 3 == 0 else f"{task}_distractor/page_{i}.txt"
        docs.setdefault(doc_id, _text(rng, 40))
    out = [{"id": k, "content": v} for k, v in docs.items()]
    _rng(seed, task, "order").shuffle(out)
    return out


def _long_documents(task: str, rows: list[dict], short: list[dict], distractors: int, seed: int) -> list[dict]:
    """Every long gold id of ``rows``; a long document holds the short ones whose id starts with its stem."""
    by_stem: dict[str, list[str]] = {}
    for d in short:
        stem = d["id"].rsplit("_", 1)[0] + ".txt"  # biology: <folder>/<page>_<n>.txt belongs to <folder>/<page>.txt
        by_stem.setdefault(stem, []).append(d["content"])
    docs: dict[str, str] = {}
    for row in rows:
        for lid in row["gold_ids_long"]:
            if lid != "N/A" and lid not in docs:
                docs[lid] = "\n\n".join(by_stem.get(lid, [])) or _text(
                    _rng(seed, task, "long", lid), 200, _query_words(row, 6)
                )
    for i in range(distractors):
        docs.setdefault(f"{task}_distractor/long page {i}.txt", _text(_rng(seed, task, "long distractor", i), 200))
    out = [{"id": k, "content": v} for k, v in docs.items()]
    _rng(seed, task, "long order").shuffle(out)
    return out


def _reasoning_rows(config: str, rows: list[dict], seed: int) -> list[dict]:
    """The rows with ``query`` replaced by a generated reasoning text (reason.py:165 replaces e['query'])."""
    out = []
    for row in rows:
        rng = _rng(seed, config, row["id"])
        text = f"1. The essential problem: {' '.join(_query_words(row, 12))}. 2. Relevant: {_text(rng, 25)}."
        out.append({**row, "query": text})
    return out


def bright_files(
    tasks: tuple[str, ...] | list[str] | None = None,
    queries: int | None = 3,
    distractors: int = 20,
    long_distractors: int = 3,
    reasoning: tuple[str, ...] = REASONING_CONFIGS,
    seed: int = 0,
) -> dict[str, bytes]:
    """Hub path -> parquet bytes of an emulated BRIGHT for ``tasks`` (hub names; None: all 12).

    ``queries``: how many of each task's real rows (None: all; aops and theoremqa_questions exclude ~5,000
    documents per query, so every query adds that many documents); ``distractors``: generated documents per task.
    """
    files: dict[str, bytes] = {}
    lists = ("excluded_ids", "gold_ids_long", "gold_ids")
    for task in tasks or TASKS:
        rows = shared_rows(task)[:queries] if queries is not None else shared_rows(task)
        files[hub_path("examples", task)] = _parquet(rows, EXAMPLE_COLUMNS, lists)
        short = _documents(task, rows, distractors, seed)
        files[hub_path("documents", task)] = _parquet(short, DOCUMENT_COLUMNS)
        if task in LONG_TASKS:
            long_docs = _long_documents(task, rows, short, long_distractors, seed)
            files[hub_path("long_documents", task)] = _parquet(long_docs, DOCUMENT_COLUMNS)
        for config in reasoning:
            files[hub_path(config, task)] = _parquet(_reasoning_rows(config, rows, seed), EXAMPLE_COLUMNS, lists)
    return files


def read_parquet(data: bytes) -> list[dict]:
    """The rows of a parquet file's bytes, as dicts (lists stay lists)."""
    import pyarrow.parquet as pq

    return pq.read_table(io.BytesIO(data)).to_pylist()


def files_at(files: dict[str, bytes], commit: str) -> dict[str, bytes]:
    """The part of ``files`` the hub held at ``commit`` as the record shows it (:data:`HISTORY`; a commit it does
    not name -- a test's own later head -- keeps them all)."""
    configs = HISTORY.get(commit)
    if configs is None:
        return dict(files)
    return {path: data for path, data in files.items() if path.split("/", 1)[0] in configs}


def add_bright(hub, files: dict[str, bytes], head: str = BRIGHT_PIN) -> None:
    """Serve ``files`` as the hub's history shows them: mteb's v1 pin without reasoning sets, r2med's pin with
    them, ``main`` at ``head``."""
    for commit in HISTORY:
        hub.add(BRIGHT_REPO, files_at(files, commit), commit, refs=("main",) if commit == head else ())


def fill_bright_cache(
    cache: str | Path, files: dict[str, bytes], commit: str = BRIGHT_PIN, refs: tuple[str, ...] = ("main",)
) -> Path:
    """Lay ``files`` into a standard Hugging Face hub cache as ``datasets--xlangai--BRIGHT`` at ``commit`` (only
    those the record shows there: :func:`files_at`)."""
    return fill_hf_cache(cache, BRIGHT_REPO, files_at(files, commit), commit, refs=refs)
