"""Strict mode as `tether guard install claude --strict` sets it up and as the hook holds it: the
configuration marked, Claude Code's sandbox settings merged in (nothing of the user's lost), and a
strict session refused an execution outside `.tether/`, where its commands could write it. The
wall itself, in the real Claude Code: tests/field/test_strict.py."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from guard import hookkit as hk
from support.command import TETHER


def tether(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [TETHER, *args],
        cwd=project,
        env={**os.environ, "TETHER_GUARD_STATE": str(project.parent / "state")},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    assert tether(root, "init", ".").returncode == 0
    return root


def settings(project: Path) -> dict[str, Any]:
    return dict(json.loads((project / ".claude" / "settings.local.json").read_text()))


def test_install_strict_marks_the_configuration_and_walls_claude_code(project: Path) -> None:
    local = project / ".claude" / "settings.local.json"
    local.parent.mkdir()
    mine = {"permissions": {"deny": ["Bash(curl*)"]}, "sandbox": {"network": {"x": 1}}}
    local.write_text(json.dumps(mine))
    before = (project / ".tether" / "guard.yaml").read_text()
    done = tether(project, "guard", "install", "claude", "--strict")
    assert done.returncode == 0, done.stderr
    config = (project / ".tether" / "guard.yaml").read_text()
    assert config.replace("      strict: true\n", "") == before
    sandbox = settings(project)["sandbox"]
    assert sandbox["enabled"] and sandbox["failIfUnavailable"]
    assert sandbox["allowUnsandboxedCommands"] is False and sandbox["network"] == {"x": 1}
    walled = sandbox["filesystem"]["denyWrite"]
    real = project.resolve()
    for path in (real / ".tether", real / ".mcp.json", real / ".claude" / "settings.json"):
        assert str(path) in walled, walled
    assert str((project.parent / "state").resolve()) in walled
    deny = settings(project)["permissions"]["deny"]
    assert deny[0] == "Bash(curl*)" and f"Edit(/{real}/.tether/**)" in deny
    # every harness's hook registrations, as the binding knows them: folders and files
    assert (
        f"Edit(/{real}/.github/hooks/**)" in deny and f"Edit(/{real}/.qwen/settings.json)" in deny
    )
    assert (
        f"Edit(/{real}/.codex/config.toml)" in deny and str(real / ".opencode" / "plugin") in walled
    )
    again = tether(project, "guard", "install", "claude", "--strict")
    assert json.loads(again.stdout)["strict"]["config_marked"] is False
    assert settings(project)["permissions"]["deny"] == deny
    assert (project / ".tether" / "guard.yaml").read_text() == config


def test_a_configuration_with_strict_walls_claude_code_without_the_flag(project: Path) -> None:
    config = project / ".tether" / "guard.yaml"
    config.write_text(config.read_text() + "      strict: true\n")
    done = tether(project, "guard", "install", "claude")
    assert done.returncode == 0, done.stderr
    assert settings(project)["sandbox"]["enabled"] is True


def test_strict_false_in_the_configuration_is_not_overridden(project: Path) -> None:
    config = project / ".tether" / "guard.yaml"
    config.write_text(config.read_text() + "      strict: false\n")
    text = config.read_text()
    done = tether(project, "guard", "install", "claude", "--strict")
    assert done.returncode != 0
    error = json.loads(done.stderr)["error"]
    assert error["code"] == "invalid_value" and "strict to false" in error["message"], error
    assert config.read_text() == text
    assert "sandbox" not in settings(project)


def test_strict_is_refused_for_a_harness_tether_builds_no_wall_for(project: Path) -> None:
    done = tether(project, "guard", "install", "codex", "--strict")
    error = json.loads(done.stderr)["error"]
    assert error["code"] == "usage" and "Claude Code's sandbox only" in error["message"]
    assert not (project / ".codex").exists()


def test_strict_with_managed_is_refused_and_nothing_written(project: Path) -> None:
    """`--managed` writes only the administrator's file, where no sandbox is set up: asked for
    both at once, neither is done."""
    managed = project.parent / "managed-settings.json"
    before = (project / ".tether" / "guard.yaml").read_text()
    done = tether(
        project, "guard", "install", "claude", "--managed", "--strict", "--settings", str(managed)
    )
    error = json.loads(done.stderr)["error"]
    assert (
        done.returncode != 0
        and error["code"] == "usage"
        and "--managed and --strict" in error["message"]
    )
    assert not managed.exists() and not (project / ".claude").exists()
    assert (project / ".tether" / "guard.yaml").read_text() == before


@pytest.mark.parametrize(
    ("tool", "params"),
    [
        ("mcp__tether__start_execution", {"tree_uri": "t.yaml", "trace_output": "runs/r.json"}),
        ("Bash", {"command": "tether start t.yaml r.json"}),
    ],
)
def test_a_strict_session_may_not_start_an_execution_outside_the_wall(
    tmp_path: Path, tool: str, params: dict[str, Any]
) -> None:
    (tmp_path / ".tether").mkdir()
    (tmp_path / ".tether" / "guard.yaml").write_text("workflow:\n  strict: true\n")
    out = hk.hook_json(tmp_path, hk.pre(tmp_path, tool, params))
    assert out is not None, "allowed"
    decision = out["hookSpecificOutput"]
    assert decision["permissionDecision"] == "deny"
    assert "strict mode" in decision["permissionDecisionReason"]
    assert ".tether/runs/r.json" in decision["permissionDecisionReason"]
    inside = {"tree_uri": "t.yaml", "trace_output": ".tether/runs/r.json"}
    allowed = hk.hook_json(tmp_path, hk.pre(tmp_path, "mcp__tether__start_execution", inside))
    assert allowed is None or allowed["hookSpecificOutput"]["permissionDecision"] != "deny"
