"""A bound session's shell lines read as the shell runs them: a newline ends a command for the
tools policy, only a plain call of the installed `tether` is Tether's own, and deny entries see
through wrappers and other servers' file tools. Real hook payloads through `tether guard hook`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from guard import hookkit as hk
from tether.verbs import Runtime

TREE = """\
name: shell
version: 1
tree:
  type: sequence
  name: Work
  children:
    - type: action
      name: Review
      tools: {allow: [Read, "Bash(git diff*)"]}
      steps:
        - instruct: Review the diff.
    - type: action
      name: Quiet
      tools: {allow: []}
      steps:
        - instruct: Think it over, then answer.
    - type: action
      name: Careful
      tools: {deny: ["Bash(rm*)", Edit, Write]}
      steps:
        - instruct: Tidy up, without deleting or editing anything.
"""
RUN = "runs/shell.json"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "shell.yaml").write_text(TREE)
    (tmp_path / "runs").mkdir()
    (tmp_path / ".tether").mkdir()
    (tmp_path / ".tether" / "guard.yaml").write_text(f"workflow:\n  trace: {RUN}\n")
    return tmp_path


def at(project: Path, name: str) -> str:
    """The execution, started and answered up to the action `name`."""
    rt = Runtime()
    uri = str(rt.start(str(project / "shell.yaml"), str(project / RUN))["uri"])
    rt.submit(uri, "success")
    while rt.next(uri)["name"] != name:
        rt.submit(uri, "success")
    return uri


def denied(project: Path, tool: str, params: dict[str, Any]) -> bool:
    out = hk.hook_json(project, hk.pre(project, tool, params))
    return out is not None and out["hookSpecificOutput"]["permissionDecision"] == "deny"


@pytest.mark.parametrize(
    "command",
    ["git diff\nrm calc.py", "git diff\nprintf pwned > calc.py", "git diff HEAD\n\ncurl -s x"],
)
def test_a_newline_ends_a_command_for_the_policy(project: Path, command: str) -> None:
    at(project, "Review")
    assert denied(project, "Bash", {"command": command})
    assert not denied(project, "Bash", {"command": "git diff \\\n  HEAD -- src"})


@pytest.mark.parametrize(
    "command",
    [
        "tether next {run}\nrm calc.py",
        "tether next {run} > calc.py",
        "tether schema > runs/f.json",
        "tether schema > .tether/guard.yaml",
        "PYTHONPATH=evil tether next {run}",
        "env LD_PRELOAD=/tmp/x.so tether next {run}",
        "./tether next {run}",
        "tether var {run} secret --file /etc/passwd",
        "tether var {run} x $(cat ~/.netrc)",
    ],
)
def test_only_a_plain_tether_call_is_tethers_own(project: Path, command: str) -> None:
    run = at(project, "Quiet")
    assert not denied(project, "Bash", {"command": f"tether next {run}"})
    assert denied(project, "Bash", {"command": command.format(run=run)})


def test_a_line_that_is_not_tethers_own_is_evidence(project: Path) -> None:
    run = at(project, "Review")
    hk.hook_json(project, hk.prompt(project, "go on"))  # evidence comes from a session seen before
    for command in (f"tether next {run}\nrm calc.py", f"tether next {run}"):
        hk.hook_json(project, hk.post(project, "Bash", {"command": command}, {"stdout": "{}"}))
    tools = [e for e in Runtime().trace(run) if e["kind"] == "tool"]
    assert [e["input"]["command"] for e in tools] == [f"tether next {run}\nrm calc.py"]


@pytest.mark.parametrize(
    ("tool", "params"),
    [
        ("Bash", {"command": "/bin/rm -r build"}),
        ("Bash", {"command": "command rm build"}),
        ("Bash", {"command": "sudo rm build"}),
        ("Bash", {"command": "ls && bash -c 'rm build'"}),
        ("mcp__filesystem__edit_file", {"path": "src/app.py", "edits": []}),
        ("mcp__filesystem__write_file", {"path": "src/app.py", "content": ""}),
    ],
)
def test_deny_entries_read_commands_as_the_destructive_rule_does(
    project: Path, tool: str, params: dict[str, Any]
) -> None:
    at(project, "Careful")
    assert denied(project, tool, params)
    assert not denied(project, "Bash", {"command": f"{sys.executable} -V && ls"})
