"""`tether list`: the executions in a folder, the memory store or a database.

Owns the command's arguments and its two outputs: a table for people (name, tree, status, phase,
open step, last update; an execution that cannot be read on its own line with its error) and,
with `--json`, the listing as a JSON array. Every cell is printed with its control characters
escaped, so a file name or a stored text cannot drive the terminal. The listing itself comes
from the verb layer (`Runtime.list_executions`), which asks the store; nothing here reads an
execution.
"""

from __future__ import annotations

from typing import Any

from tether.command.args import Command, Parsed
from tether.command.output import run_command, show
from tether.errors import TetherError

LIST = Command(
    "list",
    "list the executions in a folder or a database",
    ("WHERE",),
    0,
    values=("--status", "--limit", "--offset"),
    flags=("--json",),
    help="WHERE is a folder (default: TETHER_STORE if set, else the current folder), memory:// "
    "or a database (postgresql://user@host/db, without #name). A folder is listed with its "
    "sub-folders, down to 6 levels, leaving out hidden ones, venv, node_modules and "
    "__pycache__, and entering none through a symbolic link. --status running|complete|failed "
    "keeps the executions with that status; one that cannot be read is listed with its error "
    "whatever --status says. --limit N prints only N of them, from the Kth with --offset K (in "
    "name order). --json prints a JSON array of {name, uri, tree, status, phase, "
    "open_step, revision, updated_at}, or {name, uri, error} for one that cannot be read.",
)
_HEADER = ("NAME", "TREE", "STATUS", "PHASE", "OPEN STEP", "UPDATED")


def main(argv: list[str]) -> int:
    return run_command(LIST, argv, _list)


def _list(parsed: Parsed) -> int:
    from tether.verbs import STATUSES, Runtime

    status = parsed.options.get("--status")
    if status is not None and status not in STATUSES:
        raise TetherError(
            "usage",
            f"--status takes {', '.join(STATUSES)}, got {status!r}; usage: {LIST.usage()}",
        )
    limit, offset = parsed.number("--limit"), parsed.number("--offset", 0) or 0
    listed = Runtime().list_executions(
        parsed.args.get("WHERE"), status=status, limit=limit, offset=offset
    )
    return show(parsed, listed, table)


def table(listed: list[dict[str, Any]]) -> str:
    """The listing as aligned columns, one execution a line; an execution that cannot be read
    has its error after its name."""
    if not listed:
        return "no executions\n"
    rows = [_row(entry) for entry in listed]
    widths = [len(title) for title in _HEADER]
    for row in rows:
        for i, cell in enumerate(row[:-1]):  # the last cell of a line is never padded
            widths[i] = max(widths[i], len(cell))
    lines = [_HEADER, *rows]
    return "".join(
        "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=False)).rstrip()
        + "\n"
        for line in lines
    )


def _row(entry: dict[str, Any]) -> tuple[str, ...]:
    if "error" in entry:
        error = entry["error"]
        return _cell(entry["name"]), _cell(f"error {error['code']}: {error['message']}")
    step = entry["open_step"]
    opened = f"{step['name']} ({step['type']})" if step else None
    cells = (entry["name"], entry["tree"], entry["status"], entry["phase"], opened)
    return tuple(_cell(value) for value in (*cells, entry["updated_at"]))


def _cell(value: object) -> str:
    """`value` as one printable cell: `-` for nothing, control characters escaped."""
    if value is None:
        return "-"
    text = str(value)
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
