"""The guard's one deadline: work that must answer in time, or be given up on.

Owns `within`: the work runs in a daemon worker thread and the caller gives up after the
deadline with `DeadlineExceeded` (a hook's decision, below the harness's time-out; a request of
`serve`; the classifier's call). It does not choose the deadline (the hook's `--deadline`, the
classifier's `timeout`) nor what a caller does when it passes (`tether.guard.harness.failsafe`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


class DeadlineExceeded(Exception):
    """The decision took longer than the deadline."""


def within(seconds: float, work: Callable[[], T]) -> T:
    """`work()`, or `DeadlineExceeded` when it has not returned after `seconds`. The worker is a
    daemon thread: a process that gives up does not wait for it."""
    box: list[tuple[bool, Any]] = []

    def run() -> None:
        try:
            box.append((True, work()))
        except BaseException as exc:  # handed to the caller below
            box.append((False, exc))

    thread = threading.Thread(target=run, name="tether-guard-decision", daemon=True)
    thread.start()
    thread.join(seconds)
    if not box:
        raise DeadlineExceeded(f"no decision within {seconds:g} s (the hook's --deadline)")
    ok, value = box[0]
    if ok:
        return value  # type: ignore[no-any-return]
    raise value
