"""Command-line argument parsing for the `tether` verbs.

Owns a small table-driven parser with one rule argparse cannot give: a value is never taken for
an option. Only the option names a command declares are options; every other token, even one that
begins with `-` (`-5`, `-fix the flaky test`), is a positional value, and an option's value is the
next token whatever it looks like. `-h`/`--help` asks for help, except in the place of a free-text
positional (a command's `texts`: `var`'s VALUE, `think`'s THOUGHT), where it is the text itself.
`--` ends the options. It also keeps the CLI's start-up lean:
no argparse import on the step path. It does not run commands (see `tether.cli.main`).
"""

from __future__ import annotations

from tether.errors import TetherError

# What each option's value is, as usage lines show it.
METAVARS = {
    "--note": "TEXT",
    "--note-file": "FILE",
    "--step": "TOKEN",
    "--file": "FILE",
    "--from": "SEQ",
    "--to": "SEQ",
    "--var": "K=V",
    "--const": "K=V",
    "--set": "PATH=VALUE",
    "--set-json": "PATH=JSON",
    "--port": "N",
    "--status": "STATUS",
    "--at": "K",
    "-o": "FILE",
    "--root": "DIR",
    "--store": "URI",
    "--host": "ADDR",
    "--token": "TOKEN",
    "--max-body-bytes": "N",
    "--allow-host": "HOST",
    "--allow-store": "URI",
    "--target": "CLIENT",
    "--scope": "SCOPE",
    "--name": "NAME",
    "--dir": "DIR",
    "--command": "CMD",
    "--bot": "TREE",
    "--state": "URI",
    "--config": "FILE",
    "--state-dir": "DIR",
    "--on-error": "MODE",
    "--deadline": "SECONDS",
    "--limit": "N",
    "--settings": "FILE",
    "--http": "URL",
    "--session": "ID",
    "--tree": "NAME",
    "--since": "TIME",
}


class Command:
    """One command: its positionals (the first `required` of them mandatory; those in `texts`
    take free text, `--help` included), the options that take a value (`values`, or `repeated`
    when they may be given several times), and flags."""

    __slots__ = (
        "flags",
        "help",
        "name",
        "positionals",
        "repeated",
        "required",
        "summary",
        "texts",
        "values",
    )

    def __init__(
        self,
        name: str,
        summary: str,
        positionals: tuple[str, ...] = (),
        required: int = 0,
        *,
        values: tuple[str, ...] = (),
        repeated: tuple[str, ...] = (),
        flags: tuple[str, ...] = (),
        texts: tuple[str, ...] = (),
        help: str = "",
    ) -> None:
        self.name = name
        self.summary = summary
        self.positionals = positionals
        self.required = required
        self.values = values
        self.repeated = repeated
        self.flags = flags
        self.texts = texts
        self.help = help

    def help_text(self) -> str:
        """What `--help` prints: usage, summary and the option notes."""
        text = f"usage: {self.usage()}\n\n{self.summary}\n"
        return text + (f"\n{self.help}\n" if self.help else "")

    def usage(self) -> str:
        parts = ["tether", self.name]
        for i, name in enumerate(self.positionals):
            parts.append(name if i < self.required else f"[{name}]")
        parts += [f"[{o} {METAVARS.get(o, 'VALUE')}]" for o in self.values]
        parts += [f"[{o} {METAVARS.get(o, 'VALUE')} ...]" for o in self.repeated]
        parts += [f"[{o}]" for o in self.flags]
        return " ".join(parts)


class Parsed:
    """The arguments of one command line: positionals by name, option values, flags."""

    __slots__ = ("args", "command", "flags", "help", "multi", "options")

    def __init__(self, command: Command) -> None:
        self.command = command
        self.args: dict[str, str | None] = {}
        self.options: dict[str, str] = {}
        self.multi: dict[str, list[str]] = {}
        self.flags: set[str] = set()
        self.help = False

    def number(self, name: str, default: int | None = None) -> int | None:
        """The whole number given for option `name` (`default` when it is absent)."""
        text = self.options.get(name)
        if text is None:
            return default
        if not text.isdigit():
            raise TetherError("usage", f"{name} takes a whole number, got {text!r}")
        return int(text)


def parse(command: Command, argv: list[str]) -> Parsed:
    out = Parsed(command)
    positionals: list[str] = []
    known = (*command.values, *command.repeated, *command.flags)
    i = 0
    options_done = False
    while i < len(argv):
        token = argv[i]
        i += 1
        if options_done:
            positionals.append(token)
            continue
        if token == "--":
            options_done = True
            continue
        if token in ("-h", "--help") and not _text_next(command, len(positionals)):
            out.help = True
            continue
        name, eq, inline = token.partition("=")
        if name in command.values or name in command.repeated:
            if not eq:
                if i >= len(argv):
                    raise _usage(command, f"option {name} needs a value")
                inline = argv[i]
                i += 1
            if name in command.repeated:
                out.multi.setdefault(name, []).append(inline)
            else:
                out.options[name] = inline
            continue
        if token in command.flags:
            out.flags.add(token)
            continue
        positionals.append(token)
    if out.help:
        return out
    if len(positionals) < command.required:
        missing = command.positionals[len(positionals) : command.required]
        raise _usage(command, f"missing {', '.join(missing)}")
    if len(positionals) > len(command.positionals):
        extra = positionals[len(command.positionals)]
        hint = ""
        if extra.startswith("--"):
            import difflib

            close = difflib.get_close_matches(extra.partition("=")[0], known, n=1)
            hint = (
                f" (did you mean {close[0]}?)" if close else f" ({command.name} has no such option)"
            )
        raise _usage(command, f"unexpected argument {extra!r}{hint}")
    for name, value in zip(command.positionals, positionals, strict=False):
        out.args[name] = value
    return out


def _text_next(command: Command, given: int) -> bool:
    """Whether the positional after the `given` ones takes free text."""
    return given < len(command.positionals) and command.positionals[given] in command.texts


def _usage(command: Command, message: str) -> TetherError:
    return TetherError("usage", f"{message}; usage: {command.usage()}", usage=command.usage())
