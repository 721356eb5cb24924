"""Deciding one hook event: the guard's session and the workflow binding, answered in Claude
Code's hook format, which every harness's adapter maps to and from (`adapters`).

Owns: mapping each hook event onto a guard session and each decision onto that output format.
What Claude Code sends and writes is read by `claude` (the event names, the transcript: whether
the model wrote text before its first tool call of a turn, the last assistant message when `Stop`
does not carry it). It does not read bytes, keep the deadline or answer failures (the hook
pipeline, `pipeline`), parse configuration or talk HTTP (the CLI and `serve` do).

Each event has one handler (`HANDLERS`), which asks the rules for a decision while the session
is locked against other hook processes, then does the binding's part once the lock is released,
and answers with both:

- `SessionStart`: `session_context()` (the system-prompt section, short unless the configuration
  says `context: full`), answered as `additionalContext`.
- `UserPromptSubmit`: `on_user_message(prompt)`; the directive as `additionalContext`; a
  person's `tether: approve [STEP]` answers that human step (`Binder.prompt_answer`).
- `PreToolUse`: `pre_tool(tool_name, tool_input)`; a block is `permissionDecision: deny` with
  the reason, a warning or reminder is `additionalContext`.
- `PostToolUse`: `post_tool(tool_name, tool_input, tool_response, ok=tool_ok(payload))`;
  `additionalContext`. How the call went is read once (`tool_ok`) for the rules and the evidence.
- `PostToolUseFailure`: `post_tool(..., error=error)`; no output (no rule runs on a failure).
- `SubagentStart`: in a bound session, the sub-agent's name (the payload's `agent_id`) and how
  it claims a branch, as `additionalContext` (`Binder.subagent_context`).
- `Stop`, `SubagentStop`: `on_text(last_assistant_message)`; `decision: block` with the reason,
  except when `stop_hook_active` (the model is already continuing because of a stop hook). A
  `Stop` from a harness that cannot refuse it (`CANNOT_REFUSE`) is only recorded.
- `SessionEnd`: the session's stored state is forgotten.
- `ConfigChange`: a change to a settings file after which some event would no longer run the
  guard's hooks (`claude.coverage`: removed, or `disableAllHooks`, or the plugin disabled) is
  refused (`decision: block`): the running session keeps its settings. A change of the managed
  settings cannot be refused (Claude Code ignores the answer) and a skill is not a setting.

An event is handled once however many hooks deliver it (the plugin's and `tether guard install`'s,
say): `claude.delivery` names it (a tool call by its `tool_use_id`, a prompt by its `prompt_id`, a
stop by the message the harness sent with it, a start by its source and the transcript's size),
and a repeat gets no answer (`SessionStore.first_delivery`). A stop is not read from the
transcript (an agent can append to it, and a hook may read it before it is flushed): each hook
(`channel`) delivers each stop once, so a stop from a hook that already delivered the last one
alike is the next stop (`SessionStore.first_stop`), and another hook's delivery gets the answer
the first gave (`SessionStore.answer_of`): a repeated stop is never let through unanswered.

A session bound to an execution (`binding`) also gets, on top of the rules: its current request
as context at `SessionStart` and `UserPromptSubmit`, a `deny` for a call outside the open step's
`tools` policy at `PreToolUse`, its calls recorded as evidence at `PostToolUse` and
`PostToolUseFailure`, and a refused `Stop` while the execution runs. A sub-agent's events (those
whose payload carries `agent_id`) are its own: its calls meet the policy of the step it claimed
and are recorded naming it, and its `SubagentStop` is refused while that step is open.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from tether.guard.binding.binder import Binder, project_dir
from tether.guard.harness.claude import (
    coverage,
    delivery,
    installed_hooks,
    last_assistant_text,
    text_since_prompt,
    tool_ok,
    twice,
)
from tether.guard.harness.session_store import SessionStore
from tether.guard.rules.ruleset import Decision, Guard, GuardSession

# Set on a `Stop` payload by a harness that cannot refuse it (OpenCode's plugin): the session
# has ended, and a bound one records that (`Binder.ended`).
CANNOT_REFUSE = "stop_cannot_be_refused"


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


class _Event:
    """One hook event on its way through its handler: the payload's parts every handler reads,
    and the session, locked while a handler asks it for a decision (`locked`)."""

    def __init__(
        self, payload: dict[str, Any], guard: Guard, store: SessionStore, binder: Binder
    ) -> None:
        self.payload = payload
        self.name = str(payload.get("hook_event_name", ""))
        self.guard = guard
        self.store = store
        self.binder = binder
        self.session_id = str(payload.get("session_id") or "default")
        self.project = project_dir(payload)
        self.tool = str(payload.get("tool_name") or "")
        params = payload.get("tool_input")
        self.params: dict[str, Any] = params if isinstance(params, dict) else {}
        cwd = payload.get("cwd")
        self.cwd = cwd if isinstance(cwd, str) else None
        # The sub-agent the harness says sent the event (None: the main agent): its payload's
        # word, which nothing the agent writes reaches.
        agent = payload.get("agent_id")
        self.agent = agent if isinstance(agent, str) and agent else None

    def locked(self) -> AbstractContextManager[GuardSession]:
        """The session of this event's agent, locked against other hook processes until exit.
        The binding reads and writes the execution after it is released."""
        return self.store.session(self.guard, self.session_id, self.agent, self.cwd)


def _session_start(event: _Event) -> dict[str, Any] | None:
    text = _joined(
        event.guard.session_context(), event.binder.context(event.session_id, event.project)
    )
    return _context(event.name, text) if text else None


def _subagent_start(event: _Event) -> dict[str, Any] | None:
    """A sub-agent starts: in a bound session it is told its name and how to claim a branch
    (`Binder.subagent_context`)."""
    if event.agent is None:
        return None
    text = event.binder.subagent_context(event.session_id, event.project, event.agent)
    return _context(event.name, text) if text else None


def _session_end(event: _Event) -> None:
    event.store.end(event.session_id)


def _user_prompt(event: _Event) -> dict[str, Any] | None:
    prompt = str(event.payload.get("prompt") or "")
    with event.locked() as session:
        decision = session.on_user_message(prompt)
    answered = event.binder.prompt_answer(event.session_id, event.project, prompt)
    text = _joined(
        decision.directive, answered, event.binder.context(event.session_id, event.project)
    )
    return _context(event.name, text) if text else None


def _pre_tool(event: _Event) -> dict[str, Any] | None:
    with event.locked() as session:
        transcript = event.payload.get("transcript_path")
        state = session.state
        if (
            transcript
            and not state.text_this_turn
            and state.tool_calls_this_turn == 0
            and text_since_prompt(str(transcript))
        ):
            session.note_text()
        decision = session.pre_tool(event.tool, event.params)
    refused = event.binder.pre_tool(
        event.session_id, event.project, event.tool, event.params, event.cwd, event.agent
    )
    if refused is None:
        return _tool_output(event.name, decision)
    return {
        "hookSpecificOutput": {
            "hookEventName": event.name,
            "permissionDecision": "deny",
            "permissionDecisionReason": _joined(refused, decision.text),
        }
    }


def _post_tool(event: _Event) -> dict[str, Any] | None:
    """`PostToolUse` and `PostToolUseFailure`: the rules see the call, and a bound session
    records it as evidence (only for a session seen before this event: a sub-agent's first
    call counts when its session was)."""
    ok = tool_ok(event.payload)
    response = event.payload.get("tool_response")
    with event.locked() as session:
        known = session.state.events > 0 or (
            event.agent is not None and event.store.state(event.session_id).events > 0
        )
        error = event.payload.get("error")
        decision = session.post_tool(event.tool, event.params, response, error, ok=ok)
    event.binder.post_tool(
        event.session_id,
        event.project,
        event.tool,
        event.params,
        response,
        ok=ok,
        known=known,
        agent=event.agent,
    )
    return _tool_output(event.name, decision) if event.name == "PostToolUse" else None


def _stop(event: _Event) -> dict[str, Any] | None:
    """`Stop` and `SubagentStop`: the rules read the last message; a bound session may not stop
    while its execution runs, nor a sub-agent while it holds the claim on an open step."""
    said = event.payload.get("last_assistant_message")
    if not isinstance(said, str):
        transcript = event.payload.get("agent_transcript_path") or event.payload.get(
            "transcript_path"
        )
        said = last_assistant_text(str(transcript)) if transcript else ""
    with event.locked() as session:
        decision = session.on_text(said)
    if event.payload.get(CANNOT_REFUSE):  # the session has ended: record it, nothing to say
        event.binder.ended(event.session_id, event.project)
        return None
    rules = (
        decision.text if decision.firings and not event.payload.get("stop_hook_active") else None
    )
    sub = event.name == "SubagentStop"
    held = (
        event.binder.stop(
            event.session_id,
            event.project,
            background=_background(event.payload),
            agent=event.agent,
        )
        if not sub or event.agent is not None
        else None
    )
    if held is not None and held.get("decision") == "block":
        return {**held, "reason": _joined(held["reason"], rules)}
    if rules:
        return {**(held or {}), "decision": "block", "reason": rules}
    return held


def _background(payload: dict[str, Any]) -> bool:
    """Whether the harness says work still runs in the background (Claude Code's Stop input:
    `background_tasks`, a non-empty list). The hook's input is the harness's word, which the
    agent cannot write; anything but a non-empty list counts as none (the stop is counted)."""
    tasks = payload.get("background_tasks")
    return isinstance(tasks, list) and bool(tasks)


def _config_change(event: _Event) -> dict[str, Any] | None:
    if event.payload.get("source") in ("policy_settings", "skills"):
        return None
    from pathlib import Path

    from tether.guard.binding.registrations import managed_settings

    found = coverage(Path(event.project), managed_settings())
    missing = [name for name, sources in found["events"].items() if not sources]
    if not missing:
        return None
    changed = event.payload.get("file_path") or event.payload.get("source")
    off = f" ({', '.join(found['disabled'])} say disableAllHooks)" if found["disabled"] else ""
    return {
        "decision": "block",
        "reason": f"[Tether] This change of {changed} leaves {', '.join(missing)} without the "
        f"guard's hooks{off}, so it does not apply to this session. The guard's hooks are "
        "changed by a person: `tether guard doctor` says what is missing, `--fix` puts it back.",
    }


# Each event the guard answers, and its handler.
HANDLERS: dict[str, Callable[[_Event], dict[str, Any] | None]] = {
    "SessionStart": _session_start,
    "SubagentStart": _subagent_start,
    "UserPromptSubmit": _user_prompt,
    "PreToolUse": _pre_tool,
    "PostToolUse": _post_tool,
    "PostToolUseFailure": _post_tool,
    "Stop": _stop,
    "SubagentStop": _stop,
    "ConfigChange": _config_change,
    "SessionEnd": _session_end,
}


def handle(
    payload: dict[str, Any],
    guard: Guard,
    store: SessionStore,
    binder: Binder | None = None,
    channel: str | None = None,
) -> dict[str, Any] | None:
    """The hook output for one payload, or None when there is nothing to say (or another hook
    delivered the same event first). `binder` holds the workflow binding (made from the guard's
    `workflow` settings when not given); `channel` names the hook that delivers it (`serve`, `sdk`;
    by default Tether's plugin or an installed hook)."""
    channel = channel or ("plugin" if os.environ.get("TETHER_CLAUDE_PLUGIN") else "hook")
    if binder is None:
        binder = Binder(guard.plan["workflow"], store.root, guard.plan.get("files", ()))
    event = _Event(payload, guard, store, binder)
    said = _installed_twice(event.project) if event.name == "SessionStart" else None
    told = {"systemMessage": said} if said else {}
    key = delivery(payload)
    if key is not None and event.name in ("Stop", "SubagentStop"):
        return _stop_once(event, store, key, channel)
    if key is not None and not store.first_delivery(event.session_id, key):
        return told or None
    handler = HANDLERS.get(event.name)
    out = handler(event) if handler is not None else None
    return {**(out or {}), **told} or None


def _stop_once(event: _Event, store: SessionStore, key: str, channel: str) -> dict[str, Any] | None:
    """A stop handled once however many hooks deliver it (`SessionStore.first_stop`): another
    hook's delivery gets the answer the first gave, or is handled anew when none comes."""
    name = store.first_stop(event.session_id, key, channel)
    if name is None:
        found, answer = store.answer_of(event.session_id, store.last_stop(event.session_id, key))
        if found:
            return answer
        name = store.last_stop(event.session_id, key)
    out = _stop(event)
    store.answered(event.session_id, name, out)
    return out
