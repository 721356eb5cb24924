"""The tree in a terminal: one line per node, drawn with box-drawing connectors.

Owns the text picture `tether show` prints: a header (tree, status, phase, trace position), each
node with its type, modifiers, status, step, retries used, loop item and run, and trace-entry
count, the cursor marked with the open step's text (and, inside a `for_each`, its item), and the
failure reason when the execution failed. Colour is
ANSI, on request. It does not derive statuses (`tether.viewer.model`) or read storage.
"""

from __future__ import annotations

import json
from typing import Any

from tether.engine.names import Status
from tether.engine.protocol import GATE_NAME
from tether.viewer.model import (
    GLYPHS,
    LABELS,
    Node,
    Snapshot,
    cut,
    drawn_key,
    facts,
    index_tree,
    plural,
)

_COLOURS = {
    "not_reached": "2",
    "open": "1;36",
    "success": "32",
    "failure": "31",
    "skipped": "33",
    "halted": "35",
}
_STEP_TEXT_CHARS = 60
_ITEM_CHARS = 40


def draw(tree: dict[str, Any], snap: Snapshot, *, total: int, colour: bool = False) -> str:
    """The picture of `tree` at `snap`, `total` being the whole trace's length."""

    def paint(text: str, code: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if colour else text

    nodes = index_tree(tree)
    state = snap.state
    cursor = snap.open_keys()
    at = (
        f"after entry {snap.at} of {total}"
        if snap.at < total
        else plural(total, "entry", "entries")
    )
    lines = [f"{tree['name']} · {state['status']} · {state['phase']} · {at}"]
    if state["status"] == Status.RUNNING and not state["protocol_accepted"]:
        lines.append(paint(f"▶ waiting for the protocol ({GATE_NAME})", _COLOURS["open"]))

    def visit(node: Node, prefix: str, last: bool) -> None:
        view = snap.nodes[node.key]
        branch = "" if not node.key else ("└─ " if last else "├─ ")
        kind = ", ".join([node.type, *node.modifiers(view)])
        extras = facts(node, view)
        status = paint(f"{GLYPHS[view.status]} {LABELS[view.status]}", _COLOURS[view.status])
        line = f"{prefix}{branch}{node.name} ({kind})  {status}"
        if extras:
            line += "  " + " · ".join(extras)
        if node.key in cursor:
            line += paint(f"  ◀ {_open_text(tree, state, node.key)}", _COLOURS["open"])
        lines.append(line)
        below = prefix + ("" if not node.key else ("   " if last else "│  "))
        for i, child in enumerate(node.children):
            visit(nodes[child], below, i == len(node.children) - 1)

    visit(nodes[""], "", True)
    if state["status"] == Status.FAILED and state.get("failure"):
        lines.append(paint(f"✗ {state['failure']}", _COLOURS["failure"]))
    if snap.error:
        lines.append(paint(f"! replay stopped: {snap.error}", _COLOURS["failure"]))
    return "\n".join(lines) + "\n"


def _open_text(tree: dict[str, Any], state: dict[str, Any], key: str) -> str:
    """The first open step drawn on the node at `key` (one item's, in a fanned-out loop)."""
    for req in state["open"]:
        if req["path"] is not None and drawn_key(tree, req["path"]) == key:
            said = req.get("expression") or req.get("instruction") or req.get("prompt", "")
            text = f"{req['type']}: {cut(str(said), _STEP_TEXT_CHARS)}"
            if "item" in req:
                item = req["item"]
                value = json.dumps(item["value"], ensure_ascii=False)
                text += f"  [{item['name']} {item['index'] + 1}: {cut(value, _ITEM_CHARS)}]"
            return text
    return ""
