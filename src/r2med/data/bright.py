"""BRIGHT's tasks on the hub (``xlangai/BRIGHT``): their names, the files each needs, and reading them.

Names: ``bright:<task>`` with BRIGHT's task names (hyphens and any case accepted: ``bright:Earth-Science``),
``bright:<task>:long`` for the long-document setting of the 8 tasks that have one (:func:`parse_name`); its
reasoning query sets are named by their LLM (:func:`reasoning_name`: ``-e reason:gpt4``).  The facts behind them
-- tasks, sizes, hub layout, the pinned revision -- are :mod:`r2med.protocol.bright`'s.

Files (parquet, one per config and task; the hub's split of each config is the task)::

    examples/<task>-00000-of-00001.parquet        id, query, excluded_ids, gold_ids, gold_ids_long, ...
    documents/<task>-00000-of-00001.parquet       id, content
    long_documents/<task>-00000-of-00001.parquet  id, content (8 tasks)
    <llm>_reason/<task>-00000-of-00001.parquet    the examples with ``query`` replaced by the LLM's reasoning

A task loads at the commit r2med pins (``3066d29``: the data BRIGHT's graded figures were computed on,
:mod:`r2med.protocol.data_states`) unless ``--revision`` says otherwise (``a75a0eb``..., ``main``, a commit, or
``bright:biology=main`` pairs), through the standard Hugging Face cache and offline, every file it needs found at
that revision before any is downloaded (:func:`r2med.data.hub.resolve_files`).  A task read for its judgments only
(``import``, ``score``) downloads its examples alone.  A reasoning set is read at the task's commit when the hub's
recorded history does not show it absent there, else at the pin (which holds the five): its commit and fingerprint
are recorded apart from the documents' (:func:`reasoning_queries`).

Every row is validated as R2MED's readers validate lines: a fault is one line naming the file and the row (rows
count from 1, in file order): a missing column, a null or non-text value, an id that is empty or holds a control
character, a query id with whitespace (a TREC run's first field cannot hold it), a gold id that is also excluded.
Document ids may hold spaces inside (BRIGHT's ids are paths).  BRIGHT's ``["N/A"]`` (and ``[]``) in
``excluded_ids`` means none.  Judgments are ``gold_ids`` (``gold_ids_long`` in the long setting), relevance 1; a
gold id a query lists twice counts once (BRIGHT builds a dict: theoremqa_questions lists 617 gold ids, 439
distinct pairs).  A repeated query id or document id keeps its last row (documents: in the first one's place, the
earlier copies counted in BM25's statistics, as R2MED's readers do); ``strict`` refuses any repeat.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ..errors import DataError, MissingExtraError, OptionError, did_you_mean, shown
from ..expansion_name import ExpansionName
from ..protocol import bright as facts
from ..protocol import data_states
from .collection import Collection
from .exclusions import NONE_MARKER, Exclusions
from .files import _doc_id_flaw, _query_id_flaw, id_problem
from .hub import FilesMissing, FilesNotCached, download, parse_revision, refusal, resolve_files

log = logging.getLogger(__name__)

# -- names -------------------------------------------------------------------------------------------------------

PREFIX = f"{facts.FAMILY}:"
LONG = "long"
#: The expansion method of BRIGHT's reasoning query sets (``-e reason:gpt4``).
REASON = "reason"


@dataclass(frozen=True)
class BrightName:
    """A BRIGHT task as r2med names it: the hub task and whether its long-document setting is meant."""

    task: str  #: BRIGHT's task name (``earth_science``)
    long: bool = False

    @property
    def name(self) -> str:
        """r2med's name: ``bright:earth_science`` (``bright:biology:long``)."""
        return f"{PREFIX}{self.task}" + (f":{LONG}" if self.long else "")

    @property
    def hub_task(self) -> str:
        """The hub task it reads (its revision is this name's in ``--revision`` pairs): ``bright:biology``."""
        return f"{PREFIX}{self.task}"

    @property
    def documents(self) -> str:
        """The hub config of its corpus: ``documents`` or ``long_documents``."""
        return "long_documents" if self.long else "documents"

    @property
    def judgments(self) -> str:
        """The examples' field its judgments come from: ``gold_ids`` or ``gold_ids_long``."""
        return "gold_ids_long" if self.long else "gold_ids"


def is_bright(name: str) -> bool:
    """Whether ``name`` is in BRIGHT's spelling (``bright:...``, any case)."""
    return name.strip().lower().startswith(PREFIX)


def parse_name(name: str) -> BrightName:
    """``bright:earth-science`` -> ``BrightName("earth_science")``; ``bright:biology:long`` -> the long setting
    (a task without long documents is a one-line error naming the 8 that have them)."""
    text = name.strip()
    if not is_bright(text):
        raise OptionError(f"{shown(name)} is not a BRIGHT task name (bright:<task>, e.g. bright:biology)")
    rest = text[len(PREFIX) :]
    task_part, sep, setting = rest.partition(":")
    if sep and setting.strip().lower() != LONG:
        raise OptionError(
            f"BRIGHT task {shown(name)}: {shown(setting)} is not a setting (bright:<task>:long is the "
            "long-document setting)"
        )
    task = facts.task(task_part)
    if sep and not task.has_long_documents:
        raise OptionError(
            f"BRIGHT task {task.name!r} has no long documents; the long-document setting exists for "
            + ", ".join(facts.hub().long_document_tasks)
        )
    return BrightName(task.name, long=bool(sep))


def long_name(name: str) -> str:
    """The long-document setting of a BRIGHT task name (``bright:biology`` -> ``bright:biology:long``)."""
    parsed = parse_name(name)
    return parse_name(f"{parsed.hub_task}:{LONG}").name


def names(long: bool = False) -> tuple[str, ...]:
    """The 12 tasks' names in BRIGHT's order (``long``: the 8 long-document settings)."""
    if long:
        return tuple(f"{PREFIX}{t}:{LONG}" for t in facts.hub().long_document_tasks)
    return tuple(f"{PREFIX}{t.name}" for t in facts.tasks())


def reasoning_config(llm: str) -> str:
    """The hub config of a reasoning query set named by its LLM (``gpt4`` -> ``gpt4_reason``), case aside."""
    known = {r.name.lower(): r for r in facts.hub().reasoning_sets}
    found = known.get(llm.strip().lower()) or known.get(llm.strip().lower().removesuffix("_reason"))
    if found is None:
        choices = [r.name for r in facts.hub().reasoning_sets]
        raise OptionError(
            f"no BRIGHT reasoning query set {shown(llm)}{did_you_mean(llm, choices)}; "
            f"choose from: {', '.join(ExpansionName(REASON, c).text for c in choices)}"
        )
    return found.config


def reasoning_name(llm: str) -> str:
    """A reasoning set's name as BRIGHT's ``--reasoning`` spells it (``GEMINI-1.0`` -> ``Gemini-1.0``)."""
    config = reasoning_config(llm)
    return next(r.name for r in facts.hub().reasoning_sets if r.config == config)


# -- files -------------------------------------------------------------------------------------------------------


def files(name: str, corpus: bool = True, reasoning: Sequence[str] = ()) -> list[str]:
    """The hub files task ``name`` needs: its examples, its corpus (unless ``corpus`` is False: judgments only)
    and the reasoning sets ``reasoning`` (LLM names)."""
    parsed = parse_name(name)
    layout = facts.hub()
    wanted = [layout.path("examples", parsed.task)]
    if corpus:
        wanted.append(layout.path(parsed.documents, parsed.task))
    wanted += [layout.path(reasoning_config(llm), parsed.task) for llm in reasoning]
    return wanted


# -- reading parquet rows ---------------------------------------------------------------------------------------


class _Value(Protocol):
    """A value of a pyarrow column (untyped library): what r2med calls of it."""

    def as_py(self) -> object: ...


class _Column(Protocol):
    """A pyarrow ``ChunkedArray`` (untyped library): what r2med calls of it."""

    def to_pylist(self) -> list[object]: ...

    def __iter__(self) -> Iterator[_Value]: ...


def _columns(path: Path, wanted: Sequence[str]) -> dict[str, list[object]]:
    """The columns ``wanted`` of a parquet file as Python lists, or a one-line error naming the file."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise MissingExtraError("pyarrow", "bright", "reading BRIGHT's parquet files") from None
    try:
        handle = pq.ParquetFile(path)
        present = list(handle.schema_arrow.names)
        missing = [c for c in wanted if c not in present]
        if missing:
            raise DataError(
                path, None, f"no column {', '.join(map(repr, missing))} (it has: {', '.join(present) or 'none'})"
            )
        table = handle.read(columns=list(wanted))
    except FileNotFoundError:
        raise DataError(path, None, "file not found") from None
    except (pa.ArrowException, OSError, ValueError) as exc:
        if isinstance(exc, DataError):
            raise
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise DataError(path, None, f"not a readable parquet file ({shown(reason)})") from None
    return {c: _pylist(path, c, table.column(c)) for c in wanted}


def _pylist(path: Path, name: str, column: _Column) -> list[object]:
    """A column's values; bytes that are no UTF-8 in a text column (a damaged page, or a writer that did not
    check) are a one-line error naming the row, not a ``UnicodeDecodeError``."""
    try:
        return list(column.to_pylist())
    except UnicodeDecodeError:
        pass
    for row, value in enumerate(column, start=1):
        try:
            value.as_py()
        except UnicodeDecodeError as exc:
            raise DataError(
                path, None, f"row {row}: {name} is not valid UTF-8 ({exc.reason} at byte {exc.start})"
            ) from None
    raise DataError(path, None, f"{name}: not valid UTF-8")  # pragma: no cover - every row decoded one by one


def _id(path: Path, row: int, column: str, value: object, document: bool) -> str:
    """A row's id, keeping r2med's id rule (:func:`r2med.data.files.id_problem`: not empty, no control character;
    a query id without whitespace, a document id with none at either end)."""
    if isinstance(value, str) and value and not (_doc_id_flaw if document else _query_id_flaw)(value):
        return value
    where = f"row {row}: {column}"
    if value is None:
        raise DataError(path, None, f"{where} is missing (null)")
    if not isinstance(value, str):
        raise DataError(path, None, f"{where} must be text, got {type(value).__name__}")
    problem = id_problem(value, spaces=document)
    raise DataError(path, None, f"{where} {shown(value)} {problem}" if value else f"{where} is empty")


def _text(path: Path, row: int, column: str, value: object) -> str:
    if isinstance(value, str):
        return value
    if value is None:
        raise DataError(path, None, f"row {row}: {column} is missing (null)")
    raise DataError(path, None, f"row {row}: {column} must be text, got {type(value).__name__}")


def _ids(path: Path, row: int, column: str, value: object) -> list[str]:
    """A list column of document ids (``"N/A"`` kept: the caller decides what it means)."""
    if value is None:
        raise DataError(path, None, f"row {row}: {column} is missing (null)")
    if not isinstance(value, list):
        raise DataError(path, None, f"row {row}: {column} must be a list of ids, got {type(value).__name__}")
    return [_id(path, row, f"{column}[{i}]", v, document=True) for i, v in enumerate(value)]


@dataclass(frozen=True)
class Examples:
    """A task's examples read and checked: queries in file order, judgments, exclusions."""

    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]
    exclusions: Exclusions
    repeated_gold: int  #: gold ids a query listed more than once (counted once)


def read_examples(path: str | Path, judgments: str = "gold_ids", strict: bool = False) -> Examples:
    """A BRIGHT ``examples`` (or reasoning-set) parquet file: queries, judgments from ``judgments``
    (``gold_ids`` or ``gold_ids_long``; relevance 1) and exclusions, every row checked (module docstring)."""
    path = Path(path)
    cols = _columns(path, ("id", "query", "excluded_ids", judgments))
    queries: dict[str, str] = {}
    qrels: dict[str, dict[str, int]] = {}
    excluded: dict[str, list[str]] = {}
    first_row: dict[str, int] = {}
    repeated_gold = 0
    replaced: list[str] = []
    for row, (qid, query, excl, gold) in enumerate(
        zip(cols["id"], cols["query"], cols["excluded_ids"], cols[judgments]), start=1
    ):
        qid = _id(path, row, "id", qid, document=False)
        text = _text(path, row, "query", query)
        excl_ids = [e for e in _ids(path, row, "excluded_ids", excl) if e != NONE_MARKER]
        gold_ids = [g for g in _ids(path, row, judgments, gold) if g != NONE_MARKER]
        if qid in first_row:
            if strict:
                raise DataError(path, None, f"row {row}: query id {qid!r} repeats row {first_row[qid]} (--strict)")
            replaced.append(qid)
        first_row.setdefault(qid, row)
        both = set(excl_ids) & set(gold_ids)
        if both:
            raise DataError(
                path,
                None,
                f"row {row}: query {qid!r}: {shown(min(both))} is both a gold id and an excluded id "
                "(BRIGHT's run.py asserts none is)",
            )
        distinct = dict.fromkeys(gold_ids)
        if len(distinct) < len(gold_ids):
            if strict:
                raise DataError(
                    path,
                    None,
                    f"row {row}: query {qid!r} lists a gold id twice (--strict; BRIGHT counts it once)",
                )
            repeated_gold += len(gold_ids) - len(distinct)
        queries[qid] = text
        excluded[qid] = excl_ids
        if distinct:
            qrels[qid] = dict.fromkeys(distinct, 1)
        else:
            qrels.pop(qid, None)
    if not queries:
        raise DataError(path, None, "no rows (an empty examples file)")
    if replaced:
        log.warning(
            "%s: %d query id(s) repeated (e.g. %r): the last row of each is kept", path, len(replaced), replaced[0]
        )
    return Examples(queries, qrels, Exclusions.of(excluded), repeated_gold)


def read_documents(path: str | Path, strict: bool = False, repeats: list[str] | None = None) -> dict[str, str]:
    """A BRIGHT ``documents`` / ``long_documents`` parquet file as an ordered id -> content map.  A repeated id
    keeps its last row in the first one's place; ``repeats`` receives the texts the map does not hold (BM25
    counts them); ``strict`` refuses any repeat."""
    path = Path(path)
    cols = _columns(path, ("id", "content"))
    corpus: dict[str, str] = {}
    first_row: dict[str, int] = {}
    for row, (did, content) in enumerate(zip(cols["id"], cols["content"]), start=1):
        if not (type(did) is str and did and not _doc_id_flaw(did)):
            did = _id(path, row, "id", did, document=True)
        if type(content) is not str:
            content = _text(path, row, "content", content)
        if did in corpus:
            if strict:
                raise DataError(path, None, f"row {row}: document id {did!r} repeats row {first_row[did]} (--strict)")
            if repeats is not None:
                repeats.append(corpus[did])
        else:
            first_row[did] = row
        corpus[did] = content
    if not corpus:
        raise DataError(path, None, "no rows (an empty documents file)")
    if len(first_row) < len(cols["id"]):
        log.warning(
            "%s: %d document row(s) repeat an earlier id: the last of each is kept (the others count in BM25's "
            "statistics, as BRIGHT's list of documents does)",
            path,
            len(cols["id"]) - len(first_row),
        )
    return corpus


def read_reasoning(path: str | Path, examples: Examples, strict: bool = False) -> dict[str, str]:
    """A reasoning set's ``query`` per example query (the LLM's reasoning, which replaces the query); a query the
    set lacks is a one-line error; rows whose exclusions differ from the example's are counted in a warning
    (the example's are used).  A query id on two rows: the last is kept, counted in a warning, as the examples
    reader does -- refused with ``strict``."""
    path = Path(path)
    cols = _columns(path, ("id", "query", "excluded_ids"))
    texts: dict[str, str] = {}
    first_row: dict[str, int] = {}
    replaced: list[str] = []
    differs = 0
    for row, (qid, query, excl) in enumerate(zip(cols["id"], cols["query"], cols["excluded_ids"]), start=1):
        qid = _id(path, row, "id", qid, document=False)
        if qid in first_row:
            if strict:
                raise DataError(path, None, f"row {row}: query id {qid!r} repeats row {first_row[qid]} (--strict)")
            replaced.append(qid)
        first_row.setdefault(qid, row)
        texts[qid] = _text(path, row, "query", query)
        if frozenset(e for e in _ids(path, row, "excluded_ids", excl) if e != NONE_MARKER) != examples.exclusions.get(
            qid
        ):
            differs += 1
    missing = [q for q in examples.queries if q not in texts]
    if missing:
        raise DataError(
            path,
            None,
            f"{len(missing)} of the task's {len(examples.queries)} queries have no reasoning (first: {missing[0]!r})",
        )
    if differs:
        log.warning("%s: %d row(s) list other excluded ids than the examples; the examples' are used", path, differs)
    if replaced:
        log.warning(
            "%s: %d query id(s) repeated (e.g. %r): the last row of each is kept", path, len(replaced), replaced[0]
        )
    return {q: texts[q] for q in examples.queries}


def _check_same_task(path: Path, examples: Examples, task: str, judgments: str) -> None:
    """A reasoning set's file given by hand must be ``task``'s: BRIGHT's query ids are 0..N in every task, so the
    ids alone cannot tell another task's file; its rows' gold ids can (each row keeps its example's).  A file whose
    gold ids differ from the task's judgments on most queries is a one-line error naming it."""
    cols = _columns(path, ("id", judgments))
    differ = sum(
        1
        for qid, gold in zip(cols["id"], cols[judgments])
        if str(qid) in examples.qrels
        and set(map(str, gold if isinstance(gold, list) else ())) != set(examples.qrels[str(qid)])
    )
    if differ * 2 > len(examples.queries):
        raise DataError(
            path,
            None,
            f"its rows' {judgments} differ from {task}'s judgments on {differ} of {len(examples.queries)} queries: "
            "is it another task's reasoning file?",
        )


# -- a task from the hub ----------------------------------------------------------------------------------------


def revision_for(name: str, spec: str | None = None) -> tuple[str, str]:
    """(the revision task ``name`` loads at, whose it is): ``--revision``'s word for it, else BRIGHT's pin."""
    every, per_task = parse_revision(spec)
    asked = per_task.get(parse_name(name).hub_task) or every
    if asked:
        return asked, ""
    return facts.hub().revision, "the commit r2med pins for BRIGHT (the data of its graded figures)"


def load(name: str, revision: str | None = None, strict: bool = False, corpus: bool = True) -> Collection:
    """BRIGHT task ``name`` from the hub at ``revision`` (a ``--revision`` spec or a commit): every file it needs
    found at one commit before any is downloaded, then read and checked.  ``corpus``: False reads the examples
    only (judgments, exclusions: ``import`` and ``score``)."""
    parsed = parse_name(name)
    layout = facts.hub()
    wanted, why = revision_for(parsed.name, revision)
    paths = files(parsed.name, corpus=corpus)
    try:
        found = resolve_files(layout.repo_id, paths, wanted)
    except (FilesMissing, FilesNotCached) as exc:
        raise refusal([(parsed.name, why, exc)], revision, [parsed.name]) from None
    commit = found.commit
    examples = read_examples(download(layout.repo_id, paths[0], commit), parsed.judgments, strict=strict)
    if examples.repeated_gold:
        log.info("%s: %d gold id(s) listed twice in a query count once", parsed.name, examples.repeated_gold)
    documents: dict[str, str] = {}
    repeats: list[str] = []
    if corpus:
        documents = read_documents(download(layout.repo_id, paths[1], commit), strict=strict, repeats=repeats)
        unknown = examples.exclusions.unknown(documents)
        if unknown:
            log.warning(
                "%s: %d excluded (query, document) pair(s) name no document of the corpus (nothing to remove)",
                parsed.name,
                unknown,
            )
    log.info("%s: hub data at commit %s%s", parsed.name, commit, "" if wanted == commit else f" ({wanted})")
    return Collection(
        name=parsed.name,
        corpus=documents,
        queries=examples.queries,
        qrels=examples.qrels,
        source=f"hf://datasets/{layout.repo_id}@{commit}",
        revision=commit,
        corpus_repeats=tuple(repeats),
        benchmark=facts.FAMILY,
        exclusions=examples.exclusions,
        corpus_read=corpus,
    )


def reasoning_commit(revision: str | None) -> tuple[str, str]:
    """(the commit a reasoning set of a task read at ``revision`` is read at, whose it is): ``revision`` itself
    unless the hub's recorded history shows the reasoning sets absent there (``a75a0eb``), then the pin."""
    layout = facts.hub()
    if revision and data_states.holds(layout.repo_id, revision, layout.reasoning_sets[0].config) is False:
        return layout.revision, f"the pin (the reasoning sets are not on the hub at {revision[:7]})"
    return revision or layout.revision, "the commit the task's data came from"


def reasoning_queries(
    collection: Collection, llm: str, file: Path | None = None, strict: bool = False
) -> tuple[dict[str, str], Path]:
    """The reasoning set ``llm`` of a BRIGHT collection read from the hub at a commit that holds it
    (:func:`reasoning_commit`; or from ``file``, one task's file of it: ``--expansion-file``): query id -> the LLM's
    reasoning (which replaces the query), and the file it was read from (its commit is the snapshot's, recorded
    apart from the documents'); ``strict``: a query id on two rows is refused."""
    examples = Examples(collection.queries, collection.qrels, collection.exclusions, 0)
    if file is not None:
        texts = read_reasoning(file, examples, strict=strict)
        judged = "gold_ids_long" if parse_name(collection.name).long else "gold_ids"
        _check_same_task(file, examples, collection.name, judged)
        return texts, file
    parsed = parse_name(collection.name)
    layout = facts.hub()
    path = layout.path(reasoning_config(llm), parsed.task)
    revision, why = reasoning_commit(collection.revision)
    try:
        found = resolve_files(layout.repo_id, [path], revision)
    except (FilesMissing, FilesNotCached) as exc:
        raise refusal([(parsed.name, why, exc)], revision, [parsed.name]) from None
    if found.commit != collection.revision:
        log.info("%s: reasoning set %s read at %s (%s)", parsed.name, llm, found.commit[:12], why)
    got = download(layout.repo_id, path, found.commit)
    return read_reasoning(got, examples, strict=strict), got


def protocol_problem(task: str, source: str | None, setting: tuple[str | None, str | None] | None) -> str | None:
    """Why one BRIGHT task folder's run did not read the task as its figures were made -- data not from the hub
    (``source``: where its data came from), or another corpus or judgments than the setting's (``setting``: the
    ``documents`` and ``judgments`` its protocol recorded; None: a run recorded before r2med recorded its protocol)
    -- or None.  Which hub data (commit by commit) is :mod:`r2med.results.data_states`' question; this check sits
    in the data layer, below the run record's, so it takes the recorded values, not the record."""
    hub = facts.hub()
    if not (source is not None and source.startswith(f"hf://datasets/{hub.repo_id}@")):
        return f"{task}: data not from the hub, graded on {hub.repo_id}'s data only"
    if setting is not None:
        parsed = parse_name(task)
        wanted = ("long_documents", "gold_ids_long") if parsed.long else ("documents", "gold_ids")
        if setting != wanted:
            return f"{task}: corpus {setting[0]} and judgments {setting[1]}, published {wanted[0]} and {wanted[1]}"
    return None
