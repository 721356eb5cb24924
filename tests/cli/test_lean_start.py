"""The CLI's step path loads only what it needs (DESIGN section 9): `next`, `eval` and `var` on a
file execution never import YAML, pydantic, the CEL library, the MCP SDK or the
PostgreSQL driver, nor `typing` and `dataclasses`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tether.verbs import Runtime

HELLO = str(Path(__file__).resolve().parents[2] / "examples" / "hello-world.yaml")
HEAVY = ("yaml", "pydantic", "cel", "mcp", "mcp_types", "psycopg", "starlette", "anyio", "re2")
# Light alone, but together a quarter of a step's start-up: `typing` (annotations name it only
# for the type checker, under `if TYPE_CHECKING:`, with `TYPE_CHECKING = False` defined in the
# module) and `dataclasses`, which loads `inspect`, `ast` and `dis`.
STARTUP = ("typing", "dataclasses", "inspect", "ast")

_PROBE = """
import json, sys
from tether.cli.main import main
codes = [main(args) for args in {commands}]
heavy = sorted(m for m in sys.modules if m.split(".")[0] in {heavy})
print(json.dumps([codes, heavy]), file=sys.stderr)
"""


def _imports(commands: list[list[str]], heavy: tuple[str, ...]) -> tuple[list[int], list[str]]:
    """Run CLI commands in a fresh interpreter: their exit codes and the `heavy` modules that
    were loaded."""
    done = subprocess.run(
        [sys.executable, "-c", _PROBE.format(commands=json.dumps(commands), heavy=heavy)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    codes, loaded = json.loads(done.stderr.strip().splitlines()[-1])
    return codes, loaded


def test_step_commands_import_no_heavy_module(tmp_path: Path) -> None:
    trace = str(tmp_path / "run.json")
    rt = Runtime()
    rt.start(HELLO, trace)
    rt.submit(trace, "success")
    rt.var_write(trace, "time_of_day", "morning")
    rt.submit(trace, "success")
    # None of these reaches a `check` step (which would rightly load the CEL library).
    commands = [["next", trace], ["eval", trace, "true"], ["var", trace, "greeting", "hi"]]
    assert _imports(commands, HEAVY + STARTUP) == ([0, 0, 0], [])


def test_a_refused_answer_and_its_record_import_no_heavy_module(tmp_path: Path) -> None:
    """A refused answer is recorded in the execution's refusal log on the way out."""
    trace = str(tmp_path / "run.json")
    Runtime().start(HELLO, trace)
    commands = [["eval", trace, "true"], ["submit", trace, "success", "--step", "0:0:0:0:x"]]
    assert _imports(commands, HEAVY + STARTUP) == ([5, 5], [])
    assert (tmp_path / "run.json.refused.jsonl").read_text().count("\n") == 2


def test_stats_imports_no_heavy_module(tmp_path: Path) -> None:
    Runtime().start(HELLO, str(tmp_path / "run.json"))
    commands = [["stats", str(tmp_path)], ["stats", str(tmp_path), "--json"]]
    assert _imports(commands, HEAVY) == ([0, 0], [])


def test_list_imports_no_heavy_module(tmp_path: Path) -> None:
    Runtime().start(HELLO, str(tmp_path / "run.json"))
    commands = [["list", str(tmp_path)], ["list", str(tmp_path), "--json"]]
    assert _imports(commands, HEAVY) == ([0, 0], [])


HTTP_STACK = ("starlette", "uvicorn", "sse_starlette", "anyio", "h11", "httptools")


def test_show_and_render_import_no_http_stack(tmp_path: Path) -> None:
    """Only `tether view` serves: drawing an execution or a tree loads no web server."""
    trace = str(tmp_path / "run.json")
    Runtime().start(HELLO, trace)
    commands = [
        ["show", trace, "--no-color"],
        ["render", trace, "-o", str(tmp_path / "run.svg")],
        ["render", HELLO, "-o", str(tmp_path / "tree.svg")],
    ]
    assert _imports(commands, HTTP_STACK) == ([0, 0, 0], [])
