"""The trace entry: building one, and reading the tool entries back for checks.

Owns `record`, the one builder of a trace entry (its `seq`, taken from the state and moved on,
the count of entries since the last reset, and the fields every entry has: `ts`, `kind`,
`cursor`, `name`), and what a `check` sees of `TOOLS` from the trace: where an answer's tool
records begin (`tools_since`), the records themselves (`tool_records`) and those of one action's
attempt (`attempt_tools`).

It does not own which entries an answer or a tick produces, nor what they say (the answers in
`tether.engine.answers`, the `check` entries in `tether.engine.ticking`), nor where the trace is
kept (the store). Pure: no I/O, no clock; the caller passes `now`.
"""

from __future__ import annotations

from collections.abc import Iterable

from tether.engine.names import Key, Kind

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


def tools_since(state: dict[str, Any]) -> int | None:
    """The seq from which an answer's checks may read `tool` entries (None: they read none)."""
    found = [f[Key.TOOLS_FROM] for f in state["runtime"].values() if Key.TOOLS_FROM in f]
    return min(found) if found else None


def tool_records(entries: Iterable[dict[str, Any]], since: int | None) -> list[dict[str, Any]]:
    """What checks see of the `tool` entries with `seq >= since`: `{tool, input, ok, seq}`,
    where `ok` is true only for an entry recorded `ok: true` (unknown reads as not ok)."""
    if since is None:
        return []
    return [
        {"tool": e["tool"], "input": e.get("input"), "ok": e["ok"] is True, "seq": e["seq"]}
        for e in entries
        if e["kind"] == Kind.TOOL and e["seq"] >= since
    ]


def attempt_tools(frame: dict[str, Any], tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The tool calls of an action's current attempt, from the records the caller passed."""
    first = frame.get(Key.TOOLS_FROM)
    return [] if first is None else [r for r in tools if r["seq"] >= first]
