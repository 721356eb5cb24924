"""An agent built on the Claude Agent SDK (Python, `claude-agent-sdk`, the pinned `agent-sdk`
extra, installed by scripts/install-test-deps-agent-sdk), held to its workflow by the guard in
process: `ClaudeAgentOptions(**agent_options(project), ...)`. The SDK runs the Claude Code CLI its
wheel bundles against the scripted Anthropic model on 127.0.0.1; a fresh HOME, no other traffic.
The SDK refuses `bypassPermissions` as root, so the tools are allowed by name."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest

from field import claudekit as ck
from field.anthropic import AnthropicModel, said, tool_results
from field.scripted import Text
from field.test_claude_code import (
    CALC,
    CHECK_TWICE,
    CHECKED,
    REPORT,
    REVIEW,
    edit,
    said_in,
    start,
)
from tether.guard.harness.agent_sdk import agent_options


def sdk() -> Any:
    """The pinned Claude Agent SDK; a missing one fails the test with how to install it."""
    try:
        import claude_agent_sdk
    except ImportError:
        pytest.fail(
            "the Claude Agent SDK is not installed: run scripts/install-test-deps-agent-sdk "
            "(scripts/test runs it)",
            pytrace=False,
        )
    return claude_agent_sdk


def options(project: Path, model: AnthropicModel) -> Any:
    """The options a developer writes, with the guard's `hooks` merged in; the guard's state
    is the project's test HOME's, which the installed command hooks (if any) share."""
    state = str(ck.home(project) / "state")
    env = ck.environment(ck.home(project), model, TETHER_GUARD_STATE=state)
    return sdk().ClaudeAgentOptions(
        **agent_options(project, state_dir=state),
        cwd=str(project),
        allowed_tools=["Bash", "Read", "Write", "Edit"],
        model="claude-sonnet-4-5-20250929",
        env=env,
    )


def converse(project: Path, model: AnthropicModel, *prompts: str) -> list[Any]:
    """One SDK session: each prompt in turn, every message the SDK gave back."""

    async def run() -> list[Any]:
        got: list[Any] = []
        async with sdk().ClaudeSDKClient(options=options(project, model)) as client:
            for prompt in prompts:
                await client.query(prompt)
                got += [message async for message in client.receive_response()]
        return got

    return asyncio.run(run())


def results(messages: list[Any]) -> list[Any]:
    return [m for m in messages if isinstance(m, sdk().ResultMessage)]


@pytest.mark.harness_capability("claude-agent-sdk", "events")
@pytest.mark.harness_capability("claude-agent-sdk", "stop")
@pytest.mark.harness_capability("claude-agent-sdk", "context")
def test_an_sdk_agent_binds_its_stops_are_refused_and_its_next_prompt_told(tmp_path: Path) -> None:
    project = ck.project(tmp_path, "      max_stop_blocks: 2\n", trees={"report.yaml": REPORT})
    with AnthropicModel([*start("report.yaml"), Text("All done."), Text("Later.")]) as model:
        got = converse(project, model, "Do the work.", "Carry on.")
    assert [r.is_error for r in results(got)] == [False, False], got[-1]
    # The project's installed command hooks ran too (the SDK reports their answers).
    answered = [
        m.data
        for m in got
        if isinstance(m, sdk().HookEventMessage) and m.data.get("exit_code") == 0
    ]
    assert [d["hook_name"] for d in answered] == ["SessionStart:startup"], answered
    assert "## Behavioral rules" in answered[0]["output"]
    stops = ck.kinds(ck.trace(project, "run.json"), "stop")
    # The installed command hooks fire too (the SDK's Claude Code reads .claude/settings.json):
    # each stop is still handled once.
    assert [s["outcome"] for s in stops] == ["refused", "refused", "parked"] * 2, stops
    first = said_by(model, "Stop hook feedback:")
    # Both deliveries answer each stop alike (R8: never one let through unanswered).
    assert first and all(text.count("[Tether] The execution") == 2 for text in first), first
    assert "'Report'" in first[0] and "Write the weekly report to report.md." in first[0]
    context = said(model.turns[-1])
    assert f"[Tether] This session is bound to the execution file://{project}/run.json" in context
    assert "Current request: instruct 'Report'" in context


def said_by(model: AnthropicModel, marker: str) -> list[str]:
    """Every user message the model was shown that carries `marker`, from the marker on, over
    all its turns, each once."""
    seen: list[str] = []
    for request in model.turns:
        for message in request.body["messages"]:
            text = said_in(message)
            if message["role"] == "user" and marker in text:
                shown = text.split(marker, 1)[1].strip()
                seen += [] if shown in seen else [shown]
    return seen


@pytest.mark.harness_capability("claude-agent-sdk", "deny")
def test_an_sdk_edit_outside_the_steps_policy_is_denied_in_process(tmp_path: Path) -> None:
    project = ck.project(tmp_path, install=False, trees={"review.yaml": REVIEW, "calc.py": CALC})
    assert not (project / ".claude").exists()  # only the in-process hooks hold this agent
    calc = project / "calc.py"
    with AnthropicModel([*start("review.yaml"), *edit(calc), Text("Reviewed.")]) as model:
        converse(project, model, "Review it.")
    assert calc.read_text() == CALC
    denied = tool_results(model.turns[4])[-1]
    assert denied["is_error"], denied
    assert "[Tether] Edit may not run while the instruct 'Review' is open" in denied["text"]
    tools = [e["tool"] for e in ck.kinds(ck.trace(project, "run.json"), "tool")]
    assert tools == ["Read"], tools


@pytest.mark.harness_capability("claude-agent-sdk", "evidence")
def test_sdk_evidence_is_not_ok_for_a_failing_command_and_a_check_decides_on_it(
    tmp_path: Path,
) -> None:
    project = ck.project(
        tmp_path, install=False, trees={"checked.yaml": CHECKED, "check.sh": "test -f fixed\n"}
    )
    with AnthropicModel(CHECK_TWICE) as model:
        converse(project, model, "Do the work.")
    entries = ck.trace(project, "run.json")
    runs = [(e["input"]["command"], e["ok"]) for e in ck.kinds(entries, "tool")]
    assert runs == [("sh check.sh", False), ("touch fixed", True), ("sh check.sh", True)], runs
    assert [e["outcome"] for e in ck.kinds(entries, "check")] == ["failed", "passed"]
    assert ck.tether(project, "get", "run.json")["status"] == "complete"


def test_agent_options_without_a_configuration_says_where_it_looked(tmp_path: Path) -> None:
    from tether.errors import TetherError

    with pytest.raises(TetherError) as raised:
        agent_options(tmp_path)
    assert str(tmp_path / ".tether" / "guard.yaml") in raised.value.message
    assert os.listdir(tmp_path) == []
