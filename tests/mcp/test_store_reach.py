"""A client of `tether mcp` reaches only the stores the server was started with: a store URI
naming any other host, port, database or user is `forbidden` before a connection is made, and the
error reads the same whatever lies at the address. Attacked over stdio and HTTP, with a listener
that plays a PostgreSQL server asking for the password in clear (`support.listener`)."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters

from support.listener import Listener, closed_port
from tether.errors import TetherError
from tether.verbs import Runtime

SERVE = [sys.executable, "-m", "tether.cli.main", "mcp"]
SECRET = "server-password-7731"

# Store URIs a client names, each reaching the port `{port}` on loopback.
URIS = [
    "postgresql://victim@127.0.0.1:{port}/db#run",
    "postgres://127.0.0.1:{port}/db#run",
    "postgresql:///db?host=127.0.0.1&port={port}#run",
    "postgresql://victim:guess@127.0.0.1:{port}/db#run",
    "POSTGRESQL://127.0.0.1:{port}/db?sslmode=disable#run",
]


def _calls(uri: str) -> list[tuple[str, dict[str, Any]]]:
    """Every way a tool takes a store URI from the client."""
    return [
        ("start_execution", {"tree_uri": "hello-world.yaml", "trace_output": uri}),
        ("next_step", {"trace_output": uri}),
        ("get_execution", {"trace_output": uri}),
        ("submit", {"trace_output": uri, "status": "success"}),
        (
            "fork_execution",
            {"trace_output": "memory://reach-src", "new_trace_output": uri, "at": 0},
        ),
        (
            "fork_execution",
            {"trace_output": uri, "new_trace_output": "memory://reach-new", "at": 0},
        ),
    ]


def _stdio(root: Path, *extra: str) -> StdioServerParameters:
    env = {**os.environ, "PGPASSWORD": SECRET}
    return StdioServerParameters(
        command=SERVE[0], args=[*SERVE[1:], "--root", str(root), *extra], env=env
    )


def _errors(results: list[tuple[bool, Any]]) -> list[dict[str, Any]]:
    for ok, answer in results:
        assert not ok, answer
    return [answer["error"] for _, answer in results]


def _same_whatever_listens(open_port: int, closed: int, by_port: dict[int, list[Any]]) -> None:
    """The errors for the listening port and for the closed one differ by the port alone."""
    seen_open = json.dumps(by_port[open_port]).replace(str(open_port), "PORT")
    seen_closed = json.dumps(by_port[closed]).replace(str(closed), "PORT")
    assert seen_open == seen_closed


@pytest.mark.anyio
async def test_stdio_clients_reach_no_database_the_server_was_not_given(
    root: Path, agent_for: Any
) -> None:
    closed = closed_port()
    with Listener() as listener:
        async with Client(_stdio(root)) as client:
            agent = agent_for(client)
            await agent.ok(
                "start_execution", tree_uri="hello-world.yaml", trace_output="memory://reach-src"
            )
            by_port: dict[int, list[Any]] = {}
            for port in (listener.port, closed):
                results = [
                    await agent.result(tool, args)
                    for uri in URIS
                    for tool, args in _calls(uri.format(port=port))
                ]
                by_port[port] = _errors(results)
            # The server still does what it was given.
            assert (await agent.ok("next_step", trace_output="memory://reach-src"))["type"]
        time.sleep(0.3)
        assert listener.connections == 0 and listener.received == b""
    assert {e["code"] for e in by_port[closed]} == {"forbidden"}
    assert {e["argument"] for e in by_port[closed]} == {"trace_output", "new_trace_output"}
    _same_whatever_listens(listener.port, closed, by_port)


def test_http_clients_reach_no_database_the_server_was_not_given(spawn_http: Any) -> None:
    closed = closed_port()
    with Listener() as listener:
        server = spawn_http(env={"PGPASSWORD": SECRET})
        server.call(
            "start_execution", tree_uri="hello-world.yaml", trace_output="memory://reach-src"
        )
        by_port: dict[int, list[Any]] = {}
        for port in (listener.port, closed):
            replies = [
                server.call(tool, **args)
                for uri in URIS
                for tool, args in _calls(uri.format(port=port))
            ]
            assert all(status == 200 for status, _ in replies)
            by_port[port] = [
                json.loads(reply["result"]["content"][0]["text"])["error"] for _, reply in replies
            ]
        time.sleep(0.3)
        assert listener.connections == 0 and listener.received == b""
    assert {e["code"] for e in by_port[closed]} == {"forbidden"}
    _same_whatever_listens(listener.port, closed, by_port)


def test_an_allowed_store_is_a_database() -> None:
    for given in ("memory://", "runs/", "file:///tmp"):
        with pytest.raises(TetherError) as refused:
            Runtime(stores=[given])
        assert refused.value.code == "usage"


def test_listing_a_database_the_server_was_not_given_is_forbidden(tmp_path: Path) -> None:
    with Listener() as listener:
        runtime = Runtime(root=str(tmp_path), stores=())
        with pytest.raises(TetherError) as refused:
            runtime.list_executions(f"postgresql://127.0.0.1:{listener.port}/db")
        assert refused.value.code == "forbidden"
        time.sleep(0.2)
        assert listener.connections == 0
