"""The Claude Code adapter: hook payloads in, Claude Code's hook output out.

Owns: mapping each hook event onto a guard session and each decision onto Claude Code's output
format. What Claude Code sends and writes is read by `claude` (the event names, the transcript:
whether the model wrote text before its first tool call of a turn, the last assistant message
when `Stop` does not carry it). It does not parse configuration or talk HTTP (the CLI and
`serve` do).

- `SessionStart`: `session_context()` (the system-prompt section, short unless the configuration
  says `context: full`), answered as `additionalContext`.
- `UserPromptSubmit`: `on_user_message(prompt)`; the directive as `additionalContext`.
- `PreToolUse`: `pre_tool(tool_name, tool_input)`; a block is `permissionDecision: deny` with
  the reason, a warning or reminder is `additionalContext`.
- `PostToolUse`: `post_tool(tool_name, tool_input, tool_response, ok=tool_ok(payload))`;
  `additionalContext`. How the call went is read once (`tool_ok`) for the rules and the evidence.
- `PostToolUseFailure`: `post_tool(..., error=error)`; no output (no rule runs on a failure).
- `Stop`, `SubagentStop`: `on_text(last_assistant_message)`; `decision: block` with the reason,
  except when `stop_hook_active` (the model is already continuing because of a stop hook).
- `SessionEnd`: the session's stored state is forgotten.

An event is handled once however many hooks deliver it (the plugin's and `tether guard install`'s,
say): `claude.delivery` names it (a tool call by its `tool_use_id`, a prompt by its `prompt_id`, a
stop by the transcript's last assistant entry, a start by its source and the transcript's size),
and a repeat gets no answer (`SessionStore.first_delivery`).

A session bound to an execution (`binding`) also gets, on top of the rules: its current request
as context at `SessionStart` and `UserPromptSubmit`, a `deny` for a call outside the open step's
`tools` policy at `PreToolUse`, its calls recorded as evidence at `PostToolUse` and
`PostToolUseFailure`, and a refused `Stop` while the execution runs.
"""

from __future__ import annotations

import os
from typing import Any

from tether.guard.binding.binder import Binder, project_dir
from tether.guard.harness.claude import (
    SESSION_EVENTS,
    delivery,
    installed_hooks,
    last_assistant_text,
    text_since_prompt,
    tool_ok,
    twice,
)
from tether.guard.harness.session_store import SessionStore
from tether.guard.rules.engine import Decision, Guard


def _installed_twice(project: str) -> str | None:
    """When run by Tether's plugin (its launcher sets `TETHER_CLAUDE_PLUGIN`) in a project that
    also has the guard's hooks installed: what to tell the user."""
    plugin = os.environ.get("TETHER_CLAUDE_PLUGIN")
    if not plugin:
        return None
    from pathlib import Path

    hooks = installed_hooks(Path(project))
    return twice(hooks, f"loaded from {plugin}") if hooks else None


def _context(event: str, text: str) -> dict[str, Any]:
    return {"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}}


def _tool_output(event: str, decision: Decision) -> dict[str, Any] | None:
    if not decision.firings:
        return None
    if decision.blocked:
        return {
            "hookSpecificOutput": {
                "hookEventName": event,
                "permissionDecision": "deny",
                "permissionDecisionReason": decision.text,
            }
        }
    return _context(event, decision.text)


def _joined(*parts: str | None) -> str:
    return "\n\n".join(p for p in parts if p)


def handle(
    payload: dict[str, Any],
    guard: Guard,
    store: SessionStore,
    binder: Binder | None = None,
) -> dict[str, Any] | None:
    """The hook output for one payload, or None when there is nothing to say (or another hook
    delivered the same event first). `binder` holds the workflow binding (made from the guard's
    `workflow` settings when not given)."""
    event = payload.get("hook_event_name", "")
    session_id = str(payload.get("session_id") or "default")
    project = project_dir(payload)
    said = _installed_twice(project) if event == "SessionStart" else None
    told = {"systemMessage": said} if said else {}
    key = delivery(payload)
    if key is not None and not store.first_delivery(session_id, key):
        return told or None
    if binder is None:
        binder = Binder(guard.plan["workflow"], store.root, guard.plan.get("files", ()))
    if event == "SessionStart":
        text = _joined(guard.session_context(), binder.context(session_id, project))
        return {**(_context(event, text) if text else {}), **told} or None
    if event == "SessionEnd":
        store.end(session_id)
        return None
    if event not in SESSION_EVENTS:
        return None
    agent_id = payload.get("agent_id") or None
    cwd = payload.get("cwd") if isinstance(payload.get("cwd"), str) else None
    tool = str(payload.get("tool_name") or "")
    params = payload.get("tool_input")
    params = params if isinstance(params, dict) else {}
    response = payload.get("tool_response")
    with store.session(guard, session_id, agent_id, cwd) as session:
        known = session.state.events > 0  # evidence only from a session seen before this event
        if event == "UserPromptSubmit":
            decision = session.on_user_message(str(payload.get("prompt") or ""))
        elif event == "PreToolUse":
            transcript = payload.get("transcript_path")
            state = session.state
            if (
                transcript
                and not state.text_this_turn
                and state.tool_calls_this_turn == 0
                and text_since_prompt(str(transcript))
            ):
                session.note_text()
            decision = session.pre_tool(tool, params)
        elif event in ("PostToolUse", "PostToolUseFailure"):
            ok = tool_ok(payload)
            decision = session.post_tool(tool, params, response, payload.get("error"), ok=ok)
        else:
            said = payload.get("last_assistant_message")
            if not isinstance(said, str):
                transcript = payload.get("agent_transcript_path") or payload.get("transcript_path")
                said = last_assistant_text(str(transcript)) if transcript else ""
            decision = session.on_text(said)
    # The binding reads and writes the execution after the session's lock is released.
    if event == "UserPromptSubmit":
        text = _joined(decision.directive, binder.context(session_id, project))
        return _context(event, text) if text else None
    if event == "PreToolUse":
        refused = binder.pre_tool(session_id, project, tool, params)
        if refused is None:
            return _tool_output(event, decision)
        return {
            "hookSpecificOutput": {
                "hookEventName": event,
                "permissionDecision": "deny",
                "permissionDecisionReason": _joined(refused, decision.text),
            }
        }
    if event in ("PostToolUse", "PostToolUseFailure"):
        binder.post_tool(session_id, project, tool, params, response, ok=ok, known=known)
        return _tool_output(event, decision) if event == "PostToolUse" else None
    rules = decision.text if decision.firings and not payload.get("stop_hook_active") else None
    held = binder.stop(session_id, project) if event == "Stop" else None
    if held is not None and held.get("decision") == "block":
        return {**held, "reason": _joined(held["reason"], rules)}
    if rules:
        return {**(held or {}), "decision": "block", "reason": rules}
    return held
