"""Strict mode as `tether guard install claude|codex --strict` sets it up and as the hook holds
it: the configuration marked, Claude Code's sandbox settings or Codex's permission profile
merged in (nothing of the user's lost, refused where a setting of the user's would undo it), a
strict session refused an execution outside `.tether/`, where its commands could write it, and
`tether guard doctor` finding Codex's wall off and putting it back. The wall itself, in the real
harnesses: tests/field/test_strict.py (Claude Code), tests/field/test_codex_strict.py (Codex)."""

from __future__ import annotations

import json
import os
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest

from guard import hookkit as hk
from support.command import TETHER
from tether.guard.harness.wall import codex_conflicts, codex_read_only


def tether(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`tether ARGS` in `project`, the guard's state and Codex's home beside it."""
    env = {
        **os.environ,
        "TETHER_GUARD_STATE": str(project.parent / "state"),
        "CODEX_HOME": str(project.parent / "codex"),
    }
    return subprocess.run(
        [TETHER, *args],
        cwd=project,
        env=env,
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
    done = tether(project, "guard", "install", "gemini", "--strict")
    error = json.loads(done.stderr)["error"]
    assert error["code"] == "usage" and "Claude Code's and Codex's sandboxes" in error["message"]
    assert not (project / ".gemini").exists()


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


# -- Codex -----------------------------------------------------------------------------------


def codex_config(project: Path) -> dict[str, Any]:
    return tomllib.loads((project / ".codex" / "config.toml").read_text())


def refusal(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode != 0, done.stdout
    error = json.loads(done.stderr)["error"]
    assert error["code"] == "invalid_value", error
    return str(error["message"])


def test_install_strict_walls_codex_with_a_profile_and_keeps_the_users_lines(
    project: Path,
) -> None:
    mine = 'model = "o3"\n\n[mcp_servers.docs]\ncommand = "docs-server"\n'
    (project / ".codex").mkdir()
    (project / ".codex" / "config.toml").write_text(mine)
    before = (project / ".tether" / "guard.yaml").read_text()
    done = tether(project, "guard", "install", "codex", "--strict")
    assert done.returncode == 0, done.stderr
    wall = json.loads(done.stdout)["strict"]
    assert wall["config_marked"] and wall["profile"] == "tether-strict" and wall["changed"]
    assert "trusted project" in wall["holds_when"]
    assert (project / ".tether" / "guard.yaml").read_text().replace(
        "      strict: true\n", ""
    ) == before
    data = codex_config(project)
    assert data["model"] == "o3" and data["mcp_servers"] == {"docs": {"command": "docs-server"}}
    assert data["default_permissions"] == "tether-strict"
    profile = data["permissions"]["tether-strict"]
    assert profile["extends"] == ":workspace"
    inside = profile["filesystem"][":project_roots"]
    # each walled path by its first folder in the project, which no command can move away
    for name in (".tether", ".codex", ".claude", ".github", ".opencode", ".mcp.json"):
        assert inside[name] == "read", inside
    state = str((project.parent / "state").resolve())
    assert profile["filesystem"][state] == "read"
    assert profile["filesystem"][str((project.parent / "codex").resolve())] == "read"
    text = (project / ".codex" / "config.toml").read_text()
    again = tether(project, "guard", "install", "codex", "--strict")
    assert json.loads(again.stdout)["strict"]["changed"] is False
    assert (project / ".codex" / "config.toml").read_text() == text


def test_a_configuration_with_strict_walls_codex_without_the_flag(project: Path) -> None:
    config = project / ".tether" / "guard.yaml"
    config.write_text(config.read_text() + "      strict: true\n")
    done = tether(project, "guard", "install", "codex")
    assert done.returncode == 0, done.stderr
    assert codex_config(project)["default_permissions"] == "tether-strict"


@pytest.mark.parametrize(
    ("where", "text", "said"),
    [
        ("user", 'sandbox_mode = "danger-full-access"\n', "sandbox_mode = 'danger-full-access'"),
        ("user", 'sandbox_mode = "workspace-write"\n', "older sandbox settings"),
        ("user", 'profile = "x"\n[profiles.x]\nsandbox_mode = "read-only"\n', "profiles.x."),
        ("project", 'approvals_reviewer = "auto_review"\n', "a model, not a person"),
        ("project", 'default_permissions = ":workspace"\n', "selects another profile"),
        ("project", '[permissions.tether-strict]\nextends = ":read-only"\n', "did not write"),
        ("project", "permissions = { a = 1 }\n", "cannot be added"),
    ],
)
def test_codex_strict_is_refused_where_the_users_settings_would_undo_it_and_nothing_written(
    project: Path, where: str, text: str, said: str
) -> None:
    path = (
        project.parent / "codex" / "config.toml"
        if where == "user"
        else project / ".codex" / "config.toml"
    )
    path.parent.mkdir()
    path.write_text(text)
    config = (project / ".tether" / "guard.yaml").read_text()
    message = refusal(tether(project, "guard", "install", "codex", "--strict"))
    assert said in message and "nothing was written" in message, message
    assert path.read_text() == text
    assert not (project / ".codex" / "hooks.json").exists()
    assert (project / ".tether" / "guard.yaml").read_text() == config


def test_codex_strict_false_in_the_configuration_is_refused_and_nothing_written(
    project: Path,
) -> None:
    config = project / ".tether" / "guard.yaml"
    config.write_text(config.read_text() + "      strict: false\n")
    assert "strict to false" in refusal(tether(project, "guard", "install", "codex", "--strict"))
    assert not (project / ".codex").exists()


def test_managed_requirements_that_do_not_allow_the_profile_are_a_conflict(
    tmp_path: Path,
) -> None:
    requirements = tmp_path / "requirements.toml"
    requirements.write_text('allowed_permission_profiles = [":workspace"]\n')
    found = codex_conflicts(tmp_path, tmp_path / "home", system=(), requirements=str(requirements))
    what = "allowed_permission_profiles = [':workspace'] does not allow tether-strict"
    assert found == [(str(requirements), what)]
    requirements.write_text('allowed_permission_profiles = [":workspace", "tether-strict"]\n')
    assert codex_conflicts(tmp_path, tmp_path / "home", (), str(requirements)) == []


def test_walled_paths_outside_the_project_are_named_from_home_and_inside_by_first_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    project = home / "app"
    project.mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    inside, outside = codex_read_only(
        project, str(home / ".local" / "state" / "tether" / "guard"), home / ".codex"
    )
    assert outside == ["~/.local/state/tether/guard", "~/.codex"]
    assert inside[:3] == [".tether", ".claude", ".codex"] and ".github" in inside
    inside, outside = codex_read_only(project, str(project / "state" / "guard"), tmp_path / "c")
    assert "state" in inside and outside == [str((tmp_path / "c").resolve())]


def test_doctor_finds_codex_wall_off_and_fix_puts_it_back(project: Path) -> None:
    assert tether(project, "guard", "install", "codex", "--strict").returncode == 0
    report = json.loads(tether(project, "guard", "doctor", "--json").stdout)
    assert report["ok"], report
    assert [f for f in report["findings"] if f["harness"] == "claude"] == []
    path = project / ".codex" / "config.toml"
    written = path.read_text()
    path.write_text("".join(written.splitlines(keepends=True)[1:]))  # the selection gone
    done = tether(project, "guard", "doctor", "--json")
    assert done.returncode == 3
    found = [f for f in json.loads(done.stdout)["findings"] if f["check"] == "sandbox_off"]
    assert [(f["harness"], f["where"]) for f in found] == [("codex", ".codex/config.toml")]
    assert "does not select Tether's profile" in found[0]["what"]
    fixed = tether(project, "guard", "doctor", "--fix", "--json")
    assert fixed.returncode == 0 and json.loads(fixed.stdout)["findings"][0]["fixed"]
    assert path.read_text() == written


def test_doctor_leaves_a_users_setting_that_undoes_codex_wall_to_them(project: Path) -> None:
    assert tether(project, "guard", "install", "codex", "--strict").returncode == 0
    user = project.parent / "codex" / "config.toml"
    user.parent.mkdir()
    user.write_text('sandbox_mode = "danger-full-access"\n')
    done = tether(project, "guard", "doctor", "--fix", "--json")
    assert done.returncode == 3
    (found,) = [f for f in json.loads(done.stdout)["findings"] if f["check"] == "sandbox_off"]
    assert not found["fixed"] and str(user) in found["what"] and "change" in found["fix"]
    assert user.read_text() == 'sandbox_mode = "danger-full-access"\n'


def test_doctor_says_a_codex_configuration_that_is_not_toml_and_leaves_it(project: Path) -> None:
    assert tether(project, "guard", "install", "codex", "--strict").returncode == 0
    user = project.parent / "codex" / "config.toml"
    user.parent.mkdir()
    user.write_text("model = \n")
    done = tether(project, "guard", "doctor", "--fix", "--json")
    assert done.returncode == 3, done.stderr
    (found,) = [f for f in json.loads(done.stdout)["findings"] if f["check"] == "sandbox_off"]
    assert "is not valid TOML" in found["what"] and not found["fixed"]
    assert user.read_text() == "model = \n"
