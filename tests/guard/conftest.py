"""Fixtures shared by the guard tests: a guard around one rule, the dev profile."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tether.guard import Guard

OneRule = Callable[..., Guard]


def _one_rule(
    condition: dict[str, Any] | None = None,
    *,
    when: str = "pre_tool",
    action: str = "warn",
    trigger: str | list[str] = "*",
    message: str = "fired",
    tracking: dict[str, Any] | None = None,
) -> Guard:
    config: dict[str, Any] = {
        "rule_definitions": [
            {
                "id": "r",
                "trigger": trigger,
                "when": when,
                "action": action,
                "condition": condition or {},
                "message": message,
            }
        ]
    }
    if tracking is not None:
        config["state_tracking"] = tracking
    return Guard.from_config(config)


@pytest.fixture
def one_rule() -> OneRule:
    """A factory: a guard with no profile and a single rule `r`."""
    return _one_rule


@pytest.fixture
def dev() -> Guard:
    return Guard.from_config({"profile": "dev"})
