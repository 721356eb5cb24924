"""The trace entry: building one, and the one reading of a trace back, for every reader.

Owns:
- `record`, the one builder of a trace entry (its `seq`, taken from the state and moved on, the
  count of entries since the last reset, and the fields every entry has: `ts`, `kind`, `cursor`,
  `name`);
- the node key (`node_key`: "" the root, "0.2" the third child of the first child) and the step
  token (`step_token` builds it, `Token.parse` reads it back): `KEY:STEP:RETRY:OPENED:SALT`;
- what an entry says of an action's attempt, as stats (`tether.store.tally`), live and exported
  spans (`tether.otel.spans`) and the viewer read it: which entries move the execution and so
  mark when the next request was opened (`MOVING`), how an entry ends an attempt (`settles`),
  which node an entry runs again (`runs_again`), and the retry number of the next attempt
  (`next_retry`);
- what a `check` sees of `TOOLS` from the trace: where an answer's tool records begin
  (`tools_since`), the records themselves (`tool_records`) and those of one action's attempt
  (`attempt_tools`).

It does not own which entries an answer or a tick produces, nor what they say (the answers in
`tether.engine.answers`, the `check` entries in `tether.engine.ticking`), nor where the trace is
kept (the store). Pure: no I/O, no clock; the caller passes `now`.
"""

from __future__ import annotations

from collections.abc import Iterable

from tether.engine.names import Key, Kind, Reply, Result

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def record(
    state: dict[str, Any],
    now: str,
    kind: str,
    cursor: dict[str, Any] | None,
    name: str | None,
    **fields: Any,
) -> dict[str, Any]:
    """A new trace entry of `kind`, numbered with the state's next `seq` (which it moves on, and
    counts since the last reset); `fields` follow in their order, those that are None left out."""
    entry: dict[str, Any] = {
        "seq": state["seq"],
        "ts": now,
        "kind": kind,
        "cursor": cursor,
        "name": name,
    }
    entry.update({k: v for k, v in fields.items() if v is not None})
    state["seq"] += 1
    state["since_reset"] += 1
    return entry


# The entries that move an execution (an answer, a check, a timeout, a close, a jump, a reset):
# the commit that opens a request writes one of them last, so a step was requested at the latest
# of them before its answer.
MOVING = frozenset(
    {
        Kind.PROTOCOL,
        Kind.EVALUATE,
        Kind.INSTRUCT,
        Kind.HUMAN,
        Kind.TIMEOUT,
        Kind.CHECK,
        Kind.CLOSE,
        Kind.JUMP,
        Kind.RESET,
    }
)
_ANSWERS = (Kind.EVALUATE, Kind.INSTRUCT, Kind.HUMAN)
_CHECK_FAILED = ("failed", "error")  # a check step's outcome that fails its action


def node_key(path: Iterable[int]) -> str:
    """A node's key: its path joined by dots ("" the root)."""
    return ".".join(map(str, path))


class Token:
    """A step token read back: the action's node key, the step's index, the retries its action
    had used and the seq at which the step was opened when it was opened, and the execution's
    salt."""

    __slots__ = ("key", "opened", "retry", "salt", "step")

    def __init__(self, key: str, step: int, retry: int, opened: int, salt: str) -> None:
        self.key, self.step, self.retry, self.opened, self.salt = key, step, retry, opened, salt

    def __str__(self) -> str:
        return f"{self.key or '-'}:{self.step}:{self.retry}:{self.opened}:{self.salt}"

    @property
    def path(self) -> list[int]:
        """The action's path (its node key read back)."""
        return [int(i) for i in self.key.split(".")] if self.key else []

    @classmethod
    def parse(cls, token: str) -> Token | None:
        """The token `token` spells, or None when it spells none."""
        parts = token.split(":")
        key = "" if parts[0] == "-" else parts[0]
        numbers = [*(key.split(".") if key else []), *parts[1:4]]
        if len(parts) != 5 or not all(n.isascii() and n.isdigit() for n in numbers):
            return None
        return cls(key, int(parts[1]), int(parts[2]), int(parts[3]), parts[4])


def step_token(path: Iterable[int], k: int, frame: dict[str, Any], salt: str) -> str:
    """The token of the step `k` of the action at `path`, as opened in `frame`."""
    return str(Token(node_key(path), k, frame.get(Key.RETRIES, 0), frame[Key.OPENED], salt))


def settles(entry: dict[str, Any], last: int) -> bool | None:
    """How `entry`, recorded against a step of an action whose last step is `last`, ends that
    action's attempt: True in success (a passed answer or check of its last step, or a close),
    False in failure (a false evaluate, a failed instruct, a rejected or timed-out human step, a
    check that failed or could not be evaluated), None when it ends none (a `running` answer,
    an earlier step passed, anything else)."""
    kind, step = entry["kind"], entry["cursor"]["step"]
    if kind in _ANSWERS:
        submitted = entry.get("submitted")
        if submitted == Reply.RUNNING:
            return None
        passed = submitted is True or submitted == Result.SUCCESS
        passed = passed or entry.get("outcome") == Result.SUCCESS
    elif kind == Kind.CHECK and step is not None:
        passed = entry.get("outcome") not in _CHECK_FAILED
    elif kind == Kind.TIMEOUT:
        passed = False
    elif kind == Kind.CLOSE:
        passed, step = True, last
    else:
        return None
    return False if not passed else True if step == last else None


def runs_again(entry: dict[str, Any]) -> str | None:
    """The key of the node a `check` entry runs again (a `repeat` whose `until` did not hold:
    every node below it is entered afresh, what a `parallel` there left open stays left), or
    None."""
    if (
        entry["kind"] != Kind.CHECK
        or entry.get("on") != "until"
        or entry.get("outcome") != "repeat"
    ):
        return None
    return node_key((entry.get("cursor") or {}).get("path") or [])


def next_retry(retry: int, ended: bool, retries: int) -> int:
    """The retry number of an action's next attempt, after the one numbered `retry` ended in
    success (`ended`) or failure: a failure with retries left is retried (`retry + 1`); a
    success, or the failure that used up its `retries`, starts the count again (0)."""
    return retry + 1 if not ended and retry < retries else 0


def tools_since(state: dict[str, Any]) -> int | None:
    """The seq from which an answer's checks may read `tool` entries (None: they read none)."""
    found = [f[Key.TOOLS_FROM] for f in state["runtime"].values() if Key.TOOLS_FROM in f]
    return min(found) if found else None


def tool_records(entries: Iterable[dict[str, Any]], since: int | None) -> list[dict[str, Any]]:
    """What checks see of the `tool` entries with `seq >= since`: `{tool, input, ok, seq}`,
    where `ok` is true only for an entry recorded `ok: true` (unknown reads as not ok), and
    `agent`, the sub-agent that made the call, when the entry names one."""
    if since is None:
        return []
    return [
        {"tool": e["tool"], "input": e.get("input"), "ok": e["ok"] is True, "seq": e["seq"]}
        | ({"agent": e["agent"]} if "agent" in e else {})
        for e in entries
        if e["kind"] == Kind.TOOL and e["seq"] >= since
    ]


def attempt_tools(frame: dict[str, Any], tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The tool calls of an action's current attempt, from the records the caller passed; of a
    claimed action, none that another sub-agent made (a call naming no agent counts)."""
    first = frame.get(Key.TOOLS_FROM)
    if first is None:
        return []
    holder = (frame.get(Key.CLAIM) or {}).get("agent")
    return [
        r
        for r in tools
        if r["seq"] >= first and (holder is None or r.get("agent", holder) == holder)
    ]
