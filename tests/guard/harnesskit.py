"""Hook payloads of Codex, Gemini CLI and Cursor, in the shapes their documentation gives, and
`tether guard hook --harness NAME` run as each harness runs it (a fresh process, stdin, stdout).

- Codex (https://developers.openai.com/codex/hooks, and the input schemas in
  codex-rs/hooks/schema/generated): every event has `session_id`, `transcript_path` (may be
  null), `cwd`, `hook_event_name`, `model`; turn events `turn_id`; tool events `tool_name`,
  `tool_use_id`, `tool_input` (`Bash` and `apply_patch` put their text in `command`), and
  `PostToolUse` adds `tool_response`; `Stop` has `stop_hook_active`, `last_assistant_message`.
  As Codex 0.171 really sends them: `transcript_path` names the session's JSONL transcript,
  and a shell call's or a patch's `tool_response` is a bare string; how the call ended is in
  the transcript's `item_completed` event for it (`codex_transcript`).
- Gemini CLI (https://geminicli.com/docs/hooks/reference, `packages/core/src/hooks/types.ts`):
  `session_id`, `transcript_path`, `cwd`, `hook_event_name`, `timestamp`; `BeforeTool` has
  `tool_name`, `tool_input` and, for MCP tools, `mcp_context` (`server_name`, `tool_name`);
  `AfterTool` adds `tool_response` (`llmContent`, `returnDisplay`, `error`); `BeforeAgent` has
  `prompt`; `AfterAgent` has `prompt`, `prompt_response`, `stop_hook_active`.
- Cursor (https://cursor.com/docs/agent/hooks, through third-party notes): `hook_event_name`,
  `conversation_id`, `generation_id`, `workspace_roots`; `preToolUse` `tool_name`, `tool_input`;
  `postToolUse` adds `tool_output`; `stop` has `status` and `loop_count`;
  `beforeSubmitPrompt` has `prompt`.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

# Each tool call its own id, as the harness gives it (one event is handled once per id).
CALLS = itertools.count(1)

SESSION = "0199b0a4-6c1e-7d52-9f3a-2b4c6d8e0f12"


def codex(event: str, cwd: Path | str, **fields: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "session_id": SESSION,
        "transcript_path": None,
        "cwd": str(cwd),
        "hook_event_name": event,
        "model": "gpt-5-codex",
    }
    if event != "SessionStart":
        out["turn_id"] = "turn-1"
    if event in ("PreToolUse", "PostToolUse"):
        out.update(permission_mode="default", tool_use_id=f"call_{next(CALLS)}")
    return {**out, **fields}


def codex_patch(*files: tuple[str, str, str]) -> str:
    """An apply_patch text: each file as (Add|Update|Delete, path, body)."""
    parts = ["*** Begin Patch"]
    for kind, path, body in files:
        parts.append(f"*** {kind} File: {path}")
        parts.extend(body.splitlines())
    parts.append("*** End Patch")
    return "\n".join(parts) + "\n"


def codex_transcript(path: Path, call: str, **item: Any) -> str:
    """A Codex transcript (as 0.171 writes it) whose last line says call `call` ended with
    `item` (a command: `exit_code`, `status`; a patch: `status`); returns its path."""
    lines = [
        {"type": "session_meta", "payload": {"id": SESSION}},
        {"type": "response_item", "payload": {"type": "function_call", "call_id": call}},
        {
            "type": "event_msg",
            "payload": {
                "type": "item_completed",
                "thread_id": SESSION,
                "turn_id": "turn-1",
                "item": {"type": "CommandExecution", "id": call, **item},
            },
        },
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return str(path)


def gemini(event: str, cwd: Path | str, **fields: Any) -> dict[str, Any]:
    return {
        "session_id": "gemini-" + SESSION[:8],
        "transcript_path": os.path.join(str(cwd), ".gemini", "chats", "session.json"),
        "cwd": str(cwd),
        "hook_event_name": event,
        "timestamp": "2026-11-24T09:00:00.000Z",
        **fields,
    }


def cursor(event: str, root: Path | str, **fields: Any) -> dict[str, Any]:
    return {
        "hook_event_name": event,
        "conversation_id": "conv-" + SESSION[:8],
        "generation_id": "gen-1",
        "workspace_roots": [str(root)],
        "model": "claude-4.5-sonnet",
        "cursor_version": "2.0.77",
        **fields,
    }


def hook(
    project: Path, harness: str, payload: dict[str, Any], *extra: str, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """`tether guard hook --harness H --config .tether/guard.yaml` as `install` writes it, run
    from `cwd` (the project by default) without any variable naming the project."""
    env = {k: v for k, v in os.environ.items() if k != "CLAUDE_PROJECT_DIR"}
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "tether.cli.main",
            "guard",
            "hook",
            "--harness",
            harness,
            "--config",
            os.path.join(".tether", "guard.yaml"),
            "--state-dir",
            str(project / ".state"),
            *extra,
        ],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        cwd=cwd or project,
        env=env,
        check=False,
    )


def answer(project: Path, harness: str, payload: dict[str, Any], **kw: Any) -> dict[str, Any]:
    """The hook's answer, parsed (`{}` when it printed nothing); it must exit 0."""
    done = hook(project, harness, payload, **kw)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout) if done.stdout.strip() else {}
