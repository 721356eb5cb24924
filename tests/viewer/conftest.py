"""Fixtures for the viewer tests: executions driven by the real `tether` command."""

from __future__ import annotations

from pathlib import Path

import pytest

from viewer.driver import EXAMPLES, answer, tether


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    folder = tmp_path / "runs"
    folder.mkdir()
    return folder


@pytest.fixture
def hello(runs: Path) -> Path:
    """hello-world started, the protocol accepted and the time of day written and submitted."""
    run = runs / "hello.json"
    tether("start", EXAMPLES / "hello-world.yaml", run)
    answer(run, "submit", "success")
    answer(run, "var", "time_of_day", "evening")
    answer(run, "submit", "success", "--note", "it is 19:00")
    return run
