"""Requests arriving together are searched together: one retriever call per batch of waiting searches.

Each request hands its searches to :meth:`Batcher.submit` and awaits their hits.  One worker takes everything
waiting (up to ``max_batch`` searches), answers it with one :meth:`~r2med.serve.index.ServedIndex.search` on a
worker thread (the event loop keeps accepting requests meanwhile), and hands each request its part.  While a batch
is searched, new requests queue up and form the next batch, so under load the batches grow by themselves; an idle
server answers a lone request at once (no waiting window).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from dataclasses import dataclass, field

from .index import Hits, Search, ServedIndex


@dataclass
class _Pending:
    searches: Sequence[Search]
    future: asyncio.Future[list[Hits]] = field(default_factory=lambda: asyncio.get_running_loop().create_future())


class Batcher:
    """Gathers waiting searches into one retriever call (see the module)."""

    def __init__(self, index: ServedIndex, max_batch: int = 512):
        self.index, self.max_batch = index, max(1, int(max_batch))
        self._queue: asyncio.Queue[_Pending] | None = None
        self._worker: asyncio.Task[None] | None = None
        self.batches = 0  # how many retriever calls were made (the benchmark reports searches per call)
        self.searched = 0

    async def submit(self, searches: Sequence[Search]) -> list[Hits]:
        if self._queue is None or self._worker is None or self._worker.done():
            self._queue = asyncio.Queue()
            self._worker = asyncio.get_running_loop().create_task(self._run(self._queue))
        pending = _Pending(searches)
        await self._queue.put(pending)
        return await pending.future

    async def _run(self, queue: asyncio.Queue[_Pending]) -> None:
        while True:
            batch = [await queue.get()]
            size = len(batch[0].searches)
            while not queue.empty() and size < self.max_batch:
                item = queue.get_nowait()
                batch.append(item)
                size += len(item.searches)
            flat = [s for p in batch for s in p.searches]
            try:
                hits = await asyncio.to_thread(self.index.search, flat)
            except Exception as exc:  # handed to every request of the batch; the worker lives on
                for p in batch:
                    if not p.future.done():
                        p.future.set_exception(exc)
                continue
            self.batches += 1
            self.searched += len(flat)
            start = 0
            for p in batch:
                if not p.future.done():
                    p.future.set_result(hits[start : start + len(p.searches)])
                start += len(p.searches)

    async def close(self) -> None:
        if self._worker is not None:
            self._worker.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._worker
            self._worker = None
