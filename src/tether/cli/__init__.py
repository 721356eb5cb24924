"""The command-line edge: parse arguments, call the verb layer, print JSON.

Also owns `tether_command`, how configuration files written for other programs (MCP clients,
Claude Code hooks) invoke this installation of `tether`.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def tether_command() -> str:
    """The `tether` script beside the running interpreter when there is one (so a client finds
    this installation even outside its virtual environment), else `tether`."""
    script = Path(sys.executable).parent / ("tether.exe" if os.name == "nt" else "tether")
    return str(script) if script.exists() else "tether"
