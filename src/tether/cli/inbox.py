"""`tether inbox`: what waits on a person across the executions of a folder or a database.

Owns the command's arguments (the place, `--refused N`, `--json`) and its two outputs: the lines
of `tether.inbox.table` for people and, with `--json`, the waits as one JSON object
(`schema/inbox.schema.json`). The reading is `tether.inbox.waiting`, imported only when the
command runs; nothing here reads an execution.
"""

from __future__ import annotations

import os

from tether.command.args import Command, Parsed
from tether.command.output import run_command, show
from tether.errors import TetherError

INBOX = Command(
    "inbox",
    "what waits on a person across a folder or a database",
    ("PLACE",),
    0,
    values=("--refused",),
    flags=("--json",),
    help="PLACE is a folder (default: TETHER_STORE if set, else the current folder; its "
    "sub-folders are read as tether list lists them), memory:// or a database "
    "(postgresql://user@host/db, without #name). Lists, oldest first, every open human step "
    "(what it asks, the values it shows, since when, the tether approve / tether reject line "
    "that answers it), every parked execution (why, since when), every execution whose open "
    "step had --refused answers (default 5) or more refused in a row, and every team's branch "
    "whose claim lapsed (tether claim). --json prints the waits as JSON "
    "(schema/inbox.schema.json).",
)


def main(argv: list[str]) -> int:
    return run_command(INBOX, argv, _inbox)


def _inbox(parsed: Parsed) -> int:
    from tether import inbox

    given = parsed.options.get("--refused", str(inbox.REFUSED))
    if not given.isdigit() or int(given) < 1:
        raise TetherError("usage", f"--refused takes a whole number from 1, got {given!r}")
    place = parsed.args.get("PLACE") or os.environ.get("TETHER_STORE") or "."
    return show(parsed, inbox.waiting(place, refused=int(given)), inbox.table)
