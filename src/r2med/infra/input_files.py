"""How r2med opens what it reads: inputs the user named, and the entries of its own caches.

Two kinds of file, two rules (docs/reliability.md, "Streams, devices and links"):

* **An input the user named** (a run, judgments, a corpus, ``--qrels``): a regular file is read as it is.  Anything
  else the user gave on purpose -- a pipe (``r2med score TASK <(cat run.trec)``), a FIFO, ``/dev/stdin``, a
  character device -- is a *stream*: read once, the first time any reader opens it (:func:`open_input`), and its
  bytes kept for every later reader in the process (the format sniff, the reader, the recorded sha256), so what is
  scored, imported and hashed is exactly what was read.  A stream holds at most :data:`MAX_STREAM_BYTES`.
* **A cache entry** (``$R2MED_HOME/...``, the Hugging Face cache's ``refs/``, a BM25 index's ``params.json``, the
  LLM answer cache): a regular file only, opened without waiting (``O_NONBLOCK``: a FIFO planted there is never
  waited on); anything else raises :class:`NotRegularFile` (an ``OSError``), which every cache reader already
  treats as damage: reported and rebuilt.

Every line reader bounds a line (:data:`MAX_LINE_BYTES`, :func:`bounded_lines`): a file without newlines
(``/dev/zero``, a 3 GB one-line file) is refused at its first line, never read whole into memory.
"""

from __future__ import annotations

import errno
import io
import os
import stat
from collections.abc import Iterator
from typing import BinaryIO, Final

#: The longest line a line reader takes (a BRIGHT long document is a few MB; a corpus line is far shorter).
MAX_LINE_BYTES = 64 << 20
#: The most a stream (a pipe, a FIFO, a device) given as an input may hold: it is kept in memory, read once.
MAX_STREAM_BYTES: Final = 1 << 30
_BLOCK: Final = 1 << 20

#: streams already read in this process (by absolute path and the stream's device and inode, so another pipe
#: under the same name is read afresh): every later reader gets the same bytes; each command starts empty
_STREAMS: dict[tuple[str, int, int], bytes] = {}


def forget_streams() -> None:
    """Drop the streams kept so far (a command starts with none: ``r2med.cli.main``)."""
    _STREAMS.clear()


class NotRegularFile(OSError):
    """A cache entry (or a file r2med wrote) that is not a regular file: a FIFO, a device, a socket, a folder."""


class TooLong(OSError):
    """A line or a stream beyond its bound (:data:`MAX_LINE_BYTES`, :data:`MAX_STREAM_BYTES`)."""


def _size_text(n: int) -> str:
    return f"{n >> 30} GiB" if n >= 1 << 30 else f"{n >> 20} MiB"


def kind_of(mode: int) -> str:
    """What a file of ``mode`` is, in words (``a FIFO``, ``a character device``...)."""
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISDIR(mode):
        return "a folder"
    return "not a regular file"


def is_stream(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` (links followed) exists and is neither a regular file nor a folder."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def _read_stream(handle: BinaryIO, path: str | os.PathLike[str]) -> bytes:
    """A stream's bytes, read once to its end; a line or the whole beyond its bound is a :class:`TooLong`."""
    chunks: list[bytes] = []
    total = 0
    line = 0  # bytes since the last newline
    while block := handle.read(_BLOCK):
        total += len(block)
        if total > MAX_STREAM_BYTES:
            raise TooLong(
                errno.EFBIG,
                f"a stream holding more than {_size_text(MAX_STREAM_BYTES)}; save it to a file first",
                str(path),
            )
        cut = block.rfind(b"\n")
        line = line + len(block) if cut < 0 else len(block) - cut - 1
        if line > MAX_LINE_BYTES:
            raise TooLong(errno.EFBIG, f"a line longer than {_size_text(MAX_LINE_BYTES)}", str(path))
        chunks.append(block)
    return b"".join(chunks)


def open_input(path: str | os.PathLike[str]) -> BinaryIO:
    """``path`` opened for reading as an input the user named: a regular file as it is, a stream read once (every
    later call for the same path in this process gets the same bytes).  Raises what ``open`` raises, and
    :class:`TooLong` for a stream beyond its bounds."""
    try:
        found = os.stat(path)  # never blocks, even on a FIFO
    except OSError:
        found = None
    key = (os.path.abspath(path), found.st_dev, found.st_ino) if found is not None else None
    kept = _STREAMS.get(key) if key is not None else None
    if kept is not None:
        return io.BytesIO(kept)
    handle = open(path, "rb")  # noqa: SIM115 - returned to the caller, who closes it
    try:
        mode = os.fstat(handle.fileno()).st_mode
        if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
            return handle
        data = _read_stream(handle, path)
    except BaseException:
        handle.close()
        raise
    handle.close()
    if key is not None:
        _STREAMS[key] = data
    return io.BytesIO(data)


def read_input(path: str | os.PathLike[str]) -> bytes:
    """An input's whole content (:func:`open_input`)."""
    with open_input(path) as handle:
        return handle.read()


def bounded_lines(
    handle: BinaryIO, path: str | os.PathLike[str], max_line: int | None = None
) -> Iterator[tuple[int, bytes]]:
    """(line number, raw bytes without the newline) of ``handle``, read in large blocks; a line longer than
    ``max_line`` (default :data:`MAX_LINE_BYTES`) is a :class:`TooLong` naming the line (found while reading it:
    never held whole)."""
    max_line = MAX_LINE_BYTES if max_line is None else max_line
    number, pending, held = 0, [], 0  # pending: the pieces of a line that spans blocks
    while block := handle.read(_BLOCK):
        lines = block.split(b"\n")
        if len(lines) == 1:
            pending.append(block)
            held += len(block)
            if held > max_line:
                raise TooLong(errno.EFBIG, f"line {number + 1} is longer than {_size_text(max_line)}", str(path))
            continue
        if pending:
            pending.append(lines[0])
            lines[0] = b"".join(pending)
        last = lines.pop()
        pending, held = ([last], len(last)) if last else ([], 0)
        for raw in lines:
            number += 1
            if len(raw) > max_line:
                raise TooLong(errno.EFBIG, f"line {number} is longer than {_size_text(max_line)}", str(path))
            yield number, raw
        if held > max_line:
            raise TooLong(errno.EFBIG, f"line {number + 1} is longer than {_size_text(max_line)}", str(path))
    if pending:
        yield number + 1, b"".join(pending)


def open_regular(path: str | os.PathLike[str]) -> BinaryIO:
    """``path`` opened for reading if it is a regular file (links followed), without ever waiting on a FIFO;
    anything else is a :class:`NotRegularFile` naming what it is.  How every cache entry is opened."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFile(errno.EINVAL, f"is {kind_of(mode)}, not a regular file", str(path))
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb")


def read_regular(path: str | os.PathLike[str], limit: int | None = None) -> bytes:
    """A regular file's bytes (:func:`open_regular`); with ``limit``, a file larger than it is a :class:`TooLong`."""
    with open_regular(path) as handle:
        data = handle.read() if limit is None else handle.read(limit + 1)
    if limit is not None and len(data) > limit:
        raise TooLong(errno.EFBIG, f"larger than {limit} bytes", str(path))
    return data


def exists_as_regular(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` (links followed) is a regular file."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False
