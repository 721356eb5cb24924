"""What one client can hand the MCP server is bounded, and every bound is a clear error naming
the argument and the limit: a NUL in a URI is `invalid_value`, not `internal`; a value, note or
thought over 1 MiB, `values` with more than 1,000 writes, and a memory store grown past its
limit are `too_large`. Attacked as a client would: a 50 MB var, 60,000 values in one answer,
executions started until the server's memory store is full."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tether.store.memory import MAX_BYTES
from tether.values import MAX_VALUE_BYTES, MAX_VALUES
from tether.verbs import Runtime

pytestmark = pytest.mark.anyio


async def _started(agent: Any, uri: str) -> str:
    await agent.ok("start_execution", tree_uri="hello-world.yaml", trace_output=uri)
    step = (await agent.ok("next_step", trace_output=uri))["step"]
    await agent.ok("submit", trace_output=uri, status="success", step=step)
    return str((await agent.ok("next_step", trace_output=uri))["step"])


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("next_step", {"trace_output": "runs/a\x00b.json"}),
        ("next_step", {"trace_output": "memory://a\x00b"}),
        ("next_step", {"trace_output": "postgresql://u@127.0.0.1:1/db#a\x00b"}),
        ("start_execution", {"tree_uri": "hello\x00.yaml", "trace_output": "memory://nul-tree"}),
        ("fork_execution", {"trace_output": "memory://x", "new_trace_output": "n\x00", "at": 0}),
    ],
)
async def test_a_nul_in_a_uri_is_an_invalid_value(
    agent: Any, tool: str, args: dict[str, Any]
) -> None:
    error = await agent.fail(tool, "invalid_value", **args)
    assert "NUL" in error["message"] and "\x00" in args[error["argument"]]


async def test_a_50_mb_var_is_too_large(agent: Any, memory_uri: str) -> None:
    step = await _started(agent, memory_uri)
    big = "x" * 50_000_000
    for tool, args in (
        ("var_write", {"path": "blob", "value": big}),
        ("var_write", {"path": "blob", "value": {"list": ["y" * 1000] * 2000}}),
        ("submit", {"status": "success", "step": step, "values": {"time_of_day": big}}),
        ("think", {"thought": big}),
        ("submit", {"status": "running", "step": step, "note": big}),
    ):
        error = await agent.fail(tool, "too_large", trace_output=memory_uri, **args)
        assert error["limit"] == MAX_VALUE_BYTES and "1,048,576 bytes" in error["message"]
    var = (await agent.ok("var_read", trace_output=memory_uri))["value"]
    assert var == {"time_of_day": None, "greeting": None}
    error = await agent.fail(
        "start_execution",
        "too_large",
        tree_uri="hello-world.yaml",
        trace_output=memory_uri + "-2",
        var={"blob": big},
    )
    assert error["argument"] == "var 'blob'"


async def test_60000_values_in_one_answer_are_too_large(agent: Any, memory_uri: str) -> None:
    step = await _started(agent, memory_uri)
    values: dict[str, Any] = {f"k{i}": i for i in range(60_000)}
    error = await agent.fail(
        "submit", "too_large", trace_output=memory_uri, status="success", step=step, values=values
    )
    assert error["argument"] == "values" and error["limit"] == MAX_VALUES
    assert "60,000 writes" in error["message"] and "1,000" in error["message"]
    # The most one answer takes is written, each value once, in order.
    values = {f"k{i}": i for i in range(MAX_VALUES - 1)} | {"time_of_day": "noon"}
    answer = await agent.ok(
        "submit", trace_output=memory_uri, status="success", step=step, values=values
    )
    assert answer["status"] == "action_complete"
    assert (await agent.ok("var_read", trace_output=memory_uri))["value"] == {
        "greeting": None,
        **values,
    }


def test_values_written_into_one_object_leave_each_entry_as_it_was_written(root: Path) -> None:
    """The writes of one answer share their copies of `var` (what keeps 1,000 of them linear):
    no entry's value, no earlier state, and no value the caller handed in is changed by a later
    write, and the trace still replays to the state."""
    rt = Runtime(root=str(root))
    rt.start("hello-world.yaml", "run.json", var={"keep": {"a": 1}})
    rt.submit("run.json", "success")
    given = {"x": 1}
    values = {"obj": given, "obj.y": 2, "keep.b": 2, "obj.z.w": 3, "time_of_day": "noon"}
    rt.submit("run.json", "success", values=values)
    assert given == {"x": 1}
    var = rt.var_read("run.json")
    assert var["obj"] == {"x": 1, "y": 2, "z": {"w": 3}} and var["keep"] == {"a": 1, "b": 2}
    written = [e["value"] for e in rt.trace("run.json") if e["kind"] == "var_write"]
    assert written == [{"x": 1}, 2, 2, 3, "noon"]
    assert rt.verify("run.json")["ok"]
    rt.reset("run.json")
    assert rt.var_read("run.json", "keep") == {"a": 1}


def test_a_client_cannot_grow_the_memory_store_past_its_limit(spawn_http: Any) -> None:
    """Executions of about 1 MB each, started until the store refuses: the refusal comes before
    the limit is passed, names it, and leaves nothing; the server still answers."""
    server = spawn_http()
    blob = "x" * 900_000
    started, refused = 0, None
    for i in range(2 * MAX_BYTES // len(blob)):
        status, reply = server.call(
            "start_execution",
            tree_uri="hello-world.yaml",
            trace_output=f"memory://grow-{i}",
            var={"blob": blob},
        )
        assert status == 200
        result = reply["result"]
        if result.get("isError"):
            refused = json.loads(result["content"][0]["text"])["error"]
            break
        started += 1
    assert refused is not None, "the memory store took twice its limit"
    assert refused["code"] == "too_large" and refused["limit"] == MAX_BYTES
    assert f"{MAX_BYTES:,} bytes" in refused["message"]
    assert started * len(blob) <= MAX_BYTES
    status, reply = server.call("next_step", trace_output=f"memory://grow-{started}")
    assert json.loads(reply["result"]["content"][0]["text"])["error"]["code"] == "not_found"
    status, reply = server.call("next_step", trace_output="memory://grow-0")
    assert reply["result"]["structuredContent"]["name"] == "Acknowledge_Protocol"
    rss = _rss_bytes(server.process.pid)
    assert rss < 4 * MAX_BYTES + 200_000_000, f"the server holds {rss:,} bytes"


def _rss_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")
