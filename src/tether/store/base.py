"""The store interface: what every execution store (file, memory, PostgreSQL) provides.

Owns the contract: an execution lives at a URI as three parts — the state (a small JSON object
with a `revision`), the embedded tree (written once, at create), and the append-only trace. A
verb opens one `transaction` per call, reads, and commits once; the store makes that commit atomic
and serialises concurrent transactions on the same URI. It does not know the tree semantics (the
engine) or the phase rules (the verbs). The shared conformance suite in `tests/store/` holds every
store to this contract.

It also owns the one JSON encoding every store writes (`encode`): standard JSON only, so that a
NaN or an infinity that slipped past the verbs is refused rather than stored in a form that other
readers (the viewer's page, PostgreSQL) cannot parse.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import AbstractContextManager
from typing import Any, Protocol

from tether.errors import TetherError


def encode(value: Any, *, indent: int | None = None) -> str:
    """`value` as standard JSON text (compact unless `indent`); `invalid_value` for a NaN or an
    infinity, which JSON cannot hold."""
    try:
        if indent is None:
            return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
        return json.dumps(value, ensure_ascii=False, allow_nan=False, indent=indent)
    except ValueError as exc:
        raise TetherError("invalid_value", f"not storable as JSON: {exc}") from None


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


class Store(Protocol):
    """Documents addressed by URI. Methods raise `TetherError` with `not_found`,
    `already_exists` or `corrupt_execution` as their names say."""

    def canonical(self, uri: str) -> str:
        """The one spelling of `uri` this store keeps (an absolute path for files)."""
        ...

    def exists(self, uri: str) -> bool: ...

    def create(self, uri: str, state: dict[str, Any], tree: dict[str, Any]) -> dict[str, Any]:
        """Store a new execution with an empty trace; refuses a URI that exists."""
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

    def trace_length(self, state: dict[str, Any]) -> int:
        """How many entries the committed trace of `state` holds."""
        ...

    def transaction(self, uri: str) -> AbstractContextManager[Transaction]: ...
