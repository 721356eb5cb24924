"""Which files an agent may write while a step is open: a tree's `writes` scope.

Owns: deciding whether a call writes only inside a scope, `{"writes": [glob, ...], "node"}`
(the nearest node's `writes`, carried on an open request as `scope`). A path is inside when,
resolved (relative to the working folder, `..` folded, every symbolic link followed, `~` the
home folder), it lies in the project and its path relative to the project matches a glob
(`steptools.glob_match`: `**` crosses `/`, `*` and `?` do not; `dir/**` also covers `dir`). A
file with more than one hard link is outside every scope (its other names cannot be seen). What
each call writes:

- file tools (`Write`, `Edit`, `MultiEdit`, `NotebookEdit`; the other harnesses' are mapped to
  these by their adapters, Codex's `apply_patch` file by file), a tool of another server that
  edits or writes files by its name (`steptools.file_verb`), and any other tool that is not a
  reader: every path argument (`file_path`, `notebook_path`, `path`, `source`, `destination`,
  `target`);
- a shell line (in the folder its call names, else the hook's: `state.shell_folder`), read by
  `shell.split` once its comments and here-documents' bodies are taken out: every output
  redirection of every command, and the files of the commands it knows (`touch`, `mkdir`,
  `rm`, `rmdir`, `truncate`, `chmod`, `tee`, `cp`, `mv`, `sed -i` with substitutions only), the
  folders `cd` goes to followed. Commands that write nothing (`cat`, `grep`, `ls`, `git diff`,
  ... `_READERS`) pass. Anything else is refused, because what it writes cannot be read: any
  other program (`python`, `make`, a script), an expansion or substitution (`$X`, `$(...)`,
  backquotes, `<(...)`), brace expansion, a variable assignment before a command, a nested
  shell, `eval`, a function, `find -exec`, `xargs`, a `sed` script that is not plain
  substitutions, and a path under one an earlier command of the same line wrote (it may have
  made it a link).

It does not know which step is open or where scopes come from (`binder`, the engine's
`write_scope`), and it is no sandbox: it reads what a call says, so the shell refusals above
are the price of failing closed.
"""

from __future__ import annotations

import glob as globbing
import itertools
import os
import re
from collections.abc import Callable
from typing import Any

from tether.files import is_inside
from tether.guard.binding.steptools import SHELL_TOOLS, file_verb, glob_match
from tether.guard.rules import shell
from tether.guard.rules.state import WRITTEN_KEYS, reads_only, shell_folder
from tether.guard.rules.triggers import canonical

_WRITE_TOOLS = frozenset({"write", "edit", "notebookedit"})
_GLOB_LIMIT = 1000  # files of one glob looked at
_CD_LIMIT = 16
# Commands that write no file whatever their arguments (their output options are handled
# apart: `sort -o`, `git ... --output`).
_READERS = frozenset(
    (
        *("cat", "head", "tail", "wc", "grep", "egrep", "fgrep", "rg", "ls", "stat"),
        *("diff", "cmp", "comm", "cut", "tr", "nl", "fold", "rev", "column", "sort"),
        *("echo", "printf", "true", "false", "pwd", "test", "[", "which", "type", "basename"),
        *("dirname", "realpath", "readlink", "sha1sum", "sha256sum", "md5sum", "du", "df"),
        *("date", "env", "printenv", "whoami", "id", "uname", "jq", "sleep"),
        *("find", "git", "seq", "expr", "od", "hexdump", "strings"),
    )
)
# Wrappers that only run the command after them: (their options that take a value, their other
# options, how many arguments precede the command); any other option is not read
# (`/usr/bin/time -o FILE` writes FILE).
_WRAPPERS: dict[str, tuple[frozenset[str], frozenset[str], int]] = {
    "command": (frozenset(), frozenset({"-p"}), 0),
    "builtin": (frozenset(), frozenset(), 0),
    "time": (frozenset(), frozenset({"-p"}), 0),
    "nice": (frozenset({"-n"}), frozenset(), 0),
    "timeout": (
        frozenset({"-s", "-k"}),
        frozenset({"--foreground", "--preserve-status", "-v"}),
        1,  # the duration
    ),
}
_SKIPPED = frozenset({"{", "}", "!", "if", "then", "else", "elif", "fi", "do", "done", "while"})
_GIT_READS = frozenset(
    {"status", "diff", "log", "show", "blame", "grep", "ls-files", "rev-parse", "describe"}
)
_FIND_WRITES = frozenset(
    {"-delete", "-exec", "-execdir", "-ok", "-okdir", "-fprint", "-fprint0", "-fprintf", "-fls"}
)
# Options that make a reader write a file or run a program: `sort -o FILE`, `-T DIR`,
# `--compress-program`; `git diff --output=FILE`, `--ext-diff`, `git grep -O CMD`; `rg --pre CMD`.
_WRITING_OPTIONS = {
    "sort": re.compile(r"^(?:-[^-]*[oT].*|--output.*|--temporary.*|--compress.*)$"),
    "git": re.compile(r"^(?:-[^-]*O.*|--output.*|--open-files.*|--ext-diff)$"),
    "rg": re.compile(r"^--(?:pre|hostname-bin).*$"),
}
_SYSTEM_BINS = ("/bin/", "/usr/bin/", "/usr/local/bin/")
_HEREDOC = re.compile(r"<<(-?)[ \t]*(['\"]?)([A-Za-z0-9_.-]+)\2(?=[\s;&|<>)]|$)")
_BRACES = re.compile(r"\{[^{}]*(?:,|\.\.)[^{}]*\}")
# A `sed` script of substitutions only: `s/a/b/g`, with any delimiter, `;`-separated, an
# optional line address; no `w`, `e` or `r` command and no `w`/`e` flag.
_SED_SUBSTITUTION = re.compile(
    r"^\s*(?:(?:\d+|\$)(?:,(?:\d+|\$))?)?\s*s(?P<d>[^\w\s\\])(?:(?!(?P=d)).|\\.)*"
    r"(?P=d)(?:(?!(?P=d)).|\\.)*(?P=d)[gpiIm0-9]*\s*$"
)


class Unclear(Exception):
    """What a call writes cannot be read: the call is refused, saying why."""


class _Scope:
    """The globs of one scope, relative to the project's folder as it resolves (`root`)."""

    def __init__(self, globs: list[str], project: str) -> None:
        self.globs = [g.removeprefix("./") for g in globs]
        self.root = os.path.realpath(project)

    def outside(self, path: str, base: str) -> str | None:
        """`path` (relative to `base`) as the project names it, when it lies outside the scope;
        None when inside. A glob (`src/*.py`) stands for itself and every file it matches."""
        named = os.path.join(base, os.path.expanduser(path))
        if any(ch in path for ch in "*?["):
            matches = itertools.islice(globbing.iglob(named), _GLOB_LIMIT)
            found = (self._outside(m) for m in matches)
            return next(filter(None, found), None) or self._outside(named)
        return self._outside(named)

    def _outside(self, named: str) -> str | None:
        real = os.path.realpath(named)
        if not is_inside(real, self.root):
            return real
        relative = os.path.relpath(real, self.root)
        if os.path.isfile(real) and os.stat(real).st_nlink > 1:
            return f"{relative} (a file with other hard links)"
        if any(_covers(g, relative) for g in self.globs):
            return None
        return relative


def _covers(pattern: str, relative: str) -> bool:
    """Whether a scope's glob holds a path: `dir/**` also holds `dir`, and `**/` also stands
    for no folder at all (`src/**/test_*.py` holds `src/test_a.py`)."""
    if pattern.endswith("/**") and relative == pattern[:-3]:
        return True
    bare = pattern.replace("/**/", "/").removeprefix("**/")
    return any(glob_match(p, relative, slash=False) for p in {pattern, bare})


def refusal(
    scope: dict[str, Any], tool: str, params: dict[str, Any], project: str, cwd: str | None
) -> str | None:
    """Why the call may not run under `scope` (what it writes outside it, or why what it
    writes cannot be read), or None when it writes only inside it. `cwd`: the folder the
    harness runs the call in (the hook's `cwd`), else the project."""
    judged = _Scope(list(scope.get("writes", [])), project)
    base = cwd if cwd and os.path.isabs(cwd) else project
    try:
        for path, at in written(tool, params, base):
            found = judged.outside(path, at)
            if found is not None:
                return f"it writes {found}, outside the scope"
    except Unclear as exc:
        return f"the guard cannot tell what it writes: {exc}"
    return None


def written(tool: str, params: dict[str, Any], base: str) -> list[tuple[str, str]]:
    """The paths a call writes, each with the folder it is relative to; `Unclear` when they
    cannot be read."""
    name = canonical(tool)
    if name in SHELL_TOOLS:
        command = params.get("command")
        if not isinstance(command, str):
            raise Unclear("a shell call without a command")
        return _Line([shell_folder(params, base)]).read(command)
    verb = file_verb(tool)
    if verb == "read" or (verb is None and reads_only(tool)):
        return []
    found = [(params[k], base) for k in WRITTEN_KEYS if isinstance(params.get(k), str)]
    if not found and (name in _WRITE_TOOLS or verb is not None):
        raise Unclear(f"{tool} names no file")
    return [(path, at) for path, at in found if path]


class _Line:
    """One shell line read for the files it writes, the folders `cd` goes to followed: after
    `cd DIR &&` the chain runs in DIR; anywhere else `cd` may have failed or run in a subshell,
    so the folder before it counts too."""

    def __init__(self, bases: list[str]) -> None:
        self.bases = bases
        self.before: list[str] = []  # the folders before a `cd DIR &&`, back when its chain ends
        self.made: list[str] = []  # paths written by a command other than `mkdir`
        self.out: list[tuple[str, str]] = []

    def read(self, line: str) -> list[tuple[str, str]]:
        body = _commands_of(line)
        _opaque(body)
        commands = shell.split(body)
        if commands is None:
            raise Unclear("its quotes do not close")
        for command in commands:
            targets = shell.redirected(command.redirections)
            words = _unwrapped(command.words)
            name = _program(words[0]) if words else ""
            if name in ("cd", "pushd"):
                self.cd(words[1:], chained=command.after == "&&")
            elif words:
                targets += _written_by(name, words[1:])
            for target in targets:
                self.write(target, mkdir=name == "mkdir")
            if command.after not in ("&&", "|", "|&") and self.before:
                self.bases = list(dict.fromkeys([*self.before, *self.bases]))
                self.before = []
        return self.out

    def write(self, target: str, *, mkdir: bool = False) -> None:
        for base in self.bases:
            named = os.path.normpath(os.path.join(base, os.path.expanduser(target)))
            if any(named != m and is_inside(named, m) for m in self.made):
                raise Unclear(f"{target} lies under a path an earlier command of the line wrote")
            self.out.append((target, base))
            if not mkdir:
                self.made.append(named)

    def cd(self, args: list[str], *, chained: bool) -> None:
        given = [a for a in args if a != "--"]
        if len(given) > 1 or (given and given[0].startswith("-")):
            raise Unclear(f"cd {' '.join(args)}")
        if len(self.bases) + len(self.before) >= _CD_LIMIT:
            raise Unclear("more changes of folder than the guard follows")
        target = os.path.expanduser(given[0] if given else "~")
        if any(ch in target for ch in "*?["):
            raise Unclear(f"cd to a glob, {target}")
        moved = [os.path.normpath(os.path.join(b, target)) for b in self.bases]
        for named in moved:
            if any(is_inside(named, m) for m in self.made):
                raise Unclear(f"cd into {target}, which an earlier command of the line wrote")
        if chained:
            self.before = list(dict.fromkeys([*self.before, *self.bases]))
            self.bases = moved
        else:
            self.bases = list(dict.fromkeys([*self.bases, *moved]))


def _program(word: str) -> str:
    """The name of the program a command word runs: a bare name, or one in a system folder;
    `Unclear` for any other path (a program the agent may have written)."""
    if "/" not in word:
        return word
    if not word.startswith(_SYSTEM_BINS):
        raise Unclear(f"{word} is a program the guard cannot read")
    return word.rsplit("/", 1)[1]


def _written_by(name: str, args: list[str]) -> list[str]:
    """The files one command writes: none for a reader, its operands for a writer it knows;
    `Unclear` for any other program."""
    if name in _READERS:
        _reads_only(name, args)
        return []
    handler = _WRITERS.get(name)
    if handler is None:
        raise Unclear(f"{name} is a program whose writes the guard cannot read")
    return handler(args)


def _commands_of(line: str) -> str:
    """`line` as the shell reads its commands: comments and the bodies of its here-documents
    (text a command reads) taken out, quotes followed. A body the shell expands (its delimiter
    unquoted) holding `$` or a backquote, and a delimiter the guard cannot read, are `Unclear`."""
    out: list[str] = []
    pending: list[re.Match[str]] = []  # here-documents whose bodies start at the next line
    quote = ""
    i = 0
    while i < len(line):
        ch = line[i]
        step = 1
        if quote:
            quote = "" if ch == quote else quote
            step = 2 if ch == "\\" and quote == '"' else 1
        elif ch == "\\" or line.startswith("<<<", i):
            step = 2 if ch == "\\" else 3
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1] in " \t\n;&|()"):
            end = line.find("\n", i)
            i = len(line) if end < 0 else end
            continue
        elif line.startswith("<<", i):
            match = _HEREDOC.match(line, i)
            if match is None:
                raise Unclear("a here-document whose delimiter the guard cannot read")
            pending.append(match)
            step = match.end() - i
        elif ch == "\n" and pending:
            out.append(ch)
            i = _past_bodies(line, i + 1, pending)
            pending = []
            continue
        out.append(line[i : i + step])
        i += step
    return "".join(out)


def _past_bodies(line: str, i: int, heredocs: list[re.Match[str]]) -> int:
    """Where the text after the bodies of `heredocs`, starting at `i`, goes on."""
    for match in heredocs:
        strip, quoted, word = match.group(1), match.group(2), match.group(3)
        while i < len(line):
            end = line.find("\n", i)
            end = len(line) if end < 0 else end
            body = line[i:end].lstrip("\t") if strip else line[i:end]
            i = end + 1
            if body == word:
                break
            if not quoted and ("$" in body or "`" in body):
                raise Unclear("a here-document the shell expands")
    return i


def _opaque(line: str) -> None:
    """`Unclear` when the shell would rewrite the line's words at run time: an expansion, a
    substitution, a process substitution or a brace expansion outside single quotes."""
    plain: list[str] = []
    for i, ch, quote in shell.unquoted(line):
        if ch in "$`":
            raise Unclear("an expansion or substitution ($, backquotes)")
        if not quote and ch in "<>" and line.startswith("(", i + 1):
            raise Unclear("a process substitution")
        plain.append(" " if quote else ch)
    if _BRACES.search("".join(plain)):
        raise Unclear("a brace expansion")


def _unwrapped(words: list[str]) -> list[str]:
    """The command past keywords and the wrappers that only run it (`time`, `nice`, ...);
    `Unclear` for an assignment before it (it may change what the command does)."""
    i = 0
    while i < len(words):
        word = words[i]
        if word in _SKIPPED:
            i += 1
        elif shell.is_assignment(word):
            if i + 1 < len(words):
                raise Unclear(f"{word} sets the environment of the command it runs")
            return []
        elif word in _WRAPPERS:
            valued, flags, positional = _WRAPPERS[word]
            i += 1
            while i < len(words) and words[i].startswith("-"):
                if words[i] not in valued | flags:
                    raise Unclear(f"{word} {words[i]}")
                i += 2 if words[i] in valued else 1
            i += positional
        else:
            break
    return words[i:]


def _reads_only(name: str, args: list[str]) -> None:
    """`Unclear` for a reading command whose arguments make it write or run something."""
    if name == "git":
        sub = args[0] if args else ""
        if sub not in _GIT_READS:
            raise Unclear(f"git {sub} may write files".strip())
    if name == "find" and not _FIND_WRITES.isdisjoint(args):
        raise Unclear("find with an action that writes or runs a command")
    risky = _WRITING_OPTIONS.get(name)
    if risky is not None and any(risky.match(a) for a in args):
        raise Unclear(f"{name} with an option that writes a file or runs a program")
    if name == "env" and args:
        raise Unclear("env running a command")


def _operands(args: list[str], valued: frozenset[str] = frozenset()) -> list[str]:
    """A command's arguments that are not options (`--` ends the options); an option in
    `valued` takes the next argument as its value."""
    out: list[str] = []
    skip = False
    options = True
    for arg in args:
        if skip:
            skip = False
        elif options and arg == "--":
            options = False
        elif options and arg.startswith("-") and arg != "-":
            skip = arg in valued
        else:
            out.append(arg)
    return out


def _each(valued: str) -> Callable[[list[str]], list[str]]:
    """A command every operand of which it writes (`touch`, `mkdir`, `rm`, `rmdir`, `tee`,
    `truncate`), its options taking a value named in `valued`."""
    options = frozenset(valued.split())
    return lambda args: [a for a in _operands(args, options) if a != "-"]


def _chmod(args: list[str]) -> list[str]:
    """`chmod MODE FILE...` (with `--reference=R`, every operand is a file)."""
    found = _operands(args)
    return found if any(a.startswith("--reference") for a in args) else found[1:]


def _copy(args: list[str], *, moves: bool) -> list[str]:
    """`cp` and `mv`: the destination (in a folder, each source's name in it), and for `mv`
    its sources too (they are taken away). Links (`-s`, `-l`), a target folder given as an
    option (`-t`) and backups are not read."""
    for arg in args:
        short = arg.startswith("-") and not arg.startswith("--")
        if (short and set(arg[1:]) & set("stlbS")) or arg.startswith(_COPY_UNREAD):
            raise Unclear(f"{arg}: the guard reads only plain copies and moves")
    found = _operands(args)
    if len(found) < 2:
        raise Unclear("a copy or move without a source and a destination")
    *sources, destination = found
    into = destination.endswith("/") or len(sources) > 1 or os.path.isdir(destination)
    out = [os.path.join(destination, os.path.basename(s.rstrip("/"))) for s in sources]
    out = out if into else [destination]
    return [*out, *sources] if moves else out


_COPY_UNREAD = ("--target-directory", "--symbolic-link", "--link", "--backup", "--suffix")


def _sed(args: list[str]) -> list[str]:
    """`sed`: nothing without `-i`; with it, every file operand (and its backup), when every
    script is substitutions only (`_SED_SUBSTITUTION`)."""
    scripts, operands, suffix = _sed_arguments(args)
    if not scripts and operands:
        scripts.append(operands.pop(0))
    for script in scripts:
        parts = script.replace("\n", ";").split(";")
        if not all(not p.strip() or _SED_SUBSTITUTION.match(p) for p in parts):
            raise Unclear("a sed script that is not plain substitutions")
    if suffix is None:
        return []
    if "/" in suffix or "*" in suffix:
        raise Unclear("a sed backup suffix naming another folder")
    return [*operands, *(f + suffix for f in operands if suffix)]


def _sed_arguments(args: list[str]) -> tuple[list[str], list[str], str | None]:
    """`sed`'s scripts given with `-e`, its other operands, and its `-i` backup suffix (None:
    not in place); `Unclear` for a script file or an option it does not know."""
    scripts: list[str] = []
    operands: list[str] = []
    suffix: str | None = None
    given = iter(args)
    for arg in given:
        if arg in ("-e", "--expression"):
            scripts.append(next(given, ""))
        elif arg.startswith("--expression="):
            scripts.append(arg.partition("=")[2])
        elif arg.startswith("--in-place"):
            suffix = arg.partition("=")[2]
        elif arg.startswith("--file") or (arg.startswith("-") and arg[1:2] == "f"):
            raise Unclear("a sed script read from a file")
        elif arg.startswith("-") and arg != "-" and not arg.startswith("--"):
            flags, i, rest = arg[1:].partition("i")
            suffix = rest if i else suffix
            if set(flags) - set("nErsuz"):
                raise Unclear(f"sed {arg}")
        elif not arg.startswith("--"):
            operands.append(arg)
    return scripts, operands, suffix


_WRITERS: dict[str, Callable[[list[str]], list[str]]] = {
    "touch": _each("-d -r -t --date --reference"),
    "mkdir": _each("-m --mode"),
    "rm": _each(""),
    "rmdir": _each(""),
    "tee": _each(""),
    "truncate": _each("-s --size -r --reference"),
    "chmod": _chmod,
    "cp": lambda args: _copy(args, moves=False),
    "mv": lambda args: _copy(args, moves=True),
    "sed": _sed,
}
