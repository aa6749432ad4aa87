"""Readers for the on-disk formats (JSONL, TSV, TREC qrels) with ``file:line`` validation.

Every reader raises :class:`r2med.errors.DataError` naming the file and line of
the first problem: bad UTF-8, malformed JSON, a missing or mistyped field, a
duplicate id, an empty file where content is required.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import DataError
from .collection import Qrels


def iter_lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, decoded line) for every non-blank line; bad UTF-8 is a DataError."""
    try:
        handle = open(path, "rb")
    except FileNotFoundError:
        raise DataError(path, None, "file not found") from None
    with handle:
        for number, raw in enumerate(handle, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise DataError(path, number, f"not valid UTF-8 ({exc.reason} at byte {exc.start})") from None
            if number == 1 and line.startswith("\ufeff"):
                line = line[1:]
            if line.strip():
                yield number, line


def iter_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    for number, line in iter_lines(path):
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            reason = exc.msg.removesuffix(" at").lower()
            raise DataError(path, number, f"malformed JSON at column {exc.colno} ({reason})") from None
        if not isinstance(record, dict):
            raise DataError(path, number, f"expected a JSON object, got {type(record).__name__}")
        yield number, record


def field_id(path: Path, number: int, record: dict[str, Any], key: str) -> str:
    """The id in ``record[key]`` as a string, or a DataError at ``path:number``."""
    if key not in record:
        raise DataError(path, number, f"missing field {key!r}")
    value = record[key]
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise DataError(path, number, f"field {key!r} must be a string or integer id, got {type(value).__name__}")
    value = str(value)
    if not value.strip():
        raise DataError(path, number, f"field {key!r} is empty")
    if any(c.isspace() for c in value):
        raise DataError(path, number, f"field {key!r} = {value!r} contains whitespace (ids must fit TREC run files)")
    return value


def _text(path: Path, number: int, record: dict[str, Any], key: str, required: bool = True) -> str:
    if key not in record or record[key] is None:
        if required:
            raise DataError(path, number, f"field {key!r} is null" if key in record else f"missing field {key!r}")
        return ""
    value = record[key]
    if not isinstance(value, str):
        raise DataError(path, number, f"field {key!r} must be a string, got {type(value).__name__}")
    return value


def read_texts(
    path: Path,
    id_key: str = "id",
    text_key: str = "text",
    title_key: str | None = None,
    keep_meta: bool = False,
) -> tuple[dict[str, str], dict[str, dict[str, Any]]]:
    """Read ``{id, text}`` records into an ordered id -> text map (titles joined in front when present)."""
    texts: dict[str, str] = {}
    meta: dict[str, dict[str, Any]] = {}
    first_line: dict[str, int] = {}
    for number, record in iter_jsonl(path):
        key = field_id(path, number, record, id_key)
        if key in texts:
            raise DataError(path, number, f"duplicate id {key!r} (first seen on line {first_line[key]})")
        text = _text(path, number, record, text_key)
        if title_key:
            title = _text(path, number, record, title_key, required=False).strip()
            if title:
                text = f"{title} {text}"
        texts[key] = text
        first_line[key] = number
        if keep_meta:
            extra = {k: v for k, v in record.items() if k not in (id_key, text_key)}
            if extra:
                meta[key] = extra
    if not texts:
        raise DataError(path, None, "no records (empty file)")
    return texts, meta


def _grade(path: Path, number: int, value: Any) -> int:
    try:
        grade = float(value)
    except (TypeError, ValueError):
        raise DataError(path, number, f"relevance {value!r} is not a number") from None
    if not math.isfinite(grade) or grade != int(grade):
        raise DataError(path, number, f"relevance {value!r} is not an integer grade")
    return int(grade)


def _add_qrel(qrels: Qrels, path: Path, number: int, qid: str, did: str, grade: int, seen: dict) -> None:
    pair = (qid, did)
    if pair in seen:
        raise DataError(path, number, f"duplicate judgment for query {qid!r}, doc {did!r} (first on line {seen[pair]})")
    seen[pair] = number
    qrels.setdefault(qid, {})[did] = grade


def read_qrels_jsonl(path: Path, qid_key: str = "q_id", did_key: str = "p_id", score_key: str = "score") -> Qrels:
    qrels: Qrels = {}
    seen: dict = {}
    for number, record in iter_jsonl(path):
        qid = field_id(path, number, record, qid_key)
        did = field_id(path, number, record, did_key)
        if score_key not in record:
            raise DataError(path, number, f"missing field {score_key!r}")
        _add_qrel(qrels, path, number, qid, did, _grade(path, number, record[score_key]), seen)
    if not qrels:
        raise DataError(path, None, "no judgments (empty file)")
    return qrels


def read_qrels_tsv(path: Path) -> Qrels:
    """BEIR's ``qrels/<split>.tsv``: ``query-id<TAB>corpus-id<TAB>score`` with a header line."""
    qrels: Qrels = {}
    seen: dict = {}
    for number, line in iter_lines(path):
        fields = line.rstrip("\r\n").split("\t")
        if number == 1 and fields[0].strip().lower() in ("query-id", "query_id", "qid"):
            continue
        if len(fields) != 3:
            raise DataError(path, number, f"expected 3 tab-separated fields, got {len(fields)}")
        qid, did, score = (f.strip() for f in fields)
        _add_qrel(qrels, path, number, qid, did, _grade(path, number, score), seen)
    if not qrels:
        raise DataError(path, None, "no judgments (empty file)")
    return qrels


def read_qrels_trec(path: Path) -> Qrels:
    """A TREC qrels file: ``qid iteration docid relevance`` per line (whitespace-separated)."""
    qrels: Qrels = {}
    seen: dict = {}
    for number, line in iter_lines(path):
        fields = line.split()
        if len(fields) != 4:
            raise DataError(path, number, f"expected 4 fields 'qid iter docid rel', got {len(fields)}")
        qid, _, did, score = fields
        _add_qrel(qrels, path, number, qid, did, _grade(path, number, score), seen)
    if not qrels:
        raise DataError(path, None, "no judgments (empty file)")
    return qrels


def read_qrels(path: str | Path) -> Qrels:
    """Read judgments in any supported form, chosen by extension/content: JSONL, BEIR TSV or TREC."""
    path = Path(path)
    if path.suffix == ".jsonl":
        return read_qrels_jsonl(path)
    if path.suffix == ".tsv":
        return read_qrels_tsv(path)
    return read_qrels_trec(path)
