"""The `tether mcp` command family: serve over stdio or HTTP, serve a bot's tools, or register
with a client.

Owns the options of `tether mcp [--http ...]`, `tether mcp --bot TREE --state URI [...]` and
`tether mcp install ...`, their defaults (the root is the working directory, or none for a bot;
the token may come from the environment), and turning them into a `Runtime` (or a bot's
session) and a transport. Errors are printed like every other `tether` command's. It does not
own the tools, the bot's server, the transports or the client files (the sibling modules do).
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from tether.command.args import Command, Parsed
from tether.command.output import emit, run_command
from tether.errors import EXIT_OK, TetherError

if TYPE_CHECKING:
    from tether.httpgate import ListenOptions

# The HTTP serving options, `tether mcp --bot`'s too.
HTTP_VALUES = ("--host", "--port", "--token", "--max-body-bytes")
HTTP_HELP = (
    "--http            serve Streamable HTTP at POST /mcp (and GET /health) instead of stdio\n"
    "--host ADDR       address to listen on (default 127.0.0.1)\n"
    "--port N          port (default 3001; 0 picks a free one, logged on stderr)\n"
    "--token T         bearer token clients must send (default: $TETHER_MCP_TOKEN);\n"
    "                  required when ADDR is not loopback\n"
    "--allow-host H    also accept Host/Origin H (repeatable; loopback is always accepted)\n"
    "--max-body-bytes N  largest request body accepted (default 1048576)"
)

SERVE = Command(
    "mcp",
    "serve the runtime tools over MCP: stdio by default, Streamable HTTP with --http",
    values=("--root", "--store", *HTTP_VALUES),
    repeated=("--allow-host", "--allow-store"),
    flags=("--http",),
    help=(
        "--root DIR        file URIs (trees and traces) must lie inside DIR (default: the\n"
        "                  working directory); relative paths are taken from it\n"
        "--store URI       where trace_output names that are not URIs live, e.g.\n"
        "                  postgresql://user@host/db (default: $TETHER_STORE, else files)\n"
        "--allow-store URI another database clients may name (repeatable); any other\n"
        "                  database URI is refused before a connection is made\n"
        f"{HTTP_HELP}\n"
        "tether mcp install --help: register the server with an MCP client.\n"
        "tether mcp --bot TREE --state URI: serve a bot's tools instead (docs/bot.md)."
    ),
)

BOT = Command(
    "mcp --bot",
    "serve a bot's generated tools over MCP: stdio by default, Streamable HTTP with --http",
    values=("--bot", "--state", "--root", "--name", *HTTP_VALUES),
    repeated=("--allow-host",),
    flags=("--http",),
    help=(
        "--bot TREE        the bot's tree file: a sequence of phases, each a sequence of actions\n"
        "                  (tether bot build turns a bot folder into one)\n"
        "--state URI       the execution the tools drive: a path or file:// URI, memory://NAME\n"
        "                  or postgresql://...; started from TREE on first use\n"
        "--root DIR        relative paths are taken from DIR and file URIs must lie inside it\n"
        "--name NAME       the name the client registers this server under (default tether):\n"
        "                  tool names are kept short enough that mcp__NAME__TOOL has at most\n"
        "                  64 characters\n" + HTTP_HELP
    ),
)

INSTALL = Command(
    "mcp install",
    "register the stdio server in an MCP client's configuration (other servers are kept)",
    values=("--target", "--scope", "--name", "--dir", "--root", "--command"),
    help=(
        "--target T   claude-code (.mcp.json), claude-desktop, cursor (.cursor/mcp.json),\n"
        "             vscode (.vscode/mcp.json) or gemini (.gemini/settings.json)\n"
        "--scope S    project (default; files under --dir), user (files under your home) or,\n"
        "             for claude-code, local (this project's entry in ~/.claude.json)\n"
        "--name N     the server's name in the file (default tether)\n"
        "--dir D      the project directory (default: the working directory)\n"
        "--root R     pass --root R to the server, relative to --dir in a project file\n"
        "             (claude-desktop: default --dir, since it starts servers in /)\n"
        "--command C  the command the client runs (default: tether when it is on PATH, uvx\n"
        "             --from SOURCE tether under uvx, else this installation's full path; one\n"
        "             naming this machine goes to the local or user scope, never a project file)"
    ),
)


def main(argv: list[str]) -> int:
    if "--bot" in argv:
        return run_command(BOT, argv, _serve_bot)
    if argv[:1] == ["install"]:
        return run_command(INSTALL, argv[1:], _install)
    return run_command(SERVE, argv, _serve)


def _serve(p: Parsed) -> int:
    import anyio

    from tether.verbs import Runtime

    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="%(name)s: %(message)s")
    runtime = Runtime(
        root=_root(p.options.get("--root")),
        default_store=p.options.get("--store"),
        stores=p.multi.get("--allow-store", []),
    )
    if "--http" not in p.flags:
        _stdio_only(p)
        from tether.mcp.server import serve_stdio

        anyio.run(serve_stdio, runtime)
        return EXIT_OK
    from tether.mcp.http import serve_http

    anyio.run(serve_http, runtime, http_options(p))
    return EXIT_OK


def _serve_bot(p: Parsed) -> int:
    """`tether mcp --bot TREE --state URI [...]`: serve until the client goes away."""
    import anyio

    from tether.bot.session import BotSession
    from tether.bot.surface import DEFAULT_SERVER, name_budget
    from tether.mcp.bot import build_server
    from tether.verbs import Runtime

    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="%(name)s: %(message)s")
    for needed in ("--bot", "--state"):
        if needed not in p.options:
            raise TetherError("usage", f"{needed} is required; usage: {BOT.usage()}")
    root = p.options.get("--root")
    if root is not None:
        root = os.path.abspath(root)
        if not os.path.isdir(root):
            raise TetherError("not_found", f"--root {p.options['--root']} is not a directory")
    tree = p.options["--bot"]
    if root is not None and not os.path.isabs(tree):
        tree = os.path.join(root, tree)
    if os.path.isdir(tree):
        raise TetherError(
            "usage",
            f"--bot {p.options['--bot']} is a folder; build it into a tree file first: "
            f"tether bot build {p.options['--bot']} -o TREE",
        )
    server = p.options.get("--name", DEFAULT_SERVER)
    name_budget(server)  # refuse a server name that leaves no room before serving
    session = BotSession(Runtime(root=root), tree, p.options["--state"], server)
    if "--http" not in p.flags:
        _stdio_only(p)
        from tether.mcp.server import run_stdio

        anyio.run(run_stdio, build_server(session))
        return EXIT_OK
    from tether.mcp.http import serve

    anyio.run(serve, build_server(session), http_options(p), "tether mcp --bot")
    return EXIT_OK


def _stdio_only(p: Parsed) -> None:
    """Refuse an HTTP serving option given without `--http`."""
    given = [o for o in (*HTTP_VALUES, "--allow-host") if o in p.options or o in p.multi]
    if given:
        raise TetherError("usage", f"{given[0]} applies to --http only")


def http_options(p: Parsed) -> ListenOptions:
    """The HTTP serving options of a parsed command line (`ListenOptions.from_command`); the
    bot server shares them."""
    from tether.httpgate import DEFAULT_MAX_BODY_BYTES, ListenOptions
    from tether.mcp.http import DEFAULT_PORT, TOKEN_ENV

    return ListenOptions.from_command(
        p, TOKEN_ENV, port=DEFAULT_PORT, max_body_bytes=DEFAULT_MAX_BODY_BYTES
    )


def _install(p: Parsed) -> int:
    from tether.command.launch import launch
    from tether.mcp.install import Install, install

    target = p.options.get("--target")
    if target is None:
        raise TetherError("usage", f"mcp install needs --target; usage: {INSTALL.usage()}")
    project = Path(p.options.get("--dir", ".")).resolve()
    # Claude Desktop starts servers in `/` and without the shell's PATH: its entry names the
    # project folder as the root, and the command by its full path.
    desktop = target == "claude-desktop"
    command = launch(p.options.get("--command"), shell_path=not desktop)
    root = Path(p.options["--root"]).resolve() if "--root" in p.options else None
    plan = Install(
        target=target,
        scope=p.options.get("--scope", "user" if desktop else "project"),
        name=p.options.get("--name", "tether"),
        command=command.command,
        args=(*command.args, "mcp"),
        project=project,
        home=Path.home(),
        portable=command.portable,
        root=project if desktop and root is None else root,
    )
    emit({**install(plan), "launch": command.to_dict()})
    return EXIT_OK


def _root(given: str | None) -> str:
    root = os.path.abspath(given) if given is not None else os.getcwd()
    if not os.path.isdir(root):
        raise TetherError("not_found", f"--root {given} is not a directory", path=root)
    return root
