"""The binding protects itself: its hook registrations, its record, its configuration and the
plan made from it. Each test attacks as an agent would, through real hook payloads delivered to
`tether guard hook` (a fresh process per event) and real executions in the file store; each is
named after the red team's finding it answers (R4, R13) or the part of the wall it holds."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from guard import hookkit as hk
from guard.test_binding import TREE, write_config
from tether.guard.binding.registrations import MANAGED_ENV, managed_settings
from tether.guard.harness.install import install_claude
from tether.verbs import Runtime


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project whose sessions bind by what they start, in a home of its own (the user's
    hook registrations are the test's) with no managed settings."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("TETHER_CLAUDE_MANAGED_SETTINGS", str(tmp_path / "managed.json"))
    root = tmp_path / "project"
    root.mkdir()
    (root / "feature.yaml").write_text(TREE)
    (root / "runs").mkdir()
    write_config(root, "profile: dev\nworkflow:\n  bind: auto\n")
    return root


@pytest.fixture
def bound(project: Path) -> str:
    """The session bound by its own `tether start` (a binding record, not a configured trace),
    past the protocol gate."""
    rt = Runtime()
    result = rt.start(str(project / "feature.yaml"), str(project / "runs" / "f.json"))
    uri = str(result["uri"])
    rt.submit(uri, "success")
    hk.hook_json(project, hk.prompt(project, "Build the feature."))
    command = {"command": "tether start feature.yaml runs/f.json"}
    hk.hook_json(project, hk.post(project, "Bash", command, hk.bash_response(json.dumps(result))))
    assert refused(project), "the session is not bound"
    return uri


def refused(project: Path) -> str | None:
    """The reason a Stop is refused, or None when it is let through."""
    out = hk.hook_json(project, hk.stop(project))
    return str(out["reason"]) if out and out.get("decision") == "block" else None


def denied(project: Path, tool: str, params: dict[str, Any]) -> str | None:
    out = hk.hook_json(project, hk.pre(project, tool, params))
    if out is None or out["hookSpecificOutput"].get("permissionDecision") != "deny":
        return None
    return str(out["hookSpecificOutput"]["permissionDecisionReason"])


# -- R4: the binding record --------------------------------------------------------------------


def test_r4_every_json_file_of_the_state_deleted_keeps_the_stop_refused(
    project: Path, bound: str
) -> None:
    """R4: `find ~/.local/state -name '*.json' -delete` run by a program the guard cannot read:
    the binding's copy is not a `.json`, so the binding holds, and is written back."""
    gone = [p for p in (project / ".state").rglob("*.json") if p.is_file()]
    assert any(p.parent.name == "bindings" for p in gone)
    for path in gone:
        path.unlink()
    assert "Implement" in (refused(project) or "")
    assert list((project / ".state" / "bindings").glob("*.json")), "the record is not restored"


@pytest.mark.parametrize(
    "command",
    [
        "find . -name '*.json' -delete",
        "find . -path '*bindings*' -exec rm {} +",
        "cd .state && find . -delete",
        "cd .state/bindings && rm -f *",
    ],
)
def test_r4_a_command_that_deletes_below_the_state_folder_is_denied_while_bound(
    project: Path, bound: str, command: str
) -> None:
    """R4: `find` acts on the folders it names without naming the files; `cd` then a relative
    path names them from elsewhere. Both are read as writing what lies below."""
    assert "may not write" in (denied(project, "Bash", {"command": command}) or "")
    assert list((project / ".state" / "bindings").glob("*.json"))


def test_r4_a_find_that_only_lists_still_runs(project: Path, bound: str) -> None:
    assert denied(project, "Bash", {"command": "find .state -name '*.json'"}) is None


def test_r4_a_binding_record_and_copy_that_cannot_be_read_hold_the_session(
    project: Path, bound: str
) -> None:
    """Both files of the record overwritten: the session is not unbound but bound to what it
    cannot read. Stop is refused up to the cap, and only reading tools run."""
    for path in (project / ".state" / "bindings").iterdir():
        path.write_text("")
    reason = refused(project) or ""
    assert "binding record" in reason and "cannot be read" in reason
    edit = {"file_path": str(project / "app.py"), "content": "x"}
    assert "cannot be read" in (denied(project, "Write", edit) or "")
    assert denied(project, "Read", {"file_path": str(project / "feature.yaml")}) is None
    assert "binding record" in (refused(project) or "")  # the loss itself is kept


# -- R13: the configuration ------------------------------------------------------------------


def test_r13_a_configuration_moved_away_keeps_the_last_good_plan(project: Path, bound: str) -> None:
    """R13: `mv .tether/guard.yaml x` done by a program: the project had a configuration, so it
    is unreadable, not unguarded. The rules and the binding go on under the last good plan,
    and every answer says so."""
    (project / ".tether" / "guard.yaml").rename(project / "x")
    out = hk.hook_json(project, hk.stop(project))
    assert out is not None and out["decision"] == "block" and "Implement" in out["reason"]
    assert "last good configuration" in out["systemMessage"]
    assert "confirm_destructive" in (denied(project, "Bash", {"command": "rm -rf /"}) or "")


def test_r13_a_project_that_never_had_a_configuration_falls_back_and_says_why(
    tmp_path: Path,
) -> None:
    done = hk.hook(tmp_path, hk.pre(tmp_path, "Bash", {"command": "rm -rf /"}))
    assert done.returncode == 0 and "no guard configuration" in done.stdout + done.stderr


# -- the hook registrations ------------------------------------------------------------------

REGISTRATIONS = [
    ("Write", {"file_path": ".claude/settings.json", "content": "{}"}),
    ("Edit", {"file_path": ".claude/settings.local.json", "old_string": "a", "new_string": "b"}),
    ("Write", {"file_path": ".codex/hooks.json", "content": "{}"}),
    ("Write", {"file_path": ".gemini/settings.json", "content": "{}"}),
    ("Write", {"file_path": ".cursor/hooks.json", "content": "{}"}),
    ("Write", {"file_path": ".github/hooks/tether.json", "content": "{}"}),
    ("Write", {"file_path": ".qwen/settings.json", "content": "{}"}),
    ("Write", {"file_path": ".factory/settings.json", "content": "{}"}),
    ("Write", {"file_path": ".opencode/plugin/tether.js", "content": ""}),
    ("Write", {"file_path": "~/.claude/settings.json", "content": "{}"}),
    ("mcp__filesystem__write_file", {"path": ".claude/settings.json", "content": "{}"}),
    ("Bash", {"command": "echo '{}' > .claude/settings.json"}),
    ("Bash", {"command": "sed -i /guard/d .claude/settings.json"}),
    ("Bash", {"command": "rm -rf .claude"}),
    ("Bash", {"command": "cd .github && rm -r hooks"}),
    ("Bash", {"command": "mv .codex/hooks.json /tmp/x"}),
]


@pytest.mark.parametrize(("tool", "params"), REGISTRATIONS, ids=[str(p) for _, p in REGISTRATIONS])
def test_a_bound_session_may_not_write_a_hook_registration(
    project: Path, bound: str, tool: str, params: dict[str, Any]
) -> None:
    install_claude(str(project / ".claude" / "settings.json"), ".tether/guard.yaml")
    before = (project / ".claude" / "settings.json").read_text()
    assert "hook registration" in (denied(project, tool, params) or "")
    assert (project / ".claude" / "settings.json").read_text() == before


def test_an_unbound_session_may_write_a_hook_registration(project: Path) -> None:
    params = {"file_path": ".claude/settings.json", "content": "{}"}
    assert denied(project, "Write", params) is None


# -- ConfigChange ----------------------------------------------------------------------------


def config_change(project: Path, source: str, file: Path | None) -> dict[str, Any] | None:
    fields = {"source": source, **({"file_path": str(file)} if file else {})}
    return hk.hook_json(project, hk.event("ConfigChange", project, **fields))


def test_config_change_refuses_a_change_that_removes_the_guards_hooks(project: Path) -> None:
    settings = project / ".claude" / "settings.json"
    install_claude(str(settings), ".tether/guard.yaml")
    assert config_change(project, "project_settings", settings) is None
    data = json.loads(settings.read_text())
    del data["hooks"]["PreToolUse"]
    settings.write_text(json.dumps(data))
    out = config_change(project, "project_settings", settings)
    assert out is not None and out["decision"] == "block"
    assert "PreToolUse" in out["reason"] and "Stop" not in out["reason"]


def test_config_change_refuses_switching_every_hook_off(project: Path) -> None:
    install_claude(str(project / ".claude" / "settings.json"), ".tether/guard.yaml")
    local = project / ".claude" / "settings.local.json"
    local.write_text(json.dumps({"disableAllHooks": True}))
    out = config_change(project, "local_settings", local)
    assert out is not None and out["decision"] == "block" and "disableAllHooks" in out["reason"]


def test_config_change_lets_through_what_keeps_the_hooks(project: Path, tmp_path: Path) -> None:
    """Hooks moved to another file, the plugin enabled instead, or the managed settings
    (whose change Claude Code never lets a hook refuse)."""
    settings = project / ".claude" / "settings.json"
    local = project / ".claude" / "settings.local.json"
    install_claude(str(local), ".tether/guard.yaml")
    settings.write_text(json.dumps({"permissions": {"allow": ["Read"]}}))
    assert config_change(project, "project_settings", settings) is None
    shutil.move(local, tmp_path / "gone.json")
    local.write_text(json.dumps({"enabledPlugins": {"tether@tether": True}}))
    assert config_change(project, "local_settings", local) is None
    local.write_text("{}")
    assert config_change(project, "policy_settings", tmp_path / "managed.json") is None
    assert config_change(project, "local_settings", local) is not None


# -- managed settings --------------------------------------------------------------------------


def tether(*args: str, cwd: Path, **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tether.cli.main", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        check=False,
        **kw,
    )


def test_install_managed_writes_hooks_that_stay_quiet_where_there_is_no_configuration(
    project: Path, tmp_path: Path
) -> None:
    managed = tmp_path / "etc" / "managed-settings.json"
    args = ("guard", "install", "claude", "--managed", "--settings", str(managed))
    done = tether(*args, "--command", "tether", cwd=project)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["managed"] is True and {"PreToolUse", "ConfigChange"} <= set(out["added"])
    data = json.loads(managed.read_text())
    (group,) = data["hooks"]["PreToolUse"]
    assert group["hooks"][0]["command"].endswith("--if-configured")
    assert not (tmp_path / "etc" / ".tether").exists(), "a configuration was written beside it"
    again = json.loads(tether(*args, "--command", "tether", cwd=project).stdout)
    assert (again["added"], again["updated"]) == ([], [])
    # The hook it installed: quiet in a project that never had a configuration, the rules in one
    # that has it, and the last good plan in one that lost it.
    flag = ["--if-configured"]
    bare = tmp_path / "bare"
    bare.mkdir()
    rm = {"command": "rm -rf /"}
    quiet = hk.hook(bare, hk.pre(bare, "Bash", rm), flags=flag)
    assert (quiet.returncode, quiet.stdout) == (0, "")
    assert "confirm_destructive" in (denied(project, "Bash", rm) or "")
    (project / ".tether" / "guard.yaml").rename(project / "x")
    lost = hk.hook(project, hk.pre(project, "Bash", rm), flags=flag)
    assert "confirm_destructive" in lost.stdout and "last good configuration" in lost.stdout


def test_install_managed_says_where_it_cannot_write(project: Path, tmp_path: Path) -> None:
    """Managed settings where this user cannot write (here a path below a plain file, which
    nobody can write, root included, as no test may touch the machine's own managed settings):
    refused, saying what to run instead, with nothing written anywhere."""
    blocker = tmp_path / "etc"
    blocker.write_text("")
    managed = blocker / "claude-code" / "managed-settings.json"
    args = ("guard", "install", "claude", "--managed", "--settings", str(managed))
    done = tether(*args, cwd=project)
    assert done.returncode != 0
    error = json.loads(done.stderr)["error"]
    assert error["code"] == "forbidden" and str(managed) in error["message"]
    assert "sudo tether guard install claude --managed" in error["message"]
    assert blocker.read_text() == "" and not (project / ".claude").exists()


def test_the_managed_settings_are_where_claude_code_reads_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(MANAGED_ENV, raising=False)
    expected = {
        "linux": "/etc/claude-code/managed-settings.json",
        "darwin": "/Library/Application Support/ClaudeCode/managed-settings.json",
    }
    if sys.platform in expected:
        assert managed_settings() == expected[sys.platform]
    else:
        assert managed_settings().endswith(os.path.join("ClaudeCode", "managed-settings.json"))


# -- tether guard doctor -----------------------------------------------------------------------


def doctor(project: Path, *args: str) -> tuple[int, dict[str, Any]]:
    done = tether(
        "guard", "doctor", str(project), "--state-dir", ".state", "--json", *args, cwd=project
    )
    assert done.stdout, done.stderr
    return done.returncode, json.loads(done.stdout)


def checks(report: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for finding in report["findings"]:
        out.setdefault(finding["check"], []).append(finding)
    return out


def test_doctor_finds_a_removed_hook_a_doubled_hook_and_a_disabled_sandbox_and_fixes_the_first(
    project: Path,
) -> None:
    """The done-when of the wall: a project whose PreToolUse hook was taken out of
    `.claude/settings.json`, whose Stop hook is also in `.claude/settings.local.json`, and whose
    configuration asks for strict mode while Claude Code's sandbox is off."""
    settings = project / ".claude" / "settings.json"
    install_claude(str(settings), ".tether/guard.yaml", command="tether")
    code, healthy = doctor(project)
    assert code == 0 and healthy["ok"] is True and not checks(healthy).get("hooks_missing")
    data = json.loads(settings.read_text())
    del data["hooks"]["PreToolUse"]
    data["sandbox"] = {"enabled": False}
    settings.write_text(json.dumps(data))
    local = project / ".claude" / "settings.local.json"
    local.write_text(json.dumps({"hooks": {"Stop": data["hooks"]["Stop"]}}))
    (project / ".tether" / "guard.yaml").write_text(
        "profile: dev\nworkflow:\n  bind: auto\n  strict: true\n"
    )
    code, found = doctor(project)
    assert code == 3 and found["ok"] is False
    by = checks(found)
    (missing,) = by["hooks_missing"]
    assert missing["harness"] == "claude" and missing["what"].startswith("PreToolUse ")
    assert missing["where"] == os.path.join(".claude", "settings.json")
    (doubled,) = by["hooks_doubled"]
    assert doubled["what"].startswith("Stop runs the guard's hooks 2 times")
    assert by["sandbox_off"][0]["severity"] == "problem"
    code, fixed = doctor(project, "--fix")
    assert [f["fixed"] for f in checks(fixed)["hooks_missing"]] == [True]
    (group,) = json.loads(settings.read_text())["hooks"]["PreToolUse"]
    assert group["hooks"][0]["command"].startswith("tether guard hook --config ")
    after = checks(doctor(project)[1])
    assert "hooks_missing" not in after and "hooks_doubled" in after and "sandbox_off" in after


def test_doctor_finds_hooks_switched_off_a_lost_configuration_and_another_harness(
    project: Path,
) -> None:
    from tether.guard.harness.install import install_harness

    install_claude(str(project / ".claude" / "settings.json"), ".tether/guard.yaml")
    install_harness("codex", str(project / ".codex" / "hooks.json"), ".tether/guard.yaml", "tether")
    assert hk.hook_json(project, hk.prompt(project, "hi")) is None  # a plan of it is kept
    (project / ".claude" / "settings.local.json").write_text('{"disableAllHooks": true}')
    codex = json.loads((project / ".codex" / "hooks.json").read_text())
    del codex["hooks"]["Stop"]
    (project / ".codex" / "hooks.json").write_text(json.dumps(codex))
    (project / ".tether" / "guard.yaml").rename(project / "x")
    by = checks(doctor(project)[1])
    assert by["hooks_disabled"][0]["where"] == os.path.join(".claude", "settings.local.json")
    assert by["config_lost"][0]["what"].endswith("under the last good plan read from it")
    assert [f["what"] for f in by["hooks_missing"]] == ["Stop runs no hook of the guard"]
    (project / "x").rename(project / ".tether" / "guard.yaml")
    by = checks(doctor(project, "--fix")[1])
    assert all(f["fixed"] for f in by["hooks_missing"] + by["hooks_disabled"])
    assert doctor(project)[0] == 0
    assert "Stop" in json.loads((project / ".codex" / "hooks.json").read_text())["hooks"]


def test_doctor_prints_a_table_for_a_person(project: Path) -> None:
    install_claude(str(project / ".claude" / "settings.json"), ".tether/guard.yaml")
    (project / ".tether" / "guard.yaml").write_text("profile: nope\n")
    done = tether("guard", "doctor", "--state-dir", ".state", cwd=project)
    assert done.returncode == 3
    first, *rows = done.stdout.splitlines()
    assert first == f"guard of {project}: 1 problem(s)"
    assert rows[0].split()[:2] == ["problem", "config_unreadable"] and "nope" in rows[0]


def test_doctor_reads_the_version_of_the_real_claude_code_on_path(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pinned Claude Code on PATH: the version the guard was tested with draws no warning;
    the doctor told of another tested version warns, naming the one it found."""
    from field.claudekit import claude_binary
    from tether.guard.harness import doctor as doctoring

    folder = os.path.dirname(claude_binary())
    monkeypatch.setenv("PATH", folder + os.pathsep + os.environ["PATH"])
    install_claude(str(project / ".claude" / "settings.json"), ".tether/guard.yaml")
    place = doctoring.Project(project, str(project / ".tether" / "guard.yaml"), ".state")
    assert not [f for f in doctoring.diagnose(place) if f.check == "harness_untested"]
    from tether.guard.harness import capabilities

    table = capabilities.shipped()
    older = [
        {**row, "version": "2.0.0"} if row["harness"] == "claude" else row
        for row in table["tested"]
    ]
    monkeypatch.setattr(capabilities, "shipped", lambda: {**table, "tested": older})
    (warned,) = [f for f in doctoring.diagnose(place) if f.check == "harness_untested"]
    assert warned.what == "Claude Code 2.1.332 here; the guard was tested with 2.0.0"


def test_r4_the_findings_own_line_is_denied_with_the_state_in_its_default_place(
    project: Path,
) -> None:
    """R4 as the red team typed it: the state in `~/.local/state/tether/guard`, and `find
    ~/.local/state -name '*.json' -delete`, which names only a parent of the binding record."""
    state = Path.home() / ".local" / "state" / "tether" / "guard"
    flags = ["--state-dir", str(state)]
    rt = Runtime()
    result = rt.start(str(project / "feature.yaml"), str(project / "runs" / "f.json"))
    rt.submit(str(result["uri"]), "success")
    hk.hook(project, hk.prompt(project, "Build it."), flags=flags)
    started = hk.post(
        project,
        "Bash",
        {"command": "tether start feature.yaml runs/f.json"},
        hk.bash_response(json.dumps(result)),
    )
    hk.hook(project, started, flags=flags)
    assert list((state / "bindings").glob("*.json"))
    line = {"command": "find ~/.local/state -name '*.json' -delete"}
    out = json.loads(hk.hook(project, hk.pre(project, "Bash", line), flags=flags).stdout)
    reason = out["hookSpecificOutput"]["permissionDecisionReason"]
    assert "guard's state folder" in reason, reason


@pytest.mark.parametrize(
    "command", ["cd runs && truncate -s 0 f.json", "pushd runs; : > f.json", "cd runs; rm *"]
)
def test_a_relative_path_after_cd_names_the_bound_execution(
    project: Path, bound: str, command: str
) -> None:
    """`cd runs && truncate -s 0 f.json`, seen in all three harnesses: the relative name is read
    from the folder the line went to."""
    assert "bound execution" in (denied(project, "Bash", {"command": command}) or "")
    assert Runtime().open_steps(bound)["status"] == "running"


@pytest.mark.parametrize("harness", ["codex", "gemini"])
def test_r13_another_harnesss_hook_keeps_the_last_good_plan_too(
    project: Path, harness: str
) -> None:
    """The hook command `tether guard install codex|gemini` writes (`--config` relative to the
    session's folder), after `mv .tether/guard.yaml x`: the last good plan still blocks."""
    tool = "Bash" if harness == "codex" else "run_shell_command"
    event = "PreToolUse" if harness == "codex" else "BeforeTool"
    flags = ["--harness", harness, "--config", ".tether/guard.yaml"]

    def rm() -> str:
        payload = hk.pre(project, tool, {"command": "rm -rf /"}, hook_event_name=event)
        return hk.hook(project, payload, flags=flags).stdout

    assert "confirm_destructive" in rm()
    (project / ".tether" / "guard.yaml").rename(project / "x")
    out = rm()
    assert "confirm_destructive" in out and "last good configuration" in out
