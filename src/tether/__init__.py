"""Tether: behavior-tree workflows for AI agents, a replay-safe runtime, and a guard.

The public Python API is re-exported lazily so that `import tether` stays cheap for the CLI:
- `tether.load_tree`: tree loading and validation;
- `tether.Runtime`: the verb layer over a store;
- `tether.TetherError`: every error Tether raises, with its code;
- `tether.build`: trees in code, and a walk of one in process (`docs/trees-in-code.md`).

Type checkers see the real names through the `if TYPE_CHECKING:` imports below
(`tests/package/test_typed.py`); at run time `__getattr__` imports each on first use
(`tests/cli/test_lean_start.py`). The shapes of the verbs' results are in `tether.results`.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from tether import build
    from tether.errors import TetherError
    from tether.tree.load import load_tree
    from tether.verbs import Runtime


__version__ = "0.1.0"
__all__ = ["Runtime", "TetherError", "build", "load_tree"]


def __getattr__(name: str) -> Any:
    if name == "load_tree":
        from tether.tree.load import load_tree

        return load_tree
    if name == "Runtime":
        from tether.verbs import Runtime

        return Runtime
    if name == "build":
        import tether.build

        return tether.build
    if name == "TetherError":
        from tether.errors import TetherError

        return TetherError
    raise AttributeError(name)
