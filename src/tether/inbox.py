"""What waits on a person, across every execution of a place: `tether inbox` and the viewer.

Owns `waiting`, the one reading of it (the command and the viewer's `/api/inbox` both call it):
for each running execution the store lists, its open human steps (what is asked, the values it
shows, since when, and the `tether approve`/`tether reject` lines that answer it), whether it is
parked (the last `stop` entry says `parked` while its step is still open: why, since when), and
whether its open step has been refused `refused` times or more in a row (answers refused since
the last trace entry, from the refusal log), and the claims of a team's branches whose lease
lapsed (`tether claim`). Also the table people read (`table`), and what one
commit raised that a person is told of (`raised`, for `tether.notify`), in the same shapes.

It reads through the store interface alone (`Store.list`, `read_tail`, `refusals`), one
execution at a time: of each running one, its state and the end of its trace back to the last
entry that moved it (`_tail`), so that its cost follows the running executions and what each
did since it last moved, not the length of their traces.
It does not decide anything about an execution, nor record anything.
"""

from __future__ import annotations

import time
from typing import Any

from tether.engine.names import Key, Kind, Reply, RequestType, Status
from tether.engine.trace import node_key
from tether.person import command_line
from tether.store import path_of, scheme_of, store_for
from tether.store.tally import millis, stamp

REFUSED = 5  # answers refused in a row at one open step before the inbox shows it
_KINDS_ASIDE = ("stop", "tool")  # entries that neither open nor answer a step


def waiting(place: str, *, now: float | None = None, refused: int = REFUSED) -> dict[str, Any]:
    """What waits on a person at `place` (a folder, memory://, a database without `#name`):
    `{now, refused_threshold, waits: [...], unreadable: n}`, each wait `{kind, name, uri, tree,
    step, since, age_seconds, ...}` with `kind` one of `human` (with `token`, `prompt`, `shows`,
    `approve`, `reject`), `parked` (with `reason`), `refused` (with `refusals`, `last_message`).
    `now` is the clock (seconds since the epoch), passed in by tests."""
    clock = time.time() if now is None else now
    store = store_for(place)
    waits: list[dict[str, Any]] = []
    unreadable = 0
    for summary in store.list(place, status="running"):
        if summary.error is not None:
            unreadable += 1
            continue
        state, entries = _tail(store, summary.uri)
        base = {"name": summary.name, "uri": summary.uri, "tree": summary.tree}
        found = _human(state, entries, base, _answerable(summary.uri))
        found += _parked(state, entries, base) + _refused(store, state, base, refused)
        found += _lapsed(state, base, clock)
        waits += [{**w, "age_seconds": _age(w["since"], clock)} for w in found]
    waits.sort(key=lambda w: (w["since"] or "", w["name"], w["kind"]))
    return {
        "now": stamp(clock),
        "refused_threshold": refused,
        "waits": waits,
        "unreadable": unreadable,
    }


def raised(
    before: dict[str, Any], after: dict[str, Any], entries: list[dict[str, Any]], uri: str
) -> list[dict[str, Any]]:
    """What one commit of the execution at `uri` raised that a person is told of, each shaped
    as a wait with its `event`: a human step it opened (`human`), a park (`parked`, with the
    `resume` line), a timeout (`timeout`), the execution's end (`finished`, `failed`). `before`
    is the state the commit started from, `after` the one it left, `entries` what it recorded."""
    trace = _answerable(uri)
    base = {"uri": uri, "execution": trace}
    was_open = {r.get("step") for r in before.get("open", [])}
    humans = _human(after, entries, base, trace)
    events = [
        {"event": "human", **{k: v for k, v in w.items() if k != "kind"}}
        for w in humans
        if w["token"] not in was_open
    ]
    for entry in entries:
        at = {**base, "step": entry.get("name"), "token": entry.get("step"), "since": entry["ts"]}
        if entry["kind"] == Kind.TIMEOUT:
            events.append({"event": "timeout", **at, "on_timeout": entry.get("on_timeout")})
        elif entry["kind"] == Kind.STOP and entry.get("outcome") == Reply.PARKED:
            resume = command_line("tether", "resume", trace)
            events.append({"event": "parked", **at, "reason": entry.get("note"), "resume": resume})
    if before.get("status") == Status.RUNNING and after["status"] != Status.RUNNING:
        ended = "finished" if after["status"] == Status.COMPLETE else "failed"
        since = entries[-1]["ts"] if entries else None
        events.append({"event": ended, **base, "failure": after.get("failure"), "since": since})
    return events


_BACK = 32  # entries read back from a trace's end at first (`_tail`)


def _tail(store: Any, uri: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The execution's state and the end of its trace back to the last entry that moved it
    (what `_opened_at` and `_parked` read), or all of it (`Store.read_tail`): `_BACK` entries
    back, then eight times further each time that entry is not among them, so that the cost
    follows the entries since the last move, not the trace's length."""
    state, _ = store.read_tail(uri, 1 << 62)  # the state alone
    back = _BACK
    while True:
        state, entries = store.read_tail(uri, max(0, int(state["seq"]) - back))
        whole = int(state["seq"]) - back <= int(state["seq"]) - store.trace_length(state)
        if whole or any(e.get("kind") not in _KINDS_ASIDE for e in entries):
            return state, entries
        back *= 8


def _answerable(uri: str) -> str:
    """The execution as a person types it after `tether approve`."""
    return path_of(uri) if scheme_of(uri) == "file" else uri


def _opened_at(entries: list[dict[str, Any]]) -> str | None:
    """When the open steps opened: the time of the last entry that moved the execution."""
    moved = [e for e in entries if e.get("kind") not in _KINDS_ASIDE]
    return moved[-1]["ts"] if moved else (entries[0]["ts"] if entries else None)


def _human(
    state: dict[str, Any], entries: list[dict[str, Any]], base: dict[str, Any], trace: str
) -> list[dict[str, Any]]:
    since = _opened_at(entries) or state.get("created_at")
    return [
        {
            **base,
            "kind": "human",
            "step": req.get("name"),
            "token": req["step"],
            "prompt": req.get("prompt"),
            "shows": req.get("shows", {}),
            "since": since,
            "approve": command_line("tether", "approve", trace, "--step", req["step"]),
            "reject": command_line("tether", "reject", trace, "--step", req["step"]),
        }
        for req in state.get("open", [])
        if req.get("type") == RequestType.HUMAN
    ]


def _parked(
    state: dict[str, Any], entries: list[dict[str, Any]], base: dict[str, Any]
) -> list[dict[str, Any]]:
    last = next((e for e in reversed(entries) if e.get("kind") != Kind.TOOL), None)
    open_tokens = {r.get("step") for r in state.get("open", [])}
    if last is None or last["kind"] != Kind.STOP or last.get("outcome") != Reply.PARKED:
        return []
    if last.get("step") not in open_tokens:
        return []
    return [
        {
            **base,
            "kind": "parked",
            "step": last.get("name"),
            "reason": last.get("note"),
            "since": last["ts"],
        }
    ]


def _refused(
    store: Any, state: dict[str, Any], base: dict[str, Any], threshold: int
) -> list[dict[str, Any]]:
    tail = [
        r
        for r in store.refusals(base["uri"])
        if r.get("kind") == "answer" and r.get("seq") == state["seq"]
    ]
    if len(tail) < threshold:
        return []
    return [
        {
            **base,
            "kind": "refused",
            "step": tail[-1].get("name"),
            "refusals": len(tail),
            "last_message": tail[-1].get("message"),
            "since": tail[0]["ts"],
        }
    ]


def _lapsed(state: dict[str, Any], base: dict[str, Any], clock: float) -> list[dict[str, Any]]:
    """The open actions of a team's branches whose claim's lease has lapsed (`tether claim`):
    whose, since when."""
    found = []
    for key, frame in state.get("runtime", {}).items():
        held = frame.get(Key.CLAIM)
        if held is None or millis(held["until"]) > clock * 1000:
            continue
        req: dict[str, Any] = next(
            (r for r in state.get("open", []) if node_key(r["path"] or ()) == key), {}
        )
        step = {"step": req.get("name"), "agent": held["agent"], "since": held["until"]}
        found.append({**base, "kind": Reply.LAPSED, **step})
    return found


def _age(since: str | None, now: float) -> float | None:
    return None if not since else round(max(0.0, now - millis(since) / 1000), 3)


def age_text(seconds: float | None) -> str:
    """An age as people read it: `40 s`, `3 min`, `5 h`, `2 d`."""
    if seconds is None:
        return "-"
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{int(seconds // size)} {unit}"
    return f"{int(seconds)} s"


def table(inbox: dict[str, Any]) -> str:
    """The waits as lines people read, oldest first."""
    if not inbox["waits"]:
        return "nothing waits on a person\n"
    lines = []
    for w in inbox["waits"]:
        head = (
            f"{w['kind'].upper():8} {w['name']}  {w['step'] or '-'}  {age_text(w['age_seconds'])}"
        )
        lines.append(head.replace("\n", " "))
        if w["kind"] == RequestType.HUMAN:
            lines.append(f"    asks: {w['prompt']}")
            lines += [f"    {k} = {v!r}" for k, v in w["shows"].items()]
            lines.append(f"    answer: {w['approve']}  |  {w['reject']}")
        elif w["kind"] == Reply.PARKED:
            lines.append(f"    why: {w['reason']}")
        elif w["kind"] == Reply.LAPSED:
            lines.append(f"    {w['agent']}'s claim lapsed: another agent may take it over")
        else:
            lines.append(f"    {w['refusals']} refused in a row; last: {w['last_message']}")
    if inbox["unreadable"]:
        lines.append(f"{inbox['unreadable']} execution(s) could not be read")
    return "".join(_printable(line) + "\n" for line in lines)


def _printable(line: str) -> str:
    """`line` with its control characters escaped, so a stored text cannot drive the terminal."""
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in line)
