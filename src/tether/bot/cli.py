"""The `tether bot` commands: list the tools a bot yields, build a bot folder into a tree file.

Owns the options of `tether bot tools TREE` (a tree file or a bot folder) and `tether bot build
FOLDER -o TREE`, and their JSON output; errors are printed like every other `tether` command's.
It does not own the surface (`tether.bot.surface`), the folder format (`tether.bot.folder`) or
serving the tools (`tether.bot.server`).
"""

from __future__ import annotations

import os
import sys
from typing import Any

from tether.cli.args import Command, Parsed, parse
from tether.cli.output import emit, report
from tether.errors import EXIT_OK, EXIT_USAGE, TetherError

TOOLS = Command(
    "bot tools",
    "list the MCP tools a bot tree (or bot folder) yields, with their descriptions",
    ("TREE",),
    1,
    values=("--name",),
    help="--name NAME   the name the client registers the server under (default tether); "
    "tool names\n              are kept short enough that mcp__NAME__TOOL has at most 64 "
    "characters",
)
BUILD = Command(
    "bot build",
    "turn a bot folder into a tree file",
    ("FOLDER",),
    1,
    values=("-o", "--output"),
    help="-o, --output TREE   the tree file to write (required; replaced if it exists)",
)
COMMANDS = {"tools": TOOLS, "build": BUILD}


def main(argv: list[str]) -> int:
    try:
        if not argv or argv[0] in ("-h", "--help", "help"):
            sys.stdout.write(_overview())
            return EXIT_OK if argv else EXIT_USAGE
        command = COMMANDS.get(argv[0])
        if command is None:
            raise TetherError(
                "usage", f"unknown bot command {argv[0]!r}; the commands are tools and build"
            )
        parsed = parse(command, argv[1:])
        if parsed.help:
            sys.stdout.write(f"usage: {command.usage()}\n\n{command.summary}\n\n{command.help}\n")
            return EXIT_OK
        emit(_tools(parsed) if command is TOOLS else _build(parsed))
        return EXIT_OK
    except Exception as exc:
        return report(exc)


def _overview() -> str:
    lines = ["usage: tether bot COMMAND ...", ""]
    lines += [f"  {c.usage():<44} {c.summary}" for c in COMMANDS.values()]
    lines += ["", "Serve a bot: tether mcp --bot TREE --state URI (see docs/bot.md)."]
    return "\n".join(lines) + "\n"


def _tools(p: Parsed) -> dict[str, Any]:
    from tether.bot.surface import DEFAULT_SERVER, surface_of

    given = str(p.args["TREE"])
    if os.path.isdir(given):
        from tether.bot.folder import build_tree

        data = build_tree(given)
    else:
        from tether.tree.load import load_tree

        data = load_tree(given).data
    surface = surface_of(data, given, p.options.get("--name", DEFAULT_SERVER))
    return {
        "bot": surface.title,
        "count": len(surface.tools),
        "tools": [
            {
                "name": t.name,
                "kind": t.kind,
                **({"phase": t.phase} if t.phase else {}),
                **({"action": t.action} if t.action else {}),
                "description": t.description,
            }
            for t in surface.tools
        ],
    }


def _build(p: Parsed) -> dict[str, Any]:
    from pathlib import Path

    from tether.bot.folder import build_tree, render
    from tether.bot.surface import surface_of

    output = p.options.get("-o") or p.options.get("--output")
    if output is None:
        raise TetherError("usage", f"bot build needs -o TREE; usage: {BUILD.usage()}")
    folder = Path(str(p.args["FOLDER"]))
    data = build_tree(folder)
    text = render(data, folder.resolve().name)
    target = Path(output)
    if not target.parent.is_dir():
        raise TetherError("not_found", f"-o {output}: folder {target.parent} does not exist")
    temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, target)
    surface = surface_of(data, str(folder))
    return {
        "status": "built",
        "tree": str(target),
        "bot": surface.title,
        "phases": len(surface.phases),
        "actions": sum(len(ph.actions) for ph in surface.phases),
        "tools": len(surface.tools),
    }
