"""The answers an execution takes: one class per kind, and the `Outcome` of applying one.

Owns the answer classes (`Eval`, `Submit`, `Claim`, `Human`, `Timeout`, `Think`, `VarWrite`,
`Reset`, `Jump`, `Close`, `Stop`, `ToolCall`, `Independent`), each saying what it asks for, the
statuses a submit takes (`SUBMIT_STATUSES`), and `Outcome`: the new state, the response, the
trace entries and the node events of one answer.

It does not own what an answer does (`tether.engine.applying`, whose `apply` takes one), nor
which request it targets (`tether.engine.phases`). Pure data: no I/O, no clock.
"""

from __future__ import annotations

from tether.engine.names import Result

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "PERSON_NOTE",
    "SUBMIT_STATUSES",
    "Answer",
    "Claim",
    "Close",
    "Eval",
    "Human",
    "Independent",
    "Jump",
    "Outcome",
    "Reset",
    "Stop",
    "Submit",
    "Think",
    "Timeout",
    "ToolCall",
    "VarWrite",
]

SUBMIT_STATUSES = (Result.SUCCESS, Result.FAILURE, Result.RUNNING)

# The note of a `stop` let through because nothing open is the agent's to answer.
PERSON_NOTE = "every open step waits on a person (tether approve or reject, or the viewer)"


class Eval:
    """Answer an evaluate step: the precondition holds (True) or not. `values` (var path →
    value) are written first, recorded against the answered step."""

    __slots__ = ("agent", "note", "result", "step", "values")

    def __init__(
        self,
        result: bool,
        note: str | None = None,
        step: str | None = None,
        values: dict[str, Any] | None = None,
        agent: str | None = None,
    ) -> None:
        self.result = result
        self.note = note
        self.step = step
        self.values = values
        self.agent = agent


class Submit:
    """Answer an instruct step with `success`, `failure` or `running`; `values` as for `Eval`;
    `agent`, the agent answering (refused, `claimed`, when another holds the step's action)."""

    __slots__ = ("agent", "note", "status", "step", "values")

    def __init__(
        self,
        status: str,
        note: str | None = None,
        step: str | None = None,
        values: dict[str, Any] | None = None,
        agent: str | None = None,
    ) -> None:
        self.status = status
        self.note = note
        self.step = step
        self.values = values
        self.agent = agent


class Claim:
    """An agent (`agent`, the name it gives itself: a session, or a session and a sub-agent)
    claims the action of the open step `step` names (else the first), in a `parallel` branch or
    a `for_each` item, for `lease` seconds: until then only it answers that action's steps, and
    each of its answers starts the lease again. Its holder claiming again renews it; another
    agent is refused (`claimed`) until the lease lapses, and may then take it over. Recorded as
    a `claim` entry (`claimed`, `renewed` or `taken_over`)."""

    __slots__ = ("agent", "lease", "step")

    def __init__(self, agent: str, lease: int, step: str | None = None) -> None:
        self.agent = agent
        self.lease = lease
        self.step = step


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


class Timeout:
    """A human step's deadline passed with no answer (the open human step `step` names, else the
    first open one): recorded as a `timeout` entry, then the step does what its `on_timeout`
    says: `reject` (its action fails, as on a person's rejection) or `fail` (the execution
    fails). Refused (`wrong_phase`) for a step with no deadline or one not yet past it at the
    answer's time, so a timeout cannot be recorded early, nor replayed if it was."""

    __slots__ = ("step",)

    def __init__(self, step: str | None = None) -> None:
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
    open step the agent answers (else the first). `ended`: the harness cannot refuse it (the
    session ended): recorded as `ended`, never counted. `background`: the harness reports work
    still running in the background: let through, recorded as `background`, never counted.
    `park`: why the stop after `cap` refusals ends the turn; given, that stop is recorded as
    `parked` with it (the execution waits for a session to resume it), else as `allowed`.
    `agent` (with `step`): a sub-agent's stop while it holds the claim on the action of the open
    step `step`: recorded against that step, naming the agent, its refusals in a row counted in
    the claim (`claims.count_stop`), not the execution's."""

    __slots__ = ("agent", "background", "cap", "ended", "park", "step")

    def __init__(
        self,
        cap: int,
        ended: bool = False,
        *,
        background: bool = False,
        park: str | None = None,
        agent: str | None = None,
        step: str | None = None,
    ) -> None:
        self.cap = cap
        self.ended = ended
        self.background = background
        self.park = park
        self.agent = agent
        self.step = step


class ToolCall:
    """A tool call the agent made while a step was open (`ok`: true on a sign of success from
    the harness, false on a sign of failure, None with neither), recorded as a
    `tool` entry against the open step named by `step` (else the first). An open action whose
    `check` steps read `TOOLS` keeps it for them until the action's attempt ends. `agent`: the
    sub-agent that made it (the entry names it)."""

    __slots__ = ("agent", "input", "ok", "step", "tool")

    def __init__(
        self,
        tool: str,
        input: Any,
        ok: bool | None,
        step: str | None = None,
        agent: str | None = None,
    ) -> None:
        self.tool = tool
        self.input = input
        self.ok = ok
        self.step = step
        self.agent = agent


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
    Eval
    | Claim
    | Submit
    | Human
    | Timeout
    | Think
    | VarWrite
    | Reset
    | Jump
    | Close
    | Stop
    | ToolCall
    | Independent
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
