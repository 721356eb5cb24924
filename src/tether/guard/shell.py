"""Shell command lines read the way a shell runs them, for the guard's checks of what they run.

Owns: splitting a command line into the simple commands it runs, and `first(line, names,
judge)`, which reads every command the line runs (nested ones too) and returns what `judge` says
of the first it objects to. Two judges: `destructive(line)`, which names the first destructive
command (`rm` recursive and forced, `git push` forced or deleting, `git reset --hard`,
`git clean` forced) or says None, and `answers_for_a_person(line)`, which names a `tether
approve` or `tether reject` (a person's answer to a human step, never an agent's).

How a line is read:
- `shlex` in POSIX mode with punctuation: quotes and backslashes go as the shell removes them
  (`'rm'`, `r""m` and `\\rm` are all `rm`); a new command starts after `;`, `&`, `&&`, `||`,
  `|`, `|&`, `(`, `)` and a newline; redirections and their targets are dropped.
- Leading variable assignments and keywords (`if`, `then`, `do`, `!`, `{`, ...) are skipped;
  wrappers that run their arguments (`sudo`, `doas`, `env`, `command`, `exec`, `nohup`, `time`,
  `nice`, `timeout`, `stdbuf`, `setsid`, `xargs`, `chroot`, `busybox`) are unwrapped with their
  options. A command word is read by its last path component (`/bin/rm` is `rm`), in any case.
- The text of every `$(...)` and backquoted span is read as a command line of its own, and the
  line is then read without them (so `r$()m` is `rm`); the string of `bash -c` (and `sh`, `zsh`,
  `dash`, `ksh`, `fish`, `su -c`), the arguments of `eval` and the command of `find -exec` are
  read as command lines in turn; `MAX_DEPTH` levels deep at most.

It errs on the side of refusing: a line nested deeper than `MAX_DEPTH`, or one whose reading
would cost more than `BUDGET` times its length, counts as destructive; `$(...)` is read even
inside single quotes (`echo '$(rm -rf x)'` counts) and a quoted `;` still separates. It is a
guardrail for an agent's commands, not a sandbox: a command assembled at run time
(`$CMD -rf /`, `python -c "shutil.rmtree(...)"`, a script file) is not seen.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable

# What a judge says of one command (its lower-cased name and its arguments): None, or the reason.
Judge = Callable[[str, list[str]], str | None]

MAX_DEPTH = 8
BUDGET = 4
_PUNCTUATION = "();<>|&\n"
_REDIRECTIONS = frozenset({"<", ">", ">>", "<<", "<<-", "<<<", ">&", "<&", "&>", "&>>", ">|", "<>"})


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# wrapper: (its options that take a value, how many positional arguments precede the command)
_WRAPPERS: dict[str, tuple[frozenset[str], int]] = {
    "sudo": (
        _words(
            "-u -g -h -p -C -D -r -t -U -T -R --user --group --host --prompt --close-from "
            "--chdir --role --type --other-user --command-timeout --chroot"
        ),
        0,
    ),
    "doas": (_words("-u -C"), 0),
    "env": (_words("-u -C --unset --chdir"), 0),
    "command": (frozenset(), 0),
    "builtin": (frozenset(), 0),
    "exec": (_words("-a"), 0),
    "nohup": (frozenset(), 0),
    "setsid": (frozenset(), 0),
    "time": (_words("-o -f --output --format"), 0),
    "nice": (_words("-n --adjustment"), 0),
    "timeout": (_words("-s -k --signal --kill-after"), 1),
    "stdbuf": (_words("-i -o -e --input --output --error"), 0),
    "xargs": (
        _words(
            "-I -n -P -L -s -d -E -a --max-args --max-procs --max-lines --max-chars "
            "--delimiter --eof --arg-file --replace"
        ),
        0,
    ),
    "chroot": (_words("--userspec --groups"), 1),
    "busybox": (frozenset(), 0),
}
_KEYWORDS = _words("! { } if then else elif fi do done while until case esac in select function")
_SHELLS = _words("bash sh zsh dash ksh mksh ash fish")
_SHELL_VALUED = _words("-o +o -O +O --rcfile --init-file")
_FIND_EXEC = _words("-exec -execdir -ok -okdir")
_GIT_VALUED = _words("-C -c --git-dir --work-tree --namespace --config-env --super-prefix")
_STRIP_QUOTES = str.maketrans("", "", "'\"\\")


class _Unreadable(Exception):
    """The line nests too deep or costs too much to read."""


def first(line: str, names: tuple[str, ...], judge: Judge) -> str | None:
    """What `judge` says of the first command `line` runs that it objects to, or None. A line
    that mentions none of `names` (command names, lower case) is not read at all; one too
    nested or too costly to read is objected to with why."""
    plain = line.lower().translate(_STRIP_QUOTES)
    bare = _spans(plain)[1]
    if not any(name in text for text in (plain, bare) for name in names):
        return None
    reader = _Reader(BUDGET * len(line) + 4096, judge)
    try:
        return reader.line(line, 0)
    except _Unreadable as exc:
        return str(exc)


def destructive(line: str) -> str | None:
    """What makes `line` destructive (e.g. `rm -r -f`), or None when nothing in it is."""
    return first(line, ("rm", "git"), _destructive)


def _destructive(name: str, args: list[str]) -> str | None:
    if name == "rm":
        return _rm(args)
    if name == "git":
        return _git(args)
    return None


# `tether` subcommands that are a person's answer to a human step.
PERSON_ANSWERS = ("approve", "reject")
_PYTHONS = ("python", "python3")
_TETHER_MODULES = ("tether", "tether.cli.main")


def answers_for_a_person(line: str) -> str | None:
    """The `tether approve` or `tether reject` that `line` runs (also as `python -m tether`),
    or None when it runs neither."""
    return first(line, ("tether",), _person_answer)


def _person_answer(name: str, args: list[str]) -> str | None:
    if name.startswith(_PYTHONS) and len(args) >= 2 and args[0] == "-m":
        name, args = args[1], args[2:]
        if name not in _TETHER_MODULES:
            return None
    elif name not in ("tether", "tether.exe"):
        return None
    sub = next((a for a in args if not a.startswith("-")), None)
    return f"tether {sub}" if sub in PERSON_ANSWERS else None


def tokens(line: str) -> list[str]:
    """The shell words and operators of `line` (an unclosed quote is closed at the end)."""
    for tail in ("", '"', "'"):
        lexer = shlex.shlex(line + tail, posix=True, punctuation_chars=_PUNCTUATION)
        lexer.whitespace_split = True
        lexer.whitespace = " \t\r"
        lexer.commenters = ""
        try:
            return list(lexer)
        except ValueError:
            continue
    return line.split()


def simple_commands(words: list[str]) -> list[list[str]]:
    """`tokens` cut into simple commands at control operators, without redirections."""
    commands: list[list[str]] = []
    current: list[str] = []
    skip = False
    for word in words:
        if skip:
            skip = False
            continue
        if word and all(ch in _PUNCTUATION for ch in word):
            if word in _REDIRECTIONS:
                if current and current[-1].isdigit():
                    current.pop()  # the descriptor of `2>file`
                skip = True
                continue
            if current:
                commands.append(current)
            current = []
            continue
        current.append(word)
    if current:
        commands.append(current)
    return commands


def _spans(line: str) -> tuple[list[str], str]:
    """The text of each outermost `$(...)` and backquoted span, and `line` without them."""
    found, outside = [], []
    done = 0
    start = line.find("$(")
    while start >= 0:
        depth, end = 0, len(line)
        for i in range(start + 1, len(line)):
            if line[i] == "(":
                depth += 1
            elif line[i] == ")":
                depth -= 1
                if depth == 0:
                    end = i
                    break
        found.append(line[start + 2 : end])
        outside.append(line[done:start])
        done = end + 1
        start = line.find("$(", done)
    outside.append(line[done:])
    parts = "".join(outside).split("`")
    found.extend(parts[1::2])
    return found, "".join(parts[0::2])


def _name(word: str) -> str:
    return word.rsplit("/", 1)[-1].lower()


def _is_assignment(word: str) -> bool:
    name, eq, _ = word.partition("=")
    return bool(eq) and name.replace("_", "a").isalnum() and not name[0].isdigit()


def _unwrap(words: list[str]) -> list[str]:
    """The command a simple command runs, past assignments, keywords and wrappers."""
    i = 0
    while i < len(words):
        name = _name(words[i])
        if _is_assignment(words[i]) or name in _KEYWORDS:
            i += 1
            continue
        if name not in _WRAPPERS:
            break
        valued, positional = _WRAPPERS[name]
        i += 1
        while i < len(words) and words[i].startswith("-") and words[i] != "-":
            if words[i] == "--":
                i += 1
                break
            i += 2 if words[i] in valued else 1
        while i < len(words) and _is_assignment(words[i]):
            i += 1
        i += positional
    return words[i:]


def _long(word: str, full: str, shortest: int) -> bool:
    """`word` is the long option `full`, or an abbreviation of it at least `shortest` long."""
    name = word.split("=", 1)[0]
    return len(name) >= shortest and full.startswith(name)


def _rm(args: list[str]) -> str | None:
    recursive = force = False
    for arg in args:
        if arg == "--":
            break
        if arg.startswith("--"):
            recursive = recursive or _long(arg, "--recursive", 3)
            force = force or _long(arg, "--force", 3)
        elif arg.startswith("-"):
            recursive = recursive or "r" in arg or "R" in arg
            force = force or "f" in arg
    return "rm -r -f" if recursive and force else None


def _push(args: list[str]) -> str | None:
    options = True
    for arg in args:
        if options and arg == "--":
            options = False
        elif options and arg.startswith("--"):
            if _long(arg, "--force", 5) or _long(arg, "--force-with-lease", 5):
                return "git push --force"
            for full in ("--delete", "--mirror", "--prune"):
                if _long(arg, full, 5):
                    return f"git push {full}"
        elif options and arg.startswith("-") and arg != "-":
            for ch in arg[1:]:
                if ch == "o":
                    break  # the rest is the push option's value
                if ch == "f":
                    return "git push --force"
                if ch == "d":
                    return "git push --delete"
        elif arg.startswith("+"):
            return "git push +refspec (a forced update)"
        elif arg.startswith(":"):
            return "git push :refspec (a deletion)"
    return None


def _git(args: list[str]) -> str | None:
    i = 0
    while i < len(args) and args[i].startswith("-"):
        i += 2 if args[i] in _GIT_VALUED else 1
    if i >= len(args):
        return None
    sub, rest = args[i].lower(), args[i + 1 :]
    if sub == "push":
        return _push(rest)
    if sub == "reset" and any(_long(a, "--hard", 4) for a in rest if a.startswith("--")):
        return "git reset --hard"
    if sub == "clean":
        short = [a[1:] for a in rest if a.startswith("-") and not a.startswith("--")]
        force = any("f" in s for s in short) or any(_long(a, "--force", 5) for a in rest)
        dry = any("n" in s for s in short) or any(_long(a, "--dry-run", 5) for a in rest)
        return "git clean -f" if force and not dry else None
    return None


def _shell_string(name: str, args: list[str]) -> str | None:
    """The command string a shell (or `su`) is given with `-c`, if any."""
    if name == "su":
        for i, arg in enumerate(args):
            if arg in ("-c", "--command") and i + 1 < len(args):
                return args[i + 1]
            if arg.startswith("--command="):
                return arg.split("=", 1)[1]
        return None
    has_c = False
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            i += 1
            break
        if arg in _SHELL_VALUED:
            i += 2
            continue
        if not arg.startswith(("-", "+")):
            break
        has_c = has_c or arg == "--command" or (not arg.startswith("--") and "c" in arg)
        i += 1
    return args[i] if has_c and i < len(args) else None


class _Reader:
    """Reads a line and everything nested in it, within a budget of characters."""

    def __init__(self, budget: int, judge: Judge) -> None:
        self.budget = budget
        self.judge = judge

    def line(self, line: str, depth: int) -> str | None:
        if depth > MAX_DEPTH:
            raise _Unreadable(f"commands nested more than {MAX_DEPTH} levels deep")
        self.budget -= len(line)
        if self.budget < 0:
            raise _Unreadable("a command line too intricate to read")
        inner, bare = _spans(line)
        for text in inner:
            found = self.line(text, depth + 1)
            if found:
                return found
        for words in simple_commands(tokens(bare)):  # `r$()m` runs rm
            found = self.command(words, depth)
            if found:
                return found
        return None

    def command(self, words: list[str], depth: int) -> str | None:
        words = _unwrap(words)
        if not words:
            return None
        name, args = _name(words[0]), words[1:]
        found = self.judge(name, args)
        if found:
            return found
        if name in _SHELLS or name == "su":
            inner = _shell_string(name, args)
            return None if inner is None else self.line(inner, depth + 1)
        if name == "eval":
            return self.line(" ".join(args), depth + 1)
        if name == "find":
            for i, arg in enumerate(args):
                if arg in _FIND_EXEC:
                    end = next((j for j in range(i + 1, len(args)) if args[j] in (";", "+")), None)
                    found = self.command(args[i + 1 : end], depth + 1)
                    if found:
                        return found
        return None
