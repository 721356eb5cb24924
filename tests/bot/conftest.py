"""Fixtures of the bot tests: tree files written in the test's folder, a copy of the example
bot, and a session over a fresh execution."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from bot.botkit import EXAMPLE_TREE
from tether.bot.session import BotSession
from tether.verbs import Runtime


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def write_tree(tmp_path: Path) -> Callable[..., Path]:
    """Writes tree data as YAML in the test's folder; returns the file."""

    def write(data: dict[str, Any], name: str = "bot.yaml") -> Path:
        path = tmp_path / name
        path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
        return path

    return write


@pytest.fixture
def example(tmp_path: Path) -> Path:
    """A copy of the example bot's tree file (so a test may edit it)."""
    return Path(shutil.copy(EXAMPLE_TREE, tmp_path / "story-mapping.yaml"))


@pytest.fixture
def session(example: Path, tmp_path: Path) -> BotSession:
    """The example bot over a fresh file execution."""
    return BotSession(Runtime(), str(example), str(tmp_path / "run.json"))
