"""The ``Run`` type (query id -> doc id -> score), run files (TREC, JSON score files) and result folders.

Run files are read in the forms their authors release them: TREC (6 columns, or 4), document ids with
spaces included (:func:`trec_lines`), JSON score files ``{qid: {docid: score}}`` (:func:`read_score_json`) and
FlagEmbedding's search-results files (:func:`read_score_file`), each gzipped or not (read decompressed:
:func:`r2med.data.files.open_data`); :func:`read_run` tells them apart.  r2med writes ``run.trec`` (6 columns)
so that :func:`read_trec` gives the same run back, spaces inside document ids included.

A run folder holds one sub-folder per task with ``run.trec`` (6-column TREC run),
``metrics.json`` (aggregate + per-query measures, config, timing, versions),
``r2med_results.json`` (the R2MED repository's results format) and, when the retriever recorded its depth cut,
``cut_ties.json`` (the documents tied with each query's last one that the cut dropped:
:func:`r2med.evaluation.ties.cut_ties_json`; absent: unknown).  Every file is
written atomically, and a task folder is only created once all its files exist.
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
import zlib
from collections.abc import Iterator, Mapping
from json import JSONDecodeError
from pathlib import Path
from typing import Literal, NoReturn

from ..data.files import (
    _doc_id_flaw,
    _query_id_flaw,
    _raw_lines,
    check_id,
    id_problem,
    iter_lines,
    open_data,
    split_fields,
    trec_fields,
)
from ..errors import DataError, OptionError, R2MedError, shown
from ..evaluation.run_scores import check_run_scores
from ..evaluation.tie_data import BlockError, CutTie, CutTies, cut_ties_json, parse_cut_ties
from ..infra.containment import ensure_within, name_problem, path_argument, refuse_links
from ..infra.home import atomic_dir, atomic_path, read_json
from ..infra.input_files import MAX_STREAM_BYTES
from ..infra.json_types import JsonObject
from ..measures import from_trec
from .record import METRICS_FILE, metrics_record, record_text

Run = dict[str, dict[str, float]]
"""Ranked results: query id -> doc id -> score (pytrec_eval's form); higher scores rank first."""

RUN_FILE = "run.trec"
R2MED_RESULTS_FILE = "r2med_results.json"
CUT_TIES_FILE = "cut_ties.json"


def ranked(docs: Mapping[str, float], position: Mapping[str, int] | None = None) -> list[tuple[str, float]]:
    """Docs best first: r2med's one rule for ordering a query's docs.

    Equal scores are in corpus order when ``position`` (doc id -> corpus index) is given: how the
    paper's code takes a retriever's candidates (a stable sort over the corpus; rerank candidates,
    LameR passages, agentic search results).  Without it, as trec_eval orders them (doc id
    descending): the order of a run file's rank column and of rank-based fusion.
    """
    if position is None:
        return sorted(docs.items(), key=lambda item: (item[1], item[0]), reverse=True)
    last = len(position)
    return sorted(docs.items(), key=lambda item: (-item[1], position.get(item[0], last), item[0]))


def truncate(run: Mapping[str, Mapping[str, float]], k: int) -> Run:
    """Keep each query's top ``k`` docs (trec_eval order)."""
    return {qid: dict(docs) if len(docs) <= k else dict(ranked(docs)[:k]) for qid, docs in run.items()}


SCORE_FORMAT = ".9g"  # exact for float32 scores; written runs re-score to the stored metrics


def as_written(run: Mapping[str, Mapping[str, float]]) -> Run:
    """The run with scores as a TREC file written by r2med stores them (so metrics match re-scoring)."""
    return {qid: {did: float(format(s, SCORE_FORMAT)) for did, s in docs.items()} for qid, docs in run.items()}


def format_trec(run: Mapping[str, Mapping[str, float]], tag: str = "r2med") -> str:
    lines = []
    for qid, docs in run.items():
        for rank, (did, score) in enumerate(ranked(docs), start=1):
            lines.append(f"{qid} Q0 {did} {rank} {score:{SCORE_FORMAT}} {tag}\n")
    return "".join(lines)


def check_run_ids(run: Mapping[str, Mapping[str, float]]) -> None:
    """Every id of ``run`` keeps the id rule (:func:`r2med.data.files.id_problem`: a document id may hold
    spaces inside, a query id none, no id a control character), or an OptionError naming the first that does not."""
    for qid, docs in run.items():
        if not isinstance(qid, str) or not qid or _query_id_flaw(qid):
            problem = id_problem(qid) if isinstance(qid, str) else f"is a {type(qid).__name__}, not text"
            raise OptionError(f"run query id {shown(qid)} {problem}")
        for did in docs:
            if not isinstance(did, str) or not did or _doc_id_flaw(did):
                problem = id_problem(did, spaces=True) if isinstance(did, str) else f"is a {type(did).__name__}"
                raise OptionError(f"run query {shown(qid)}: document id {shown(did)} {problem}")


def write_trec(run: Mapping[str, Mapping[str, float]], path: str | os.PathLike[str], tag: str = "r2med") -> None:
    """Write a 6-column TREC run file atomically (``qid Q0 docid rank score tag``).

    A document id may hold spaces inside (:func:`read_trec` reads it back whole); an id that breaks the id rule
    (:func:`check_run_ids`) or a score that is not a finite number (:func:`check_run_scores`) is an OptionError
    before anything is written."""
    problem = name_problem(tag, run_name=True)
    if problem is not None:
        raise R2MedError(f"run tag {problem}")
    run = check_run_scores(run)
    check_run_ids(run)
    with atomic_path(path_argument(path, "path")) as tmp:
        tmp.write_text(format_trec(run, tag), encoding="utf-8")


_SCORE = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z")
"""A score as trec_eval's C reader takes it: decimal digits, optional fraction and exponent (no ``1_000``, ``inf``)."""
_RANK = re.compile(r"[+-]?[0-9]+\Z")


def _score(path: Path, number: int, score: str) -> float:
    """A score field as a float, or the DataError saying why it is not a finite number."""
    value = float(score) if _SCORE.match(score) else None
    if value is None and score.lstrip("+-").lower() not in ("nan", "inf", "infinity"):
        raise DataError(path, number, f"score {score[:40]!r} is not a number")
    if value is None or not math.isfinite(value):
        raise DataError(path, number, f"score {score[:40]!r} is not a finite number")
    return value


def trec_lines(path: str | os.PathLike[str]) -> Iterator[tuple[int, str, str, float, str | None]]:
    """(line number, qid, docid, score, tag or None) for each line of a TREC run file, each checked
    (``file:line`` DataErrors).

    The first line sets the file's form: 4 fields is ``qid docid rank score``, anything else must be the
    6-column ``qid Q0 docid rank score tag``.  Fields are separated by spaces and tabs
    (:func:`r2med.data.files.trec_fields`) and read from both ends -- qid (and ``Q0``) from the left, rank, score
    (and tag) from the right -- and the document id is what lies between, spaces inside kept (released BRIGHT
    runs hold such ids); when it holds spaces, the rank must be an integer (a check that the fields were found
    where they belong).  Ids keep the id rule (:func:`r2med.data.files.id_problem`).
    """
    path = Path(path)
    four: bool | None = None
    for number, raw in iter_lines(path):
        line, fields = trec_fields(path, number, raw)
        if four is None:
            four = len(fields) == 4
        size = 4 if four else 6
        tag: str | None = None
        if len(fields) == size:  # the usual line: no spaces in the document id
            if four:
                qid, did, rank, score = fields
            else:
                qid, _, did, rank, score, tag = fields
        else:
            parts = split_fields(line, fields, 1, 2) if four else split_fields(line, fields, 2, 3)
            if parts is None:
                form = "4 fields 'qid docid rank score'" if four else "6 fields 'qid Q0 docid rank score tag'"
                raise DataError(
                    path,
                    number,
                    f"expected {form} (the first line sets the form; a document id may hold spaces), got {len(fields)}",
                )
            left, did, right = parts
            qid, rank, score = left[0], right[0], right[1]
            tag = None if four else right[2]
            if not _RANK.match(rank):
                raise DataError(
                    path,
                    number,
                    f"read as a document id with spaces ({did[:60]!r}), but then the rank {rank[:40]!r} is not "
                    "an integer: the line has fields out of place",
                )
        if _query_id_flaw(qid):
            check_id(qid, path, number, "query id")
        if _doc_id_flaw(did):
            check_id(did, path, number, "document id", spaces=True)
        value = float(score) if _SCORE.match(score) else _score(path, number, score)
        if value - value != 0.0:  # inf or nan (``1e400``)
            _score(path, number, score)
        yield number, qid, did, value, tag


def read_trec(path: str | os.PathLike[str]) -> Run:
    """Read a TREC run file (6 columns; 4-column ``qid docid rank score`` is accepted too: :func:`trec_lines`)."""
    path = path_argument(path, "run")
    run: Run = {}
    seen: dict[tuple[str, str], int] = {}
    for number, qid, did, score, _ in trec_lines(path):
        if (qid, did) in seen:
            raise DataError(
                path, number, f"doc {did[:60]!r} listed twice for query {qid[:60]!r} (first on line {seen[qid, did]})"
            )
        seen[qid, did] = number
        run.setdefault(qid, {})[did] = score
    if not run:
        raise DataError(path, None, "empty run file")
    return run


def trec_tags(path: str | os.PathLike[str]) -> tuple[str, ...]:
    """The distinct run tags (sixth column) of a TREC run file, in order of appearance (4-column files: none)."""
    tags: dict[str, None] = {}
    for *_, tag in trec_lines(path):
        if tag is not None:
            tags.setdefault(tag, None)
    return tuple(tags)


RunFormat = Literal["trec", "json"]


def run_format(path: str | os.PathLike[str]) -> RunFormat:
    """``json`` for a score file (``{qid: {docid: score}}``): a ``.json`` (or ``.json.gz``) name, or a first
    character ``{`` (after a byte-order mark and whitespace); else ``trec``.  A gzip file is looked at decompressed."""
    path = Path(path)
    suffixes = [s.lower() for s in path.suffixes[-2:]]
    if suffixes[-1:] == [".json"] or suffixes == [".json", ".gz"]:
        return "json"
    try:
        with open_data(path) as handle:  # a stream is read once (open_input): the reader gets the same bytes
            head = handle.read(4096)
    except (OSError, EOFError, R2MedError, zlib.error):
        return "trec"  # the TREC reader says what is wrong with the file
    return "json" if head.removeprefix(b"\xef\xbb\xbf").lstrip(b" \t\r\n").startswith(b"{") else "trec"


def read_run(path: str | os.PathLike[str]) -> Run:
    """A run file of either form a run's authors release: TREC (:func:`read_trec`) or a JSON score file
    (:func:`read_score_json`), told apart by :func:`run_format`."""
    path = path_argument(path, "run")
    return read_score_json(path) if run_format(path) == "json" else read_trec(path)


_WS = re.compile(r"[ \t\n\r]*")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def read_score_json(path: str | os.PathLike[str]) -> Run:
    """A JSON score file ``{qid: {docid: score}}``, as BRIGHT (``score.json``), RaDeR and ReasonRank release runs;
    or a search-results file (:func:`read_score_file`).

    Read by ``json`` at C speed, and read again with positions when anything is wrong, so every fault is a
    ``file:line`` DataError: malformed JSON, something other than an
    object of objects, a score that is not a finite real number (``true``, ``"1.5"``, ``NaN``, ``1e400``,
    ``10**400`` written out), an id breaking the id rule, a query or a document listed twice for a query (which
    ``json.load`` would silently collapse to the last).  A query with no documents is left out (no TREC line can
    hold it), with a counted warning.
    """
    return read_score_file(path)[0]


#: The key of a search-results file's run (FlagEmbedding's evaluator, ``AbsEvaluator.save_search_results`` in
#: FlagOpen/FlagEmbedding ``FlagEmbedding/abc/evaluation/evaluator.py``: BGE-Reasoner, ReasonEmbed and Retro*
#: release their BRIGHT runs this way).
SEARCH_RESULTS = "search_results"


def read_score_file(path: str | os.PathLike[str]) -> tuple[Run, dict[str, str | None]]:
    """A JSON run file and the facts it states of itself: ``({qid: {docid: score}}, metadata)``.

    Two forms: a score file ``{qid: {docid: score}}`` (no metadata), and FlagEmbedding's search-results file, whose
    run is under ``search_results`` beside text facts (``eval_name``, ``model_name``, ``reranker_name``, ``split``,
    ``dataset_name``: the metadata returned).  Its query ids are ``<split>-<id>`` (FlagEmbedding's BRIGHT loader,
    ``FlagEmbedding/evaluation/bright/data_loader.py``, prefixes every id with its split so that splits do not
    collide); when every id carries the file's own ``split`` prefix, it is taken off, giving the task's ids back.
    Every fault is a ``file:line`` DataError (:func:`read_score_json`'s rules, inside ``search_results`` too).
    """

    path = Path(path)
    # one line may hold the whole file (BRIGHT's score.json does): the bound is a stream's
    # (errors opening or reading name the file; BOM dropped)
    raw = b"\n".join(line for _, line in _raw_lines(path, MAX_STREAM_BYTES))
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DataError(path, raw.count(b"\n", 0, exc.start) + 1, f"not valid UTF-8 ({exc.reason})") from None
    if not text.strip():
        raise DataError(path, None, "empty run file")
    meta: dict[str, str | None] = {}
    start = _search_results_at(text)
    if start is None:
        quick = _quick_scores(text)
        run, empty = quick if quick is not None else _located_scores(path, text)
    else:
        meta = _search_results_meta(path, text)
        quick = _quick_scores(text, inner=True)
        run, empty = quick if quick is not None else _located_scores(path, text, start)
        run = _without_split_prefix(run, meta.get("split"))
    if empty:
        logging.getLogger(__name__).warning(
            "%s: %d quer%s with no documents left out", path, empty, "y" if empty == 1 else "ies"
        )
    if not run:
        raise DataError(path, None, "empty run file (no query has a document)")
    return run, meta


def _search_results_at(text: str) -> int | None:
    """Where the value of a top-level ``search_results`` key starts, when the file is FlagEmbedding's search-results
    form (a top-level object with that key holding an object, beside facts that are not objects); else None (a plain
    score file, even one with a query named ``search_results``: all its values are objects)."""
    if f'"{SEARCH_RESULTS}"' not in text:
        return None
    decoder = json.JSONDecoder()

    def skip(pos: int) -> int:
        return _WS.match(text, pos).end()  # type: ignore[union-attr]  # the pattern matches the empty string

    pos = skip(0)
    if text[pos : pos + 1] != "{":
        return None
    found: int | None = None
    facts = False
    pos += 1
    try:
        while True:
            key, pos = decoder.raw_decode(text, skip(pos))
            pos = skip(pos)
            if text[pos : pos + 1] != ":":
                return None
            pos = skip(pos + 1)
            if key == SEARCH_RESULTS and text[pos : pos + 1] == "{":
                found = pos
            elif text[pos : pos + 1] != "{":
                facts = True
            _, pos = decoder.raw_decode(text, pos)
            pos = skip(pos)
            if text[pos : pos + 1] != ",":
                break
            pos += 1
    except (ValueError, RecursionError):
        pass  # malformed after the key was found: the located reading of search_results (or of the file) says where
    return found if found is not None and facts else None


def _search_results_meta(path: Path, text: str) -> dict[str, str | None]:
    """The facts beside ``search_results``: each a text (or null); anything else is a DataError."""
    last: list[list[tuple[str, object]]] = [[]]  # the pairs of the object read last: the top-level one, at the end

    def keep(pairs: list[tuple[str, object]]) -> dict[str, object]:
        last[0] = pairs
        return dict(pairs)

    try:
        data = json.loads(text, object_pairs_hook=keep)
    except (ValueError, RecursionError):
        data = None  # the located reading says where the fault is
    if not isinstance(data, dict):
        return {}
    seen: set[str] = set()
    for key, _ in last[0]:  # a repeated key: json keeps the last one, silently dropping the run or fact before it
        if key in seen:
            line = text.count("\n", 0, text.rfind(json.dumps(key))) + 1
            raise DataError(path, line, f"search-results file: the key {key!r} is repeated")
        seen.add(key)
    meta: dict[str, str | None] = {}
    for key, value in data.items():
        if key == SEARCH_RESULTS:
            continue
        if value is not None and not isinstance(value, str):
            line = text.count("\n", 0, text.find(json.dumps(key))) + 1
            raise DataError(
                path,
                line,
                f"search-results file: {key!r} beside {SEARCH_RESULTS!r} is a {type(value).__name__}; the facts "
                "beside the run are text (eval_name, model_name, reranker_name, split, dataset_name)",
            )
        meta[key] = value
    return meta


def _without_split_prefix(run: Run, split: str | None) -> Run:
    """``run`` with each query id's ``<split>-`` prefix taken off, when every id carries it."""
    if not isinstance(split, str) or not split:
        return run
    prefix = f"{split}-"
    if not all(q.startswith(prefix) and len(q) > len(prefix) for q in run):
        return run
    return {q[len(prefix) :]: docs for q, docs in run.items()}


def _refuse_constant(name: str) -> NoReturn:
    raise ValueError(name)


def _unique_pairs(pairs: list[tuple[str, object]]) -> dict[str, object]:
    made = dict(pairs)
    if len(made) != len(pairs):
        raise ValueError("a key is repeated")
    return made


def _quick_scores(text: str, inner: bool = False) -> tuple[Run, int] | None:
    """A score file read by ``json`` at C speed when every rule holds, else None (then :func:`_located_scores`
    reads it again to say where the first fault is); ``inner``: the run under ``search_results``."""
    if _SURROGATE_ESCAPE.search(text):  # perhaps a lone one in an id: the located reading checks each
        return None
    try:
        data = json.loads(text, object_pairs_hook=_unique_pairs, parse_constant=_refuse_constant)
    except (ValueError, RecursionError):
        return None
    if inner:
        data = data.get(SEARCH_RESULTS) if type(data) is dict else None
    if type(data) is not dict or not data:
        return None
    run: Run = {}
    empty = 0
    for qid, docs in data.items():
        if not qid or _query_id_flaw(qid) or type(docs) is not dict:
            return None
        if not docs:
            empty += 1
            continue
        row: dict[str, float] = {}
        for did, value in docs.items():
            kind = type(value)
            if not did or _doc_id_flaw(did) or (kind is not float and kind is not int):
                return None
            try:
                score = float(value)
            except OverflowError:
                return None
            if score - score != 0.0:
                return None
            row[did] = score
        run[qid] = row
    return run, empty


def _located_scores(path: Path, text: str, start: int = 0) -> tuple[Run, int]:
    """A score file read with positions: the first fault is a DataError at its line (``start``: where the object
    of queries starts, for a search-results file's ``search_results``; what follows it is not this reader's)."""

    decoder = json.JSONDecoder(parse_constant=_refuse_constant, strict=True)

    def line_of(pos: int) -> int:
        return text.count("\n", 0, pos) + 1

    def skip(pos: int) -> int:
        """``pos`` past any JSON whitespace."""
        return _WS.match(text, pos).end()  # type: ignore[union-attr]  # the pattern matches the empty string

    def fail(pos: int, message: str) -> DataError:
        return DataError(path, line_of(pos), message)

    def expect(pos: int, char: str, what: str) -> int:
        pos = skip(pos)
        if text[pos : pos + 1] != char:
            found = repr(text[pos]) if pos < len(text) else "the end of the file"
            raise fail(pos, f"malformed JSON score file: expected {what}, found {found}")
        return pos + 1

    def key(pos: int, what: str) -> tuple[str, int, int]:
        pos = expect(pos, '"', what) - 1
        try:
            value, end = decoder.raw_decode(text, pos)
        except JSONDecodeError as exc:
            raise fail(exc.pos, f"malformed JSON ({exc.msg.lower()})") from None
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise fail(pos, "a string holds a lone surrogate escape (e.g. \\ud800), not valid Unicode") from None
        return str(value), pos, end

    run: Run = {}
    first_query: dict[str, int] = {}
    empty = 0
    pos = expect(start, "{", "an object {query id: {doc id: score}}")
    if text[skip(pos) : skip(pos) + 1] == "}":
        raise DataError(path, None, "empty run file (no query)")
    while True:
        qid, at, pos = key(pos, "a query id in quotes")
        if not qid or _query_id_flaw(qid):
            check_id(qid, path, line_of(at), "query id")
        if qid in first_query:
            raise fail(at, f"query {qid[:60]!r} listed twice (first on line {line_of(first_query[qid])})")
        first_query[qid] = at
        pos = expect(pos, ":", "':'")
        pos = expect(pos, "{", f"an object {{doc id: score}} for query {qid[:60]!r}")
        docs: dict[str, float] = {}
        first_doc: dict[str, int] = {}
        after = skip(pos)
        if text[after : after + 1] == "}":
            pos = after + 1
            empty += 1
        else:
            while True:
                did, at, pos = key(pos, "a doc id in quotes")
                if not did or _doc_id_flaw(did):
                    check_id(did, path, line_of(at), "document id", spaces=True)
                if did in first_doc:
                    first = line_of(first_doc[did])
                    raise fail(at, f"doc {did[:60]!r} listed twice for query {qid[:60]!r} (first on line {first})")
                first_doc[did] = at
                pos = skip(expect(pos, ":", "':'"))
                try:
                    value, end = decoder.raw_decode(text, pos)
                except JSONDecodeError as exc:
                    raise fail(exc.pos, f"malformed JSON ({exc.msg.lower()})") from None
                except RecursionError:
                    raise fail(pos, f"score of doc {did[:60]!r} (query {qid[:60]!r}) is nested too deeply") from None
                except ValueError as exc:  # NaN / Infinity, or an integer with more digits than Python converts
                    what = f"score of doc {did[:60]!r} (query {qid[:60]!r})"
                    raise fail(pos, f"{what} is not a finite number ({exc})") from None
                if isinstance(value, bool) or not isinstance(value, (int, float)):
                    raise fail(
                        pos, f"score of doc {did[:60]!r} (query {qid[:60]!r}) is a {type(value).__name__}, not a number"
                    )
                try:
                    score = float(value)
                except OverflowError:
                    score = math.inf
                if not math.isfinite(score):
                    raise fail(pos, f"score of doc {did[:60]!r} (query {qid[:60]!r}) is not a finite number")
                docs[did] = score
                pos = skip(end)
                if text[pos : pos + 1] == ",":
                    pos += 1
                    continue
                pos = expect(pos, "}", f"',' or '}}' after the score of doc {did[:60]!r}")
                break
        if docs:
            run[qid] = docs
        pos = skip(pos)
        if text[pos : pos + 1] == ",":
            pos += 1
            continue
        pos = expect(pos, "}", "',' or '}' after a query's object")
        break
    rest = skip(pos)
    if rest < len(text) and not start:
        raise fail(rest, "malformed JSON score file: text after the closing '}'")
    return run, empty


def r2med_results(task: str | None, model: str | None, aggregate: Mapping[str, float]) -> JsonObject:
    """The R2MED repository's results JSON (``results/<setting>/<model>/<Task>.json``)."""
    test: JsonObject = {}
    for name, value in aggregate.items():
        try:
            test[from_trec(name).r2med_results] = value
        except R2MedError:
            continue  # not a pytrec_eval measure name: the R2MED results file has no key for it
    return {"dataset_name": task, "model_name": model, "test": test}


def write_task_results(
    folder: str | os.PathLike[str],
    run: Mapping[str, Mapping[str, float]],
    metrics: Mapping[str, object],
    tag: str = "r2med",
    root: str | os.PathLike[str] | None = None,
    cut: CutTies | None = None,
) -> Path:
    """Write ``run.trec``, ``metrics.json`` and ``r2med_results.json`` (and ``cut_ties.json`` with ``cut``: the
    retriever's record of what its depth cut dropped while tied) into ``folder`` as one atomic step.

    ``folder`` is ``ROOT/<system>/<task>`` (build it with :meth:`r2med.infra.containment.SystemFolder.task`);
    ``root``: the folder the user named (``--out``), which ``folder`` must lie under (default: ``folder``'s parent).
    The system folder (``folder``'s parent) is refused when it is a link, whatever ``root`` is: the task folder
    would be written, and the one it replaces deleted, in the link's target.  ``folder`` itself may be a link: the
    atomic rename replaces the link, never its target.
    """
    folder = Path(folder)
    ensure_within(folder.parent if root is None else root, folder)
    system = Path(os.path.abspath(folder)).parent
    refuse_links(system.parent, system, include_last=True)
    with atomic_dir(folder) as tmp:
        write_trec(run, tmp / RUN_FILE, tag=tag)
        record = metrics_record(metrics, folder / METRICS_FILE)
        (tmp / METRICS_FILE).write_text(record_text(record), encoding="utf-8")
        export = r2med_results(
            record.task if "task" in metrics else folder.name,
            record.retriever if "retriever" in metrics else tag,
            record.aggregate,
        )
        (tmp / R2MED_RESULTS_FILE).write_text(json.dumps(export, indent=1) + "\n", encoding="utf-8")
        if cut is not None:
            (tmp / CUT_TIES_FILE).write_text(json.dumps(cut_ties_json(cut), indent=1) + "\n", encoding="utf-8")
    return folder


def read_cut_ties(folder: str | os.PathLike[str]) -> dict[str, CutTie] | None:
    """A task folder's ``cut_ties.json`` read back, or None when it has none (a run whose cut is unknown: imported,
    reranked, written before r2med recorded it); a fault is a DataError naming the file and key."""
    path = Path(folder) / CUT_TIES_FILE
    if not path.exists():
        return None
    try:
        return parse_cut_ties(read_json(path))
    except (BlockError, ValueError, OSError) as exc:
        raise DataError(path, None, str(exc)) from None
