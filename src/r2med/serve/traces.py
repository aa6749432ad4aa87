"""The trace file of ``r2med serve``: every search request and its reply as one complete JSON line.

Writing: the file is opened with ``O_APPEND`` and each record is one ``os.write`` of a whole line under a lock, so
concurrent requests never interleave and a reader sees only whole lines -- except after a kill -9 (or a crash) in the
middle of a write, which can leave the last line torn.  A server that opens a trace ending without a newline ends
that torn line first, then writes a ``start`` record saying so (``"torn_before": true``), so the next record never
joins it.

Reading (:func:`read_trace`): a line that is not a JSON object is a torn line when it is the file's last line, or
when the next record is a ``start`` record with ``torn_before``; torn lines are counted and skipped.  Any other bad
line is an error naming the file and line.

Records: ``{"event": "start", "time", "served": {...}}`` once per server start (what it serves: task, data commit,
retriever, protocol), then ``{"event": "search", "time", "session", "query_id", "turn", "query", "ids", "scores",
"exclusions"}`` per searched query (``exclusions``: ``"applied"``, ``"not applied"`` or ``"none"`` for a task
without them).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from ..errors import R2MedError
from ..infra.containment import check_output_file
from ..infra.input_files import bounded_lines, open_input, open_regular
from ..infra.json_types import JsonObject, JsonValue


class TraceWriter:
    """Appends records to a trace file, one ``os.write`` of one complete line per record (thread-safe)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        if self.path.is_symlink():
            raise R2MedError(f"--trace {self.path} is a link; give a plain file (r2med never writes through a link)")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        check_output_file(self.path, "--trace")
        self._lock = threading.Lock()
        try:
            self._fd: int | None = os.open(
                self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o644
            )
        except OSError as exc:
            raise R2MedError(f"--trace {self.path}: {exc.strerror or exc}") from None
        self.torn_before = self._end_torn_line()
        self._turns: dict[tuple[str, str], int] = {}

    def _end_torn_line(self) -> bool:
        """End a torn last line left by a killed writer with a newline; whether there was one."""
        size = os.fstat(self._fd).st_size if self._fd is not None else 0
        if size == 0:
            return False
        with open_regular(self.path) as f:  # the trace's own file (a link or a FIFO was refused above)
            f.seek(size - 1)
            last = f.read(1)
        if last == b"\n":
            return False
        self._write(b"\n")
        return True

    def _write(self, data: bytes) -> None:
        if self._fd is None:
            raise R2MedError(f"{self.path}: the trace is closed")
        view = memoryview(data)
        while view:  # a regular file takes the whole line in one write; a short write is finished here
            written = os.write(self._fd, view)
            view = view[written:]

    def write(self, record: Mapping[str, object]) -> None:
        """Append one record as one line."""
        line = orjson.dumps({"time": round(time.time(), 6), **record}) + b"\n"
        with self._lock:
            self._write(line)

    def start(self, served: Mapping[str, object]) -> None:
        """The start record: what this server serves, and whether a torn line precedes it."""
        self.write({"event": "start", "served": dict(served), "torn_before": self.torn_before})

    def next_turn(self, session: str, query_id: str) -> int:
        """The turn of the next search of ``(session, query_id)``: 1 for its first search, then 2, ..."""
        with self._lock:
            key = (session, query_id)
            self._turns[key] = self._turns.get(key, 0) + 1
            return self._turns[key]

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                os.fsync(self._fd)
                os.close(self._fd)
                self._fd = None


@dataclass
class Trace:
    """A trace file read back: its search records in file order, its start records, and the torn lines skipped."""

    path: Path
    searches: list[JsonObject] = field(default_factory=list)
    starts: list[JsonObject] = field(default_factory=list)
    torn: int = 0


def _record(line: bytes) -> JsonObject | None:
    try:
        value: JsonValue = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def read_trace(path: str | os.PathLike[str]) -> Trace:
    """The records of a trace file; torn lines (see the module) counted and skipped, any other bad line an error
    naming the file and line."""
    path = Path(path)
    try:
        with open_input(path) as handle:  # a trace given as a stream is read once; every line bounded
            lines = [raw for _, raw in bounded_lines(handle, path)]
    except OSError as exc:
        raise R2MedError(f"{path}: {exc.strerror or exc}") from None
    trace = Trace(path)
    records = [_record(line) for line in lines]
    for number, (line, record) in enumerate(zip(lines, records), start=1):
        if record is None:
            following = records[number] if number < len(records) else None
            if number == len(lines) or (following is not None and following.get("torn_before") is True):
                trace.torn += 1
                continue
            raise R2MedError(f"{path}:{number}: not a trace record (malformed JSON: {line[:60]!r})")
        event = record.get("event")
        if event == "start":
            trace.starts.append(record)
        elif event == "search":
            if not isinstance(record.get("ids"), list) or not isinstance(record.get("query_id", ""), str | None):
                raise R2MedError(f"{path}:{number}: a search record without its list of ids")
            trace.searches.append(record)
        else:
            raise R2MedError(f"{path}:{number}: unknown trace event {event!r} (start or search)")
    return trace
