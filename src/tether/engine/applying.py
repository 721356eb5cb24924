"""What each answer does: `apply`, which dispatches an answer to it.

Owns what each answer (the classes of `tether.engine.answers`) changes in the state
(values written before an answer is judged, the frame moved on or marked failed, a human step
that timed out rejected or the execution failed, a jump's
frames, a close, an independent action's close, the stop count, where an attempt's tool calls
begin), the trace entries each produces and the response it returns (with `next`/`current`).

It does not own which request an answer targets, the protocol gate's refusal or the phase it
leaves (`tether.engine.phases`), how an entry is numbered or what checks see of `TOOLS`
(`tether.engine.trace`), what an action needs before it may finish (`tether.engine.closing`),
nor what ticking the tree does after it (`tether.engine.ticking`).
Pure: no I/O, no clock; the caller passes `now` and the tool records.
"""

from __future__ import annotations

from tether.engine.answers import (
    PERSON_NOTE,
    SUBMIT_STATUSES,
    Answer,
    Claim,
    Close,
    Eval,
    Human,
    Independent,
    Jump,
    Outcome,
    Reset,
    Stop,
    Submit,
    Think,
    Timeout,
    ToolCall,
    VarWrite,
)
from tether.engine.claims import claim, held_claim, hold
from tether.engine.closing import hold_to_close, require_writes
from tether.engine.deadlines import passed
from tether.engine.names import LEVELS, Key, Kind, Phase, Reply, RequestType, Result, Status
from tether.engine.phases import (
    current,
    cursor_of,
    named,
    open_gate,
    pristine,
    require_gate,
    select,
    select_human,
    waits_on_person,
)
from tether.engine.ticking import (
    Condition,
    Ticker,
    chain,
    default_condition,
    loop_items,
    loop_names,
    node_at,
    reads_tools,
)
from tether.engine.trace import attempt_tools, node_key, record, step_token
from tether.engine.varpath import named_values, parse_path, write_path
from tether.errors import TetherError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


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
    if state["status"] != Status.RUNNING:
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
    if isinstance(answer, Claim):
        return claim(tree, work, answer, now)
    outcome = _move(tree, work, answer, now, condition, tools or [])
    outcome.state.pop("stops", None)
    return outcome


def _move(
    tree: dict[str, Any],
    work: dict[str, Any],
    answer: Eval | Submit | Human | Timeout | Jump | Close,
    now: str,
    condition: Condition,
    tools: list[dict[str, Any]],
) -> Outcome:
    """Apply an answer that may move the cursor."""
    if isinstance(answer, Eval):
        req = select(work, answer.step, RequestType.EVALUATE, "eval")
        hold(work, req, answer.agent, now)
        return _with_values(tree, work, req, answer, now, condition, tools)
    if isinstance(answer, Submit):
        if answer.status not in SUBMIT_STATUSES:
            raise TetherError(
                "invalid_value",
                f"submit status must be one of {', '.join(SUBMIT_STATUSES)}, got {answer.status!r}",
            )
        req = select(work, answer.step, RequestType.INSTRUCT, "submit")
        hold(work, req, answer.agent, now)
        return _with_values(tree, work, req, answer, now, condition, tools)
    if isinstance(answer, Human):
        req = select_human(work, answer.step)
        return _answer(tree, work, req, answer, now, condition, tools)
    if isinstance(answer, Timeout):
        return _time_out(tree, work, answer, now, condition, tools)
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
    for key in (Key.RESULTS, Key.WRITTEN):
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
    """A trace entry of `kind` recorded against the open request `req` (None: against none)."""
    if req is None:
        return record(state, now, kind, None, None, **fields)
    item = req["item"]["index"] if "item" in req else None
    return record(state, now, kind, cursor_of(req), req["name"], item=item, **fields)


def _reset(state: dict[str, Any], work: dict[str, Any], now: str) -> Outcome:
    if state["since_reset"] == 0:
        return Outcome(
            state, {"status": Reply.RESET, "message": "The execution is already at its start."}
        )
    entry = _entry(work, Kind.RESET, now, None, outcome=Reply.RESET)
    out = pristine(work)  # after the entry: the reset is the first thing a fresh start counts
    open_gate(out)
    return Outcome(
        out,
        {
            "status": Reply.RESET,
            "message": "Trace cleared, scopes restored, protocol gate re-armed.",
        },
        [entry],
    )


def _var_write(
    state: dict[str, Any], answer: VarWrite, now: str, fresh: dict[int, Any] | None = None
) -> Outcome:
    """Write one value into `state` (a working copy); `fresh` as `write_path` takes it."""
    req = named(state, answer.step) if state["protocol_accepted"] else None
    state["var"] = write_path(state["var"], answer.path, answer.value, fresh)
    entry = _entry(
        state, Kind.VAR_WRITE, now, req, path=answer.path, value=answer.value, outcome=Reply.WRITTEN
    )
    for i, r in enumerate(state["open"]):
        if r["path"] is not None and r.get("writes"):
            frame = state["runtime"][node_key(r["path"])]
            frame.setdefault(Key.WRITTEN, []).append(answer.path)  # the working copy's own list
        if "shows" in r:
            _reshow(state, i, r)
    return Outcome(
        state, {"status": Reply.WRITTEN, "path": answer.path, "value": answer.value}, [entry]
    )


def _reshow(state: dict[str, Any], i: int, req: dict[str, Any]) -> None:
    """Re-open the open human request `req` (the `i`th) with a new token if a value its prompt
    names changed: a person's answer given to what was shown before is then stale."""
    shows = named_values(req["prompt"], state)
    if shows != req["shows"]:
        frame = state["runtime"][node_key(req["path"])]
        frame[Key.OPENED] = state["seq"]
        token = step_token(req["path"], req["index"], frame, state["salt"])
        state["open"][i] = {**req, "shows": shows, "step": token}


def _think(state: dict[str, Any], answer: Think, now: str) -> Outcome:
    require_gate(state, "think")
    req = named(state, answer.step)
    entry = _entry(state, Kind.THINK, now, req, submitted=answer.thought, outcome=Reply.RECORDED)
    return Outcome(state, {"status": Reply.RECORDED, "message": "Thought recorded."}, [entry])


def _stop(state: dict[str, Any], answer: Stop, now: str) -> Outcome:
    if answer.cap < 1:
        raise TetherError("invalid_value", f"a stop cap is a whole number >= 1, got {answer.cap}")
    if answer.agent is None:
        open_ = state["open"]
        req = dict(next((r for r in open_ if r["type"] != "human"), open_[0]))
        counts = state  # the execution's refused stops in a row
    else:
        req = dict(named(state, answer.step))
        open_ = [req]
        counts = held_claim(state, req, answer.agent)  # the sub-agent's, in its claim
    blocks = counts.get("stops", 0)
    note = None
    if answer.ended or answer.background:
        outcome = Reply.ENDED if answer.ended else Reply.BACKGROUND
    elif waits_on_person(open_):
        outcome, blocks, note = Reply.ALLOWED, 0, PERSON_NOTE
        counts.pop("stops", None)
    elif blocks >= answer.cap:
        outcome, note = (Reply.PARKED, answer.park) if answer.park else (Reply.ALLOWED, None)
        counts.pop("stops", None)
    else:
        outcome = Reply.REFUSED
        blocks += 1
        counts["stops"] = blocks
    entry = _entry(
        state,
        Kind.STOP,
        now,
        req,
        step=req["step"],
        cap=answer.cap,
        outcome=outcome,
        note=note,
        agent=answer.agent,
    )
    response = {"status": outcome, "blocks": blocks, "cap": answer.cap, "current": req}
    if note == PERSON_NOTE:
        response["waiting"] = "person"
    return Outcome(state, response, [entry])


def _tool_call(tree: dict[str, Any], state: dict[str, Any], answer: ToolCall, now: str) -> Outcome:
    req = named(state, answer.step)
    entry = _entry(
        state,
        Kind.TOOL,
        now,
        req,
        step=req["step"],
        tool=answer.tool,
        input=answer.input,
        agent=answer.agent,
    )
    entry["ok"] = answer.ok  # null too: the harness gave no sign either way
    for r in state["open"]:
        if r["path"] is not None and reads_tools(node_at(tree, r["path"])):
            frame = state["runtime"][node_key(r["path"])]
            frame.setdefault(Key.TOOLS_FROM, entry["seq"])
    return Outcome(state, {"status": Reply.RECORDED, "step": req["step"]}, [entry])


def _independent(
    tree: dict[str, Any], state: dict[str, Any], answer: Independent, now: str, condition: Condition
) -> Outcome:
    require_gate(state, "an independent action")
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
        Kind.INDEPENDENT,
        now,
        None,
        values=answer.values or None,
        note=answer.note,
        outcome=Reply.CLOSED if answer.close else Reply.CALLED,
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
    hold_to_close(
        f"independent action {action['name']!r}", action["steps"], 0, written, scopes, {}, condition
    )
    return var


def _answer_gate(
    tree: dict[str, Any], state: dict[str, Any], answer: Submit, now: str, condition: Condition
) -> Outcome:
    replies: dict[str, Reply] = {
        Result.SUCCESS: Reply.PROTOCOL_ACCEPTED,
        Result.FAILURE: Reply.PROTOCOL_REJECTED,
    }
    status = replies.get(answer.status, Reply.RUNNING)
    entry = _entry(
        state,
        Kind.PROTOCOL,
        now,
        state["open"][0],
        submitted=answer.status,
        outcome=status,
        note=answer.note,
    )
    entries = [entry]
    events: list[tuple[str, str]] = []
    if answer.status == Result.SUCCESS:
        state["protocol_accepted"] = True
        events = Ticker(tree, state, now, entries, condition).run().events
        message = "Protocol accepted."
    elif answer.status == Result.FAILURE:
        state.update(
            status=Status.FAILED,
            phase=Phase.IDLE,
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
    """Judge an open step: record the answer, move its action's frame on (or mark it failed),
    and tick the tree on from there."""
    key = node_key(req["path"])
    frame = state["runtime"][key]
    kind, submitted, advance = _judged(answer)
    if advance and isinstance(answer, Submit):
        require_writes(req, frame.get(Key.WRITTEN, []))
    agent = None if isinstance(answer, Human) else answer.agent
    entry = _entry(state, kind, now, req, submitted=submitted, note=answer.note, agent=agent)
    if isinstance(answer, Submit) and answer.status == Result.RUNNING:
        entry["outcome"] = Reply.RUNNING
        message = f"Step {req['name']!r} stays open; submit again when done."
        response = {"status": Reply.RUNNING, "message": message, "next": current(state)}
        return Outcome(state, response, [entry])
    if advance:
        frame[Key.STEP] = frame.get(Key.STEP, 0) + 1
        for spent in (Key.OPENED, Key.WRITTEN, Key.DEADLINE):
            frame.pop(spent, None)
    else:
        frame[Key.FAILING] = 1
    ticker = Ticker(tree, state, now, [entry], condition, tools).run()
    status = _status(answer, ticker.finished.get(key))
    if isinstance(answer, Human):
        entry.update(outcome=Result.SUCCESS if answer.approved else Result.FAILURE, by=answer.by)
        if "shows" in req:
            entry["shown"] = req["shows"]
    else:
        entry["outcome"] = status
    return _moved(state, status, req, ticker, "next")


def _time_out(
    tree: dict[str, Any],
    state: dict[str, Any],
    answer: Timeout,
    now: str,
    condition: Condition,
    tools: list[dict[str, Any]],
) -> Outcome:
    """Record that the open human step's deadline passed (a `timeout` entry carrying the
    deadline and what it does), then do it: `reject` fails its action and ticks the tree on as
    a person's rejection does; `fail` fails the execution, halting whatever was open."""
    req = select_human(state, answer.step)
    due = req.get("deadline")
    if due is None or not passed(due, now):
        waits = "has no timeout" if due is None else f"waits until {due}"
        raise TetherError(
            "wrong_phase",
            f"human step {req['name']!r} {waits}: it has not timed out at {now}",
            current=dict(req),
        )
    how = req["on_timeout"]
    entry = _entry(
        state,
        Kind.TIMEOUT,
        now,
        req,
        step=req["step"],
        deadline=due,
        on_timeout=how,
        outcome=Result.FAILURE,
    )
    if how == "fail":
        failure = f"Human step {req['name']!r} timed out at {due} (on_timeout: fail)."
        state.update(status=Status.FAILED, phase=Phase.IDLE, open=[], cursor=None, runtime={})
        state["failure"] = failure
        response = {
            "status": Reply.TIMED_OUT,
            "message": failure + " The workflow has failed.",
            "next": current(state),
        }
        return Outcome(state, response, [entry])
    state["runtime"][node_key(req["path"])][Key.FAILING] = 1
    ticker = Ticker(tree, state, now, [entry], condition, tools).run()
    return _moved(state, Reply.TIMED_OUT, req, ticker, "next")


def _judged(answer: Eval | Submit | Human) -> tuple[str, bool | str | None, bool]:
    """The entry kind of an answer to a step, what it submitted, and whether the step passed."""
    if isinstance(answer, Eval):
        return Kind.EVALUATE, answer.result, answer.result
    if isinstance(answer, Human):
        return Kind.HUMAN, None, answer.approved
    return Kind.INSTRUCT, answer.status, answer.status == Result.SUCCESS


def _status(answer: Eval | Submit | Human, finished: str | None) -> Reply:
    """The response status of an answer to a step, its action `finished` as it did (or not)."""
    if isinstance(answer, Eval):
        return Reply.EVALUATION_PASSED if answer.result else Reply.EVALUATION_FAILED
    if isinstance(answer, Human):
        return Reply.APPROVED if answer.approved else Reply.REJECTED
    if finished == Result.FAILURE:
        return Reply.ACTION_FAILED
    return Reply.ACTION_COMPLETE if finished == Result.SUCCESS else Reply.STEP_COMPLETE


def _moved(
    state: dict[str, Any], status: Reply, req: dict[str, Any], ticker: Ticker, then: str
) -> Outcome:
    """The outcome of an answer to the step `req` that ticked the tree: its `status`, the
    message, and the request that follows (as `then`: next or current)."""
    response: dict[str, Any] = {"status": status, "message": _message(status, req, ticker, state)}
    response[then] = current(state)
    return Outcome(state, response, ticker.entries, ticker.events)


def _message(status: Reply, req: dict[str, Any], ticker: Ticker, state: dict[str, Any]) -> str:
    name = req["name"]
    text = {
        Reply.EVALUATION_PASSED: f"{name} passed.",
        Reply.EVALUATION_FAILED: f"{name} failed its evaluate.",
        Reply.STEP_COMPLETE: f"{name}: step done.",
        Reply.ACTION_COMPLETE: f"{name} complete.",
        Reply.ACTION_FAILED: f"{name} failed.",
        Reply.APPROVED: f"{name} approved.",
        Reply.REJECTED: f"{name} rejected.",
        Reply.TIMED_OUT: f"{name} timed out (on_timeout: reject).",
    }[status]
    if ticker.reasons:
        text += " " + " ".join(ticker.reasons)
    if ticker.retried:
        text += " Retrying: " + ", ".join(ticker.retried) + "."
    if ticker.looped:
        text += " Looping: " + ", ".join(ticker.looped) + "."
    if state["status"] == Status.COMPLETE:
        return text + " The workflow is done."
    if state["status"] == Status.FAILED:
        return text + " The workflow has failed."
    return text


def _jump(
    tree: dict[str, Any], state: dict[str, Any], answer: Jump, now: str, condition: Condition
) -> Outcome:
    links = chain(tree, answer.path)
    target = links[-1][0]
    if any(item for _, item in links):
        raise TetherError(
            "invalid_value",
            f"jump cannot go into one item of a for_each with parallel: true "
            f"({target['name']!r}); jump to the node before the loop",
            path=answer.path,
        )
    if target["type"] != "action":
        raise TetherError(
            "invalid_value",
            f"jump goes to an action; {target['name']!r} is a {target['type']}",
            path=answer.path,
        )
    require_gate(state, "jump")
    runtime: dict[str, dict[str, Any]] = {}
    node = tree["root"]
    for depth, i in enumerate(answer.path):
        key = node_key(answer.path[:depth])
        if node["type"] == "parallel":
            runtime[key] = {
                Key.RESULTS: [None if j == i else True for j in range(len(node["children"]))]
            }
        else:
            runtime[key] = {Key.CHILD: i}
        node = node["children"][i]
    runtime[node_key(answer.path)] = {Key.STEP: 0}
    state["runtime"] = runtime
    request = {"path": answer.path, "index": 0, "name": target["name"]}
    entry = _entry(state, Kind.JUMP, now, request, note=answer.note, outcome=Reply.JUMPED)
    ticker = Ticker(tree, state, now, [entry], condition).run()
    response = {
        "status": Reply.JUMPED,
        "message": f"Moved to action {target['name']!r}.",
        "current": current(state),
    }
    return Outcome(state, response, ticker.entries, ticker.events)


def _close(
    tree: dict[str, Any],
    state: dict[str, Any],
    answer: Close,
    now: str,
    condition: Condition,
    tools: list[dict[str, Any]],
) -> Outcome:
    """Close the action of the open step (or of `answer.step`), once `hold_to_close` allows it:
    its frame is set past its last step, its loop keys kept, and the tree ticks on."""
    require_gate(state, "close")
    req = named(state, answer.step)
    hold(state, req, None, now)
    key = node_key(req["path"])
    action = node_at(tree, req["path"])
    frame = state["runtime"][key]
    hold_to_close(
        f"action {action['name']!r}",
        action["steps"],
        req["index"],
        frame.get(Key.WRITTEN, []),
        (state["var"], state["const"], attempt_tools(frame, tools)),
        loop_names(loop_items(tree, state["runtime"], req["path"])),
        condition,
        current=dict(req),
    )
    entry = _entry(state, Kind.CLOSE, now, req, note=answer.note, outcome=Reply.ACTION_COMPLETE)
    state["runtime"][key] = {
        Key.STEP: len(action["steps"]),
        **{level: frame[level] for level in LEVELS if level in frame},
    }
    ticker = Ticker(tree, state, now, [entry], condition, tools).run()
    return _moved(state, Reply.ACTION_COMPLETE, req, ticker, "current")
