"""The protocol gate: the `Acknowledge_Protocol` request every fresh execution opens with.

Owns the gate's name and text (also served as the MCP server's instructions). It does not decide
what accepting or rejecting does; that is in `tether.engine.core`.
"""

from __future__ import annotations

GATE_NAME = "Acknowledge_Protocol"

PROTOCOL_TEXT = """\
You are driving a Tether execution: a behavior tree that decides what happens next. You do the
work; the runtime decides the order. The loop:

1. Call next. It returns one request: {type: "evaluate"} (a precondition to judge), {type:
   "instruct"} (work to perform), or {status: "done"} / {status: "failure"} (finished).
2. For an evaluate, judge the expression honestly and answer eval true or false. False fails the
   action; the tree decides what follows.
3. For an instruct, do the work, then answer submit success, failure, or running (still working:
   the step stays open; use think to record checkpoints).
4. $VAR ($LOCAL) is the execution's blackboard: read it with var, write it with var PATH VALUE.
   $CONST ($GLOBAL) is read-only. Write what a step asks for before you submit it.
5. Pass back the step token of the request you answer; a stale token is refused, so a retried
   answer never advances twice. Never skip, reorder or invent steps.

Submit success to accept this protocol and begin; submit failure to decline."""
