"""What the stores and their face (`tether.store`) share: how a URI names a store and a file,
and the one JSON encoding every store writes.

Owns `scheme_of` (a bare path is `file`), `path_of` (the path a `file:` URI or a bare path names,
for executions and tree files alike) and `encode`: standard JSON only, so that a NaN or an
infinity that slipped past the verbs is refused rather than stored in a form that other readers
(the viewer's page, PostgreSQL) cannot parse. It sits below the face and every store, so a store
imports it without importing the face that imports the store. Code outside `tether.store` takes
these names from `tether.store`. It imports nothing of Tether but the errors.
"""

from __future__ import annotations

import json
import os
import re

from tether.errors import TetherError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any, Protocol

    from tether.store.base import Summary

    class Walked(Protocol):
        """A store that lists a place one summary at a time (files, memory)."""

        def summaries(self, where: str) -> Iterator[Summary]: ...


_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")


# The most an execution's refusal log holds, encoded (`Transaction.refuse`): past it, refusals
# are no longer recorded, so an agent repeating a refused answer cannot fill the disk.
REFUSAL_LOG_BYTES = 4 << 20


def encode(value: Any, *, indent: int | None = None) -> str:
    """`value` as standard JSON text (compact unless `indent`); `invalid_value` for a NaN or an
    infinity, which JSON cannot hold."""
    try:
        if indent is None:
            return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
        return json.dumps(value, ensure_ascii=False, allow_nan=False, indent=indent)
    except ValueError as exc:
        raise TetherError("invalid_value", f"not storable as JSON: {exc}") from None


def scheme_of(uri: str) -> str:
    """`file` for a bare path, else the URI's scheme in lower case."""
    match = _SCHEME.match(uri)
    if match is None or len(match.group(1)) == 1:  # a bare path, or a Windows drive letter
        return "file"
    return match.group(1).lower()


def path_of(uri: str) -> str:
    """The filesystem path that a `file:` URI or a bare path names, made absolute."""
    path = uri
    if uri.startswith("file:"):
        path = uri[len("file://") :] if uri.startswith("file://") else uri[len("file:") :]
        if path.startswith("localhost/"):
            path = path[len("localhost") :]
        if "%" in path:
            from urllib.parse import unquote

            path = unquote(path)
    if not path:
        raise TetherError("invalid_value", f"{uri!r} names no file")
    return os.path.abspath(os.path.expanduser(path))


def page_whole(
    store: Walked,
    where: str,
    *,
    status: str | None = None,
    tree: str | None = None,
    limit: int | None = None,
    offset: int = 0,
) -> tuple[list[Summary], int, list[str]]:
    """`Store.page` of a store that keeps no summaries (the file and memory stores): its listing
    taken one summary at a time (`store.summaries(where)`, in name order), kept by `status` and
    `tree` (one that cannot be read is kept whatever they say), and only the page held."""
    from tether.store.base import wanted

    page, kept, trees = [], 0, set()
    end = None if limit is None else offset + limit
    for summary in store.summaries(where):
        if summary.tree is not None:
            trees.add(summary.tree)
        if wanted(summary, status) and (tree is None or summary.error or summary.tree == tree):
            if offset <= kept and (end is None or kept < end):
                page.append(summary)
            kept += 1
    return page, kept, sorted(trees)


# The keys of a state an execution's kept summary copies (`listed`).
_LISTED = ("tree_name", "tree_hash", "status", "phase", "revision", "created_at", "updated_at")


def listed(state: dict[str, Any]) -> dict[str, Any]:
    """What a listing reads of a committed state (`tether.store.base.Summary.of`), and what a
    reader across executions needs besides (the tree's hash, when it was created, the trace's
    length): the summary a store keeps of an execution."""
    kept = {k: state.get(k) for k in _LISTED}
    requests = state.get("open")
    kept["open"] = requests[:1] if isinstance(requests, list) else []
    trace = state.get("trace")
    kept["entries"] = trace.get("entries") if isinstance(trace, dict) else None
    return kept
