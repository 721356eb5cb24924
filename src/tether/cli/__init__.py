"""The command-line edge: parse arguments, call the verb layer, print JSON.

Also owns `tether_command`, how configuration files written for other programs (MCP clients,
Claude Code hooks) invoke this installation of `tether`. This package is on the start-up path of
every command, so it imports nothing beyond `os` and `sys`.
"""

from __future__ import annotations

import os
import sys


def tether_command() -> str:
    """The `tether` script beside the running interpreter when there is one (so a client finds
    this installation even outside its virtual environment), else `tether`."""
    script = os.path.join(
        os.path.dirname(sys.executable), "tether.exe" if os.name == "nt" else "tether"
    )
    return script if os.path.exists(script) else "tether"
