"""Tether's guard inside a real Factory Droid 0.215.0, driven headless (`droid exec --auto
high`) against the scripted Chat Completions model on 127.0.0.1, without a login.

Each test sets a project up as a user would (`tether init`, then `tether guard install droid`
in the bound-feature example it writes: `.factory/settings.json`; the model is a custom model
of the user's `~/.factory/settings.json`), runs one session and asserts what a user would
notice: the execution's trace, the files, and what the model was told. Droid's shell tool,
`Execute`, refuses a call without its `summary` and `riskLevel` before any hook runs, so the
scripted calls carry them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from field.chatkit import (
    Tools,
    binds_and_refuses_stops,
    denies_outside_the_policy,
    evidence_decides_the_check,
    refuses_the_agents_approve,
    tells_the_open_step,
)
from field.scripted import Call

RISK = {"summary": "Run a command", "riskLevel": "low", "riskLevelReason": "Reads or tests only"}
TOOLS = Tools(
    shell=lambda command: Call("Execute", {"command": command, **RISK}),
    read=lambda path: Call("Read", {"file_path": str(path)}),
    edit=lambda path, old, new: Call(
        "Edit", {"file_path": str(path), "old_str": old, "new_str": new}
    ),
)


@pytest.mark.harness_capability("droid", "events")
@pytest.mark.harness_capability("droid", "stop")
def test_a_shell_start_binds_and_stops_are_refused_up_to_the_cap(tmp_path: Path) -> None:
    binds_and_refuses_stops("droid", tmp_path, TOOLS)


@pytest.mark.harness_capability("droid", "deny")
def test_a_call_outside_the_step_policy_is_denied_and_the_file_unchanged(
    tmp_path: Path,
) -> None:
    denied = denies_outside_the_policy("droid", tmp_path, TOOLS)
    assert all(t.startswith("Error: [Tether]") for t in denied), denied


@pytest.mark.harness_capability("droid", "evidence")
def test_evidence_is_false_for_a_failing_run_and_the_check_decides_on_it(tmp_path: Path) -> None:
    """Droid fires no hook for a command that fails: the failing run is read from its
    transcript at the next event (the call ran, its result `is_error`), as a failure."""
    tools = evidence_decides_the_check("droid", tmp_path, TOOLS)
    assert tools == [("Bash", False), ("Read", True), ("Edit", True), ("Bash", True)]


@pytest.mark.harness_capability("droid", "context")
def test_the_configured_execution_is_told_to_the_model(tmp_path: Path) -> None:
    tells_the_open_step("droid", tmp_path, TOOLS)


@pytest.mark.harness_capability("droid", "person")
def test_the_agent_cannot_answer_a_persons_step(tmp_path: Path) -> None:
    refuses_the_agents_approve("droid", tmp_path, TOOLS, "Factory Droid")
