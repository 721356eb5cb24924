"""Shell command lines read the way a shell runs them, for the guard's checks of what they run.

Owns: rewriting a line as the shell does before it splits words (`normalise`), splitting it into
the simple commands it runs with their redirections apart (`split`, used by the tools policy)
and the files those redirections write (`redirected`),
saying whether the shell runs its words as written (`literal`, on the characters it may
rewrite: `unquoted`), and `first(line, names,
judge)`, which reads every command the line runs (nested ones too) and returns what `judge`
says of the first it objects to. Two judges: `destructive(line)`, which names the first
destructive command (`rm` recursive and forced, `git push` forced or deleting, `git reset
--hard`, `git clean` forced, a `git -c alias.X=!…` that runs a shell command, SQL `DROP
TABLE`/`DROP DATABASE`/`TRUNCATE TABLE`) or says None, and `answers_for_a_person(line)`,
which names a `tether approve` or `tether reject` (a person's answer to a human step, never an
agent's).

How a line is read:
- The shell's rewriting first: a backslash-newline is removed, `$'…'` is the text it stands
  for, `$IFS` is the space it splits words at, a parameter expansion is empty or its default
  (`r${X}m`, `${X:-rm}`), braces expand (`{rm,-rf,/}`; a large expansion is cut at its braces
  and commas instead), and a command name written as a glob is the name looked for that it
  matches (`/bin/r?`).
- `shlex` in POSIX mode with punctuation: quotes and backslashes go as the shell removes them
  (`'rm'`, `r""m` and `\\rm` are all `rm`); a new command starts after `;`, `&`, `&&`, `||`,
  `|`, `|&`, `(`, `)` and a newline; redirections and their targets are set apart.
- Leading variable assignments and keywords (`if`, `then`, `do`, `!`, `{`, `coproc` and its
  name, ...) are skipped; wrappers and launchers that run their arguments (`sudo`, `env` and
  `env -S`, `nohup`, `timeout`, `xargs`, `parallel`, `flock`, `ionice`, `taskset`, `script`,
  `watch`,
  `uvx`, `uv run`, ...: `_WRAPPERS`) are unwrapped with their options; a command word holding
  spaces (`env -S 'rm -rf /'`, `flock f -c '…'`) is read as a line. A command word is read by
  its last path component (`/bin/rm` is `rm`), in any case. A function or alias the line
  defines runs what it is given, and a function's body is read with its call's arguments in
  place of `$@`, `$*` and `$1`..`$9` (`f(){ rm "$@"; }; f -rf x` is `rm -rf x`); a call of a
  function whose body cannot be found counts as destructive.
- The text of every `$(...)` and backquoted span is read as a command line of its own, and the
  line is then read without them (so `r$()m` is `rm`; `$(which tether)` leaves `tether`); the
  string of `bash -c` (and `sh`, `zsh`, `dash`, `ksh`, `fish`, `su -c`, `runuser -c`), the
  arguments of `eval`, the string of `trap` and the command of `find -exec` are read as command
  lines in turn, and
  when a shell reads its script from standard input (`… | bash`, `bash <<< …`) every word of the
  line is; `MAX_DEPTH` levels deep at most.

It errs on the side of refusing: a line nested deeper than `MAX_DEPTH`, or one whose reading
would cost more than `BUDGET` times its length, counts as destructive; `$(...)` is read even
inside single quotes (`echo '$(rm -rf x)'` counts). It is a guardrail for an agent's commands,
not a sandbox: a command assembled at run time (`$CMD -rf /`, `python -c
"shutil.rmtree(...)"`, a script file, a copied binary) is not seen.
"""

from __future__ import annotations

import itertools
import re
import shlex
from collections.abc import Callable, Iterator
from fnmatch import fnmatchcase
from typing import NamedTuple

# What a judge says of one command (its lower-cased name and its arguments): None, or the reason.
Judge = Callable[[str, list[str]], str | None]

MAX_DEPTH = 8
BUDGET = 4
BRACE_WORD = 256
BRACE_WORDS = 64
_PUNCTUATION = "();<>|&\n"
REDIRECTIONS = frozenset({"<", ">", ">>", "<<", "<<-", "<<<", ">&", "<&", "&>", "&>>", ">|", "<>"})
# Globs make names of words that do not spell them: a line with one is always read.
_GLOBS = "?*["
# What `normalise` rewrites: a line holding none of them is read as it is.
_REWRITTEN = ("\\\n", "$'", '$"', "$IFS", "${IFS}")
# A parameter expansion, read as empty, or as its default (`${X:-rm}` is rm).
_EXPANSION = re.compile(
    r"\$\{[^}:=+-]*(?::?[-=+]([^}]*))?\}|\$[A-Za-z_][A-Za-z0-9_]*|\$[0-9@*#?$!-]"
)
# `$(which tether)` and the like print the path of a command: read as that command's name.
_LOOKUP = re.compile(r"^\s*(?:which|command\s+-v|type\s+-[pP]|realpath|readlink\s+-f)\s+(\S+)\s*$")
_POSITIONAL = re.compile(r'"\$\{?([@*1-9])\}?"|\$\{?([@*1-9])\}?')
_FUNCTION = re.compile(r"\bfunction\s+([\w.:-]+)|\(\s*\)")
# A git alias that runs a shell command (`alias.NAME=!…`): what it runs is not read.
_SHELL_ALIAS = re.compile(r"^alias\.[^=]*=\s*!", re.IGNORECASE)
_SQL_COMMENT = re.compile(r"/\*.*?\*/|--[^\n]*", re.DOTALL)
_SQL = re.compile(r"\b(drop\s+(?:table|database)|truncate\s+table)\b", re.IGNORECASE)


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# wrapper: (its options that take a value, how many positional arguments precede the command);
# options are read before and after those positional arguments.
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
    "parallel": (_words("-j -n -N -S -d -a -I --jobs --delay --sshlogin --arg-file"), 0),
    "chroot": (_words("--userspec --groups"), 1),
    "busybox": (frozenset(), 0),
    "flock": (_words("-w --wait --timeout -E --conflict-exit-code"), 1),
    "ionice": (_words("-c --class -n --classdata -p --pid -P --pgid -u --uid"), 0),
    "taskset": (frozenset(), 1),
    "chrt": (frozenset(), 1),
    "script": (
        _words("-E --echo -I --log-in -O --log-out -B --log-io -T --log-timing -o --output-limit"),
        0,
    ),
    "watch": (_words("-n --interval -q --equexit"), 0),
    "unbuffer": (frozenset(), 0),
    "strace": (_words("-o -e -p -s -u -E -P -a -b -I -X"), 0),
    "ltrace": (_words("-o -e -p -s -u -a -n -D -F -w"), 0),
    "systemd-run": (
        _words("-u --unit -p --property -E --setenv -M --machine --description --slice -H --host"),
        0,
    ),
    "setpriv": (_words("--reuid --regid --groups --inh-caps --bounding-set --securebits"), 0),
    "firejail": (frozenset(), 0),
    "fakeroot": (_words("-l --lib --faked -i -s"), 0),
    "uvx": (
        _words(
            "--from -w --with --with-editable --with-requirements -p --python --index "
            "--default-index --index-url --extra-index-url -f --find-links -c --constraints"
        ),
        0,
    ),
    "uv": (
        _words(
            "--from -w --with --with-editable --with-requirements -p --python --project "
            "--directory --package --group --extra --index --env-file"
        ),
        0,
    ),
    "pipx": (_words("--spec --python"), 0),
    "poetry": (frozenset(), 0),
    "pdm": (frozenset(), 0),
    "hatch": (frozenset(), 0),
    "conda": (_words("-n --name -p --prefix"), 0),
    "mamba": (_words("-n --name -p --prefix"), 0),
    "npx": (_words("-p --package"), 0),
}
# Launchers that run a command only behind a subcommand (`uv run`, `uv tool run`).
_LAUNCHERS = {
    "uv": _words("run tool"),
    "pipx": _words("run"),
    "poetry": _words("run"),
    "pdm": _words("run"),
    "hatch": _words("run"),
    "conda": _words("run"),
    "mamba": _words("run"),
}
_KEYWORDS = _words(
    "! { } if then else elif fi do done while until case esac in select function coproc"
)
_SHELLS = _words("bash sh zsh dash ksh mksh ash fish")
_SHELL_VALUED = _words("-o +o -O +O --rcfile --init-file")
_FIND_EXEC = _words("-exec -execdir -ok -okdir")
_GIT_VALUED = _words("-C -c --git-dir --work-tree --namespace --config-env --super-prefix")
_STRIP_QUOTES = str.maketrans("", "", "'\"\\")
_PLAIN = str.maketrans("", "", "'\"\\{},")  # and braces: `r{m,x}` holds `rm`
_ANSI_C = {
    "a": "\a",
    "b": "\b",
    "e": "\x1b",
    "E": "\x1b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    "\\": "\\",
    "'": "'",
    '"': '"',
    "?": "?",
}


class _Unreadable(Exception):
    """The line nests too deep or costs too much to read."""


def first(line: str, names: tuple[str, ...], judge: Judge) -> str | None:
    """What `judge` says of the first command `line` runs that it objects to, or None. A line
    that mentions none of `names` (command names or words, lower case), even once its quotes,
    escapes, braces, substitutions and parameter expansions are taken out, and that has no glob
    is not read at all; one too nested or too costly to read is objected to with why."""
    if not any(ch in line for ch in _GLOBS):
        plain = _EXPANSION.sub(r"\1", normalise(line)).lower().translate(_PLAIN)
        if not any(name in text for text in (plain, _spans(plain)[1]) for name in names):
            return None
    reader = _Reader(BUDGET * len(line) + 4096, judge, names)
    try:
        return reader.line(line, 0)
    except _Unreadable as exc:
        return str(exc)


def destructive(line: str) -> str | None:
    """What makes `line` destructive (e.g. `rm -r -f`, `DROP TABLE`), or None when nothing in it
    is. SQL is looked for in the whole line (however long), its comments read as spaces."""
    found = first(line, ("rm", "git"), _destructive)
    if found is None and ("drop" in line.lower() or "truncate" in line.lower()):
        sql = _SQL.search(_SQL_COMMENT.sub(" ", line.translate(_STRIP_QUOTES)))
        found = None if sql is None else " ".join(sql.group(1).upper().split())
    return found


def _destructive(name: str, args: list[str]) -> str | None:
    if name == "rm":
        return _rm(args)
    if name == "git":
        return _git(args)
    return None


# `tether` subcommands that are a person's answer to a human step.
PERSON_ANSWERS = ("approve", "reject")
_PYTHONS = ("python", "python3")
# The modules `python -m` runs as Tether, and the command words each stands for.
_TETHER_MODULES = {"tether": [], "tether.cli.main": [], "tether.guard.cli": ["guard"]}
_TETHERS = ("tether", "tether.exe")


def answers_for_a_person(line: str) -> str | None:
    """The `tether approve` or `tether reject` that `line` runs (also as `python -m tether`,
    behind launchers such as `uv run`, or with its words rewritten by the shell), or None when
    it runs neither. The guard's first line only: the verbs themselves require a person
    (`tether.person`)."""
    return first(line, ("tether", "appro", "rejec"), _person_answer)


def tether_args(name: str, args: list[str]) -> list[str] | None:
    """A `first` judge's reading of one command (launchers and wrappers already unwrapped): the
    arguments Tether gets when it runs Tether (`tether …`, a path to it, `python -m tether …`,
    `python3 PATH/tether …`), else None."""
    if name.startswith(_PYTHONS):
        if "-m" in args:
            at = args.index("-m") + 1
            words = _TETHER_MODULES.get(args[at]) if at < len(args) else None
            return None if words is None else [*words, *args[at + 1 :]]
        script = next((a for a in args if not a.startswith("-")), None)
        if script is None or _name(script) not in _TETHERS:
            return None
        return args[args.index(script) + 1 :]
    return args if name in _TETHERS else None


def _person_answer(name: str, args: list[str]) -> str | None:
    given = tether_args(name, args)
    sub = next((a for a in given if not a.startswith("-")), None) if given is not None else None
    if sub is None:
        return None
    found = next((p for p in PERSON_ANSWERS if fnmatchcase(p, sub.lower())), None)
    return None if found is None else f"tether {found}"


def normalise(line: str) -> str:
    """`line` as the shell rewrites it before splitting words: a backslash-newline (a line
    continuation) is removed, `$'…'` becomes the text it stands for (single-quoted), `$"…"`
    a plain double-quoted string, and `$IFS` (`${IFS}`) the space it splits words at."""
    if not any(mark in line for mark in _REWRITTEN):
        return line
    out: list[str] = []
    quote = ""
    i, end = 0, len(line)
    while i < end:
        ch = line[i]
        if quote == "'":
            quote = "" if ch == "'" else quote
        elif ch == "\\" and i + 1 < end:
            if line[i + 1] != "\n":
                out.append(line[i : i + 2])
            i += 2
            continue
        elif quote == '"':
            quote = "" if ch == '"' else quote
        elif ch == "$" and line.startswith("$'", i):
            i, text = _ansi_c(line, i + 2)
            out.append(shlex.quote(text))
            continue
        elif ch == "$" and line.startswith('$"', i):
            i += 1
            continue
        elif ch == "$" and (line.startswith("$IFS", i) or line.startswith("${IFS}", i)):
            out.append(" ")  # the field separator, unquoted, splits words (quoted: read as one)
            i += 6 if line.startswith("${IFS}", i) else 4
            continue
        elif ch in "'\"":
            quote = ch
        out.append(ch)
        i += 1
    return "".join(out)


def _ansi_c(line: str, i: int) -> tuple[int, str]:
    """The text of a `$'…'` string whose body starts at `i`, and where it ends."""
    out: list[str] = []
    while i < len(line) and line[i] != "'":
        if line[i] != "\\" or i + 1 >= len(line):
            out.append(line[i])
            i += 1
            continue
        code = line[i + 1]
        digits = {"x": (16, 2), "u": (16, 4), "U": (16, 8)}.get(code)
        if code in "01234567":
            digits, i = (8, 3), i - 1
        if digits is not None:
            base, most = digits
            allowed = "0123456789abcdefABCDEF"[: base + (6 if base == 16 else 0)]
            j = i + 2
            while j < len(line) and j < i + 2 + most and line[j] in allowed:
                j += 1
            text = line[i + 2 : j]
            out.append(chr(min(int(text, base), 0x10FFFF)) if text else line[i : i + 2])
            i = j
            continue
        out.append(_ANSI_C.get(code, "\\" + code))
        i += 2
    return i + 1, "".join(out)


def tokens(line: str) -> list[str]:
    """The shell words and operators of `line` after `normalise` (an unclosed quote is closed at
    the end)."""
    line = normalise(line)
    for tail in ("", '"', "'"):
        found = _lex(line + tail)
        if found is not None:
            return found
    return line.split()


def _lex(line: str) -> list[str] | None:
    lexer = shlex.shlex(line, posix=True, punctuation_chars=_PUNCTUATION)
    lexer.whitespace_split = True
    lexer.whitespace = " \t\r"
    lexer.commenters = ""
    try:
        return list(lexer)
    except ValueError:
        return None


class Simple(NamedTuple):
    """One simple command: its words, its redirections (operators and targets) apart, and the
    control operator that ends it (`&&`, `;`, `|`, `)`, a newline, ...; empty at the end)."""

    words: list[str]
    redirections: list[str]
    after: str = ""


# Where output redirected to writes no file.
_NOT_FILES = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr"})


def redirected(redirections: list[str]) -> list[str]:
    """The files a simple command's redirections (`Simple.redirections`) write: each output
    redirection's target (`>`, `>>`, `&>`, `>|`, `<>`, `>&FILE`), but neither a descriptor's copy
    (`2>&1`, `>&-`) nor `/dev/null`, `/dev/stdout` or `/dev/stderr`."""
    out = []
    for op, target in itertools.pairwise(redirections):
        if ">" not in op or op not in REDIRECTIONS:
            continue
        if op.endswith("&") and (target.isdigit() or target == "-"):
            continue
        if target not in _NOT_FILES:
            out.append(target)
    return out


def split(line: str) -> list[Simple] | None:
    """The simple commands of `line`, cut at control operators (`;`, `&`, `&&`, `||`, `|`,
    `|&`, parentheses and newlines) after `normalise`, or None when its quotes do not close."""
    words = _lex(normalise(line))
    return None if words is None else _cut(words)


def _cut(words: list[str]) -> list[Simple]:
    commands: list[Simple] = []
    current = Simple([], [])
    target = False
    for word in words:
        if target:
            current.redirections.append(word)
            target = False
        elif word and all(ch in _PUNCTUATION for ch in word):
            if word in REDIRECTIONS:
                if current.words and current.words[-1].isdigit():
                    current.redirections.append(current.words.pop())  # the `2` of `2>file`
                current.redirections.append(word)
                target = True
                continue
            if current.words or current.redirections:
                commands.append(current._replace(after=word))
            current = Simple([], [])
        else:
            current.words.append(word)
    if current.words or current.redirections:
        commands.append(current)
    return commands


def literal(line: str) -> bool:
    """Whether the shell runs `line`'s words as written: no expansion, substitution, glob,
    brace or tilde outside single quotes (escapes and quotes aside)."""
    return not any(ch in "$`" or (not quote and ch in "*?[{}~") for _, ch, quote in unquoted(line))


def unquoted(line: str) -> Iterator[tuple[int, str, str]]:
    """Each character of `line` the shell may read as more than itself, with where it stands
    and the quote it stands in (`"`, or empty outside quotes): not inside single quotes, not
    escaped by a backslash, and not a quote or backslash itself."""
    quote = ""
    escaped = False
    for i, ch in enumerate(line):
        if escaped:
            escaped = False
        elif quote == "'":
            quote = "" if ch == "'" else quote
        elif ch == "\\":
            escaped = True
        elif quote == '"' and ch == '"':
            quote = ""
        elif not quote and ch in "'\"":
            quote = ch
        else:
            yield i, ch, quote


def _spans(line: str) -> tuple[list[str], str]:
    """The text of each outermost `$(...)` and backquoted span, and `line` without them (a span
    that only prints where a command lives, `$(which tether)`, leaves that command's name)."""
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
        outside.append(line[done:start] + _looked_up(found[-1]))
        done = end + 1
        start = line.find("$(", done)
    outside.append(line[done:])
    parts = "".join(outside).split("`")
    found.extend(parts[1::2])
    return found, "".join(p if i % 2 == 0 else _looked_up(p) for i, p in enumerate(parts))


def _looked_up(text: str) -> str:
    match = _LOOKUP.match(text)
    return "" if match is None else _name(match.group(1))


def _body(text: str, start: int) -> str | None:
    """The body of a function defined at `start` of `text` (`{ ...; }` or `( ... )`, nested
    braces counted, quotes skipped), or None when it cannot be found."""
    i = len(text) - len(text[start:].lstrip())
    if i >= len(text) or text[i] not in "{(":
        return None
    opener, closer, depth, quote = text[i], "}" if text[i] == "{" else ")", 0, ""
    for j in range(i, len(text)):
        ch = text[j]
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == opener:
            depth += 1
        elif ch == closer:
            depth -= 1
            if depth == 0:
                return text[i + 1 : j]
    return None


def _called(body: str, args: list[str]) -> str:
    """A function's body as a call with `args` runs it: `$@`, `$*` and `$1`..`$9` (quoted or
    braced) replaced by the arguments."""
    every = shlex.join(args)

    def positional(match: re.Match[str]) -> str:
        key = match.group(1) or match.group(2)
        if key in "@*":
            return every
        n = int(key)
        return shlex.quote(args[n - 1]) if n <= len(args) else ""

    return _POSITIONAL.sub(positional, body)


def _last_word(text: str) -> str:
    end = len(text.rstrip())
    start = end
    while start > 0 and (text[start - 1].isalnum() or text[start - 1] in "_.:-"):
        start -= 1
    return text[start:end]


def _name(word: str) -> str:
    return word.rsplit("/", 1)[-1].lower()


def is_assignment(word: str) -> bool:
    """Whether a word is a variable assignment (`NAME=value`)."""
    name, eq, _ = word.partition("=")
    return bool(eq) and name.replace("_", "a").isalnum() and not name[0].isdigit()


def _braces(word: str) -> list[str]:
    """The words bash's brace expansion makes of `word` (`{rm,-rf,/}` is `rm -rf /`), the empty
    ones dropped. A word longer than `BRACE_WORD` or making more than `BRACE_WORDS` words is cut
    at its braces and commas instead, which costs time linear in it and keeps every part."""
    if "{" not in word or "," not in word:
        return [word]
    if len(word) <= BRACE_WORD:
        try:
            return [w for w in _expand(word, [BRACE_WORDS]) if w]
        except _Unreadable:
            pass
    return [w for w in re.split(r"[{},]", word) if w]


def _expand(word: str, budget: list[int]) -> list[str]:
    start = word.find("{")
    while start >= 0:
        depth, commas, end = 0, [], -1
        for i in range(start, len(word)):
            if word[i] == "{":
                depth += 1
            elif word[i] == "}":
                depth -= 1
                if depth == 0:
                    end = i
                    break
            elif word[i] == "," and depth == 1:
                commas.append(i)
        if end < 0:
            return [word]
        if commas:
            cuts = [start, *commas, end]
            out: list[str] = []
            for a, b in itertools.pairwise(cuts):
                budget[0] -= 1
                if budget[0] < 0:
                    raise _Unreadable("too many words")
                out.extend(_expand(word[:start] + word[a + 1 : b] + word[end + 1 :], budget))
            return out
        start = word.find("{", start + 1)
    return [word]


def _unwrap(words: list[str]) -> list[str]:
    """The command a simple command runs, past assignments, keywords, wrappers and launchers
    (`env -S STRING` runs the words of STRING)."""
    i = 0
    while i < len(words):
        name = _name(words[i])
        if name == "coproc" and i + 2 < len(words) and words[i + 2] in ("{", "("):
            i += 2  # `coproc NAME { …; }`: the name is the coprocess's, not a command
        elif is_assignment(words[i]) or name in _KEYWORDS:
            i += 1
        elif name in _WRAPPERS:
            past = _past_wrapper(name, words, i + 1)
            if isinstance(past, list):
                return past
            i = past
        else:
            break
    return words[i:]


def _past_wrapper(name: str, words: list[str], i: int) -> int | list[str]:
    """Where the command wrapper `name` hands on, its arguments starting at `words[i]`: the
    index past its subcommands (a launcher's), options, assignments and positional arguments,
    or the command itself when the wrapper settles it (a launcher running none of its own,
    `env -S`)."""
    valued, positional = _WRAPPERS[name]
    if name in _LAUNCHERS:
        if i >= len(words) or words[i] not in _LAUNCHERS[name]:
            return words[i - 1 :]  # `uv pip install`: runs no command of its own
        while i < len(words) and words[i] in _LAUNCHERS[name]:
            i += 1
    for count in (positional, 0):
        while i < len(words) and words[i].startswith("-") and words[i] != "-":
            word = words[i]
            if word == "--":
                i += 1
                break
            if name == "env" and word.startswith(("-S", "--split-string")):
                return _split_string(words, i)
            i += 2 if word in valued else 1
        while i < len(words) and is_assignment(words[i]):
            i += 1
        i += count
    return i


def _split_string(words: list[str], i: int) -> list[str]:
    """The command `env -S STRING` runs (`words[i]` is the `-S`, `--split-string` option): the
    words of STRING, then the words after it."""
    word = words[i]
    attached = word[2:] if word.startswith("-S") else word.partition("=")[2]
    string = attached or (words[i + 1] if i + 1 < len(words) else "")
    return _unwrap(tokens(string) + words[i + (1 if attached else 2) :])


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
        if args[i] == "-c" and i + 1 < len(args) and _SHELL_ALIAS.match(args[i + 1]):
            return "git alias running a shell command"  # `-c alias.x='!rm -rf /' x`
        i += 2 if args[i] in _GIT_VALUED else 1
    if i >= len(args):
        return None
    sub, rest = args[i].lower(), args[i + 1 :]
    if sub == "push":
        return _push(rest)
    if sub == "reset" and any(_long(a, "--hard", 4) for a in rest if a.startswith("--")):
        return "git reset --hard"
    if sub == "clean":
        return _clean(rest)
    return None


def _clean(args: list[str]) -> str | None:
    short = [a[1:] for a in args if a.startswith("-") and not a.startswith("--")]
    force = any("f" in s for s in short) or any(_long(a, "--force", 5) for a in args)
    dry = any("n" in s for s in short) or any(_long(a, "--dry-run", 5) for a in args)
    return "git clean -f" if force and not dry else None


def _shell_string(name: str, args: list[str]) -> str | None:
    """The command string a shell (or `su`, `runuser`) is given with `-c`, if any."""
    if name in ("su", "runuser"):
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
    """Reads a line and everything nested in it, within a budget of characters; remembers the
    functions and aliases the line defines, which run what they are given."""

    def __init__(self, budget: int, judge: Judge, names: tuple[str, ...]) -> None:
        self.budget = budget
        self.judge = judge
        self.names = names
        self.functions: dict[str, str | None] = {}  # name -> body (None: cannot be read)
        self.aliases: dict[str, str] = {}

    def line(self, line: str, depth: int) -> str | None:
        if depth > MAX_DEPTH:
            raise _Unreadable(f"commands nested more than {MAX_DEPTH} levels deep")
        self.budget -= len(line)
        if self.budget < 0:
            raise _Unreadable("a command line too intricate to read")
        inner, bare = _spans(normalise(line))
        for text in inner:
            found = self.line(text, depth + 1)
            if found:
                return found
        for match in _FUNCTION.finditer(bare):  # `function f`, `f ()`
            name = (match.group(1) or _last_word(bare[: match.start()])).lower()
            self.functions[name] = _body(bare, match.end())
        commands = _cut(tokens(bare))  # `r$()m` runs rm
        stdin = False
        for command in commands:
            found = self.command(command.words, depth)
            if found:
                return found
            stdin = stdin or self.reads_stdin(command.words)
        if stdin:  # `echo 'rm -rf /' | bash`, `bash <<< '…'`: any word may be the script
            for command in commands:
                for text in (*command.words, *command.redirections):
                    found = self.line(text, depth + 1) if " " in text.strip() else None
                    if found:
                        return found
        return None

    def command(self, words: list[str], depth: int) -> str | None:
        words = [part for word in words for part in _braces(_EXPANSION.sub(r"\1", word))]
        words = _unwrap(words)
        if not words:
            return None
        if any(ch.isspace() for ch in words[0]):  # `env -S 'rm -rf /'`, `script -c '…'`
            return self.line(f"{words[0]} {shlex.join(words[1:])}", depth + 1)
        name, args = self.name_of(words[0]), words[1:]
        found = self.judge(name, args)
        if found:
            return found
        if name in self.aliases:
            return self.line(f"{self.aliases[name]} {shlex.join(args)}", depth + 1)
        if name in self.functions:
            return self.function(name, args, depth)
        if name == "alias":
            return self.alias(args, depth)
        if name in _SHELLS or name in ("su", "runuser"):
            inner = _shell_string(name, args)
            return None if inner is None else self.line(inner, depth + 1)
        return self.runs(name, args, depth)

    def runs(self, name: str, args: list[str], depth: int) -> str | None:
        """What the commands a builtin or `find` runs from its arguments do: `eval`'s words,
        `trap`'s string (run later by the shell), `find -exec`'s command."""
        if name == "eval":
            return self.line(" ".join(args), depth + 1)
        if name == "trap":
            given = [a for a in args if a not in ("--", "-p", "-l")]
            return self.line(given[0], depth + 1) if given else None
        if name == "find":
            for i, arg in enumerate(args):
                if arg in _FIND_EXEC:
                    end = next((j for j in range(i + 1, len(args)) if args[j] in (";", "+")), None)
                    found = self.command(args[i + 1 : end], depth + 1)
                    if found:
                        return found
        return None

    def function(self, name: str, args: list[str], depth: int) -> str | None:
        """What a call of a function the line defines runs: its arguments as a command
        (`f(){ "$@"; }; f rm -rf /`), and its body with them (`f(){ rm "$@"; }; f -rf /`)."""
        body = self.functions[name]
        if body is None:
            raise _Unreadable(f"the body of the function {name!r}")
        return self.command(args, depth + 1) or self.line(_called(body, args), depth + 1)

    def name_of(self, word: str) -> str:
        """A command word's name: its last path component in lower case; a glob (`r?`) is the
        name looked for that it matches."""
        name = _name(word)
        if any(ch in name for ch in "*?["):
            return next((n for n in self.names if fnmatchcase(n, name)), name)
        return name

    def alias(self, args: list[str], depth: int) -> str | None:
        for arg in args:
            name, eq, value = arg.partition("=")
            if eq:
                self.aliases[name.lower()] = value
                found = self.line(value, depth + 1)
                if found:
                    return found
        return None

    @staticmethod
    def reads_stdin(words: list[str]) -> bool:
        """Whether a command is a shell reading its script from standard input."""
        words = _unwrap(words)
        if not words or _name(words[0]) not in _SHELLS:
            return False
        args = words[1:]
        return _shell_string(_name(words[0]), args) is None and all(
            a.startswith(("-", "+")) for a in args
        )
