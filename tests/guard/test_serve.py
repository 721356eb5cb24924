"""`tether guard serve`: Claude Code's http hooks answered by a warm process."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest


@contextmanager
def _serving(tmp_path: Path, state: Path) -> Iterator[str]:
    """A real `tether guard serve` process on 127.0.0.1 with the state folder `state`: its URL."""
    (tmp_path / "guard.yaml").write_text("profile: dev\n")
    command = [sys.executable, "-m", "tether.guard.cli", "serve", "--port", "0"]
    proc = subprocess.Popen(
        [*command, "--config", str(tmp_path / "guard.yaml"), "--state-dir", str(state)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stderr is not None
    try:
        line = proc.stdout.readline()
        assert line, proc.stderr.read()
        yield json.loads(line)["listening"]
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        proc.stdout.close()
        proc.stderr.close()


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    with _serving(tmp_path, tmp_path / "state") as url:
        yield url


def post(url: str, body: bytes) -> tuple[int, Any]:
    request = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def hook(event: str, **fields: Any) -> bytes:
    return json.dumps(
        {
            "session_id": "http-1",
            "transcript_path": "/nonexistent.jsonl",
            "cwd": "/project",
            "permission_mode": "default",
            "hook_event_name": event,
            **fields,
        }
    ).encode()


def test_health(server):
    with urllib.request.urlopen(server + "/health", timeout=10) as response:
        assert json.loads(response.read()) == {"status": "ok"}


def test_hooks_over_http_keep_session_state(server):
    status, out = post(
        server + "/hook",
        hook(
            "PreToolUse",
            tool_name="Bash",
            tool_use_id="t1",
            tool_input={"command": "git clean -fd"},
        ),
    )
    assert status == 200
    assert out["hookSpecificOutput"]["permissionDecision"] == "deny"
    status, out = post(
        server + "/hook",
        hook(
            "PostToolUse",
            tool_name="Read",
            tool_use_id="t2",
            tool_input={"file_path": "/project/a.py"},
            tool_response={"type": "text"},
        ),
    )
    assert (status, out) == (200, {})
    status, out = post(
        server + "/hook",
        hook("PreToolUse", tool_name="Edit", tool_use_id="t3", tool_input={"file_path": "a.py"}),
    )
    assert "read_before_edit" not in json.dumps(out)


def test_bad_requests(server):
    assert post(server + "/hook", b"not json")[0] == 400
    assert post(server + "/hook", b"[1]")[0] == 400
    assert post(server + "/elsewhere", b"{}")[0] == 404


@pytest.fixture
def failing(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A server whose state folder cannot be created: every session event fails."""
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    with _serving(tmp_path, blocker) as url:
        yield url + "/hook", blocker


def test_a_failure_is_answered_as_a_server_error(failing):
    """A PostToolUse that fails: a 500 and an error (Claude Code goes on), not a hang."""
    url, _ = failing
    status, out = post(
        url,
        hook(
            "PostToolUse",
            tool_name="Read",
            tool_use_id="t",
            tool_input={"file_path": "/a"},
            tool_response={},
        ),
    )
    assert status == 500
    assert out["error"]["code"] == "internal"


def test_a_tool_call_that_cannot_be_decided_is_denied(failing):
    """Under on_error: block (the default) the answer is a 200 carrying the deny: Claude Code
    reads an HTTP error status as "carry on"."""
    url, _ = failing
    status, out = post(url, hook("PreToolUse", tool_name="Bash", tool_input={"command": "ls"}))
    assert status == 200
    assert out["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert "could not decide" in out["hookSpecificOutput"]["permissionDecisionReason"]
