"""A human step's deadline: when it falls, and which open steps are past theirs.

Owns the arithmetic of deadlines on the stored timestamps (ISO 8601 in UTC, as the verbs' clock
writes them: `2026-01-01T09:30:00.123Z`): `deadline_after` (when a step opened at a time with a
`timeout` of so many seconds stops waiting), `passed` (whether a deadline is at or before a
time) and `expired` (the open human requests of a state past their deadline at a time).

It does not own what a timeout does (`tether.engine.applying`), where a deadline is kept (the
action's frame, `Key.DEADLINE`, and the request, set by `tether.engine.ticking`), nor when a
timeout is recorded (the verbs, at the next read or answer). Pure: no I/O, no clock; the caller
passes `now`. `datetime` is imported only when an execution has a deadline.
"""

from __future__ import annotations

from tether.engine.names import RequestType

TYPE_CHECKING = False
if TYPE_CHECKING:
    from datetime import datetime
    from typing import Any


def deadline_after(now: str, seconds: int) -> str:
    """The time `seconds` after `now`, written as the verbs' clock writes a time."""
    from datetime import timedelta

    later = _instant(now) + timedelta(seconds=seconds)
    return later.strftime("%Y-%m-%dT%H:%M:%S.") + f"{later.microsecond // 1000:03d}Z"


def passed(deadline: str, now: str) -> bool:
    """Whether `deadline` is at or before `now`."""
    return _instant(deadline) <= _instant(now)


def expired(state: dict[str, Any], now: str) -> list[dict[str, Any]]:
    """The open human requests of `state` whose deadline has passed at `now`, in order."""
    return [
        r
        for r in state["open"]
        if r["type"] == RequestType.HUMAN and "deadline" in r and passed(r["deadline"], now)
    ]


def _instant(text: str) -> datetime:
    """A stored UTC time as an aware `datetime` (`Z` or an offset; none is read as UTC)."""
    from datetime import UTC, datetime

    moment = datetime.fromisoformat(text)
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
