"""The phase machine of an execution: where it stands and which open request an answer targets.

Owns: creating a fresh, gated execution (`initial_state`) and restoring one for a reset
(`pristine`), the protocol gate's request (`open_gate`), the phase and status a tick leaves
(`settle`: protocol, evaluating, performing, idle; running, complete, failed), what `next`
returns (`current`, `all_open`), whether every open step waits on a person, and the selection of
the open request an answer targets (`named`, the one lookup of a step token; `select`,
`select_human`), with the refusals (`stale_step`, `wrong_phase`, `human_only`) when it names none
or the wrong kind, and the refusal of what comes only after the protocol gate (`require_gate`).

It does not own what a node does when ticked (`tether.engine.ticking`), what an answer does once
its request is chosen (`tether.engine.answers`), nor the gate's text (`tether.engine.protocol`).
Pure: no I/O, no clock.
"""

from __future__ import annotations

import copy

from tether.engine.names import Key, Phase, Reply, RequestType, Result, Status
from tether.engine.protocol import GATE_NAME, PROTOCOL_TEXT
from tether.engine.trace import node_key
from tether.errors import TetherError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

SCHEMA_VERSION = 1


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
        "status": Status.RUNNING,
        "phase": Phase.PROTOCOL,
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
    open_gate(state)
    return state


def open_gate(state: dict[str, Any]) -> None:
    state["open"] = [
        {
            "type": RequestType.INSTRUCT,
            "name": GATE_NAME,
            "instruction": PROTOCOL_TEXT,
            "step": f"gate:0:0:{state['seq']}:{state['salt']}",
            "path": None,
            "index": 0,
        }
    ]
    state["phase"] = Phase.PROTOCOL
    state["cursor"] = None


def pristine(state: dict[str, Any]) -> dict[str, Any]:
    out = dict(state)
    out.update(
        status=Status.RUNNING,
        protocol_accepted=False,
        var=copy.deepcopy(state["initial"]["var"]),
        const=copy.deepcopy(state["initial"]["const"]),
        runtime={},
        failure=None,
        since_reset=0,
    )
    out.pop("stops", None)
    return out


def current(state: dict[str, Any]) -> dict[str, Any]:
    """The response of `next`, and the `next` of every answer: the first open request, or
    exactly `{"status": "done"}` or `{"status": "failure"}`, as abtree and behaviors-sh answer
    (why it failed is the state's `failure`, and the message of the answer that ended it)."""
    if state["status"] == Status.COMPLETE:
        return {"status": Reply.DONE}
    if state["status"] == Status.FAILED:
        return {"status": Reply.FAILURE}
    return dict(state["open"][0])


def all_open(state: dict[str, Any]) -> list[dict[str, Any]]:
    """Every open request (several inside a `parallel`), or the terminal status as one item;
    a claimed one says who holds it and until when (`claim: {agent, until}`)."""
    if state["status"] != Status.RUNNING:
        return [current(state)]
    return [_held(state, r) for r in state["open"]]


def _held(state: dict[str, Any], req: dict[str, Any]) -> dict[str, Any]:
    """`req`, with its action's claim when one holds it."""
    out = dict(req)
    if req["path"] is not None:
        held = state["runtime"].get(node_key(req["path"]), {}).get(Key.CLAIM)
        if held is not None:
            out["claim"] = {"agent": held["agent"], "until": held["until"]}
    return out


def waits_on_person(requests: list[dict[str, Any]]) -> bool:
    """Whether every open request is a human step: nothing is the agent's to answer, so it may
    stop while a person decides."""
    return bool(requests) and all(r["type"] == RequestType.HUMAN for r in requests)


def named(state: dict[str, Any], token: str | None) -> dict[str, Any]:
    """The open request `token` names, else the first: the one lookup of a step token. A token
    that names no open step is refused (`stale_step`), with the open requests in the error."""
    open_ = state["open"]
    if token is None:
        return open_[0]
    for req in open_:
        if req["step"] == token:
            return req
    raise TetherError(
        "stale_step",
        f"step token {token!r} does not name an open step of this execution "
        "(it was already answered, belongs to an earlier attempt, or to another execution)",
        current=dict(open_[0]),
        open=[dict(r) for r in open_],
    )


def select(state: dict[str, Any], token: str | None, kind: str, verb: str) -> dict[str, Any]:
    """The open request an `eval` or `submit` (`verb`) answers: the one `token` names, which
    must be of `kind` (`wrong_phase`) and not a human step (`human_only`)."""
    req = named(state, token)
    if req["type"] == RequestType.HUMAN:
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


def select_human(state: dict[str, Any], token: str | None) -> dict[str, Any]:
    """The open human step `token` names, else the first open one; `wrong_phase` if none is
    open (or the token names a step that is not one)."""
    if token is None:
        req = next((r for r in state["open"] if r["type"] == RequestType.HUMAN), None)
    else:
        req = named(state, token)
    if req is None or req["type"] != RequestType.HUMAN:
        first = state["open"][0]
        raise TetherError(
            "wrong_phase",
            f"no human step is open: the open step {first['name']!r} is an {first['type']}, "
            "answered by the agent",
            current=dict(first),
        )
    return req


def require_gate(state: dict[str, Any], verb: str) -> None:
    """`wrong_phase` while the protocol gate is open: `verb` (think, jump, close, an independent
    action) comes after it."""
    if not state["protocol_accepted"]:
        raise TetherError(
            "wrong_phase",
            f"{verb} comes after the protocol gate, which is still open; accept it first",
            current=current(state),
        )


def cursor_of(req: dict[str, Any] | None) -> dict[str, Any] | None:
    if req is None or req["path"] is None:
        return None
    return {"path": list(req["path"]), "step": req["index"]}


def settle(
    state: dict[str, Any],
    open_: list[dict[str, Any]],
    result: str,
    reasons: list[str],
    root: str,
) -> None:
    """Set the phase after a tick of the root that yielded `result`: while it runs, the open
    requests are `open_` and the phase follows the first (evaluating or performing); once it
    finished, nothing is open, the phase is idle and the execution complete or failed (with
    the `reasons` gathered, else that the root `root` failed)."""
    if result == Result.RUNNING:
        state["open"] = open_
        first = open_[0]
        state["phase"] = (
            Phase.EVALUATING if first["type"] == RequestType.EVALUATE else Phase.PERFORMING
        )
        state["cursor"] = cursor_of(first)
        return
    state["open"] = []
    state["cursor"] = None
    state["phase"] = Phase.IDLE
    state["status"] = Status.COMPLETE if result == Result.SUCCESS else Status.FAILED
    if result == Result.FAILURE:
        state["failure"] = " ".join(reasons) or f"The root {root!r} failed."
