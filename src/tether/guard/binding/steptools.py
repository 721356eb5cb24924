"""Which tools an agent may run while a step is open: a tree's `tools` policy, and Tether's own.

Owns: recognising Tether's own tools (its MCP tools on any server, and a shell line every
command of which is a plain call of the installed `tether`, as `shell.split` cuts it: no
redirection, assignment, expansion or substitution, no file read from outside the project), and
deciding a call against a node's `tools` policy:
`{allow: [...], deny: [...]}`, whose entries use the guard's trigger syntax (`Read`,
`filesystem.edit`, `mcp__server__tool`, `*`) optionally followed by Claude Code's
permission-rule argument in parentheses (https://code.claude.com/docs/en/permissions):

- shell (`Bash(git diff*)`): matched against each simple command of the line as written (cut
  at control operators and newlines by `shell.split`), so that `git diff && rm -rf x` and
  `git diff⏎rm -rf x` are not `git diff*`; `*` matches any run of characters, a trailing `:*`
  is a prefix; a line with a command substitution (`$(...)`, backticks, `<(...)`) matches no
  allow entry with an argument, and neither does a command that writes a file: a redirection
  to a file (`> calc.py`, `>>`, `&>`; not `2>&1` or `> /dev/null`) or an output option
  (`-o`, `--output=calc.py`, `--out`, `--outfile`), so a read-only policy cannot write. A
  deny entry also sees every command the line runs as the destructive rule reads it
  (`shell.first`: wrappers, nested shells, the shell's rewriting);
- file tools (`Edit(src/**)`): matched against the call's path as it resolves (`..` and
  symbolic links followed), relative to the project directory (`//abs/path` is absolute, `~/` is
  the home folder); `**` crosses `/`, `*` and `?` do not, and a pattern without `/` matches the
  file name at any depth;
- `WebFetch(domain:example.com)`: the URL's host or a subdomain of it;
- any other tool: its target (the first of `file_path`, `path`, `url`, `query`, `pattern`, ...).

Globs are matched by a simulation that is linear in the text for a given pattern, so no pattern
backtracks. In `deny`, a bare `Edit`/`Write`/`Read` also covers another server's tools that act
on files by that verb (`file_verb`: `mcp__filesystem__edit_file`, `write_file`,
`read_text_file`). `deny` wins over `allow`; a policy without `allow` allows what it does not
deny. It does not know which step is open or where policies come from (`binding`, the engine's
`tool_policy`).
"""

from __future__ import annotations

import os
import re
import shlex
import sys
from typing import Any, NamedTuple

from tether.files import is_inside
from tether.guard.rules import shell
from tether.guard.rules.state import DEFAULT_TARGET_KEYS
from tether.guard.rules.triggers import Trigger, bare, canonical

# The runtime's MCP tools (tether.mcp.tools.TOOLS; a test holds the two lists together).
MCP_TOOLS = frozenset(
    {
        "start_execution",
        "resume_execution",
        "reset_execution",
        "next_step",
        "eval",
        "submit",
        "claim_step",
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
_FILE_OPTIONS = frozenset({"--file", "--note-file"})
_WORD = re.compile(r"[a-z]+")
_FILE_NOUNS = frozenset(
    {"file", "files", "directory", "dir", "folder", "notebook", "patch", "path"}
)
_FILE_VERBS = (
    ("edit", frozenset({"edit", "patch", "replace", "insert", "append", "update", "apply"})),
    ("write", frozenset({"write", "create", "move", "rename", "delete", "remove", "mkdir"})),
    ("read", frozenset({"read", "get", "view", "open", "cat", "list", "search"})),
)
_SUBSTITUTION = re.compile(r"`|\$\(|<\(|>\(")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_OUTPUT_OPTION = re.compile(r"^(?:-o.*|--out(?:put)?(?:[-_=].*)?|--outfile(?:=.*)?)$")
_ENTRY = re.compile(r"^\s*([^()\s]+)\s*(?:\((.*)\))?\s*$", re.DOTALL)


def simple_commands(line: str) -> list[list[str]] | None:
    """The simple commands of a shell line as word lists (see `shell.split`), or None when it
    cannot be read (unbalanced quotes)."""
    commands = shell.split(line)
    return None if commands is None else [c.words for c in commands if c.words]


def tether_args(words: list[str]) -> list[str] | None:
    """The arguments Tether gets when the simple command `words` runs it (as `shell.tether_args`
    reads a command, behind `env` or `VAR=value` assignments), else None."""
    i = 0
    while i < len(words) and (words[i] == "env" or _ASSIGNMENT.match(words[i])):
        i += 1
    return shell.tether_args(os.path.basename(words[i]), words[i + 1 :]) if i < len(words) else None


def _plain_tether(words: list[str]) -> list[str] | None:
    """The arguments of a plain call of the installed `tether` (`tether ...`, its installed
    path, `python -I -m tether ...`), else None. `python -m tether` without `-I` imports a
    `tether` package from the current folder first (one the agent may have written), so it is
    not a call of the installed `tether`."""
    if words[:1] == ["tether"] or words[:1] == [
        os.path.join(os.path.dirname(sys.executable), "tether")
    ]:
        return words[1:]
    if words[:1] in (["python"], ["python3"], [sys.executable]) and words[1:4] == [
        "-I",
        "-m",
        "tether",
    ]:
        return words[4:]
    return None


def _reads_outside(args: list[str], project: str) -> bool:
    """Whether a `tether` command reads a file (`--file`, `--note-file`) outside the project."""
    root = os.path.realpath(project)
    for i, arg in enumerate(args):
        name, eq, value = arg.partition("=")
        if name not in _FILE_OPTIONS:
            continue
        path = value if eq else (args[i + 1] if i + 1 < len(args) else "")
        target = os.path.realpath(os.path.join(project, os.path.expanduser(path)))
        if not is_inside(target, root):
            return True
    return False


def is_own_tool(tool: str, params: dict[str, Any], project: str) -> bool:
    """Whether a call is Tether's own: one of its MCP tools (on any server), or a shell line the
    shell runs as written (`shell.literal`) every command of which is a plain call of the
    installed `tether` other than those in `NOT_OWN`, with no redirection or assignment, reading
    no file outside the project. Anything else is judged like any other call."""
    if tool.startswith("mcp__"):
        return tool.rsplit("__", 1)[-1] in MCP_TOOLS
    if canonical(tool) not in SHELL_TOOLS:
        return False
    command = params.get("command")
    if not isinstance(command, str) or "tether" not in command or not shell.literal(command):
        return False
    commands = shell.split(command)
    if not commands:
        return False
    for simple in commands:
        args = None if simple.redirections else _plain_tether(simple.words)
        if not args or args[0] in NOT_OWN or _reads_outside(args, project):
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
    writing: list[bool] | None = None  # per shell unit: whether it writes a file (`_writes`)


def describe_call(tool: str, params: dict[str, Any], project: str) -> Call:
    name = canonical(tool)
    if name in SHELL_TOOLS:
        command = params.get("command")
        text = command if isinstance(command, str) else ""
        commands = None if _SUBSTITUTION.search(text) else shell.split(text)
        units = None if commands is None else [_unit(c) for c in commands]
        writing = None if commands is None else [_writes(c) for c in commands]
        return Call(tool, "shell", units, project, writing)
    if name == "web.fetch":
        from urllib.parse import urlsplit

        url = params.get("url")
        host = urlsplit(url).hostname if isinstance(url, str) else None
        return Call(tool, "web", [host] if host else [], project)
    files = name in FILE_TOOLS or file_verb(tool) is not None
    keys = ("file_path", "notebook_path", "path") if files else DEFAULT_TARGET_KEYS
    for key in keys:
        value = params.get(key)
        if isinstance(value, str) and value:
            return Call(tool, "file" if files else "other", [value], project)
    return Call(tool, "other", [], project)


def _writes(command: shell.Simple) -> bool:
    """Whether a simple command names a file it writes: a redirection to a file
    (`shell.redirected`: not `/dev/null`, nor a descriptor's copy, `2>&1`), or an output
    option."""
    if shell.redirected(command.redirections):
        return True
    return any(_OUTPUT_OPTION.match(word) for word in command.words[1:])


def _unit(command: shell.Simple) -> str:
    """What an argument is matched against: the command's words, then its redirections."""
    return " ".join([shlex.join(command.words), *command.redirections]).strip()


def file_verb(tool: str) -> str | None:
    """`edit`, `write` or `read` for a tool of another server that acts on files by that verb
    (`mcp__filesystem__edit_file` edits, `write_file` and `move_file` write, `read_text_file`
    reads), else None."""
    words = set(_WORD.findall(bare(tool)))
    if not words & _FILE_NOUNS:
        return None
    for verb, spellings in _FILE_VERBS:
        if words & spellings:
            return verb
    return None


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


def _denies(entry: Entry, call: Call, units: list[str | None], run: list[str] | None) -> bool:
    """Whether a deny entry matches the call, read generously: a file tool of another server
    by its verb (`Edit` denies `mcp__filesystem__edit_file`), and a shell line by every
    command it runs (`run`, see `_commands_run`) as well as by its words as written."""
    if any(_matches(entry, call, u) for u in units):
        return True
    if call.kind == "file" and not entry.trigger.every:
        verb = file_verb(call.tool)
        covered = {verb} if verb == "read" else {"edit", "write"}
        if verb is not None and entry.trigger.names & covered:
            return entry.argument is None or any(
                u is not None and path_matches(entry.argument, u, call.project) for u in units
            )
    if run is None or entry.argument is None or not entry.trigger.matches(call.tool):
        return False
    return any(_argument_matches(entry.argument, call, unit) for unit in run)


def _commands_run(command: str) -> list[str]:
    """Every command a shell line runs as the destructive rule reads it (`shell.first`: wrappers,
    nested shells, the shell's rewriting), each as `name args...`; a line too intricate to read
    is `*`, which every deny entry of the shell covers."""
    found: list[str] = []

    def collect(name: str, args: list[str]) -> None:
        found.append(shlex.join([name, *args]))

    return found if shell.first(command, ("",), collect) is None else ["*"]


def refusal(policy: dict[str, Any], tool: str, params: dict[str, Any], project: str) -> str | None:
    """Why `policy` refuses the call (the deny entry it matches, or that no allow entry covers
    it), or None when it is allowed. A shell line is allowed when each of its commands, as
    written, is covered by some allow entry, and denied when any command it runs matches a
    deny entry (`_denies`)."""
    call = describe_call(tool, params, project)
    if call.units is None:  # a shell line that cannot be split: deny entries see it whole
        command = params.get("command")
        units: list[str | None] = [command if isinstance(command, str) else None]
    else:
        units = [*call.units] or [None]
    deny = [Entry.parse(text) for text in policy.get("deny", [])]
    command = params.get("command")
    shell_deny = call.kind == "shell" and any(e.argument is not None for e in deny)
    run = _commands_run(command) if shell_deny and isinstance(command, str) else None
    for entry in deny:
        if _denies(entry, call, units, run):
            return f"it matches {entry.text!r} in deny"
    if "allow" not in policy:
        return None
    entries = [Entry.parse(text) for text in policy["allow"]]
    if call.units is None:
        units = [None]
    elif call.writing:  # a command that writes a file is covered by no entry's argument
        units = [None if w else u for u, w in zip(units, call.writing, strict=True)]
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
