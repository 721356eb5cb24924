"""Tether's guard inside a real GitHub Copilot CLI 1.0.102, driven headless (`copilot -p`)
against the scripted Chat Completions model on 127.0.0.1, without a GitHub account.

Each test sets a project up as a user would (`tether init`, then `tether guard install copilot`
in the bound-feature example it writes: `.github/hooks/tether.json`, which `copilot -p` loads
with `GITHUB_COPILOT_PROMPT_MODE_REPO_HOOKS=true`), runs one session and asserts what a user
would notice: the execution's trace, the files, and what the model was told.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from field.chatkit import (
    Tools,
    binds_and_refuses_stops,
    denies_outside_the_policy,
    ends_the_turn_itself_at,
    evidence_decides_the_check,
    refuses_the_agents_approve,
    tells_the_open_step,
)
from field.scripted import Call

TOOLS = Tools(
    shell=lambda command: Call("bash", {"command": command, "description": "Run it."}),
    read=lambda path: Call("view", {"path": str(path)}),
    edit=lambda path, old, new: Call("edit", {"path": str(path), "old_str": old, "new_str": new}),
)


@pytest.mark.harness_capability("copilot", "events")
@pytest.mark.harness_capability("copilot", "stop")
def test_a_shell_start_binds_and_stops_are_refused_up_to_the_cap(tmp_path: Path) -> None:
    binds_and_refuses_stops("copilot", tmp_path, TOOLS)


@pytest.mark.harness_capability("copilot", "deny")
def test_a_call_outside_the_step_policy_is_denied_and_the_file_unchanged(
    tmp_path: Path,
) -> None:
    denied = denies_outside_the_policy("copilot", tmp_path, TOOLS)
    assert all(t.startswith("Denied by preToolUse hook: [Tether]") for t in denied), denied


@pytest.mark.harness_capability("copilot", "evidence")
def test_evidence_is_false_for_a_failing_run_and_the_check_decides_on_it(tmp_path: Path) -> None:
    """Copilot reports a failing command as `resultType: success`; its own last line,
    `<shellId: N completed with exit code 1>`, is what makes the evidence false."""
    tools = evidence_decides_the_check("copilot", tmp_path, TOOLS)
    assert tools == [("Bash", False), ("Read", True), ("Edit", True), ("Bash", True)]


@pytest.mark.harness_capability("copilot", "context")
def test_the_configured_execution_is_told_to_the_model(tmp_path: Path) -> None:
    tells_the_open_step("copilot", tmp_path, TOOLS)


@pytest.mark.harness_capability("copilot", "person")
def test_the_agent_cannot_answer_a_persons_step(tmp_path: Path) -> None:
    refuses_the_agents_approve("copilot", tmp_path, TOOLS, "Copilot CLI")


@pytest.mark.harness_capability("copilot", "stop", cap=9)
def test_the_harness_ends_the_turn_itself_at_its_own_cap(tmp_path: Path) -> None:
    ends_the_turn_itself_at("copilot", tmp_path, TOOLS, 9)
