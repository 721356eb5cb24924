"""The guard: Tether's behavior engine over an agent's tool calls.

Owns nothing itself; it re-exports the public API lazily so that `import tether.guard` stays
cheap for the hook path: `Guard` (a rule set built from a configuration), `GuardSession` (one
session's state and decisions) and `Decision` (what fired and why). Three layers, each a
sub-package saying what it owns, each importing only those below it (`tests/guard/test_layers.py`):
`rules` (the rule engine: configuration to decision), `binding` (a session bound to a workflow
execution, through `tether.verbs`), `harness` (the agents' hooks, `serve`, `install`, the session
store, failure handling, replay); on top, `cli`, the `tether guard` command.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Decision", "Guard", "GuardSession"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from tether.guard.rules import ruleset

        return getattr(ruleset, name)
    raise AttributeError(name)
