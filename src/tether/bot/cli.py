"""The `tether bot` commands: list the tools a bot yields, build a bot folder into a tree file.

Owns the options of `tether bot tools TREE` (a tree file or a bot folder) and `tether bot build
FOLDER -o TREE`, and their JSON output; errors are printed like every other `tether` command's.
It does not own the surface (`tether.bot.surface`), the folder format (`tether.bot.folder`) or
serving the tools (`tether.mcp.bot`).
"""

from __future__ import annotations

import os

from tether.command.args import Command, Parsed
from tether.command.output import emit, run_family
from tether.errors import EXIT_OK, TetherError

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


def main(argv: list[str]) -> int:
    return run_family(
        "bot",
        {"tools": (TOOLS, _tools), "build": (BUILD, _build)},
        argv,
        footer="Serve a bot: tether mcp --bot TREE --state URI (see docs/bot.md).",
    )


def _tools(p: Parsed) -> int:
    from tether.bot.surface import DEFAULT_SERVER, surface_of

    given = str(p.args["TREE"])
    if os.path.isdir(given):
        from tether.bot.folder import build_tree

        data = build_tree(given)
    else:
        from tether.tree.load import load_tree

        data = load_tree(given).data
    surface = surface_of(data, given, p.options.get("--name", DEFAULT_SERVER))
    tools = {
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
    emit(tools)
    return EXIT_OK


def _build(p: Parsed) -> int:
    from pathlib import Path

    from tether.bot.folder import build_tree, render
    from tether.bot.surface import surface_of
    from tether.files import write_atomic

    output = p.options.get("-o") or p.options.get("--output")
    if output is None:
        raise TetherError("usage", f"bot build needs -o TREE; usage: {BUILD.usage()}")
    folder = Path(str(p.args["FOLDER"]))
    data = build_tree(folder)
    text = render(data, folder.resolve().name)
    target = Path(output)
    if not target.parent.is_dir():
        raise TetherError("not_found", f"-o {output}: folder {target.parent} does not exist")
    write_atomic(str(target), text)
    surface = surface_of(data, str(folder))
    built = {
        "status": "built",
        "tree": str(target),
        "bot": surface.title,
        "phases": len(surface.phases),
        "actions": sum(len(ph.actions) for ph in surface.phases),
        "independent": len(surface.independent),
        "tools": len(surface.tools),
    }
    emit(built)
    return EXIT_OK
