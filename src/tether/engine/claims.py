"""Claims: a team of agents on one execution, each branch answered by the agent that holds it.

Owns:
- what may be claimed (`claimable`): the action of an open step inside a `parallel` node or a
  `for_each` loop (a branch, or an item);
- the `Claim` answer (`claim`): the claim is kept in the action's frame (`Key.CLAIM`: the agent,
  when its lease ends, the lease in seconds), so it ends with the action's attempt; claiming it
  again renews it (`renewed`), another agent is refused (`claimed`, naming the holder and when
  the lease ends) until the lease has lapsed, and then takes it over (`taken_over`, naming the
  agent whose lease lapsed and when);
- the holder's check on every answer to a step (`hold`: eval, submit, and a bot's close, which
  names no agent and so is refused): an answer to a claimed action from anyone but its holder is
  refused (`claimed`), even after the lease lapsed (the other agent claims it first, so the trace
  shows the takeover); the holder's answer starts its lease again, and its count of refused
  stops (`held_claim`: a sub-agent's stops are counted in its claim). A var write or a thought
  names no agent and is not held;
- who holds an open step's action (`holder`), for the guard's binding of sub-agents.

It does not own who an agent is (the caller names it) or the clock (`now` is passed in, and the
lease's end is recorded, so replay and `verify` read the same). Pure: no I/O.
"""

from __future__ import annotations

from tether.engine.answers import Claim, Outcome
from tether.engine.deadlines import deadline_after, passed
from tether.engine.names import Key, Kind, Reply
from tether.engine.phases import cursor_of, named
from tether.engine.ticking import chain
from tether.engine.trace import node_key, record
from tether.errors import TetherError

MAX_LEASE = 366 * 24 * 3600  # the longest lease in seconds, as a human step's longest timeout
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def claimable(tree: dict[str, Any], path: list[int]) -> bool:
    """Whether the action at `path` is in a branch: below a `parallel` node, or in (or below)
    a node with `for_each`."""
    links = chain(tree, path)
    return any(
        "for_each" in node or (depth < len(path) and node["type"] == "parallel")
        for depth, (node, _) in enumerate(links)
    )


def claim(tree: dict[str, Any], state: dict[str, Any], answer: Claim, now: str) -> Outcome:
    """Apply a `Claim` on `state` (a working copy)."""
    lease = answer.lease
    if isinstance(lease, bool) or not isinstance(lease, int) or not 1 <= lease <= MAX_LEASE:
        raise TetherError(
            "invalid_value",
            f"a lease is a whole number of seconds from 1 to {MAX_LEASE}, not {lease!r}",
        )
    if not answer.agent:
        raise TetherError("invalid_value", "a claim names its agent: a non-empty name")
    req = named(state, answer.step)
    if req["path"] is None or not claimable(tree, req["path"]):
        raise TetherError(
            "invalid_value",
            f"{req['name']!r} is not in a parallel branch or a for_each item: there is nothing "
            "to share, so nothing to claim",
            current=dict(req),
        )
    frame = state["runtime"][node_key(req["path"])]
    held = frame.get(Key.CLAIM)
    fields: dict[str, Any] = {"agent": answer.agent, "lease": answer.lease}
    if held is None:
        outcome = Reply.CLAIMED
    elif held["agent"] == answer.agent:
        outcome = Reply.RENEWED
    elif passed(held["until"], now):
        outcome = Reply.TAKEN_OVER
        fields.update(lapsed={"agent": held["agent"], "until": held["until"]})
    else:
        raise _held_by(held, req)
    until = deadline_after(now, answer.lease)
    frame[Key.CLAIM] = {"agent": answer.agent, "until": until, "lease": answer.lease}
    item = req["item"]["index"] if "item" in req else None
    entry = record(
        state,
        now,
        Kind.CLAIM,
        cursor_of(req),
        req["name"],
        item=item,
        until=until,
        outcome=outcome,
        **fields,
    )
    response = {"status": outcome, "agent": answer.agent, "until": until, "current": dict(req)}
    return Outcome(state, response, [entry])


def hold(state: dict[str, Any], req: dict[str, Any], agent: str | None, now: str) -> None:
    """Refuse (`claimed`) an answer to `req` from anyone but the holder of its action's claim;
    the holder's answer starts its lease again."""
    frame = state["runtime"].get(node_key(req["path"] or ()), {})
    held = frame.get(Key.CLAIM)
    if held is None:
        return
    if held["agent"] != agent:
        raise _held_by(held, req)
    renewed = {k: v for k, v in held.items() if k != "stops"}  # its refused stops start again
    frame[Key.CLAIM] = dict(renewed, until=deadline_after(now, held["lease"]))


def held_claim(state: dict[str, Any], req: dict[str, Any], agent: str) -> dict[str, Any]:
    """The claim `agent` holds on the action of the open request `req` (the dict kept in its
    frame, which a sub-agent's refused stops in a row are counted in, as `stops`); refused
    (`claimed`) when another holds it, `invalid_value` when nobody does."""
    held = state["runtime"].get(node_key(req["path"] or ()), {}).get(Key.CLAIM)
    if held is None:
        raise TetherError(
            "invalid_value",
            f"{req['name']!r} is not claimed: only its holder's stop is counted against it",
            current=dict(req),
        )
    if held["agent"] != agent:
        raise _held_by(held, req)
    return held


def holder(state: dict[str, Any], req: dict[str, Any]) -> dict[str, Any] | None:
    """`{agent, until}` of the claim on the action of the open request `req`, or None."""
    held = state["runtime"].get(node_key(req["path"] or ()), {}).get(Key.CLAIM)
    return None if held is None else {"agent": held["agent"], "until": held["until"]}


def _held_by(held: dict[str, Any], req: dict[str, Any]) -> TetherError:
    return TetherError(
        "claimed",
        f"{req['name']!r} is claimed by {held['agent']!r} until {held['until']}; only it "
        "answers it (after that, claim it to take it over)",
        holder=held["agent"],
        until=held["until"],
        current=dict(req),
    )
