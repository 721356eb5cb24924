"""The answers an execution takes, and `apply`, which dispatches each to what it does.

Owns: the answer classes (`Eval`, `Submit`, `Human`, `Think`, `VarWrite`, `Reset`, `Jump`,
`Close`, `Stop`, `ToolCall`, `Independent`), `Outcome`, what each answer changes in the state
(values written before an answer is judged, the frame moved on or marked failed, a jump's
frames, a close's checks and writes, an independent action's close, the stop count, where an
attempt's tool calls begin), the trace entries each produces, the response it returns (with
`next`/`current`), and what checks see of `TOOLS` (`tools_since`, `tool_records`).

It does not own which request an answer targets or the phase it leaves
(`tether.engine.phases`), nor what ticking the tree does after it (`tether.engine.ticking`).
Pure: no I/O, no clock; the caller passes `now` and the tool records.
"""

from __future__ import annotations

from collections.abc import Iterable

from tether.engine.names import (
    CHILD,
    COMPLETE,
    FAILED,
    FAILING,
    FAILURE,
    LEVELS,
    OPENED,
    PHASE_IDLE,
    RESULTS,
    RUNNING,
    STEP,
    SUCCESS,
    TOOLS_FROM,
    WRITTEN,
)
from tether.engine.phases import (
    attributed,
    current,
    cursor_of,
    open_gate,
    pristine,
    select,
    select_human,
    waits_on_person,
)
from tether.engine.ticking import (
    Condition,
    Ticker,
    attempt_tools,
    default_condition,
    loop_items,
    loop_names,
    no_tools,
    node_at,
    node_key,
    reads_tools,
    step_token,
)
from tether.engine.varpath import named_values, parse_path, write_path
from tether.errors import TetherError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

SUBMIT_STATUSES = (SUCCESS, FAILURE, RUNNING)

# The note of a `stop` let through because nothing open is the agent's to answer.
PERSON_NOTE = "every open step waits on a person (tether approve or reject, or the viewer)"


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
    """A tool call the agent made while a step was open (`ok`: true on a sign of success from
    the harness, false on a sign of failure, None with neither), recorded as a
    `tool` entry against the open step named by `step` (else the first). An open action whose
    `check` steps read `TOOLS` keeps it for them until the action's attempt ends."""

    __slots__ = ("input", "ok", "step", "tool")

    def __init__(self, tool: str, input: Any, ok: bool | None, step: str | None = None) -> None:
        self.tool = tool
        self.input = input
        self.ok = ok
        self.step = step


class Independent:
    """Call the independent action `name` (one of the tree's `independent` actions, outside the
    workflow): recorded as an `independent` entry that moves nothing. With `close`, its `values`
    (var path → value) are written and it is closed: refused, writing nothing, while its `writes`
    are not among `values` or a `check` of it does not hold."""

    __slots__ = ("close", "name", "note", "values")

    def __init__(
        self,
        name: str,
        close: bool = False,
        values: dict[str, Any] | None = None,
        note: str | None = None,
    ) -> None:
        self.name = name
        self.close = close
        self.values = values
        self.note = note


Answer = (
    Eval | Submit | Human | Think | VarWrite | Reset | Jump | Close | Stop | ToolCall | Independent
)


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
    if state["status"] != RUNNING:
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
    if isinstance(answer, Independent):
        return _independent(tree, work, answer, now, condition)
    outcome = _move(tree, work, answer, now, condition, tools or [])
    outcome.state.pop("stops", None)
    return outcome


def tools_since(state: dict[str, Any]) -> int | None:
    """The seq from which an answer's checks may read `tool` entries (None: they read none)."""
    found = [f[TOOLS_FROM] for f in state["runtime"].values() if TOOLS_FROM in f]
    return min(found) if found else None


def tool_records(entries: Iterable[dict[str, Any]], since: int | None) -> list[dict[str, Any]]:
    """What checks see of the `tool` entries with `seq >= since`: `{tool, input, ok, seq}`,
    where `ok` is true only for an entry recorded `ok: true` (unknown reads as not ok)."""
    if since is None:
        return []
    return [
        {"tool": e["tool"], "input": e.get("input"), "ok": e["ok"] is True, "seq": e["seq"]}
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
        req = select(work, answer.step, "evaluate", "eval")
        return _with_values(tree, work, req, answer, now, condition, tools)
    if isinstance(answer, Submit):
        if answer.status not in SUBMIT_STATUSES:
            raise TetherError(
                "invalid_value",
                f"submit status must be one of {', '.join(SUBMIT_STATUSES)}, got {answer.status!r}",
            )
        req = select(work, answer.step, "instruct", "submit")
        return _with_values(tree, work, req, answer, now, condition, tools)
    if isinstance(answer, Human):
        req = select_human(work, answer.step)
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
    for key in (RESULTS, WRITTEN):
        if key in out:
            out[key] = list(out[key])
    return out


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
    fresh: dict[int, Any] = {}  # the containers of `var` these writes made, written in place
    for path, value in (answer.values or {}).items():
        entries += _var_write(state, VarWrite(path, value, req["step"]), now, fresh).entries
    if req["path"] is None:
        assert isinstance(answer, Submit)  # `select` lets only submit reach the gate
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
        "cursor": cursor_of(req),
        "name": req["name"] if req else None,
    }
    if req is not None and "item" in req:
        entry["item"] = req["item"]["index"]
    entry.update({k: v for k, v in fields.items() if v is not None})
    state["seq"] += 1
    state["since_reset"] += 1
    return entry


def _reset(state: dict[str, Any], work: dict[str, Any], now: str) -> Outcome:
    if state["since_reset"] == 0:
        return Outcome(
            state, {"status": "reset", "message": "The execution is already at its start."}
        )
    out = pristine(work)
    entry = {
        "seq": out["seq"],
        "ts": now,
        "kind": "reset",
        "cursor": None,
        "name": None,
        "outcome": "reset",
    }
    out["seq"] += 1
    open_gate(out)
    return Outcome(
        out,
        {"status": "reset", "message": "Trace cleared, scopes restored, protocol gate re-armed."},
        [entry],
    )


def _var_write(
    state: dict[str, Any], answer: VarWrite, now: str, fresh: dict[int, Any] | None = None
) -> Outcome:
    """Write one value into `state` (a working copy); `fresh` as `write_path` takes it."""
    req = attributed(state, answer.step) if state["protocol_accepted"] else None
    state["var"] = write_path(state["var"], answer.path, answer.value, fresh)
    entry = _entry(
        state, "var_write", now, req, path=answer.path, value=answer.value, outcome="written"
    )
    for i, r in enumerate(state["open"]):
        if r["path"] is not None and r.get("writes"):
            frame = state["runtime"][node_key(r["path"])]
            frame.setdefault(WRITTEN, []).append(answer.path)  # the working copy's own list
        if "shows" in r:
            _reshow(state, i, r)
    return Outcome(
        state, {"status": "written", "path": answer.path, "value": answer.value}, [entry]
    )


def _reshow(state: dict[str, Any], i: int, req: dict[str, Any]) -> None:
    """Re-open the open human request `req` (the `i`th) with a new token if a value its prompt
    names changed: a person's answer given to what was shown before is then stale."""
    shows = named_values(req["prompt"], state)
    if shows != req["shows"]:
        frame = state["runtime"][node_key(req["path"])]
        frame[OPENED] = state["seq"]
        token = step_token(req["path"], req["index"], frame, state["salt"])
        state["open"][i] = {**req, "shows": shows, "step": token}


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
        attributed(state, answer.step),
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


def _tool_call(tree: dict[str, Any], state: dict[str, Any], answer: ToolCall, now: str) -> Outcome:
    req = attributed(state, answer.step)
    entry = _entry(
        state,
        "tool",
        now,
        req,
        step=req["step"],
        tool=answer.tool,
        input=answer.input,
    )
    entry["ok"] = answer.ok  # null too: the harness gave no sign either way
    for r in state["open"]:
        if r["path"] is not None and reads_tools(node_at(tree, r["path"])):
            frame = state["runtime"][node_key(r["path"])]
            frame.setdefault(TOOLS_FROM, entry["seq"])
    return Outcome(state, {"status": "recorded", "step": req["step"]}, [entry])


def _independent(
    tree: dict[str, Any], state: dict[str, Any], answer: Independent, now: str, condition: Condition
) -> Outcome:
    _require_gate(state)
    actions = {a["name"]: a for a in tree.get("independent", [])}
    action = actions.get(answer.name)
    if action is None:
        known = ", ".join(actions) or "none"
        raise TetherError(
            "invalid_value",
            f"the tree has no independent action {answer.name!r}; its independent actions: {known}",
        )
    if answer.values and not answer.close:
        raise TetherError(
            "usage", f"values are written when independent action {answer.name!r} is closed"
        )
    if answer.close:
        state["var"] = _closing_independent(action, state, answer.values or {}, condition)
    entry = _entry(
        state,
        "independent",
        now,
        None,
        values=answer.values or None,
        note=answer.note,
        outcome="closed" if answer.close else "called",
    )
    entry["name"] = answer.name
    return Outcome(state, {"status": entry["outcome"], "current": current(state)}, [entry])


def _closing_independent(
    action: dict[str, Any], state: dict[str, Any], values: dict[str, Any], condition: Condition
) -> dict[str, Any]:
    """`var` with `values` written, once the independent `action` may close on it."""
    var = state["var"]
    for path, value in values.items():
        var = write_path(var, path, value)
    written = [".".join(parse_path(path)) for path in values]
    scopes: tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]]] = (var, state["const"], [])
    _hold_to_close(
        f"independent action {action['name']!r}", action["steps"], 0, written, scopes, {}, condition
    )
    return var


def _answer_gate(
    tree: dict[str, Any], state: dict[str, Any], answer: Submit, now: str, condition: Condition
) -> Outcome:
    status = {SUCCESS: "protocol_accepted", FAILURE: "protocol_rejected"}.get(
        answer.status, RUNNING
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
    if answer.status == SUCCESS:
        state["protocol_accepted"] = True
        ticker = Ticker(tree, state, now, entries, condition)
        ticker.run()
        events = ticker.events
        message = "Protocol accepted."
    elif answer.status == FAILURE:
        state.update(
            status=FAILED,
            phase=PHASE_IDLE,
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
    key = node_key(req["path"])
    frame = state["runtime"][key]
    submitted: bool | str | None
    if isinstance(answer, Eval):
        kind, submitted, advance = "evaluate", answer.result, answer.result
    elif isinstance(answer, Human):
        kind, submitted, advance = "human", None, answer.approved
    else:
        kind, submitted, advance = "instruct", answer.status, answer.status == SUCCESS
        if advance and req.get("writes"):
            missing = _missing_writes(req["writes"], frame.get(WRITTEN, []))
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
    if isinstance(answer, Submit) and answer.status == RUNNING:
        entry["outcome"] = RUNNING
        return Outcome(
            state,
            {
                "status": RUNNING,
                "message": f"Step {req['name']!r} stays open; submit again when done.",
                "next": current(state),
            },
            entries,
        )
    if advance:
        frame[STEP] = frame.get(STEP, 0) + 1
        frame.pop(OPENED, None)
        frame.pop(WRITTEN, None)
    else:
        frame[FAILING] = 1
    ticker = Ticker(tree, state, now, entries, condition, tools)
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
        if "shows" in req:
            entry["shown"] = req["shows"]
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


def _message(status: str, req: dict[str, Any], ticker: Ticker, state: dict[str, Any]) -> str:
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
    if state["status"] == COMPLETE:
        return text + " The workflow is done."
    if state["status"] == FAILED:
        return text + " The workflow has failed."
    return text


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
    _require_gate(state)
    runtime: dict[str, dict[str, Any]] = {}
    node = tree["root"]
    for depth, i in enumerate(answer.path):
        key = node_key(answer.path[:depth])
        if node["type"] == "parallel":
            runtime[key] = {
                RESULTS: [None if j == i else True for j in range(len(node["children"]))]
            }
        else:
            runtime[key] = {CHILD: i}
        node = node["children"][i]
    runtime[node_key(answer.path)] = {STEP: 0}
    state["runtime"] = runtime
    request = {"path": answer.path, "index": 0, "name": target["name"]}
    entries = [_entry(state, "jump", now, request, note=answer.note, outcome="jumped")]
    ticker = Ticker(tree, state, now, entries, condition)
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
    _require_gate(state)
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
    key = node_key(req["path"])
    action = node_at(tree, req["path"])
    frame = state["runtime"][key]
    _hold_to_close(
        f"action {action['name']!r}",
        action["steps"],
        req["index"],
        frame.get(WRITTEN, []),
        (state["var"], state["const"], attempt_tools(frame, tools)),
        loop_names(loop_items(tree, state["runtime"], req["path"])),
        condition,
        current=dict(req),
    )
    entries = [_entry(state, "close", now, req, note=answer.note, outcome="action_complete")]
    state["runtime"][key] = {
        STEP: len(action["steps"]),
        **{level: frame[level] for level in LEVELS if level in frame},
    }
    ticker = Ticker(tree, state, now, entries, condition, tools)
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


def _hold_to_close(
    what: str,
    steps: list[dict[str, Any]],
    index: int,
    written: list[str],
    scopes: tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]]],
    names: dict[str, Any],
    condition: Condition,
    **details: Any,
) -> None:
    """Refuse to close `what` (its steps from `index` on still to come) while one of those is a
    human step (`human_only`), one of their `writes` is not among `written` (`writes_missing`),
    or a `check` of all its `steps` does not hold on `scopes`, its var, const and tool records
    (`check_failed`); `details` go into every refusal."""
    remaining = steps[index:]
    if any("human" in step for step in remaining):
        raise TetherError(
            "human_only",
            f"{what} cannot close: a person still has to answer its human step (tether approve "
            "or reject, or the viewer)",
            **details,
        )
    required = [w for step in remaining for w in step.get("writes", [])]
    missing = _missing_writes(required, written)
    if missing:
        raise TetherError(
            "writes_missing",
            f"{what} cannot close: it must write {', '.join('$VAR.' + m for m in missing)} first",
            missing=missing,
            **details,
        )
    var, const, seen = scopes
    for step in steps:
        if "check" not in step:
            continue
        try:
            holds = bool(condition(step["check"], var, const, seen, names))
            reason = f"{step['check']!r} is false{no_tools(step['check'], seen)}"
        except Exception as exc:  # the evaluator's reason is the refusal's reason
            holds, reason = False, f"{step['check']!r} could not be evaluated: {exc}"
        if not holds:
            raise TetherError(
                "check_failed",
                f"{what} cannot close: its check {reason}",
                check=step["check"],
                **details,
            )


def _missing_writes(required: list[str], written: list[str]) -> list[str]:
    def covered(path: str) -> bool:
        return any(
            w == path or path.startswith(w + ".") or w.startswith(path + ".") for w in written
        )

    return [p for p in required if not covered(p)]


def _require_gate(state: dict[str, Any]) -> None:
    """`wrong_phase` while the protocol gate is open: a jump, a close or an independent call
    comes after it."""
    if not state["protocol_accepted"]:
        message = "the protocol gate is still open; accept it first"
        raise TetherError("wrong_phase", message, current=current(state))
