"""Claude Code hooks: real payload shapes in, Claude Code's output out, state kept on disk."""

from __future__ import annotations

import itertools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tether.guard import Guard
from tether.guard.harness.hooks import handle
from tether.guard.harness.session_store import SessionStore
from tether.guard.rules.state import SessionState

# Each tool call its own id, as the harness gives it (one event is handled once per id).
CALLS = itertools.count(1)

DATA = Path(__file__).parent / "data"
SESSION = "5f1c7d2e-8a4b-4c3d-9e2f-1a2b3c4d5e6f"


def payload(event: str, cwd: str, **fields: Any) -> dict[str, Any]:
    """A hook input as Claude Code sends it: the common fields plus the event's own."""
    return {
        "session_id": SESSION,
        "transcript_path": os.path.join(cwd, "transcript.jsonl"),
        "cwd": cwd,
        "permission_mode": "default",
        "hook_event_name": event,
        **fields,
    }


def pre(cwd: str, tool: str, tool_input: dict[str, Any], **kw: Any) -> dict[str, Any]:
    return payload(
        "PreToolUse",
        cwd,
        tool_name=tool,
        tool_input=tool_input,
        tool_use_id=f"toolu_{next(CALLS):04d}",
        **kw,
    )


def post(
    cwd: str, tool: str, tool_input: dict[str, Any], response: Any, **kw: Any
) -> dict[str, Any]:
    return payload(
        "PostToolUse",
        cwd,
        tool_name=tool,
        tool_input=tool_input,
        tool_response=response,
        tool_use_id=f"toolu_{next(CALLS):04d}",
        **kw,
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "guard.yaml").write_text("security:\n  behavior:\n    profile: dev\n")
    (tmp_path / "app.py").write_text("print('hi')\n")
    return tmp_path


@pytest.fixture
def run(project: Path):
    """Answer one payload in-process, with state in the project's store."""
    guard = Guard.from_file(str(project / "guard.yaml"))
    store = SessionStore(str(project / "state"))
    return lambda p: handle(p, guard, store)


def hook(
    project: Path, p: dict[str, Any], config: str = "guard.yaml"
) -> subprocess.CompletedProcess[str]:
    """Run `tether guard hook` as Claude Code does: a fresh process, the payload on stdin."""
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "tether.guard.cli",
            "hook",
            "--config",
            str(project / config),
            "--state-dir",
            str(project / "state"),
        ],
        input=json.dumps(p),
        capture_output=True,
        text=True,
        cwd=project,
        check=False,
    )


def test_session_start_injects_the_rules_section(run, project):
    out = run(payload("SessionStart", str(project), source="startup", model="claude-sonnet-4-5"))
    context = out["hookSpecificOutput"]
    assert context["hookEventName"] == "SessionStart"
    assert (
        "- Read a file before editing it. (read_before_edit, warn)" in context["additionalContext"]
    )
    assert "Senior developer discipline" in context["additionalContext"]


def test_pre_tool_use_deny_for_a_block(run, project):
    out = run(pre(str(project), "Bash", {"command": "git push --force", "description": "push"}))
    assert out["hookSpecificOutput"]["hookEventName"] == "PreToolUse"
    assert out["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert out["hookSpecificOutput"]["permissionDecisionReason"].startswith(
        "[BEHAVIOR BLOCKED] confirm_destructive:"
    )


def test_pre_tool_use_context_for_a_warning(run, project):
    out = run(
        pre(
            str(project),
            "Edit",
            {"file_path": str(project / "app.py"), "old_string": "hi", "new_string": "ho"},
        )
    )
    specific = out["hookSpecificOutput"]
    assert "permissionDecision" not in specific
    assert "[BEHAVIOR WARNING] read_before_edit:" in specific["additionalContext"]


def test_state_carries_from_one_hook_to_the_next(run, project):
    app = str(project / "app.py")
    read = {
        "type": "text",
        "file": {
            "filePath": app,
            "content": "print('hi')\n",
            "numLines": 1,
            "startLine": 1,
            "totalLines": 1,
        },
    }
    run(payload("UserPromptSubmit", str(project), prompt="change the greeting"))
    run(pre(str(project), "Read", {"file_path": app}))
    run(post(str(project), "Read", {"file_path": app}, read))
    out = run(pre(str(project), "Edit", {"file_path": app, "old_string": "hi", "new_string": "ho"}))
    assert out is None or "read_before_edit" not in out["hookSpecificOutput"]["additionalContext"]
    out = run(
        post(
            str(project),
            "Edit",
            {"file_path": app, "old_string": "hi", "new_string": "ho"},
            {"filePath": app, "oldString": "hi", "newString": "ho", "structuredPatch": []},
        )
    )
    assert out["hookSpecificOutput"]["hookEventName"] == "PostToolUse"
    assert (
        "[BEHAVIOR REMINDER] verify_after_edit:" in out["hookSpecificOutput"]["additionalContext"]
    )


def test_a_failed_read_does_not_count(run, project):
    app = str(project / "app.py")
    failure = payload(
        "PostToolUseFailure",
        str(project),
        tool_name="Read",
        tool_input={"file_path": app},
        tool_use_id="toolu_1",
        error="EISDIR: illegal operation on a directory",
        is_interrupt=False,
    )
    assert run(failure) is None
    out = run(pre(str(project), "Edit", {"file_path": app, "old_string": "a", "new_string": "b"}))
    assert "read_before_edit" in out["hookSpecificOutput"]["additionalContext"]


def test_plan_before_execute_reads_the_transcript(run, project):
    transcript = project / "transcript.jsonl"
    shutil.copy(DATA / "session.jsonl", transcript)
    lines = transcript.read_text().splitlines()
    # Up to the assistant message "I'll read the parser first." and its Read call.
    transcript.write_text("\n".join(lines[:5]) + "\n")
    run(payload("UserPromptSubmit", str(project), prompt="fix it"))
    out = run(pre(str(project), "Read", {"file_path": str(project / "app.py")}))
    assert out is None
    # Without text since the prompt, the first call of the turn is warned about.
    transcript.write_text("\n".join(lines[:2]) + "\n")
    run(payload("UserPromptSubmit", str(project), prompt="again"))
    out = run(pre(str(project), "Read", {"file_path": str(project / "app.py")}))
    assert "plan_before_execute" in out["hookSpecificOutput"]["additionalContext"]


def test_stop_runs_text_rules_on_the_last_message(run, project):
    stop = payload(
        "Stop",
        str(project),
        stop_hook_active=False,
        last_assistant_message="I'm not sure this handles unicode.",
    )
    out = run(stop)
    assert out["decision"] == "block"
    assert out["reason"].startswith("[BEHAVIOR WARNING] web_search_when_unknown:")
    assert run({**stop, "stop_hook_active": True}) is None


def test_stop_without_the_message_reads_the_transcript(run, project):
    shutil.copy(DATA / "session.jsonl", project / "transcript.jsonl")
    out = run(payload("Stop", str(project), stop_hook_active=False))
    assert out["decision"] == "block"


def test_sub_agents_have_their_own_state(run, project):
    app = str(project / "app.py")
    run(
        post(str(project), "Read", {"file_path": app}, {}, agent_id="agent-7", agent_type="Explore")
    )
    main = run(pre(str(project), "Edit", {"file_path": app}))
    assert "read_before_edit" in main["hookSpecificOutput"]["additionalContext"]
    sub = run(
        pre(str(project), "Edit", {"file_path": app}, agent_id="agent-7", agent_type="Explore")
    )
    assert sub is None or "read_before_edit" not in sub["hookSpecificOutput"]["additionalContext"]


def test_session_end_forgets_the_session(run, project):
    run(post(str(project), "Read", {"file_path": str(project / "app.py")}, {}))
    store = SessionStore(str(project / "state"))
    assert store.state(SESSION).total_tool_calls == 1
    run(payload("SessionEnd", str(project), reason="exit"))
    assert store.state(SESSION).total_tool_calls == 0


def test_unknown_events_say_nothing(run, project):
    assert (
        run(payload("Notification", str(project), message="Claude needs your permission")) is None
    )


def test_round_trip_through_a_fresh_process(project):
    app = str(project / "app.py")
    blocked = hook(project, pre(str(project), "Bash", {"command": "rm -rf /", "description": "x"}))
    assert blocked.returncode == 0
    assert json.loads(blocked.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
    silent = hook(project, post(str(project), "Read", {"file_path": app}, {"type": "text"}))
    assert (silent.returncode, silent.stdout) == (0, "")
    again = hook(project, pre(str(project), "Edit", {"file_path": app}))
    assert "read_before_edit" not in again.stdout


def test_bad_configuration_is_a_non_blocking_error_for_other_events(project):
    """(What a broken configuration does to a tool call is in test_on_error.py.)"""
    (project / "bad.yaml").write_text("profile: dev\nrulez: {}\n")
    result = hook(project, payload("UserPromptSubmit", str(project), prompt="hi"), "bad.yaml")
    assert result.returncode == 1
    assert result.stdout == ""
    error = json.loads(result.stderr)["error"]
    assert error["code"] == "invalid_value"
    assert error["line"] == 2


def test_concurrent_hook_processes_lose_nothing(project):
    """Twelve hook processes on one session at once: every read lands in the state and log."""
    files = [str(project / f"f{i}.py") for i in range(12)]
    command = [
        sys.executable,
        "-m",
        "tether.guard.cli",
        "hook",
        "--config",
        str(project / "guard.yaml"),
        "--state-dir",
        str(project / "state"),
    ]
    procs = [
        subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=project,
        )
        for _ in files
    ]
    for proc, file in zip(procs, files, strict=True):
        proc.stdin.write(json.dumps(post(str(project), "Read", {"file_path": file}, {})))
        proc.stdin.close()
    for proc in procs:
        assert proc.wait(timeout=60) == 0, proc.stderr.read()
        proc.stdout.close()
        proc.stderr.close()
    store = SessionStore(str(project / "state"))
    state = store.state(SESSION)
    assert sorted(state.sets["read_files"]) == sorted(files)
    assert state.total_tool_calls == 12
    assert state.counters["reads_since_search"] == 12
    events = store.events(SESSION)
    assert sorted(e["target"] for e in events if e["e"] == "tool") == sorted(files)
    assert SessionState.replay(events) == state
