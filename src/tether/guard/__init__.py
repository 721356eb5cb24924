"""The guard: Tether's behavior engine over an agent's tool calls.

Owns nothing itself; it re-exports the public API lazily so that `import tether.guard` stays
cheap for the hook path: `Guard` (a rule set built from a configuration), `GuardSession` (one
session's state and decisions) and `Decision` (what fired and why). The modules, one concept
each: `triggers`, `patterns`, `conditions`, `state`, `messages`, `rules`, `profiles`, `config`,
`plan`, `engine`, `classifier`, `session_store`, `hooks`, `install`, `serve`, `replay`, `cases`,
`cli`; and the workflow binding: `binding`, `steptools`, `sandbox`.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Decision", "Guard", "GuardSession"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from tether.guard.rules import engine

        return getattr(engine, name)
    raise AttributeError(name)
