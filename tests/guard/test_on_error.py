"""The guard's behaviour on its own failure is a setting (`on_error`), never a silent pass:
a tool call it cannot decide is denied under `block` (the default) and goes ahead under `allow`,
a guard that cannot start still blocks destructive commands, and every error is logged."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tether.errors import EXIT_INVALID

GUARD = [sys.executable, "-m", "tether.guard.cli"]


def event(name: str, cwd: Path, **fields: Any) -> dict[str, Any]:
    return {"session_id": "s1", "cwd": str(cwd), "hook_event_name": name, **fields}


def bash(cwd: Path, command: str) -> dict[str, Any]:
    return event("PreToolUse", cwd, tool_name="Bash", tool_input={"command": command})


def hook(
    cwd: Path, payload: dict[str, Any] | str, *options: str, config: str = "guard.yaml"
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            *GUARD,
            "hook",
            "--config",
            str(cwd / config),
            "--state-dir",
            str(cwd / "state"),
            *options,
        ],
        input=payload if isinstance(payload, str) else json.dumps(payload),
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=60,
        check=False,
    )


def decision(done: subprocess.CompletedProcess[str]) -> str | None:
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout) if done.stdout else {}
    return out.get("hookSpecificOutput", {}).get("permissionDecision")


def logged(cwd: Path) -> list[dict[str, Any]]:
    done = subprocess.run(
        [*GUARD, "log", "--state-dir", str(cwd / "state")],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    out = json.loads(done.stdout)
    assert out["log"] == str(cwd / "state" / "errors.log")
    return out["errors"]


@pytest.fixture
def broken(tmp_path: Path) -> Path:
    (tmp_path / "guard.yaml").write_text("profile: dev\nrulez: {}\n")
    return tmp_path


def test_a_broken_configuration_still_blocks_destructive_commands(broken: Path) -> None:
    """It used to exit 1, which Claude Code reads as "carry on": `rm -rf /` ran."""
    done = hook(broken, bash(broken, "rm -rf /"))
    assert decision(done) == "deny"
    reason = json.loads(done.stdout)["hookSpecificOutput"]["permissionDecisionReason"]
    assert reason.startswith("[BEHAVIOR BLOCKED] confirm_destructive:")
    assert "guard.yaml:2" in reason and "tether guard log" in reason
    [entry] = logged(broken)
    assert entry["event"] == "PreToolUse" and entry["tool"] == "Bash"
    assert (entry["on_error"], entry["outcome"]) == ("block", "fallback denied")
    assert (entry["error"]["code"], entry["error"]["line"]) == ("invalid_value", 2)
    assert entry["error"]["path"] == "rulez"


def test_a_broken_configuration_does_not_wedge_every_tool(broken: Path) -> None:
    """Reading and editing go ahead (the configuration can be fixed), with a warning each time."""
    for payload in (
        bash(broken, "ls"),
        event("PreToolUse", broken, tool_name="Edit", tool_input={"file_path": "guard.yaml"}),
    ):
        done = hook(broken, payload)
        assert decision(done) is None
        out = json.loads(done.stdout)
        assert "cannot start" in out["systemMessage"]
        assert out["hookSpecificOutput"]["additionalContext"] == out["systemMessage"]
    assert [e["outcome"] for e in logged(broken)] == ["fallback allowed"] * 2


def test_a_missing_configuration_is_handled_the_same_way(tmp_path: Path) -> None:
    done = hook(tmp_path, bash(tmp_path, "sudo rm -rf /"), config="nowhere.yaml")
    assert decision(done) == "deny"
    assert logged(tmp_path)[0]["error"]["code"] == "not_found"


def test_on_error_allow_lets_the_call_go_ahead_and_still_logs(broken: Path) -> None:
    done = hook(broken, bash(broken, "rm -rf /"), "--on-error", "allow")
    assert (done.returncode, done.stdout) == (1, "")
    assert json.loads(done.stderr)["error"]["code"] == "invalid_value"
    assert [(e["on_error"], e["outcome"]) for e in logged(broken)] == [("allow", "allowed")]


def test_other_events_never_block_on_an_error(broken: Path) -> None:
    for payload in (
        event("Stop", broken, last_assistant_message="done", stop_hook_active=False),
        event("UserPromptSubmit", broken, prompt="hi"),
        event("PostToolUse", broken, tool_name="Bash", tool_input={}, tool_response={}),
    ):
        done = hook(broken, payload)
        assert (done.returncode, done.stdout) == (1, "")
    assert {e["outcome"] for e in logged(broken)} == {"allowed"}


@pytest.fixture
def unwritable(tmp_path: Path) -> Path:
    """A configuration that loads, and a state folder that cannot be created: every session
    event fails at run time."""
    (tmp_path / "guard.yaml").write_text("profile: dev\n")
    (tmp_path / "state").write_text("a file, not a folder")
    return tmp_path


def test_a_call_that_cannot_be_decided_is_denied(unwritable: Path) -> None:
    done = hook(unwritable, bash(unwritable, "ls"))
    assert decision(done) == "deny"
    reason = json.loads(done.stdout)["hookSpecificOutput"]["permissionDecisionReason"]
    assert "could not decide" in reason and "on_error: block" in reason


def test_on_error_in_the_configuration_wins_over_the_flag(unwritable: Path) -> None:
    (unwritable / "guard.yaml").write_text("profile: dev\non_error: allow\n")
    done = hook(unwritable, bash(unwritable, "rm -rf /"), "--on-error", "block")
    assert (done.returncode, done.stdout) == (1, "")
    assert json.loads(done.stderr)["error"]["code"] == "internal"


def test_a_hook_that_hangs_is_denied_at_its_deadline(tmp_path: Path) -> None:
    """Another process holds the session's lock for good: the hook gives up at --deadline and
    denies, instead of being killed by Claude Code's time-out (which would let the call run)."""
    (tmp_path / "guard.yaml").write_text("profile: dev\n")
    assert hook(tmp_path, event("SessionStart", tmp_path)).returncode == 0  # caches the plan
    folder = tmp_path / "state" / "sessions" / "s1"
    folder.mkdir(parents=True)
    with open(folder / "main.lock", "a+b") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        done = hook(tmp_path, bash(tmp_path, "ls"), "--deadline", "3")
        assert decision(done) == "deny"
        allowed = hook(tmp_path, bash(tmp_path, "ls"), "--deadline", "3", "--on-error", "allow")
        assert allowed.returncode == 1
    entries = logged(tmp_path)
    assert [e["outcome"] for e in entries] == ["denied", "allowed"]
    assert "no decision within 3 s" in entries[0]["error"]["message"]


def test_a_hook_command_that_cannot_be_parsed_falls_back(tmp_path: Path) -> None:
    (tmp_path / "guard.yaml").write_text("profile: dev\n")
    done = hook(tmp_path, bash(tmp_path, "git push --force"), "--on-eror", "allow")
    assert decision(done) == "deny"
    assert json.loads(done.stdout)["hookSpecificOutput"]["permissionDecisionReason"].startswith(
        "[BEHAVIOR BLOCKED] confirm_destructive:"
    )


def test_input_that_is_not_json_blocks_with_exit_2_under_block(tmp_path: Path) -> None:
    (tmp_path / "guard.yaml").write_text("profile: dev\n")
    done = hook(tmp_path, "{not json")
    assert (done.returncode, done.stdout) == (2, "")
    assert json.loads(done.stderr)["error"]["code"] == "invalid_json"
    assert hook(tmp_path, "{not json", "--on-error", "allow").returncode == 1
    cut = '{"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": "rm"}'
    done = hook(tmp_path, cut)  # a tool call whose text is cut short: still blocked
    assert (done.returncode, done.stdout) == (2, "")


def test_on_error_is_validated_like_every_other_key(tmp_path: Path) -> None:
    config = tmp_path / "guard.yaml"
    config.write_text("security:\n  behavior:\n    profile: dev\n    on_error: ignore\n")
    done = subprocess.run(
        [*GUARD, "check", str(config)], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == EXIT_INVALID
    error = json.loads(done.stderr)["error"]
    assert (error["line"], error["path"]) == (4, "security.behavior.on_error")
    assert "'allow' or 'block'" in error["message"]


def test_the_log_keeps_the_last_megabyte_and_limits_its_output(tmp_path: Path) -> None:
    from tether import guardlog

    state = str(tmp_path / "state")
    for i in range(3):
        guardlog.record(state, {"n": i, "pad": "x" * (guardlog.LOG_MAX_BYTES // 2)})
    assert os.path.exists(guardlog.log_path(state) + ".1")
    assert [e["n"] for e in guardlog.read_log(state, 10)] == [0, 1, 2]
    assert [e["n"] for e in guardlog.read_log(state, 1)] == [2]
