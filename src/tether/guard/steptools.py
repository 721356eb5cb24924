"""Which tools an agent may run while a step is open: a tree's `tools` policy, and Tether's own.

Owns: reading a shell command line as Tether's commands (tokenised with `shlex`, split at `;`,
`&&`, `||`, `|` and `&`, never substring-matched), recognising Tether's own tools (its MCP tools
on any server, and `tether` commands), and deciding a call against a node's `tools` policy:
`{allow: [...], deny: [...]}`, whose entries use the guard's trigger syntax (`Read`,
`filesystem.edit`, `mcp__server__tool`, `*`) optionally followed by Claude Code's
permission-rule argument in parentheses (https://code.claude.com/docs/en/permissions):

- shell (`Bash(git diff*)`): matched against each simple command of the line, so that
  `git diff && rm -rf x` is not `git diff*`; `*` matches any run of characters, a trailing
  `:*` is a prefix; a line with a command substitution (`$(...)`, backticks, `<(...)`) matches
  no allow entry with an argument;
- file tools (`Edit(src/**)`): matched against the call's path as it resolves (`..` and
  symbolic links followed), relative to the project directory (`//abs/path` is absolute, `~/` is
  the home folder); `**` crosses `/`, `*` and `?` do not, and a pattern without `/` matches the
  file name at any depth;
- `WebFetch(domain:example.com)`: the URL's host or a subdomain of it;
- any other tool: its target (the first of `file_path`, `path`, `url`, `query`, `pattern`, ...).

Globs are matched by a simulation that is linear in the text for a given pattern, so no pattern
backtracks. `deny` wins over `allow`; a policy without `allow` allows what it does not deny. It
does not know which step is open or where policies come from (`binding`, the engine's
`tool_policy`).
"""

from __future__ import annotations

import os
import re
import shlex
from typing import Any, NamedTuple

from tether.guard.state import DEFAULT_TARGET_KEYS
from tether.guard.triggers import Trigger, canonical

# The runtime's MCP tools (tether.mcp.tools.TOOLS; a test holds the two lists together).
MCP_TOOLS = frozenset(
    {
        "start_execution",
        "resume_execution",
        "reset_execution",
        "next_step",
        "eval",
        "submit",
        "think",
        "var_read",
        "var_write",
        "const_read",
        "get_execution",
        "read_trace",
        "fork_execution",
    }
)
# `tether` commands never allowed as Tether's own: a person's answers (the human-steps issue)
# and the guard's own administration.
NOT_OWN = frozenset({"approve", "reject", "guard"})
SHELL_TOOLS = frozenset({"bash"})
FILE_TOOLS = frozenset({"read", "write", "edit", "notebookedit", "glob", "grep"})
_SEPARATORS = frozenset({";", "&&", "||", "|", "&", "|&", ";;", "\n"})
_SUBSTITUTION = re.compile(r"`|\$\(|<\(|>\(")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_ENTRY = re.compile(r"^\s*([^()\s]+)\s*(?:\((.*)\))?\s*$", re.DOTALL)


def simple_commands(line: str) -> list[list[str]] | None:
    """The simple commands of a shell line as word lists, or None when it cannot be read
    (unbalanced quotes)."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|")
    lexer.whitespace_split = True
    lexer.commenters = ""
    commands: list[list[str]] = [[]]
    try:
        for token in lexer:
            if token in _SEPARATORS:
                commands.append([])
            else:
                commands[-1].append(token)
    except ValueError:
        return None
    return [c for c in commands if c]


def tether_args(words: list[str]) -> list[str] | None:
    """The arguments after `tether` when `words` runs Tether (`tether ...` or a path to it,
    behind `env` or `VAR=value` assignments), else None."""
    i = 0
    while i < len(words) and (words[i] == "env" or _ASSIGNMENT.match(words[i])):
        i += 1
    if i >= len(words):
        return None
    program = os.path.basename(words[i])
    return words[i + 1 :] if program in ("tether", "tether.exe") else None


def is_own_tool(tool: str, params: dict[str, Any]) -> bool:
    """Whether a call is Tether's own: one of its MCP tools (on any server), or a shell line
    every command of which is a `tether` command other than those in `NOT_OWN`."""
    if tool.startswith("mcp__"):
        return tool.rsplit("__", 1)[-1] in MCP_TOOLS
    if canonical(tool) not in SHELL_TOOLS:
        return False
    command = params.get("command")
    if not isinstance(command, str) or "tether" not in command or _SUBSTITUTION.search(command):
        return False
    commands = simple_commands(command)
    if not commands:
        return False
    for words in commands:
        args = tether_args(words)
        if args is None or (args and args[0] in NOT_OWN):
            return False
    return True


class Entry(NamedTuple):
    """One policy entry: a trigger, and the permission-rule argument when one is given."""

    text: str
    trigger: Trigger
    argument: str | None

    @classmethod
    def parse(cls, text: str) -> Entry:
        match = _ENTRY.match(text)
        name, argument = (match.group(1), match.group(2)) if match else (text, None)
        return cls(text, Trigger(name), argument)


class Call(NamedTuple):
    """A call as policy arguments see it: its kind, and the texts an argument is matched
    against (None: cannot be read, so no allow entry with an argument matches)."""

    tool: str
    kind: str
    units: list[str] | None
    project: str


def describe_call(tool: str, params: dict[str, Any], project: str) -> Call:
    name = canonical(tool)
    if name in SHELL_TOOLS:
        command = params.get("command")
        text = command if isinstance(command, str) else ""
        commands = None if _SUBSTITUTION.search(text) else simple_commands(text)
        units = None if commands is None else [shlex.join(words) for words in commands]
        return Call(tool, "shell", units, project)
    if name == "web.fetch":
        from urllib.parse import urlsplit

        url = params.get("url")
        host = urlsplit(url).hostname if isinstance(url, str) else None
        return Call(tool, "web", [host] if host else [], project)
    keys = ("file_path", "notebook_path", "path") if name in FILE_TOOLS else DEFAULT_TARGET_KEYS
    for key in keys:
        value = params.get(key)
        if isinstance(value, str) and value:
            return Call(tool, "file" if name in FILE_TOOLS else "other", [value], project)
    return Call(tool, "other", [], project)


def _argument_matches(argument: str, call: Call, unit: str) -> bool:
    if call.kind == "shell":
        if argument.endswith(":*"):
            return unit.startswith(argument[:-2])
        return glob_match(argument, unit, slash=True)
    if call.kind == "web":
        domain = argument.removeprefix("domain:")
        return unit == domain or unit.endswith("." + domain)
    if call.kind == "file":
        return path_matches(argument, unit, call.project)
    return glob_match(argument, unit, slash=True)


def _matches(entry: Entry, call: Call, unit: str | None) -> bool:
    """Whether `entry` covers the call, its argument tested against `unit` (None: no text, so
    only an entry without an argument covers it)."""
    if not entry.trigger.matches(call.tool):
        return False
    if entry.argument is None:
        return True
    return unit is not None and _argument_matches(entry.argument, call, unit)


def refusal(policy: dict[str, Any], tool: str, params: dict[str, Any], project: str) -> str | None:
    """Why `policy` refuses the call (the deny entry it matches, or that no allow entry covers
    it), or None when it is allowed. A shell line is allowed when each of its commands is
    covered by some allow entry, and denied when any of them matches a deny entry."""
    call = describe_call(tool, params, project)
    if call.units is None:  # a shell line that cannot be split: deny entries see it whole
        command = params.get("command")
        units: list[str | None] = [command if isinstance(command, str) else None]
    else:
        units = [*call.units] or [None]
    for text in policy.get("deny", []):
        entry = Entry.parse(text)
        if any(_matches(entry, call, u) for u in units):
            return f"it matches {text!r} in deny"
    if "allow" not in policy:
        return None
    entries = [Entry.parse(text) for text in policy["allow"]]
    if call.units is None:
        units = [None]
    if all(any(_matches(e, call, u) for e in entries) for u in units):
        return None
    return "no entry of allow covers it"


def glob_match(pattern: str, text: str, *, slash: bool) -> bool:
    """Whether `text` matches the glob `pattern`: `**` any run of characters, `*` any run
    without `/` (with it when `slash`), `?` one character, everything else itself. A simulation
    of the pattern's automaton: time linear in `text`, no backtracking."""
    tokens: list[tuple[str, str]] = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**", i):
            tokens.append(("star", "/"))
            while i < len(pattern) and pattern[i] == "*":
                i += 1
            continue
        char = pattern[i]
        if char == "*":
            tokens.append(("star", "/" if slash else ""))
        elif char == "?":
            tokens.append(("one", ""))
        else:
            tokens.append(("char", char))
        i += 1
    end = len(tokens)

    def closure(states: set[int]) -> set[int]:
        out = set(states)
        todo = list(states)
        while todo:
            s = todo.pop()
            if s < end and tokens[s][0] == "star" and s + 1 not in out:
                out.add(s + 1)
                todo.append(s + 1)
        return out

    states = closure({0})
    for char in text:
        following: set[int] = set()
        for s in states:
            if s == end:
                continue
            kind, value = tokens[s]
            if kind == "star":
                if char != "/" or value:
                    following.add(s)
            elif kind == "one":
                if char != "/" or slash:
                    following.add(s + 1)
            elif value == char:
                following.add(s + 1)
        states = closure(following)
        if not states:
            return False
    return end in states


def path_matches(pattern: str, path: str, project: str) -> bool:
    """Whether a file path matches a permission-rule path pattern (see the module docstring),
    as the path resolves: `..` and symbolic links followed first, so a link inside the project
    to a file outside it is judged where it leads."""
    target = os.path.realpath(os.path.join(project, os.path.expanduser(path)))
    if pattern.startswith("//"):
        return glob_match(pattern[1:], target, slash=False)
    if pattern.startswith("~/"):
        return glob_match(os.path.expanduser(pattern), target, slash=False)
    relative = os.path.relpath(target, os.path.realpath(project))
    if relative == ".." or relative.startswith("../"):
        return False
    pattern = pattern.removeprefix("./").lstrip("/")
    if "/" not in pattern:
        return glob_match(pattern, os.path.basename(relative), slash=False)
    return glob_match(pattern, relative, slash=False)
