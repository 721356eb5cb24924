"""Where the viewer's data comes from: executions and tree files, read through the store.

Owns loading one execution: its state and the trace of that same commit (`Store.read_execution`,
so a page never sees a trace longer or shorter than its state says), and its tree; and, for
`render`, telling an execution from a tree file: a file the file store finds missing, says is a
tree file, or will not follow (a symbolic link) is given to the tree loader, which has its own
rules. Every execution is read by its store, under the store's rules (for files: names derived
from the state file's own, no symbolic link followed), and listed by its store (`Store.list`),
never here. It does not confine paths to a served folder (`tether.viewer.place` does), derive
statuses (`tether.viewer.model`) or draw anything.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tether.errors import TetherError
from tether.store import scheme_of, store_for


@dataclass(frozen=True)
class Execution:
    """One execution as stored: the raw state (revision, salt and initial scopes included), the
    embedded tree and the committed trace."""

    path: str
    state: dict[str, Any]
    tree: dict[str, Any]
    trace: list[dict[str, Any]]


def load_execution(path: str) -> Execution:
    """The execution stored at `path` (raises `TetherError` if it is missing or corrupt): its
    state and trace as one commit, then its tree."""
    store = store_for(path)
    uri = store.canonical(path)
    state, trace = store.read_execution(uri)
    return Execution(path, state, store.load_tree(uri), trace)


def load_tree_or_execution(path: str) -> tuple[dict[str, Any], Execution | None]:
    """For `render`: an execution's tree and the execution, or a tree file's tree and None."""
    try:
        execution = load_execution(path)
    except TetherError as exc:
        tree_file = exc.details.get("tree_file") or exc.details.get("file_kind") == "link"
        if scheme_of(path) != "file" or not (exc.code == "not_found" or tree_file):
            raise
        from tether.tree.load import load_tree

        return load_tree(path).data, None
    return execution.tree, execution
