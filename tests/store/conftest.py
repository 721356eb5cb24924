"""Fixtures for the store conformance suite: every backend of `support.stores`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from support.stores import BACKENDS, Backend


@pytest.fixture(params=sorted(BACKENDS))
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    yield BACKENDS[request.param](tmp_path)
