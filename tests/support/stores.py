"""The stores under test: one `Backend` per store kind, for the conformance suite.

Every store must pass every test in `tests/store/test_conformance.py`. A new store joins the suite
by adding a factory to `BACKENDS`.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tether.store import store_for
from tether.store.base import Store

_names = itertools.count()


@dataclass
class Backend:
    """A store under test; `new_uri()` names a fresh execution in the place `where`, which
    `Store.list` takes."""

    kind: str
    store: Store
    new_uri: Callable[[], str]
    where: str


def _file(tmp_path: Path) -> Backend:
    return Backend(
        "file",
        store_for("x.json"),
        lambda: str(tmp_path / f"run-{next(_names)}.json"),
        str(tmp_path),
    )


def _memory(tmp_path: Path) -> Backend:
    return Backend(
        "memory",
        store_for("memory://x"),
        lambda: f"memory://conformance-{next(_names)}",
        "memory://",
    )


def _postgresql(tmp_path: Path) -> Backend:
    from support.postgres import shared_server

    server = shared_server()
    return Backend(
        "postgresql",
        store_for(server.uri("x")),
        lambda: server.uri(f"conformance-{next(_names)}"),
        server.dsn,
    )


BACKENDS: dict[str, Callable[[Path], Backend]] = {
    "file": _file,
    "memory": _memory,
    "postgresql": _postgresql,
}
