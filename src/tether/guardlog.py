"""The guard's state folder and its error log, below the guard so that the runtime reaches them.

Owns:
- where the guard keeps its state (`default_state_dir`): `$TETHER_GUARD_STATE`, else
  `$XDG_STATE_HOME/tether/guard`, else `~/.local/state/tether/guard`;
- its error log, `<state dir>/errors.log` (JSON lines through `tether.appendlog`; the previous
  megabyte kept as `errors.log.1`): adding an error (`record`) and reading the last ones back
  (`read_log`, for `tether guard log`).

The guard writes what it could not decide there (`tether.guard.harness.failsafe`), and the
notifications that could not be delivered are written there too (`tether.notify`). It does not
decide what an error is, nor what the guard does about one.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any

from tether import appendlog

LOG_NAME = "errors.log"
LOG_MAX_BYTES = 1024 * 1024


def default_state_dir() -> str:
    """`$TETHER_GUARD_STATE`, else `$XDG_STATE_HOME/tether/guard`, else `~/.local/state/...`."""
    explicit = os.environ.get("TETHER_GUARD_STATE")
    if explicit:
        return explicit
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "state"
    )
    return os.path.join(base, "tether", "guard")


def log_path(state_dir: str) -> str:
    return os.path.join(state_dir, LOG_NAME)


def record(state_dir: str, entry: dict[str, Any]) -> None:
    """Append one error to the log (best effort: a log that cannot be written is skipped)."""
    path = log_path(state_dir)
    with contextlib.suppress(OSError):  # another hook may have rotated it first
        if os.path.getsize(path) > LOG_MAX_BYTES:
            os.replace(path, path + ".1")
    with contextlib.suppress(OSError):
        os.makedirs(state_dir, exist_ok=True)
        appendlog.append(path, [entry])


def read_log(state_dir: str, limit: int) -> list[dict[str, Any]]:
    """The last `limit` errors, oldest first."""
    path = log_path(state_dir)
    entries = appendlog.read(path + ".1")[0] + appendlog.read(path)[0]
    return entries[-limit:] if limit > 0 else entries
