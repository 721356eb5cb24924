"""What the viewer shows, as data: the tree's nodes and each node's status after any trace prefix.

Owns the derivation of per-node statuses (`not_reached`, `open`, `success`, `failure`, `skipped`,
`halted`), retries used, a loop's current item and run, open step and trace-entry counts, by
walking the trace answer by answer
through the pure engine (the same answers `tether.engine.replay` uses), so nothing is stored
twice: the state after entry k is the replay of the first k entries. The engine keeps frames only
for entered, unfinished nodes; each replayed answer's `Outcome.events` says, in order, which nodes
finished (and how) and which were reset for a retry, another run or the next item.

It does not read storage (the caller passes the stored state, tree and trace), draw anything
(`tether.viewer.svg`, `tether.viewer.terminal`) or serve anything (`tether.viewer.server`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from tether.engine.names import Key, Kind, Result, Status
from tether.engine.public import Condition, Outcome, default_condition, tool_records
from tether.engine.replay import apply_entry, fresh_state
from tether.engine.ticking import loop_items, tree_path
from tether.engine.trace import node_key
from tether.errors import TetherError

NOT_REACHED = "not_reached"
OPEN = "open"
SUCCESS, FAILURE, SKIPPED = Result.SUCCESS, Result.FAILURE, Result.SKIPPED
HALTED = "halted"
STATUSES = (NOT_REACHED, OPEN, SUCCESS, FAILURE, SKIPPED, HALTED)
SETTLED = (SUCCESS, FAILURE, SKIPPED)
# How every view names and marks a status.
LABELS = {
    NOT_REACHED: "not reached",
    OPEN: "open",
    SUCCESS: "success",
    FAILURE: "failure",
    SKIPPED: "skipped",
    HALTED: "halted",
}
GLYPHS = {NOT_REACHED: "○", OPEN: "●", SUCCESS: "✓", FAILURE: "✗", SKIPPED: "↷", HALTED: "⊘"}
# The engine's events for a node reset to run again: a retry, a repeat run, the next item.
AGAIN = ("retry", "repeat", "item")


@dataclass(frozen=True)
class Node:
    """One node of the tree, with its place: `key` is the engine's frame key ("" for the root)."""

    key: str
    path: tuple[int, ...]
    type: str
    name: str
    parent: str | None
    children: tuple[str, ...]
    data: dict[str, Any]

    @property
    def depth(self) -> int:
        return len(self.path)

    @property
    def optional(self) -> bool:
        return bool(self.data.get("optional"))

    def modifiers(self, view: NodeView | None = None) -> list[str]:
        """Short words for what changes how the node runs: policy, retries (with how many are
        used, once one is), optional, when, invert, repeat and for_each (with the run and the
        item under way, or last run, once the node was entered)."""
        out = [f"policy {self.data['policy']}"] if self.type == "parallel" else []
        if view is not None and view.retries:
            out.append(f"retry {view.retries}/{self.data.get('retries', 0)}")
        elif self.data.get("retries"):
            out.append(f"retries {self.data['retries']}")
        if self.optional:
            out.append("optional")
        if "when" in self.data:
            out.append("when")
        if self.data.get("invert"):
            out.append("invert")
        repeat = self.data.get("repeat")
        if repeat is not None:
            runs = view.run if view is not None else 0
            out.append(f"run {runs}/{repeat['max']}" if runs else f"repeat {repeat['max']}")
        loop = self.data.get("for_each")
        if loop is not None:
            if loop.get("parallel"):
                shown = f" ×{view.items}" if view is not None and view.items else ""
                out.append(f"for each {loop['as']}{shown}, side by side")
            elif view is not None and view.item is not None:
                out.append(f"{loop['as']} {view.item + 1}/{view.items}")
            else:
                out.append(f"for each {loop['as']}")
        return out


def index_tree(tree: dict[str, Any]) -> dict[str, Node]:
    """Every node of a normalised tree by key, in depth-first declaration order."""
    out: dict[str, Node] = {}

    def visit(raw: dict[str, Any], path: tuple[int, ...], parent: str | None) -> None:
        key = node_key(path)
        kids = raw.get("children", [])
        out[key] = Node(
            key,
            path,
            raw["type"],
            raw["name"],
            parent,
            tuple(node_key((*path, i)) for i in range(len(kids))),
            raw,
        )
        for i, child in enumerate(kids):
            visit(child, (*path, i), key)

    visit(tree["root"], (), None)
    return out


@dataclass
class NodeView:
    """A node as the viewer shows it at one point of the trace."""

    status: str = NOT_REACHED
    retries: int = 0
    entries: int = 0
    step: int | None = None
    item: int | None = None  # the index of a for_each's current (or last) item
    items: int | None = None  # how many items its list has
    run: int = 0  # a repeat's current (or last) run, from 1
    claim: dict[str, Any] | None = None  # an open action's claim: {agent, until} (`tether claim`)
    claims: list[dict[str, Any]] = field(default_factory=list)  # each item's, when fanned out

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "retries": self.retries,
            "entries": self.entries,
            "step": self.step,
            "item": self.item,
            "items": self.items,
            "run": self.run,
            "claim": self.claim,
            "claims": self.claims,
        }


@dataclass
class Snapshot:
    """The execution after its first `at` trace entries: the replayed engine state, each node's
    view, and the reason the replay stopped early (`error`), if it did."""

    at: int
    state: dict[str, Any]
    nodes: dict[str, NodeView]
    error: str | None = None
    tree: dict[str, Any] | None = None  # to draw the open steps of a fanned-out loop

    def open_keys(self) -> list[str]:
        """Keys of the nodes with an open step, the cursor (what `next` returns) first."""
        if self.state["status"] != Status.RUNNING:
            return []
        opened = [r["path"] for r in self.state["open"] if r["path"] is not None]
        return [drawn_key(self.tree, path) if self.tree else node_key(path) for path in opened]

    def to_dict(self) -> dict[str, Any]:
        state = self.state
        return {
            "at": self.at,
            "status": state["status"],
            "phase": state["phase"],
            "cursor": state["cursor"],
            "open": state["open"],
            "protocol_accepted": state["protocol_accepted"],
            "failure": state["failure"],
            "var": state["var"],
            "const": state["const"],
            "open_keys": self.open_keys(),
            "nodes": {k: v.to_dict() for k, v in self.nodes.items()},
            "error": self.error,
        }


@dataclass
class Timeline:
    """Walks one execution's trace entry by entry; `feed` more entries as they are committed.

    `snapshot()` is the view after every entry fed so far. Feeding is incremental, so a live
    viewer pays only for new entries."""

    tree: dict[str, Any]
    stored: dict[str, Any]
    condition: Condition = default_condition
    nodes: dict[str, Node] = field(init=False)
    state: dict[str, Any] = field(init=False)
    views: dict[str, NodeView] = field(init=False)
    at: int = 0
    error: str | None = None
    tools: list[dict[str, Any]] = field(default_factory=list)  # what checks see as TOOLS
    drawn: dict[str, str] = field(default_factory=dict)  # frame keys by the node drawn for each

    def __post_init__(self) -> None:
        self.nodes = index_tree(self.tree)
        self.state = fresh_state(self.tree, self.stored)
        self.views = {key: NodeView() for key in self.nodes}

    def feed(self, entries: Iterable[dict[str, Any]]) -> None:
        for entry in entries:
            if self.error is not None:
                return
            self.at += 1
            cursor = entry.get("cursor")
            key = None if cursor is None else self._drawn(node_key(cursor["path"] or ()))
            if key is not None and cursor is not None and cursor["path"] is not None:
                self.views[key].entries += 1
            try:
                self._answer(entry)
            except TetherError as exc:
                self.error = f"trace entry {entry.get('seq')}: {exc.message}"

    def snapshot(self) -> Snapshot:
        views = {k: replace(v) for k, v in self.views.items()}
        return Snapshot(self.at, self.state, views, self.error, self.tree)

    # -- one answer ----------------------------------------------------------------------------

    def _answer(self, entry: dict[str, Any]) -> None:
        before = self.state
        outcome = apply_entry(self.tree, before, entry, self.condition, self.tools)
        if outcome is None:
            return
        self.state = outcome.state
        self.tools.extend(tool_records(outcome.entries, 0))
        if entry["kind"] == Kind.RESET:
            self.views = {key: NodeView() for key in self.nodes}
            return
        self._settle(before["runtime"], outcome)

    def _settle(self, old: dict[str, dict[str, Any]], outcome: Outcome) -> None:
        """Apply the engine's node events in order; a node whose frame vanished without an
        event was halted (its parallel settled, or a jump left it)."""
        new: dict[str, dict[str, Any]] = outcome.state["runtime"]
        touched: set[str] = set()
        for at, event in outcome.events:
            key = self._drawn(at)
            if event in AGAIN:
                touched.update(self._clear_below(key))
                continue
            view = self.views[key]
            view.status, view.step, view.claim, view.claims = event, None, None, []
            touched.add(key)
        for at in old:
            key = self._drawn(at)
            if at not in new and key not in touched:
                view = self.views[key]
                view.status, view.step, view.claim, view.claims = HALTED, None, None, []
        for at in new:
            self.views[self._drawn(at)].claims = []
        for at, frame in new.items():
            key = self._drawn(at)
            view = self.views[key]
            view.status = OPEN
            view.retries = frame.get(Key.RETRIES, 0)
            held = frame.get(Key.CLAIM)
            if held is not None:
                view.claims.append(self._claim(at, key, held, new))
            view.claim = view.claims[0] if view.claims else None
            view.step = frame.get(Key.STEP, 0) if self.nodes[key].type == "action" else None
            if "repeat" in self.nodes[key].data:
                view.run = frame.get(Key.RUNS, 0) + 1
            if Key.ITEMS in frame:
                view.item, view.items = frame.get(Key.ITEM), len(frame[Key.ITEMS])

    def _claim(
        self, at: str, key: str, held: dict[str, Any], runtime: dict[str, dict[str, Any]]
    ) -> dict[str, Any]:
        """The claim `held` of the frame `at` as drawn on the node `key`: `{agent, until}`,
        and `item`, the index of the item it holds when `at` is one of a fanned-out loop's."""
        claim = {"agent": held["agent"], "until": held["until"]}
        if at != key:
            items = loop_items(self.tree, runtime, [int(i) for i in at.split(".") if i])
            claim["item"] = items[-1]["index"] if items else None
        return claim

    def _drawn(self, key: str) -> str:
        """The tree node a frame key is drawn as: itself, or, inside a fanned-out `for_each`,
        the node without the items' indices (every item of the loop is drawn on its node)."""
        drawn = self.drawn.get(key)
        if drawn is None:
            drawn = self.drawn[key] = drawn_key(self.tree, [int(i) for i in key.split(".") if i])
        return drawn

    def _clear_below(self, key: str) -> list[str]:
        """A node run again starts afresh: its descendants are not reached again yet."""
        prefix = f"{key}." if key else ""
        cleared = [k for k in self.views if k != key and k.startswith(prefix)]
        for k in cleared:
            self.views[k] = NodeView(entries=self.views[k].entries)
        return cleared


def drawn_key(tree: dict[str, Any], path: list[int]) -> str:
    """The key of the node drawn for the frame at `path`: inside a fanned-out `for_each`, the
    node without the items' indices (every item of the loop is drawn on its node)."""
    return node_key(tree_path(tree, path))


def plural(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def cut(text: str, limit: int) -> str:
    """`text` on one line, at most `limit` characters (an ellipsis marks a cut)."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def facts(node: Node, view: NodeView) -> list[str]:
    """The short facts every view shows beside a node's status: the open step of an action
    and the node's trace entries."""
    out = []
    if view.step is not None and view.status == OPEN:
        out.append(f"step {view.step + 1}/{len(node.data['steps'])}")
    if view.entries:
        out.append(plural(view.entries, "entry", "entries"))
    return out


def snapshot(
    tree: dict[str, Any],
    stored: dict[str, Any],
    trace: list[dict[str, Any]],
    upto: int | None = None,
    condition: Condition = default_condition,
) -> Snapshot:
    """The execution as it was after its first `upto` trace entries (all of them if None)."""
    timeline = Timeline(tree, stored, condition)
    timeline.feed(trace[:upto] if upto is not None else trace)
    return timeline.snapshot()


def progress(tree: dict[str, Any], snap: Snapshot) -> dict[str, int]:
    """How many actions are settled, out of all of them. An action is settled once it finished
    (success, failure, skipped) or once nothing can run it any more: an ancestor finished
    without it (a selector's untaken branches, the rest of a failed sequence, what a false
    `when` skipped, a branch its parallel halted), or the execution is over. So a complete or
    failed execution is always fully settled."""
    nodes = index_tree(tree)
    over = snap.state["status"] != Status.RUNNING
    settled = 0
    actions = [key for key, node in nodes.items() if node.type == "action"]
    for key in actions:
        view, parent = snap.nodes[key], nodes[key].parent
        done = over or view.status in SETTLED
        while not done and parent is not None:
            done = snap.nodes[parent].status in (*SETTLED, HALTED)
            parent = nodes[parent].parent
        settled += done
    return {"settled": settled, "actions": len(actions)}
