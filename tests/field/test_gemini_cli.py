"""Tether's guard inside a real Gemini CLI 0.61, driven headless against the scripted model.

Each test sets a project up as a user would (`tether init`, then `tether guard install gemini`
and `tether mcp install --target gemini` in the bound-feature example it writes, whose guard
binds a session to the execution it starts, refuses a stop 3 times in a row and records
evidence), runs `gemini -p` once, and asserts what a user would notice: the execution's trace,
the files on disk, and what the model was told (the request bodies the scripted model kept).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from field.gemini import GeminiModel, installed, run
from field.scripted import Call, Text, Turn

TETHER = str(Path(sys.executable).with_name("tether"))
TRACE = "runs/feature.json"
PYTEST = "python -m pytest -q -p no:cacheprovider test_calc.py"  # the venv's python, first on PATH
REFUSED = "(Stop refused {} of 3 times in a row.)"


def tether(cwd: Path, *args: str) -> Any:
    done = subprocess.run([TETHER, *args], cwd=cwd, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout) if done.stdout.strip() else None


def shell(command: str) -> list[Call]:
    return [Call("run_shell_command", {"command": command})]


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A HOME of the test's own, and this installation first on PATH, for every command the
    test runs as the user (an install never reaches the machine's own configuration)."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("PATH", os.path.dirname(TETHER) + os.pathsep + os.environ["PATH"])
    return home


@pytest.fixture
def project(tmp_path: Path, home: Path) -> Path:
    """`tether init` in a fresh folder, then Gemini CLI's hooks and Tether's MCP server
    installed in the bound-feature example it wrote."""
    installed()
    tether(tmp_path, "init", str(tmp_path))
    project = tmp_path / "examples" / "bound-feature"
    assert tether(project, "guard", "install", "gemini")["launch"]["how"] == "path"
    assert tether(project, "mcp", "install", "--target", "gemini")["scope"] == "project"
    return project


def walk_to(project: Path, step: str) -> None:
    """The execution started outside the session and answered up to `step` (Review, Test)."""
    tether(project, "start", "feature.yaml", TRACE)
    answers = [[], ["--set", "plan=Keep add as it is."], [], ["--set", "review=Fine."]]
    for extra in answers[: 3 if step == "Review" else 4]:  # the protocol, Understand, ...
        tether(project, "submit", TRACE, "success", *extra)
    assert tether(project, "next", TRACE)["name"] == step


def entries(project: Path, kind: str) -> list[dict[str, Any]]:
    return [e for e in tether(project, "trace", TRACE) if e["kind"] == kind]


def bindings(home: Path) -> list[dict[str, Any]]:
    """Every execution a session is bound to (`trace`, `via`), over the sessions."""
    folder = home / ".local" / "state" / "tether" / "guard" / "bindings"
    files = sorted(folder.glob("*.json"))
    return [e for p in files for e in json.loads(p.read_text())["executions"]]


@pytest.mark.harness_capability("gemini", "events")
@pytest.mark.harness_capability("gemini", "stop")
def test_a_shell_start_binds_the_session_and_its_stops_are_refused_up_to_the_cap(
    project: Path, home: Path
) -> None:
    with GeminiModel([shell(f"tether start feature.yaml {TRACE}"), Text("All done.")]) as model:
        result = run(project, home, model, "Start the feature workflow.")
    assert result.code == 0, result.stderr
    assert [(b["via"], b["trace"].endswith(TRACE)) for b in bindings(home)] == [("shell", True)]
    assert [s["outcome"] for s in entries(project, "stop")] == ["refused"] * 3 + ["parked"]
    told = model.user_texts()
    for n in (1, 2, 3):  # each refusal reached the model as the next prompt, with its reason
        reason = next(t for t in told if t.endswith(REFUSED.format(n)))
        assert "its open step is the instruct 'Acknowledge_Protocol'" in reason
        assert "Accept the protocol first: submit success" in reason
    assert "is parked after 3 refusals in a row" in result.stderr  # told to the user
    assert result.of("result")[-1]["status"] == "success"


def test_an_mcp_start_binds_the_session(project: Path, home: Path) -> None:
    start = {"tree_uri": "feature.yaml", "trace_output": TRACE}
    script: list[Turn] = [[Call("mcp_tether_start_execution", start)], Text("Started.")]
    with GeminiModel(script) as model:
        result = run(project, home, model, "Start the feature workflow.")
    assert result.code == 0, result.stderr
    assert [b["via"] for b in bindings(home)] == ["mcp"]
    assert [s["outcome"] for s in entries(project, "stop")] == ["refused"] * 3 + ["parked"]
    assert any(t.endswith(REFUSED.format(1)) for t in model.user_texts())


@pytest.mark.harness_capability("gemini", "deny")
def test_a_call_outside_the_step_policy_is_denied_and_the_file_is_left_as_it_was(
    project: Path, home: Path
) -> None:
    walk_to(project, "Review")
    before = (project / "calc.py").read_text()
    edit = {
        "file_path": str(project / "calc.py"),
        "instruction": "Rename the parameters.",
        "old_string": "return a + b",
        "new_string": "return b + a",
    }
    script: list[Turn] = [
        shell(f"tether resume {TRACE}"),
        [Call("replace", edit)],
        Text("Reviewed."),
    ]
    with GeminiModel(script) as model:
        result = run(project, home, model, "Review the change.")
    assert result.code == 0, result.stderr
    assert (project / "calc.py").read_text() == before
    denied = next(r for r in model.function_responses() if r["name"] == "replace")
    text = json.dumps(denied["response"])
    assert "Edit may not run while the instruct 'Review' is open" in text
    assert "the tools policy of 'Review' allows Read, Grep, Glob" in text
    assert [b["via"] for b in bindings(home)] == ["shell"]  # bound by its resume
    assert entries(project, "tool") == []  # a denied call never ran: no evidence of it


@pytest.mark.harness_capability("gemini", "evidence")
def test_evidence_is_ok_only_on_a_sign_of_success_and_the_tools_check_decides_on_it(
    project: Path, home: Path
) -> None:
    walk_to(project, "Test")
    calc = project / "calc.py"
    calc.write_text(calc.read_text().replace("a + b", "a - b"))  # a bug for the tests to find
    fix = {
        "file_path": str(calc),
        "instruction": "Add instead of subtracting.",
        "old_string": "return a - b",
        "new_string": "return a + b",
    }
    submit = shell(f"tether submit {TRACE} success")
    script: list[Turn] = [
        shell(f"tether resume {TRACE}"),
        [Call("read_file", {"file_path": "missing.py"})],  # fails: Gemini CLI sets `error`
        [Call("read_file", {"file_path": "calc.py"})],
        shell(PYTEST),  # fails: exit 1
        submit,  # refused by the check: no passing pytest run yet
        [Call("replace", fix)],
        shell(PYTEST),  # passes
        submit,
        Text("Tests pass."),
    ]
    with GeminiModel(script) as model:
        result = run(project, home, model, "Run the tests and fix what fails.")
    assert result.code == 0, result.stderr
    tools = [(e["tool"], e["ok"]) for e in entries(project, "tool")]
    assert tools == [
        ("Read", False),
        ("Read", True),
        ("Bash", False),
        ("Edit", True),
        ("Bash", True),
    ]
    checks = [c["outcome"] for c in entries(project, "check") if c["name"] == "Test"]
    assert checks == ["failed", "passed"]
    first = next(r for r in model.function_responses() if "Retrying" in json.dumps(r))
    assert "'Test' attempt 2 of 3" in json.dumps(first)
    assert tether(project, "next", TRACE) == {"status": "done"}
    assert entries(project, "stop") == []  # done: the stop went through unrecorded
    assert tether(project, "verify", TRACE)["ok"]


@pytest.mark.harness_capability("gemini", "context")
def test_the_configured_execution_is_told_to_the_model_before_its_first_turn(
    project: Path, home: Path
) -> None:
    config = project / ".tether" / "guard.yaml"
    config.write_text(config.read_text().replace(f"# trace: {TRACE}", f"trace: {TRACE}"))
    walk_to(project, "Review")
    with GeminiModel([Text("Nothing to do.")]) as model:
        result = run(project, home, model, "What now?")
    assert result.code == 0, result.stderr
    first = model.turns()[0]
    told = [p["text"] for c in first["contents"] for p in c["parts"] if "text" in p]
    context = next(t for t in told if "[Tether] This session is bound" in t)
    assert "Current request: instruct 'Review' (step " in context
    assert "Review the diff as a colleague would" in context
    assert [s["outcome"] for s in entries(project, "stop")] == ["refused"] * 3 + ["parked"]


def test_a_bound_session_cannot_remove_its_hooks_or_its_binding_record(
    project: Path, home: Path
) -> None:
    """The binding protects itself in a real Gemini CLI: the agent, bound by its own start,
    overwrites Gemini CLI's hooks file by redirection and with `write_file`, then runs the red
    team's R4 line (`find ~/.local/state -name '*.json' -delete`, the guard's state being under
    this HOME). Each is denied, the files are as they were, and the stops are still refused."""
    settings = project / ".gemini" / "settings.json"
    before = settings.read_text()
    script: list[Turn] = [
        shell(f"tether start feature.yaml {TRACE}"),
        shell("echo '{}' > .gemini/settings.json"),
        [Call("write_file", {"file_path": str(settings), "content": "{}"})],
        shell("find ~/.local/state -name '*.json' -delete"),
        Text("All done."),
    ]
    with GeminiModel(script) as model:
        result = run(project, home, model, "Start the feature workflow.")
    assert result.code == 0, result.stderr
    assert settings.read_text() == before
    assert [b["via"] for b in bindings(home)] == ["shell"]
    answers = [json.dumps(r["response"]) for r in model.function_responses()][1:4]
    assert all("may not write" in text for text in answers), answers
    assert "hook registration" in answers[0] and "hook registration" in answers[1]
    assert "guard's state folder" in answers[2]
    assert [s["outcome"] for s in entries(project, "stop")] == ["refused"] * 3 + ["parked"]
