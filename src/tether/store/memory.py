"""The `memory://` store: executions that live as long as the process (the MCP server, tests).

Owns an in-process map from URI to (state, tree, trace), guarded by one lock per URI so that
threads see the same serialised, all-or-nothing commits as the file store gives processes. Values
are stored as JSON text (standard JSON, `tether.store.shared.encode`), so no caller can change a
stored document by mutating what it was given.
`list("memory://")` lists every execution of the process, by the name after `memory://`, and
`tally("memory://")` counts them (`tether.store.tally`). A record's refusal log
(`Transaction.refuse`) is a list beside its trace, counted in the store's size like the rest.

The store holds at most `MAX_BYTES` of that text across all its executions (64 MiB, or
`TETHER_MEMORY_MAX_BYTES`): a create or commit that would pass it is refused (`too_large`) and
changes nothing, so no client of a long-lived server can grow it without bound.
It does not interpret the state.
"""

from __future__ import annotations

import builtins
import json
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from tether.errors import TetherError
from tether.locking import hold
from tether.store.base import Summary, wanted
from tether.store.shared import REFUSAL_LOG_BYTES, encode, page_whole

TYPE_CHECKING = False
if TYPE_CHECKING:
    from tether.store.tally import Behind, Counted

_PREFIX = "memory://"
MAX_BYTES = int(os.environ.get("TETHER_MEMORY_MAX_BYTES", 64 * 1024 * 1024))


@dataclass
class _Record:
    key: str
    state: str
    tree: str
    trace: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


class MemoryStore:
    """Executions kept in this process (see the module docstring)."""

    scheme = "memory"

    def __init__(self) -> None:
        self._records: dict[str, _Record] = {}
        self._guard = threading.Lock()
        self._held = 0  # characters of JSON text held, across every record

    def hold(self, added: int, key: str) -> None:
        """Count `added` characters more (fewer, when negative), or refuse past `MAX_BYTES`."""
        with self._guard:
            self._take(added, key)

    def _take(self, added: int, key: str) -> None:
        """`hold`, with `_guard` held by the caller."""
        if added > 0 and self._held + added > MAX_BYTES:
            raise TetherError(
                "too_large",
                f"{key} would take the memory store past its {MAX_BYTES:,} bytes (memory:// is "
                "for short-lived executions: use a file or a database for larger ones)",
                uri=key,
                limit=MAX_BYTES,
            )
        self._held += added

    def canonical(self, uri: str) -> str:
        name = uri[len(_PREFIX) :] if uri.startswith(_PREFIX) else uri
        if not name:
            raise TetherError("invalid_value", "a memory:// URI needs a name, e.g. memory://run-1")
        return _PREFIX + name

    def exists(self, uri: str) -> bool:
        return self.canonical(uri) in self._records

    def create(
        self,
        uri: str,
        state: dict[str, Any],
        tree: dict[str, Any],
        entries: builtins.list[dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        key = self.canonical(uri)
        lines = [encode(e) for e in entries or []]
        stored = dict(state, trace={"entries": len(lines)})
        record = _Record(key, encode(stored), encode(tree), lines)
        with hold(self._guard):
            if key in self._records:
                raise TetherError(
                    "already_exists",
                    f"an execution already exists at {key}; resume it, reset it, or choose another",
                    uri=key,
                )
            self._take(len(record.state) + len(record.tree) + sum(map(len, lines)), key)
            self._records[key] = record
        return stored

    def _record(self, uri: str) -> _Record:
        key = self.canonical(uri)
        record = self._records.get(key)
        if record is None:
            raise TetherError("not_found", f"no execution at {key}", uri=key)
        return record

    def load(self, uri: str) -> dict[str, Any]:
        return dict(json.loads(self._record(uri).state))

    def load_tree(self, uri: str) -> dict[str, Any]:
        return dict(json.loads(self._record(uri).tree))

    def read_trace(self, uri: str) -> Iterator[dict[str, Any]]:
        record = self._record(uri)
        count = json.loads(record.state)["trace"]["entries"]
        for line in record.trace[:count]:
            yield json.loads(line)

    def read_execution(self, uri: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        record = self._record(uri)
        with hold(record.lock, reading=True):
            state = dict(json.loads(record.state))
            lines = record.trace[: state["trace"]["entries"]]
        return state, [json.loads(line) for line in lines]

    def read_tail(self, uri: str, since: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        record = self._record(uri)
        tail: list[dict[str, Any]] = []
        with hold(record.lock, reading=True):
            state = dict(json.loads(record.state))
            for at in range(state["trace"]["entries"] - 1, -1, -1):
                entry = json.loads(record.trace[at])
                if entry["seq"] < since:
                    break
                tail.append(entry)
        return state, tail[::-1]

    def trace_length(self, state: dict[str, Any]) -> int:
        return int(state["trace"]["entries"])

    def revision(self, uri: str) -> int:
        return int(json.loads(self._record(uri).state)["revision"])

    def list(self, where: str, *, status: str | None = None) -> builtins.list[Summary]:
        self._place(where)
        with self._guard:
            records = sorted(self._records.items())
        listed = [
            Summary.of(key, key[len(_PREFIX) :], json.loads(record.state))
            for key, record in records
        ]
        return [summary for summary in listed if wanted(summary, status)]

    def summaries(self, where: str) -> Iterator[Summary]:
        """`list(where)`, one summary at a time (what `page` reads)."""
        return iter(self.list(where))

    page = page_whole

    def fingerprint(self, where: str) -> tuple[int, object]:
        listed = self.list(where)
        return len(listed), tuple((s.name, s.revision) for s in listed)

    def refusals(self, uri: str) -> builtins.list[dict[str, Any]]:
        return [json.loads(line) for line in builtins.list(self._record(uri).refused)]

    def counted(self, where: str) -> Iterator[Counted]:
        from tether.store.tally import count_each

        self._place(where)
        return count_each(self, where)

    def behind(
        self, where: str, tree: str, tree_hash: str, key: str, measure: str, page: slice
    ) -> tuple[int, builtins.list[Behind]]:
        from tether.store.tally import behind_of, marked

        return behind_of(marked(self.counted(where)), tree, tree_hash, key, measure, page)

    def tally(
        self, where: str, *, since: str | None = None, tree: str | None = None
    ) -> dict[str, Any]:
        from tether.store.tally import tally_of

        return tally_of(self.counted(where), tree=tree, since=since)

    def locate(self, where: str, name: str) -> str:
        self._place(where)
        return self.canonical(_PREFIX + name)

    def place(self, uri: str) -> tuple[str, str | None]:
        if uri in (_PREFIX, "memory:"):
            return _PREFIX, None
        return _PREFIX, self.canonical(uri)[len(_PREFIX) :]

    def _place(self, where: str) -> None:
        """Refuse a `where` other than the memory store itself."""
        if where not in (_PREFIX, "memory:"):
            raise TetherError(
                "invalid_value",
                f"{where} names one execution, not a place that holds them: list memory://",
                uri=where,
            )

    @contextmanager
    def transaction(self, uri: str) -> Iterator[_MemoryTransaction]:
        record = self._record(uri)
        with hold(record.lock):
            yield _MemoryTransaction(self, record)


class _MemoryTransaction:
    def __init__(self, store: MemoryStore, record: _Record) -> None:
        self._store = store
        self._record = record
        self.state = dict(json.loads(record.state))

    def tree(self) -> dict[str, Any]:
        return dict(json.loads(self._record.tree))

    def commit(
        self, state: dict[str, Any], entries: list[dict[str, Any]], *, reset_trace: bool = False
    ) -> dict[str, Any]:
        lines = [encode(e) for e in entries]
        trace = lines if reset_trace else [*self._record.trace, *lines]
        committed = dict(
            state, revision=int(self.state["revision"]) + 1, trace={"entries": len(trace)}
        )
        encoded = encode(committed)
        dropped = sum(map(len, self._record.trace)) if reset_trace else 0
        added = len(encoded) - len(self._record.state) + sum(map(len, lines)) - dropped
        self._store.hold(added, self._record.key)
        self._record.trace = trace
        self._record.state = encoded
        self.state = committed
        return committed

    def refuse(self, record: dict[str, Any]) -> None:
        line = encode(record)
        if sum(map(len, self._record.refused)) + len(line) > REFUSAL_LOG_BYTES:
            return
        self._store.hold(len(line), self._record.key)
        self._record.refused.append(line)

    def replace_tree(self, tree: dict[str, Any], state: dict[str, Any]) -> dict[str, Any]:
        committed = dict(state, revision=int(self.state["revision"]) + 1, trace=self.state["trace"])
        encoded_tree, encoded_state = encode(tree), encode(committed)
        old = len(self._record.tree) + len(self._record.state)
        self._store.hold(len(encoded_tree) + len(encoded_state) - old, self._record.key)
        self._record.tree = encoded_tree
        self._record.state = encoded_state
        self.state = committed
        return committed
