"""The bot MCP server: a bot's generated tools over stdio or Streamable HTTP.

Owns `main(argv)` for `--bot TREE --state URI [--root DIR] [--http --host H --port P --token T
--allow-host H --max-body-bytes N]`, the server object with the bot's instructions, the tool
listing (computed from the execution's embedded tree on every `tools/list`, so a restart's edits
show) and the dispatch of each call to one `BotSession` operation. Results are structured
content plus the same JSON as text; anything the runtime refuses is a tool error carrying the
CLI's stable code. Argument checking, tool records and error results are `tether.mcp.tools`'s;
the HTTP guards (Host/Origin checks, bearer token, body limit, socket binding) are
`tether.mcp.http`'s.

It does not own what the tools do (`tether.bot.session`), their names (`tether.bot.surface`) or
the runtime (`tether.verbs`).
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

import mcp_types as types
from mcp.server.lowlevel import Server

from tether import __version__
from tether.bot.session import BotSession
from tether.bot.surface import (
    ACTION,
    CLOSE,
    CONTINUE,
    DEFAULT_SERVER,
    INDEPENDENT,
    PHASE,
    RESTART,
    Surface,
    Tool,
    name_budget,
)
from tether.cli.args import Command, Parsed
from tether.cli.output import run_command
from tether.errors import EXIT_OK, TetherError
from tether.mcp.cli import HTTP_HELP, HTTP_VALUES
from tether.mcp.tools import ToolSpec, serve_tools
from tether.verbs import Runtime

COMMAND = Command(
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
        "                  64 characters\n"
        + HTTP_HELP
    ),
)

_NOTE = {"type": "string", "description": "Why, in a few words; kept in the execution's trace."}
_VALUES = {
    "type": "object",
    "description": (
        'Values to write before closing, by $VAR path (e.g. {"users": ["reader"]}): the '
        "values the action's `writes` asks for, and what its `checks` test. They are JSON "
        "values, kept even if the close is refused."
    ),
}
_CLOSE_INDEPENDENT = {
    "type": "boolean",
    "description": "true once the independent action's work is done: closes it, writing "
    "`values` first; refused, writing nothing, while its writes or checks do not hold.",
}
_VALUES_INDEPENDENT = {
    "type": "object",
    "description": 'With close: values to write, by $VAR path (e.g. {"terms": ["story"]}).',
}
_TEXTS = {"type": "array", "items": {"type": "string"}}
RESULT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "status": {
            "enum": [
                "current",
                "jumped",
                "closed",
                "incomplete",
                "phase_complete",
                "unchanged",
                "restarted",
                "independent",
                "independent_closed",
                "done",
                "failed",
            ],
            "description": "What the call did, or done/failed once the workflow is over.",
        },
        "message": {"type": "string", "description": "What happened, and what to do next."},
        "bot": {"type": "string"},
        "phase": {"type": "string", "description": "The current phase."},
        "action": {"type": "string", "description": "The current action."},
        "position": {
            "type": "object",
            "description": "Where the action is: phase N of M, action N of M (from 1).",
            "properties": {
                k: {"type": "integer"} for k in ("phase", "phases", "action", "actions")
            },
        },
        "description": {"type": "string", "description": "What the action is for."},
        "instructions": {**_TEXTS, "description": "The work to do for the current action."},
        "completion_criteria": {
            **_TEXTS,
            "description": "What must be true before closing the action.",
        },
        "checks": {**_TEXTS, "description": "CEL expressions the runtime tests on close."},
        "writes": {**_TEXTS, "description": "$VAR paths to write (close's `values`)."},
        "completed": {**_TEXTS, "description": "Completed actions as phase.action, in order."},
        "actions": {
            "type": "object",
            "description": "How many actions were closed, skipped (passed over without a "
            "close, e.g. by a jump) and in all.",
            "properties": {k: {"type": "integer"} for k in ("closed", "skipped", "total")},
            "required": ["closed", "skipped", "total"],
        },
        "unclosed": {
            **_TEXTS,
            "description": "incomplete: the actions still to close before the last one can be.",
        },
        "closed": {
            "type": "object",
            "description": "The action this call closed.",
            "properties": {"phase": {"type": "string"}, "action": {"type": "string"}},
        },
        "independent": {
            "type": "object",
            "description": "After an independent action's call: that action's instructions, "
            "completion criteria, checks and writes (the other fields are the workflow's).",
            "properties": {
                "action": {"type": "string"},
                "description": {"type": "string"},
                **{k: _TEXTS for k in ("instructions", "completion_criteria", "checks", "writes")},
            },
        },
        "next": {
            "type": "object",
            "description": "After a close: the execution's next open request (the runtime's "
            "next), or {status: done | failure}.",
        },
    },
    "required": ["status", "message", "bot", "completed", "actions"],
}


def _annotations(title: str, *, read_only: bool, idempotent: bool) -> types.ToolAnnotations:
    return types.ToolAnnotations(
        title=title,
        read_only_hint=read_only,
        destructive_hint=None if read_only else False,
        idempotent_hint=idempotent,
        open_world_hint=False,
    )


def tool_specs(surface: Surface, session: BotSession) -> dict[str, ToolSpec]:
    """The surface's tools as MCP tool records, each calling one session operation."""
    specs = [_spec(tool, session) for tool in surface.tools]
    return {s.name: s for s in specs}


def _spec(tool: Tool, session: BotSession) -> ToolSpec:
    def spec(
        title: str, properties: dict[str, Any], handler: Any, *, read_only: bool, idempotent: bool
    ) -> ToolSpec:
        return ToolSpec(
            tool.name,
            tool.description,
            properties,
            (),
            RESULT_SCHEMA,
            _annotations(title, read_only=read_only, idempotent=idempotent),
            handler,
        )

    if tool.kind == CONTINUE:
        return spec("Continue", {}, lambda _, a: session.resume(), read_only=True, idempotent=True)
    if tool.kind == CLOSE:
        return spec(
            "Close the current action",
            {"note": _NOTE, "values": _VALUES},
            lambda _, a: session.close(a.get("note"), a.get("values")),
            read_only=False,
            idempotent=False,
        )
    if tool.kind == RESTART:
        return spec(
            "Reload the tree", {}, lambda _, a: session.restart(), read_only=False, idempotent=True
        )
    phase, action = str(tool.phase), str(tool.action)
    if tool.kind == INDEPENDENT:
        return spec(
            f"Independent action {action}",
            {"note": _NOTE, "close": _CLOSE_INDEPENDENT, "values": _VALUES_INDEPENDENT},
            lambda _, a: session.independent(
                action, bool(a.get("close")), a.get("values"), a.get("note")
            ),
            read_only=False,
            idempotent=False,
        )
    if tool.kind == PHASE:
        return spec(
            f"Go to phase {phase}",
            {"note": _NOTE},
            lambda _, a: session.enter_phase(phase, a.get("note")),
            read_only=False,
            idempotent=True,
        )
    assert tool.kind == ACTION
    return spec(
        f"Go to {phase}.{action}",
        {"note": _NOTE},
        lambda _, a: session.enter_action(phase, action, a.get("note")),
        read_only=False,
        idempotent=True,
    )


def instructions(surface: Surface) -> str:
    """What the server tells the client about this bot."""
    return (
        f"{surface.title} is a workflow of phases ({', '.join(p.name for p in surface.phases)}), "
        "each made of actions done in order. Call "
        f"{surface.tool(CONTINUE)} to see the current action: its instructions and completion "
        "criteria. Do the work with the user. Actions never complete by themselves: when the "
        f"criteria are met, call {surface.tool(CLOSE)}; it moves to the next action and is "
        "refused, with the reason, while a check or a required value does not hold. The phase "
        "and action tools jump elsewhere when the user asks for it; every jump is recorded. "
        f"After the tree file was edited, {surface.tool(RESTART)} reloads it."
        + (
            " Independent actions, outside the workflow, can be called at any time without "
            f"moving it: {', '.join(a.tool for a in surface.independent)}."
            if surface.independent
            else ""
        )
    )


def build_server(session: BotSession) -> Server[Any]:
    """A server carrying the bot's tools; the execution is started (and its gate accepted) now,
    so a tree that is not a bot or a state that cannot be reached fails at once."""
    first = session.surface()
    server: Server[Any] = Server(
        f"tether-bot-{first.bot}", version=__version__, instructions=instructions(first)
    )

    serve_tools(server, session.runtime, lambda: tool_specs(session.surface(), session))
    return server


# -- serving ------------------------------------------------------------------------------------


def main(argv: list[str]) -> int:
    """`tether mcp --bot TREE --state URI [...]`: serve until the client goes away."""
    return run_command(COMMAND, argv, _serve)


def _serve(p: Parsed) -> int:
    import anyio

    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="%(name)s: %(message)s")
    for needed in ("--bot", "--state"):
        if needed not in p.options:
            raise TetherError("usage", f"{needed} is required; usage: {COMMAND.usage()}")
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
        http_only = [o for o in HTTP_VALUES if o in p.options]
        http_only += [o for o in COMMAND.repeated if o in p.multi]
        if http_only:
            raise TetherError("usage", f"{http_only[0]} applies to --http only")
        from tether.mcp.server import run_stdio

        anyio.run(run_stdio, build_server(session))
        return EXIT_OK
    from tether.mcp.cli import http_options
    from tether.mcp.http import serve

    anyio.run(serve, build_server(session), http_options(p), "tether mcp --bot")
    return EXIT_OK


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
