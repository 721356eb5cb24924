"""The pure semantics of a running tree: the engine's public face.

Owns: nothing of its own; it re-exports the names the rest of Tether imports from the engine
(verbs, replay, guard, viewer, treetest, tests), so no caller depends on how the engine is split:
- `tether.engine.names`: node results, execution statuses, phases and frame keys, named once;
- `tether.engine.answers`: the answer classes and `Outcome`;
- `tether.engine.applying`: `apply`, which dispatches each answer to what it does, with the trace
  entries it produces and the response it returns;
- `tether.engine.phases`: the phase machine (protocol gate, performing/idle, `current`, and the
  selection of the open request an answer targets);
- `tether.engine.deadlines`: a human step's deadline, and the open steps past theirs (`expired`);
- `tether.engine.trace`: the one builder of a trace entry, and what checks see of `TOOLS`;
- `tether.engine.closing`: what an action needs before it may finish (writes, checks);
- `tether.engine.ticking`: the node semantics (entering and finishing nodes, composites, the
  modifiers `retries`, `optional`, `when`, `for_each`, `repeat`, `invert`).
Every function is pure: it takes the normalised tree (`tether.tree`'s `data` dict), the execution
state and an answer, and returns a new state, a response and the new trace entries. There is no
I/O and no clock: the caller passes `now`.

It does not own persistence (the store), concurrency (the verbs commit under the store's lock), the
tree format (`tether.tree`), or argument parsing (the CLI and MCP edges).

State layout (a plain JSON dict; the store persists it as is):
- `runtime` maps a node key ("" for the root, "0.2" for the third child of the first child) to a
  frame, only for nodes that are entered and not finished, so a step costs O(depth), whatever the
  tree's size: `i` current child (sequence/selector), `res` child results (parallel), `k` step
  index, `o` the trace seq at which the open step was opened, `w` var paths written while it was
  open, `x` a failure waiting to propagate (action), `r` retries used (any node), `t` the seq of
  the first tool call recorded during this attempt of an action whose checks read `TOOLS`, `d`
  when its open human step stops waiting (a step with a `timeout`: the time of the answer that
  opened it, plus the timeout; its request carries it as `deadline`, with `on_timeout`); a
  loop adds `e` the items of a `for_each` (its list as evaluated on entry) with `n` the index of
  the current one, and `p` the runs of a `repeat` done. A new run keeps the keys of the loops
  outside it (`LEVELS`) and starts the rest afresh. These keys, the statuses and the phases are
  named in `tether.engine.names`.
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
from tether.engine.applying import apply
from tether.engine.claims import holder
from tether.engine.deadlines import expired
from tether.engine.names import Key, Kind, Phase, Reply, RequestType, Result, Status
from tether.engine.phases import (
    SCHEMA_VERSION,
    all_open,
    current,
    initial_state,
    waits_on_person,
)
from tether.engine.ticking import (
    Condition,
    Ticker,
    default_condition,
    default_list,
    node_at,
    reads_tools,
    tool_policy,
    write_scope,
)
from tether.engine.trace import tool_records, tools_since

# `_Ticker` stays reachable under its former name (a viewer test watches its `run`).
_Ticker = Ticker

__all__ = [
    "PERSON_NOTE",
    "SCHEMA_VERSION",
    "SUBMIT_STATUSES",
    "Answer",
    "Claim",
    "Close",
    "Condition",
    "Eval",
    "Human",
    "Independent",
    "Jump",
    "Key",
    "Kind",
    "Outcome",
    "Phase",
    "Reply",
    "RequestType",
    "Reset",
    "Result",
    "Status",
    "Stop",
    "Submit",
    "Think",
    "Timeout",
    "ToolCall",
    "VarWrite",
    "_Ticker",
    "all_open",
    "apply",
    "current",
    "default_condition",
    "default_list",
    "expired",
    "holder",
    "initial_state",
    "node_at",
    "reads_tools",
    "tool_policy",
    "tool_records",
    "tools_since",
    "waits_on_person",
    "write_scope",
]
