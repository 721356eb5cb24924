"""The `tether` command: the entry point, its overview and the dispatch to what runs each name.

Owns:
- `main` (the `tether` script and `python -m tether`) and the overview `tether --help` prints;
- the table of command families with parsers of their own (`FAMILIES`), each imported by name
  only when it runs, so the command imports no edge (MCP, viewer, bot, guard, tests, project
  set-up) it does not run, and heavy modules (YAML, pydantic, CEL, the MCP SDK) only with the
  commands that need them;
- a verb (`next`, `submit`, ...): parsed and called through the verb command table
  (`tether.command.verb_table`), its result printed here.
It does not own the output contract or the parse/help/report frame (`tether.command.output`;
README "Exit codes"), and holds no runtime logic of its own.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from tether.command.output import emit, report, run_command
from tether.command.verb_table import COMMANDS, HANDLERS
from tether.errors import EXIT_OK, EXIT_USAGE, TetherError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# Command families with parsers of their own: name -> ("module:function", summary). The function
# takes the arguments after the name and returns the exit code.
FAMILIES: dict[str, tuple[str, str]] = {
    "list": ("tether.cli.listing:main", "list the executions in a folder or a database"),
    "stats": ("tether.cli.stats:main", "figures across the executions of a folder or a database"),
    "inbox": ("tether.cli.inbox:main", "what waits on a person across a folder or a database"),
    "guard": ("tether.guard.cli:main", "the guard over an agent's tool calls (see guard --help)"),
    "mcp": ("tether.mcp.cli:main", "serve the runtime over MCP, stdio or HTTP (tether mcp --help)"),
    "view": ("tether.viewer.cli:view_main", "serve the live viewer page for executions"),
    "show": ("tether.viewer.cli:show_main", "draw an execution's tree in the terminal"),
    "render": ("tether.viewer.cli:render_main", "write a tree or an execution as SVG"),
    "bot": ("tether.bot.cli:main", "bot tool surfaces: list tools, build a bot folder"),
    "test": ("tether.treetest.cli:main", "run recorded walks of trees without an agent"),
    "init": ("tether.project:init_main", "write the examples and a guard configuration here"),
    "install": ("tether.project:install_main", "install the agent skill (install skill)"),
    "export": ("tether.export:main", "send executions as OpenTelemetry traces (export otel)"),
}


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] in ("-h", "--help", "help"):
        sys.stdout.write(_overview())
        return EXIT_OK if args else EXIT_USAGE
    if args[0] == "--version":
        from tether import __version__

        sys.stdout.write(f"tether {__version__}\n")
        return EXIT_OK
    name, rest = args[0], args[1:]
    if name in FAMILIES:
        import importlib

        module, _, function = FAMILIES[name][0].partition(":")
        family_main: Callable[[list[str]], int] = getattr(importlib.import_module(module), function)
        return family_main(rest)
    command = COMMANDS.get(name)
    if command is None:
        import difflib

        close = difflib.get_close_matches(name, list(COMMANDS), n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        return report(TetherError("usage", f"unknown command {name!r}{hint}; see tether --help"))
    return run_command(command, rest, lambda parsed: _print(name, HANDLERS[name](parsed)))


def _print(name: str, result: Any) -> int:
    """Print a verb's result; `verify` exits with its class when the replay disagrees."""
    emit(result)
    if name == "verify" and not result["ok"]:
        return TetherError("verify_failed", "").exit_code
    return EXIT_OK


def _overview() -> str:
    lines = ["usage: tether COMMAND [ARGS]  (tether COMMAND --help for one command)", ""]
    lines += [f"  {c.name:<10} {c.summary}" for c in COMMANDS.values()]
    lines += [f"  {name:<10} {summary}" for name, (_, summary) in FAMILIES.items()]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
