"""Helpers of the bot tests: where the example bot is, and builders for small bot trees."""

from __future__ import annotations

from pathlib import Path
from typing import Any

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
EXAMPLE_TREE = EXAMPLES / "story-mapping.yaml"
EXAMPLE_FOLDER = EXAMPLES / "story-mapping"


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
