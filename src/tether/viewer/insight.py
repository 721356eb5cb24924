"""The viewer's overview and heat map: the figures of `tether stats`, arranged for the page.

Owns three documents over the place a viewer serves: the overview (`overview`: every tree, its
executions by status and time to finish, and the per-action figures, exactly as
`tether.stats.collect_drawn` gives them, with the actions whose failures are a selector's planned
fallback, `planned_fallbacks`), one tree's heat map (`heat`: its diagram with each action
shaded by one measure of `MEASURES` — how often it fails, its retries, the stops refused while
it was open, the agent's answer time — and that action's figures in its tooltip), and the
executions behind an action's figure (`behind`: those of the tree in which the action failed,
retried, was refused a stop or was answered, most first, each counted by
`tether.store.tally.Tally`, the definition `tether stats` counts with). Failures a selector
planned for are drawn apart from the others, in amber, on both (`planned_fallbacks`). It counts
nothing itself, draws with `tether.viewer.svg` and knows nothing of HTTP (`tether.viewer.server`).
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from tether.engine.trace import node_key
from tether.errors import TetherError
from tether.stats import collect_drawn
from tether.store.tally import key_of as tally_key
from tether.store.tally import mark
from tether.viewer.model import index_tree
from tether.viewer.place import PAGE, Place
from tether.viewer.svg import Heat, render_svg

# The measures a heat map shows: what it shades by, in the page's words.
MEASURES = {
    "failures": "failed attempts",
    "retries": "retries used",
    "stops_refused": "stops refused",
    "answer_time": "answer time",
}


def overview(place: Place) -> dict[str, Any]:
    """The figures of every execution in the place, per tree and per action, and per tree hash
    the keys of its actions whose failures a selector falls back from (`fallbacks`)."""
    figures, shapes = collect_drawn(place.where)
    fallbacks = {key: sorted(planned_fallbacks(shape)) for key, shape in shapes.items()}
    return {"folder": place.label, "figures": figures, "fallbacks": fallbacks}


def inbox(place: Place) -> dict[str, Any]:
    """What waits on a person in the place (`tether.inbox.waiting`, the reading `tether inbox`
    prints), with the place's label."""
    from tether.inbox import waiting

    return {"folder": place.label, **waiting(place.where)}


def planned_fallbacks(tree: dict[str, Any]) -> set[str]:
    """The actions whose failure a selector plans for: those in any branch but the last of a
    selector above them, where a failure makes the selector try its next branch."""
    nodes = index_tree(tree)
    out = set()
    for key, node in nodes.items():
        child, parent = key, node.parent
        while node.type == "action" and parent is not None:
            above = nodes[parent]
            if above.type == "selector" and child != above.children[-1]:
                out.add(key)
                break
            child, parent = parent, above.parent
    return out


def heat(place: Place, name: str, tree_hash: str, measure: str) -> dict[str, Any]:
    """The tree `name` at `tree_hash` as a heat map of `measure`, with its figures."""
    _measure(measure)
    figures, tree = _tree_figures(place, name, tree_hash)
    actions = {node_key(a["path"]): a for a in figures["actions"]}
    values = {key: mark(measure, action) for key, action in actions.items()}
    top = 1.0 if measure == "failures" else max(values.values(), default=0) or 1.0
    planned = planned_fallbacks(tree) if measure == "failures" else set()
    shades = {
        key: Heat(values[key] / top, _meta(measure, action), _tooltip(action))
        for key, action in actions.items()
    }
    for key in planned:
        action = actions[key]
        if action["failures"]:
            meta = f"{action['failures']} of {action['attempts']} failed: a fallback"
            shades[key] = replace(shades[key], meta=meta, fallback=True)
    return {
        "folder": place.label,
        "measure": measure,
        "measures": MEASURES,
        "tree": {k: v for k, v in figures.items() if k != "actions"},
        "actions": [{"key": key, **action} for key, action in actions.items()],
        "svg": render_svg(tree, heat=shades),
    }


def behind(
    place: Place,
    name: str,
    tree_hash: str,
    key: str,
    measure: str,
    *,
    offset: int = 0,
    limit: int = PAGE,
) -> dict[str, Any]:
    """The executions of the tree `name` at `tree_hash` in which the action `key` has a figure of
    `measure` (it failed there, retried, ...), most first: `limit` of them from `offset`, and how
    many there are (`total`), as the store finds them (`Store.behind`) from its kept counts."""
    _measure(measure)
    if not re.fullmatch(r"\d{1,6}(\.\d{1,6}){0,99}", key):
        raise TetherError("usage", f"key takes an action's node key, such as 1.0, not {key!r}")
    action_key = tally_key(int(part) for part in key.split("."))
    page = slice(offset, offset + limit)
    total, rows = place.store.behind(place.where, name, tree_hash, action_key, measure, page)
    executions = [
        {
            "path": row.name,
            "status": row.status,
            "updated_at": row.updated_at,
            "value": row.value,
            "meta": _meta(measure, row.action),
        }
        for row in rows
    ]
    return {"key": key, "measure": measure, "total": total, "executions": executions}


def _measure(measure: str) -> None:
    if measure not in MEASURES:
        raise TetherError("usage", f"measure must be one of {', '.join(MEASURES)}, not {measure!r}")


def _tree_figures(place: Place, name: str, tree_hash: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The figures of the tree `name` at `tree_hash`, and the tree."""
    try:
        figures, trees = collect_drawn(place.where, tree=name)
    except TetherError as exc:
        if exc.code != "not_found":
            raise
        figures, trees = {"trees": []}, {}
    for tree in figures["trees"]:
        if tree["hash"] == tree_hash:
            return dict(tree), trees[tree_hash]
    raise TetherError("not_found", f"no execution of the tree {name!r} at {tree_hash}")


def _meta(measure: str, action: dict[str, Any]) -> str:
    """The figure on the action's box."""
    if measure == "failures":
        return f"{action['failures']} of {action['attempts']} attempts failed"
    if measure == "answer_time":
        median = action["answer_time"]["median"]
        return "no answers" if median is None else f"answers: median {_span(median)}"
    return f"{action[measure]} {MEASURES[measure]}"


def _tooltip(action: dict[str, Any]) -> str:
    """Every figure of the action, a line each."""
    refused = ", ".join(f"{code} {n}" for code, n in action["refused"].items()) or "none"
    lines = [
        f"reached {action['reached']} · attempts {action['attempts']} · "
        f"failed {action['failures']} · retries {action['retries']}",
        f"answers refused: {refused}",
        f"answer time: {_spread(action['answer_time'])}",
        f"stops refused {action['stops_refused']} · tool calls denied "
        f"{action['tools_denied']}, recorded {action['tools_recorded']}",
        f"a person's wait: {_spread(action['human_wait'])}",
    ]
    return "\n".join(lines)


def _spread(spread: dict[str, Any]) -> str:
    if not spread["count"]:
        return "none"
    return f"median {_span(spread['median'])}, p90 {_span(spread['p90'])} ({spread['count']})"


def _span(seconds: float) -> str:
    return f"{seconds:.3g} s" if seconds < 120 else f"{seconds / 60:.3g} min"
