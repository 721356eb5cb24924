"""Figures across executions: `tether stats`.

Owns `collect`, the figures of every execution in a place (a folder, `memory://`, a PostgreSQL
database), per tree (name, version and hash: executions by status, time to finish, refused
answers) and per action of that tree (times reached, attempts, failures, retries used, answers
refused by reason, request-to-answer times, stop refusals, tool calls denied by its policy and
recorded, human waits), with the checks that refused most, and per agent that claimed or
answered (answers, attempts carried to their end, failures, claims, renewals, takeovers, leases
lapsed, refusals by reason: `tether.store.tally` defines them); their shape
(`schema/stats.schema.json`); the reading of `--since` (`parse_since`); and the
table people read (`table`).

It does not count: each store does (`Store.tally`: the file and memory stores in Python through
`tether.store.tally`, which also defines every figure; PostgreSQL in SQL), so that a database
never sends its traces to be counted. It does not record what it counts either: refused answers
and tool calls denied by a policy are recorded by the verb layer (`tether.verbs`) in each
execution's refusal log, beside its trace, where replay and `verify` never look.
"""

from __future__ import annotations

import os
import re
import time
from typing import Any

from tether.errors import TetherError
from tether.store import path_of, store_for
from tether.store.tally import empty_action, plan, stamp

TOP_CHECKS = 10
_RELATIVE = re.compile(r"^(\d+)\s*([smhdw])$")
_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_FORMATS = ("%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M", "%Y-%m-%d")


def parse_since(text: str, *, now: float | None = None) -> str:
    """`--since` as a stored UTC timestamp (`2026-01-01T09:30:00.000Z`): an ISO 8601 date or
    time (UTC unless it says `Z` or an offset such as `+02:00`), or a span back from now (`30m`,
    `24h`, `7d`, `2w`). Anything else is `usage`, naming `--since`."""
    given = text.strip()
    relative = _RELATIVE.match(given)
    if relative:
        seconds = (time.time() if now is None else now) - int(relative[1]) * _UNIT[relative[2]]
        return stamp(seconds)
    body, offset = given.replace(" ", "T", 1), 0
    zone = re.search(r"(Z|[+-]\d\d:?\d\d)$", body)
    if zone:
        body = body[: zone.start()]
        if zone[1] != "Z":
            sign = 1 if zone[1][0] == "+" else -1
            digits = zone[1][1:].replace(":", "")
            offset = sign * (int(digits[:2]) * 3600 + int(digits[2:]) * 60)
    whole, _, fraction = body.partition(".")
    for form in _FORMATS:
        try:
            parsed = time.strptime(whole, form)
        except ValueError:
            continue
        if fraction and (form != _FORMATS[0] or not fraction.isdigit()):
            break
        import calendar

        seconds = calendar.timegm(parsed) - offset + float(f"0.{fraction or 0}")
        return stamp(seconds)
    raise TetherError(
        "usage",
        f"--since takes a time (2026-01-31, 2026-01-31T09:30, 2026-01-31T09:30:00Z, "
        f"2026-01-31T11:30+02:00) or a span back from now (30m, 24h, 7d, 2w), not {text!r}",
        argument="--since",
    )


def collect(place: str, *, tree: str | None = None, since: str | None = None) -> dict[str, Any]:
    """The figures of the executions at `place` (as `tether list` takes it: a folder, memory://,
    a database URI without `#name`), only those of the tree named `tree` and those created at or
    after `since` (a stored timestamp: `parse_since`) when given. A `tree` no execution of the
    place has is `not_found`, naming `--tree`. The result matches `schema/stats.schema.json`."""
    return collect_drawn(place, tree=tree, since=since)[0]


def collect_drawn(
    place: str, *, tree: str | None = None, since: str | None = None
) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """`collect`, and each tree it counts by its hash (what the viewer draws)."""
    store = store_for(place)
    where, name = store.place(place)
    if name is not None:
        raise _not_a_place(place, store.scheme)
    raw = store.tally(where, since=since, tree=tree)
    if tree is not None and not raw["trees"]:
        raise TetherError(
            "not_found",
            f"--tree {tree!r}: no execution of a tree of that name is at {where}"
            + (f" (created since {since})" if since else ""),
            argument="--tree",
        )
    trees = sorted(
        (_tree(t) for t in raw["trees"]), key=lambda t: (t["name"], t["version"] or "", t["hash"])
    )
    figures = {
        "place": where,
        "tree": tree,
        "since": since,
        "executions": sum(t["executions"]["total"] for t in trees),
        "unreadable": raw["unreadable"],
        "trees": trees,
    }
    return figures, {str(t["hash"]): t["tree"] for t in raw["trees"]}


def _not_a_place(place: str, scheme: str) -> TetherError:
    """The refusal of a `place` that names one execution, or a folder that is not there."""
    if scheme == "file" and not os.path.lexists(path_of(place)):
        return TetherError("not_found", f"no folder at {path_of(place)}", argument="PLACE")
    return TetherError(
        "usage",
        f"{place} names one execution, not a place that holds executions: give a folder, "
        "memory:// or a database (postgresql://user@host/db, without #name)",
        argument="PLACE",
    )


def _tree(raw: dict[str, Any]) -> dict[str, Any]:
    actions = plan(raw["tree"])
    executions = dict(raw["executions"])
    executions["total"] = sum(executions.values())
    checks = []
    for check in raw["checks"]:
        action = actions.get(check["key"])
        if action is None:
            continue
        steps = [i for i, e in sorted(action["checks"].items()) if e == check["expression"]]
        checks.append(
            {
                "path": action["path"],
                "action": action["name"],
                "step": steps[0] if steps else None,
                "expression": check["expression"],
                "failed": check["failed"],
                "refused": check["refused"],
                "total": check["failed"] + check["refused"],
            }
        )
    checks.sort(key=lambda c: (-c["total"], c["path"], c["step"] or 0, c["expression"]))
    return {
        "name": raw["name"],
        "version": raw["version"],
        "hash": raw["hash"],
        "executions": executions,
        "time_to_finish": _seconds(raw["time_to_finish"]),
        "refused": _sorted(raw["refused"]),
        "refused_no_step": _no_step(raw),
        "actions": [
            _action(action, raw["actions"].get(key, empty_action()))
            for key, action in actions.items()
        ],
        "checks": checks[:TOP_CHECKS],
        "agents": [
            {"agent": name, **figures, "refused": _sorted(figures["refused"])}
            for name, figures in sorted(raw.get("agents", {}).items())
        ],
    }


def _no_step(raw: dict[str, Any]) -> dict[str, int]:
    """The refused answers aimed at no step (an answer to a finished execution, one before the
    protocol was accepted): the tree's refused answers less those its actions count."""
    left = dict(raw["refused"])
    for figures in raw["actions"].values():
        for code, n in figures["refused"].items():
            left[code] = left.get(code, 0) - n
    return _sorted({code: n for code, n in left.items() if n > 0})


def _action(action: dict[str, Any], figures: dict[str, Any]) -> dict[str, Any]:
    return {
        "path": action["path"],
        "name": action["name"],
        **figures,
        "refused": _sorted(figures["refused"]),
        "answer_time": _seconds(figures["answer_time"]),
        "human_wait": _seconds(figures["human_wait"]),
    }


def _sorted(counts: dict[str, int]) -> dict[str, int]:
    return dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))


def _seconds(spread: dict[str, Any]) -> dict[str, Any]:
    """A spread in milliseconds as one in seconds, to the millisecond."""
    return {
        "count": spread["count"],
        **{
            k: None if spread[k] is None else round(float(spread[k]) / 1000, 3)
            for k in ("median", "p90")
        },
    }


def table(figures: dict[str, Any], *, wide: bool = False) -> str:
    """The figures as text for people: per tree a heading and its executions, then one line per
    action, the refused answers by reason, then the checks that refused most. The table fits
    `WIDTH` columns (action names are cut short to fit, with `…`) unless `wide`, which prints
    every name whole and each action's refused answers on its own line of the table."""
    count = figures["executions"]
    lines = [f"{figures['place']}: {count} execution{'' if count == 1 else 's'}"]
    if figures["unreadable"]:
        lines[0] += f" ({figures['unreadable']} unreadable, left out: tether list names them)"
    if not figures["trees"]:
        lines.append("no executions" + (f" since {figures['since']}" if figures["since"] else ""))
    for tree in figures["trees"]:
        lines += ["", *_tree_lines(tree, wide)]
    return "".join(_printable(line).rstrip() + "\n" for line in lines)


# The table's width at most (a terminal's usual 100 columns) unless `--wide`.
WIDTH = 100
_ACTION_HEADER = (
    "ACTION",
    "REACHED",
    "ATTEMPTS",
    "FAILED",
    "RETRIES",
    "REFUSED",
    "ANSWER",
    "STOPS",
    "TOOLS",
    "HUMAN",
)
_LEGEND = "  ANSWER, HUMAN: median/90th percentile; TOOLS: denied/recorded; --wide, --json: all"
NO_STEP = "(no step)"


def _tree_lines(tree: dict[str, Any], wide: bool) -> list[str]:
    runs = tree["executions"]
    finish = tree["time_to_finish"]
    version = f" {tree['version']}" if tree["version"] else ""
    lines = [
        f"{tree['name']}{version} ({tree['hash'][:19]})",
        f"  executions: {runs['total']} ({runs['running']} running, {runs['complete']} complete, "
        f"{runs['failed']} failed); time to finish {_span(finish)}",
    ]
    if tree["refused"]:
        lines += _wrap("  refused answers: " + _reasons(tree["refused"]), wide)
    lines += _action_lines(tree, wide)
    if tree["checks"]:
        lines.append("  checks that refused most:")
        lines += [_check_line(check, wide) for check in tree["checks"]]
    if tree["agents"]:
        lines += _agent_lines(tree["agents"], wide)
    return lines


_AGENT_HEADER = ("AGENT", "ANSWERS", "ATTEMPTS", "FAILED", "CLAIMS", "TAKEOVERS", "LAPSED")


def _agent_lines(agents: list[dict[str, Any]], wide: bool) -> list[str]:
    """The table of a team's agents (a renewal counts as a claim), then each one's refusals."""
    rows: list[tuple[str, ...]] = [_AGENT_HEADER] + [
        (
            a["agent"],
            *(str(a[f]) for f in ("answers", "attempts", "failures")),
            str(a["claims"] + a["renewals"]),
            str(a["takeovers"]),
            str(a["lapsed"]),
        )
        for a in agents
    ]
    lines = ["  agents:", *_grid(rows, wide)]
    refused = [(a["agent"], a["refused"]) for a in agents if a["refused"]]
    if refused:
        lines.append("  refused by agent:")
        for name, reasons in refused:
            lines += _wrap(f"    {name}: {_reasons(reasons)}", wide)
    return lines


def _check_line(check: dict[str, Any], wide: bool) -> str:
    """One check that refused: its count, action and expression, cut (expression first, to 20
    columns, then the action's name) to `WIDTH` unless `wide`."""
    head = f"    {check['total']:>4}  "
    tail = f" (failed {check['failed']}, refused a close {check['refused']})"
    action, expression = check["action"], check["expression"]
    if not wide:
        room = WIDTH - len(head) - len(tail) - 2
        expression = _cut(expression, max(room - len(action), 20))
        action = _cut(action, max(room - len(expression), 8))
    return f"{head}{action}: {expression}{tail}"


def _action_lines(tree: dict[str, Any], wide: bool) -> list[str]:
    """The table of a tree's actions (and of the refused answers aimed at no step), its legend,
    and unless `wide` the refused answers by action and reason under it."""
    named = [("  " * (len(a["path"]) - 1) + a["name"], a) for a in tree["actions"]]
    refused = [(name.strip(), a["refused"]) for name, a in named if a["refused"]]
    rows = [_ACTION_HEADER, *(_action_row(name, a, wide) for name, a in named)]
    if tree["refused_no_step"]:  # the column's total is the tree's
        refused.append((NO_STEP, tree["refused_no_step"]))
        count = _reasons(tree["refused_no_step"]) if wide else str(sum(refused[-1][1].values()))
        rows.append((NO_STEP, "", "", "", "", count, "", "", "", ""))
    lines = [*_grid(rows, wide), _LEGEND]
    if refused and not wide:
        lines.append("  refused answers by action:")
        for name, reasons in refused:
            lines += _wrap(f"    {name}: {_reasons(reasons)}", wide)
    return lines


def _grid(rows: list[tuple[str, ...]], wide: bool) -> list[str]:
    """`rows` (a header first) as lines of columns, each as wide as its widest cell; unless
    `wide`, the first column is cut (with `…`) so that a line fits `WIDTH`."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    if not wide:
        room = WIDTH - 2 - sum(widths[1:]) - 2 * (len(widths) - 1)
        widths[0] = max(min(widths[0], room), len(rows[0][0]))
    lines = []
    for row in rows:
        cells = [_cut(row[0], widths[0]), *row[1:]]
        lines.append("  " + "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)))
    return lines


def _wrap(line: str, wide: bool) -> list[str]:
    """`line` as lines of at most `WIDTH` columns (unless `wide`), broken after a comma and
    continued under its first word."""
    if wide or len(line) <= WIDTH:
        return [line]
    import textwrap

    indent = " " * (len(line) - len(line.lstrip()) + 2)
    return textwrap.wrap(line, WIDTH, subsequent_indent=indent, break_long_words=False)


def _action_row(name: str, action: dict[str, Any], wide: bool) -> tuple[str, ...]:
    """One action's cells; its refused answers by reason when `wide`, else their number."""
    refused = sum(action["refused"].values())
    return (
        name,
        str(action["reached"]),
        str(action["attempts"]),
        str(action["failures"]),
        str(action["retries"]),
        (_reasons(action["refused"]) or "0") if wide else str(refused),
        _span(action["answer_time"]),
        str(action["stops_refused"]),
        f"{action['tools_denied']}/{action['tools_recorded']}",
        _span(action["human_wait"]),
    )


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _span(spread: dict[str, Any]) -> str:
    if not spread["count"]:
        return "-"
    return f"{_duration(spread['median'])}/{_duration(spread['p90'])}"


def _duration(seconds: float) -> str:
    """`seconds` as people read a span: 850ms, 10.4s, 1m55s, 3h20m, 2d4h."""
    if seconds < 1:
        return f"{seconds * 1000:.0f}ms"
    if seconds < 60:
        return f"{seconds:.3g}s"
    whole = round(seconds)
    for unit, size, small, small_size in (("d", 86400, "h", 3600), ("h", 3600, "m", 60)):
        if whole >= size:
            return f"{whole // size}{unit}{whole % size // small_size}{small}"
    return f"{whole // 60}m{whole % 60:02d}s"


def _reasons(counts: dict[str, int]) -> str:
    return ", ".join(f"{code} {n}" for code, n in counts.items())


def _printable(text: str) -> str:
    """`text` with control characters escaped, so a stored name cannot drive the terminal."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
