"""Replay: re-derive an execution's state from its trace alone, and compare.

Owns the mapping from each trace entry back to the answer that produced it, the comparison
that `tether verify` reports, the rule for whether an edited tree still fits an execution
(`refit`: its trace must replay against the new tree exactly), and `fork`: a new execution
derived by replaying a prefix of another's trace. `check` entries are not answers:
replay regenerates them and then compares them with the stored ones like every other entry.
`stop` and `tool` entries, recorded from a bound agent session, and `independent` entries (a
call of an action outside the workflow) are answers like the rest. It does not read or write
storage.
"""

from __future__ import annotations

import json
from typing import Any

from tether.engine.public import (
    Answer,
    Claim,
    Close,
    Condition,
    Eval,
    Human,
    Independent,
    Jump,
    Key,
    Kind,
    Outcome,
    Reply,
    Reset,
    Result,
    Stop,
    Submit,
    Think,
    Timeout,
    ToolCall,
    VarWrite,
    apply,
    default_condition,
    initial_state,
    node_at,
    tool_records,
)
from tether.errors import TetherError

# The fields of the state that the trace determines (revision and timestamps it does not).
DERIVED_FIELDS = (
    "status",
    "phase",
    "cursor",
    "open",
    "protocol_accepted",
    "var",
    "const",
    "runtime",
    "failure",
    "seq",
    "since_reset",
    "stops",
)


def fresh_state(tree: dict[str, Any], stored: dict[str, Any]) -> dict[str, Any]:
    """The state the stored execution had at `start`, from its recorded initial scopes."""
    base = initial_state(
        {**tree, "state": {"var": {}, "const": {}}},
        uri=stored["uri"],
        tree_uri=stored["tree_uri"],
        tree_hash=stored["tree_hash"],
        now=stored["created_at"],
        salt=stored["salt"],
        var=stored["initial"]["var"],
        const=stored["initial"]["const"],
    )
    return base


def replay(
    tree: dict[str, Any],
    stored: dict[str, Any],
    trace: list[dict[str, Any]],
    condition: Condition = default_condition,
    upto: int | None = None,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Rebuild the state from the trace (its first `upto` entries, if given).

    Returns the rebuilt state and the entries the replay produced, to compare with `trace`.
    """
    state = fresh_state(tree, stored)
    produced: list[dict[str, Any]] = []
    records: list[dict[str, Any]] = []  # what checks may see as TOOLS
    for entry in trace[:upto] if upto is not None else trace:
        outcome = apply_entry(tree, state, entry, condition, records)
        if outcome is not None:
            state = outcome.state
            produced.extend(outcome.entries)
            records.extend(tool_records(outcome.entries, 0))
    return state, produced


def apply_entry(
    tree: dict[str, Any],
    state: dict[str, Any],
    entry: dict[str, Any],
    condition: Condition = default_condition,
    tools: list[dict[str, Any]] | None = None,
) -> Outcome | None:
    """Replay one stored trace entry on `state`: the engine's outcome for the answer that wrote
    it, or None for an entry that is not an answer (`check` entries are regenerated). `tools`
    are the `tool_records` of the entries replayed so far, for checks that read `TOOLS`."""
    answer = answer_of(entry, state)
    if answer is None:
        return None
    if isinstance(answer, Reset):
        # Entries before a reset were cleared from the trace; numbering goes on from here.
        state = dict(state, seq=entry["seq"], since_reset=max(state["since_reset"], 1))
    return apply(tree, state, answer, entry["ts"], condition, tools)


def answer_of(entry: dict[str, Any], state: dict[str, Any]) -> Answer | None:
    """The answer that wrote a trace entry, aimed at the step its cursor names in `state`."""
    kind = entry["kind"]
    if kind == Kind.CHECK:
        return None
    if kind == Kind.RESET:
        return Reset()
    if kind == Kind.THINK:
        return Think(entry["submitted"], _token_at(state, entry.get("cursor")))
    if kind == Kind.VAR_WRITE:
        return VarWrite(entry["path"], entry["value"], _token_at(state, entry.get("cursor")))
    if kind == Kind.JUMP:
        return Jump(entry["cursor"]["path"], entry.get("note"))
    if kind == Kind.STOP:
        outcome = entry["outcome"]
        park = entry.get("note") if outcome == Reply.PARKED else None
        agent = entry.get("agent")
        return Stop(
            int(entry["cap"]),
            outcome == Reply.ENDED,
            background=outcome == Reply.BACKGROUND,
            park=park,
            agent=agent,
            step=_token_at(state, entry.get("cursor")) if agent else None,
        )
    if kind == Kind.INDEPENDENT:
        return Independent(
            entry["name"], entry["outcome"] == Reply.CLOSED, entry.get("values"), entry.get("note")
        )
    if kind == Kind.TOOL:
        token = _token_at(state, entry.get("cursor"))
        agent = entry.get("agent")
        return ToolCall(str(entry["tool"]), entry.get("input"), entry["ok"], token, agent)
    token = _token_at(state, entry.get("cursor"))
    if kind == Kind.EVALUATE:
        return Eval(bool(entry["submitted"]), entry.get("note"), token, agent=entry.get("agent"))
    if kind in (Kind.INSTRUCT, Kind.PROTOCOL):
        return Submit(str(entry["submitted"]), entry.get("note"), token, agent=entry.get("agent"))
    if kind == Kind.CLAIM:
        return Claim(str(entry["agent"]), int(entry["lease"]), token)
    if kind == Kind.HUMAN:
        return Human(
            entry["outcome"] == Result.SUCCESS, str(entry.get("by")), entry.get("note"), token
        )
    if kind == Kind.CLOSE:
        return Close(entry.get("note"), token)
    if kind == Kind.TIMEOUT:
        return Timeout(token)
    raise TetherError(
        "corrupt_execution", f"trace entry {entry.get('seq')} has unknown kind {kind!r}"
    )


def _token_at(state: dict[str, Any], cursor: dict[str, Any] | None) -> str | None:
    if cursor is None:
        return None
    for req in state["open"]:
        if req["path"] == cursor["path"] and req["index"] == cursor["step"]:
            return str(req["step"])
    return None


def verify(
    tree: dict[str, Any],
    stored: dict[str, Any],
    trace: list[dict[str, Any]],
    condition: Condition = default_condition,
) -> list[dict[str, Any]]:
    """Differences between the stored execution and its replay; empty when they agree."""
    try:
        state, produced = replay(tree, stored, trace, condition)
    except TetherError as exc:
        return [{"field": "trace", "problem": f"replay refused an answer: {exc.message}"}]
    diffs: list[dict[str, Any]] = []
    for name in DERIVED_FIELDS:
        if _derived(state, stored, name) != stored.get(name):
            diffs.append({"field": name, "stored": stored.get(name), "replayed": state.get(name)})
    for i in range(max(len(produced), len(trace))):
        want = produced[i] if i < len(produced) else None
        have = trace[i] if i < len(trace) else None
        if want != have:
            diffs.append({"field": f"trace[{i}]", "stored": have, "replayed": want})
    return diffs


def refit(
    old: dict[str, Any],
    new: dict[str, Any],
    stored: dict[str, Any],
    trace: list[dict[str, Any]],
    condition: Condition = default_condition,
) -> dict[str, Any]:
    """The execution's state under the tree `new`, or `invalid_tree` saying why it does not fit.

    The rule: the execution fits the new tree when (1) every path its trace and its open steps
    name still holds a node of the same type and name, and (2) replaying the whole trace against
    the new tree is accepted, produces exactly the stored trace entries, and ends in the stored
    state, except for the texts of the open steps (which come from the new tree). So texts,
    descriptions, triggers, criteria and new trailing actions or phases may change; what the
    execution already did may not. The returned state is the stored one with the replayed
    fields, ready to commit with the new tree.
    """

    def problem(text: str) -> TetherError:
        return TetherError("invalid_tree", f"the edited tree does not fit the execution: {text}")

    named = [(e.get("cursor") or {}).get("path") for e in trace]
    named += [r["path"] for r in stored["open"]]
    for path in [p for p in named if p is not None]:
        was = node_at(old, path)
        try:
            now = node_at(new, path)
        except TetherError:
            raise problem(f"{was['type']} {was['name']!r} at {path} is gone") from None
        if (now["type"], now["name"]) != (was["type"], was["name"]):
            raise problem(
                f"{was['type']} {was['name']!r} at {path} is now {now['type']} {now['name']!r}"
            )
    try:
        state, produced = replay(new, stored, trace, condition)
    except TetherError as exc:
        raise problem(f"its trace no longer replays: {exc.message}") from None
    for have, want in zip(trace, produced, strict=False):
        if have != want:
            raise problem(
                f"trace entry {have['seq']} ({have['kind']} of {have.get('name')!r}) would read "
                f"{json.dumps(want, ensure_ascii=False)}"
            )
    if len(trace) != len(produced):
        raise problem(f"its trace replays to {len(produced)} entries instead of {len(trace)}")

    def shape(requests: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
        # An open human step's deadline too: an edit may not give it a timeout, or change one.
        keys = ("type", "name", "path", "index", "step", "deadline", "on_timeout")
        return [tuple(r.get(key) for key in keys) for r in requests]

    for field in DERIVED_FIELDS:
        same = (
            shape(state["open"]) == shape(stored["open"])
            if field == "open"
            else _derived(state, stored, field) == stored.get(field)
        )
        if not same:
            raise problem(f"replaying its trace ends with a different {field}")
    return {**stored, **{f: state[f] for f in DERIVED_FIELDS if f in state}}


def _derived(state: dict[str, Any], stored: dict[str, Any], field: str) -> Any:
    """The replayed `field` as the stored state would hold it: an action's frame keeps no
    `Key.BEGAN` where the stored frame has none (an attempt begun before Tether kept it, which
    a replay from the start numbers)."""
    replayed, kept = state.get(field), stored.get(field)
    if field != "runtime" or not isinstance(replayed, dict) or not isinstance(kept, dict):
        return replayed
    older = {key for key, frame in kept.items() if Key.BEGAN not in frame}
    return {
        key: {k: v for k, v in frame.items() if k != Key.BEGAN} if key in older else frame
        for key, frame in replayed.items()
    }


def fork(
    tree: dict[str, Any],
    stored: dict[str, Any],
    trace: list[dict[str, Any]],
    at: int,
    *,
    uri: str,
    salt: str,
    now: str,
    condition: Condition = default_condition,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A new execution at `uri` whose trace is the first `at` entries of `trace`: its state
    after replaying them, and those entries (what it is created with, in one commit).

    The state is derived by replay, never copied; the new execution has a salt of its own, so
    the two never accept each other's step tokens. `at` must be a point between answers:
    `check` entries belong to the answer before them, so a fork cannot keep an answer and drop
    the checks it ran (`invalid_value`, naming the points around it). The stored trace must
    replay to itself up to `at` (`corrupt_execution` otherwise: `tether verify` says why).
    """
    if not 0 <= at <= len(trace):
        raise TetherError(
            "invalid_value",
            f"at {at} is outside the trace: it holds {len(trace)} entries, so K runs from 0 "
            f"to {len(trace)}",
            at=at,
        )
    if at < len(trace) and trace[at]["kind"] == Kind.CHECK:
        before = max((k for k in range(at) if trace[k]["kind"] != Kind.CHECK), default=0)
        after = next((k for k in range(at, len(trace)) if trace[k]["kind"] != Kind.CHECK), None)
        after = len(trace) if after is None else after
        raise TetherError(
            "invalid_value",
            f"at {at} splits an answer from the check it ran (entry {at} is a check of "
            f"{trace[at].get('name')!r}); fork at {before} or at {after}",
            at=at,
        )
    origin = dict(stored, uri=uri, salt=salt, created_at=now)
    state, produced = replay(tree, origin, trace, condition, upto=at)
    if produced != trace[:at]:
        raise TetherError(
            "corrupt_execution",
            f"the trace of {stored['uri']} does not replay to itself before entry {at}; "
            "tether verify names the difference",
            uri=stored["uri"],
        )
    return state, produced
