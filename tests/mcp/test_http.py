"""`tether mcp --http` as a real server on 127.0.0.1: the SDK's Streamable HTTP client drives it,
executions in memory outlive each request, and many clients can drive it at once."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.client import Client

from support.locks import held_lock, wait_until_waiting
from tether.engine.protocol import PROTOCOL_TEXT
from tether.mcp.tools import TOOLS
from tether.verbs import Runtime

pytestmark = pytest.mark.anyio


async def test_an_http_client_walks_hello_world_to_done(http_server: Any, agent_for: Any) -> None:
    async with Client(http_server.url) as client:
        assert (client.instructions or "").startswith(PROTOCOL_TEXT)
        assert len((await client.list_tools()).tools) == len(TOOLS)
        document = await agent_for(client).hello_to_done("memory://over-http")
    assert document["status"] == "complete"
    assert document["uri"] == "memory://over-http"


async def test_memory_executions_live_as_long_as_the_server(
    http_server: Any, agent_for: Any
) -> None:
    trace = "memory://shared"
    async with Client(http_server.url) as first:
        await agent_for(first).ok(
            "start_execution", tree_uri="hello-world.yaml", trace_output=trace
        )
        await agent_for(first).ok("submit", trace_output=trace, status="success")
    # A new connection, and a bare request with no session at all, see the same execution.
    async with Client(http_server.url) as second:
        current = await agent_for(second).ok("next_step", trace_output=trace)
    assert current["name"] == "Determine_Time"
    status, reply = http_server.call("next_step", trace_output=trace)
    assert status == 200
    assert reply["result"]["structuredContent"] == current


async def test_file_executions_land_under_the_root(
    http_server: Any, root: Path, agent_for: Any
) -> None:
    async with Client(http_server.url) as client:
        await agent_for(client).hello_to_done("http-run.json")
    assert Runtime().get(str(root / "http-run.json"))["status"] == "complete"


async def test_tool_errors_keep_their_codes_over_http(http_server: Any, agent_for: Any) -> None:
    async with Client(http_server.url) as client:
        agent = agent_for(client)
        await agent.fail("next_step", "not_found", trace_output="memory://never-started")
        error = await agent.fail(
            "submit", "usage", trace_output="memory://never-started", status="finished"
        )
        assert error["argument"] == "status"
        await agent.fail("start_execution", "forbidden", tree_uri="/etc/passwd", trace_output="x")


async def test_sixteen_clients_drive_their_own_executions_at_once(
    http_server: Any, agent_for: Any
) -> None:
    documents: dict[int, dict[str, Any]] = {}

    async def drive(n: int) -> None:
        async with Client(http_server.url) as client:
            documents[n] = await agent_for(client).hello_to_done(f"many-{n}.json")

    with anyio.fail_after(120):
        async with anyio.create_task_group() as group:
            for n in range(16):
                group.start_soon(drive, n)
    assert sorted(documents) == list(range(16))
    assert all(d["status"] == "complete" for d in documents.values())
    assert all(len(d["trace"]) == 7 for d in documents.values())


def test_health(http_server: Any) -> None:
    status, headers, body = http_server.request("GET", "/health")
    assert status == 200
    # abtree's clients read `status`, behaviors-sh's read `ok`
    assert json.loads(body) == {"status": "ok", "ok": True}
    assert headers["content-type"] == "application/json"


def _structured(reply: tuple[int, Any]) -> Any:
    status, body = reply
    assert status == 200, body
    assert not body["result"].get("isError"), body
    return body["result"]["structuredContent"]


def test_a_blocked_call_stalls_neither_health_nor_other_clients(
    http_server: Any, root: Path
) -> None:
    call = http_server.call
    _structured(call("start_execution", tree_uri="hello-world.yaml", trace_output="slow.json"))
    _structured(call("submit", trace_output="slow.json", status="success"))
    # The execution's writer lock is held here, so the server's next write to it waits.
    with ThreadPoolExecutor(1) as pool, held_lock(root / "slow.json") as lock:
        stuck = pool.submit(call, "think", trace_output="slow.json", thought="waited")
        wait_until_waiting(http_server.process.pid, lock)
        # While that call waits, the server answers /health and drives another execution.
        assert http_server.request("GET", "/health")[0] == 200
        started = call("start_execution", tree_uri="hello-world.yaml", trace_output="other.json")
        assert _structured(started)["status"] == "started"
        assert _structured(call("next_step", trace_output="other.json"))["name"] == (
            "Acknowledge_Protocol"
        )
        assert not stuck.done()
        # Released when the block ends: the waiting call goes through, once.
    assert _structured(stuck.result(timeout=30))["status"] == "recorded"
    trace = Runtime().trace(str(root / "slow.json"))
    assert [e["submitted"] for e in trace if e["kind"] == "think"] == ["waited"]


def test_mcp_takes_post_only_and_opens_no_stream(http_server: Any) -> None:
    # The stateless server has no SSE stream: a GET is refused at once, not left open for ever.
    for method in ("GET", "DELETE", "PUT"):
        status, headers = http_server.head(
            method, headers={"Accept": "text/event-stream", "Content-Type": None}
        )
        assert status == 405, method
        assert headers["allow"] == "POST"
    assert http_server.request("GET", "/health")[0] == 200
    assert http_server.call("next_step", trace_output="memory://none")[0] == 200
