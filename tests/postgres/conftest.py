"""Fixtures for the PostgreSQL store's own tests: the session's server, a private server that a
test may stop and restart, fresh execution names, and a chain tree to walk.

The servers are real (`support.postgres`); a machine without PostgreSQL fails these tests with a
pointer to `scripts/install-test-deps-postgres` rather than skipping them.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from support.postgres import PostgresServer, shared_server, write_chain

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


@pytest.fixture
def chain(tmp_path: Path) -> Callable[[int], Path]:
    return lambda steps: write_chain(tmp_path, steps)
