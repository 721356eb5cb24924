"""Attempts to break the HTTP server's security rules: foreign Host and Origin headers (DNS
rebinding), missing or wrong bearer tokens, a non-loopback address without a token, oversized
bodies, and stack traces leaking into responses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client

from support.hosts import FOREIGN_HOSTS, LOOPBACK_HOSTS
from tether.errors import EXIT_USAGE

TOKEN = "s3cret-token-for-tests"
SERVE = [sys.executable, "-m", "tether.cli.main", "mcp"]


def _start(server: Any, trace: str = "memory://security") -> tuple[int, Any]:
    return server.call("start_execution", tree_uri="hello-world.yaml", trace_output=trace)


# -- Host and Origin ---------------------------------------------------------------------------


@pytest.mark.parametrize("host", FOREIGN_HOSTS)
def test_a_foreign_host_header_is_refused_before_anything_runs(
    http_server: Any, root: Path, host: str
) -> None:
    host = host.format(port=http_server.port)
    status, _ = http_server.call(
        "start_execution",
        headers={"Host": host},
        tree_uri="hello-world.yaml",
        trace_output="rebound.json",
    )
    assert status in (400, 421)
    assert not (root / "rebound.json").exists()
    assert http_server.request("GET", "/health", headers={"Host": host})[0] in (400, 421)


@pytest.mark.parametrize("host", LOOPBACK_HOSTS)
def test_loopback_host_headers_are_accepted(http_server: Any, host: str) -> None:
    header = host.format(port=http_server.port)
    status, reply = http_server.call(
        "next_step", headers={"Host": header}, trace_output="memory://x"
    )
    assert status == 200
    assert json.loads(reply["result"]["content"][0]["text"])["error"]["code"] == "not_found"


@pytest.mark.parametrize(
    "origin",
    [
        "http://evil.example",
        "https://evil.example:443",
        "null",
        "http://127.0.0.2:1",
        "http://localhost:80@evil.example",
        "file://localhost",
    ],
)
def test_a_foreign_origin_is_refused(http_server: Any, root: Path, origin: str) -> None:
    status, _ = http_server.call(
        "start_execution",
        headers={"Origin": origin},
        tree_uri="hello-world.yaml",
        trace_output="from-page.json",
    )
    assert status == 403
    assert not (root / "from-page.json").exists()


def test_a_loopback_origin_is_accepted(http_server: Any) -> None:
    origin = f"http://localhost:{http_server.port}"
    status, _ = http_server.call("next_step", headers={"Origin": origin}, trace_output="memory://o")
    assert status == 200


def test_allow_host_adds_a_name(spawn_http: Any) -> None:
    server = spawn_http("--allow-host", "tether.internal")
    named = {"Host": f"tether.internal:{server.port}"}
    assert server.call("next_step", headers=named, trace_output="memory://a")[0] == 200
    assert server.call("next_step", headers={"Host": "other.internal"}, trace_output="x")[0] == 421


# -- the bearer token --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "authorization",
    [
        None,
        "",
        "Bearer",
        "Bearer ",
        "Bearer wrong",
        f"Bearer {TOKEN}x",
        f"Bearer {TOKEN[:-1]}",
        f"Basic {TOKEN}",
        TOKEN,
    ],
)
def test_requests_without_the_token_are_refused(
    spawn_http: Any, root: Path, authorization: str | None
) -> None:
    server = spawn_http(env={"TETHER_MCP_TOKEN": TOKEN})
    status, body = server.call(
        "start_execution",
        headers={"Authorization": authorization},
        tree_uri="hello-world.yaml",
        trace_output="stolen.json",
    )
    assert status == 401
    assert "bearer token" in body
    assert not (root / "stolen.json").exists()
    _, headers, _ = server.request("POST", body={}, headers={"Authorization": authorization})
    assert headers["www-authenticate"].startswith("Bearer")


def test_the_token_lets_requests_in_and_health_stays_open(spawn_http: Any) -> None:
    server = spawn_http("--token", TOKEN)
    for spelling in (f"Bearer {TOKEN}", f"bearer {TOKEN}"):
        status, reply = server.call(
            "next_step", headers={"Authorization": spelling}, trace_output="memory://t"
        )
        assert status == 200, reply
    assert server.request("GET", "/health")[0] == 200


@pytest.mark.anyio
async def test_an_sdk_client_with_the_token_drives_an_execution(
    spawn_http: Any, agent_for: Any
) -> None:
    server = spawn_http(env={"TETHER_MCP_TOKEN": TOKEN})
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}) as http,
        Client(streamable_http_client(server.url, http_client=http)) as client,
    ):
        document = await agent_for(client).hello_to_done("memory://with-token")
    assert document["status"] == "complete"


def _serve(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k != "TETHER_MCP_TOKEN"}
    return subprocess.run(
        [*SERVE, "--http", "--port", "0", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**clean, **(env or {})},
    )


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.10", "example.com"])
def test_a_non_loopback_address_without_a_token_is_refused(host: str) -> None:
    done = _serve("--host", host)
    assert done.returncode == EXIT_USAGE
    error = json.loads(done.stderr)["error"]
    assert error["code"] == "usage"
    assert "TETHER_MCP_TOKEN" in error["message"]


def test_an_empty_token_does_not_count(root: Path) -> None:
    done = _serve("--host", "0.0.0.0", env={"TETHER_MCP_TOKEN": ""})
    assert done.returncode == EXIT_USAGE


def test_a_wildcard_address_with_a_token_serves_but_still_checks_hosts(spawn_http: Any) -> None:
    server = spawn_http("--host", "0.0.0.0", env={"TETHER_MCP_TOKEN": TOKEN})
    auth = {"Authorization": f"Bearer {TOKEN}"}
    assert server.call("next_step", headers=auth, trace_output="memory://w")[0] == 200
    foreign = {**auth, "Host": "evil.example"}
    assert server.call("next_step", headers=foreign, trace_output="memory://w")[0] == 421
    assert server.call("next_step", trace_output="memory://w")[0] == 401


# -- request size and error bodies -------------------------------------------------------------


def test_an_oversized_body_is_refused(spawn_http: Any) -> None:
    server = spawn_http("--max-body-bytes", "4000")
    small = server.call("var_read", trace_output="memory://size")
    assert small[0] == 200
    big = server.call("var_read", trace_output="memory://" + "x" * 5000)
    assert big[0] == 413
    # Without a declared length (chunked), the limit holds as the body arrives.
    payload = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "var_read", "arguments": {"trace_output": "y" * 5000}},
        }
    ).encode()
    chunked = b"".join(
        b"%x\r\n%s\r\n" % (len(payload[i : i + 1000]), payload[i : i + 1000])
        for i in range(0, len(payload), 1000)
    )
    status, _, _ = server.request(
        "POST",
        body=chunked + b"0\r\n\r\n",
        headers={"Content-Length": None, "Transfer-Encoding": "chunked"},
    )
    assert status == 413


def test_no_stack_trace_reaches_a_client(http_server: Any, root: Path) -> None:
    # A document that passes the store's checks but breaks inside the runtime.
    (root / "odd.json").write_text(
        json.dumps(
            {
                "schema_version": 1,
                "status": "running",
                "revision": 0,
                "var": {},
                "const": {},
                "open": [],
                "runtime": {},
                "trace": {"file": "odd.json.trace.jsonl", "entries": 0, "bytes": 0},
            }
        )
    )
    status, reply = http_server.call("next_step", trace_output="odd.json")
    assert status == 200
    result = reply["result"]
    assert result["isError"] is True
    error = json.loads(result["content"][0]["text"])["error"]
    assert error["code"] == "internal"
    assert "Traceback" not in json.dumps(reply)
    assert "IndexError" not in json.dumps(reply)
    bodies = [
        http_server.request("POST", body=b"{not json")[2],
        http_server.request("POST", body={"jsonrpc": "2.0", "id": 1, "method": 7})[2],
        http_server.request(
            "POST", body={"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": 5}
        )[2],
        http_server.request("POST", body=b"[]")[2],
        http_server.request("POST", body=b"{}", headers={"Content-Type": "text/plain"})[2],
        http_server.request("DELETE")[2],
        http_server.request("GET", "/nowhere")[2],
    ]
    for body in bodies:
        assert "Traceback" not in body
        assert 'File "' not in body
    # The operator sees what happened, on the server's stderr.
    http_server.stop()
    assert any("Traceback" in line for line in http_server.log)
