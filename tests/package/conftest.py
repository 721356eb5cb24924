"""Shared pieces of the package tests: the async backend for the MCP client."""

from __future__ import annotations

import pytest


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
