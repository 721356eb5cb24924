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

from tether.engine.names import Kind, Reply, Status
from tether.engine.public import attempt_began, chain, node_at, side_by_side
from tether.engine.trace import MOVING, Token, next_retry, node_key, runs_again, settles
from tether.errors import TetherError

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
    to it (what is sent)."""

    __slots__ = (
        "attributes",
        "done",
        "end",
        "events",
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


def trace_id(state: dict[str, Any], first: int) -> int:
    """The execution's trace id: from its URI, creation time and the seq of its trace's first
    entry (a reset begins a new trace)."""
    return _id(f"{state['uri']}\n{state['created_at']}\n{first}", 16)


def spans(
    state: dict[str, Any],
    tree: dict[str, Any],
    entries: list[dict[str, Any]],
    since: int | None = None,
) -> tuple[int, list[Span]]:
    """The execution's trace id and its spans, the root first, then the attempts in the order
    they began; with `since`, only the spans done by the entries from seq `since` on (what a
    commit whose first entry is `since` completed), the others never built."""
    tid, made, _, _ = _read(state, tree, entries, since, entries[0]["seq"] if entries else 0)
    return tid, made


def tail_spans(
    state: dict[str, Any],
    tree: dict[str, Any],
    tail: list[dict[str, Any]],
    since: int,
    first: int,
    before: dict[str, Any] | None = None,
) -> tuple[int, list[Span]] | None:
    """What `spans(state, tree, entries, since)` gives, read from `tail`, the trace's entries
    from some seq at or before `since` on (`first` is the seq of the trace's first entry), or
    None when the tail begins too late to tell: an attempt it completes began before the tail's
    first entry that moved the execution, or where it began is not sure, or its retry number is
    not (an action with `retries` whose attempt before it is not in the tail and whose step
    token does not say), or the execution finished (its root span holds every entry outside an
    action) and the tail is not the whole trace. `before` is the state before the commit: its
    open requests' step tokens carry their attempts' retry numbers, and its frames where each
    of those attempts began (`attempt_began`, which places an attempt inside a `parallel`)."""
    asked = (before or {}).get("open") or []
    placed = _placed(tree, tail, asked, (before or {}).get("runtime") or {})
    tid, made, sure, reader = _read(state, tree, tail, since, first, placed=placed)
    whole = not tail or tail[0]["seq"] <= first
    if not (whole or sure) and asked:
        seeds = _seeds(reader, since, asked, placed)
        if seeds:
            tid, made, sure, _ = _read(state, tree, tail, since, first, seeds, placed)
    return (tid, made) if whole or sure else None


def _placed(
    tree: dict[str, Any],
    tail: list[dict[str, Any]],
    asked: list[dict[str, Any]],
    runtime: dict[str, dict[str, Any]],
) -> dict[str, int]:
    """The seq at which the attempt of each request in `asked` began, by its action's key, for
    those the frames in `runtime` place (`attempt_began`) inside `tail`: every entry of such an
    attempt is in the tail, and the first of its action's entries from that seq on is its
    first."""
    placed = {}
    for request in asked if tail else ():
        path = request.get("path")
        if not isinstance(path, list):  # the protocol gate's request
            continue
        try:
            began = attempt_began(tree, runtime, path)
        except TetherError:  # a path the tree does not have
            continue
        if began is not None and began >= tail[0]["seq"]:
            placed[node_key(path)] = began
    return placed


def _seeds(
    reader: _Reader, since: int, asked: list[dict[str, Any]], placed: dict[str, int]
) -> dict[tuple[str, int], int]:
    """The retry number of each attempt open at `since` that `asked` (the requests open then)
    gives a step token for, by its action's key and its first seq: the first begun where
    `placed` says it began, else the latest of the action and item begun before `since` unless
    it had settled, else the first begun after. Not for an inverted action: the reading takes
    its inverted answer's outcome as the answer's (`settles`), so its retry numbers there are
    not the step tokens'."""
    seeds = {}
    for request in asked:
        token = Token.parse(str(request.get("step")))
        if token is None or (reader.actions.get(token.key) or {}).get("invert"):
            continue
        item = (request.get("item") or {}).get("index")
        began = placed.get(token.key, -1)
        mine = [
            a
            for a in reader.attempts
            if (a.key, a.item) == (token.key, item) and a.first_seq >= began
        ]
        before = [a for a in mine if a.first_seq < since]
        after = [a for a in mine if a.first_seq >= since]
        if before and (before[-1].done_seq is None or before[-1].done_seq >= since):
            seeds[(token.key, before[-1].first_seq)] = token.retry
        elif after:
            seeds[(token.key, after[0].first_seq)] = token.retry
    return seeds


def _read(
    state: dict[str, Any],
    tree: dict[str, Any],
    entries: list[dict[str, Any]],
    since: int | None,
    first: int,
    seeds: dict[tuple[str, int], int] | None = None,
    placed: dict[str, int] | None = None,
) -> tuple[int, list[Span], bool, _Reader]:
    """The trace id and the spans `spans` gives, whether each of them was read whole from
    `entries` (`_Reader.sure`; never for the root), and the reader (`seeds`: its `retries`;
    `placed`: its `began`)."""
    tid = trace_id(state, first)
    common = {
        "tether.execution.uri": state["uri"],
        "tether.tree.name": tree["name"],
        "tether.tree.hash": state["tree_hash"],
        "gen_ai.conversation.id": state["uri"],
    }
    reader = _Reader(tree, state["salt"], _ns(state["created_at"]), seeds or {}, placed or {})
    for entry in entries:
        reader.read(entry)
    finished = state["status"] != Status.RUNNING
    last = entries[-1]["seq"] if entries else None
    made, sure = [], True
    if since is None or (finished and last is not None and last >= since):
        made.append(_root(tid, state, tree, common, reader, entries))
        sure = False
    root_id = _id(f"{tid}:workflow", 8)
    for attempt in reader.attempts:
        if attempt.outcome is None and finished:
            attempt.done_seq = last
        if since is None or (attempt.done_seq is not None and attempt.done_seq >= since):
            made.append(attempt.span(tid, root_id, reader.created, common, finished))
            sure = sure and reader.sure(attempt)
    return tid, made, sure, reader


# What the agent or a person wrote, withheld unless the user asks for it (`without_content`).
_CONTENT = frozenset(
    {
        "tether.note",
        "tether.answer.note",
        "tether.value",
        "tether.item",
        "tether.loop.item",
        "gen_ai.tool.call.arguments",
    }
)
_THOUGHT = ("tether.submitted", "tether.answer.submitted")  # a `think` entry's text


def without_content(made: list[Span]) -> list[Span]:
    """`made` without what the agent or a person wrote: notes, `$VAR` values, loop items, tool
    inputs, thoughts, and an error's message (which may be a note); what was asked, answered
    and judged stays."""
    for span in made:
        for attributes in (span.attributes, *(e.attributes for e in span.events)):
            thought = "think" in (
                attributes.get("tether.entry.kind"),
                attributes.get("tether.answer.kind"),
            )
            for key in [*_CONTENT, *(_THOUGHT if thought else ())]:
                attributes.pop(key, None)
        if span.status == "error":
            span.message = None
    return made


def _root(
    tid: int,
    state: dict[str, Any],
    tree: dict[str, Any],
    common: dict[str, Any],
    reader: _Reader,
    entries: list[dict[str, Any]],
) -> Span:
    """The workflow's span, from `created_at` to the last entry, closed once it finished."""
    root = Span(f"invoke_workflow {tree['name']}", _id(f"{tid}:workflow", 8), None, reader.created)
    root.attributes.update(
        common,
        **{
            "gen_ai.operation.name": "invoke_workflow",
            "gen_ai.workflow.name": tree["name"],
            # OpenInference's kind (Phoenix's convention), which has no kind for invoke_workflow.
            "openinference.span.kind": "CHAIN",
            "tether.status": state["status"],
        },
    )
    if tree.get("version") is not None:
        root.attributes["tether.tree.version"] = str(tree["version"])
    root.events = [_event(entry, None) for entry in reader.outside]
    if entries:
        root.end = _ns(entries[-1]["ts"])
    if state["status"] != Status.RUNNING and entries:
        root.done = True
        if state["status"] == Status.FAILED:
            root.status, root.message = "error", state.get("failure") or "the workflow failed"
        else:
            root.status = "ok"
    return root


class _Attempt:
    """One attempt of an action, as the trace is read: its entries (each with the token of the
    step it was recorded in), the answer it ends on so far, and its outcome once settled."""

    __slots__ = (
        "answer",
        "done_seq",
        "entries",
        "first_seq",
        "item",
        "key",
        "known",
        "last_step",
        "message",
        "name",
        "opened",
        "outcome",
        "retry",
        "start",
        "steps",
    )

    def __init__(
        self, key: str, node: dict[str, Any], item: int | None, retry: int, start: str
    ) -> None:
        self.key = key
        self.name: str = node["name"]
        self.steps: list[dict[str, Any]] = node["steps"]
        self.item = item
        self.retry = retry
        self.start = start  # when its first request was opened ("" for at creation)
        self.first_seq = -1
        self.last_step = -1
        self.opened = 0  # the seq at which its open step was opened
        self.outcome: str | None = None  # success or failure once settled
        self.message: str | None = None
        self.answer: tuple[dict[str, Any], int, str] | None = None  # entry, step, token
        self.entries: list[tuple[dict[str, Any], str | None]] = []
        self.done_seq: int | None = None
        self.known = False  # whether its retry number is sure (`_Reader.sure`)

    def token(self, step: int, salt: str) -> str:
        """The token of its step `step` as opened (the engine's `step_token`)."""
        return str(Token(self.key, step, self.retry, self.opened, salt))

    def span(
        self, tid: int, root_id: int, created: int, common: dict[str, Any], finished: bool
    ) -> Span:
        span = Span(
            f"invoke_agent {self.name}",
            _id(f"{tid}:{self.key}:{self.first_seq}", 8),
            root_id,
            _ns(self.start) if self.start else created,
        )
        span.attributes.update(
            common,
            **{
                "gen_ai.operation.name": "invoke_agent",
                "tether.action.name": self.name,
                "tether.action.path": self.key,
                "tether.attempt.retry": self.retry,
                "tether.outcome": self.outcome or ("halted" if finished else "open"),
            },
        )
        if self.item is not None:
            span.attributes["tether.loop.item"] = self.item
        if self.answer is not None:
            span.attributes.update(_answered(self.steps, *self.answer))
        span.events = [_event(entry, token) for entry, token in self.entries]
        span.end = max(span.start, *(event.time for event in span.events))
        span.status = {"success": "ok", "failure": "error"}.get(self.outcome or "", "unset")
        span.message = self.message
        span.done = self.done_seq is not None
        return span


class _Reader:
    """Reads entries in order, sorting each into an attempt or `outside` (the root's)."""

    def __init__(
        self,
        tree: dict[str, Any],
        salt: str,
        created: int,
        retries: dict[tuple[str, int], int],
        began: dict[str, int],
    ) -> None:
        self.tree = tree
        self.retries = retries  # retry numbers known beforehand, by key and first seq
        self.began = began  # where an action's open attempt began, by key, known beforehand
        self.salt = salt
        self.created = created
        self.attempts: list[_Attempt] = []
        self.outside: list[dict[str, Any]] = []
        self.latest: dict[str, _Attempt] = {}
        self.actions: dict[str, dict[str, Any] | None] = {}
        self.moved = (-1, "")  # the seq and time of the last entry that moved
        self.first_moved: int | None = None  # the seq of the first entry read that moved
        self.unsettled = 0  # how many of the `latest` attempts are not settled

    def read(self, entry: dict[str, Any]) -> None:
        cursor = entry.get("cursor") or {"path": [], "step": None}
        step = cursor["step"]
        if entry["kind"] == Kind.JUMP:  # the runtime starts afresh: what was open is left
            self.latest, self.unsettled = {}, 0
        again = runs_again(entry)
        if again is not None:  # a `repeat` runs its node again: what was open below is left
            self._leave(again)
        node = None if step is None else self._action(cursor["path"])
        if node is None:
            self.outside.append(entry)
        else:
            attempt = self._attempt(entry, cursor["path"], node)
            token = str(entry.get("step") or attempt.token(step, self.salt))
            # A check step is the runtime's, never a request: it has no token of its own.
            attempt.entries.append((entry, None if entry["kind"] == Kind.CHECK else token))
            settled = attempt.outcome is not None
            _settle(attempt, entry, step, token)
            self.unsettled -= not settled and attempt.outcome is not None
        if entry["kind"] in MOVING and entry.get("outcome") != Reply.RUNNING:
            self.moved = (entry["seq"], entry["ts"])
            if self.first_moved is None:
                self.first_moved = entry["seq"]

    def _leave(self, key: str) -> None:
        """Leave the open attempts of the actions below the node at `key` as they are, halted
        at the end: their actions' next entries begin new attempts."""
        for k in [k for k, a in self.latest.items() if a.outcome is None]:
            if not key or k.startswith(f"{key}."):
                del self.latest[k]
                self.unsettled -= 1

    def sure(self, attempt: _Attempt) -> bool:
        """Whether `attempt` reads the same from these entries as from the whole trace, when
        they are its tail: an entry that moved the execution was read before its first (its
        start and opened seq are that entry's); it began where `began` says, or at its first
        step, outside any `parallel`, while no other attempt read was open (so no earlier entry
        of it can lie before them); and its retry number is sure (its action has no `retries`,
        a jump began it, its number was given beforehand, or the attempt before it was sure)."""
        moved = self.first_moved
        return attempt.known and moved is not None and moved < attempt.first_seq

    def _action(self, path: list[int]) -> dict[str, Any] | None:
        key = node_key(path)
        if key not in self.actions:
            try:
                node: dict[str, Any] | None = node_at(self.tree, path)
            except Exception:  # a path the tree does not have: the entry stays on the root
                node = None
            self.actions[key] = node if node is not None and node["type"] == "action" else None
        return self.actions[key]

    def _attempt(self, entry: dict[str, Any], path: list[int], node: dict[str, Any]) -> _Attempt:
        key, item = node_key(path), entry.get("item")
        attempt = self.latest.get(key)
        began = self.began.get(key, entry["seq"] + 1)
        placed = began <= entry["seq"] and (attempt is None or attempt.first_seq < began)
        if placed or attempt is None or attempt.item != item or not _belongs(attempt, entry):
            alone = self.unsettled == 0
            attempt = self._begin(key, node, item, attempt, entry)
            alone = alone and entry["cursor"]["step"] == 0 and not self._parallel(path)
            attempt.known = attempt.known and (alone or placed)
        token = Token.parse(str(entry.get("step")))
        if token is not None:  # a recorded token says when its step was opened
            attempt.opened = token.opened
        return attempt

    def _parallel(self, path: list[int]) -> bool:
        """Whether the action at `path` lies inside a `parallel` node or a fanned-out
        `for_each`."""
        return bool(side_by_side(chain(self.tree, path)))

    def _begin(
        self,
        key: str,
        node: dict[str, Any],
        item: int | None,
        before: _Attempt | None,
        entry: dict[str, Any],
    ) -> _Attempt:
        """A new attempt of the action at `key` whose first entry is `entry`: a jump opens the
        action afresh (retry 0), else its retry number follows from the attempt `before`."""
        retry, jump = 0, entry["kind"] == Kind.JUMP
        if before is not None and before.item == item and before.outcome is not None and not jump:
            retry = next_retry(before.retry, before.outcome == "success", node.get("retries", 0))
        seeded = self.retries.get((key, entry["seq"]))
        attempt = _Attempt(key, node, item, retry if seeded is None else seeded, self.moved[1])
        attempt.first_seq, attempt.opened = entry["seq"], self.moved[0] + 1
        attempt.known = jump or seeded is not None or not node.get("retries")
        attempt.known = attempt.known or (before is not None and self.sure(before))
        self.attempts.append(attempt)
        self.unsettled += 1 - (before is not None and before.outcome is None)
        self.latest[key] = attempt
        return attempt


def _belongs(attempt: _Attempt, entry: dict[str, Any]) -> bool:
    """Whether `entry` is part of `attempt` (the latest of its action): the attempt is not
    settled yet, or the entry is a check the same answer ran after the step that settled it;
    never a jump to the action (an attempt it left open stays as it was, halted at the end)."""
    if entry["kind"] == Kind.JUMP:  # a jump opens its action's first step afresh
        return False
    if attempt.outcome is None:
        return True
    return entry["kind"] == Kind.CHECK and entry["cursor"]["step"] > attempt.last_step


def _settle(attempt: _Attempt, entry: dict[str, Any], step: int, token: str) -> None:
    """Take `entry` into `attempt`: the answer it ends on, and its outcome once settled."""
    kind, outcome = entry["kind"], entry.get("outcome")
    if kind not in MOVING:
        return
    if attempt.outcome is None and kind != Kind.CHECK:
        attempt.answer = (entry, step, token)
    attempt.last_step = max(attempt.last_step, step)
    if outcome == Reply.RUNNING:
        return
    attempt.opened = entry["seq"] + 1
    ended = settles(entry, len(attempt.steps) - 1)
    if ended is False:
        attempt.outcome = "failure"
        attempt.message = entry.get("note") or (
            f"check {entry['submitted']} {outcome}" if kind == Kind.CHECK else f"{kind} {outcome}"
        )
    elif ended and attempt.outcome is None:
        attempt.outcome = "success"
    if attempt.outcome is not None:
        attempt.done_seq = entry["seq"]


def _answered(
    steps: list[dict[str, Any]], entry: dict[str, Any], step: int, token: str
) -> dict[str, Any]:
    """The attributes of the answer an attempt ends on: the request it answered and what came
    back."""
    request = steps[step] if 0 <= step < len(steps) else {}
    asked = next((k for k in ("instruct", "evaluate", "human", "check") if k in request), "")
    answer = {
        "tether.step.index": step,
        "tether.step.token": token,
        "tether.request.type": asked or entry["kind"],
        "tether.request.text": str(request.get(asked, "")),
        "tether.answer.kind": entry["kind"],
        "tether.answer.outcome": str(entry.get("outcome")),
    }
    for field in ("submitted", "note", "by"):
        if entry.get(field) is not None:
            answer[f"tether.answer.{field}"] = _text(entry[field])
    return answer


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
    if kind == Kind.TOOL:
        name = "tether.tool"
        attributes["gen_ai.tool.name"] = str(entry["tool"])
        attributes["gen_ai.tool.call.arguments"] = _text(entry.get("input"))
        ok = entry.get("ok")
        attributes["tether.tool.ok"] = "unknown" if ok is None else str(bool(ok)).lower()
    elif kind == Kind.VAR_WRITE:
        attributes["tether.value"] = _text(entry.get("value"))
    elif kind in (Kind.EVALUATE, Kind.INSTRUCT, Kind.CLOSE, Kind.JUMP):
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
