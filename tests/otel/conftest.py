"""Fixtures for the OpenTelemetry tests: the session's Phoenix server (`phoenix.Phoenix`), a
real receiver; a machine without it fails these tests with a pointer to
`scripts/install-test-deps-otel` rather than skipping them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from otel.receiver import Phoenix


@pytest.fixture(scope="session")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Phoenix]:
    server = Phoenix(tmp_path_factory.mktemp("phoenix"))
    try:
        yield server
    finally:
        server.stop()
