"""Tether's error type and the stable error codes every interface reports.

Owns: the `TetherError` exception, its stable `code` strings, and the mapping from a code to the
CLI exit-code class. It does not format output: the CLI and the MCP server each render a
`TetherError` in their own way (JSON on stderr, a tool error) from the same fields.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


# Exit-code classes, listed in the README.
EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_USAGE = 2
EXIT_INVALID = 3
EXIT_NOT_FOUND = 4
EXIT_CONFLICT = 5

_EXIT_BY_CODE: dict[str, int] = {
    "usage": EXIT_USAGE,
    "invalid_tree": EXIT_INVALID,
    "invalid_json": EXIT_INVALID,
    "invalid_value": EXIT_INVALID,
    "too_large": EXIT_INVALID,
    "invalid_path": EXIT_INVALID,
    "invalid_expression": EXIT_INVALID,
    "unknown_scheme": EXIT_INVALID,
    "corrupt_execution": EXIT_INVALID,
    "verify_failed": EXIT_INVALID,
    "forbidden": EXIT_INVALID,
    "work_limit": EXIT_INVALID,
    "not_found": EXIT_NOT_FOUND,
    "already_exists": EXIT_CONFLICT,
    "wrong_phase": EXIT_CONFLICT,
    "stale_step": EXIT_CONFLICT,
    "claimed": EXIT_CONFLICT,
    "execution_finished": EXIT_CONFLICT,
    "writes_missing": EXIT_CONFLICT,
    "check_failed": EXIT_CONFLICT,
    "read_only": EXIT_CONFLICT,
    "human_only": EXIT_CONFLICT,
    "timed_out": EXIT_CONFLICT,
    "internal": EXIT_INTERNAL,
    "store_unavailable": EXIT_INTERNAL,
    "missing_extra": EXIT_INTERNAL,
    "export_failed": EXIT_INTERNAL,
}


class TetherError(Exception):
    """A failure with a stable `code`, a human message and optional structured details."""

    def __init__(self, code: str, message: str, **details: Any) -> None:
        if code not in _EXIT_BY_CODE:
            raise ValueError(f"unknown error code {code!r}")
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details

    @property
    def exit_code(self) -> int:
        return _EXIT_BY_CODE[self.code]

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"code": self.code, "message": self.message}
        out.update(self.details)
        return out
