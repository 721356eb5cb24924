"""The protocol gate: the `Acknowledge_Protocol` request every fresh execution opens with.

Owns the gate's name and text (also served as the MCP server's instructions). It does not decide
what accepting or rejecting does; that is in `tether.engine.core`.
"""

from __future__ import annotations

GATE_NAME = "Acknowledge_Protocol"

PROTOCOL_TEXT = """\
You are driving a Tether execution: a behavior tree that decides what happens next. You do the
work; the runtime decides the order. One call per step:

1. A request is {type: "evaluate"} (a precondition: judge it honestly, answer eval true or
   false), {type: "instruct"} (work: do it, answer submit success, failure, or running while
   still working; think records checkpoints), {type: "human"} (only a person may answer it:
   tell the user what it asks and wait), or {status: "done"} / {status: "failure"}. Inside a
   loop a request carries `item` {name, index, value}: $ITEM in its text is that value.
2. Every answer returns `next`, the request that follows: answer it directly. Call next only
   to look again; it is replay-safe.
3. $VAR ($LOCAL) is the execution's blackboard; $CONST ($GLOBAL) is read-only. Send a step's
   writes with its answer: submit success --set PATH=VALUE (repeat for each path). They land
   with the answer or, if it is refused, not at all. Read them with var.
4. Pass back the step token of the request you answer; a stale token is refused, so a retried
   answer never advances twice. Never skip, reorder or invent steps.

Submit success to accept this protocol and begin; submit failure to decline."""
