"""Helpers for the viewer tests: the real `tether` command, run as a user runs it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
ARTIFACTS = REPO / "artifacts" / "viewer"
TETHER = str(Path(sys.executable).parent / "tether")


def tether(*args: str | Path, code: int = 0) -> subprocess.CompletedProcess[str]:
    """Run the `tether` command; fail the test unless it exits with `code`."""
    done = subprocess.run(
        [TETHER, *map(str, args)], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == code, (args, done.stdout, done.stderr)
    return done


def answer(run: Path, *args: str) -> Any:
    """Run a verb on `run` (`answer(run, "submit", "success")`) and return its JSON result."""
    return json.loads(tether(*args[:1], run, *args[1:]).stdout)
