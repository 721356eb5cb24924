"""Codex, Gemini CLI and Cursor (and, through `cli_agents`, Copilot CLI, Qwen Code and Factory
Droid): their hook events read as Claude Code's, the answers written back
in each one's own format.

Owns, for each harness other than Claude Code: which of its hook events the guard answers and as
which Claude Code event (`EVENTS`; `INSTALLED` are the ones `tether guard install` writes), its
tool names and parameters as Claude Code's (`TOOLS`, `PARAMS`: so rules, `tools` policies and
`TOOLS` checks written with `Bash`, `Edit`, `Read` apply unchanged), every harness's tools by
those names (`tool_names`, Claude Code's own included), the payload read as one or
more Claude Code payloads (`events`), and the guard's Claude Code-shaped answer written in the
harness's format (`render`, `answer`). It decides nothing (`hooks.handle` does) and writes no
configuration (`install`). Claude Code's payloads and answers pass through unchanged.

What each mapping follows:
- Codex: https://developers.openai.com/codex/hooks and the schemas in
  https://github.com/openai/codex/tree/main/codex-rs/hooks/schema/generated. Events, fields and
  answers are Claude Code's; edits come as `apply_patch`, whose patch is read into one `Write`
  (`*** Add File:`) or `Edit` (`*** Update File:`, `*** Delete File:`) event per file, and a
  `Write` of the destination of an update's `*** Move to:`, so both paths meet the policy; a
  `Bash` line that hands `apply_patch` a patch gets the same events beside its own.
  What Codex 0.171 really does (seen in tests/field/test_codex.py; it wins over its docs):
  - `transcript_path` is the session's JSONL transcript, not null. A shell call's or a patch's
    `PostToolUse` `tool_response` is a bare string, no exit code: how the call ended is read
    from the transcript (its `item_completed` event: a command's `exit_code`, a patch's
    `status`) into a Claude Code-shaped `{"stdout", "exit_code"}` or `{"stdout", "success"}`;
    when the transcript does not say, the bare string stays, no sign of success.
  - A patch's file header indented by spaces still names a file (read so here too).
  - No `PostToolUse` for a patch that fails to apply or a command still running when
    `exec_command` yields; no hook at all for `write_stdin` (what is typed into a running
    command, such as an interactive `bash`).
  - With its sandbox on (strict mode, tests/field/test_codex_strict.py), no `item_completed`
    in the transcript for a command whose output Codex reads as the sandbox's refusal ("Read-only
    file system", "Operation not permitted"): its evidence has no sign of how it went.
  - A patch run through the shell (`[cd DIR &&] apply_patch <<'EOF'`), which Codex applies
    itself, comes as `Bash` alone, with no `PostToolUse`: its files are read here too.
  - A denial reaches the model as the call's output ("Command blocked by PreToolUse hook:
    REASON"), a refused stop's reason as a user message, context as a developer message;
    `codex exec` shows the user no `systemMessage`.
  - A sub-agent's events carry the parent's `session_id` (with its own `agent_id` and
    transcript), so the binding holds it too; its tools keep Codex's names, spelled unevenly
    (`spawn_agent`, but `multi_agent_v1wait_agent`).
- Gemini CLI: https://geminicli.com/docs/hooks/reference and its source
  (`packages/core/src/hooks/types.ts`, `core/coreToolHookTriggers.ts`,
  `tools/definitions/base-declarations.ts`). `BeforeTool` has no context field, so a warning
  before a call reaches the user (`systemMessage`), not the model. Seen in the real Gemini CLI
  0.61 (tests/field/test_gemini_cli.py), beyond the documentation: a failing shell command's
  `AfterTool` sets no `tool_response.error`, its exit code is only a section of `llmContent`,
  and `llmContent` comes wrapped in `<untrusted_context>` (`_gemini_response` reads through).
- Cursor: https://cursor.com/docs/agent/hooks, read through third-party notes (the primary page
  was not available in full): answers are `permission`/`agent_message`, `additional_context`
  and `followup_message`; `stop` cannot refuse, it queues a follow-up message. There is no
  Cursor command line to try here, so it stays on those payloads.

What a harness gave as a sign of how a call went is written into the Claude Code-shaped
`tool_response` (`exit_code`, `is_error`, `success`, `interrupted`), where `claude.tool_ok` reads
it; a response given no sign makes the evidence `ok: null`.

The project of an event (where a relative `--config` is found and relative traces resolve) is
the nearest folder at or above its working folder (Cursor: its first workspace root) holding the
configuration, else that folder: Codex runs hooks in the session's folder, which may be below it.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable
from typing import Any

from tether.guard.harness import cli_agents
from tether.guard.harness.claude import NATIVE, TOOL_EVENTS
from tether.guard.rules.plan import DEFAULT_CONFIG

HARNESSES = ("claude", "codex", "gemini", "cursor", *cli_agents.HARNESSES)
CODEX_EVENTS = ("SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop")
EVENTS: dict[str, dict[str, str]] = {
    "codex": {name: name for name in (*CODEX_EVENTS, "SubagentStop")},
    "gemini": {
        "SessionStart": "SessionStart",
        "BeforeAgent": "UserPromptSubmit",
        "BeforeTool": "PreToolUse",
        "AfterTool": "PostToolUse",
        "AfterAgent": "Stop",
        "SessionEnd": "SessionEnd",
    },
    "cursor": {
        "sessionStart": "SessionStart",
        "beforeSubmitPrompt": "UserPromptSubmit",
        "preToolUse": "PreToolUse",
        "postToolUse": "PostToolUse",
        "postToolUseFailure": "PostToolUseFailure",
        "stop": "Stop",
        "sessionEnd": "SessionEnd",
        # Read too, not installed: Cursor fires them beside preToolUse/postToolUse.
        "beforeShellExecution": "PreToolUse",
        "afterShellExecution": "PostToolUse",
        "beforeMCPExecution": "PreToolUse",
        "afterMCPExecution": "PostToolUse",
        "beforeReadFile": "PreToolUse",
        "afterFileEdit": "PostToolUse",
    },
    **cli_agents.EVENTS,
}
INSTALLED: dict[str, tuple[str, ...]] = {
    "codex": (*CODEX_EVENTS, "SubagentStop"),
    "gemini": tuple(EVENTS["gemini"]),
    "cursor": tuple(EVENTS["cursor"])[:7],
    **cli_agents.INSTALLED,
}
TOOLS: dict[str, dict[str, str]] = {
    "codex": {},  # Bash and mcp__server__tool as Claude Code; apply_patch is read per file
    "gemini": {
        "run_shell_command": "Bash",
        "read_file": "Read",
        "read_many_files": "Read",
        "replace": "Edit",
        "write_file": "Write",
        "glob": "Glob",
        "grep_search": "Grep",
        "search_file_content": "Grep",
        "list_directory": "LS",
        "web_fetch": "WebFetch",
        "google_web_search": "WebSearch",
    },
    "cursor": {
        "Shell": "Bash",
        "Read": "Read",
        "Write": "Write",
        "Edit": "Edit",
        "StrReplace": "Edit",
        "MultiEdit": "Edit",
        "Delete": "Edit",
        "Grep": "Grep",
        "Glob": "Glob",
        "LS": "LS",
        "Task": "Task",
        "WebFetch": "WebFetch",
        "WebSearch": "WebSearch",
    },
    **cli_agents.TOOLS,
}
# Claude Code's own tools: 2.1.332's, as its requests to the model list them (deferred ones
# included), and those of an interactive session. It has no Grep, Glob or LS: it searches
# through Bash.
CLAUDE_CODE_TOOLS = (
    *("Agent", "Bash", "Edit", "Read", "Write", "Skill", "ToolSearch", "WebFetch", "WebSearch"),
    *("NotebookEdit", "TodoWrite", "AskUserQuestion", "EnterPlanMode", "ExitPlanMode"),
    *("Workflow", "ListAgents", "ReportFindings", "ScheduleWakeup", "SendMessage", "Monitor"),
    *("TaskStop", "CronCreate", "CronDelete", "CronList", "EnterWorktree", "ExitWorktree"),
)
# What Codex's hooks report: its shell as Bash, apply_patch as Write or Edit (MCP tools aside).
CODEX_TOOLS = ("Bash", "Write", "Edit")


def tool_names() -> dict[str, tuple[str, ...]]:
    """Each supported harness's tools, by the Claude Code names rules and policies use."""
    return {
        "claude": CLAUDE_CODE_TOOLS,
        "codex": CODEX_TOOLS,
        **{
            h: tuple(sorted(set(TOOLS[h].values())))
            for h in ("gemini", "cursor", *cli_agents.HARNESSES)
        },
    }


# A parameter's Claude Code name, added beside the harness's own when the call lacks it.
PARAMS: dict[str, dict[str, str]] = {
    "codex": {},
    "gemini": {"dir_path": "path", "allow_multiple": "replace_all", "include_pattern": "glob"},
    "cursor": {"path": "file_path", "target_file": "file_path", "contents": "content"},
    **cli_agents.PARAMS,
}
_GEMINI_SECTION = re.compile(r"^(Error|Exit Code|Signal|Background PIDs|Process Group PGID): ")
_GEMINI_CANCELLED = re.compile(r"Command was (automatically )?cancelled")
_GEMINI_UNTRUSTED = re.compile(r"<untrusted_context>\n(.*)\n</untrusted_context>", re.DOTALL)
# Codex reads a file header indented too. It reads `*** Move to:` only at the start of a line;
# read indented as well, it can only add a path to hold to the policy. (Paths are taken to the
# line's end and stripped in code: a lazy group before `[ \t]*$` is quadratic on long lines.)
_PATCH_FILE = re.compile(r"^[ \t]*\*\*\* (Add|Update|Delete) File: ([^\n]+)", re.MULTILINE)
_PATCH_MOVE = re.compile(r"^[ \t]*\*\*\* Move to: ([^\n]+)", re.MULTILINE)
_APPLY_PATCH = re.compile(r"\b(?:apply_patch|applypatch)\b")
_SHELL_CD = re.compile(r"\s*cd\s+('[^']*'|\"[^\"]*\"|[^\s;&|]+)\s*&&")
# A call's end is read from the last 4 MiB of Codex's transcript, for up to half a second.
_TRANSCRIPT_TAIL = 4 << 20
_TRANSCRIPT_TRIES = 10
_URL = re.compile(r"https?://[^\s\"'<>]+")


def events(harness: str, raw: dict[str, Any], config: str | None) -> list[dict[str, Any]]:
    """The Claude Code payloads of one event of `harness`: none for an event the guard does not
    answer, several for a Codex patch touching several files. `config` is the configuration as
    the hook was given it (a relative one marks the project; default `.tether/guard.yaml`)."""
    if harness == "claude":
        return [raw]
    native = cli_agents.native_event(harness, raw)
    event = EVENTS[harness].get(native) if isinstance(native, str) else None
    if event is None:
        return []
    found = _READERS[harness](raw, event)
    if found:
        marker = config if config and not os.path.isabs(config) else DEFAULT_CONFIG
        root = _project(str(found[0].get("cwd") or os.getcwd()), marker)
        for payload in found:
            payload.update({"cwd": root, NATIVE: native})
    return found


def _project(cwd: str, marker: str) -> str:
    folder = os.path.abspath(cwd)
    while True:
        if os.path.exists(os.path.join(folder, marker)):
            return folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return os.path.abspath(cwd)
        folder = parent


def _base(raw: dict[str, Any], event: str, session: Any, cwd: Any) -> dict[str, Any]:
    out = {
        "session_id": str(session or "default"),
        "cwd": cwd if isinstance(cwd, str) else None,
        "hook_event_name": event,
    }
    for key in ("agent_id", "agent_type", "prompt", "stop_hook_active", "last_assistant_message"):
        if key in raw:
            out[key] = raw[key]
    return out


_json = cli_agents.parsed_json


def _tool(harness: str, name: str, params: Any) -> tuple[str, dict[str, Any]]:
    """A harness's tool call as Claude Code names it."""
    return cli_agents.as_claude(name, params, TOOLS[harness], PARAMS[harness])


# -- Codex ---------------------------------------------------------------------------------------


def _codex(raw: dict[str, Any], event: str) -> list[dict[str, Any]]:
    payload = {k: v for k, v in raw.items() if k != "transcript_path"}  # not Claude Code's format
    response = raw.get("tool_response")
    if event == "PostToolUse" and isinstance(response, str):
        sign = _outcome(raw.get("transcript_path"), raw.get("tool_use_id"))
        payload["tool_response"] = {"stdout": response, **sign} if sign else response
    params = payload.get("tool_input")
    text = str(params.get("command") if isinstance(params, dict) else params)
    cwd = str(raw.get("cwd") or os.getcwd())
    if payload.get("tool_name") == "apply_patch":
        return [{**payload, "tool_name": tool, "tool_input": p} for tool, p in _patch(text, cwd)]
    shell = _shell_patch(text, cwd) if payload.get("tool_name") == "Bash" else []
    return [payload, *({**payload, "tool_name": tool, "tool_input": p} for tool, p in shell)]


def _shell_patch(command: str, cwd: str) -> list[tuple[str, dict[str, Any]]]:
    """The files of a patch a shell line hands `apply_patch` (Codex applies `[cd DIR &&]
    apply_patch <<'EOF'` itself, as a patch), read as a patch's are, against DIR; as one Edit
    naming no file when another `cd` may have moved the shell first."""
    start = command.find("*** Begin Patch")
    before = command[: max(start, 0)]
    if start < 0 or not _APPLY_PATCH.search(before):
        return []
    end = command.find("*** End Patch", start)
    text = command[start : end + len("*** End Patch")] if end >= 0 else command[start:]
    cd = _SHELL_CD.match(before)
    if len(re.findall(r"\b(?:cd|pushd|popd)\b", before)) > (1 if cd else 0):
        return [("Edit", {"patch": text})]
    return _patch(text, os.path.join(cwd, cd.group(1).strip("'\"")) if cd else cwd)


def _outcome(transcript: Any, call: Any) -> dict[str, Any]:
    """How a call ended, as Codex recorded it in the session's transcript (its `PostToolUse`
    gives a shell call's output alone): the `exit_code` of a command, else the `success` of a
    patch, from the `item_completed` event of the call. Nothing when the transcript does not
    say; Codex writes the event before the hook runs, so a missing one is waited for briefly."""
    if not (isinstance(transcript, str) and isinstance(call, str) and os.path.isfile(transcript)):
        return {}
    for _ in range(_TRANSCRIPT_TRIES):
        item = _completed(transcript, call)
        if item is not None:
            code, status = item.get("exit_code"), item.get("status")
            if isinstance(code, int) and not isinstance(code, bool):
                return {"exit_code": code}
            if status in ("completed", "failed", "declined"):
                return {"success": status == "completed"}
            return {}
        time.sleep(0.05)
    return {}


def _completed(transcript: str, call: str) -> dict[str, Any] | None:
    """The item of the first `item_completed` event of `call` in the transcript's tail (None:
    not there). Codex writes it before the hook runs, so a later line for the same call is
    not the harness's (an agent can append to its own transcript): the tail is read from the
    end in growing spans until it holds the call's start, and the first event after it wins."""
    needle, span = json.dumps(call).encode(), 1 << 16
    try:
        with open(transcript, "rb") as file:
            size = os.fstat(file.fileno()).st_size
            while True:
                span = min(span, size, _TRANSCRIPT_TAIL)
                file.seek(size - span)
                lines = file.read(span).splitlines()
                lines = [line for line in (lines[1:] if span < size else lines) if needle in line]
                whole = span >= min(size, _TRANSCRIPT_TAIL)
                if whole or (lines and b'"item_completed"' not in lines[0]):  # the call's start
                    return next(filter(None, (_item(line, call) for line in lines)), None)
                span *= 4
    except OSError:
        return None


def _item(line: bytes, call: str) -> dict[str, Any] | None:
    """The item of `line` when it is the `item_completed` event of `call`."""
    if b'"item_completed"' not in line:
        return None
    try:
        item = json.loads(line)["payload"]["item"]
    except (ValueError, KeyError, TypeError):
        return None
    return item if isinstance(item, dict) and item.get("id") == call else None


def _patch(text: str, cwd: str) -> list[tuple[str, dict[str, Any]]]:
    """Codex's patch as one Write or Edit per file (paths made absolute against `cwd`)."""
    heads = list(_PATCH_FILE.finditer(text))
    if not heads:
        return [("Edit", {"patch": text})]
    calls = []
    for i, head in enumerate(heads):
        end = heads[i + 1].start() if i + 1 < len(heads) else len(text)
        section = text[head.start() : end].split("\n*** End Patch", 1)[0]
        lines = section.splitlines()[1:]
        params: dict[str, Any] = {
            "file_path": os.path.normpath(os.path.join(cwd, head.group(2).rstrip(" \t"))),
            "patch": section,
        }
        if head.group(1) == "Add":
            params["content"] = "\n".join(line[1:] for line in lines if line.startswith("+"))
            calls.append(("Write", params))
            continue
        if head.group(1) == "Update":
            params["old_string"] = "\n".join(line[1:] for line in lines if line.startswith("-"))
            params["new_string"] = "\n".join(line[1:] for line in lines if line.startswith("+"))
        calls.append(("Edit", params))
        for move in _PATCH_MOVE.finditer(section):  # the file is written there, and gone here
            to = os.path.normpath(os.path.join(cwd, move.group(1).rstrip(" \t")))
            calls.append(
                ("Write", {**params, "file_path": to, "content": params.get("new_string", "")})
            )
    return calls


# -- Gemini CLI ----------------------------------------------------------------------------------


def _gemini(raw: dict[str, Any], event: str) -> list[dict[str, Any]]:
    payload = _base(raw, event, raw.get("session_id"), raw.get("cwd"))
    if event == "Stop":
        payload["last_assistant_message"] = str(raw.get("prompt_response") or "")
    if event not in TOOL_EVENTS:
        return [payload]
    context = raw.get("mcp_context")
    name = str(raw.get("tool_name") or "")
    if isinstance(context, dict) and context.get("server_name") and context.get("tool_name"):
        name = f"mcp__{context['server_name']}__{context['tool_name']}"
    tool, params = _tool("gemini", name, raw.get("tool_input"))
    if tool == "WebFetch" and "url" not in params:
        found = _URL.search(str(params.get("prompt") or ""))
        if found:
            params["url"] = found.group(0)
    payload.update(tool_name=tool, tool_input=params)
    response = raw.get("tool_response")
    error = response.get("error") if isinstance(response, dict) else None
    if event == "PostToolUse" and error:
        message = error.get("message") if isinstance(error, dict) else error
        payload.update(hook_event_name="PostToolUseFailure", error=str(message or "failed"))
        return [payload]
    payload["tool_response"] = _gemini_response(tool, response) if event == "PostToolUse" else None
    return [payload]


def _gemini_response(tool: str, response: Any) -> Any:
    """Gemini CLI's `AfterTool` response of a call that set no `error`, with Claude Code's signs
    beside its own keys. A tool sets `error` when its call fails (`ToolResult.error`,
    tools/tools.ts), so any other tool's call is `success: true`; but a shell command that
    exits non-zero sets none. The shell's `llmContent` is `Output: ...` then sections (`Error:`,
    `Exit Code:` written only when not 0, `Signal:`, ...; tools/shell.ts), read from the end:
    `exit_code` (0 when there is none), `is_error` for an error or a signal, `stdout`. A
    command cancelled is `interrupted`; one moved to the background, or an `Error:` line the
    end does not account for, says nothing either way. Gemini CLI 0.61 wraps the text in
    `<untrusted_context>` (`wrapUntrusted`), which is read through."""
    if not isinstance(response, dict):
        return response
    if tool != "Bash":
        return {**response, "success": True}
    text = response.get("llmContent")
    if isinstance(text, str) and (wrapped := _GEMINI_UNTRUSTED.fullmatch(text)):
        text = wrapped[1]
    if not isinstance(text, str) or not text.startswith("Output: "):
        cancelled = isinstance(text, str) and _GEMINI_CANCELLED.match(text)
        return {**response, "interrupted": True} if cancelled else response
    lines = text.split("\n")
    sections: dict[str, str] = {}
    while len(lines) > 1 and (head := _GEMINI_SECTION.match(lines[-1])):
        sections.setdefault(head[1], lines.pop()[head.end() :])
    out = {**response, "stdout": "\n".join(lines).removeprefix("Output: ")}
    if sections.keys() & {"Error", "Signal"}:
        return {**out, "is_error": True}
    code = sections.get("Exit Code", "0")
    if not code.lstrip("-").isdigit() or re.search(r"^Error: ", out["stdout"], re.MULTILINE):
        return out
    return {**out, "exit_code": int(code)}


# -- Cursor --------------------------------------------------------------------------------------


def _cursor(raw: dict[str, Any], event: str) -> list[dict[str, Any]]:
    roots = raw.get("workspace_roots")
    cwd = roots[0] if isinstance(roots, list) and roots else raw.get("cwd")
    payload = _base(raw, event, raw.get("conversation_id") or raw.get("session_id"), cwd)
    native = raw["hook_event_name"]
    if event == "Stop":
        if raw.get("status", "completed") != "completed":
            return []  # aborted or failed: nothing to hold the agent to
        count = raw.get("loop_count")
        payload["stop_hook_active"] = isinstance(count, int) and count > 0
        payload.setdefault("last_assistant_message", "")
    if event not in (*TOOL_EVENTS, "PostToolUseFailure"):
        return [payload]
    tool, params = _cursor_tool(raw, native)
    payload.update(tool_name=tool, tool_input=params)
    if event == "PostToolUseFailure":
        payload["error"] = str(raw.get("error_message") or raw.get("error") or "failed")
    elif event == "PostToolUse":
        keys = ("tool_output", "tool_response", "result_json", "output")
        response = next((raw[k] for k in keys if k in raw), None)
        if native == "afterShellExecution":
            response = {"stdout": raw.get("output"), "exit_code": raw.get("exit_code")}
        payload["tool_response"] = _cursor_response(tool, native, _json(response))
    return [payload]


def _cursor_tool(raw: dict[str, Any], native: str) -> tuple[str, dict[str, Any]]:
    """The Claude Code tool and parameters of a Cursor tool event (`native`): its shell, file
    read and file edit events name none, an MCP tool is named as Claude Code names it."""
    if native.endswith("ShellExecution"):
        return "Bash", {"command": raw.get("command"), "cwd": raw.get("cwd")}
    if native == "beforeReadFile":
        return "Read", {"file_path": raw.get("file_path")}
    if native == "afterFileEdit":
        return "Edit", {"file_path": raw.get("file_path"), "edits": raw.get("edits")}
    name = str(raw.get("tool_name") or "")
    if native.endswith("MCPExecution") or name.startswith("MCP:"):
        server = raw.get("server_name") or raw.get("server") or "mcp"
        name = f"mcp__{server}__{name.removeprefix('MCP:')}"
    return _tool("cursor", name, _json(raw.get("tool_input")))


def _cursor_response(tool: str, native: str, response: Any) -> Any:
    """Cursor's response with Claude Code's signs: a failed call comes as `postToolUseFailure`,
    so `postToolUse` (and `afterFileEdit`) of any tool but the shell is `success: true`; a shell
    command, whose documented payload carries its output only, has a sign only when its output
    gives an exit code (`afterShellExecution`'s `exit_code` where sent)."""
    if tool == "Bash" or native not in ("postToolUse", "afterFileEdit"):
        return response
    return {**(response if isinstance(response, dict) else {"content": response}), "success": True}


_READERS: dict[str, Callable[[dict[str, Any], str], list[dict[str, Any]]]] = {
    "codex": _codex,
    "gemini": _gemini,
    "cursor": _cursor,
    **cli_agents.READERS,
}


# -- answers -------------------------------------------------------------------------------------


def _joined(texts: list[str]) -> str | None:
    seen = []
    for text in texts:
        if text and text not in seen:
            seen.append(text)
    return "\n\n".join(seen) or None


def merged(outs: list[dict[str, Any] | None]) -> dict[str, Any] | None:
    """One Claude Code answer for the answers to the events of one call: denied when any is."""
    given = [out for out in outs if out]
    if len(given) <= 1:
        return given[0] if given else None
    spec = [out.get("hookSpecificOutput") or {} for out in given]
    event = spec[0].get("hookEventName", "PreToolUse")
    denied = [s["permissionDecisionReason"] for s in spec if s.get("permissionDecision") == "deny"]
    out: dict[str, Any] = {}
    if denied:
        reason = _joined(denied)
        out["hookSpecificOutput"] = {
            "hookEventName": event,
            "permissionDecision": "deny",
            "permissionDecisionReason": reason,
        }
    else:
        context = _joined([str(s.get("additionalContext") or "") for s in spec])
        if context:
            out["hookSpecificOutput"] = {"hookEventName": event, "additionalContext": context}
    message = _joined([str(o.get("systemMessage") or "") for o in given])
    if message:
        out["systemMessage"] = message
    return out or None


def render(
    harness: str, event: dict[str, Any], out: dict[str, Any] | None
) -> dict[str, Any] | None:
    """The answer to `event` (a payload from `events`) in the harness's format, from the guard's
    Claude Code-shaped `out` (None: nothing to say)."""
    if out is None or harness in ("claude", "codex"):
        return out
    if harness in cli_agents.HARNESSES:
        return cli_agents.render(harness, event, out)
    spec = out.get("hookSpecificOutput") or {}
    denied = (
        spec.get("permissionDecisionReason") if spec.get("permissionDecision") == "deny" else None
    )
    context = spec.get("additionalContext")
    blocked = out.get("reason") if out.get("decision") == "block" else None
    message = out.get("systemMessage")
    kind = event.get("hook_event_name")
    if harness == "gemini":
        answer = _gemini_answer(kind, event.get(NATIVE), denied or blocked, context, message)
    else:
        answer = _cursor_answer(kind, denied, blocked, context, message)
    return answer or None


def _gemini_answer(
    kind: str | None,
    native: str | None,
    refused: str | None,
    context: str | None,
    message: str | None,
) -> dict[str, Any]:
    """Gemini CLI's answer to an event of Claude Code's `kind` (`native`, its own name): a
    refusal as `decision`, context before a call to the user (`BeforeTool` has no context
    field), after one to the model."""
    answer: dict[str, Any] = {}
    if message or (context and kind == "PreToolUse"):
        answer["systemMessage"] = _joined([message or "", context or ""])
    if refused:
        answer.update(decision="deny", reason=refused)
    elif context and kind != "PreToolUse":
        answer["hookSpecificOutput"] = {"hookEventName": native, "additionalContext": context}
    return answer


def _cursor_answer(
    kind: str | None,
    denied: str | None,
    blocked: str | None,
    context: str | None,
    message: str | None,
) -> dict[str, Any]:
    """Cursor's answer to an event of Claude Code's `kind`: a call's `permission` with the
    agent's message, context at the session's start and after a call, and a refused stop as a
    follow-up message (its `stop` cannot refuse)."""
    if kind == "PreToolUse":
        if denied:
            return {"permission": "deny", "user_message": denied, "agent_message": denied}
        if context or message:
            return {"permission": "allow", "agent_message": _joined([context or "", message or ""])}
    elif kind in ("SessionStart", "PostToolUse") and context:
        return {"additional_context": context}
    elif kind == "Stop" and blocked:
        return {"followup_message": blocked}
    return {}


def answer(
    harness: str,
    found: list[dict[str, Any]],
    decide: Callable[[dict[str, Any]], dict[str, Any] | None],
) -> dict[str, Any] | None:
    """The harness's answer to an event read as `found`, each payload decided by `decide`."""
    if not found:
        return None
    return render(harness, found[0], merged([decide(payload) for payload in found]))


def error_text(harness: str, error: dict[str, Any]) -> str | None:
    """The line a failed hook writes on stderr instead of the CLI's JSON error (None: the JSON
    error, `tether.command.output.emit_error`). Gemini CLI would read a JSON object there as its
    answer (and so allow what exit 2 should block), so it gets a line of text."""
    if harness == "gemini":
        return f"tether guard: {error.get('code')}: {error.get('message')}"
    return None
