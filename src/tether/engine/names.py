"""The engine's named values: node results, execution statuses, phases, request types, response
statuses, trace entry kinds and frame keys.

Owns: the strings the engine stores, returns and compares, each named once, as a `StrEnum` whose
members are those strings (a member compares, hashes and serialises as its value, so a state, a
response or a trace entry holding one is the same JSON as before). Their values are part of the
stored format and of what agents read (a state is a plain JSON dict, and executions already
stored must still load), so a value here never changes; only its name may.

It does not own what the values mean (the ticking in `tether.engine.ticking`, the phase rules in
`tether.engine.phases`, what answers do in `tether.engine.applying`), nor the outcomes an entry
records. `enum` is loaded by `re` already: naming these costs the step path no import.
"""

from __future__ import annotations

from enum import StrEnum


class Result(StrEnum):
    """What a node's tick yields, and what an `events` entry says of a node that finished."""

    RUNNING = "running"
    """The node has not finished: a step of it is open."""
    SUCCESS = "success"
    """The node finished and succeeded (its parent goes on, a selector stops)."""
    FAILURE = "failure"
    """The node finished and failed (a sequence stops, a selector tries the next child)."""
    SKIPPED = "skipped"
    """Its `when` was false as it was reached: it never ran, and counts as success."""


class Status(StrEnum):
    """`state["status"]`: where an execution is in its life."""

    RUNNING = "running"
    """Steps are open; answers are taken."""
    COMPLETE = "complete"
    """The root succeeded; nothing more is answered (a reset starts over)."""
    FAILED = "failed"
    """The root failed, or the protocol was declined; `state["failure"]` says why."""


class Phase(StrEnum):
    """`state["phase"]`: what the first open request waits for."""

    PROTOCOL = "protocol"
    """The protocol gate is open: submit success to accept it."""
    EVALUATING = "evaluating"
    """The first open request is an evaluate step (answered with eval)."""
    PERFORMING = "performing"
    """The first open request is an instruct or human step."""
    IDLE = "idle"
    """Nothing is open: the execution has finished."""


class RequestType(StrEnum):
    """An open request's `type`: which answer it takes."""

    EVALUATE = "evaluate"
    """A precondition to judge: answered with eval true or false."""
    INSTRUCT = "instruct"
    """Work to do: answered with submit success, failure or running."""
    HUMAN = "human"
    """For a person to answer: tether approve or reject, or the viewer."""


class Reply(StrEnum):
    """A response's `status`: what an answer did, or (`DONE`, `FAILURE`) that the execution is
    over, as `next` says it."""

    DONE = "done"
    """`next` of a complete execution."""
    FAILURE = "failure"
    """`next` of a failed execution."""
    RUNNING = "running"
    """A step submitted as running stays open; or the gate answered with neither."""
    PROTOCOL_ACCEPTED = "protocol_accepted"
    """The protocol gate was accepted: the tree starts."""
    PROTOCOL_REJECTED = "protocol_rejected"
    """The protocol gate was declined: the execution failed."""
    EVALUATION_PASSED = "evaluation_passed"
    """An evaluate step was answered true."""
    EVALUATION_FAILED = "evaluation_failed"
    """An evaluate step was answered false: its action failed."""
    STEP_COMPLETE = "step_complete"
    """An instruct step succeeded; its action has more steps."""
    ACTION_COMPLETE = "action_complete"
    """An action finished with success (its last step, or a close)."""
    ACTION_FAILED = "action_failed"
    """An instruct step was submitted as failure, or a check after it failed."""
    APPROVED = "approved"
    """A person approved a human step."""
    REJECTED = "rejected"
    """A person rejected a human step."""
    WRITTEN = "written"
    """A value was written into `var`."""
    RECORDED = "recorded"
    """A thought or a tool call was recorded."""
    ALLOWED = "allowed"
    """An agent's stop was let through."""
    REFUSED = "refused"
    """An agent's stop was refused: the execution still needs it."""
    ENDED = "ended"
    """An agent's session ended while the execution runs, in a harness that cannot refuse it."""
    BACKGROUND = "background"
    """An agent's stop was let through while its harness ran work in the background."""
    PARKED = "parked"
    """An agent's stop was let through before its harness's own cap: the execution waits for a
    session to resume it."""
    TIMED_OUT = "timed_out"
    """A human step's deadline passed with no answer: it did what its `on_timeout` says."""
    JUMPED = "jumped"
    """The cursor moved to another action."""
    CALLED = "called"
    """An independent action was called."""
    CLOSED = "closed"
    """An independent action was closed."""
    RESET = "reset"
    """The execution is back at its start, gate re-armed."""
    CLAIMED = "claimed"
    """An agent claimed a branch's open action: only it answers it while its lease runs."""
    RENEWED = "renewed"
    """The agent holding a claim claimed it again: its lease starts over."""
    TAKEN_OVER = "taken_over"
    """An agent claimed an action whose holder's lease had lapsed (the entry names both)."""
    LAPSED = "lapsed"
    """A claim's lease ended with no answer from its holder (the inbox lists it)."""


class Kind(StrEnum):
    """A trace entry's `kind`: what it records."""

    PROTOCOL = "protocol"
    """An answer to the protocol gate."""
    EVALUATE = "evaluate"
    """An eval of an evaluate step."""
    INSTRUCT = "instruct"
    """A submit of an instruct step."""
    HUMAN = "human"
    """A person's answer to a human step."""
    TIMEOUT = "timeout"
    """A human step's deadline passed with no answer."""
    CHECK = "check"
    """A `check` step, or a modifier's condition (`when`, `until`, a `for_each` list), judged."""
    VAR_WRITE = "var_write"
    """A value written into `var`."""
    THINK = "think"
    """A checkpoint thought."""
    TOOL = "tool"
    """A tool call the bound agent made."""
    STOP = "stop"
    """The bound agent tried to end its turn."""
    JUMP = "jump"
    """The cursor moved to an action out of order."""
    CLOSE = "close"
    """An action closed before its remaining steps."""
    INDEPENDENT = "independent"
    """An independent action called or closed."""
    RESET = "reset"
    """The execution was reset."""
    CLAIM = "claim"
    """An agent claimed, renewed or took over the open action of a branch."""


class Key(StrEnum):
    """The keys of a runtime frame (one per entered, unfinished node; single letters, as
    stored)."""

    CHILD = "i"
    """Sequence or selector: the index of the current child."""
    RESULTS = "res"
    """Parallel: each child's result, None while it runs."""
    STEP = "k"
    """Action: the index of the current step."""
    OPENED = "o"
    """Action: the trace seq at which the open step was opened."""
    BEGAN = "b"
    """Action: the trace seq at which its current attempt began (its first step reached); none
    in a frame begun before Tether kept it."""
    WRITTEN = "w"
    """Action: the var paths written while the open step was open."""
    DEADLINE = "d"
    """Action: when its open human step stops waiting (a step with a `timeout`)."""
    FAILING = "x"
    """Action: a failure waiting to propagate."""
    RETRIES = "r"
    """Any node: the retries used."""
    TOOLS_FROM = "t"
    """Action reading TOOLS: the seq of its attempt's first tool call."""
    ITEMS = "e"
    """`for_each`: the items, as evaluated on entry."""
    ITEM = "n"
    """`for_each`: the index of the current item."""
    RUNS = "p"
    """`repeat`: the runs done."""
    CLAIM = "c"
    """Action in a branch: its claim, `{"agent", "until", "lease"}` (lease in seconds)."""


# The loop keys of a frame, outermost first: a `for_each`'s items and index, a `repeat`'s runs
# done, the retries used. Another run at one level keeps the keys before it.
LEVELS = (Key.ITEMS, Key.ITEM, Key.RUNS, Key.RETRIES)
