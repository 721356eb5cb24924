"""The viewer's one watcher: what changed in the place, read once per tick for every page.

Owns the polling behind `/api/events`: each tick (every `POLL_SECONDS`) it reads, once for all
the pages, the revision of each execution some page follows, and every `LISTING_TICKS` ticks
the listing while some page shows it, and wakes the streams whose value changed. It reads
through the callables it is given (`tether.viewer.place` makes them) and knows nothing of HTTP
(`tether.viewer.server` streams what it yields).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import anyio.to_thread

POLL_SECONDS = 0.2  # how often the watcher reads the revisions pages follow
LISTING_TICKS = 5  # and the listing, every fifth tick (once a second)

_UNSET = object()


class Watcher:
    """The server's one watcher: every tick it reads, once for all the pages, the revision of
    each execution some page follows, and every `LISTING_TICKS` ticks the listing while some
    page shows it; each stream wakes when a value changes. A key is an execution's URI, or None
    for the listing. When the server stops (sse-starlette sets `stopping`), every stream ends
    at the next tick, its response completed."""

    def __init__(self) -> None:
        self._readers: dict[str | None, Callable[[], Any]] = {}
        self._streams: dict[str | None, int] = {}
        self._values: dict[str | None, Any] = {}
        self._changed = anyio.Event()
        self.stopping = anyio.Event()
        self._closed = False

    async def follow(self, key: str | None, read: Callable[[], Any]) -> AsyncIterator[Any]:
        """The value of `key` at once, then each new one, for as long as the caller listens."""
        self._readers[key] = read
        self._streams[key] = self._streams.get(key, 0) + 1
        try:
            if key not in self._values:
                self._values[key] = await anyio.to_thread.run_sync(read)
            last: Any = _UNSET
            while not self._closed:
                value = self._values.get(key, last)
                if value != last:
                    last = value
                    yield value
                await self._changed.wait()
        finally:
            self._streams[key] -= 1
            if not self._streams[key]:
                for table in (self._streams, self._readers, self._values):
                    table.pop(key, None)

    async def run(self) -> None:
        """Read what the streams follow, tick after tick, until cancelled."""
        tick = 0
        while not self._closed:
            await anyio.sleep(POLL_SECONDS)
            if self.stopping.is_set():
                self._closed = True
                self._wake()
                return
            tick += 1
            due = [
                (key, read)
                for key, read in self._readers.items()
                if key is not None or tick % LISTING_TICKS == 0
            ]
            if not due:
                continue
            fresh = await anyio.to_thread.run_sync(_read_all, due)
            changed = False
            for key, value in fresh:
                if key in self._streams and self._values.get(key, _UNSET) != value:
                    self._values[key] = value
                    changed = True
            if changed:
                self._wake()

    def _wake(self) -> None:
        woken, self._changed = self._changed, anyio.Event()
        woken.set()


def _read_all(due: list[tuple[str | None, Callable[[], Any]]]) -> list[tuple[str | None, Any]]:
    return [(key, read()) for key, read in due]
