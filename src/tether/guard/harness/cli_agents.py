"""GitHub Copilot CLI, Qwen Code and Factory Droid: their hook events read as Claude Code's, and
the guard's answers written in each one's format.

Owns, for these three harnesses, the rows `adapters` adds to its tables (`EVENTS`, `INSTALLED`,
`TOOLS`, `PARAMS`), their readers (`READERS`: a payload in, Claude Code payloads out) and their
answers (`render`). It decides nothing (`hooks.handle` does) and writes no configuration
(`install`); each harness's own stop cap is in the capability table (`capabilities`).

What each harness really does, as seen in tests/field/test_copilot_cli.py, test_qwen_code.py
and test_droid.py (it wins over the documentation):
- Copilot CLI 1.0.102 (https://docs.github.com/en/copilot/reference/hooks-configuration):
  camelCase payloads that do not name their event, so the event is read from the payload's
  shape (`toolResult`: postToolUse; `toolName`: preToolUse; `stopReason`: agentStop; `prompt`:
  userPromptSubmitted; `source`: sessionStart; `reason`: sessionEnd), a `hookName` or
  `hook_event_name` where sent winning. `toolResult.resultType` is `success` for a shell
  command whatever its exit code; the exit code is the last line of `textResultForLlm`,
  `<shellId: N completed with exit code K>`, which Copilot writes after the command's output
  (so the output cannot stand in for it): that line is read, and a shell result without it
  (still running, detached) says nothing. `failure` is a failed call, `denied` one that never
  ran. A refused stop's reason comes back as a new prompt (`userPromptSubmitted`). Answers:
  `permissionDecision`/`permissionDecisionReason`, `decision: block` with `reason`,
  `additionalContext`. Repo hooks (`.github/hooks/*.json`) load in `copilot -p` only with
  `GITHUB_COPILOT_PROMPT_MODE_REPO_HOOKS=true`. It ends a turn itself at the 9th blocked stop
  in a row (8 refusals reach the model).
- Qwen Code 0.24.4 (https://qwenlm.github.io/qwen-code-docs/en/users/features/hooks/): Claude
  Code's events, fields and answers. A failed call comes as `PostToolUseFailure`, so any other
  call's `PostToolUse` is a success (a command sent to the background says nothing of its
  end). `UserPromptSubmit` also fires with an empty `prompt` after every tool turn; that one
  is not a prompt and is not read. It ends a turn at the 8th blocked stop in a row.
- Factory Droid 0.215.0 (https://docs.factory.ai/reference/hooks-reference): Claude Code's
  events, fields and answers; its tools are its own (`Execute`, `Create`, `Edit` with
  `old_str`/`new_str`). No hook fires for a call that fails (no failure event): such a call
  is read from Droid's transcript at the session's next event (`_droid_failures`: its result
  `is_error`, its `PreToolUse` hooks having let it run). `PostToolUse` of a command carries the
  text whose last line, `[Process exited with code K]`, Droid writes after the output, read as
  its exit code.
  `UserPromptSubmit` did not fire in `droid exec`. `Stop` carries no last message: it is read
  from Droid's transcript. It has no cap of its own on blocked stops (31 in a row were obeyed).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from tether.guard.harness.claude import TOOL_EVENTS, _entries_backwards

HARNESSES = ("copilot", "qwen", "droid")
NAMES = {"copilot": "Copilot CLI", "qwen": "Qwen Code", "droid": "Factory Droid"}
# The versions the field tests ran (scripts/install-test-deps-harnesses installs them).
# The blocked stop in a row at which a harness ends the turn itself, whatever the hook says.
_CLAUDE_SHAPED = ("SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop")
EVENTS: dict[str, dict[str, str]] = {
    "copilot": {
        "sessionStart": "SessionStart",
        "userPromptSubmitted": "UserPromptSubmit",
        "preToolUse": "PreToolUse",
        "postToolUse": "PostToolUse",
        "agentStop": "Stop",
        "sessionEnd": "SessionEnd",
    },
    "qwen": {n: n for n in (*_CLAUDE_SHAPED, "PostToolUseFailure", "SessionEnd")},
    "droid": {n: n for n in (*_CLAUDE_SHAPED, "SessionEnd")},
}
INSTALLED: dict[str, tuple[str, ...]] = {h: tuple(EVENTS[h]) for h in HARNESSES}
TOOLS: dict[str, dict[str, str]] = {
    "copilot": {
        "bash": "Bash",
        "view": "Read",
        "create": "Write",
        "edit": "Edit",
        "grep": "Grep",
        "glob": "Glob",
        "task": "Task",
        "web_fetch": "WebFetch",
    },
    "qwen": {
        "run_shell_command": "Bash",
        "read_file": "Read",
        "write_file": "Write",
        "edit": "Edit",
        "glob": "Glob",
        "grep_search": "Grep",
        "list_directory": "LS",
        "agent": "Task",
        "web_fetch": "WebFetch",
        "notebook_edit": "NotebookEdit",
    },
    "droid": {
        "Execute": "Bash",
        "Read": "Read",
        "Create": "Write",
        "Edit": "Edit",
        "LS": "LS",
        "Grep": "Grep",
        "Glob": "Glob",
        "Task": "Task",
        "FetchUrl": "WebFetch",
        "WebSearch": "WebSearch",
    },
}
PARAMS: dict[str, dict[str, str]] = {
    "copilot": {
        "path": "file_path",
        "file_text": "content",
        "old_str": "old_string",
        "new_str": "new_string",
    },
    "qwen": {"directory": "cwd"},
    "droid": {
        "old_str": "old_string",
        "new_str": "new_string",
        "change_all": "replace_all",
        "directory_path": "path",
    },
}
_COPILOT_EXIT = re.compile(r"\n<shellId: [^>\n]* completed with exit code (-?\d+)>\s*\Z")
_DROID_EXIT = re.compile(r"\n\[Process exited with code (-?\d+)\]\s*\Z")
# The payload keys that tell a Copilot CLI event whose payload does not name it, in order.
_COPILOT_SHAPES = (
    ("toolResult", "postToolUse"),
    ("toolName", "preToolUse"),
    ("stopReason", "agentStop"),
    ("prompt", "userPromptSubmitted"),
    ("source", "sessionStart"),
    ("reason", "sessionEnd"),
)


def native_event(harness: str, raw: dict[str, Any]) -> str | None:
    """The harness's own name of the event `raw` is (Copilot CLI's read from its shape)."""
    named = raw.get("hook_event_name") or (raw.get("hookName") if harness == "copilot" else None)
    if isinstance(named, str):
        return named
    if harness == "copilot":
        return next((event for key, event in _COPILOT_SHAPES if key in raw), None)
    return None


def as_claude(
    name: str, params: Any, tools: dict[str, str], renamed: dict[str, str]
) -> tuple[str, dict[str, Any]]:
    """A harness's tool call as Claude Code names it: the tool by `tools`, and each parameter
    `renamed` names given its Claude Code name too, beside its own (every harness's adapter)."""
    params = dict(params) if isinstance(params, dict) else {}
    for own, claude in renamed.items():
        if own in params and claude not in params:
            params[claude] = params[own]
    return tools.get(name, name), params


def _tool(harness: str, name: str, params: Any) -> tuple[str, dict[str, Any]]:
    return as_claude(name, params, TOOLS[harness], PARAMS[harness])


def parsed_json(value: Any) -> Any:
    """A value some harnesses send as JSON text, parsed (as it is when it is not JSON)."""
    if isinstance(value, str) and value[:1] in ("{", "["):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _exit(pattern: re.Pattern[str], text: Any) -> dict[str, Any]:
    """`exit_code` from the harness's own last line of a shell result (nothing without it)."""
    found = pattern.search(text) if isinstance(text, str) else None
    return {"exit_code": int(found[1])} if found else {}


def _last_text(transcript: Any, read: Callable[[dict[str, Any]], str]) -> str:
    """The last non-empty assistant text of a transcript, `read` from each entry."""
    if not isinstance(transcript, str) or not transcript:
        return ""
    return next((text for e in _entries_backwards(transcript) if (text := read(e))), "")


# -- Copilot CLI ---------------------------------------------------------------------------------


def _copilot_said(entry: dict[str, Any]) -> str:
    data = entry.get("data") if entry.get("type") == "assistant.message" else None
    return str(data.get("content") or "") if isinstance(data, dict) else ""


def _copilot(raw: dict[str, Any], event: str) -> list[dict[str, Any]]:
    cwd = raw.get("cwd")
    payload: dict[str, Any] = {
        "session_id": str(raw.get("sessionId") or raw.get("session_id") or "default"),
        "cwd": cwd if isinstance(cwd, str) else None,
        "hook_event_name": event,
    }
    if event == "UserPromptSubmit":
        payload["prompt"] = str(raw.get("prompt") or "")
    if event == "Stop":
        payload["stop_hook_active"] = bool(raw.get("stop_hook_active"))
        payload["last_assistant_message"] = _last_text(raw.get("transcriptPath"), _copilot_said)
    if event not in TOOL_EVENTS:
        return [payload]
    args = raw.get("toolArgs", raw.get("toolInput"))
    tool, params = _tool("copilot", str(raw.get("toolName") or ""), parsed_json(args))
    payload.update(tool_name=tool, tool_input=params)
    if event == "PostToolUse":
        given = raw.get("toolResult")
        result: dict[str, Any] = given if isinstance(given, dict) else {}
        kind, text = result.get("resultType"), result.get("textResultForLlm")
        if kind in ("denied", "rejected"):
            return []  # it never ran
        if kind == "failure":
            payload.update(hook_event_name="PostToolUseFailure", error=str(text or "failed"))
            return [payload]
        sign = _exit(_COPILOT_EXIT, text) if tool == "Bash" else {"success": kind == "success"}
        payload["tool_response"] = {"stdout": text, **sign}
    return [payload]


# -- Qwen Code and Factory Droid: Claude Code's shape ---------------------------------------------


def _droid_said(entry: dict[str, Any]) -> str:
    message = entry.get("message")
    if entry.get("type") != "message" or not isinstance(message, dict):
        return ""
    if message.get("role") != "assistant" or not isinstance(message.get("content"), list):
        return ""
    return "\n".join(
        str(b.get("text") or "")
        for b in message["content"]
        if isinstance(b, dict) and b.get("type") == "text"
    ).strip()


def _droid_failures(raw: dict[str, Any]) -> list[dict[str, Any]]:
    """The calls Droid's transcript shows failed (`is_error`) after its `PreToolUse` hooks let
    them run (each exit 0, no `deny`), with no `PostToolUse`: Droid fires no hook for them, so
    each is read at its next event as a `PostToolUseFailure` (handled once: its call's id).
    A call Droid refused itself, or a hook denied, never ran and is not among them."""
    transcript = raw.get("transcript_path")
    if not isinstance(transcript, str) or not transcript:
        return []
    failed: list[tuple[Any, Any]] = []
    ran: set[Any] = set()
    ended: set[Any] = set()
    calls: dict[Any, tuple[str, Any]] = {}
    for entry in _entries_backwards(transcript):
        message = entry.get("message") if entry.get("type") == "message" else None
        if isinstance(message, dict):
            _droid_entry(message, failed, ran, ended, calls)
    out = []
    for call, text in reversed(failed):
        if call in ran and call not in ended and call in calls:
            tool, params = _tool("droid", *calls[call])
            failure: dict[str, Any] = {k: raw[k] for k in ("session_id", "cwd") if k in raw}
            failure.update(hook_event_name="PostToolUseFailure", tool_use_id=call)
            out.append({**failure, "tool_name": tool, "tool_input": params, "error": str(text)})
    return out


def _droid_entry(
    message: dict[str, Any],
    failed: list[tuple[Any, Any]],
    ran: set[Any],
    ended: set[Any],
    calls: dict[Any, tuple[str, Any]],
) -> None:
    """One message of Droid's transcript, noted: a failed result, a call its `PreToolUse`
    hooks let run, a call whose `PostToolUse` ran, a call the model made."""
    hook, call = message.get("hookEventName"), message.get("hookToolCallId")
    results = message.get("hookResults") or []
    if hook == "PreToolUse" and all(
        r.get("exitCode") == 0 and "deny" not in str(r.get("stdout")) for r in results
    ):
        ran.add(call)
    if hook == "PostToolUse":
        ended.add(call)
    for block in message.get("content") or []:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "tool_result" and block.get("is_error"):
            failed.append((block.get("tool_use_id"), block.get("content") or "failed"))
        elif block.get("type") == "tool_use":
            calls[block.get("id")] = (str(block.get("name")), block.get("input"))


def _claude_shaped(harness: str, raw: dict[str, Any], event: str) -> list[dict[str, Any]]:
    failures = _droid_failures(raw) if harness == "droid" else []
    return [*failures, *_claude_payload(harness, raw, event)]


def _claude_payload(harness: str, raw: dict[str, Any], event: str) -> list[dict[str, Any]]:
    payload = {k: v for k, v in raw.items() if k != "transcript_path"}  # not Claude Code's
    payload["hook_event_name"] = event
    if event == "UserPromptSubmit" and not raw.get("prompt"):
        return []  # Qwen Code's after every tool turn: no prompt
    if event == "Stop" and not isinstance(raw.get("last_assistant_message"), str):
        payload["last_assistant_message"] = _last_text(raw.get("transcript_path"), _droid_said)
    if event not in (*TOOL_EVENTS, "PostToolUseFailure"):
        return [payload]
    tool, params = _tool(harness, str(raw.get("tool_name") or ""), raw.get("tool_input"))
    payload.update(tool_name=tool, tool_input=params)
    if event == "PostToolUseFailure":
        payload["error"] = str(raw.get("error") or "failed")
    elif event == "PostToolUse":
        payload["tool_response"] = _response(harness, tool, params, raw.get("tool_response"))
    return [payload]


def _response(harness: str, tool: str, params: dict[str, Any], response: Any) -> Any:
    """The response with Claude Code's signs: Qwen Code sends a failed call as
    `PostToolUseFailure`, so its `PostToolUse` is a success (but for a command left running in
    the background); Droid sends nothing for a failed call, and a command's end is its own last
    line."""
    body = response if isinstance(response, dict) else {"content": response}
    if harness == "droid":
        text = response if isinstance(response, str) else body.get("content")
        sign = _exit(_DROID_EXIT, text) if tool == "Bash" else {"success": True}
        return {**body, **sign}
    if tool == "Bash" and params.get("is_background"):
        return body
    return {**body, "success": True}


READERS: dict[str, Callable[[dict[str, Any], str], list[dict[str, Any]]]] = {
    "copilot": _copilot,
    "qwen": lambda raw, event: _claude_shaped("qwen", raw, event),
    "droid": lambda raw, event: _claude_shaped("droid", raw, event),
}


# -- answers -------------------------------------------------------------------------------------


def render(harness: str, event: dict[str, Any], out: dict[str, Any]) -> dict[str, Any] | None:
    """The answer in the harness's format, from the guard's Claude Code-shaped `out`: Qwen Code
    and Droid take Claude Code's; Copilot CLI its own flat fields."""
    if harness != "copilot":
        return out
    spec = out.get("hookSpecificOutput") or {}
    answer: dict[str, Any] = {}
    if spec.get("permissionDecision") == "deny":
        answer.update(
            permissionDecision="deny", permissionDecisionReason=spec["permissionDecisionReason"]
        )
    elif spec.get("additionalContext"):
        answer["additionalContext"] = spec["additionalContext"]
    if out.get("decision") == "block":
        answer.update(decision="block", reason=out.get("reason"))
    if out.get("systemMessage"):
        answer["systemMessage"] = out["systemMessage"]
    return answer or None
