"""The verbs as commands: the grammar of each `tether VERB` and the verb call it makes.

Owns the verb command table (`COMMANDS`: positionals, options, flags and help of `validate`,
`schema`, `start`, `next`, `submit`, ... `fork`) and `HANDLERS`, which turn a parsed command line
into one call of the verb layer (`tether.verbs.Runtime`) and return its result. The `tether`
command (`tether.cli.main`) runs them and prints the result; the guard reads a `tether` command
line an agent ran, and replays it, through the same table and handlers, so there is one reading
of a verb's command line. It prints nothing and holds no runtime logic of its own.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from tether.command.args import Command, Parsed
from tether.errors import TetherError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_STEP = ("--step",)
_AGENT = ("--agent",)
_AGENT_HELP = (
    " --agent NAME names who answers: a branch's action claimed by an agent (tether claim) "
    "takes its answers only (`claimed`)."
)
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
            values=(*_NOTE, *_STEP, *_AGENT),
            repeated=_SET,
            help="RESULT is true or false." + _SET_HELP + _AGENT_HELP,
        ),
        Command(
            "submit",
            "answer an instruct step",
            ("TRACE", "STATUS"),
            2,
            values=(*_NOTE, *_STEP, *_AGENT),
            repeated=_SET,
            help="STATUS is success, failure or running." + _SET_HELP + _AGENT_HELP,
        ),
        Command(
            "claim",
            "claim a parallel branch's (or for_each item's) open action for one agent",
            ("TRACE",),
            1,
            values=(*_AGENT, *_STEP, "--lease"),
            help="--agent NAME (required) holds the action of the open step --step names (else "
            "the first) for --lease SECONDS (default 900), renewed by each of its answers; "
            "another agent is refused (`claimed`) until the lease lapses, then takes it over.",
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
    from tether.values import parse_value

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
        agent=p.options.get("--agent"),
    )


def _submit(p: Parsed) -> Any:
    status = str(p.args["STATUS"]).lower()
    from tether.engine.answers import SUBMIT_STATUSES

    if status not in SUBMIT_STATUSES:
        raise TetherError(
            "usage", f"submit STATUS must be success, failure or running, got {p.args['STATUS']!r}"
        )
    return _runtime().submit(
        str(p.args["TRACE"]),
        status,
        note=_note(p),
        step=p.options.get("--step"),
        values=_values(p),
        agent=p.options.get("--agent"),
    )


def _claim(p: Parsed) -> Any:
    from tether.verbs import LEASE_SECONDS

    agent = p.options.get("--agent")
    if not agent:
        raise TetherError("usage", "claim needs --agent NAME: the agent that holds the action")
    lease = p.number("--lease", LEASE_SECONDS)
    return _runtime().claim(
        str(p.args["TRACE"]), agent, step=p.options.get("--step"), lease=lease or 0
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
    from tether.values import parse_value

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
    "claim": _claim,
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
