"""Tether's guard inside a real OpenCode 1.18.33 (scripts/install-test-deps-opencode), driven
headless (`opencode run`) against the scripted Chat Completions model on 127.0.0.1. The project
is set up as a user would (`tether init`, `tether guard install opencode`, which writes the
plugin `.opencode/plugin/tether.js`). OpenCode's plugin package is copied in from the install
(OpenCode would fetch it from the npm registry on a first run), and the registry is pointed at
a closed port, so a run that tried to reach it would load no plugin and fail these tests."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from field import claudekit as ck
from field.openai_chat import ChatModel
from field.scripted import Call, Text, Turn
from field.test_claude_code import CALC, CHECKED, REPORT, REVIEW

ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / ".cache" / "opencode"
OPENCODE = CACHE / "node_modules" / ".bin" / "opencode"


def sh(command: str) -> list[Call]:
    return [Call("bash", {"command": command, "description": "run"})]


def start(tree: str) -> list[Turn]:
    return [sh(f"tether start {tree} run.json"), sh("tether submit run.json success")]


def project(tmp: Path, trees: dict[str, str]) -> Path:
    """A project with Tether installed for OpenCode, and OpenCode's plugin package in place."""
    if not OPENCODE.exists():
        pytest.fail(
            "OpenCode is not installed: run scripts/install-test-deps-opencode (scripts/test "
            "runs it)",
            pytrace=False,
        )
    root = ck.project(tmp, install=False, trees=trees)
    installed = ck.tether(root, "guard", "install", "opencode")
    assert installed["file"] == ".opencode/plugin/tether.js", installed
    config = ck.home(root) / ".config" / "opencode"
    for folder in (root / ".opencode", config):
        folder.mkdir(parents=True, exist_ok=True)
        for name in ("package.json", "package-lock.json"):
            shutil.copy2(CACHE / "plugin" / name, folder / name)
        shutil.copytree(CACHE / "plugin" / "node_modules", folder / "node_modules")
    return root


@dataclass
class Run:
    code: int
    stdout: str
    stderr: str


def opencode(root: Path, model: ChatModel, prompt: str = "Do the work.", *args: str) -> Run:
    """One `opencode run` in the project against the scripted model."""
    (root / "opencode.json").write_text(
        json.dumps(
            {
                "provider": {
                    "fake": {
                        "npm": "@ai-sdk/openai-compatible",
                        "name": "Fake",
                        "options": {"baseURL": f"{model.url}/v1", "apiKey": "sk-fake"},
                        "models": {"fake-model": {"name": "Fake", "tool_call": True}},
                    }
                },
                "model": "fake/fake-model",
                "small_model": "fake/fake-model",
                "autoupdate": False,
                "share": "disabled",
                "permission": {"bash": "allow", "edit": "allow"},
            }
        )
    )
    home = ck.home(root)
    env = {
        "PATH": f"{ck.BIN}{os.pathsep}/usr/bin:/bin",
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "OPENCODE_DISABLE_MODELS_FETCH": "1",
        "OPENCODE_DISABLE_AUTOUPDATE": "1",
        "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
        "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
        "OPENCODE_DISABLE_SHARE": "1",
        "NPM_CONFIG_REGISTRY": "http://127.0.0.1:9/",
    }
    done = subprocess.run(
        [str(OPENCODE), "run", *args, prompt],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    return Run(done.returncode, done.stdout, done.stderr)


@pytest.mark.harness_capability("opencode", "events")
@pytest.mark.harness_capability("opencode", "deny")
def test_a_shell_start_binds_and_a_call_outside_the_policy_is_denied(tmp_path: Path) -> None:
    root = project(tmp_path, {"review.yaml": REVIEW, "calc.py": CALC})
    script: list[Turn] = [*start("review.yaml"), sh("echo hacked > calc.py"), Text("Reviewed.")]
    with ChatModel(script) as model:
        run = opencode(root, model)
    assert run.code == 0, run.stderr[-2000:]
    assert (root / "calc.py").read_text() == CALC
    denied = model.tool_results()[-1]
    assert "[Tether] Bash may not run while the instruct 'Review' is open" in denied, denied
    tools = [e["input"]["command"] for e in ck.kinds(ck.trace(root, "run.json"), "tool")]
    assert tools == [], tools  # the tether calls are the protocol, the write never ran


@pytest.mark.harness_capability("opencode", "evidence")
def test_evidence_is_not_ok_for_a_failing_command_and_the_check_decides(tmp_path: Path) -> None:
    root = project(tmp_path, {"checked.yaml": CHECKED, "check.sh": "test -f fixed\n"})
    script: list[Turn] = [
        *start("checked.yaml"),
        sh("sh check.sh"),
        sh("tether submit run.json success"),
        sh("touch fixed"),
        sh("sh check.sh"),
        sh("tether submit run.json success"),
        Text("Checks pass."),
    ]
    with ChatModel(script) as model:
        run = opencode(root, model)
    assert run.code == 0, run.stderr[-2000:]
    entries = ck.trace(root, "run.json")
    runs = [(e["input"]["command"], e["ok"]) for e in ck.kinds(entries, "tool")]
    assert runs == [("sh check.sh", False), ("touch fixed", True), ("sh check.sh", True)], runs
    assert [e["outcome"] for e in ck.kinds(entries, "check")] == ["failed", "passed"]
    assert ck.tether(root, "get", "run.json")["status"] == "complete"


@pytest.mark.harness_capability("opencode", "context")
@pytest.mark.harness_capability("opencode", "events")
@pytest.mark.harness_capability(
    "opencode", "stop", cannot="no hook can keep a session going; its end is recorded (ended)"
)
def test_a_bound_sessions_end_is_recorded_and_the_continued_session_told_its_open_step(
    tmp_path: Path,
) -> None:
    root = project(tmp_path, {"report.yaml": REPORT})
    with ChatModel([*start("report.yaml"), Text("All done.")]) as first:
        ended = opencode(root, first)
    assert ended.code == 0, ended.stderr[-2000:]
    # OpenCode 1.18.33 has no hook that can keep a session going: it ends although bound, and
    # the end is recorded.
    assert ck.tether(root, "get", "run.json")["status"] == "running"
    assert first.turns_taken == 3
    ends = ck.kinds(ck.trace(root, "run.json"), "stop")
    assert [(s["outcome"], s["name"]) for s in ends] == [("ended", "Report")], ends
    with ChatModel([Text("Resuming.")]) as second:
        resumed = opencode(root, second, "Carry on.", "--continue")
    assert resumed.code == 0, resumed.stderr[-2000:]
    told = "\n".join(second.told())
    assert f"[Tether] This session is bound to the execution file://{root}/run.json" in told
    assert "Current request: instruct 'Report'" in told
    assert "Write the weekly report to report.md." in told
    ends = ck.kinds(ck.trace(root, "run.json"), "stop")
    assert [s["outcome"] for s in ends] == ["ended", "ended"], ends
