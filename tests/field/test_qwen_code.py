"""Tether's guard inside a real Qwen Code 0.24.4, driven headless (`qwen -p --yolo`) against the
scripted Chat Completions model on 127.0.0.1, without an account.

Each test sets a project up as a user would (`tether init`, then `tether guard install qwen` in
the bound-feature example it writes: `.qwen/settings.json`, run with folder trust off in the
user's settings), runs one session and asserts what a user would notice: the execution's
trace, the files, and what the model was told.
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
    shell=lambda command: Call("run_shell_command", {"command": command}),
    read=lambda path: Call("read_file", {"file_path": str(path)}),
    edit=lambda path, old, new: Call(
        "edit", {"file_path": str(path), "old_string": old, "new_string": new}
    ),
)


@pytest.mark.harness_capability("qwen", "events")
@pytest.mark.harness_capability("qwen", "stop")
def test_a_shell_start_binds_and_stops_are_refused_up_to_the_cap(tmp_path: Path) -> None:
    binds_and_refuses_stops("qwen", tmp_path, TOOLS)


@pytest.mark.harness_capability("qwen", "deny")
def test_a_call_outside_the_step_policy_is_denied_and_the_file_unchanged(
    tmp_path: Path,
) -> None:
    denied = denies_outside_the_policy("qwen", tmp_path, TOOLS)
    assert all(t.startswith("[Tether]") for t in denied), denied  # the reason, as it is


@pytest.mark.harness_capability("qwen", "evidence")
def test_evidence_is_false_for_a_failing_run_and_the_check_decides_on_it(tmp_path: Path) -> None:
    """Qwen Code sends a failing command as `PostToolUseFailure`."""
    tools = evidence_decides_the_check("qwen", tmp_path, TOOLS)
    assert tools == [("Bash", False), ("Read", True), ("Edit", True), ("Bash", True)]


@pytest.mark.harness_capability("qwen", "context")
def test_the_configured_execution_is_told_to_the_model(tmp_path: Path) -> None:
    tells_the_open_step("qwen", tmp_path, TOOLS)


@pytest.mark.harness_capability("qwen", "person")
def test_the_agent_cannot_answer_a_persons_step(tmp_path: Path) -> None:
    refuses_the_agents_approve("qwen", tmp_path, TOOLS, "Qwen Code")


@pytest.mark.harness_capability("qwen", "stop", cap=8)
def test_the_harness_ends_the_turn_itself_at_its_own_cap(tmp_path: Path) -> None:
    ends_the_turn_itself_at("qwen", tmp_path, TOOLS, 8)
