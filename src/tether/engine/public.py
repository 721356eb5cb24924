"""The engine's public face: the names the rest of Tether (verbs, replay, guard, viewer,
treetest, tests) imports from the pure engine, so that no caller depends on how it is split.

Owns nothing of its own. It re-exports:
- the answer classes and `Outcome` (`tether.engine.answers`) and `apply`, which dispatches each
  answer to what it does (`tether.engine.applying`);
- node results, execution statuses, phases and frame keys (`tether.engine.names`);
- the phase machine's questions (`current`, `all_open`, `waits_on_person`, `initial_state`:
  `tether.engine.phases`) and the open steps past their deadline (`expired`:
  `tether.engine.deadlines`);
- what checks see of `TOOLS` (`tether.engine.trace`) and the node semantics' helpers
  (`tether.engine.ticking`).
Every function is pure: it takes the normalised tree (`tether.tree`'s `data` dict), the execution
state and an answer, and returns a new state, a response and the new trace entries. There is no
I/O and no clock: the caller passes `now`.

It does not own persistence (the store), concurrency (the verbs commit under the store's lock), the
tree format (`tether.tree`), or argument parsing (the CLI and MCP edges).

State layout (a plain JSON dict; the store persists it as is):
- `runtime` maps a node key ("" for the root, "0.2" for the third child of the first child) to a
  frame, only for nodes that are entered and not finished, so a step costs O(depth), whatever the
  tree's size. A frame's keys are `tether.engine.names.Key` (each says what it holds); a new run
  keeps the keys of the loops outside it (`LEVELS`) and starts the rest afresh.
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

from tether.engine import answers
from tether.engine.answers import *  # noqa: F403 (every answer class, `answers.__all__`)
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
    attempt_began,
    chain,
    default_condition,
    default_list,
    node_at,
    reads_tools,
    side_by_side,
    tool_policy,
)
from tether.engine.trace import tool_records, tools_since

__all__ = [
    *answers.__all__,
    "SCHEMA_VERSION",
    "Condition",
    "Key",
    "Kind",
    "Phase",
    "Reply",
    "RequestType",
    "Result",
    "Status",
    "all_open",
    "apply",
    "attempt_began",
    "chain",
    "current",
    "default_condition",
    "default_list",
    "expired",
    "holder",
    "initial_state",
    "node_at",
    "reads_tools",
    "side_by_side",
    "tool_policy",
    "tool_records",
    "tools_since",
    "waits_on_person",
]
