"""Message templates: the placeholders a rule's message may use, checked at load, filled per call.

Owns: parsing a message into literal text and placeholders, rejecting unknown placeholders, and
rendering against a `Context`; also the prefixes of injected texts. It does not decide when a
message is shown.

Placeholders: `{target}`, `{tool}` (bare name), `{turn}`, `{tool_calls_this_turn}`,
`{consecutive_same_tool}`, `{param:x}` (cut at 100 characters), `{counter:x}`, `{set_count:x}`,
`{flag:x}`. `{{` and `}}` stand for literal braces; any other brace text is kept as written.
"""

from __future__ import annotations

import re

from tether.guard.rules.conditions import Context
from tether.guard.rules.triggers import bare

PREFIX = {
    "block": "[BEHAVIOR BLOCKED]",
    "warn": "[BEHAVIOR WARNING]",
    "remind": "[BEHAVIOR REMINDER]",
}
PARAM_LIMIT = 100

SIMPLE = ("target", "tool", "turn", "tool_calls_this_turn", "consecutive_same_tool")
NAMED = ("param", "counter", "set_count", "flag")
_TOKEN = re.compile(r"\{\{|\}\}|\{([A-Za-z_]+)(?::([^{}]*))?\}")


class TemplateError(ValueError):
    pass


def _value(kind: str, arg: str | None, ctx: Context) -> str:
    if kind == "target":
        return ctx.target() or ""
    if kind == "tool":
        return bare(ctx.tool) if ctx.tool else ""
    if kind == "turn":
        return str(ctx.state.turn)
    if kind == "tool_calls_this_turn":
        return str(ctx.calls_this_turn)
    if kind == "consecutive_same_tool":
        return str(ctx.streak)
    assert arg is not None
    if kind == "param":
        value = ctx.param(arg) or ""
        return value[:PARAM_LIMIT]
    if kind == "counter":
        return str(ctx.state.counters.get(arg, 0))
    if kind == "set_count":
        return str(len(ctx.state.sets.get(arg, ())))
    return str(ctx.state.flags.get(arg, False))


class Template:
    """A parsed message: literal strings and `(kind, arg)` placeholders."""

    __slots__ = ("parts", "references")

    def __init__(self, text: str) -> None:
        self.parts: list[str | tuple[str, str | None]] = []
        self.references: list[tuple[str, str]] = []
        pos = 0
        for match in _TOKEN.finditer(text):
            self.parts.append(text[pos : match.start()])
            pos = match.end()
            token = match.group(0)
            if token in ("{{", "}}"):
                self.parts.append(token[0])
                continue
            kind, arg = match.group(1), match.group(2)
            if kind in SIMPLE and arg is None:
                self.parts.append((kind, None))
            elif kind in NAMED and arg:
                self.parts.append((kind, arg))
                if kind != "param":
                    self.references.append((kind, arg))
            else:
                raise TemplateError(
                    f"unknown placeholder {token} (known: "
                    + ", ".join([*(f"{{{n}}}" for n in SIMPLE), *(f"{{{n}:x}}" for n in NAMED)])
                    + ")"
                )
        self.parts.append(text[pos:])
        self.parts = [part for part in self.parts if part != ""]

    def render(self, ctx: Context) -> str:
        return "".join(
            part if isinstance(part, str) else _value(part[0], part[1], ctx) for part in self.parts
        )


def injected(action: str, rule_id: str, message: str) -> str:
    """The text put in front of the model for a fired rule: prefix, rule id, message."""
    return f"{PREFIX[action]} {rule_id}: {message}"
