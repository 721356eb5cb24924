"""The CLI's output contract, shared by every `tether` sub-command family.

Owns:
- how a result looks on the terminal: indented JSON on stdout (`emit`), or a table unless
  `--json` asks for JSON (`show`);
- how an error looks: `{"error": {"code", "message", ...}}` on stderr, with the exit code of the
  error's class;
- the frames around a command: `guarded` reports what a command raises, `run_command` parses,
  prints help or runs a command's handler within it, and `run_family` does so for a family of
  sub-commands (`tether guard X`, `tether bot X`).
It does not parse (`tether.command.args`) or decide what a command does.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping

from tether.errors import EXIT_INTERNAL, EXIT_OK, EXIT_USAGE, TetherError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TextIO

    from tether.command.args import Command, Parsed

Handler = Callable[["Parsed"], int]


def emit(value: Any, stream: TextIO | None = None) -> None:
    """Write `value` as JSON (stdout unless another stream is given); a value JSON has no type
    for (a path, a date) is written as its text."""
    out = stream if stream is not None else sys.stdout
    out.write(json.dumps(value, ensure_ascii=False, indent=2, default=str) + "\n")


def show(parsed: Parsed, value: Any, table: Callable[[Any], str]) -> int:
    """Print `value` as JSON under `--json`, else as `table` draws it; the exit code of success."""
    if "--json" in parsed.flags:
        emit(value)
    else:
        sys.stdout.write(table(value))
    return EXIT_OK


def emit_error(error: Mapping[str, Any]) -> None:
    """Write an error document `{"error": error}` on stderr."""
    emit({"error": dict(error)}, sys.stderr)


def report(exc: BaseException) -> int:
    """Write `exc` as a JSON error on stderr; return the exit code for it."""
    if isinstance(exc, TetherError):
        emit_error(exc.to_dict())
        return exc.exit_code
    emit_error({"code": "internal", "message": f"{type(exc).__name__}: {exc}"})
    return EXIT_INTERNAL


def guarded(work: Callable[[], int]) -> int:
    """`work()`'s exit code; an error it raises is reported (`report`), Ctrl-C exits 130."""
    try:
        return work()
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # TetherError, and the last line of defence for anything else
        return report(exc)


def run_command(command: Command, argv: list[str], handler: Handler) -> int:
    """Parse `argv` for `command`, print its help or run `handler`, and report any error: the
    frame every `tether` sub-command family shares."""
    from tether.command.args import parse

    def work() -> int:
        parsed = parse(command, argv)
        if parsed.help:
            sys.stdout.write(command.help_text())
            return EXIT_OK
        return handler(parsed)

    return guarded(work)


def run_family(
    family: str,
    commands: Mapping[str, tuple[Command, Handler]],
    argv: list[str],
    footer: str = "",
) -> int:
    """`tether FAMILY SUB ARGS`: the overview for no SUB (exit 2) or `--help` (exit 0), a usage
    error for an unknown SUB, else `run_command` for SUB's command and handler."""
    if not argv or argv[0] in ("-h", "--help", "help"):
        lines = [f"usage: tether {family} COMMAND [ARGS]  (tether {family} COMMAND --help)", ""]
        lines += [f"  {name:<10} {command.summary}" for name, (command, _) in commands.items()]
        sys.stdout.write("\n".join(lines) + "\n" + (f"\n{footer}\n" if footer else ""))
        return EXIT_OK if argv else EXIT_USAGE
    entry = commands.get(argv[0])
    if entry is None:
        names = list(commands)
        listed = ", ".join(names[:-1]) + f" and {names[-1]}" if len(names) > 1 else names[0]
        return report(
            TetherError("usage", f"unknown {family} command {argv[0]!r}; the commands are {listed}")
        )
    return run_command(entry[0], argv[1:], entry[1])
