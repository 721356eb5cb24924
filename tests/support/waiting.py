"""Waiting for a state a test asserts, never for a time: `until` polls a function until it
returns something true (what the work of another process, a detached one included, leaves)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def until(made: Callable[[], T], seconds: float = 60.0, what: str = "the state") -> T:
    """The first true value `made()` returns, polled every 50 ms; fails after `seconds` (a
    bound for a machine under load, not a measure) saying `what` never came."""
    deadline = time.monotonic() + seconds
    while True:
        value = made()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} never came within {seconds:.0f} s")
        time.sleep(0.05)
