"""The runtime tools through the SDK's in-memory client: what a client is told about them,
a walk of the hello-world example, and every way a call can be refused."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from mcp.client.client import Client
from mcp.shared.exceptions import MCPError

from support.trees import PAIR
from tether.engine.protocol import PROTOCOL_TEXT
from tether.mcp.server import build_server
from tether.verbs import Runtime

pytestmark = pytest.mark.anyio

TOOLS = [
    "start_execution",
    "resume_execution",
    "reset_execution",
    "next_step",
    "eval",
    "submit",
    "claim_step",
    "think",
    "var_read",
    "var_write",
    "const_read",
    "get_execution",
    "read_trace",
    "fork_execution",
]


async def _tools(agent: Any) -> dict[str, Any]:
    listing = await agent.client.list_tools()
    return {t.name: t for t in listing.tools}


async def test_the_tools_are_listed_with_their_arguments(agent: Any) -> None:
    tools = await _tools(agent)
    assert sorted(tools) == sorted(TOOLS)
    arguments = {n: set(t.input_schema["properties"]) for n, t in tools.items()}
    assert arguments == {
        "start_execution": {"tree_uri", "trace_output", "var", "const"},
        "resume_execution": {"trace_output"},
        "reset_execution": {"trace_output"},
        "next_step": {"trace_output", "all"},
        "eval": {"trace_output", "result", "note", "step", "values", "agent"},
        "submit": {"trace_output", "status", "note", "step", "values", "agent"},
        "claim_step": {"trace_output", "agent", "step", "lease"},
        "think": {"trace_output", "thought", "step"},
        "var_read": {"trace_output", "path"},
        "var_write": {"trace_output", "path", "value", "step"},
        "const_read": {"trace_output", "path"},
        "get_execution": {"trace_output"},
        "read_trace": {"trace_output", "from", "to"},
        "fork_execution": {"trace_output", "new_trace_output", "at"},
    }
    for tool in tools.values():
        assert "trace_output" in tool.input_schema["required"]
        assert tool.input_schema["additionalProperties"] is False
        assert tool.output_schema is not None and tool.output_schema["type"] == "object"
        assert tool.description and len(tool.description) > 60


async def test_input_schemas_are_typed(agent: Any) -> None:
    tools = await _tools(agent)
    assert tools["eval"].input_schema["properties"]["result"]["type"] == "boolean"
    assert tools["submit"].input_schema["properties"]["status"]["enum"] == [
        "success",
        "failure",
        "running",
    ]
    assert tools["next_step"].input_schema["properties"]["all"]["type"] == "boolean"
    assert tools["read_trace"].input_schema["properties"]["from"]["type"] == "integer"
    assert tools["start_execution"].input_schema["properties"]["var"]["type"] == "object"
    assert tools["start_execution"].input_schema["required"] == ["tree_uri", "trace_output"]


async def test_annotations_say_which_tools_only_read_and_which_destroy(agent: Any) -> None:
    tools = await _tools(agent)
    readers = {n for n, t in tools.items() if t.annotations.read_only_hint}
    assert readers == {
        "resume_execution",
        "next_step",
        "var_read",
        "const_read",
        "get_execution",
        "read_trace",
    }
    destroyers = {n for n, t in tools.items() if t.annotations.destructive_hint}
    assert destroyers == {"reset_execution"}
    idempotent = {n for n, t in tools.items() if t.annotations.idempotent_hint}
    assert idempotent == readers | {"reset_execution"}
    assert all(t.annotations.open_world_hint is False for t in tools.values())


async def test_the_protocol_is_the_servers_instructions(agent: Any) -> None:
    instructions = agent.client.instructions
    assert instructions.startswith(PROTOCOL_TEXT)
    assert "next_step" in instructions


async def test_hello_world_from_the_gate_to_done(agent: Any, memory_uri: str) -> None:
    document = await agent.hello_to_done(memory_uri)
    assert document["status"] == "complete"
    assert document["var"] == {"time_of_day": "morning", "greeting": "Good morning!"}
    assert [(e["kind"], e["name"]) for e in document["trace"]] == [
        ("protocol", "Acknowledge_Protocol"),
        ("var_write", "Determine_Time"),
        ("instruct", "Determine_Time"),
        ("evaluate", "Morning_Greeting"),
        ("var_write", "Morning_Greeting"),
        ("instruct", "Morning_Greeting"),
        ("check", "Confirm_Greeting"),
    ]


async def test_a_file_execution_lands_under_the_root(agent: Any, root: Path) -> None:
    (root / "runs").mkdir()
    document = await agent.hello_to_done("runs/hello.json")
    assert document["uri"] == "file://" + str(root / "runs" / "hello.json")
    assert (root / "runs" / "hello.json").is_file()
    assert Runtime().get(str(root / "runs" / "hello.json"))["status"] == "complete"


async def test_next_step_is_replay_safe_and_all_lists_every_open_request(
    agent: Any, root: Path, memory_uri: str
) -> None:
    await agent.ok("start_execution", tree_uri="code-review.yaml", trace_output=memory_uri)
    gate = await agent.ok("next_step", trace_output=memory_uri)
    assert await agent.ok("next_step", trace_output=memory_uri) == gate
    await agent.ok("submit", trace_output=memory_uri, status="success", step=gate["step"])
    context = await agent.ok("next_step", trace_output=memory_uri)
    await agent.ok("var_write", trace_output=memory_uri, path="summary", value="A fix.")
    await agent.ok("submit", trace_output=memory_uri, status="success", step=context["step"])
    both = await agent.ok("next_step", trace_output=memory_uri, all=True)
    assert [r["name"] for r in both["requests"]] == ["Review_Style", "Run_Tests"]
    first = await agent.ok("next_step", trace_output=memory_uri)
    assert first == both["requests"][0]
    # Answer the second open request by its token: the first stays open.
    second = both["requests"][1]
    await agent.ok(
        "var_write",
        trace_output=memory_uri,
        path="tests_passed",
        value="true",
        step=second["step"],
    )
    await agent.ok("think", trace_output=memory_uri, thought="green", step=second["step"])
    await agent.ok("submit", trace_output=memory_uri, status="success", step=second["step"])
    assert await agent.ok("next_step", trace_output=memory_uri) == first
    trace = (await agent.ok("read_trace", trace_output=memory_uri))["entries"]
    assert [(e["kind"], e["name"]) for e in trace if e["kind"] in ("var_write", "think")][-2:] == [
        ("var_write", "Run_Tests"),
        ("think", "Run_Tests"),
    ]


async def test_var_write_parses_strings_as_json_and_keeps_other_values(
    agent: Any, memory_uri: str
) -> None:
    await agent.ok("start_execution", tree_uri="hello-world.yaml", trace_output=memory_uri)
    cases: list[tuple[str, Any, Any]] = [
        ("n", "3", 3),
        ("quoted", '"3"', "3"),
        ("word", "morning", "morning"),
        ("obj", {"a": [1, 2]}, {"a": [1, 2]}),
        ("flag", False, False),
        ("nothing", None, None),
        ("deep.er.path", "[1]", [1]),
        ("dash", "-fix the flaky test", "-fix the flaky test"),
    ]
    for path, given, stored in cases:
        written = await agent.ok("var_write", trace_output=memory_uri, path=path, value=given)
        assert written == {"status": "written", "path": path, "value": stored}
        read = await agent.ok("var_read", trace_output=memory_uri, path=path)
        assert read == {"path": path, "value": stored}
    whole = await agent.ok("var_read", trace_output=memory_uri)
    assert whole["path"] is None
    assert whole["value"]["deep"] == {"er": {"path": [1]}}


async def test_start_takes_var_and_const_overrides(agent: Any, memory_uri: str) -> None:
    await agent.ok(
        "start_execution",
        tree_uri="code-review.yaml",
        trace_output=memory_uri,
        var={"summary": "given"},
        const={"max_findings": 7, "team": "core"},
    )
    assert (await agent.ok("var_read", trace_output=memory_uri, path="summary"))["value"] == (
        "given"
    )
    consts = await agent.ok("const_read", trace_output=memory_uri)
    assert consts["value"] == {"max_findings": 7, "team": "core"}
    one = await agent.ok("const_read", trace_output=memory_uri, path="$CONST.max_findings")
    assert one["value"] == 7


async def test_read_trace_slices_by_seq(agent: Any, memory_uri: str) -> None:
    await agent.hello_to_done(memory_uri)
    everything = (await agent.ok("read_trace", trace_output=memory_uri))["entries"]
    assert [e["seq"] for e in everything] == list(range(len(everything)))
    window = await agent.ok("read_trace", trace_output=memory_uri, **{"from": 2, "to": 4})
    assert [e["seq"] for e in window["entries"]] == [2, 3]
    tail = await agent.ok("read_trace", trace_output=memory_uri, **{"from": 5})
    assert tail["entries"] == everything[5:]


async def test_think_running_resume_and_reset(agent: Any, memory_uri: str) -> None:
    await agent.ok("start_execution", tree_uri="hello-world.yaml", trace_output=memory_uri)
    await agent.ok("submit", trace_output=memory_uri, status="success")
    still = await agent.ok("submit", trace_output=memory_uri, status="running", note="halfway")
    assert still["status"] == "running"
    assert (await agent.ok("think", trace_output=memory_uri, thought="checking the clock"))[
        "status"
    ] == "recorded"
    resumed = await agent.ok("resume_execution", trace_output=memory_uri)
    assert resumed["status"] == "resumable"
    assert resumed["current"]["name"] == "Determine_Time"
    assert (await agent.ok("reset_execution", trace_output=memory_uri))["status"] == "reset"
    again = await agent.ok("reset_execution", trace_output=memory_uri)
    assert again == {"status": "reset", "message": "The execution is already at its start."}
    assert (await agent.ok("next_step", trace_output=memory_uri))["name"] == "Acknowledge_Protocol"
    trace = await agent.ok("read_trace", trace_output=memory_uri)
    assert [e["kind"] for e in trace["entries"]] == ["reset"]


async def test_lenient_spellings_of_booleans_integers_and_statuses(
    agent: Any, memory_uri: str
) -> None:
    await agent.ok("start_execution", tree_uri="hello-world.yaml", trace_output=memory_uri)
    accepted = await agent.ok("submit", trace_output=memory_uri, status="SUCCESS")
    assert accepted["status"] == "protocol_accepted"
    requests = await agent.ok("next_step", trace_output=memory_uri, all="true")
    assert len(requests["requests"]) == 1
    window = await agent.ok("read_trace", trace_output=memory_uri, **{"from": "0", "to": 1})
    assert len(window["entries"]) == 1


# -- refusals ----------------------------------------------------------------------------------


async def test_an_unknown_execution_is_not_found(agent: Any) -> None:
    for tool in ("next_step", "get_execution", "resume_execution", "var_read", "read_trace"):
        error = await agent.fail(tool, "not_found", trace_output="memory://nobody-here")
        assert "memory://nobody-here" in error["message"]
    await agent.fail("next_step", "not_found", trace_output="missing.json")


async def test_answers_in_the_wrong_phase_are_refused(agent: Any, memory_uri: str) -> None:
    await agent.ok("start_execution", tree_uri="hello-world.yaml", trace_output=memory_uri)
    error = await agent.fail("eval", "wrong_phase", trace_output=memory_uri, result=True)
    assert error["current"]["name"] == "Acknowledge_Protocol"
    await agent.fail("think", "wrong_phase", trace_output=memory_uri, thought="too early")
    await agent.ok("submit", trace_output=memory_uri, status="success")
    error = await agent.fail("eval", "wrong_phase", trace_output=memory_uri, result=False)
    assert "submit" in error["message"]


async def test_a_stale_step_is_refused_with_the_current_request(
    agent: Any, memory_uri: str
) -> None:
    await agent.ok("start_execution", tree_uri="hello-world.yaml", trace_output=memory_uri)
    gate = await agent.ok("next_step", trace_output=memory_uri)
    await agent.ok("submit", trace_output=memory_uri, status="success", step=gate["step"])
    # The same answer again (a retry): refused, and nothing advances.
    error = await agent.fail(
        "submit", "stale_step", trace_output=memory_uri, status="success", step=gate["step"]
    )
    current = await agent.ok("next_step", trace_output=memory_uri)
    assert error["current"] == current
    assert current["name"] == "Determine_Time"


async def test_submit_success_without_the_required_writes_is_refused(
    agent: Any, memory_uri: str
) -> None:
    await agent.ok("start_execution", tree_uri="hello-world.yaml", trace_output=memory_uri)
    await agent.ok("submit", trace_output=memory_uri, status="success")
    error = await agent.fail("submit", "writes_missing", trace_output=memory_uri, status="success")
    assert error["missing"] == ["time_of_day"]


async def test_bad_var_paths_are_refused(agent: Any, memory_uri: str) -> None:
    await agent.ok("start_execution", tree_uri="hello-world.yaml", trace_output=memory_uri)
    for path in ("a..b", "a. b", "$VAR.", "."):
        error = await agent.fail(
            "var_write", "invalid_path", trace_output=memory_uri, path=path, value="1"
        )
        assert error["path"] == path
    await agent.fail("var_read", "not_found", trace_output=memory_uri, path="no.such.key")
    await agent.fail("const_read", "not_found", trace_output=memory_uri, path="missing")


async def test_arguments_are_checked_and_the_error_names_the_argument(
    agent: Any, memory_uri: str
) -> None:
    await agent.ok("start_execution", tree_uri="hello-world.yaml", trace_output=memory_uri)
    cases: list[tuple[str, dict[str, Any], str]] = [
        ("submit", {"status": "done"}, "status"),
        ("submit", {"status": 1}, "status"),
        ("eval", {"result": "maybe"}, "result"),
        ("eval", {"result": 1}, "result"),
        ("eval", {}, "result"),
        ("next_step", {"everything": True}, "everything"),
        ("read_trace", {"from": "two"}, "from"),
        ("read_trace", {"to": True}, "to"),
        ("think", {"thought": ""}, "thought"),
        ("var_write", {"path": "x"}, "value"),
        ("start_execution", {"tree_uri": "hello-world.yaml", "var": [1]}, "var"),
    ]
    for tool, args, argument in cases:
        error = await agent.fail(tool, "usage", trace_output=memory_uri, **args)
        assert error["argument"] == argument, error
        assert error["tool"] == tool
        assert repr(argument) in error["message"], error
    missing = await agent.client.call_tool("next_step", {})
    assert missing.is_error
    assert "missing required argument 'trace_output'" in missing.content[0].text
    assert (
        "success, failure, running"
        in (await agent.fail("submit", "usage", trace_output=memory_uri, status="done"))["message"]
    )


async def test_starting_twice_and_answering_a_finished_execution(
    agent: Any, memory_uri: str
) -> None:
    await agent.ok("start_execution", tree_uri="hello-world.yaml", trace_output=memory_uri)
    await agent.fail(
        "start_execution", "already_exists", tree_uri="hello-world.yaml", trace_output=memory_uri
    )
    await agent.ok("submit", trace_output=memory_uri, status="failure")
    assert (await agent.ok("next_step", trace_output=memory_uri))["status"] == "failure"
    error = await agent.fail(
        "submit", "execution_finished", trace_output=memory_uri, status="success"
    )
    assert error["current"]["status"] == "failure"


async def test_bad_trees_and_uris(agent: Any, root: Path) -> None:
    (root / "broken.yaml").write_text("name: x\nversion: 1\ntree: {type: action}\n")
    await agent.fail(
        "start_execution", "invalid_tree", tree_uri="broken.yaml", trace_output="r.json"
    )
    await agent.fail("start_execution", "not_found", tree_uri="absent.yaml", trace_output="r.json")
    await agent.fail(
        "start_execution", "unknown_scheme", tree_uri="hello-world.yaml", trace_output="s3://b/k"
    )


async def test_an_unknown_tool_is_a_protocol_error(agent: Any) -> None:
    with pytest.raises(MCPError, match="unknown tool 'launch_missiles'"):
        await agent.client.call_tool("launch_missiles", {})


# -- the root --------------------------------------------------------------------------------


async def test_files_outside_the_root_are_refused(agent: Any, root: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "tree.yaml").write_text((root / "hello-world.yaml").read_text())
    os.symlink(outside, root / "escape")
    os.symlink(outside / "tree.yaml", root / "linked.yaml")
    trees = [
        str(outside / "tree.yaml"),
        "file://" + str(outside / "tree.yaml"),
        "../outside/tree.yaml",
        "escape/tree.yaml",
        "linked.yaml",
        "file://" + str(root / ".." / "outside" / "tree.yaml"),
    ]
    for tree in trees:
        await agent.fail("start_execution", "forbidden", tree_uri=tree, trace_output="run.json")
    traces = [
        str(outside / "run.json"),
        "../outside/run.json",
        "escape/run.json",
        "file://" + str(outside / "run.json"),
    ]
    for trace in traces:
        await agent.fail(
            "start_execution", "forbidden", tree_uri="hello-world.yaml", trace_output=trace
        )
    assert sorted(p.name for p in outside.iterdir()) == ["tree.yaml"]
    # An execution created outside the root (by someone else) cannot be read or driven either.
    Runtime().start(str(root / "hello-world.yaml"), str(outside / "theirs.json"))
    for tool in ("next_step", "get_execution", "read_trace", "reset_execution"):
        await agent.fail(tool, "forbidden", trace_output="escape/theirs.json")
        await agent.fail(tool, "forbidden", trace_output=str(outside / "theirs.json"))


async def test_one_runtime_serves_memory_executions_to_every_client(
    root: Path, memory_uri: str, agent_for: Any
) -> None:
    runtime = Runtime(root=str(root))
    async with Client(build_server(runtime)) as first:
        await agent_for(first).ok(
            "start_execution", tree_uri="hello-world.yaml", trace_output=memory_uri
        )
    async with Client(build_server(runtime)) as second:
        gate = await agent_for(second).ok("next_step", trace_output=memory_uri)
    assert gate["name"] == "Acknowledge_Protocol"


async def test_errors_show_paths_relative_to_the_root(agent: Any, root: Path) -> None:
    missing = await agent.fail("next_step", "not_found", trace_output="runs/missing.json")
    assert "runs/missing.json" in missing["message"]
    await agent.ok("start_execution", tree_uri="hello-world.yaml", trace_output="run.json")
    exists = await agent.fail(
        "start_execution", "already_exists", tree_uri="hello-world.yaml", trace_output="run.json"
    )
    outside = await agent.fail("next_step", "forbidden", trace_output="../elsewhere.json")
    assert "'../elsewhere.json' is outside the allowed root ." in outside["message"]
    for error in (missing, exists, outside):
        assert str(root.parent) not in json.dumps(error), error


async def test_errors_rewrite_their_own_paths_and_nothing_a_user_wrote(
    agent: Any, root: Path
) -> None:
    # The tree's text and the agent's note both name the server's root folder.
    instruction = f"Summarise {root}/notes.md in a line."
    tree = {
        "name": "paths",
        "tree": {"type": "action", "name": "Read", "steps": [{"instruct": instruction}]},
    }
    (root / "paths.json").write_text(json.dumps(tree))
    trace = "runs/paths.json"
    await agent.ok("start_execution", tree_uri="paths.json", trace_output=trace)
    await agent.ok("submit", trace_output=trace, status="success")
    note = f"drafted under {root}/drafts, see {root}"
    await agent.ok("submit", trace_output=trace, status="running", note=note)
    stale = await agent.fail(
        "submit", "stale_step", trace_output=trace, status="success", step="gate:0:0:0:00000000"
    )
    assert stale["current"]["instruction"] == instruction
    exists = await agent.fail(
        "start_execution", "already_exists", tree_uri="paths.json", trace_output=trace
    )
    assert exists["uri"] == "runs/paths.json"
    assert str(root) not in exists["message"]
    assert "runs/paths.json" in exists["message"]
    # A sibling folder whose name starts with the root's is not the root.
    sibling = f"{root}x/run.json"
    outside = await agent.fail("next_step", "forbidden", trace_output=sibling)
    assert outside["path"] == sibling
    assert f"{sibling!r} is outside the allowed root ." in outside["message"]
    entries = (await agent.ok("read_trace", trace_output=trace))["entries"]
    assert [e["note"] for e in entries if e.get("note") and "drafted" in e["note"]] == [note]


async def test_a_team_claims_its_branches_through_claim_step(
    agent: Any, root: Path, memory_uri: str
) -> None:
    tree = root / "pair.json"
    tree.write_text(json.dumps(PAIR))
    await agent.ok("start_execution", tree_uri=str(tree), trace_output=memory_uri)
    await agent.ok("submit", trace_output=memory_uri, status="success")
    left = (await agent.ok("next_step", trace_output=memory_uri))["step"]
    held = await agent.ok("claim_step", trace_output=memory_uri, agent="alice", step=left)
    assert (held["status"], held["agent"]) == ("claimed", "alice")
    listed = await agent.ok("next_step", trace_output=memory_uri, all=True)
    assert [r.get("claim", {}).get("agent") for r in listed["requests"]] == ["alice", None]
    error = await agent.fail(
        "submit", "claimed", trace_output=memory_uri, status="success", step=left, agent="bob"
    )
    assert error["holder"] == "alice"
    await agent.ok("submit", trace_output=memory_uri, status="success", step=left, agent="alice")
    await agent.fail("claim_step", "invalid_value", trace_output=memory_uri, agent="x", lease=0)
