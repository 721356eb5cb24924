"""The CLI's output contract, shared by every `tether` sub-command family.

Owns how a result and an error look on the terminal: the result as indented JSON on stdout, an
error as `{"error": {"code", "message", ...}}` on stderr, and the exit code of the error's class.
"""

from __future__ import annotations

import json
import sys
from typing import Any, TextIO

from tether.errors import EXIT_INTERNAL, TetherError


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
