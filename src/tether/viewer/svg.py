"""The tree as a picture: the one layout of the diagram and its SVG.

Owns where each node's box goes (a top-down tidy layout: every leaf gets its own column, a parent
sits centred over its children; in a tree wider than `MAX_WIDTH` the largest groups of actions
are listed in a column under their parent instead) and the SVG markup of boxes, connectors and
statuses, with its style sheet inside so a file written by `tether render` stands alone. The web
page shows the same SVG, sent by the server, so the layout exists once. Each box carries
`data-key` (the node's engine key) and classes for its type, status and the cursor, for the page
to hook onto; for the page, a subtree can be folded away and each parent carries the button that
folds it (`data-fold`). Instead of an execution's statuses it can draw a heat overlay: each
action shaded by a figure across executions (`Heat`, from `tether.viewer.insight`), the figure on
its meta line and all its figures in its tooltip.

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
INDENT = 24  # a column of children sits this far right of its parent
GAP_STACK = 12  # between the boxes of a column
MAX_WIDTH = 760  # the frame of a 1400-pixel page; wider, rows of actions become columns
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
.tether-tree .fold { cursor: pointer; }
.tether-tree .fold rect { fill: #ffffff; stroke: #9aa5b1; stroke-width: 1.2; }
.tether-tree .fold text { font-size: 12px; font-weight: 700; fill: #52606d; }
.tether-tree .fold.folded rect { fill: #52606d; stroke: #52606d; }
.tether-tree .fold.folded text { fill: #ffffff; font-size: 11px; }
.tether-tree .fold.holds-cursor rect { fill: #1a56db; stroke: #1a56db; }
.tether-tree .heat { cursor: pointer; }
.tether-tree .heat-0 .box { fill: #f7f9fb; stroke: #c5cdd6; }
.tether-tree .heat-1 .box { fill: #fff5eb; stroke: #f6ad55; }
.tether-tree .heat-2 .box { fill: #feebc8; stroke: #ed8936; }
.tether-tree .heat-3 .box { fill: #fbd38d; stroke: #dd6b20; }
.tether-tree .heat-4 .box { fill: #feb2b2; stroke: #e53e3e; }
.tether-tree .heat-5 .box { fill: #fc8181; stroke: #c53030; }
.tether-tree .heat-1 .band { fill: #f6ad55; }
.tether-tree .heat-2 .band { fill: #ed8936; }
.tether-tree .heat-3 .band { fill: #dd6b20; }
.tether-tree .heat-4 .band { fill: #e53e3e; }
.tether-tree .heat-5 .band { fill: #9b2c2c; }
.tether-tree .heat.fallback .box { fill: #fffbeb; stroke: #b7950b; stroke-dasharray: 5 3; }
.tether-tree .heat.fallback .band { fill: #b7950b; }
.tether-tree .heat.selected .box { stroke: #7c3aed; stroke-width: 3; }
"""
HEAT_LEVELS = 5  # shades above none


@dataclass(frozen=True)
class Heat:
    """An action's shade in a heat overlay: `share` of the hottest (0 to 1; 0 is unshaded), the
    figure shown on its box (`meta`) and every figure, for its tooltip; a `fallback` (failures a
    selector planned for) is drawn in amber, whatever its share."""

    share: float
    meta: str
    tooltip: str
    fallback: bool = False

    @property
    def level(self) -> int:
        """The shade, 0 (none) to `HEAT_LEVELS`: any share above 0 is shaded."""
        if self.share <= 0:
            return 0
        return max(1, min(HEAT_LEVELS, round(self.share * HEAT_LEVELS)))


@dataclass(frozen=True)
class Box:
    x: float
    y: float


@dataclass
class Layout:
    """Where each shown node's box goes, which parents list their children in a column, and
    the picture's size."""

    boxes: dict[str, Box]
    stacked: set[str]
    width: float
    height: float


def layout(nodes: dict[str, Node], folded: frozenset[str] = frozenset()) -> Layout:
    """A tidy layout (a parent centred over its children, each subtree in its own columns) of
    the nodes not folded away. While the picture is wider than `MAX_WIDTH`, the parent with the
    most children that are all leaves (a `parallel` last) lists them in a column below it
    instead of a row, so a long row of actions stays legible at the page's width."""
    stacked: set[str] = set()
    while True:
        shown = _place(nodes, folded, stacked)
        if shown.width <= MAX_WIDTH:
            return shown
        groups = [
            node
            for key, node in nodes.items()
            if key in shown.boxes
            and key not in folded
            and key not in stacked
            and len(node.children) > 1
            and all(not nodes[c].children or c in folded for c in node.children)
        ]
        if not groups:
            return shown
        best = max(groups, key=lambda n: (len(n.children), n.type != "parallel", -n.depth))
        stacked.add(best.key)


def _place(nodes: dict[str, Node], folded: frozenset[str], stacked: set[str]) -> Layout:
    boxes: dict[str, Box] = {}

    def place(key: str, left: float) -> tuple[float, float]:
        """Lay out the subtree of `key` from `left`: its box's centre and its right edge."""
        node = nodes[key]
        y = MARGIN + node.depth * (BOX_H + GAP_Y)
        if not node.children or key in folded:
            boxes[key] = Box(left, y)
            return left + BOX_W / 2, left + BOX_W
        if key in stacked:
            boxes[key] = Box(left, y)
            for i, child in enumerate(node.children):
                boxes[child] = Box(left + INDENT, y + BOX_H + GAP_STACK + i * (BOX_H + GAP_STACK))
            return left + BOX_W / 2, left + INDENT + BOX_W
        centres, right = [], left - GAP_X
        for child in node.children:
            centre, right = place(child, right + GAP_X)
            centres.append(centre)
        centre = (centres[0] + centres[-1]) / 2
        boxes[key] = Box(centre - BOX_W / 2, y)
        return centre, right

    _, right = place("", MARGIN)
    height = max(box.y for box in boxes.values()) + BOX_H + MARGIN
    return Layout(boxes, stacked, right + MARGIN, height)


def render_svg(
    tree: dict[str, Any],
    snap: Snapshot | None = None,
    *,
    folded: frozenset[str] = frozenset(),
    toggles: bool = False,
    heat: dict[str, Heat] | None = None,
) -> str:
    """The tree as a standalone SVG document; with `snap`, coloured by each node's status, or
    with `heat` (by node key), each action shaded by its figure. The subtrees under the `folded`
    nodes are left out; with `toggles`, each parent below the root carries a button to fold or
    unfold it (for the page)."""
    nodes = index_tree(tree)
    shown = layout(nodes, folded)
    boxes, width, height = shown.boxes, shown.width, shown.height
    cursor = set(snap.open_keys()) if snap is not None else set()
    title = escape(str(tree["name"]))
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="tether-tree" width="{width:g}" '
        f'height="{height:g}" viewBox="0 0 {width:g} {height:g}" role="img" '
        f'aria-label="tree {title}">',
        f"<style>{STYLE}</style>",
        '<g class="edges">',
    ]
    for key in boxes:
        if key not in folded:
            for child in nodes[key].children:
                parts.append(_edge(boxes[key], boxes[child], key in shown.stacked))
    parts.append("</g>")
    for key in boxes:
        shade = heat.get(key) if heat is not None else None
        parts.append(_node(nodes[key], boxes[key], snap, key in cursor, shade))
    if toggles:
        for key in boxes:
            if key and nodes[key].children:
                parts.append(_toggle(nodes, key, boxes[key], key in folded, shown, cursor))
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def _edge(parent: Box, child: Box, stacked: bool) -> str:
    if stacked:
        x1, y1 = parent.x + INDENT / 2, parent.y + BOX_H
        return f'<path class="edge" d="M{x1:g} {y1:g} V{child.y + BOX_H / 2:g} H{child.x:g}"/>'
    x1, y1 = parent.x + BOX_W / 2, parent.y + BOX_H
    x2, y2 = child.x + BOX_W / 2, child.y
    mid = y1 + GAP_Y / 2
    return f'<path class="edge" d="M{x1:g} {y1:g} V{mid:g} H{x2:g} V{y2:g}"/>'


def _toggle(
    nodes: dict[str, Node], key: str, box: Box, folded: bool, shown: Layout, cursor: set[str]
) -> str:
    """The button on a parent's lower edge, where its connectors leave: "−" folds the subtree
    away, "+N" (the N nodes hidden) brings it back; it is marked when the cursor is hidden."""
    below = [k for k in nodes if k.startswith(f"{key}.")]
    x = box.x + (INDENT / 2 if key in shown.stacked else BOX_W / 2)
    y = box.y + BOX_H
    if not folded:
        label, width, what = "−", 16, f"Fold the {plural(len(below), 'node', 'nodes')} below"
    else:
        label = f"+{len(below)}"
        width, what = 12 + 7 * len(label), f"Unfold {plural(len(below), 'node', 'nodes')}"
    hidden = folded and any(k in cursor for k in below)
    classes = "fold" + (" folded" if folded else "") + (" holds-cursor" if hidden else "")
    return (
        f'<g class="{classes}" data-fold="{key}" role="button" '
        f'transform="translate({x - width / 2:g},{y - 8:g})">'
        f"<title>{escape(what)}</title>"
        f'<rect width="{width:g}" height="16" rx="8"/>'
        f'<text x="{width / 2:g}" y="12" text-anchor="middle">{label}</text>'
        "</g>"
    )


def _node(
    node: Node, box: Box, snap: Snapshot | None, is_cursor: bool, heat: Heat | None = None
) -> str:
    view = snap.nodes[node.key] if snap is not None else None
    status = view.status if view is not None else "none"
    classes = f"node t-{node.type} st-{status}" + (" cursor" if is_cursor else "")
    kind = " · ".join([node.type.upper(), *node.modifiers(view)])
    if heat is not None:
        classes += f" heat heat-{heat.level}" + (" fallback" if heat.fallback else "")
        meta, glyph, tooltip = heat.meta, "", f"{node.name}\n{heat.tooltip}"
    elif view is None:
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
