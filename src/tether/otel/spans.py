"""A stored execution as OpenTelemetry spans: the one reading of a trace as a span tree.

Owns the span structure that `tether export otel` sends and the live emission sends as an
execution goes (`tether.otel.send`), so both send the same spans for the same execution:

- the execution is one trace, its root span `invoke_workflow {tree}` (the `gen_ai` conventions'
  workflow span) from `created_at` to the last entry, its status the execution's;
- each attempt of an action is a child span `invoke_agent {action}` (the agent is asked to do
  the action) from the time its first request was opened to the entry that settled it, with the
  answer that settled it (its step token, request, submitted value, outcome, note), its retry
  number (the action's own `retries` used, as its step tokens count them) and its loop item;
- every entry of an attempt is an event of its span: the answers, the checks, the tool calls
  recorded as evidence, the refused or allowed stops, a person's answer, the `$VAR` writes and
  thoughts; entries that belong to no action (the protocol gate, a `when` or loop condition, a
  reset, an independent action) are events of the root span.

Every span carries the execution's URI, the tree's name and hash (Tether's attributes are named
under `tether.`). Times are the trace's own, and trace and span ids are derived from the
execution's URI, its creation time and the entries' sequence numbers, so the same execution
always gives the same spans: an export sent twice, or after the live emission, names the same
spans again.

It is pure: it reads the state, the tree and the entries it is given and imports no
OpenTelemetry package (sending is `tether.otel.send`'s). An attempt still open when the
execution finished (a branch a `parallel` halted) ends at the last entry, its outcome `halted`;
while the execution runs, its open attempts and the root are not `done` and are not sent.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime, timedelta
from typing import Any

from tether.engine.core import node_at

# Entry kinds that answer a step or record what the runtime judged: the commits that open the
# next request write one of them last before opening it.
_MOVES = ("protocol", "evaluate", "instruct", "human", "check", "close", "jump", "reset")
# Outcomes that settle an attempt whatever its step.
_FAILED = ("action_failed", "evaluation_failed", "failed", "error", "failure")
# Outcomes that settle an attempt when its last step gives them.
_PASSED = ("evaluation_passed", "success", "passed")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


class Event:
    """A point in a span: `name`, `time` (ns since the epoch) and `attributes`."""

    __slots__ = ("attributes", "name", "time")

    def __init__(self, name: str, time: int, attributes: dict[str, Any]) -> None:
        self.name = name
        self.time = time
        self.attributes = attributes


class Span:
    """One span: ids as integers (`parent_id` None for the root), times in ns since the epoch,
    `status` `ok`, `error` (with `message`) or `unset`; `done` once nothing more can be added
    to it, and `last_seq`, the seq of the entry that made it so (None while not done)."""

    __slots__ = (
        "attributes",
        "done",
        "end",
        "events",
        "last_seq",
        "message",
        "name",
        "parent_id",
        "span_id",
        "start",
        "status",
    )

    def __init__(self, name: str, span_id: int, parent_id: int | None, start: int) -> None:
        self.name = name
        self.span_id = span_id
        self.parent_id = parent_id
        self.start = start
        self.end = start
        self.attributes: dict[str, Any] = {}
        self.events: list[Event] = []
        self.status = "unset"
        self.message: str | None = None
        self.done = False
        self.last_seq: int | None = None


def trace_id(state: dict[str, Any], entries: list[dict[str, Any]]) -> int:
    """The execution's trace id: from its URI, creation time and first entry (a reset begins
    a new trace)."""
    first = entries[0]["seq"] if entries else 0
    return _id(f"{state['uri']}\n{state['created_at']}\n{first}", 16)


def spans(
    state: dict[str, Any], tree: dict[str, Any], entries: list[dict[str, Any]]
) -> tuple[int, list[Span]]:
    """The execution's trace id and its spans, the root first, then the attempts in the order
    they began."""
    tid = trace_id(state, entries)
    common = {
        "tether.execution.uri": state["uri"],
        "tether.tree.name": tree["name"],
        "tether.tree.hash": state["tree_hash"],
        "gen_ai.conversation.id": state["uri"],
    }
    root = Span(
        f"invoke_workflow {tree['name']}", _id(f"{tid}:workflow", 8), None, _ns(state["created_at"])
    )
    root.attributes.update(
        common,
        **{
            "gen_ai.operation.name": "invoke_workflow",
            "gen_ai.workflow.name": tree["name"],
            # OpenInference's kind (Phoenix's convention), which has no kind for invoke_workflow.
            "openinference.span.kind": "CHAIN",
        },
    )
    if tree.get("version") is not None:
        root.attributes["tether.tree.version"] = str(tree["version"])
    reader = _Reader(tid, root, tree, state["salt"], common)
    for entry in entries:
        reader.read(entry)
    _finish(root, state, entries, reader.attempts)
    return tid, [root, *(attempt.span for attempt in reader.attempts)]


class _Attempt:
    """One attempt of an action while the trace is read."""

    __slots__ = ("item", "key", "last_step", "opened", "outcome", "retry", "salt", "span", "steps")

    def __init__(
        self, key: str, steps: list[dict[str, Any]], item: int | None, retry: int, salt: str
    ) -> None:
        self.key = key
        self.salt = salt
        self.steps = steps
        self.item = item
        self.retry = retry
        self.last_step = -1
        self.opened = 0  # the seq at which its open step was opened
        self.outcome: str | None = None  # success or failure once settled
        self.span: Span

    def token(self, step: int) -> str:
        """The token of its step `step` as opened (the engine's `step_token`)."""
        return f"{self.key or '-'}:{step}:{self.retry}:{self.opened}:{self.salt}"


class _Reader:
    """Reads entries in order, sorting each into the root or an attempt."""

    def __init__(
        self, tid: int, root: Span, tree: dict[str, Any], salt: str, common: dict[str, Any]
    ) -> None:
        self.tid = tid
        self.root = root
        self.tree = tree
        self.salt = salt
        self.common = common
        self.attempts: list[_Attempt] = []
        self.latest: dict[str, _Attempt] = {}
        self.moved = (-1, root.start)  # the seq and time of the last entry that moved

    def read(self, entry: dict[str, Any]) -> None:
        cursor = entry.get("cursor") or {"path": [], "step": None}
        node = self._action(cursor["path"]) if cursor["step"] is not None else None
        if node is None:
            self.root.events.append(_event(entry, None))
        else:
            attempt = self._attempt(entry, cursor["path"], node)
            token = str(entry.get("step") or attempt.token(cursor["step"]))
            # A check step is the runtime's, never a request: it has no token of its own.
            attempt.span.events.append(_event(entry, None if entry["kind"] == "check" else token))
            _settle(attempt, entry, cursor["step"], token)
        if entry["kind"] in _MOVES and entry.get("outcome") != "running":
            self.moved = (entry["seq"], _ns(entry["ts"]))

    def _action(self, path: list[int]) -> dict[str, Any] | None:
        try:
            node = node_at(self.tree, path)
        except Exception:  # a path the tree does not have: the entry stays on the root
            return None
        return node if node["type"] == "action" else None

    def _attempt(self, entry: dict[str, Any], path: list[int], node: dict[str, Any]) -> _Attempt:
        key, item = ".".join(map(str, path)), entry.get("item")  # the engine's node key
        attempt = self.latest.get(key)
        if attempt is None or attempt.item != item or not _belongs(attempt, entry):
            attempt = self._begin(key, node, item, attempt)
        if "step" in entry:  # a recorded token says when its step was opened
            attempt.opened = int(str(entry["step"]).split(":")[3])
        return attempt

    def _begin(
        self,
        key: str,
        node: dict[str, Any],
        item: int | None,
        before: _Attempt | None,
    ) -> _Attempt:
        retry = 0
        if (
            before is not None
            and before.item == item
            and before.outcome == "failure"
            and before.retry < node.get("retries", 0)
        ):
            retry = before.retry + 1
        attempt = _Attempt(key, node["steps"], item, retry, self.salt)
        attempt.opened = self.moved[0] + 1
        span = Span(
            f"invoke_agent {node['name']}",
            _id(f"{self.tid}:{key}:{self.moved[0]}:{len(self.attempts)}", 8),
            self.root.span_id,
            self.moved[1],
        )
        span.attributes.update(
            self.common,
            **{
                "gen_ai.operation.name": "invoke_agent",
                "tether.action.name": node["name"],
                "tether.action.path": key,
                "tether.attempt.retry": retry,
            },
        )
        if item is not None:
            span.attributes["tether.loop.item"] = item
        attempt.span = span
        self.attempts.append(attempt)
        self.latest[key] = attempt
        return attempt


def _belongs(attempt: _Attempt, entry: dict[str, Any]) -> bool:
    """Whether `entry` is part of `attempt` (the latest of its action): the attempt is not
    settled yet, or the entry is a check the same answer ran after the step that settled it."""
    if attempt.outcome is None:
        return True
    return entry["kind"] == "check" and entry["cursor"]["step"] > attempt.last_step


def _settle(attempt: _Attempt, entry: dict[str, Any], step: int, token: str) -> None:
    """Take `entry` into `attempt`: its answer, and the attempt's outcome once it is settled."""
    span = attempt.span
    span.end = max(span.end, _ns(entry["ts"]))
    kind, outcome = entry["kind"], entry.get("outcome")
    if kind not in _MOVES:
        return
    if attempt.outcome is None and kind != "check":  # the answer it ends on, so far
        request = attempt.steps[step] if 0 <= step < len(attempt.steps) else {}
        asked = next((k for k in ("instruct", "evaluate", "human", "check") if k in request), kind)
        answer = {
            "tether.step.index": step,
            "tether.step.token": token,
            "tether.request.type": asked,
            "tether.request.text": str(request.get(asked, "")),
            "tether.answer.kind": kind,
            "tether.answer.outcome": str(outcome),
        }
        for field in ("submitted", "note", "by"):
            if entry.get(field) is not None:
                answer[f"tether.answer.{field}"] = _text(entry[field])
        span.attributes = {
            **{k: v for k, v in span.attributes.items() if not k.startswith("tether.answer.")},
            **answer,
        }
    attempt.last_step = max(attempt.last_step, step)
    if outcome == "running":
        return
    attempt.opened = entry["seq"] + 1
    if outcome in _FAILED:
        attempt.outcome, span.status = "failure", "error"
        span.message = entry.get("note") or (
            f"check {entry['submitted']} {outcome}" if kind == "check" else f"{kind} {outcome}"
        )
    elif attempt.outcome is None and (
        outcome in ("action_complete", "closed")
        or (step == len(attempt.steps) - 1 and outcome in _PASSED)
    ):
        attempt.outcome, span.status = "success", "ok"
    if attempt.outcome is not None:
        span.done, span.last_seq = True, entry["seq"]


def _finish(
    root: Span, state: dict[str, Any], entries: list[dict[str, Any]], attempts: list[_Attempt]
) -> None:
    """Close the root, and the attempts a finished execution left open, at the last entry."""
    status = state["status"]
    root.attributes["tether.status"] = status
    if not entries:
        return
    root.end = _ns(entries[-1]["ts"])
    finished = status != "running"
    for attempt in attempts:
        outcome = attempt.outcome or ("halted" if finished else "open")
        attempt.span.attributes["tether.outcome"] = outcome
        if outcome == "halted":
            attempt.span.done, attempt.span.last_seq = True, entries[-1]["seq"]
    if finished:
        root.done, root.last_seq = True, entries[-1]["seq"]
        if status == "failed":
            root.status, root.message = "error", state.get("failure") or "the workflow failed"
        else:
            root.status = "ok"


def _event(entry: dict[str, Any], token: str | None) -> Event:
    """The span event of one trace entry."""
    kind = entry["kind"]
    attributes: dict[str, Any] = {"tether.seq": entry["seq"], "tether.entry.kind": kind}
    if entry.get("name") is not None:
        attributes["tether.action.name"] = entry["name"]
    if token is not None:
        attributes["tether.step.token"] = token
    if entry.get("outcome") is not None:
        attributes["tether.outcome"] = str(entry["outcome"])
    for field in ("submitted", "note", "by", "on", "item", "cap", "path"):
        if entry.get(field) is not None:
            attributes[f"tether.{field}"] = _text(entry[field])
    name = f"tether.{kind}"
    if kind == "tool":
        name = "tether.tool"
        attributes["gen_ai.tool.name"] = str(entry["tool"])
        attributes["gen_ai.tool.call.arguments"] = _text(entry.get("input"))
        ok = entry.get("ok")
        attributes["tether.tool.ok"] = "unknown" if ok is None else str(bool(ok)).lower()
    elif kind == "var_write":
        attributes["tether.value"] = _text(entry.get("value"))
    elif kind in ("evaluate", "instruct", "close", "jump"):
        name = "tether.answer"
    return Event(name, _ns(entry["ts"]), attributes)


def _text(value: Any) -> str | int | bool:
    """An attribute value: text, a whole number or a boolean as they are, anything else as
    JSON."""
    if isinstance(value, str | bool | int):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _id(text: str, size: int) -> int:
    """A non-zero id of `size` bytes derived from `text`."""
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:size], "big") or 1


def _ns(ts: str) -> int:
    """An ISO 8601 UTC time (`2026-01-01T09:30:00.123Z`) as ns since the epoch."""
    moment = datetime.fromisoformat(ts.replace("Z", "+00:00"))
    return (moment - _EPOCH) // _MICROSECOND * 1000
