"""The store interface: what every execution store (file, memory, PostgreSQL) provides.

Owns the contract: an execution lives at a URI as three parts — the state (a small JSON object
with a `revision`), the embedded tree (written once, at create), and the append-only trace. A
verb opens one `transaction` per call, reads, and commits once; the store makes that commit atomic
and serialises concurrent transactions on the same URI. It does not know the tree semantics (the
engine) or the phase rules (the verbs). The shared conformance suite in `tests/store/` holds every
store to this contract.

It also owns what a listing says of an execution (`Summary`: its name and URI, tree, status,
phase, open step, revision and last update, or why it cannot be read), built from the state by
one function for every store, so that the file store, the memory store and PostgreSQL list alike.

The JSON encoding every store writes is `tether.store.shared.encode`, kept out of this module so
that a step on the file store loads neither `typing` nor `dataclasses`
(`tests/cli/test_lean_start.py`).
"""

from __future__ import annotations

import builtins
from collections.abc import Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol

from tether.engine.names import Status
from tether.errors import TetherError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from tether.store.tally import Behind


@dataclass(frozen=True)
class Summary:
    """One execution as `Store.list` shows it. `name` is what the place calls it (a path
    relative to the folder, with `/`; the name inside a database or the memory store) and `uri`
    its canonical URI, what the verbs take. `open_step` is the request `next` returns while the
    execution runs (`{name, type}`). An execution that cannot be read has only `error` (the
    `TetherError` as a dictionary: code, message...) beside its name and URI."""

    uri: str
    name: str
    tree: str | None = None
    status: str | None = None
    phase: str | None = None
    open_step: dict[str, str | None] | None = None
    revision: int | None = None
    updated_at: str | None = None
    error: dict[str, Any] | None = None

    @classmethod
    def of(cls, uri: str, name: str, state: dict[str, Any]) -> Summary:
        """The summary of a committed state (or of the keys of one that a listing read: a
        value of the wrong type reads as missing)."""
        requests = state.get("open")
        first = requests[0] if isinstance(requests, list) and requests else None
        open_step = None
        if state.get("status") == Status.RUNNING and isinstance(first, dict):
            open_step = {"name": _text(first.get("name")), "type": _text(first.get("type"))}
        revision = state.get("revision")
        if not isinstance(revision, int) or isinstance(revision, bool):
            revision = None
        return cls(
            uri,
            name,
            tree=_text(state.get("tree_name")),
            status=_text(state.get("status")),
            phase=_text(state.get("phase")),
            open_step=open_step,
            revision=revision,
            updated_at=_text(state.get("updated_at")),
        )

    @classmethod
    def unreadable(cls, uri: str, name: str, error: TetherError) -> Summary:
        return cls(uri, name, error=error.to_dict())

    def to_dict(self) -> dict[str, Any]:
        if self.error is not None:
            return {"name": self.name, "uri": self.uri, "error": self.error}
        return {
            "name": self.name,
            "uri": self.uri,
            "tree": self.tree,
            "status": self.status,
            "phase": self.phase,
            "open_step": self.open_step,
            "revision": self.revision,
            "updated_at": self.updated_at,
        }


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def wanted(summary: Summary, status: str | None) -> bool:
    """Whether a listing filtered on `status` (None: no filter) keeps `summary`. One that cannot
    be read is kept whatever the filter: its status is unknown, and hiding it would hide the
    problem."""
    return status is None or summary.error is not None or summary.status == status


class Transaction(Protocol):
    """An exclusive hold on one existing execution, open for the length of one verb."""

    state: dict[str, Any]

    def tree(self) -> dict[str, Any]: ...

    def commit(
        self, state: dict[str, Any], entries: list[dict[str, Any]], *, reset_trace: bool = False
    ) -> dict[str, Any]:
        """Persist `state` (its revision bumped by one) and append `entries` to the trace, or
        replace the whole trace with them when `reset_trace`. Returns the committed state."""
        ...

    def replace_tree(self, tree: dict[str, Any], state: dict[str, Any]) -> dict[str, Any]:
        """Atomically swap the embedded tree for `tree` and commit `state` (its revision bumped
        by one), adding no trace entry: both change, or neither. Returns the committed state.
        Deciding whether the new tree fits the execution is the caller's business."""
        ...

    def refuse(self, record: dict[str, Any]) -> None:
        """Append `record` (an answer the engine refused, a tool call a policy denied: see
        `tether.store.tally`) to the execution's refusal log, beside the trace. The state, its
        revision and the trace do not change, so replay, `verify` and `fork` never see it; the
        record is kept even when the verb then raises (PostgreSQL commits it with the
        transaction, which the verb leaves normally before raising). The log is capped: a
        record that would take it past `shared.REFUSAL_LOG_BYTES` (encoded) is not kept."""
        ...


class Store(Protocol):
    """Documents addressed by URI. Methods raise `TetherError` with `not_found`,
    `already_exists` or `corrupt_execution` as their names say."""

    scheme: str  # the URI scheme it holds: file, memory, postgresql

    def canonical(self, uri: str) -> str:
        """The one spelling of `uri` this store keeps (an absolute path for files)."""
        ...

    def exists(self, uri: str) -> bool: ...

    def create(
        self,
        uri: str,
        state: dict[str, Any],
        tree: dict[str, Any],
        entries: builtins.list[dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        """Store a new execution whose trace is `entries` (none by default), in one commit: a
        kill at any instant leaves all of it or none of its state. Refuses a URI that exists."""
        ...

    def load(self, uri: str) -> dict[str, Any]:
        """The committed state, without locking."""
        ...

    def load_tree(self, uri: str) -> dict[str, Any]: ...

    def read_trace(self, uri: str) -> Iterator[dict[str, Any]]:
        """The committed trace entries, oldest first."""
        ...

    def read_execution(self, uri: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """The committed state and the trace entries of that same commit, read as one snapshot
        (what `get` and `verify` need while other processes keep answering)."""
        ...

    def read_tail(self, uri: str, since: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """The committed state and, of the trace of that same commit, the entries whose seq is
        `since` or more, oldest first (all of them when `since` is at or before the first):
        what live OpenTelemetry export reads after each step, so that its cost follows the
        entries it reads, not the length of the trace (the file store reads the trace file
        backwards from its committed end; PostgreSQL reads the rows from that entry on)."""
        ...

    def trace_length(self, state: dict[str, Any]) -> int:
        """How many entries the committed trace of `state` holds."""
        ...

    def transaction(self, uri: str) -> AbstractContextManager[Transaction]: ...

    def revision(self, uri: str) -> int:
        """The committed revision, read without the tree or the trace: what a watcher polls
        to learn that an execution committed."""
        ...

    def list(self, where: str, *, status: str | None = None) -> builtins.list[Summary]:
        """The executions at `where`, sorted by name: a folder for the file store (its
        sub-folders included, as `tether.store.file` says), `memory://` for the memory store, a
        database (`postgresql://...` without `#name`) for PostgreSQL. With `status`, only those
        whose status it is. An execution that cannot be read is listed with its error (see
        `wanted`) rather than raised; a `where` that is not such a place is refused
        (`not_found`, `invalid_value`)."""
        ...

    def page(
        self,
        where: str,
        *,
        status: str | None = None,
        tree: str | None = None,
        limit: int | None = None,
        offset: int = 0,
    ) -> tuple[builtins.list[Summary], int, builtins.list[str]]:
        """One page of `list(where)` (`limit` from `offset`, all when `limit` is None), kept by
        `status` and by `tree` (the tree's name) — an execution that cannot be read is kept
        whatever they say — with the number kept and the names of every tree at `where`, sorted.
        PostgreSQL answers it from its kept summaries without reading a state; the file and
        memory stores walk their listing, holding only the page
        (`tether.store.shared.page_whole`)."""
        ...

    def fingerprint(self, where: str) -> tuple[int, object]:
        """`(n, token)`: how many executions `list(where)` would give, and a value that changes
        whenever one of them is created or commits (what a viewer polls to learn that its
        listing changed), read without reading the executions: on PostgreSQL the executions
        created and the commits, counted by each (`tether_pulse`; one deleted by hand goes
        unseen), in a folder each sub-folder's modification time and the length of its index
        (`tether.store.file`, which lists again only the folders whose modification time moved;
        an edit by hand that renames nothing goes unseen), in memory each execution's
        revision."""
        ...

    def locate(self, where: str, name: str) -> str:
        """The canonical URI of the execution that `list(where)` calls `name`."""
        ...

    def place(self, uri: str) -> tuple[str, str | None]:
        """`(where, name)`: the canonical spelling of the place that holds what `uri` names
        (what `list` takes) and the execution's name there; the name is None when `uri` names
        a place rather than one execution (a folder, a database without `#name`,
        `memory://`)."""
        ...

    def refusals(self, uri: str) -> builtins.list[dict[str, Any]]:
        """The execution's refusal log, oldest first (`Transaction.refuse`). The verbs write
        each record as `{seq, ts, kind, code, cursor, name, step, message}`: `kind` is
        `answer` (with `answer`: eval, submit, human, close, ...; `check` for `check_failed`)
        or `tool` (code `denied`, with `tool` and `input`); `cursor` is `{path, step}` of the
        step it was aimed at, or None; `seq` is the seq the next trace entry takes, so the
        records since the last reset are those with `seq >= state seq - since_reset`."""
        ...

    def behind(
        self, where: str, tree: str, tree_hash: str, key: str, measure: str, page: slice
    ) -> tuple[int, builtins.list[Behind]]:
        """The executions at `where` of the tree `tree` at `tree_hash` in which the action `key`
        (a `tether.store.tally.key_of`) has a figure of `measure` (one of
        `tether.store.tally.MARKS`) that is not 0, most first then by name: how many, and
        the `page` of them (`tether.store.tally.behind_of`)."""
        ...

    def tally(
        self, where: str, *, since: str | None = None, tree: str | None = None
    ) -> dict[str, Any]:
        """The figures of the executions at `where` (a place, as `list` takes it), only those
        whose tree is named `tree` and those created at or after `since` (a stored UTC
        timestamp) when given: `{"trees": [...], "unreadable": n}`, each tree as
        `tether.store.tally` defines it. An execution that cannot be read is counted in
        `unreadable` and left out of the figures."""
        ...
