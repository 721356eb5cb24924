"""The `tether` command: parse, call the verb layer, print JSON.

Owns the command table, the mapping from arguments to verb calls and the dispatch to the command
families (`FAMILIES`). The output contract (the result as JSON on stdout; an error as
`{"error": {"code", "message", ...}}` on stderr with the exit code of its class, README "Exit
codes") and the parse/help/report frame are `tether.cli.output`'s. Heavy modules (YAML,
pydantic, CEL, the MCP SDK) are imported only by the commands that need them. It holds no
runtime logic of its own.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from tether.cli.args import Command, Parsed
from tether.cli.output import emit, report, run_command
from tether.errors import EXIT_OK, EXIT_USAGE, TetherError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_STEP = ("--step",)
_NOTE = ("--note", "--note-file")
_SET = ("--set", "--set-json")
_SET_HELP = (
    " --set PATH=VALUE writes $VAR with the answer, in the same commit and before it is judged "
    "(VALUE is JSON, else a string, as var parses it); --set-json PATH=JSON requires JSON. "
    "Either may be repeated. The response's `next` is the request that follows."
)

COMMANDS: dict[str, Command] = {
    c.name: c
    for c in (
        Command("validate", "check a tree file and print its summary", ("TREE",), 1),
        Command("schema", "print the tree files' JSON Schema (draft 2020-12)"),
        Command(
            "start",
            "start an execution of TREE at TRACE",
            ("TREE", "TRACE"),
            2,
            repeated=("--var", "--const"),
            flags=("--json",),
            help="--var/--const K=V set initial scope values (V is JSON, else a string; "
            "with --json it must be JSON).",
        ),
        Command("resume", "confirm an execution can be driven", ("TRACE",), 1),
        Command("reset", "clear the trace, restore the scopes, re-arm the protocol", ("TRACE",), 1),
        Command("next", "print the open request (replay-safe)", ("TRACE",), 1, flags=("--all",)),
        Command(
            "eval",
            "answer an evaluate step",
            ("TRACE", "RESULT"),
            2,
            values=(*_NOTE, *_STEP),
            repeated=_SET,
            help="RESULT is true or false." + _SET_HELP,
        ),
        Command(
            "submit",
            "answer an instruct step",
            ("TRACE", "STATUS"),
            2,
            values=(*_NOTE, *_STEP),
            repeated=_SET,
            help="STATUS is success, failure or running." + _SET_HELP,
        ),
        Command(
            "approve",
            "answer the open human step: approved (a person's answer, never an agent's)",
            ("TRACE",),
            1,
            values=(*_NOTE, *_STEP),
            help="--step names the human step when several are open.",
        ),
        Command(
            "reject",
            "answer the open human step: rejected, which fails its action",
            ("TRACE",),
            1,
            values=(*_NOTE, *_STEP),
            help="--step names the human step when several are open.",
        ),
        Command(
            "think",
            "record a checkpoint thought",
            ("TRACE", "THOUGHT"),
            1,
            values=("--file", *_STEP),
            flags=("--stdin",),
            texts=("THOUGHT",),
            help="THOUGHT is text; even one that begins with - (-h, --help) is the thought.",
        ),
        Command(
            "var",
            "read $VAR, or write PATH VALUE",
            ("TRACE", "PATH", "VALUE"),
            1,
            values=("--file", *_STEP),
            flags=("--json", "--stdin"),
            texts=("VALUE",),
            help="VALUE is JSON, else a string; --json requires JSON; --file/--stdin read it; "
            "--step records the write against that open step. A VALUE that begins with - is a "
            "value (-5, --help); put -- before one that is an option's name (-- --json). NaN, "
            "Infinity, text that is not UTF-8 and values nested over 100 levels are refused.",
        ),
        Command(
            "const", "read $CONST (read-only)", ("TRACE", "PATH", "VALUE"), 1, texts=("VALUE",)
        ),
        Command("get", "print the whole execution document", ("TRACE",), 1),
        Command(
            "trace",
            "print trace entries with FROM <= seq < TO",
            ("TRACE",),
            1,
            values=("--from", "--to"),
        ),
        Command("verify", "replay the trace and compare with the stored state", ("TRACE",), 1),
        Command(
            "fork",
            "start NEW from the first K entries of TRACE's trace, re-derived by replay",
            ("TRACE", "NEW"),
            2,
            values=("--at",),
            help="--at K (required) keeps the entries with seq < K, 0 to the trace's length; "
            "NEW may be in another store. TRACE is not changed; NEW records forked_from.",
        ),
    )
}


# Command families with parsers of their own: name -> ("module:function", summary). The function
# takes the arguments after the name and returns the exit code.
FAMILIES: dict[str, tuple[str, str]] = {
    "list": ("tether.cli.listing:main", "list the executions in a folder or a database"),
    "stats": ("tether.cli.stats:main", "figures across the executions of a folder or a database"),
    "guard": ("tether.guard.cli:main", "the guard over an agent's tool calls (see guard --help)"),
    "mcp": ("tether.mcp.cli:main", "serve the runtime over MCP, stdio or HTTP (tether mcp --help)"),
    "view": ("tether.viewer.cli:view_main", "serve the live viewer page for executions"),
    "show": ("tether.viewer.cli:show_main", "draw an execution's tree in the terminal"),
    "render": ("tether.viewer.cli:render_main", "write a tree or an execution as SVG"),
    "bot": ("tether.bot.cli:main", "bot tool surfaces: list tools, build a bot folder"),
    "test": ("tether.treetest.cli:main", "run recorded walks of trees without an agent"),
    "init": ("tether.cli.project:init_main", "write the examples and a guard configuration here"),
    "install": ("tether.cli.project:install_main", "install the agent skill (install skill)"),
}


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] in ("-h", "--help", "help"):
        sys.stdout.write(_overview())
        return EXIT_OK if args else EXIT_USAGE
    if args[0] == "--version":
        from tether import __version__

        sys.stdout.write(f"tether {__version__}\n")
        return EXIT_OK
    name, rest = args[0], args[1:]
    if name in FAMILIES:
        import importlib

        module, _, function = FAMILIES[name][0].partition(":")
        family_main: Callable[[list[str]], int] = getattr(importlib.import_module(module), function)
        return family_main(rest)
    command = COMMANDS.get(name)
    if command is None:
        import difflib

        close = difflib.get_close_matches(name, list(COMMANDS), n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        return report(TetherError("usage", f"unknown command {name!r}{hint}; see tether --help"))
    return run_command(command, rest, lambda parsed: _print(name, HANDLERS[name](parsed)))


def _print(name: str, result: Any) -> int:
    """Print a verb's result; `verify` exits with its class when the replay disagrees."""
    emit(result)
    if name == "verify" and not result["ok"]:
        return TetherError("verify_failed", "").exit_code
    return EXIT_OK


def _overview() -> str:
    lines = ["usage: tether COMMAND [ARGS]  (tether COMMAND --help for one command)", ""]
    lines += [f"  {c.name:<10} {c.summary}" for c in COMMANDS.values()]
    lines += [f"  {name:<10} {summary}" for name, (_, summary) in FAMILIES.items()]
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------------------------
# Handlers: turn parsed arguments into one verb call.


def _runtime() -> Any:
    from tether.verbs import Runtime

    return Runtime()


def _value_text(p: Parsed, positional: str) -> str | None:
    """A value from the positional, `--file PATH` or `--stdin` (exactly one of them)."""
    given = [s for s in (positional in p.args, "--file" in p.options, "--stdin" in p.flags) if s]
    if len(given) > 1:
        raise TetherError("usage", f"give {positional} once: as an argument, --file or --stdin")
    if "--file" in p.options:
        return _read_file(p.options["--file"])
    if "--stdin" in p.flags:
        return _utf8(sys.stdin.buffer.read(), "standard input")
    return p.args.get(positional)


def _read_file(path: str) -> str:
    try:
        with open(path, "rb") as f:
            return _utf8(f.read(), path)
    except FileNotFoundError:
        raise TetherError("not_found", f"file {path} does not exist", path=path) from None
    except OSError as exc:
        raise TetherError(
            "invalid_value", f"cannot read {path}: {exc.strerror}", path=path
        ) from None


def _utf8(data: bytes, source: str) -> str:
    """`data` decoded as UTF-8, or `invalid_value` naming `source` and the first bad byte."""
    try:
        return data.decode()
    except UnicodeDecodeError as exc:
        raise TetherError(
            "invalid_value",
            f"{source} is not UTF-8 text: byte 0x{data[exc.start]:02x} at offset {exc.start} "
            "is not valid UTF-8",
            source=source,
            offset=exc.start,
        ) from None


def _note(p: Parsed) -> str | None:
    if "--note" in p.options and "--note-file" in p.options:
        raise TetherError("usage", "give the note once: --note or --note-file")
    if "--note-file" in p.options:
        return _read_file(p.options["--note-file"])
    return p.options.get("--note")


def _assignments(pairs: list[str], option: str, strict: bool) -> dict[str, Any]:
    from tether.verbs import parse_value

    out: dict[str, Any] = {}
    for pair in pairs:
        key, eq, text = pair.partition("=")
        if not eq or not key:
            raise TetherError("usage", f"{option} takes KEY=VALUE, got {pair!r}")
        try:
            out[key] = parse_value(text, strict_json=strict)
        except TetherError as exc:
            raise TetherError(
                exc.code, f"{option} {key}: {exc.message}", option=option, key=key
            ) from None
    return out


def _validate(p: Parsed) -> Any:
    from tether.tree.load import load_tree

    tree = load_tree(str(p.args["TREE"]))
    return {
        "valid": True,
        "file": tree.source,
        "name": tree.data["name"],
        "version": tree.data["version"],
        "hash": tree.hash,
    }


def _schema(p: Parsed) -> Any:
    from tether.tree.schema import json_schema

    return json_schema()


def _start(p: Parsed) -> Any:
    strict = "--json" in p.flags
    return _runtime().start(
        str(p.args["TREE"]),
        str(p.args["TRACE"]),
        var=_assignments(p.multi.get("--var", []), "--var", strict),
        const=_assignments(p.multi.get("--const", []), "--const", strict),
    )


def _values(p: Parsed) -> dict[str, Any] | None:
    """The `--set`/`--set-json` writes of an answer (None when there are none); a path given
    twice is refused, so the order of the two options never matters."""
    plain = _assignments(p.multi.get("--set", []), "--set", False)
    strict = _assignments(p.multi.get("--set-json", []), "--set-json", True)
    given = [pair.partition("=")[0] for option in _SET for pair in p.multi.get(option, [])]
    twice = sorted({path for path in given if given.count(path) > 1})
    if twice:
        raise TetherError("usage", f"--set gives {', '.join(twice)} more than once")
    return {**plain, **strict} or None


def _eval(p: Parsed) -> Any:
    text = str(p.args["RESULT"]).lower()
    if text not in ("true", "false"):
        raise TetherError("usage", f"eval RESULT must be true or false, got {p.args['RESULT']!r}")
    return _runtime().eval(
        str(p.args["TRACE"]),
        text == "true",
        note=_note(p),
        step=p.options.get("--step"),
        values=_values(p),
    )


def _submit(p: Parsed) -> Any:
    status = str(p.args["STATUS"]).lower()
    if status not in ("success", "failure", "running"):
        raise TetherError(
            "usage", f"submit STATUS must be success, failure or running, got {p.args['STATUS']!r}"
        )
    return _runtime().submit(
        str(p.args["TRACE"]),
        status,
        note=_note(p),
        step=p.options.get("--step"),
        values=_values(p),
    )


def _human(approved: bool) -> Callable[[Parsed], Any]:
    def answer(p: Parsed) -> Any:
        runtime = _runtime()
        verb = runtime.approve if approved else runtime.reject
        return verb(str(p.args["TRACE"]), note=_note(p), step=p.options.get("--step"), by="cli")

    return answer


def _fork(p: Parsed) -> Any:
    text = p.options.get("--at")
    if text is None:
        raise TetherError("usage", "fork needs --at K: the number of trace entries to keep")
    try:
        at = int(text)
    except ValueError:
        raise TetherError("usage", f"--at takes a whole number, got {text!r}") from None
    return _runtime().fork(str(p.args["TRACE"]), str(p.args["NEW"]), at=at)


def _think(p: Parsed) -> Any:
    thought = _value_text(p, "THOUGHT")
    if not thought:
        raise TetherError("usage", "think needs a THOUGHT (an argument, --file or --stdin)")
    return _runtime().think(str(p.args["TRACE"]), thought, step=p.options.get("--step"))


def _var(p: Parsed) -> Any:
    from tether.verbs import parse_value

    trace = str(p.args["TRACE"])
    text = _value_text(p, "VALUE")
    if text is None:
        for given in ("--json", "--step"):
            if given in p.flags or given in p.options:
                raise TetherError(
                    "usage", f"{given} applies to a value to write; give PATH and VALUE"
                )
        return _runtime().var_read(trace, p.args.get("PATH"))
    path = p.args.get("PATH")
    if path is None:
        raise TetherError("usage", "writing $VAR needs a PATH before the value")
    value = parse_value(text, strict_json="--json" in p.flags)
    return _runtime().var_write(trace, path, value, step=p.options.get("--step"))


def _const(p: Parsed) -> Any:
    if "VALUE" in p.args:
        raise TetherError(
            "read_only", "$CONST is read-only after start (set it with start --const)"
        )
    return _runtime().const_read(str(p.args["TRACE"]), p.args.get("PATH"))


def _trace(p: Parsed) -> Any:
    return _runtime().trace(str(p.args["TRACE"]), start=p.number("--from"), stop=p.number("--to"))


HANDLERS: dict[str, Callable[[Parsed], Any]] = {
    "validate": _validate,
    "schema": _schema,
    "start": _start,
    "resume": lambda p: _runtime().resume(str(p.args["TRACE"])),
    "reset": lambda p: _runtime().reset(str(p.args["TRACE"])),
    "next": lambda p: _runtime().next(str(p.args["TRACE"]), all="--all" in p.flags),
    "eval": _eval,
    "submit": _submit,
    "think": _think,
    "var": _var,
    "const": _const,
    "get": lambda p: _runtime().get(str(p.args["TRACE"])),
    "trace": _trace,
    "verify": lambda p: _runtime().verify(str(p.args["TRACE"])),
    "approve": _human(True),
    "reject": _human(False),
    "fork": _fork,
}

if __name__ == "__main__":
    raise SystemExit(main())
