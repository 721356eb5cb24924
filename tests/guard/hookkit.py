"""Claude Code hook payloads, as its documentation gives them, and the ways to deliver them.

The shapes follow https://code.claude.com/docs/en/hooks (summarised in the project's reference
notes on agent hooks): every event carries `session_id`, `transcript_path`, `cwd`,
`permission_mode` and `hook_event_name`; tool events add `tool_name`, `tool_input` and
`tool_use_id`; `PostToolUse` adds `tool_response`, `PostToolUseFailure` an `error`; `Stop` adds
`stop_hook_active` and `last_assistant_message`; `SessionStart` adds `source` and `model`;
`UserPromptSubmit` adds `prompt`.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

# Each tool call its own id, as the harness gives it (one event is handled once per id).
CALLS = itertools.count(1)

SESSION = "8d0c2a5e-1f3b-4c6d-9e7f-0a1b2c3d4e5f"


def event(name: str, cwd: Path | str, session: str = SESSION, **fields: Any) -> dict[str, Any]:
    return {
        "session_id": session,
        "transcript_path": os.path.join(str(cwd), ".claude", "transcript.jsonl"),
        "cwd": str(cwd),
        "permission_mode": "default",
        "hook_event_name": name,
        **fields,
    }


def session_start(cwd: Path | str, source: str = "startup", **kw: Any) -> dict[str, Any]:
    return event("SessionStart", cwd, source=source, model="claude-sonnet-4-5", **kw)


def prompt(cwd: Path | str, text: str, **kw: Any) -> dict[str, Any]:
    return event("UserPromptSubmit", cwd, prompt=text, **kw)


def pre(cwd: Path | str, tool: str, tool_input: dict[str, Any], **kw: Any) -> dict[str, Any]:
    return event(
        "PreToolUse",
        cwd,
        tool_name=tool,
        tool_input=tool_input,
        tool_use_id=f"toolu_{next(CALLS):04d}",
        **kw,
    )


def post(
    cwd: Path | str, tool: str, tool_input: dict[str, Any], response: Any, **kw: Any
) -> dict[str, Any]:
    return event(
        "PostToolUse",
        cwd,
        tool_name=tool,
        tool_input=tool_input,
        tool_response=response,
        tool_use_id=f"toolu_{next(CALLS):04d}",
        **kw,
    )


def failure(
    cwd: Path | str, tool: str, tool_input: dict[str, Any], error: str, **kw: Any
) -> dict[str, Any]:
    return event(
        "PostToolUseFailure",
        cwd,
        tool_name=tool,
        tool_input=tool_input,
        tool_use_id=f"toolu_{next(CALLS):04d}",
        error=error,
        **kw,
    )


def stop(cwd: Path | str, active: bool = False, **kw: Any) -> dict[str, Any]:
    return event(
        "Stop",
        cwd,
        stop_hook_active=active,
        last_assistant_message="All done: the feature is implemented and tested.",
        **kw,
    )


def bash_response(stdout: str = "", stderr: str = "") -> dict[str, Any]:
    """What Claude Code's Bash tool answers with."""
    return {"stdout": stdout, "stderr": stderr, "interrupted": False, "isImage": False}


def hook(
    project: Path, payload: dict[str, Any], flags: list[str] | None = None, **env: str
) -> subprocess.CompletedProcess[str]:
    """`tether guard hook` as Claude Code runs it: a fresh process, the payload on stdin, the
    project's `.tether/guard.yaml` found through `CLAUDE_PROJECT_DIR` (`flags`: more of its
    arguments)."""
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "tether.cli.main",
            "guard",
            "hook",
            "--state-dir",
            str(project / ".state"),
            *(flags or []),
        ],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        cwd=project,
        env={**os.environ, "CLAUDE_PROJECT_DIR": str(project), **env},
        check=False,
    )


def hook_json(project: Path, payload: dict[str, Any]) -> dict[str, Any] | None:
    """The hook's output, parsed (None when it printed nothing); it must exit 0."""
    done = hook(project, payload)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout) if done.stdout.strip() else None


@contextmanager
def serving(project: Path) -> Iterator[str]:
    """`tether guard serve` for the project, on a free port; yields its hook URL."""
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tether.cli.main",
            "guard",
            "serve",
            "--config",
            str(project / ".tether" / "guard.yaml"),
            "--state-dir",
            str(project / ".state"),
            "--port",
            "0",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=project,
        env={**os.environ, "CLAUDE_PROJECT_DIR": str(project)},
    )
    try:
        assert proc.stdout is not None and proc.stderr is not None
        line = proc.stdout.readline()
        assert line, proc.stderr.read()
        yield json.loads(line)["hook"]
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


def send(url: str, payload: dict[str, Any]) -> dict[str, Any] | None:
    """One http hook, as Claude Code posts it; None for the empty answer `{}`."""
    request = urllib.request.Request(
        url, data=json.dumps(payload).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        body = json.loads(response.read())
    return body or None
