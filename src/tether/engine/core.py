"""The pure semantics of a running tree: ticking, answers, and the phase machine.

Owns: what each node type does (sequence, selector, parallel, action), the modifiers (`retries`,
`optional`, `when`, `for_each`, `repeat`, `invert`; their order on one node is in `_Ticker.tick`
and docs/semantics.md), steps (`evaluate`, `instruct`, `check`, `human`, `writes`), the protocol
gate, step tokens, the trace entries each answer produces, and what an answer's response
carries: `next`, the request `next` would return right after it. An answer may carry `values`:
var writes applied before it is judged, in the same outcome, as `var_write` entries of the
answered step.
Every function here is pure: it takes the normalised tree (`tether.tree`'s `data` dict), the
execution state and an answer, and returns a new state, a response and the new trace entries.
There is no I/O and no clock: the caller passes `now`.

It does not own persistence (the store), concurrency (the verbs commit with compare-and-swap), the
tree format (`tether.tree`), or argument parsing (the CLI and MCP edges).

State layout (a plain JSON dict; the store persists it as is):
- `runtime` maps a node key ("" for the root, "0.2" for the third child of the first child) to a
  frame, only for nodes that are entered and not finished, so a step costs O(depth), whatever the
  tree's size: `i` current child (sequence/selector), `res` child results (parallel), `k` step
  index, `o` the trace seq at which the open step was opened, `w` var paths written while it was
  open, `x` a failure waiting to propagate (action), `r` retries used (any node), `t` the seq of
  the first tool call recorded during this attempt of an action whose checks read `TOOLS`; a
  loop adds `e` the items of a `for_each` (its list as evaluated on entry) with `n` the index of
  the current one, and `p` the runs of a `repeat` done. A new run keeps the keys of the loops
  outside it (`_LEVELS`) and starts the rest afresh.
- `open` is the list of open requests in declaration order; `next` returns the first.
- `seq` is the next trace sequence number; it never goes back, not even across a reset.
- `stops` (only while non-zero) counts the `stop` entries refused in a row since the last answer.

Two answers come from a harness session bound to the execution (`tether.guard.binding`), not from
the agent's own calls: `Stop` (the agent tried to end its turn) and `ToolCall` (a tool call it
made). They are recorded like any other answer, so replay reproduces them, and they never move
the cursor. What a `check` sees as `TOOLS` comes from the trace: the caller of `apply` passes the
`tool` entries from `tools_since(state)` on (`tool_records`), and each check takes those of its
own action's attempt; the state only keeps where that attempt's calls begin.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from typing import Any

from tether.engine.protocol import GATE_NAME, PROTOCOL_TEXT
from tether.engine.varpath import write_path
from tether.errors import TetherError

SCHEMA_VERSION = 1

RUNNING = "running"
SUCCESS = "success"
FAILURE = "failure"

SUBMIT_STATUSES = ("success", "failure", "running")
# The note of a `stop` let through because nothing open is the agent's to answer.
PERSON_NOTE = "every open step waits on a person (tether approve or reject, or the viewer)"

# An evaluator of CEL conditions: (expression, var, const, tools, names) -> bool, raising an
# exception whose str() is the reason when the expression cannot be evaluated. `tools` is what
# the expression sees as TOOLS: the tool calls recorded during the enclosing action's attempt,
# each {tool, input, ok, seq} (empty for `when`, `until`). `names` are the further names it
# sees: ITEM, ITEM_INDEX, ITEMS inside a `for_each` (empty elsewhere). Injected so the engine
# stays pure and the CEL library is loaded only when a tree uses `check`, `when` or `repeat`. A
# `for_each` list is evaluated by `default_list`, loaded the same way.
Condition = Callable[
    [str, dict[str, Any], dict[str, Any], list[dict[str, Any]], dict[str, Any]], bool
]

# The loop keys of a frame, outermost first: a `for_each`'s items and index, a `repeat`'s runs
# done, the retries used. Another run at one level keeps the keys before it.
_LEVELS = ("e", "n", "p", "r")


class Eval:
    """Answer an evaluate step: the precondition holds (True) or not. `values` (var path →
    value) are written first, recorded against the answered step."""

    __slots__ = ("note", "result", "step", "values")

    def __init__(
        self,
        result: bool,
        note: str | None = None,
        step: str | None = None,
        values: dict[str, Any] | None = None,
    ) -> None:
        self.result = result
        self.note = note
        self.step = step
        self.values = values


class Submit:
    """Answer an instruct step with `success`, `failure` or `running`; `values` as for `Eval`."""

    __slots__ = ("note", "status", "step", "values")

    def __init__(
        self,
        status: str,
        note: str | None = None,
        step: str | None = None,
        values: dict[str, Any] | None = None,
    ) -> None:
        self.status = status
        self.note = note
        self.step = step
        self.values = values


class Human:
    """A person's answer to a human step (the one `step` names, else the first open one):
    approved (True) or rejected, with a note and where it came from (`by`: cli, viewer)."""

    __slots__ = ("approved", "by", "note", "step")

    def __init__(
        self, approved: bool, by: str, note: str | None = None, step: str | None = None
    ) -> None:
        self.approved = approved
        self.by = by
        self.note = note
        self.step = step


class Think:
    """Record a checkpoint thought on the action in flight (the open step named by `step`, else
    the first open step)."""

    __slots__ = ("step", "thought")

    def __init__(self, thought: str, step: str | None = None) -> None:
        self.thought = thought
        self.step = step


class VarWrite:
    """Write `value` at the dotted `path` of `var`. The trace entry is recorded against the open
    step named by `step` (else the first open step); every open step that lists the path in its
    `writes` counts it."""

    __slots__ = ("path", "step", "value")

    def __init__(self, path: str, value: Any, step: str | None = None) -> None:
        self.path = path
        self.value = value
        self.step = step


class Reset:
    """Clear the trace and runtime, restore the scopes, re-arm the gate."""

    __slots__ = ()


class Jump:
    """Move the cursor to the action at `path` (child indices from the root), out of order.

    Used by the bot tool surface; recorded in the trace as a `jump` entry."""

    __slots__ = ("note", "path")

    def __init__(self, path: list[int], note: str | None = None) -> None:
        self.path = list(path)
        self.note = note


class Close:
    """Mark the action of the open step (or of `step`) done and move on, provided its `check`
    steps hold and its remaining `writes` were written. Recorded as a `close` entry."""

    __slots__ = ("note", "step")

    def __init__(self, note: str | None = None, step: str | None = None) -> None:
        self.note = note
        self.step = step


class Stop:
    """The agent tried to end its turn while the execution runs. Refused while fewer than `cap`
    refusals in a row went without an answer; the stop after them is let through, and the count
    starts again. Let through at once, with a note saying why, while every open step is a human
    step (a person answers it, not the agent). Recorded as a `stop` entry against the first
    open step the agent answers (else the first)."""

    __slots__ = ("cap",)

    def __init__(self, cap: int) -> None:
        self.cap = cap


class ToolCall:
    """A tool call the agent made while a step was open (`ok`: it did not fail), recorded as a
    `tool` entry against the open step named by `step` (else the first). An open action whose
    `check` steps read `TOOLS` keeps it for them until the action's attempt ends."""

    __slots__ = ("input", "ok", "step", "tool")

    def __init__(self, tool: str, input: Any, ok: bool, step: str | None = None) -> None:
        self.tool = tool
        self.input = input
        self.ok = ok
        self.step = step


Answer = Eval | Submit | Human | Think | VarWrite | Reset | Jump | Close | Stop | ToolCall


class Outcome:
    """What one answer did: the new state, the response for the agent, the new trace entries,
    and `events`: what happened to nodes, in order — `(key, "success" | "failure" | "skipped")`
    when a node finished, or finished one run of a loop (its own result, after `invert`, before
    `optional`), then `(key, "retry")`, `(key, "repeat")` or `(key, "item")` when it was reset
    for another attempt, another run of its `repeat` or its next `for_each` item. Nodes whose
    frames vanished without an event were halted."""

    __slots__ = ("entries", "events", "response", "state")

    def __init__(
        self,
        state: dict[str, Any],
        response: dict[str, Any],
        entries: list[dict[str, Any]] | None = None,
        events: list[tuple[str, str]] | None = None,
    ) -> None:
        self.state = state
        self.response = response
        self.entries = entries if entries is not None else []
        self.events = events if events is not None else []

    @property
    def changed(self) -> bool:
        return bool(self.entries)


def default_condition(
    expression: str,
    var: dict[str, Any],
    const: dict[str, Any],
    tools: list[dict[str, Any]],
    names: dict[str, Any],
) -> bool:
    from tether.tree.expressions import evaluate_condition

    return evaluate_condition(expression, var, const, tools, names)


def default_list(
    expression: str, var: dict[str, Any], const: dict[str, Any], names: dict[str, Any]
) -> list[Any]:
    """A `for_each` list: the value of `expression`, which must be a list of JSON values."""
    from tether.tree.expressions import evaluate_list

    return evaluate_list(expression, var, const, names)


# --------------------------------------------------------------------------------------------
# Creating and resetting


def initial_state(
    tree: dict[str, Any],
    *,
    uri: str,
    tree_uri: str,
    tree_hash: str,
    now: str,
    salt: str,
    var: dict[str, Any] | None = None,
    const: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A fresh, gated execution. `var`/`const` override the tree's initial scopes, key by key."""
    scopes = {
        "var": {**copy.deepcopy(tree["state"]["var"]), **(var or {})},
        "const": {**copy.deepcopy(tree["state"]["const"]), **(const or {})},
    }
    state: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "uri": uri,
        "tree_uri": tree_uri,
        "tree_hash": tree_hash,
        "tree_name": tree["name"],
        "salt": salt,
        "status": "running",
        "phase": "protocol",
        "cursor": None,
        "open": [],
        "protocol_accepted": False,
        "var": copy.deepcopy(scopes["var"]),
        "const": copy.deepcopy(scopes["const"]),
        "initial": scopes,
        "runtime": {},
        "failure": None,
        "seq": 0,
        "since_reset": 0,
        "revision": 0,
        "created_at": now,
        "updated_at": now,
    }
    _open_gate(state)
    return state


def _open_gate(state: dict[str, Any]) -> None:
    state["open"] = [
        {
            "type": "instruct",
            "name": GATE_NAME,
            "instruction": PROTOCOL_TEXT,
            "step": f"gate:0:0:{state['seq']}:{state['salt']}",
            "path": None,
            "index": 0,
        }
    ]
    state["phase"] = "protocol"
    state["cursor"] = None


def _pristine(state: dict[str, Any]) -> dict[str, Any]:
    out = dict(state)
    out.update(
        status="running",
        protocol_accepted=False,
        var=copy.deepcopy(state["initial"]["var"]),
        const=copy.deepcopy(state["initial"]["const"]),
        runtime={},
        failure=None,
        since_reset=0,
    )
    out.pop("stops", None)
    return out


# --------------------------------------------------------------------------------------------
# Reading


def current(state: dict[str, Any]) -> dict[str, Any]:
    """The response of `next`: the first open request, or the terminal status."""
    if state["status"] == "complete":
        return {"status": "done"}
    if state["status"] == "failed":
        out: dict[str, Any] = {"status": "failure"}
        if state.get("failure"):
            out["message"] = state["failure"]
        return out
    return dict(state["open"][0])


def all_open(state: dict[str, Any]) -> list[dict[str, Any]]:
    """Every open request (several inside a `parallel`), or the terminal status as one item."""
    if state["status"] != "running":
        return [current(state)]
    return [dict(r) for r in state["open"]]


# --------------------------------------------------------------------------------------------
# Answering


def apply(
    tree: dict[str, Any],
    state: dict[str, Any],
    answer: Answer,
    now: str,
    condition: Condition = default_condition,
    tools: list[dict[str, Any]] | None = None,
) -> Outcome:
    """Apply one answer. Raises `TetherError` (and leaves `state` untouched) if it is refused.
    `tools` are the `tool_records` of the trace from `tools_since(state)` on (more is fine)."""
    work = _copy_state(state)
    if isinstance(answer, Reset):
        return _reset(state, work, now)
    if state["status"] != "running":
        raise TetherError(
            "execution_finished",
            f"the execution is {state['status']}; nothing more can be answered "
            "(reset to start over)",
            current=current(state),
        )
    if isinstance(answer, VarWrite):
        return _var_write(work, answer, now)
    if isinstance(answer, Think):
        return _think(work, answer, now)
    if isinstance(answer, Stop):
        return _stop(work, answer, now)
    if isinstance(answer, ToolCall):
        return _tool_call(tree, work, answer, now)
    outcome = _move(tree, work, answer, now, condition, tools or [])
    outcome.state.pop("stops", None)
    return outcome


def tools_since(state: dict[str, Any]) -> int | None:
    """The seq from which an answer's checks may read `tool` entries (None: they read none)."""
    found = [f["t"] for f in state["runtime"].values() if "t" in f]
    return min(found) if found else None


def tool_records(entries: Iterable[dict[str, Any]], since: int | None) -> list[dict[str, Any]]:
    """What checks see of the `tool` entries with `seq >= since`: `{tool, input, ok, seq}`."""
    if since is None:
        return []
    return [
        {"tool": e["tool"], "input": e.get("input"), "ok": e["ok"], "seq": e["seq"]}
        for e in entries
        if e["kind"] == "tool" and e["seq"] >= since
    ]


def _move(
    tree: dict[str, Any],
    work: dict[str, Any],
    answer: Eval | Submit | Human | Jump | Close,
    now: str,
    condition: Condition,
    tools: list[dict[str, Any]],
) -> Outcome:
    """Apply an answer that may move the cursor."""
    if isinstance(answer, Eval):
        req = _select(work, answer.step, "evaluate", "eval")
        return _with_values(tree, work, req, answer, now, condition, tools)
    if isinstance(answer, Submit):
        if answer.status not in SUBMIT_STATUSES:
            raise TetherError(
                "invalid_value",
                f"submit status must be one of {', '.join(SUBMIT_STATUSES)}, got {answer.status!r}",
            )
        req = _select(work, answer.step, "instruct", "submit")
        return _with_values(tree, work, req, answer, now, condition, tools)
    if isinstance(answer, Human):
        req = _select_human(work, answer.step)
        return _answer(tree, work, req, answer, now, condition, tools)
    if isinstance(answer, Jump):
        return _jump(tree, work, answer, now, condition)
    if isinstance(answer, Close):
        return _close(tree, work, answer, now, condition, tools)
    raise TypeError(f"not an answer: {answer!r}")


def _copy_state(state: dict[str, Any]) -> dict[str, Any]:
    out = dict(state)
    out["runtime"] = {k: _copy_frame(v) for k, v in state["runtime"].items()}
    out["open"] = list(state["open"])
    return out


def _copy_frame(frame: dict[str, Any]) -> dict[str, Any]:
    out = dict(frame)
    for key in ("res", "w"):
        if key in out:
            out[key] = list(out[key])
    return out


def _select(state: dict[str, Any], token: str | None, kind: str, verb: str) -> dict[str, Any]:
    open_ = state["open"]
    if token is None:
        req = open_[0]
    else:
        found = [r for r in open_ if r["step"] == token]
        if not found:
            raise TetherError(
                "stale_step",
                f"step token {token!r} does not name an open step of this execution "
                "(it was already answered, belongs to an earlier attempt, or to another execution)",
                current=dict(open_[0]),
                open=[dict(r) for r in open_],
            )
        req = found[0]
    if req["type"] == "human":
        raise TetherError(
            "human_only",
            f"step {req['name']!r} is for a person to answer (tether approve or reject, or the "
            f"viewer), not for {verb}: tell the user what it asks and wait",
            current=dict(req),
        )
    if req["type"] != kind:
        other = "submit" if verb == "eval" else "eval"
        raise TetherError(
            "wrong_phase",
            f"{verb} answers an {kind} step, but the open step {req['name']!r} is an "
            f"{req['type']}; answer it with {other}",
            current=dict(req),
        )
    return req


def _select_human(state: dict[str, Any], token: str | None) -> dict[str, Any]:
    """The open human step `token` names, else the first open one; `wrong_phase` if none is
    open (or the token names a step that is not one)."""
    humans = [r for r in state["open"] if r["type"] == "human"]
    if token is not None:
        req = next((r for r in state["open"] if r["step"] == token), None)
        if req is None:
            raise TetherError(
                "stale_step",
                f"step token {token!r} does not name an open step of this execution",
                current=dict(state["open"][0]),
                open=[dict(r) for r in state["open"]],
            )
        humans = [req] if req["type"] == "human" else []
    if not humans:
        first = state["open"][0]
        raise TetherError(
            "wrong_phase",
            f"no human step is open: the open step {first['name']!r} is an {first['type']}, "
            "answered by the agent",
            current=dict(first),
        )
    return humans[0]


def _with_values(
    tree: dict[str, Any],
    state: dict[str, Any],
    req: dict[str, Any],
    answer: Eval | Submit,
    now: str,
    condition: Condition,
    tools: list[dict[str, Any]],
) -> Outcome:
    """Write the answer's `values` (each a `var_write` entry of the answered step), then judge
    the answer on the state they made: one outcome, so a refusal of either refuses both."""
    entries: list[dict[str, Any]] = []
    for path, value in (answer.values or {}).items():
        written = _var_write(state, VarWrite(path, value, req["step"]), now)
        state = written.state
        entries += written.entries
    if req["path"] is None:
        assert isinstance(answer, Submit)  # `_select` lets only submit reach the gate
        outcome = _answer_gate(tree, state, answer, now, condition)
    else:
        outcome = _answer(tree, state, req, answer, now, condition, tools)
    outcome.entries[:0] = entries
    return outcome


def _entry(
    state: dict[str, Any], kind: str, now: str, req: dict[str, Any] | None, **fields: Any
) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "seq": state["seq"],
        "ts": now,
        "kind": kind,
        "cursor": _cursor_of(req),
        "name": req["name"] if req else None,
    }
    if req is not None and "item" in req:
        entry["item"] = req["item"]["index"]
    entry.update({k: v for k, v in fields.items() if v is not None})
    state["seq"] += 1
    state["since_reset"] += 1
    return entry


def _cursor_of(req: dict[str, Any] | None) -> dict[str, Any] | None:
    if req is None or req["path"] is None:
        return None
    return {"path": list(req["path"]), "step": req["index"]}


def _reset(state: dict[str, Any], work: dict[str, Any], now: str) -> Outcome:
    if state["since_reset"] == 0:
        return Outcome(
            state, {"status": "reset", "message": "The execution is already at its start."}
        )
    out = _pristine(work)
    entry = {
        "seq": out["seq"],
        "ts": now,
        "kind": "reset",
        "cursor": None,
        "name": None,
        "outcome": "reset",
    }
    out["seq"] += 1
    _open_gate(out)
    return Outcome(
        out,
        {"status": "reset", "message": "Trace cleared, scopes restored, protocol gate re-armed."},
        [entry],
    )


def _var_write(state: dict[str, Any], answer: VarWrite, now: str) -> Outcome:
    req = _attributed(state, answer.step) if state["protocol_accepted"] else None
    state["var"] = write_path(state["var"], answer.path, answer.value)
    entry = _entry(
        state, "var_write", now, req, path=answer.path, value=answer.value, outcome="written"
    )
    for r in state["open"]:
        if r["path"] is not None and r.get("writes"):
            frame = state["runtime"][_key(r["path"])]
            frame["w"] = [*frame.get("w", []), answer.path]
    return Outcome(
        state, {"status": "written", "path": answer.path, "value": answer.value}, [entry]
    )


def _attributed(state: dict[str, Any], token: str | None) -> dict[str, Any]:
    """The open step a var write or a thought is recorded against: the one `token` names (a
    stale token is refused like an answer's), else the first."""
    if token is None:
        return dict(state["open"][0])
    for req in state["open"]:
        if req["step"] == token:
            return dict(req)
    raise TetherError(
        "stale_step",
        f"step token {token!r} does not name an open step of this execution",
        current=dict(state["open"][0]),
        open=[dict(r) for r in state["open"]],
    )


def _think(state: dict[str, Any], answer: Think, now: str) -> Outcome:
    if not state["protocol_accepted"]:
        raise TetherError(
            "wrong_phase",
            "think records progress on an action in flight; the protocol gate is still open",
            current=current(state),
        )
    entry = _entry(
        state,
        "think",
        now,
        _attributed(state, answer.step),
        submitted=answer.thought,
        outcome="recorded",
    )
    return Outcome(state, {"status": "recorded", "message": "Thought recorded."}, [entry])


def _stop(state: dict[str, Any], answer: Stop, now: str) -> Outcome:
    if answer.cap < 1:
        raise TetherError("invalid_value", f"a stop cap is a whole number >= 1, got {answer.cap}")
    open_ = state["open"]
    req = dict(next((r for r in open_ if r["type"] != "human"), open_[0]))
    blocks = state.get("stops", 0)
    note = None
    if waits_on_person(open_):
        outcome, blocks, note = "allowed", 0, PERSON_NOTE
        state.pop("stops", None)
    elif blocks >= answer.cap:
        outcome = "allowed"
        state.pop("stops", None)
    else:
        outcome = "refused"
        blocks += 1
        state["stops"] = blocks
    entry = _entry(
        state, "stop", now, req, step=req["step"], cap=answer.cap, outcome=outcome, note=note
    )
    response = {"status": outcome, "blocks": blocks, "cap": answer.cap, "current": req}
    if note:
        response["waiting"] = "person"
    return Outcome(state, response, [entry])


def waits_on_person(requests: list[dict[str, Any]]) -> bool:
    """Whether every open request is a human step: nothing is the agent's to answer, so it may
    stop while a person decides."""
    return bool(requests) and all(r["type"] == "human" for r in requests)


def _tool_call(tree: dict[str, Any], state: dict[str, Any], answer: ToolCall, now: str) -> Outcome:
    req = _attributed(state, answer.step)
    entry = _entry(
        state,
        "tool",
        now,
        req,
        step=req["step"],
        tool=answer.tool,
        input=answer.input,
        ok=bool(answer.ok),
    )
    for r in state["open"]:
        if r["path"] is not None and reads_tools(node_at(tree, r["path"])):
            frame = state["runtime"][_key(r["path"])]
            frame.setdefault("t", entry["seq"])
    return Outcome(state, {"status": "recorded", "step": req["step"]}, [entry])


def reads_tools(action: dict[str, Any]) -> bool:
    """Whether an action has a `check` that reads `TOOLS` (only such actions mark where their
    attempt's tool calls begin)."""
    return any("TOOLS" in step.get("check", "") for step in action["steps"])


def _answer_gate(
    tree: dict[str, Any], state: dict[str, Any], answer: Submit, now: str, condition: Condition
) -> Outcome:
    status = {"success": "protocol_accepted", "failure": "protocol_rejected"}.get(
        answer.status, "running"
    )
    entry = _entry(
        state,
        "protocol",
        now,
        state["open"][0],
        submitted=answer.status,
        outcome=status,
        note=answer.note,
    )
    entries = [entry]
    events: list[tuple[str, str]] = []
    if answer.status == "success":
        state["protocol_accepted"] = True
        ticker = _Ticker(tree, state, now, entries, condition)
        ticker.run()
        events = ticker.events
        message = "Protocol accepted."
    elif answer.status == "failure":
        state.update(
            status="failed",
            phase="idle",
            open=[],
            cursor=None,
            failure="The protocol was declined.",
        )
        message = "Protocol declined; the execution has failed."
    else:
        message = "The protocol is still waiting for acceptance: submit success to begin."
    response = {"status": status, "message": message, "next": current(state)}
    return Outcome(state, response, entries, events)


def _answer(
    tree: dict[str, Any],
    state: dict[str, Any],
    req: dict[str, Any],
    answer: Eval | Submit | Human,
    now: str,
    condition: Condition,
    tools: list[dict[str, Any]],
) -> Outcome:
    key = _key(req["path"])
    frame = state["runtime"][key]
    submitted: bool | str | None
    if isinstance(answer, Eval):
        kind, submitted, advance = "evaluate", answer.result, answer.result
    elif isinstance(answer, Human):
        kind, submitted, advance = "human", None, answer.approved
    else:
        kind, submitted, advance = "instruct", answer.status, answer.status == "success"
        if advance and req.get("writes"):
            missing = _missing_writes(req["writes"], frame.get("w", []))
            if missing:
                raise TetherError(
                    "writes_missing",
                    f"step {req['name']!r} must write {', '.join('$VAR.' + m for m in missing)} "
                    "before it is submitted as success",
                    missing=missing,
                    current=dict(req),
                )
    entry = _entry(state, kind, now, req, submitted=submitted, note=answer.note)
    entries = [entry]
    if isinstance(answer, Submit) and answer.status == "running":
        entry["outcome"] = "running"
        return Outcome(
            state,
            {
                "status": "running",
                "message": f"Step {req['name']!r} stays open; submit again when done.",
                "next": current(state),
            },
            entries,
        )
    if advance:
        frame["k"] = frame.get("k", 0) + 1
        frame.pop("o", None)
        frame.pop("w", None)
    else:
        frame["x"] = 1
    ticker = _Ticker(tree, state, now, entries, condition, tools)
    ticker.run()
    failed = ticker.finished.get(key) == FAILURE
    if isinstance(answer, Eval):
        status = "evaluation_passed" if answer.result else "evaluation_failed"
    elif isinstance(answer, Human):
        status = "approved" if answer.approved else "rejected"
    elif failed:
        status = "action_failed"
    elif ticker.finished.get(key) == SUCCESS:
        status = "action_complete"
    else:
        status = "step_complete"
    if isinstance(answer, Human):
        entry.update(outcome=SUCCESS if answer.approved else FAILURE, by=answer.by)
    else:
        entry["outcome"] = status
    return Outcome(
        state,
        {
            "status": status,
            "message": _message(status, req, ticker, state),
            "next": current(state),
        },
        entries,
        ticker.events,
    )


def _message(status: str, req: dict[str, Any], ticker: _Ticker, state: dict[str, Any]) -> str:
    name = req["name"]
    text = {
        "evaluation_passed": f"{name} passed.",
        "evaluation_failed": f"{name} failed its evaluate.",
        "step_complete": f"{name}: step done.",
        "action_complete": f"{name} complete.",
        "action_failed": f"{name} failed.",
        "approved": f"{name} approved.",
        "rejected": f"{name} rejected.",
    }[status]
    if ticker.reasons:
        text += " " + " ".join(ticker.reasons)
    if ticker.retried:
        text += " Retrying: " + ", ".join(ticker.retried) + "."
    if ticker.looped:
        text += " Looping: " + ", ".join(ticker.looped) + "."
    if state["status"] == "complete":
        return text + " The workflow is done."
    if state["status"] == "failed":
        return text + " The workflow has failed."
    return text


def node_at(tree: dict[str, Any], path: list[int]) -> dict[str, Any]:
    """The node at `path` (child indices from the root); `invalid_value` if there is none."""
    node = tree["root"]
    for depth, i in enumerate(path):
        children = node.get("children", [])
        if not isinstance(i, int) or not 0 <= i < len(children):
            raise TetherError(
                "invalid_value",
                f"path {path} names no node: {node['name']!r} has no child {i} "
                f"(at depth {depth + 1})",
                path=path,
            )
        node = children[i]
    return node


def tool_policy(tree: dict[str, Any], path: list[int] | None) -> dict[str, Any] | None:
    """The `tools` policy that applies while the step at `path` is open: that of the nearest
    node at or above it that declares one, with the node's name as `node`; None when no node
    does (and for the protocol gate, which has no path). An open request carries it as
    `tools`, so a hook reads it from the state alone."""
    if path is None:
        return None
    chain = [tree["root"]]
    for i in path:
        chain.append(chain[-1]["children"][i])
    for node in reversed(chain):
        if "tools" in node:
            return {**node["tools"], "node": node["name"]}
    return None


def _jump(
    tree: dict[str, Any], state: dict[str, Any], answer: Jump, now: str, condition: Condition
) -> Outcome:
    target = node_at(tree, answer.path)
    if target["type"] != "action":
        raise TetherError(
            "invalid_value",
            f"jump goes to an action; {target['name']!r} is a {target['type']}",
            path=answer.path,
        )
    if not state["protocol_accepted"]:
        raise TetherError(
            "wrong_phase",
            "the protocol gate is still open; accept it first",
            current=current(state),
        )
    runtime: dict[str, dict[str, Any]] = {}
    node = tree["root"]
    for depth, i in enumerate(answer.path):
        key = _key(answer.path[:depth])
        if node["type"] == "parallel":
            runtime[key] = {"res": [None if j == i else True for j in range(len(node["children"]))]}
        else:
            runtime[key] = {"i": i}
        node = node["children"][i]
    runtime[_key(answer.path)] = {"k": 0}
    state["runtime"] = runtime
    request = {"path": answer.path, "index": 0, "name": target["name"]}
    entries = [_entry(state, "jump", now, request, note=answer.note, outcome="jumped")]
    ticker = _Ticker(tree, state, now, entries, condition)
    ticker.run()
    return Outcome(
        state,
        {
            "status": "jumped",
            "message": f"Moved to action {target['name']!r}.",
            "current": current(state),
        },
        entries,
        ticker.events,
    )


def _close(
    tree: dict[str, Any],
    state: dict[str, Any],
    answer: Close,
    now: str,
    condition: Condition,
    tools: list[dict[str, Any]],
) -> Outcome:
    if not state["protocol_accepted"]:
        raise TetherError(
            "wrong_phase",
            "the protocol gate is still open; accept it first",
            current=current(state),
        )
    open_ = state["open"]
    req = (
        open_[0]
        if answer.step is None
        else next((r for r in open_ if r["step"] == answer.step), None)
    )
    if req is None:
        raise TetherError(
            "stale_step", f"step token {answer.step!r} names no open step", current=dict(open_[0])
        )
    key = _key(req["path"])
    action = node_at(tree, req["path"])
    frame = state["runtime"][key]
    remaining = action["steps"][req["index"] :]
    if any("human" in step for step in remaining):
        raise TetherError(
            "human_only",
            f"action {action['name']!r} cannot close: a person still has to answer its human "
            "step (tether approve or reject, or the viewer)",
            current=dict(req),
        )
    required = [w for step in remaining for w in step.get("writes", [])]
    missing = _missing_writes(required, frame.get("w", []))
    if missing:
        raise TetherError(
            "writes_missing",
            f"action {action['name']!r} cannot close: it must write "
            f"{', '.join('$VAR.' + m for m in missing)} first",
            missing=missing,
            current=dict(req),
        )
    names = _names(_loop_items(tree, state["runtime"], req["path"]))
    for step in action["steps"]:
        if "check" not in step:
            continue
        try:
            seen = _attempt_tools(frame, tools)
            holds = bool(condition(step["check"], state["var"], state["const"], seen, names))
            reason = f"{step['check']!r} is false{_no_tools(step['check'], seen)}"
        except Exception as exc:  # the evaluator's reason is the refusal's reason
            holds, reason = False, f"{step['check']!r} could not be evaluated: {exc}"
        if not holds:
            raise TetherError(
                "check_failed",
                f"action {action['name']!r} cannot close: its check {reason}",
                check=step["check"],
                current=dict(req),
            )
    entries = [_entry(state, "close", now, req, note=answer.note, outcome="action_complete")]
    state["runtime"][key] = {
        "k": len(action["steps"]),
        **{level: frame[level] for level in _LEVELS if level in frame},
    }
    ticker = _Ticker(tree, state, now, entries, condition, tools)
    ticker.run()
    return Outcome(
        state,
        {
            "status": "action_complete",
            "message": _message("action_complete", req, ticker, state),
            "current": current(state),
        },
        entries,
        ticker.events,
    )


def _attempt_tools(frame: dict[str, Any], tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The tool calls of an action's current attempt, from the records the caller passed."""
    first = frame.get("t")
    return [] if first is None else [r for r in tools if r["seq"] >= first]


def _no_tools(expression: str, tools: list[dict[str, Any]]) -> str:
    """Why a false check that reads TOOLS saw none, or nothing."""
    if tools or "TOOLS" not in expression:
        return ""
    return (
        ": TOOLS is empty, no tool call was recorded during this attempt of the action "
        "(tool calls are recorded only from an agent session bound to the execution)"
    )


def _missing_writes(required: list[str], written: list[str]) -> list[str]:
    def covered(path: str) -> bool:
        return any(
            w == path or path.startswith(w + ".") or w.startswith(path + ".") for w in written
        )

    return [p for p in required if not covered(p)]


def _key(path: list[int]) -> str:
    return ".".join(map(str, path))


def _loop_items(
    tree: dict[str, Any], runtime: dict[str, dict[str, Any]], path: list[int]
) -> list[dict[str, Any]]:
    """The current items of the `for_each` loops at and above the node at `path`, outermost
    first, each `{name, index, value}` (a loop whose list is not evaluated yet has none)."""
    out = []
    node, key = tree["root"], ""
    for depth in range(len(path) + 1):
        frame = runtime.get(key) if "for_each" in node else None
        if frame is not None and "e" in frame:
            n = frame["n"]
            out.append({"name": node["for_each"]["as"], "index": n, "value": frame["e"][n]})
        if depth < len(path):
            node, key = node["children"][path[depth]], _child_key(key, path[depth])
    return out


def _names(items: list[dict[str, Any]]) -> dict[str, Any]:
    """What CEL sees of the loop items: ITEM and ITEM_INDEX (the innermost loop's), ITEMS (each
    loop's item by its name; an inner name hides an outer one)."""
    if not items:
        return {}
    inner = items[-1]
    return {
        "ITEM": inner["value"],
        "ITEM_INDEX": inner["index"],
        "ITEMS": {item["name"]: item["value"] for item in items},
    }


# --------------------------------------------------------------------------------------------
# Ticking


class _Ticker:
    """Walks the tree from the root along the entered frames, finishing what can finish and
    collecting the open requests. One instance per answer."""

    def __init__(
        self,
        tree: dict[str, Any],
        state: dict[str, Any],
        now: str,
        entries: list[dict[str, Any]],
        condition: Condition,
        tools: list[dict[str, Any]] | None = None,
    ) -> None:
        self.tree = tree
        self.tools = tools or []
        self.state = state
        self.runtime: dict[str, dict[str, Any]] = state["runtime"]
        self.now = now
        self.entries = entries
        self.condition = condition
        self.open: list[dict[str, Any]] = []
        self.finished: dict[str, str] = {}
        self.events: list[tuple[str, str]] = []
        self.reasons: list[str] = []
        self.retried: list[str] = []
        self.looped: list[str] = []

    def _finish(self, key: str, result: str) -> None:
        self.finished[key] = result
        self.events.append((key, result))

    def run(self) -> None:
        result = self.tick(self.tree["root"], "", [])
        state = self.state
        if result == RUNNING:
            state["open"] = self.open
            first = self.open[0]
            state["phase"] = "evaluating" if first["type"] == "evaluate" else "performing"
            state["cursor"] = _cursor_of(first)
            return
        state["open"] = []
        state["cursor"] = None
        state["phase"] = "idle"
        state["status"] = "complete" if result == SUCCESS else "failed"
        if result == FAILURE:
            state["failure"] = " ".join(self.reasons) or (
                f"The root {self.tree['root']['name']!r} failed."
            )

    def tick(self, node: dict[str, Any], key: str, path: list[int]) -> str:
        """Tick a node through its modifiers, innermost first: the node's type runs, `invert`
        swaps its result, `retries` runs a failure again, `repeat` runs a success again while
        `until` is false, `optional` makes a failure count as success (a failed `for_each` item
        included: the loop goes on), `for_each` runs all that once per item, and `when`,
        checked once as the node is first reached, skips the lot."""
        frame = self.runtime.get(key)
        if frame is None:
            when = node.get("when")
            if when is not None:
                verdict = self._condition(node, path, None, when, ("entered", "skipped"), [])
                if verdict is None:
                    self._finish(key, FAILURE)
                    return SUCCESS if node.get("optional") else FAILURE
                if not verdict:
                    self._finish(key, "skipped")
                    return SUCCESS
            frame = self.runtime[key] = {}
        if "for_each" in node and "e" not in frame:
            listed = self._for_each(node, path, frame)
            if listed != RUNNING:
                return self._done(node, key, listed)
        while True:
            result = self._tick_type(node, key, path, frame)
            if result == RUNNING:
                return RUNNING
            if node.get("invert"):
                result = FAILURE if result == SUCCESS else SUCCESS
            used = frame.get("r", 0)
            if result == FAILURE and used < node.get("retries", 0):
                self.retried.append(f"{node['name']!r} attempt {used + 2} of {node['retries'] + 1}")
                frame = self._restart(key, frame, result, "retry", "r", used + 1)
                continue
            if result == SUCCESS and "repeat" in node:
                result = self._until(node, path, frame)
                if result == RUNNING:
                    frame = self._restart(key, frame, SUCCESS, "repeat", "p", frame.get("p", 0) + 1)
                    continue
            if "e" in frame and (result == SUCCESS or node.get("optional")):
                n = frame["n"] + 1
                if n < len(frame["e"]):
                    self.looped.append(f"{node['name']!r} item {n + 1} of {len(frame['e'])}")
                    frame = self._restart(key, frame, result, "item", "n", n)
                    continue
            if "e" in frame and result == FAILURE and not node.get("optional"):
                where = f"item {frame['n'] + 1} of {len(frame['e'])}"
                self.reasons.append(f"{node['name']!r} failed at {where}.")
            break
        return self._done(node, key, result)

    def _done(self, node: dict[str, Any], key: str, result: str) -> str:
        """The node is finished with its own `result`: what its parent sees."""
        self._drop(key)
        self._finish(key, result)
        if result == FAILURE and node.get("optional"):
            return SUCCESS
        return result

    def _restart(
        self, key: str, frame: dict[str, Any], result: str, event: str, level: str, value: int
    ) -> dict[str, Any]:
        """End one run of a node with `result` and start another (`event`): its subtree is
        reset, the loop keys outside `level` are kept, and `level` becomes `value`."""
        self._finish(key, result)
        self._drop(key)
        self.events.append((key, event))
        kept = {k: frame[k] for k in _LEVELS[: _LEVELS.index(level)] if k in frame}
        frame = self.runtime[key] = {**kept, level: value}
        return frame

    def _until(self, node: dict[str, Any], path: list[int], frame: dict[str, Any]) -> str:
        """After a successful run of a `repeat` node, check `until` (recorded `on: until`):
        SUCCESS when it holds, RUNNING when it does not and a run is left (run again), FAILURE
        when none is left or it cannot be evaluated."""
        repeat = node["repeat"]
        runs = frame.get("p", 0) + 1
        left = runs < repeat["max"]
        words = ("passed", "repeat" if left else "failed")
        verdict = self._condition(node, path, None, repeat["until"], words, [], on="until")
        if verdict is None:
            return FAILURE
        if verdict:
            return SUCCESS
        if left:
            self.looped.append(f"{node['name']!r} run {runs + 1} of {repeat['max']}")
            return RUNNING
        self.reasons.append(
            f"{node['name']!r} ran {runs} times and its until {repeat['until']!r} is still false."
        )
        return FAILURE

    def _for_each(self, node: dict[str, Any], path: list[int], frame: dict[str, Any]) -> str:
        """Evaluate a `for_each` list as its node is entered, and record it as a `check` entry
        (`on: for_each`, with the item `count`): RUNNING with the list kept in the frame (its
        first item comes next), SUCCESS for an empty list, FAILURE for a list that cannot be
        evaluated or is longer than `max`."""
        loop = node["for_each"]
        names = _names(_loop_items(self.tree, self.runtime, path))
        problem = None
        try:
            items = default_list(loop["in"], self.state["var"], self.state["const"], names)
        except Exception as exc:  # the evaluator's reason goes to the trace, whatever it is
            items, problem = [], str(exc) or type(exc).__name__
        if problem is None and len(items) > loop["max"]:
            problem = f"the list has {len(items)} items, more than its max {loop['max']}"
        if problem is not None:
            self._check(node, path, None, loop["in"], "error", on="for_each", note=problem)
            self.reasons.append(f"The for_each of {node['name']!r} failed: {problem}.")
            return FAILURE
        outcome = "entered" if items else "empty"
        self._check(node, path, None, loop["in"], outcome, on="for_each", count=len(items))
        if not items:
            return SUCCESS
        frame.update(e=items, n=0)
        return RUNNING

    def _tick_type(
        self, node: dict[str, Any], key: str, path: list[int], frame: dict[str, Any]
    ) -> str:
        kind = node["type"]
        if kind == "action":
            return self._action(node, key, path, frame)
        if kind == "parallel":
            return self._parallel(node, key, path, frame)
        stop_on = FAILURE if kind == "sequence" else SUCCESS
        children = node["children"]
        i = frame.get("i", 0)
        while i < len(children):
            result = self.tick(children[i], _child_key(key, i), [*path, i])
            if result == RUNNING:
                frame["i"] = i
                return RUNNING
            if result == stop_on:
                return result
            i += 1
        return SUCCESS if kind == "sequence" else FAILURE

    def _parallel(
        self, node: dict[str, Any], key: str, path: list[int], frame: dict[str, Any]
    ) -> str:
        children = node["children"]
        n = len(children)
        policy = node.get("policy", "all")
        need = n if policy == "all" else 1 if policy == "any" else int(policy)
        results: list[bool | None] = frame.get("res") or [None] * n
        frame["res"] = results
        for i, child in enumerate(children):
            if results[i] is None:
                result = self.tick(child, _child_key(key, i), [*path, i])
                if result != RUNNING:
                    results[i] = result == SUCCESS
            ok = sum(1 for r in results if r is True)
            pending = sum(1 for r in results if r is None)
            if ok >= need or ok + pending < need:
                self._halt(key, path, results)
                return SUCCESS if ok >= need else FAILURE
        return RUNNING

    def _halt(self, key: str, path: list[int], results: list[bool | None]) -> None:
        for i, r in enumerate(results):
            if r is None:
                self._drop(_child_key(key, i))
                prefix = [*path, i]
                self.open = [o for o in self.open if o["path"][: len(prefix)] != prefix]

    def _action(
        self, node: dict[str, Any], key: str, path: list[int], frame: dict[str, Any]
    ) -> str:
        if frame.pop("x", None):
            return FAILURE
        steps = node["steps"]
        k = frame.get("k", 0)
        while k < len(steps):
            step = steps[k]
            if "check" in step:
                seen = _attempt_tools(frame, self.tools)
                if not self._condition(node, path, k, step["check"], ("passed", "failed"), seen):
                    return FAILURE
                k += 1
                continue
            frame["k"] = k
            if "o" not in frame:
                frame["o"] = self.state["seq"]
            self.open.append(self._request(node, path, k, step, frame))
            return RUNNING
        return SUCCESS

    def _request(
        self,
        node: dict[str, Any],
        path: list[int],
        k: int,
        step: dict[str, Any],
        frame: dict[str, Any],
    ) -> dict[str, Any]:
        token = f"{_key(path) or '-'}:{k}:{frame.get('r', 0)}:{frame['o']}:{self.state['salt']}"
        if "evaluate" in step:
            req: dict[str, Any] = {
                "type": "evaluate",
                "name": node["name"],
                "expression": step["evaluate"],
            }
        elif "human" in step:
            req = {"type": "human", "name": node["name"], "prompt": step["human"]}
        else:
            req = {"type": "instruct", "name": node["name"], "instruction": step["instruct"]}
            if step.get("writes"):
                req["writes"] = list(step["writes"])
        req.update(step=token, path=list(path), index=k)
        policy = tool_policy(self.tree, path)
        if policy is not None:
            req["tools"] = policy
        items = _loop_items(self.tree, self.runtime, path)
        if items:
            req["item"] = items[-1]
        return req

    def _condition(
        self,
        node: dict[str, Any],
        path: list[int],
        k: int | None,
        expression: str,
        words: tuple[str, str],
        tools: list[dict[str, Any]],
        on: str = "when",
    ) -> bool | None:
        """Evaluate a `check` step (k is its index; `tools` is its TOOLS) or a modifier's
        condition (k is None, `on` names it: when, until); record it in the trace. Returns the
        verdict, or None when the expression could not be evaluated."""
        names = _names(_loop_items(self.tree, self.runtime, path))
        try:
            verdict: bool | None = bool(
                self.condition(expression, self.state["var"], self.state["const"], tools, names)
            )
        except Exception as exc:  # the evaluator's reason goes to the trace, whatever it is
            verdict = None
            reason = str(exc) or type(exc).__name__
        if verdict is None:
            self._check(node, path, k, expression, "error", on=on, note=reason)
            where = on if k is None else "check"
            self.reasons.append(
                f"The {where} of {node['name']!r} could not be evaluated: {reason}."
            )
        elif verdict or k is None:
            self._check(node, path, k, expression, words[0] if verdict else words[1], on=on)
        else:
            why = _no_tools(expression, tools)
            note = {"note": why.removeprefix(": ")} if why else {}
            self._check(node, path, k, expression, words[1], on=on, **note)
            self.reasons.append(f"Check {expression!r} of {node['name']!r} is false{why}.")
        return verdict

    def _check(
        self,
        node: dict[str, Any],
        path: list[int],
        k: int | None,
        expression: str,
        outcome: str,
        on: str,
        **fields: Any,
    ) -> None:
        """Record a `check` entry: of a check step (k is its index) or of the modifier `on`."""
        entry = {
            "seq": self.state["seq"],
            "ts": self.now,
            "kind": "check",
            "cursor": {"path": list(path), "step": k},
            "name": node["name"],
            "submitted": expression,
        }
        items = _loop_items(self.tree, self.runtime, path)
        if items:
            entry["item"] = items[-1]["index"]
        if k is None:
            entry["on"] = on
        entry["outcome"] = outcome
        entry.update(fields)
        self.state["seq"] += 1
        self.state["since_reset"] += 1
        self.entries.append(entry)

    def _drop(self, key: str) -> None:
        if not key:
            self.runtime.clear()
            return
        prefix = key + "."
        for k in [k for k in self.runtime if k == key or k.startswith(prefix)]:
            del self.runtime[k]


def _child_key(key: str, i: int) -> str:
    return f"{key}.{i}" if key else str(i)
