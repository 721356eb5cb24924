"""The bot MCP server: a bot's generated tools, served over stdio or Streamable HTTP.

Owns the server object with the bot's instructions (`build_server`), the tool listing (computed
from the execution's embedded tree on every `tools/list`, so a restart's edits show) and the
dispatch of each call to one `BotSession` operation. Results are structured
content plus the same JSON as text; anything the runtime refuses is a tool error carrying the
CLI's stable code. Argument checking, tool records and error results are `tether.mcp.tools`'s;
the HTTP guards (Host/Origin checks, bearer token, body limit, socket binding) are
`tether.mcp.http`'s.

It does not own what the tools do (`tether.bot.session`), their names (`tether.bot.surface`), the
runtime (`tether.verbs`) or the command line that serves them (`tether mcp --bot`, in
`tether.mcp.cli`).
"""

from __future__ import annotations

from typing import Any

from mcp.server.lowlevel import Server

from tether import __version__
from tether.bot.session import BotSession
from tether.bot.surface import (
    ACTION,
    CLOSE,
    CONTINUE,
    INDEPENDENT,
    PHASE,
    RESTART,
    Surface,
    Tool,
)
from tether.mcp.tools import ToolSpec, serve_tools, tool_annotations

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
            tool_annotations(title, read_only=read_only, idempotent=idempotent),
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
