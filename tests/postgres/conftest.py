"""Fixtures for the PostgreSQL store's own tests: the session's server, a private server that a
test may stop and restart, fresh execution names, and a chain tree to walk.

The servers are real (`support.postgres`); a machine without PostgreSQL fails these tests with a
pointer to `scripts/install-test-deps-postgres` rather than skipping them.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from support.postgres import PostgresServer, shared_server

_names = itertools.count()


@pytest.fixture
def server() -> PostgresServer:
    return shared_server()


@pytest.fixture
def own_server() -> Iterator[PostgresServer]:
    """A server of this test alone, so that the test may stop it."""
    server = PostgresServer()
    server.start()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def new_name() -> Callable[[], str]:
    return lambda: f"pg-test-{next(_names)}"


def write_chain(folder: Path, steps: int) -> Path:
    """A tree file: a sequence of `steps` actions of one instruct step each."""
    children = [
        {"type": "action", "name": f"Step_{i}", "steps": [{"instruct": f"Do part {i}."}]}
        for i in range(steps)
    ]
    tree = {"name": "chain", "version": "1", "tree": {"type": "sequence", "name": "Chain",
                                                       "children": children}}
    path = folder / f"chain-{steps}.json"
    path.write_text(json.dumps(tree))
    return path


@pytest.fixture
def chain(tmp_path: Path) -> Callable[[int], Path]:
    return lambda steps: write_chain(tmp_path, steps)
