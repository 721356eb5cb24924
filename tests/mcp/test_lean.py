"""The step path stays lean: `tether next` and `tether submit` never load the MCP SDK, and importing
the `tether.mcp` package loads nothing until `tether mcp` runs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tether.verbs import Runtime

_PROBE = """
import json
import sys
from tether.cli.main import main
codes = [main(args) for args in {commands}]
import tether.mcp
loaded = sorted(m for m in sys.modules if m == "mcp" or m.startswith(("mcp.", "mcp_types")))
print(json.dumps([codes, loaded]), file=sys.stderr)
"""


def test_the_step_path_does_not_import_the_mcp_sdk(root: Path) -> None:
    trace = str(root / "lean.json")
    Runtime().start(str(root / "hello-world.yaml"), trace)
    commands = [["next", trace], ["submit", trace, "success"], ["var", trace, "k", "1"]]
    done = subprocess.run(
        [sys.executable, "-c", _PROBE.format(commands=json.dumps(commands))],
        capture_output=True,
        text=True,
        timeout=60,
    )
    codes, loaded = json.loads(done.stderr.strip().splitlines()[-1])
    assert codes == [0, 0, 0], done.stderr
    assert loaded == []
