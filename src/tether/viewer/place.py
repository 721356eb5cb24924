"""The place the viewer serves, and the documents its page reads of it.

Owns the viewer's view of one place that holds executions — a folder, or a database
(`postgresql://…` without `#name`) — listed and read through its store (`Store.list`,
`Store.revision`, `tether.viewer.source`), never by reading its files: the listing (`runs`: a
page of it, kept by tree and status; only that page's executions are read), one execution's
document (`run`: its nodes, trace, snapshot and diagram, now or after its first K entries, only
the trace entries the page lacks, and where it was forked from), the readers the watcher polls,
and the person's answer to an open human step (`answer_human`, through the verbs). A P the page
names is confined to the folder served: absolute paths, `..` and symbolic links that lead
outside are `forbidden`; in a database a path is only ever a name in it. The files beside a
state file are the store's to find and refuse. An execution that cannot be read or shown is
reported on its own row of the listing; the others are still listed. It knows nothing of HTTP
(`tether.viewer.server`), derives no status (`tether.viewer.model`) and draws nothing
(`tether.viewer.svg`).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from tether.engine.names import Kind, Status
from tether.errors import TetherError
from tether.files import is_inside
from tether.store import path_of, scheme_of, store_for
from tether.store.base import Summary
from tether.tree.model import STEP_KINDS
from tether.viewer.model import Timeline, index_tree, progress, snapshot
from tether.viewer.source import Execution, load_execution
from tether.viewer.svg import render_svg

_DECISIONS = ("approve", "reject")
PAGE = 100  # the executions `/api/runs` answers with when not asked for a `limit`
MAX_PAGE = 500


@dataclass
class _Cached:
    """A timeline kept warm for one execution, so a commit costs only its new entries."""

    salt: str
    timeline: Timeline
    fed: int
    last_seq: int | None


@dataclass(frozen=True)
class Paging:
    """What `/api/runs` asks for: a page (`limit` from `offset`) of the executions kept by
    `tree` and `status`; `/api/behind` reads its page the same way."""

    limit: int
    offset: int
    tree: str | None
    status: str | None

    @classmethod
    def of(cls, query: dict[str, str]) -> Paging:
        limit = _whole(query, "limit")
        if limit is not None and not 1 <= limit <= MAX_PAGE:
            raise TetherError("usage", f"limit takes 1 to {MAX_PAGE}, got {limit}")
        status = query.get("status") or None
        if status is not None and status not in tuple(Status):
            raise TetherError("usage", f"status takes {', '.join(Status)}, not {status!r}")
        offset = _whole(query, "offset") or 0
        return cls(limit or PAGE, offset, query.get("tree") or None, status)


class Place:
    """The place a viewer serves (`where`: a folder, or a store location such as a PostgreSQL
    database): its store and a warm timeline per execution."""

    def __init__(self, where: str) -> None:
        self.store = store_for(where)
        self.root = os.path.realpath(path_of(where)) if scheme_of(where) == "file" else None
        self.where = self.root if self.root is not None else where
        self._lock = threading.Lock()
        self._cache: dict[str, _Cached] = {}

    @property
    def label(self) -> str:
        """The place's name on the page: the folder's own name, or the database."""
        return self.where if self.root is None else os.path.basename(self.root) or self.root

    # -- confinement ---------------------------------------------------------------------------

    def confine(self, rel: str) -> str:
        """The path of `rel` inside the served folder, or `forbidden` if it (or, through a
        symbolic link, its real path) is outside. The path keeps a link at its last component,
        for the store to refuse."""
        assert self.root is not None
        if not rel or rel.startswith(("/", "\\")) or os.path.isabs(rel) or "\x00" in rel:
            raise TetherError("forbidden", f"{rel!r} is not a path inside the served folder")
        if ".." in rel.replace("\\", "/").split("/"):
            raise TetherError("forbidden", f"{rel!r} climbs out of the served folder")
        path = os.path.join(self.root, rel)
        if not is_inside(path, self.root):
            raise TetherError("forbidden", f"{rel!r} leads outside the served folder")
        return path

    def uri_of(self, rel: str) -> str:
        """The URI of the execution the page calls `rel`: in the served folder, or by that name
        in the database."""
        if self.root is None:
            return self.store.locate(self.where, rel)
        return self.confine(rel)

    def load(self, rel: str) -> Execution:
        """The execution at `rel`, its path confined to the folder. The store reads it under its
        own rules: names derived from the state file's, no link followed (`tether.store`)."""
        try:
            return load_execution(self.uri_of(rel))
        except TetherError as exc:
            if exc.code != "not_found":
                raise
            raise TetherError("not_found", f"no execution at {rel!r}") from None

    # -- documents -----------------------------------------------------------------------------

    def runs(self, query: dict[str, str] | None = None) -> dict[str, Any]:
        """One page of the executions in the place (`limit` from `offset`, in the store's order),
        kept by `tree` and `status` if asked, each summarised; unreadable ones say why and are
        kept whatever the filter (`tether.store.base.wanted`). Only the page is read beyond the
        listing; `total` counts what the filter kept and `trees` names every tree listed."""
        asked = Paging.of(query or {})
        page, total, trees = self.store.page(
            self.where, status=asked.status, tree=asked.tree, limit=asked.limit, offset=asked.offset
        )
        out: list[dict[str, Any]] = []
        for summary in page:
            if summary.error is not None:
                out.append({"path": summary.name, "error": summary.error["message"]})
                continue
            try:
                out.append(self._summary(summary.name))
            except TetherError as exc:
                out.append({"path": summary.name, "error": exc.message})
        return {
            "folder": self.label,
            "runs": out,
            "total": total,
            "offset": asked.offset,
            "limit": asked.limit,
            "trees": trees,
        }

    def _summary(self, rel: str) -> dict[str, Any]:
        execution = self.load(rel)
        state = execution.state
        with _shown(rel):
            snap = self._timeline(rel, execution).snapshot()
            summary = Summary.of(rel, rel, state)
            return {
                "path": rel,
                "tree": execution.tree["name"],
                "status": state["status"],
                "phase": state["phase"],
                "open_step": summary.open_step,
                "progress": progress(execution.tree, snap),
                "entries": len(execution.trace),
                "revision": state["revision"],
                "updated_at": state["updated_at"],
            }

    def count(self) -> int:
        """How many executions the place holds, as its store counts a page of them (the
        listing is not read: a viewer's memory does not grow with the place)."""
        return self.store.page(self.where, limit=1)[1]

    def revision_reader(self, uri: str) -> Callable[[], int | None]:
        """A reader of the revision of the execution at `uri` (from `uri_of`), for its event
        stream (None while it cannot be read: not started yet, corrupt, a database that is
        down)."""

        def revision() -> int | None:
            try:
                return self.store.revision(uri)
            except TetherError:
                return None

        return revision

    def run(self, rel: str, query: dict[str, str]) -> dict[str, Any]:
        execution = self.load(rel)
        with _shown(rel):
            return self._document(rel, execution, query)

    def _document(self, rel: str, execution: Execution, query: dict[str, str]) -> dict[str, Any]:
        tree, trace, state = execution.tree, execution.trace, execution.state
        folded = _folded(tree, query)
        at = _whole(query, "at")
        if at is not None:
            snap = snapshot(tree, state, trace, min(at, len(trace)))
            return {
                "path": rel,
                "revision": state["revision"],
                "total": len(trace),
                "fork": _fork(rel, trace, min(at, len(trace))),
                "progress": progress(tree, snap),
                "snapshot": snap.to_dict(),
                "svg": render_svg(tree, snap, folded=folded, toggles=True),
            }
        snap = self._timeline(rel, execution).snapshot()
        since = _whole(query, "since") or 0
        last_seq = query.get("last_seq")
        keep = 0 < since <= len(trace) and str(trace[since - 1]["seq"]) == last_seq
        offset = since if keep else 0
        return {
            "path": rel,
            "revision": state["revision"],
            "tree": {k: tree.get(k) for k in ("name", "version", "description")},
            "nodes": _nodes(tree),
            "created_at": state["created_at"],
            "updated_at": state["updated_at"],
            "total": len(trace),
            "fork": _fork(rel, trace, len(trace)),
            "forked_from": self._origin(state),
            "trace_offset": offset,
            "trace": trace[offset:],
            "progress": progress(tree, snap),
            "snapshot": snap.to_dict(),
            "svg": render_svg(tree, snap, folded=folded, toggles=True),
        }

    def _origin(self, state: dict[str, Any]) -> dict[str, Any] | None:
        """Where the execution was forked from (`{uri, at}`, as `tether fork` records it), with
        `path`, the source's name in this place, when the place holds it (else None)."""
        origin = state.get("forked_from")
        if not isinstance(origin, dict) or not isinstance(origin.get("uri"), str):
            return None
        return {"uri": origin["uri"], "at": origin.get("at"), "path": self.name_of(origin["uri"])}

    def name_of(self, uri: str) -> str | None:
        """The name (as the listing gives it) of the execution at `uri` if it is in this place."""
        if scheme_of(uri) != scheme_of(self.where):
            return None
        try:
            if self.root is not None:
                path = os.path.realpath(path_of(uri))
                if not is_inside(path, self.root):
                    return None
                return os.path.relpath(path, self.root).replace(os.sep, "/")
            where, name = self.store.place(uri)
        except (TetherError, ValueError):
            return None
        return name if where == self.where else None

    def _timeline(self, rel: str, execution: Execution) -> Timeline:
        """The warm timeline of `rel`, fed up to the execution's trace (rebuilt after a reset
        or if another execution took the path)."""
        state, trace = execution.state, execution.trace
        with self._lock:
            cached = self._cache.get(rel)
            fresh = (
                cached is None
                or cached.salt != state["salt"]
                or cached.fed > len(trace)
                or (cached.fed and trace[cached.fed - 1]["seq"] != cached.last_seq)
            )
            if fresh or cached is None:
                cached = _Cached(state["salt"], Timeline(execution.tree, state), 0, None)
                self._cache[rel] = cached
            cached.timeline.feed(trace[cached.fed :])
            cached.fed = len(trace)
            cached.last_seq = trace[-1]["seq"] if trace else None
            return cached.timeline

    # -- the one write: a person's answer -------------------------------------------------------

    def answer_human(self, body: Any, sent_by: int | None = None) -> dict[str, Any]:
        """Approve or reject the open human step of the execution at `body["path"]`, as a person
        does from the page (`by: viewer`), sent by the process `sent_by` (the browser); the
        verbs refuse what is not open, and an answer sent from inside an agent's process tree."""
        from tether.verbs import Runtime

        if not isinstance(body, dict):
            raise TetherError("usage", "the body must be a JSON object")
        unknown = sorted(set(body) - {"path", "decision", "note", "step"})
        if unknown:
            raise TetherError("usage", f"unknown field {unknown[0]!r}")
        rel, decision = body.get("path"), body.get("decision")
        if not isinstance(rel, str) or decision not in _DECISIONS:
            raise TetherError("usage", "give path (a string) and decision (approve or reject)")
        note, step = body.get("note"), body.get("step")
        for name, value in (("note", note), ("step", step)):
            if value is not None and not isinstance(value, str):
                raise TetherError("usage", f"{name} must be a string")
        self.load(rel)
        target, runtime = self.uri_of(rel), Runtime(root=self.root)
        verb = runtime.approve if decision == "approve" else runtime.reject
        return dict(verb(target, note=note or None, step=step, by="viewer", sent_by=sent_by))

    # -- change signals ------------------------------------------------------------------------

    def listing_signature(self) -> tuple[int, object] | str:
        """What changes when the listing does (`Store.fingerprint`), or the reason the place
        cannot be listed."""
        try:
            return self.store.fingerprint(self.where)
        except TetherError as exc:
            return exc.message


def _fork(rel: str, trace: list[dict[str, Any]], at: int) -> dict[str, Any]:
    """The command that starts a new execution from the first `at` entries of the one at
    `rel` (beside it, `NAME-fork-K.json`), quoted for a shell. A check entry belongs to the
    answer before it, so a point just before one moves past it."""
    from tether.person import command_line

    point = at
    while point < len(trace) and trace[point].get("kind") == Kind.CHECK:
        point += 1
    stem, suffix = os.path.splitext(rel)
    new = f"{stem}-fork-{point}{suffix}"
    return {"at": point, "command": command_line("tether", "fork", rel, new, "--at", str(point))}


@contextmanager
def _shown(rel: str) -> Iterator[None]:
    """Turn the failure of a stored document that is JSON but not the shape Tether writes (a
    tree with no root, a state without its phase) into `corrupt_execution` for that execution
    alone, rather than a failure of the whole page."""
    try:
        yield
    except (KeyError, TypeError, ValueError, IndexError, AttributeError, RecursionError) as exc:
        raise TetherError(
            "corrupt_execution",
            f"{rel} cannot be shown: its stored tree or state is malformed "
            f"({type(exc).__name__}: {exc})",
            path=rel,
        ) from None


def _whole(query: dict[str, str], name: str) -> int | None:
    text = query.get(name)
    if text is None:
        return None
    if not text.isdigit():
        raise TetherError("usage", f"{name} takes a whole number, got {text!r}")
    return int(text)


def _folded(tree: dict[str, Any], query: dict[str, str]) -> frozenset[str]:
    """The node keys of `fold` (comma-separated), each a node below the root with children."""
    text = query.get("fold")
    if not text:
        return frozenset()
    keys = frozenset(text.split(","))
    parents = {key for key, node in index_tree(tree).items() if key and node.children}
    unknown = sorted(keys - parents)
    if unknown:
        raise TetherError(
            "usage", f"fold takes keys of nodes with children below the root, not {unknown[0]!r}"
        )
    return keys


def _nodes(tree: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for node in index_tree(tree).values():
        steps = [
            {
                "kind": kind,
                "text": step[kind],
                **({"writes": step["writes"]} if "writes" in step else {}),
            }
            for step in node.data.get("steps", [])
            for kind in STEP_KINDS
            if kind in step
        ]
        out.append(
            {
                "key": node.key,
                "path": list(node.path),
                "type": node.type,
                "name": node.name,
                "parent": node.parent,
                "children": list(node.children),
                "modifiers": node.modifiers(),
                "retries": node.data.get("retries", 0),
                "description": node.data.get("description"),
                "when": node.data.get("when"),
                "for_each": node.data.get("for_each"),
                "repeat": node.data.get("repeat"),
                "steps": steps,
            }
        )
    return out
