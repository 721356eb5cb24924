"""The Claude Code adapter: hook payloads in, Claude Code's hook output out.

Owns: mapping each hook event onto a guard session and each decision onto Claude Code's output
format, plus the two small reads of the session transcript that hooks need (whether the model
wrote text before its first tool call of a turn; the last assistant message when `Stop` does not
carry it). It does not parse configuration or talk HTTP (the CLI and `serve` do).

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
say): `delivery` names it (a tool call by its `tool_use_id`, a prompt by its `prompt_id`, a stop
by the transcript's last assistant entry, a start by its source and the transcript's size), and a
repeat gets no answer (`SessionStore.first_delivery`).

A session bound to an execution (`binding`) also gets, on top of the rules: its current request
as context at `SessionStart` and `UserPromptSubmit`, a `deny` for a call outside the open step's
`tools` policy at `PreToolUse`, its calls recorded as evidence at `PostToolUse` and
`PostToolUseFailure`, and a refused `Stop` while the execution runs.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

from tether.guard.binding.binder import Binder, project_dir
from tether.guard.harness.session_store import SessionStore
from tether.guard.rules.engine import Decision, Guard
from tether.guard.rules.state import outcome

TAIL_BYTES = 256 * 1024
TOOL_EVENTS = ("PreToolUse", "PostToolUse", "PostToolUseFailure")
SESSION_EVENTS = ("UserPromptSubmit", *TOOL_EVENTS, "Stop", "SubagentStop")
EVENTS = ("SessionStart", *SESSION_EVENTS, "SessionEnd")
# The harness's own name of the event, set by `harness.events` on a payload of another harness:
# a payload without it is Claude Code's.
NATIVE = "harness_event"


def _entries_backwards(path: str) -> Iterator[dict[str, Any]]:
    """The transcript's last entries, newest first (a bounded read of the file's tail)."""
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - TAIL_BYTES))
            chunk = handle.read()
    except OSError:
        return
    lines = chunk.decode("utf-8", errors="replace").splitlines()
    if size > TAIL_BYTES:
        lines = lines[1:]
    for line in reversed(lines):
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict):
            yield entry


def _blocks(entry: dict[str, Any]) -> list[Any]:
    content = (entry.get("message") or {}).get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return content if isinstance(content, list) else []


def is_user_prompt(entry: dict[str, Any]) -> bool:
    """A transcript entry that is a message the user typed (not a tool result)."""
    if entry.get("type") != "user" or entry.get("isMeta"):
        return False
    blocks = _blocks(entry)
    return bool(blocks) and not any(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in blocks
    )


def assistant_text(entry: dict[str, Any]) -> str:
    """The text blocks of an assistant transcript entry, joined."""
    if entry.get("type") != "assistant":
        return ""
    return "\n".join(
        b.get("text", "")
        for b in _blocks(entry)
        if isinstance(b, dict) and b.get("type") == "text" and b.get("text", "").strip()
    )


def text_since_prompt(transcript: str) -> bool:
    """Whether the model wrote any text since the user's last prompt."""
    for entry in _entries_backwards(transcript):
        if is_user_prompt(entry):
            return False
        if assistant_text(entry):
            return True
    return False


def last_assistant_text(transcript: str) -> str:
    for entry in _entries_backwards(transcript):
        if is_user_prompt(entry):
            return ""
        text = assistant_text(entry)
        if text:
            return text
    return ""


def tool_ok(payload: dict[str, Any]) -> bool | None:
    """How a call went (DESIGN: evidence never claims more than it saw): False for
    `PostToolUseFailure`, else what its response says (`state.outcome`, which an adapter of
    another harness fills in where that harness gave a sign), else True for Claude Code's own
    `PostToolUse` (it sends `PostToolUseFailure` for a call that failed), else None."""
    if payload.get("hook_event_name") == "PostToolUseFailure":
        return False
    ok = outcome(payload.get("tool_response"))
    return True if ok is None and NATIVE not in payload else ok


def last_assistant_uuid(transcript: str) -> str | None:
    """The `uuid` of the transcript's last assistant entry (Claude Code writes it before `Stop`)."""
    for entry in _entries_backwards(transcript):
        if entry.get("type") == "assistant" and isinstance(entry.get("uuid"), str):
            return str(entry["uuid"])
    return None


def delivery(payload: dict[str, Any]) -> str | None:
    """What makes this event one, whichever hook delivers it (None: nothing does)."""
    event = payload.get("hook_event_name", "")
    if event in TOOL_EVENTS:
        call = payload.get("tool_use_id")
        params = payload.get("tool_input")
        target = params.get("file_path") if isinstance(params, dict) else None
        return f"{event} {call} {payload.get('tool_name')} {target}" if call else None
    if event == "UserPromptSubmit":
        prompt = payload.get("prompt_id")
        return f"{event} {prompt}" if prompt else None
    transcript = payload.get("agent_transcript_path") or payload.get("transcript_path")
    if not isinstance(transcript, str) or not transcript:
        return None
    if event in ("Stop", "SubagentStop"):
        entry = last_assistant_uuid(transcript)
        return f"{event} {payload.get('agent_id')} {entry}" if entry else None
    if event == "SessionStart":
        try:
            size = os.stat(transcript).st_size
        except OSError:
            size = 0
        return f"{event} {payload.get('source')} {size}"
    return None


def _installed_twice(project: str) -> str | None:
    """When run by Tether's plugin (its launcher sets `TETHER_CLAUDE_PLUGIN`) in a project that
    also has the guard's hooks installed: what to tell the user."""
    plugin = os.environ.get("TETHER_CLAUDE_PLUGIN")
    if not plugin:
        return None
    from pathlib import Path

    from tether.guard.harness.install import installed_hooks, twice

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
