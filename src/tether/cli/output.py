"""The CLI's output contract, shared by every `tether` sub-command family.

Owns how a result and an error look on the terminal: the result as indented JSON on stdout, an
error as `{"error": {"code", "message", ...}}` on stderr, and the exit code of the error's class;
and `run_command`, the parse/help/report frame around a command's handler.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TextIO

from tether.errors import EXIT_INTERNAL, EXIT_OK, TetherError

if TYPE_CHECKING:
    from tether.cli.args import Command, Parsed


def emit(value: Any, stream: TextIO | None = None) -> None:
    """Write `value` as JSON (stdout unless another stream is given)."""
    out = stream if stream is not None else sys.stdout
    out.write(json.dumps(value, ensure_ascii=False, indent=2) + "\n")


def report(exc: BaseException) -> int:
    """Write `exc` as a JSON error on stderr; return the exit code for it."""
    if isinstance(exc, TetherError):
        emit({"error": exc.to_dict()}, sys.stderr)
        return exc.exit_code
    emit({"error": {"code": "internal", "message": f"{type(exc).__name__}: {exc}"}}, sys.stderr)
    return EXIT_INTERNAL


def run_command(command: Command, argv: list[str], handler: Callable[[Parsed], int]) -> int:
    """Parse `argv` for `command`, print its help or run `handler`, and report any error: the
    frame every `tether` sub-command family shares."""
    from tether.cli.args import parse

    try:
        parsed = parse(command, argv)
        if parsed.help:
            sys.stdout.write(command.help_text())
            return EXIT_OK
        return handler(parsed)
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # TetherError, and the last line of defence for anything else
        return report(exc)
