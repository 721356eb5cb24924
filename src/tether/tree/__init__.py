"""Tree files: loading, strict validation, normalisation, hashing, JSON Schema, CEL expressions.

The public names are imported on first use (PEP 562), so `import tether.tree` and
`tether.tree.expressions` stay cheap: YAML is imported only by a load, the CEL library only when
an expression is compiled. Imports nothing of Tether except `tether.errors`.

- `load_tree(path, root=None) -> Tree`, `load_tree_text(text, source_name, base_dir=None) -> Tree`,
  `normalise(raw, source, base_dir=None) -> dict` (`load.py`)
- `Tree` (`.data`, `.hash`, `.source`), `tree_hash(data)`, `canonical_json(data)`
  (`canonical.py`)
- `json_schema() -> dict` (`schema.py`)
- `check_expression`, `evaluate`, `evaluate_condition`, `evaluate_list`, `ExpressionError`
  (`expressions.py`)
"""

from __future__ import annotations

import importlib
from typing import Any

_HOMES = {
    "load_tree": "load",
    "load_tree_text": "load",
    "normalise": "load",
    "Tree": "canonical",
    "tree_hash": "canonical",
    "canonical_json": "canonical",
    "json_schema": "schema",
    "check_expression": "expressions",
    "evaluate": "expressions",
    "evaluate_condition": "expressions",
    "evaluate_list": "expressions",
    "ExpressionError": "expressions",
}

__all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'tether.tree' has no attribute {name!r}")
    return getattr(importlib.import_module(f"tether.tree.{home}"), name)
