"""Readers for the on-disk formats (JSONL, TSV, TREC qrels) with ``file:line`` validation.

Every reader raises :class:`r2med.errors.DataError` naming the file and line of
the first problem: bad UTF-8, malformed JSON, a missing or mistyped field, a lone
surrogate in a string, a relevance grade that is not an integer in -1000..1000,
an id that breaks the id rule (:func:`id_problem`), an empty file where content is
required.  No other exception escapes a reader.

The id rule, one for every reader of ids (these, the TREC run and JSON score readers of
:mod:`r2med.runs.run`, the expansion reader) and for the run writer: an id is not empty and
holds no control character (C0, DEL, C1, U+2028/U+2029; pytrec_eval reads ids as C strings,
so ``13\0x`` would be scored as ``13``); a query id holds no whitespace at all (it is a TREC
line's first field); a document id may hold spaces inside, not at either end (a TREC run's
document id is what lies between its second field and its last three).

Repeated ids follow the paper's dense loader (a dict filled line by line, BEIR-style): a
record whose id was seen before replaces the earlier one (which keeps its place in
the order), and identical repeats change nothing; each kind is counted in one
warning.  The paper's BM25 script reads the corpus as a list instead, so every copy
counts in its statistics: :func:`read_texts` hands the superseded copies' texts back
(``repeats=``), :attr:`r2med.data.Collection.corpus_repeats` keeps them and BM25 indexes
them (docs/data.md, "Repeated ids").  In strict mode (each reader's and loader's ``strict=True`` parameter,
which the CLI's ``--strict`` sets) any repeat is a ``file:line`` error instead.

JSON lines are parsed by orjson when it is installed (about 2.5x faster); a line
orjson refuses, or one holding a float (orjson reads integers beyond 64 bits as
floats), is parsed again by Python's ``json``, whose behaviour and messages are the
reference: both paths give identical results (tested).
"""

from __future__ import annotations

import gzip
import json
import logging
import math
import re
import zlib
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import BinaryIO, Final

from ..errors import DataError, MissingDataFile
from ..infra.containment import path_argument
from ..infra.input_files import TooLong, bounded_lines, is_stream, open_input
from ..infra.json_types import JsonObject, JsonValue
from .collection import Qrels

_fast_loads: Callable[[bytes], object] | None
try:
    from orjson import loads as _fast_loads
except ImportError:  # pragma: no cover - orjson is a dependency; json alone gives the same results
    _fast_loads = None

log = logging.getLogger(__name__)

GRADE_MIN, GRADE_MAX = -1000, 1000
"""Relevance grades r2med accepts (negative grades count as judged non-relevant, as in trec_eval)."""

_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
_INTEGER = re.compile(r"[+-]?[0-9]+\Z")
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z")
_SHOWN_IDS = 5
_has_space = re.compile(r"\s").search  # \s is str.isspace(): the characters str.split() cuts at
_CONTROL = r"\x00-\x1f\x7f-\x9f\u2028\u2029"
_control_char = re.compile(f"[{_CONTROL}]").search
#: the longest query id (``metrics.json`` stores each query's values under its id: a longer one is damage there)
MAX_QUERY_ID_CHARS: Final = 1_000
#: a query id's flaw (whitespace, a control character, or more than :data:`MAX_QUERY_ID_CHARS`), found at C speed
_query_id_flaw = re.compile(rf"[\s{_CONTROL}]|\A[\s\S]{{{MAX_QUERY_ID_CHARS + 1}}}").search
#: a document id's flaw (a control character, or whitespace at either end), found at C speed
_doc_id_flaw = re.compile(rf"[{_CONTROL}]|\A\s|\s\Z").search


def id_problem(value: str, spaces: bool = False) -> str | None:
    """What makes ``value`` unusable as an id, or None (the id rule: the module docstring).

    ``spaces``: a document id, which may hold whitespace inside (not at either end); a query id may not.
    """
    if not value:
        return "is empty"
    flaw = _control_char(value)
    if flaw is not None:
        return (
            f"holds a control character ({flaw.group()!a} at position {flaw.start()}), which no id may hold "
            "(pytrec_eval would cut the id there)"
        )
    if spaces:
        if value[0].isspace() or value[-1].isspace():
            return "starts or ends with whitespace (a TREC run cannot keep it)"
        return None
    if _has_space(value):
        return "contains whitespace (query ids must fit a TREC run's first field)"
    if len(value) > MAX_QUERY_ID_CHARS:
        return f"is {len(value):,} characters long; a query id holds at most {MAX_QUERY_ID_CHARS:,}"
    return None


def check_id(value: str, path: Path, number: int | None, what: str, spaces: bool = False) -> str:
    """``value`` if it keeps the id rule, else a DataError at ``path:number`` naming ``what`` (``query id``)."""
    if (_doc_id_flaw if spaces else _query_id_flaw)(value) is None and value:
        return value
    problem = id_problem(value, spaces)
    if problem is None:
        return value
    raise DataError(path, number, f"{what} {_short(value)} {problem}")


def _short(value: object, limit: int = 40) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


GZIP_MAGIC = b"\x1f\x8b"
"""The first two bytes of a gzip file (RFC 1952): such a file is read decompressed, whatever its name."""


def open_data(path: Path) -> BinaryIO:
    """``path`` opened for reading bytes as an input (:func:`r2med.infra.input_files.open_input`: a stream such as
    ``<(cat run)`` is read once, whoever reads it next gets the same bytes), decompressed when it is gzip
    (:data:`GZIP_MAGIC`: runs are released gzipped, ``run.trec.gz``); errors opening it name the file."""
    try:
        handle = open_input(path)
    except FileNotFoundError:
        raise MissingDataFile(path, None, "file not found") from None
    except IsADirectoryError:
        raise DataError(path, None, "is a folder, not a file") from None
    except TooLong as exc:
        raise DataError(path, None, f"cannot be read: {exc.strerror}") from None
    except OSError as exc:
        raise DataError(path, None, f"cannot be read ({exc.strerror or exc})") from None
    try:
        start = handle.tell()
        head = handle.read(2)
        handle.seek(start)
    except OSError:  # a folder where open() succeeds on it: the read that follows says so
        head = b""
    if head != GZIP_MAGIC:
        return handle
    unpacked = gzip.GzipFile(fileobj=handle, mode="rb")
    unpacked.myfileobj = handle  # type: ignore[assignment]  # closing it closes the file too
    return unpacked  # type: ignore[return-value]  # a binary reader (read, close, context manager)


def _raw_lines(path: Path, max_line: int | None = None) -> Iterator[tuple[int, bytes]]:
    """(line number, raw bytes without the newline) for every line, read in large blocks (decompressed when the file
    is gzip: :func:`open_data`); BOM dropped.  A line longer than ``max_line`` (default
    :data:`r2med.infra.input_files.MAX_LINE_BYTES`) is a DataError naming that line, found before it is held whole
    (``/dev/zero``, a 3 GB one-line file, a gzip bomb of one line)."""
    handle = open_data(path)
    with handle:
        number = 0
        try:
            for number, raw in bounded_lines(handle, path, max_line):
                yield number, raw[3:] if number == 1 and raw.startswith(b"\xef\xbb\xbf") else raw
        except TooLong as exc:
            raise DataError(path, None, f"cannot be read: {exc.strerror}") from None
        except (EOFError, zlib.error) as exc:  # a gzip file cut short, or corrupt
            raise DataError(path, number + 1, f"not a complete gzip file ({exc})") from None
        except OSError as exc:  # e.g. a folder on a system where open() succeeds on it; a bad gzip header
            raise DataError(path, number + 1, f"cannot be read ({exc.strerror or exc})") from None


def _decode(path: Path, number: int, raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DataError(path, number, f"not valid UTF-8 ({exc.reason} at byte {exc.start})") from None


def iter_lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, decoded line) for every non-blank line; bad UTF-8 is a DataError."""
    for number, raw in _raw_lines(path):
        line = _decode(path, number, raw)
        if line.strip():
            yield number, line


_BLANK = object()


def _parse_line(path: Path, number: int, raw: bytes) -> object:
    """One line parsed by Python's ``json`` (the reference), or ``_BLANK``; every fault is a DataError."""
    line = _decode(path, number, raw)
    if not line.strip():
        return _BLANK
    try:
        value = json.loads(line)
    except json.JSONDecodeError as exc:
        reason = exc.msg.removesuffix(" at").lower()
        raise DataError(path, number, f"malformed JSON at column {exc.colno} ({reason})") from None
    except RecursionError:
        raise DataError(path, number, "malformed JSON (nested too deeply)") from None
    except ValueError as exc:  # e.g. an integer with more digits than Python converts
        raise DataError(path, number, f"malformed JSON ({exc})") from None
    if _SURROGATE_ESCAPE.search(raw) and _has_lone_surrogate(value):
        raise DataError(
            path, number, "a string holds a lone surrogate escape (e.g. \\ud800), which is not valid Unicode"
        )
    return value


def _has_lone_surrogate(value: object) -> bool:
    stack: list[object] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def _holds_float(record: Mapping[str, object]) -> bool:
    """Whether a parsed record holds a float anywhere (cheap for the usual flat records of strings)."""
    for value in record.values():
        kind = type(value)
        if kind is float:
            return True
        if kind is list or kind is dict:
            stack: list[object] = [value]
            while stack:
                item = stack.pop()
                if type(item) is float:
                    return True
                if type(item) is list:
                    stack.extend(item)
                elif type(item) is dict:
                    stack.extend(item.values())
    return False


def _records(path: Path) -> Iterator[tuple[int, JsonObject]]:
    fast = _fast_loads
    for number, raw in _raw_lines(path):
        record: object = _BLANK
        if fast is not None:
            try:
                record = fast(raw)
            except Exception:
                record = _BLANK
            else:  # orjson turns integers beyond 64 bits into floats; json keeps them exact
                if type(record) is not dict or _holds_float(record):
                    record = _BLANK
        if record is _BLANK:
            record = _parse_line(path, number, raw)
            if record is _BLANK:
                continue
        if not isinstance(record, dict):
            raise DataError(path, number, f"expected a JSON object, got {type(record).__name__}")
        yield number, record


def iter_jsonl(path: Path) -> Iterator[tuple[int, JsonObject]]:
    """(line number, JSON object) for every non-blank line; anything else is a DataError at ``path:line``."""
    return _records(Path(path))


def field_id(path: Path, number: int, record: Mapping[str, JsonValue], key: str, spaces: bool = False) -> str:
    """The id in ``record[key]`` as a string, or a DataError at ``path:number``.

    Strings are taken as they are; JSON numbers become their decimal string (``str()``, as the
    paper's code ends up comparing them): ``7`` -> ``"7"``, ``1.5`` -> ``"1.5"``.  The id rule
    (:func:`id_problem`) holds; ``spaces``: a document id (spaces inside allowed).
    """
    if key not in record:
        raise DataError(path, number, f"missing field {key!r}")
    value = record[key]
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise DataError(path, number, f"field {key!r} must be a string or a number, got {type(value).__name__}")
    if isinstance(value, float) and not math.isfinite(value):
        raise DataError(path, number, f"field {key!r} = {value!r} is not a usable id")
    value = str(value)
    if not value.strip():
        raise DataError(path, number, f"field {key!r} is empty")
    problem = id_problem(value, spaces)
    if problem is not None:
        raise DataError(path, number, f"field {key!r} = {_short(value)} {problem}")
    return value


def _text(path: Path, number: int, record: Mapping[str, JsonValue], key: str, required: bool = True) -> str:
    if key not in record or record[key] is None:
        if required:
            raise DataError(path, number, f"field {key!r} is null" if key in record else f"missing field {key!r}")
        return ""
    value = record[key]
    if not isinstance(value, str):
        raise DataError(path, number, f"field {key!r} must be a string, got {type(value).__name__}")
    return value


def _warn_repeats(
    path: Path, kind: str, same: list[str], changed: list[str], what: str, bm25_counts_copies: bool = False
) -> None:
    def shown(ids: list[str]) -> str:
        head = ", ".join(ids[:_SHOWN_IDS])
        return head + (f" and {len(ids) - _SHOWN_IDS} more" if len(ids) > _SHOWN_IDS else "")

    if same:
        also = " (BM25 indexes every copy, as the paper's BM25 script does)" if bm25_counts_copies else ""
        log.warning(
            "%s: %d repeated %s identical to an earlier line dropped%s (%s)", path, len(same), kind, also, shown(same)
        )
    if changed:
        also = " (BM25 also indexes the earlier copies, as the paper's BM25 script does)" if bm25_counts_copies else ""
        log.warning(
            "%s: %d %s repeated with a different %s: the last one is kept, as the paper's loader "
            "does%s (%s); --strict refuses such files",
            path,
            len(changed),
            kind,
            what,
            also,
            shown(changed),
        )


def read_texts(
    path: Path,
    id_key: str = "id",
    text_key: str = "text",
    title_key: str | None = None,
    keep_meta: bool = False,
    strict: bool = False,
    repeats: list[str] | None = None,
    spaces: bool = False,
) -> tuple[dict[str, str], dict[str, JsonObject]]:
    """Read ``{id, text}`` records into an ordered id -> text map (titles joined in front when present).

    ``spaces``: the ids are document ids, which may hold spaces inside (the id rule: :func:`id_problem`).

    A repeated id replaces the earlier record in place (see the module docstring); with ``strict`` it is a
    DataError.  ``repeats``, when given, receives the text of
    every copy the map does not hold (an identical repeat, or the earlier record a different one
    replaced), in file order of the line that dropped it: the map's texts plus these are the file read
    as a list, as the paper's BM25 script reads it.
    """
    path = Path(path)
    texts: dict[str, str] = {}
    meta: dict[str, JsonObject] = {}  # user metadata: each record's other keys
    first_line: dict[str, int] = {}
    same: list[str] = []
    changed: list[str] = []
    flaw = _doc_id_flaw if spaces else _query_id_flaw
    for number, record in _records(path):
        key = record.get(id_key)
        if type(key) is not str or not key or flaw(key):  # the usual case is checked in C
            key = field_id(path, number, record, id_key, spaces)
        text = record.get(text_key)
        if type(text) is not str:
            text = _text(path, number, record, text_key)
        if title_key:
            title = _text(path, number, record, title_key, required=False).strip()
            if title:
                text = f"{title} {text}"
        extra = {k: v for k, v in record.items() if k not in (id_key, text_key)} if keep_meta else None
        if key in first_line:
            if strict:
                raise DataError(path, number, f"duplicate id {key!r} (first seen on line {first_line[key]})")
            if texts[key] == text and meta.get(key) == (extra or None):
                same.append(key)
                if repeats is not None:
                    repeats.append(text)
                continue
            changed.append(key)
            if repeats is not None:
                repeats.append(texts[key])
            meta.pop(key, None)
        else:
            first_line[key] = number
        texts[key] = text
        if extra:
            meta[key] = extra
    if not texts:
        raise DataError(path, None, "no records (empty file)")
    _warn_repeats(path, "id(s)", same, changed, "record", bm25_counts_copies=repeats is not None)
    return texts, meta


def parse_grade(path: Path, number: int, value: object) -> int:
    """A relevance grade: an integer (written as a JSON number or a decimal string) in GRADE_MIN..GRADE_MAX."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise DataError(path, number, f"relevance {_short(value)} is not a number")
    grade: int | float
    if isinstance(value, str):
        text = value.strip()
        if _INTEGER.match(text):
            if len(text.lstrip("+-").lstrip("0")) > 6:
                shown = text if len(text) <= 40 else text[:37] + "..."
                raise DataError(path, number, f"relevance {shown} is outside {GRADE_MIN}..{GRADE_MAX}")
            grade = int(text)
        elif _DECIMAL.match(text):
            grade = float(text)
        else:
            raise DataError(path, number, f"relevance {_short(value)} is not a number")
    else:
        grade = value
    if isinstance(grade, float):
        if not math.isfinite(grade) or grade != int(grade):
            raise DataError(path, number, f"relevance {_short(grade)} is not an integer grade")
        if not GRADE_MIN <= grade <= GRADE_MAX:
            raise DataError(path, number, f"relevance {_short(grade)} is outside {GRADE_MIN}..{GRADE_MAX}")
        grade = int(grade)
    if not GRADE_MIN <= grade <= GRADE_MAX:
        raise DataError(path, number, f"relevance {_short(grade)} is outside {GRADE_MIN}..{GRADE_MAX}")
    return grade


class _QrelsBuilder:
    """Judgments line by line: a repeated (query, doc) pair keeps the last grade (strict: an error)."""

    def __init__(self, path: Path, strict: bool):
        self.path = path
        self.strict = strict
        self.qrels: Qrels = {}
        self.seen: dict[tuple[str, str], int] = {}
        self.same: list[str] = []
        self.changed: list[str] = []

    def add(self, number: int, qid: str, did: str, grade: int) -> None:
        pair = (qid, did)
        docs = self.qrels.setdefault(qid, {})
        if pair in self.seen:
            if self.strict:
                raise DataError(
                    self.path,
                    number,
                    f"duplicate judgment for query {qid!r}, doc {did!r} (first on line {self.seen[pair]})",
                )
            (self.same if docs[did] == grade else self.changed).append(f"{qid}/{did}")
        else:
            self.seen[pair] = number
        docs[did] = grade

    def done(self) -> Qrels:
        if not self.qrels:
            raise DataError(self.path, None, "no judgments (empty file)")
        _warn_repeats(self.path, "judgment(s)", self.same, self.changed, "grade")
        return self.qrels


def read_qrels_jsonl(
    path: Path, qid_key: str = "q_id", did_key: str = "p_id", score_key: str = "score", strict: bool = False
) -> Qrels:
    path = Path(path)
    builder = _QrelsBuilder(path, strict)
    for number, record in _records(path):
        qid = field_id(path, number, record, qid_key)
        did = field_id(path, number, record, did_key, spaces=True)
        if score_key not in record:
            raise DataError(path, number, f"missing field {score_key!r}")
        builder.add(number, qid, did, parse_grade(path, number, record[score_key]))
    return builder.done()


def read_qrels_tsv(path: Path, strict: bool = False) -> Qrels:
    """BEIR's ``qrels/<split>.tsv``: ``query-id<TAB>corpus-id<TAB>score`` with a header line."""
    path = Path(path)
    builder = _QrelsBuilder(path, strict)
    for number, line in iter_lines(path):
        line = line.rstrip("\r\n")
        flaw = _LINE_CONTROL(line)
        if flaw is not None and flaw.group() != "\r":
            raise DataError(
                path, number, f"the line holds a control character ({flaw.group()!a} at column {flaw.start() + 1})"
            )
        fields = line.split("\t")
        if number == 1 and fields[0].strip().lower() in ("query-id", "query_id", "qid"):
            continue
        if len(fields) != 3:
            raise DataError(path, number, f"expected 3 tab-separated fields, got {len(fields)}")
        qid, did, score = (f.strip() for f in fields)
        check_id(qid, path, number, "query-id")
        check_id(did, path, number, "corpus-id", spaces=True)
        builder.add(number, qid, did, parse_grade(path, number, score))
    return builder.done()


_LINE_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029]").search  # every control character but tab
_FIELD_GAP = re.compile(r"[ \t]+")
_MIDDLES: dict[tuple[int, int], re.Pattern[str]] = {}


def trec_fields(path: Path, number: int, line: str) -> tuple[str, list[str]]:
    """A line of a whitespace-separated file (TREC runs and qrels) as (the line without its CR, its fields).

    Fields are separated by spaces and tabs, as trec_eval's C reader separates them (not by the other characters
    ``str.split()`` cuts at: U+00A0, U+2028...); a control character anywhere but a tab is a DataError at the
    line, since no id may hold one and no field is separated by one."""
    if line.endswith("\r"):
        line = line[:-1]
    flaw = _LINE_CONTROL(line)
    if flaw is not None:
        raise DataError(
            path,
            number,
            f"the line holds a control character ({flaw.group()!a} at column {flaw.start() + 1}), which no id may "
            "hold (fields are separated by spaces or tabs)",
        )
    return line, (line.split() if line.isascii() else _FIELD_GAP.split(line.strip(" \t")))


def split_fields(line: str, fields: list[str], left: int, right: int) -> tuple[list[str], str, list[str]] | None:
    """A line's fields (:func:`trec_fields`) as (its first ``left`` fields, what lies between, its last ``right``
    fields), the middle exactly as written (spaces inside kept); None when it has fewer than ``left + right + 1``
    fields.  How TREC lines are read: a document id may hold spaces."""
    if len(fields) <= left + right:
        return None
    if len(fields) == left + right + 1:  # the usual line: no spaces in the middle field
        return fields[:left], fields[left], fields[len(fields) - right :]
    pattern = _MIDDLES.get((left, right))
    if pattern is None:
        pattern = _MIDDLES[left, right] = re.compile(
            rf"[ \t]*(?:[^ \t]+[ \t]+){{{left}}}(.*?)(?:[ \t]+[^ \t]+){{{right}}}[ \t]*"
        )
    found = pattern.fullmatch(line)
    assert found is not None  # more fields than left + right: the pattern matches
    return fields[:left], found.group(1), fields[len(fields) - right :]


def read_qrels_trec(path: Path, strict: bool = False) -> Qrels:
    """A TREC qrels file: ``qid iteration docid relevance`` per line (whitespace-separated; the document id is
    what lies between the second field and the last, so it may hold spaces)."""
    path = Path(path)
    builder = _QrelsBuilder(path, strict)
    for number, raw in iter_lines(path):
        line, fields = trec_fields(path, number, raw)
        parts = split_fields(line, fields, 2, 1)
        if parts is None:
            raise DataError(path, number, f"expected 4 fields 'qid iter docid rel', got {len(fields)}")
        (qid, _), did, (score,) = parts
        check_id(qid, path, number, "query id")
        check_id(did, path, number, "document id", spaces=True)
        builder.add(number, qid, did, parse_grade(path, number, score))
    return builder.done()


def _starts_with_brace(path: Path) -> bool:
    try:
        with open_input(path) as handle:
            head = handle.read(4096)
    except OSError:
        return False  # the reader says what is wrong
    return head.removeprefix(b"\xef\xbb\xbf").lstrip(b" \t\r\n").startswith(b"{")


def read_qrels(path: str | Path, strict: bool = False) -> Qrels:
    """Read judgments in any supported form, chosen by extension/content: JSONL, BEIR TSV or TREC.  A stream
    (``<(cat qrels.jsonl)``) has no extension: a first ``{`` says JSONL (its bytes are kept, read once)."""
    path = path_argument(path, "qrels")
    if path.suffix == ".jsonl" or (path.suffix != ".tsv" and is_stream(path) and _starts_with_brace(path)):
        return read_qrels_jsonl(path, strict=strict)
    if path.suffix == ".tsv":
        return read_qrels_tsv(path, strict=strict)
    return read_qrels_trec(path, strict=strict)
