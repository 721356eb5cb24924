"""Where the viewer's data comes from: executions and tree files, read through the store.

Owns recognising an execution (a state file with its embedded tree beside it), finding the
executions under a folder, and loading one execution (state, tree, trace), its state alone, or a
tree file for `render`. Every execution file is read by its store, under the store's rules (for
files: names derived from the state file's own, no symbolic link followed), never here. It does
not confine paths to a served folder (`tether.viewer.server` does), derive statuses
(`tether.viewer.model`) or draw anything.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from tether.store import store_for

TREE_SUFFIX = ".tree.json"
# Folders that never hold executions worth listing and can be large.
_SKIPPED_DIRS = frozenset({".git", ".venv", "venv", "node_modules", "__pycache__"})
MAX_DEPTH = 6


@dataclass(frozen=True)
class Execution:
    """One execution as stored: the raw state (revision, salt and initial scopes included), the
    embedded tree and the committed trace."""

    path: str
    state: dict[str, Any]
    tree: dict[str, Any]
    trace: list[dict[str, Any]]


def is_execution(path: str) -> bool:
    return os.path.isfile(path) and os.path.isfile(path + TREE_SUFFIX)


def load_state(path: str) -> dict[str, Any]:
    """The committed state of the execution at `path` (a file path or a store URI)."""
    store = store_for(path)
    return store.load(store.canonical(path))


def load_execution(path: str) -> Execution:
    """The execution stored at `path` (raises `TetherError` if it is missing or corrupt)."""
    store = store_for(path)
    uri = store.canonical(path)
    state = store.load(uri)
    return Execution(path, state, store.load_tree(uri), list(store.read_trace(uri)))


def load_tree_or_execution(path: str) -> tuple[dict[str, Any], Execution | None]:
    """For `render`: an execution's tree and the execution, or a tree file's tree and None."""
    if is_execution(path):
        execution = load_execution(path)
        return execution.tree, execution
    from tether.tree.load import load_tree

    return load_tree(path).data, None


def find_executions(root: str) -> list[str]:
    """Paths (relative to `root`, with `/`) of the executions under `root`, sorted."""
    found: list[str] = []
    base_depth = root.rstrip(os.sep).count(os.sep)
    for folder, dirs, files in os.walk(root):
        if folder.count(os.sep) - base_depth >= MAX_DEPTH:
            dirs[:] = []
        dirs[:] = sorted(d for d in dirs if d not in _SKIPPED_DIRS and not d.startswith("."))
        names = set(files)
        for name in files:
            if name + TREE_SUFFIX in names:
                rel = os.path.relpath(os.path.join(folder, name), root)
                found.append(rel.replace(os.sep, "/"))
    return sorted(found)
