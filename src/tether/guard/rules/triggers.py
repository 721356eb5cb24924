"""Tool names and trigger matching.

Owns: turning any spelling of a tool name (Claude Code's `Read`, a dotted `filesystem.read`, a
double-underscore `filesystem__read`, an MCP `mcp__server__tool`) into the engine's canonical
vocabulary, and deciding whether a rule's trigger matches a tool. It does not know about rules,
state or conditions.

Canonical names are lower case and dotted: `read`, `write`, `edit`, `bash`, `grep`, `glob`,
`web.fetch`, `web.search`, `task`, `filesystem.edit`, `server.tool`. A trigger matches a tool when:

- the trigger is `*`;
- both canonical names are equal;
- the trigger is bare (`edit`) and the tool's last segment is that name (`filesystem.edit`);
- the trigger is qualified (`filesystem.edit`) and the tool is the bare last segment (`edit`).
"""

from __future__ import annotations

from collections.abc import Iterable

# Claude Code's built-in tool names, mapped onto the engine's vocabulary.
CLAUDE_TOOLS: dict[str, str] = {
    "read": "read",
    "write": "write",
    "edit": "edit",
    "multiedit": "edit",
    "bash": "bash",
    "grep": "grep",
    "glob": "glob",
    "webfetch": "web.fetch",
    "websearch": "web.search",
    "task": "task",
    "agent": "task",
}

_canonical_cache: dict[str, str] = {}


def canonical(name: str) -> str:
    """The canonical spelling of a tool name (lower case, dotted, Claude names mapped)."""
    cached = _canonical_cache.get(name)
    if cached is not None:
        return cached
    low = name.strip().lower()
    if low.startswith("mcp__"):
        low = low[len("mcp__") :]
    low = low.replace("__", ".")
    out = CLAUDE_TOOLS.get(low, low)
    _canonical_cache[name] = out
    return out


def bare(name: str) -> str:
    """The last segment of a tool name: `filesystem.edit` → `edit`."""
    return canonical(name).rsplit(".", 1)[-1]


def split_names(value: str | Iterable[str]) -> list[str]:
    """A trigger or tool list given as one name, a comma-separated string, or a list."""
    items = value.split(",") if isinstance(value, str) else list(value)
    return [item.strip() for item in items if item.strip()]


class Trigger:
    """A compiled trigger: a set of canonical names, or every tool."""

    __slots__ = ("every", "names")

    def __init__(self, names: str | Iterable[str]) -> None:
        listed = split_names(names)
        self.every = any(name == "*" for name in listed) or not listed
        self.names = frozenset(canonical(name) for name in listed if name != "*")

    def matches(self, tool: str) -> bool:
        """Whether this trigger fires for `tool` (any spelling)."""
        if self.every:
            return True
        tool_c = canonical(tool)
        if tool_c in self.names:
            return True
        tool_bare = tool_c.rsplit(".", 1)[-1]
        for name in self.names:
            if "." in name:
                if "." not in tool_c and name.rsplit(".", 1)[-1] == tool_c:
                    return True
            elif name == tool_bare:
                return True
        return False
