"""Over MCP, a step is one call: each answer's `next`, the `values` that travel with it, the human
request no tool answers, and fork_execution. Through the SDK's in-memory client."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from support.trees import SIGN_OFF_YAML
from tether.verbs import Runtime

pytestmark = pytest.mark.anyio


async def test_hello_world_takes_one_call_per_step_after_start(agent: Any, memory_uri: str) -> None:
    started = await agent.ok(
        "start_execution", tree_uri="hello-world.yaml", trace_output=memory_uri
    )
    answers: dict[Any, tuple[str, dict[str, Any]]] = {
        "Acknowledge_Protocol": ("submit", {"status": "success"}),
        "Determine_Time": ("submit", {"status": "success", "values": {"time_of_day": "morning"}}),
        ("evaluate", "Morning_Greeting"): ("eval", {"result": True}),
        ("instruct", "Morning_Greeting"): (
            "submit",
            {"status": "success", "values": {"greeting": "Good morning!"}},
        ),
    }
    request, calls = started["current"], []
    while "step" in request:
        tool, args = answers.get(request["name"]) or answers[(request["type"], request["name"])]
        response = await agent.ok(tool, trace_output=memory_uri, step=request["step"], **args)
        calls.append(tool)
        request = response["next"]
    assert request == {"status": "done"}
    assert calls == ["submit", "submit", "eval", "submit"]
    document = await agent.ok("get_execution", trace_output=memory_uri)
    assert document["var"] == {"time_of_day": "morning", "greeting": "Good morning!"}
    assert Runtime().verify(memory_uri)["ok"] is True


async def test_values_are_refused_together_with_their_answer(agent: Any, memory_uri: str) -> None:
    await agent.ok("start_execution", tree_uri="hello-world.yaml", trace_output=memory_uri)
    gate = await agent.ok("next_step", trace_output=memory_uri)
    first = (
        await agent.ok("submit", trace_output=memory_uri, status="success", step=gate["step"])
    )["next"]
    before = await agent.ok("get_execution", trace_output=memory_uri)
    error = await agent.fail(
        "submit",
        "stale_step",
        trace_output=memory_uri,
        status="success",
        step=gate["step"],
        values={"time_of_day": "morning"},
    )
    assert error["current"] == first
    missing = await agent.fail(
        "submit", "writes_missing", trace_output=memory_uri, status="success", values={"x": 1}
    )
    assert missing["missing"] == ["time_of_day"]
    await agent.fail(
        "eval", "wrong_phase", trace_output=memory_uri, result=True, values={"time_of_day": 1}
    )
    await agent.fail(
        "submit",
        "invalid_path",
        trace_output=memory_uri,
        status="success",
        values={"time_of_day": "noon", "a..b": 1},
    )
    bad = await agent.fail(
        "submit", "usage", trace_output=memory_uri, status="success", values=["time_of_day"]
    )
    assert bad["argument"] == "values"
    assert await agent.ok("get_execution", trace_output=memory_uri) == before


async def test_values_are_taken_as_var_write_takes_them(agent: Any, memory_uri: str) -> None:
    await agent.ok("start_execution", tree_uri="hello-world.yaml", trace_output=memory_uri)
    await agent.ok("submit", trace_output=memory_uri, status="success")
    values = {"time_of_day": "morning", "n": "3", "quoted": '"3"', "deep.er": {"a": [1]}}
    await agent.ok("submit", trace_output=memory_uri, status="success", values=values)
    stored = (await agent.ok("var_read", trace_output=memory_uri))["value"]
    assert stored["n"] == 3 and stored["quoted"] == "3" and stored["deep"] == {"er": {"a": [1]}}


async def test_no_tool_answers_a_human_request(agent: Any, root: Path, memory_uri: str) -> None:
    (root / "release.yaml").write_text(SIGN_OFF_YAML)
    await agent.ok("start_execution", tree_uri="release.yaml", trace_output=memory_uri)
    await agent.ok("submit", trace_output=memory_uri, status="success")
    response = await agent.ok(
        "submit", trace_output=memory_uri, status="success", values={"notes": "v2: faster"}
    )
    human = response["next"]
    assert human["type"] == "human" and human["name"] == "Sign_Off"
    assert human["prompt"].startswith("Read the release notes.")
    assert await agent.ok("next_step", trace_output=memory_uri) == human
    for tool, args in (
        ("submit", {"status": "success"}),
        ("submit", {"status": "failure", "step": human["step"]}),
        ("eval", {"result": True}),
    ):
        error = await agent.fail(tool, "human_only", trace_output=memory_uri, **args)
        assert error["current"] == human
    listing = (await agent.client.list_tools()).tools
    assert not any("approve" in t.name or "reject" in t.name for t in listing)
    assert "human" in agent.client.instructions
    # A person answers it (the verb the CLI and the viewer call); the agent then goes on.
    approved = Runtime().approve(memory_uri, note="ship it")
    assert approved["next"]["name"] == "Lint"
    assert await agent.ok("next_step", trace_output=memory_uri) == approved["next"]


async def test_fork_execution_goes_back_to_an_earlier_point(
    agent: Any, root: Path, memory_uri: str
) -> None:
    await agent.ok("start_execution", tree_uri="code-review.yaml", trace_output="review.json")
    gate = await agent.ok("submit", trace_output="review.json", status="success")
    after_gate = len((await agent.ok("read_trace", trace_output="review.json"))["entries"])
    done = await agent.ok(
        "submit", trace_output="review.json", status="success", values={"summary": "A fix."}
    )
    assert done["status"] == "action_complete"
    original = await agent.ok("get_execution", trace_output="review.json")

    forked = await agent.ok(
        "fork_execution", trace_output="review.json", new_trace_output=memory_uri, at=after_gate
    )
    assert forked["forked_from"] == {"uri": original["uri"], "at": after_gate}
    assert forked["entries"] == after_gate
    mine = await agent.ok("next_step", trace_output=memory_uri)
    assert mine == forked["next"]
    assert {**mine, "step": ""} == {**gate["next"], "step": ""}
    assert mine["step"] != gate["next"]["step"], "a fork has step tokens of its own"
    assert Runtime().verify(memory_uri)["ok"] is True
    assert await agent.ok("get_execution", trace_output="review.json") == original

    await agent.fail(
        "fork_execution",
        "already_exists",
        trace_output="review.json",
        new_trace_output=memory_uri,
        at=0,
    )
    await agent.fail(
        "fork_execution",
        "invalid_value",
        trace_output="review.json",
        new_trace_output=memory_uri + "-2",
        at=len(original["trace"]) + 1,
    )
    await agent.fail(
        "fork_execution",
        "forbidden",
        trace_output="review.json",
        new_trace_output="../outside.json",
        at=0,
    )
    assert not (root.parent / "outside.json").exists()
