"""What the guard does when it cannot decide: the `on_error` setting, its deadline, its error log.

Owns:
- The modes. `block` (the default): a `PreToolUse` the guard cannot decide (an exception, no
  decision within the deadline) is denied with Claude Code's documented output
  (`permissionDecision: "deny"`, the error as the reason, exit 0). When the guard cannot even
  start (its configuration or its command line cannot be read) it falls back on one rule, the
  built-in `confirm_destructive`, and warns on every call: destructive commands stay blocked, the
  agent can still read and edit (so the configuration can be fixed), and nobody misses that the
  guard is broken. `allow`: the call goes ahead (exit 1, the error on stderr: Claude Code's
  non-blocking error). Other events never block on an error (a blocked `Stop` would loop, a
  blocked prompt would be erased): they exit 1 whatever the mode.
- Which mode applies: the configuration's `on_error`, else the hook's `--on-error`, else `block`.
- The hook's deadline (`DEFAULT_DEADLINE`, kept by `tether.guard.rules.deadline.within`), below
  the harness's time-out, after which Claude Code would carry on without asking.
- That every error, in any mode, goes to the guard's error log (`tether.guardlog`, which owns the
  log and the state folder it is in), read back by `tether guard log`.
It does not decide tool calls (`hooks.handle` does) and parses no configuration.
"""

from __future__ import annotations

import time
from typing import Any

from tether.errors import TetherError
from tether.guard.rules.deadline import DeadlineExceeded
from tether.guardlog import record

ON_ERROR = ("block", "allow")
DEFAULT_ON_ERROR = "block"
DEFAULT_DEADLINE = 25.0
FALLBACK_SOURCE = "builtin (fallback: the guard could not start)"


def mode(configured: str | None, flag: str | None) -> str:
    """The mode that applies: the configuration's `on_error`, else `--on-error`, else `block`."""
    return configured or flag or DEFAULT_ON_ERROR


def _error(exc: BaseException) -> dict[str, Any]:
    if isinstance(exc, TetherError):
        return exc.to_dict()
    if isinstance(exc, DeadlineExceeded):
        return {"code": "internal", "message": str(exc)}
    return {"code": "internal", "message": f"{type(exc).__name__}: {exc}"}


def _deny(reason: str) -> dict[str, Any]:
    return {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": reason,
        }
    }


def _fallback(payload: dict[str, Any], message: str) -> tuple[str, dict[str, Any]]:
    """The answer of the fallback rule set (`confirm_destructive` alone) to a PreToolUse."""
    from tether.guard.rules.rule import DEFAULT_TRACKING, THRESHOLDS, builtin_rules
    from tether.guard.rules.ruleset import Guard

    rules = [
        {**rule, "source": FALLBACK_SOURCE}
        for rule in builtin_rules(THRESHOLDS)
        if rule["id"] == "confirm_destructive"
    ]
    plan = {
        "profile": None,
        "thresholds": dict(THRESHOLDS),
        "rules": rules,
        "tracking": DEFAULT_TRACKING,
        "classify_turns": False,
        "classifier": {},
        "brain": None,
        "use_agent_brain": False,
        "warnings": [],
    }
    params = payload.get("tool_input")
    decision = (
        Guard(plan)
        .session()
        .pre_tool(str(payload.get("tool_name") or ""), params if isinstance(params, dict) else {})
    )
    note = (
        f"tether guard cannot start: {message}. Until this is fixed it blocks destructive "
        "commands only (on_error: block); `tether guard log` lists every error."
    )
    if decision.blocked:
        return "fallback denied", _deny(f"{decision.text}\n\n{note}")
    context = {"hookEventName": "PreToolUse", "additionalContext": note}
    return "fallback allowed", {"systemMessage": note, "hookSpecificOutput": context}


class Attempt:
    """One hook event on its way to a decision: what is known when something fails."""

    def __init__(self, state_dir: str, flag: str | None, where: str = "hook") -> None:
        self.state_dir = state_dir
        self.flag = flag
        self.where = where
        self.payload: dict[str, Any] | None = None
        self.configured: str | None = None  # the configuration's on_error, once it is read
        self.started = False  # the configuration and the command line were read

    @property
    def mode(self) -> str:
        return mode(self.configured, self.flag)

    def log(self, outcome: str, error: dict[str, Any], **more: Any) -> None:
        """Write what became of this event (`outcome`) and why (`error`) to the error log."""
        payload = self.payload or {}
        record(
            self.state_dir,
            {
                "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "where": self.where,
                "event": payload.get("hook_event_name"),
                "session_id": payload.get("session_id"),
                **more,
                "outcome": outcome,
                "error": error,
            },
        )

    def failed(self, exc: BaseException) -> tuple[int, dict[str, Any] | None, dict[str, Any]]:
        """Log the error; return the exit code, the hook output (or None) and the error."""
        error = _error(exc)
        payload = self.payload or {}
        event = payload.get("hook_event_name")
        code: int
        out: dict[str, Any] | None = None
        if event == "PreToolUse" and self.mode == "block":
            code = 0
            denied = (
                "denied",
                _deny(
                    f"[BEHAVIOR BLOCKED] tether guard could not decide this call: "
                    f"{error['message']} (on_error: block; `tether guard log` has the details)"
                ),
            )
            try:
                outcome, out = denied if self.started else _fallback(payload, error["message"])
            except Exception:  # the fallback failed too: deny
                outcome, out = denied
        elif self.payload is None and self.mode == "block":
            code, outcome = 2, "blocked"  # the event is unknown: it may be a tool call
        else:
            code, outcome = 1, "allowed"
        self.log(outcome, error, tool=payload.get("tool_name"), on_error=self.mode)
        return code, out, error
