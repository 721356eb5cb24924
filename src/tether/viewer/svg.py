"""The tree as a picture: the one layout of the diagram and its SVG.

Owns where each node's box goes (a top-down tidy layout: every leaf gets its own column, a parent
sits centred over its children) and the SVG markup of boxes, connectors and statuses, with its
style sheet inside so a file written by `tether render` stands alone. The web page shows the same
SVG, sent by the server, so the layout exists once. Each box carries `data-key` (the node's engine
key) and classes for its type, status and the cursor, for the page to hook onto.

It does not derive statuses (`tether.viewer.model`) or write files (`tether.viewer.cli`).
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape
from typing import Any

from tether.viewer.model import GLYPHS, LABELS, Node, Snapshot, cut, facts, index_tree, plural

BOX_W = 200
BOX_H = 66
GAP_X = 22
GAP_Y = 44
MARGIN = 14
_NAME_CHARS = 23  # what fits on a box's name line at the style sheet's font size
_META_CHARS = 30

STYLE = """
.tether-tree { font-family: "DejaVu Sans", "Segoe UI", Helvetica, Arial, sans-serif; }
.tether-tree .edge { fill: none; stroke: #9aa5b1; stroke-width: 1.5; }
.tether-tree .box { fill: #ffffff; stroke: #c5cdd6; stroke-width: 1.2; }
.tether-tree .band { fill: #c5cdd6; }
.tether-tree .kind { font-size: 10px; letter-spacing: 0.08em; fill: #6b7785; }
.tether-tree .name { font-size: 13.5px; font-weight: 600; fill: #1f2933; }
.tether-tree .meta { font-size: 11px; fill: #52606d; }
.tether-tree .st-not_reached .name { fill: #7b8794; }
.tether-tree .st-open .box { stroke: #2f80ed; }
.tether-tree .st-open .band, .tether-tree .st-open .glyph { fill: #2f80ed; }
.tether-tree .st-success .box { fill: #f1faf3; stroke: #38a169; }
.tether-tree .st-success .band, .tether-tree .st-success .glyph { fill: #38a169; }
.tether-tree .st-failure .box { fill: #fdf2f2; stroke: #e53e3e; }
.tether-tree .st-failure .band, .tether-tree .st-failure .glyph { fill: #e53e3e; }
.tether-tree .st-skipped .box { fill: #fbfaf5; stroke: #b7950b; stroke-dasharray: 5 3; }
.tether-tree .st-skipped .band, .tether-tree .st-skipped .glyph { fill: #b7950b; }
.tether-tree .st-halted .box { fill: #f7f7f8; stroke: #8e8e9a; stroke-dasharray: 2 3; }
.tether-tree .st-halted .band, .tether-tree .st-halted .glyph { fill: #8e8e9a; }
.tether-tree .cursor .box { fill: #eaf2fe; stroke: #1a56db; stroke-width: 3; }
.tether-tree .cursor .name { fill: #1a56db; }
.tether-tree .selected .box { stroke: #7c3aed; stroke-width: 3; }
"""


@dataclass(frozen=True)
class Box:
    x: float
    y: float


def layout(nodes: dict[str, Node]) -> tuple[dict[str, Box], float, float]:
    """Each node's top-left corner, and the picture's width and height."""
    boxes: dict[str, Box] = {}
    column = 0

    def place(key: str) -> float:
        nonlocal column
        node = nodes[key]
        if node.children:
            centres = [place(child) for child in node.children]
            centre = (centres[0] + centres[-1]) / 2
        else:
            centre = MARGIN + column * (BOX_W + GAP_X) + BOX_W / 2
            column += 1
        boxes[key] = Box(centre - BOX_W / 2, MARGIN + node.depth * (BOX_H + GAP_Y))
        return centre

    place("")
    depth = max(n.depth for n in nodes.values())
    width = 2 * MARGIN + column * BOX_W + (column - 1) * GAP_X
    height = 2 * MARGIN + (depth + 1) * BOX_H + depth * GAP_Y
    return boxes, width, height


def render_svg(tree: dict[str, Any], snap: Snapshot | None = None) -> str:
    """The tree as a standalone SVG document; with `snap`, coloured by each node's status."""
    nodes = index_tree(tree)
    boxes, width, height = layout(nodes)
    cursor = set(snap.open_keys()) if snap is not None else set()
    title = escape(str(tree["name"]))
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="tether-tree" width="{width:g}" '
        f'height="{height:g}" viewBox="0 0 {width:g} {height:g}" role="img" '
        f'aria-label="tree {title}">',
        f"<style>{STYLE}</style>",
        '<g class="edges">',
    ]
    for key, node in nodes.items():
        for child in node.children:
            parts.append(_edge(boxes[key], boxes[child]))
    parts.append("</g>")
    for key, node in nodes.items():
        parts.append(_node(node, boxes[key], snap, key in cursor))
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def _edge(parent: Box, child: Box) -> str:
    x1, y1 = parent.x + BOX_W / 2, parent.y + BOX_H
    x2, y2 = child.x + BOX_W / 2, child.y
    mid = y1 + GAP_Y / 2
    return f'<path class="edge" d="M{x1:g} {y1:g} V{mid:g} H{x2:g} V{y2:g}"/>'


def _node(node: Node, box: Box, snap: Snapshot | None, is_cursor: bool) -> str:
    view = snap.nodes[node.key] if snap is not None else None
    status = view.status if view is not None else "none"
    classes = f"node t-{node.type} st-{status}" + (" cursor" if is_cursor else "")
    kind = " · ".join([node.type.upper(), *node.modifiers(view)])
    if view is None:
        if node.type == "action":
            meta = plural(len(node.data["steps"]), "step", "steps")
        else:
            meta = plural(len(node.children), "child", "children")
        glyph = ""
        tooltip = node.name
    else:
        meta = " · ".join([LABELS[view.status], *facts(node, view)])
        glyph = GLYPHS[view.status]
        tooltip = f"{node.name}: {LABELS[view.status]}"
    meta_x = 30 if glyph else 14
    return (
        f'<g class="{classes}" data-key="{node.key}" transform="translate({box.x:g},{box.y:g})">'
        f"<title>{escape(tooltip)}</title>"
        f'<rect class="box" width="{BOX_W}" height="{BOX_H}" rx="8"/>'
        f'<rect class="band" x="0" y="8" width="4" height="{BOX_H - 16}" rx="2"/>'
        f'<text class="kind" x="14" y="18">{escape(cut(kind, _META_CHARS + 4))}</text>'
        f'<text class="name" x="14" y="38">{escape(cut(node.name, _NAME_CHARS))}</text>'
        + (f'<text class="glyph meta" x="14" y="56">{glyph}</text>' if glyph else "")
        + f'<text class="meta" x="{meta_x}" y="56">{escape(cut(meta, _META_CHARS))}</text>'
        "</g>"
    )
