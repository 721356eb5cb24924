"""Helpers of the bot tests: where the example bot is, builders for small bot trees, and the
bot server as a stdio subprocess."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from mcp import StdioServerParameters

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
EXAMPLE_TREE = EXAMPLES / "story-mapping.yaml"
EXAMPLE_FOLDER = EXAMPLES / "story-mapping"


def stdio_server(tree: Path, state: Path) -> StdioServerParameters:
    """`tether mcp --bot TREE --state STATE` as a stdio subprocess, with this process's
    environment (so it imports the sources under test, as the tests do)."""
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "tether.cli.main", "mcp", "--bot", str(tree), "--state", str(state)],
        env=dict(os.environ),
    )


def action(name: str, *steps: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"type": "action", "name": name, "steps": list(steps) or [{"instruct": name}], **extra}


def phase(name: str, *actions: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"type": "sequence", "name": name, "children": list(actions), **extra}


def bot(name: str, *phases: dict[str, Any], **root: Any) -> dict[str, Any]:
    """A tree file's data: a root sequence of phases (`root`: more keys of the root)."""
    return {
        "name": name,
        "tree": {"type": "sequence", "name": "root", "children": list(phases), **root},
    }
