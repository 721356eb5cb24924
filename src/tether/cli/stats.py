"""`tether stats`: figures across the executions of a folder, the memory store or a database.

Owns the command's arguments (the place, `--tree`, `--since`, `--wide`, `--json`) and its two
outputs: the table of `tether.stats.table` for people (`--wide`: not cut to 100 columns) and,
with `--json`, the figures as one JSON object (`schema/stats.schema.json`). The figures come
from `tether.stats.collect`, imported only when the command runs.
"""

from __future__ import annotations

import os

from tether.command.args import Command, Parsed
from tether.command.output import run_command, show

STATS = Command(
    "stats",
    "figures across the executions of a folder or a database",
    ("PLACE",),
    0,
    values=("--tree", "--since"),
    flags=("--json", "--wide"),
    help="PLACE is a folder (default: TETHER_STORE if set, else the current folder; its "
    "sub-folders are counted as tether list lists them), memory:// or a database "
    "(postgresql://user@host/db, without #name). Per tree (name, version, hash): executions by "
    "status and the time to finish; per action: times reached, attempts, failures, retries, "
    "refused answers by reason, answer times, stop refusals, tool calls denied and recorded, "
    "human waits; the checks that refused most. --tree NAME counts that tree's executions only; "
    "--since TIME those created at or after TIME (2026-01-31, 2026-01-31T09:30Z, "
    "2026-01-31T11:30+02:00, or back from now: 30m, 24h, 7d, 2w). Times are medians and 90th "
    "percentiles. The table fits 100 columns (long action names are cut short); --wide prints "
    "every name whole and each action's refused answers by reason in its row. --json prints "
    "the figures as JSON (schema/stats.schema.json).",
)


def main(argv: list[str]) -> int:
    return run_command(STATS, argv, _stats)


def _stats(parsed: Parsed) -> int:
    from tether import stats

    since = parsed.options.get("--since")
    place = parsed.args.get("PLACE") or os.environ.get("TETHER_STORE") or "."
    figures = stats.collect(
        place,
        tree=parsed.options.get("--tree"),
        since=None if since is None else stats.parse_since(since),
    )
    return show(parsed, figures, lambda f: stats.table(f, wide="--wide" in parsed.flags))
