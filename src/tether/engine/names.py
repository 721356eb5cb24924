"""The engine's named values: node results, execution statuses, phases and frame keys.

Owns: the strings the engine stores and compares, each named once. Their values are part of
the stored format (a state is a plain JSON dict, and executions already stored must still load),
so a value here never changes; only its name may.

It does not own what the values mean (the ticking in `tether.engine.ticking`, the phase rules in
`tether.engine.phases`, the answers in `tether.engine.answers`) nor the trace entry kinds.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Final


# What a node's tick yields, and what an `events` entry says of a node that finished.
RUNNING: Final = "running"
SUCCESS: Final = "success"
FAILURE: Final = "failure"
SKIPPED: Final = "skipped"

# `state["status"]` of an execution (running is RUNNING).
COMPLETE: Final = "complete"
FAILED: Final = "failed"

# `state["phase"]`.
PHASE_PROTOCOL: Final = "protocol"
PHASE_EVALUATING: Final = "evaluating"
PHASE_PERFORMING: Final = "performing"
PHASE_IDLE: Final = "idle"

# The keys of a runtime frame (one per entered, unfinished node; single letters, as stored).
CHILD: Final = "i"  # sequence/selector: the index of the current child
RESULTS: Final = "res"  # parallel: each child's result, None while it runs
STEP: Final = "k"  # action: the index of the current step
OPENED: Final = "o"  # action: the trace seq at which the open step was opened
WRITTEN: Final = "w"  # action: the var paths written while the open step was open
FAILING: Final = "x"  # action: a failure waiting to propagate
RETRIES: Final = "r"  # any node: the retries used
TOOLS_FROM: Final = "t"  # action reading TOOLS: the seq of its attempt's first tool call
ITEMS: Final = "e"  # for_each: the items, as evaluated on entry
ITEM: Final = "n"  # for_each: the index of the current item
RUNS: Final = "p"  # repeat: the runs done

# The loop keys of a frame, outermost first: a `for_each`'s items and index, a `repeat`'s runs
# done, the retries used. Another run at one level keeps the keys before it.
LEVELS: Final = (ITEMS, ITEM, RUNS, RETRIES)
