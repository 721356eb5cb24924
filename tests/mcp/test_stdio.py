"""`tether mcp` as a real stdio subprocess: the SDK's stdio client drives it, stdout carries only
the protocol, and bad options fail before serving."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters

from tether.engine.protocol import PROTOCOL_TEXT
from tether.errors import EXIT_NOT_FOUND, EXIT_USAGE
from tether.mcp.tools import TOOLS
from tether.verbs import Runtime

SERVE = [sys.executable, "-m", "tether.cli.main", "mcp"]


def _params(root: Path) -> StdioServerParameters:
    return StdioServerParameters(command=SERVE[0], args=[*SERVE[1:], "--root", str(root)])


@pytest.mark.anyio
async def test_a_stdio_client_walks_hello_world_to_done(root: Path, agent_for: Any) -> None:
    async with Client(_params(root)) as client:
        assert (client.instructions or "").startswith(PROTOCOL_TEXT)
        assert len((await client.list_tools()).tools) == len(TOOLS)
        agent = agent_for(client)
        document = await agent.hello_to_done("run.json")
        assert document["status"] == "complete"
        await agent.fail("start_execution", "forbidden", tree_uri="../x.yaml", trace_output="r")
    # The execution is on disk, where the CLI (or anyone) can pick it up.
    stored = Runtime().get(str(root / "run.json"))
    assert stored["var"] == {"time_of_day": "morning", "greeting": "Good morning!"}
    assert Runtime().verify(str(root / "run.json"))["ok"]


def test_stdout_carries_only_protocol_messages(root: Path) -> None:
    """Raw JSON-RPC over the pipes: every stdout line is a JSON-RPC message, and each request
    gets exactly its response."""
    messages = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {
                "name": "start_execution",
                "arguments": {"tree_uri": "hello-world.yaml", "trace_output": "raw.json"},
            },
        },
        {
            "jsonrpc": "2.0",
            "id": 4,
            "method": "tools/call",
            "params": {"name": "submit", "arguments": {"trace_output": "raw.json", "status": "x"}},
        },
    ]
    process = subprocess.Popen(
        [*SERVE, "--root", str(root)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdin is not None and process.stdout is not None
    watchdog = threading.Timer(60, process.kill)
    watchdog.start()
    try:
        process.stdin.write("".join(json.dumps(m) + "\n" for m in messages))
        process.stdin.flush()
        # Stdin stays open until every reply is in: at end of input the server stops.
        replies = sorted(
            (json.loads(process.stdout.readline()) for _ in range(4)), key=lambda r: r["id"]
        )
        out, err = process.communicate(timeout=60)
    finally:
        watchdog.cancel()
    assert process.returncode == 0, err
    assert out == ""
    assert [r["id"] for r in replies] == [1, 2, 3, 4]
    assert all(r["jsonrpc"] == "2.0" for r in replies)
    assert replies[0]["result"]["serverInfo"]["name"] == "tether"
    assert len(replies[1]["result"]["tools"]) == len(TOOLS)
    assert replies[2]["result"]["structuredContent"]["status"] == "started"
    refused = replies[3]["result"]
    assert refused["isError"] is True
    assert json.loads(refused["content"][0]["text"])["error"]["argument"] == "status"
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("args", "exit_code", "code", "words"),
    [
        (["--root", "/no/such/folder"], EXIT_NOT_FOUND, "not_found", "not a directory"),
        (["--port", "3001"], EXIT_USAGE, "usage", "--http only"),
        (["--bogus"], EXIT_USAGE, "usage", "unexpected argument"),
        (["--http", "--port", "eighty"], EXIT_USAGE, "usage", "whole number"),
        (["--http", "--host", "0.0.0.0"], EXIT_USAGE, "usage", "bearer token"),
    ],
)
def test_bad_options_fail_before_serving(
    args: list[str], exit_code: int, code: str, words: str
) -> None:
    done = subprocess.run(
        [*SERVE, *args], input="", capture_output=True, text=True, timeout=60, env=_no_token()
    )
    assert done.returncode == exit_code, done.stderr
    error = json.loads(done.stderr)["error"]
    assert error["code"] == code
    assert words in error["message"]
    assert done.stdout == ""


def test_help_describes_the_options() -> None:
    done = subprocess.run([*SERVE, "--help"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0
    for option in ("--root", "--http", "--host", "--port", "--token", "--allow-host"):
        assert option in done.stdout


def _no_token() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "TETHER_MCP_TOKEN"}


def test_bot_serving_is_handed_to_the_bot_tools() -> None:
    done = subprocess.run(
        [*SERVE, "--bot", "tree.yaml"], input="", capture_output=True, text=True, timeout=60
    )
    assert done.returncode == EXIT_USAGE
    assert "--state" in json.loads(done.stderr)["error"]["message"]
