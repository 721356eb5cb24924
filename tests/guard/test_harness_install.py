"""`tether guard install codex|gemini|cursor|copilot|qwen|droid`: each harness's hooks file,
merged, idempotent, portable, and the command it writes run as the harness would run it."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from guard import harnesskit as hx
from tether.guard.cli import main

FILES = {
    "codex": Path(".codex", "hooks.json"),
    "gemini": Path(".gemini", "settings.json"),
    "cursor": Path(".cursor", "hooks.json"),
    "copilot": Path(".github", "hooks", "tether.json"),
    "qwen": Path(".qwen", "settings.json"),
    "droid": Path(".factory", "settings.json"),
}
CLAUDE_SHAPED = ["SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop"]
EVENTS = {
    "codex": [
        "SessionStart",
        "UserPromptSubmit",
        "PreToolUse",
        "PostToolUse",
        "Stop",
        "SubagentStop",
    ],
    "gemini": [
        "SessionStart",
        "BeforeAgent",
        "BeforeTool",
        "AfterTool",
        "AfterAgent",
        "SessionEnd",
    ],
    "cursor": [
        "sessionStart",
        "beforeSubmitPrompt",
        "preToolUse",
        "postToolUse",
        "postToolUseFailure",
        "stop",
        "sessionEnd",
    ],
    "copilot": [
        "sessionStart",
        "userPromptSubmitted",
        "preToolUse",
        "postToolUse",
        "agentStop",
        "sessionEnd",
    ],
    "qwen": [*CLAUDE_SHAPED, "PostToolUseFailure", "SessionEnd"],
    "droid": [*CLAUDE_SHAPED, "SessionEnd"],
}
HARNESSES = list(FILES)
COMMAND = "tether guard hook --harness {h} --config .tether/guard.yaml"


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any], dict]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, json.loads(out) if out else {}, json.loads(err) if err else {}


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The current folder, with this installation's `tether` first on PATH (so the command
    written is the portable `tether`)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", str(Path(sys.executable).parent))
    return tmp_path


def handlers(harness: str, data: dict[str, Any], event: str) -> list[dict[str, Any]]:
    entries = data["hooks"][event]
    if harness == "copilot":  # its handler's command is `bash`
        return [{**h, "command": h["bash"]} for h in entries]
    if harness == "cursor":
        return list(entries)
    return [h for group in entries for h in group["hooks"]]


@pytest.mark.parametrize("harness", HARNESSES)
def test_install_writes_the_harness_file_and_says_what(
    project: Path, capsys: pytest.CaptureFixture[str], harness: str
) -> None:
    code, out, _ = cli(capsys, "install", harness)
    assert code == 0
    path = project / FILES[harness]
    assert out["file"] == str(FILES[harness]) and out["harness"] == harness
    assert out["added"] == EVENTS[harness] and out["updated"] == []
    assert out["command"] == COMMAND.format(h=harness)
    assert out["created_config"] is True and out["on_error"] == "block"
    assert out["launch"] == {"how": "path", "command": "tether", "portable": True}
    assert "note" not in out
    assert (project / ".tether" / "guard.yaml").read_text().startswith("security:")
    data = json.loads(path.read_text())
    assert list(data["hooks"]) == EVENTS[harness]
    for event in EVENTS[harness]:
        (handler,) = handlers(harness, data, event)
        assert handler["command"] == out["command"]
    assert str(project) not in path.read_text()  # nothing of this machine in a project file


def test_codex_groups_carry_a_matcher_on_tool_events_only(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cli(capsys, "install", "codex")
    hooks = json.loads((project / FILES["codex"]).read_text())["hooks"]
    assert hooks["PreToolUse"] == [
        {
            "matcher": "*",
            "hooks": [{"type": "command", "command": COMMAND.format(h="codex"), "timeout": 30}],
        }
    ]
    assert "matcher" not in hooks["Stop"][0]
    assert set(json.loads((project / FILES["codex"]).read_text())) == {"hooks"}


def test_codex_install_says_its_hooks_run_only_once_trusted(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Codex runs untrusted project hooks not at all, and silently (tests/field/test_codex.py)."""
    _, out, _ = cli(capsys, "install", "codex")
    assert "/hooks" in out["before_it_runs"] and "unguarded" in out["before_it_runs"]
    assert "--dangerously-bypass-hook-trust" in out["before_it_runs"]
    _, gemini, _ = cli(capsys, "install", "gemini")
    assert "before_it_runs" not in gemini


def test_gemini_counts_its_timeout_in_milliseconds(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cli(capsys, "install", "gemini")
    hooks = json.loads((project / FILES["gemini"]).read_text())["hooks"]
    (group,) = hooks["BeforeTool"]
    assert group["matcher"] == "*"
    assert group["hooks"][0]["timeout"] == 30000 and group["hooks"][0]["name"] == "tether-guard"
    assert "matcher" not in hooks["AfterAgent"][0]


def test_copilot_writes_version_1_and_flat_bash_entries_and_says_when_they_run(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, out, _ = cli(capsys, "install", "copilot")
    data = json.loads((project / FILES["copilot"]).read_text())
    assert data["version"] == 1
    command = COMMAND.format(h="copilot")
    assert data["hooks"]["agentStop"] == [{"type": "command", "bash": command, "timeoutSec": 30}]
    assert "GITHUB_COPILOT_PROMPT_MODE_REPO_HOOKS=true" in out["before_it_runs"]


def test_qwen_counts_its_timeout_in_milliseconds_and_says_when_hooks_run(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, out, _ = cli(capsys, "install", "qwen")
    data = json.loads((project / FILES["qwen"]).read_text())
    assert handlers("qwen", data, "PreToolUse")[0]["timeout"] == 30000
    assert "folder trust" in out["before_it_runs"]


def test_cursor_writes_version_1_and_flat_entries(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cli(capsys, "install", "cursor")
    data = json.loads((project / FILES["cursor"]).read_text())
    assert data["version"] == 1
    assert data["hooks"]["stop"] == [{"command": COMMAND.format(h="cursor"), "timeout": 30}]


EXISTING: dict[str, dict[str, Any]] = {
    "codex": {
        "hooks": {
            "PreToolUse": [
                {"matcher": "^Bash$", "hooks": [{"type": "command", "command": "./policy.sh"}]}
            ],
            "Stop": [{"hooks": [{"type": "command", "command": "ruff check"}]}],
        }
    },
    "gemini": {
        "model": {"name": "gemini-2.5-pro"},
        "hooksConfig": {"enabled": True},
        "hooks": {
            "BeforeTool": [
                {"matcher": "write_file", "hooks": [{"type": "command", "command": "lint.sh"}]}
            ]
        },
    },
    "cursor": {
        "version": 1,
        "hooks": {
            "afterFileEdit": [{"command": "./format.sh"}],
            "preToolUse": [{"command": "./audit.sh", "matcher": "Shell"}],
        },
    },
    "copilot": {
        "version": 1,
        "hooks": {"preToolUse": [{"type": "command", "bash": "./audit.sh", "timeoutSec": 5}]},
    },
    "qwen": {
        "tools": {"sandbox": False},
        "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify.sh"}]}]},
    },
    "droid": {
        "model": "custom:Mine-0",
        "hooks": {
            "PostToolUse": [{"matcher": "Edit", "hooks": [{"type": "command", "command": "fmt"}]}]
        },
    },
}


@pytest.mark.parametrize("harness", HARNESSES)
def test_install_merges_and_a_second_run_changes_nothing(
    project: Path, capsys: pytest.CaptureFixture[str], harness: str
) -> None:
    path = project / FILES[harness]
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(EXISTING[harness]))
    cli(capsys, "install", harness)
    data = json.loads(path.read_text())
    for key, value in EXISTING[harness].items():
        if key != "hooks":
            assert data[key] == value
    for event, entries in EXISTING[harness]["hooks"].items():
        assert data["hooks"][event][: len(entries)] == entries  # theirs kept, first
    written = path.read_text()
    code, out, _ = cli(capsys, "install", harness)
    assert code == 0 and (out["added"], out["updated"]) == ([], [])
    assert out["created_config"] is False
    assert path.read_text() == written


@pytest.mark.parametrize("harness", HARNESSES)
def test_install_again_with_other_options_replaces_its_own_entries(
    project: Path, capsys: pytest.CaptureFixture[str], harness: str
) -> None:
    cli(capsys, "install", harness)
    code, out, _ = cli(capsys, "install", harness, "--on-error", "allow", "--command", "uvx tether")
    assert code == 0 and out["added"] == [] and out["updated"] == EVENTS[harness]
    data = json.loads((project / FILES[harness]).read_text())
    for event in EVENTS[harness]:
        (handler,) = handlers(harness, data, event)
        assert handler["command"].startswith("uvx tether guard hook --harness")
        assert handler["command"].endswith("--on-error allow")


def test_a_command_that_names_this_machine_is_written_and_said(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mine = str(Path(sys.executable).parent / "tether")
    code, out, _ = cli(capsys, "install", "codex", "--command", mine)
    assert code == 0
    assert out["launch"]["portable"] is False
    assert "names a path on this machine" in out["note"] and "pipx install ." in out["note"]
    assert out["file"] == str(FILES["codex"])


def test_install_refuses_a_broken_file_and_leaves_it(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = project / FILES["gemini"]
    path.parent.mkdir()
    path.write_text('{"hooks": {')
    code, _, err = cli(capsys, "install", "gemini")
    assert code == 3 and err["error"]["code"] == "invalid_json"
    assert path.read_text() == '{"hooks": {'
    assert not (project / ".tether").exists()
    path.write_text('{"hooks": {"BeforeTool": {"matcher": "x"}}}')
    code, _, err = cli(capsys, "install", "gemini")
    assert code == 3 and "hooks.BeforeTool must be a list" in err["error"]["message"]
    assert path.read_text() == '{"hooks": {"BeforeTool": {"matcher": "x"}}}'


def test_install_refuses_http_hooks_for_a_command_only_harness(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = cli(capsys, "install", "cursor", "--http", "http://127.0.0.1:8977/hook")
    assert code == 2 and err["error"]["code"] == "usage"
    assert not (project / ".cursor").exists()


def test_the_installed_command_runs_as_the_harness_runs_it(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The Gemini CLI hook as written, run by a shell in the project (Gemini runs hooks there),
    answers a destructive command with a denial."""
    launcher = f"{shlex.quote(sys.executable)} -m tether.cli.main"
    code, out, _ = cli(capsys, "install", "gemini", "--command", launcher)
    assert code == 0 and out["command"].startswith(launcher)
    (group,) = json.loads((project / FILES["gemini"]).read_text())["hooks"]["BeforeTool"]
    command = group["hooks"][0]["command"]
    payload = hx.gemini(
        "BeforeTool", project, tool_name="run_shell_command", tool_input={"command": "rm -rf /"}
    )
    src = str(Path(__file__).resolve().parents[2] / "src")
    env = {**os.environ, "PYTHONPATH": src, "TETHER_GUARD_STATE": str(project / ".state")}
    done = subprocess.run(
        ["/bin/sh", "-c", command],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        cwd=project,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["decision"] == "deny"
