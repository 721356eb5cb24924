"""`tether mcp --store DATABASE [--allow-store DATABASE ...]` on a real PostgreSQL server: a
client reaches those databases, by bare names or by their URIs, and no other database, user,
host or parameter of the same server; the viewer of a database reaches no other."""

from __future__ import annotations

import os
import sys
import time
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters

from support.listener import Listener
from support.postgres import PostgresServer
from tether.verbs import Runtime
from viewer.driver import ViewServer

SERVE = [sys.executable, "-m", "tether.cli.main", "mcp"]
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _database(server: PostgresServer) -> str:
    name = f"reach_{uuid.uuid4().hex[:12]}"
    server.create_database(name)
    return server.database_uri(name)


async def _result(client: Client, tool: str, **args: Any) -> tuple[bool, str]:
    result = await client.call_tool(tool, args)
    return not result.is_error, result.content[0].text  # type: ignore[union-attr]


@pytest.mark.anyio
async def test_a_client_reaches_the_given_databases_and_no_other(
    server: PostgresServer, tmp_path: Path
) -> None:
    (tmp_path / "hello-world.yaml").write_text((EXAMPLES / "hello-world.yaml").read_text())
    given, allowed, other = _database(server), _database(server), _database(server)
    params = StdioServerParameters(
        command=SERVE[0],
        args=[*SERVE[1:], "--root", str(tmp_path), "--store", given, "--allow-store", allowed],
        env=dict(os.environ),
    )
    tree = "hello-world.yaml"
    port = server.port
    async with Client(params) as client:
        for trace in (
            "bare",
            f"{given}#full",
            f"{allowed}#also",
            f"{allowed}#x".replace("postgresql", "postgres"),
        ):
            ok, text = await _result(client, "start_execution", tree_uri=tree, trace_output=trace)
            assert ok, text
        refused = [
            f"{other}#run",  # another database of the same server
            f"postgresql://postgres@127.0.0.1:{port}/{given.rsplit('/', 1)[1]}#run",  # another user
            given.replace("tether@", "tether:guess@") + "#run",  # a password of the client's
            f"{given}?password=guess#run",
            f"{given}?host=127.0.0.2#run",  # a parameter that moves the connection
            f"{given}?application_name=x#run",
        ]
        for trace in refused:
            ok, text = await _result(client, "start_execution", tree_uri=tree, trace_output=trace)
            assert not ok and '"forbidden"' in text, (trace, text)
    rt = Runtime()
    assert rt.next(f"{given}#bare")["name"] == "Acknowledge_Protocol"
    assert rt.list_executions(other) == []


def test_the_viewer_of_a_database_reaches_no_other_host(server: PostgresServer) -> None:
    dsn = _database(server)
    Runtime().start(str(EXAMPLES / "hello-world.yaml"), f"{dsn}#run")
    with Listener() as listener:
        view = ViewServer(dsn)
        try:
            for name in (
                f"postgresql://victim@127.0.0.1:{listener.port}/db#run",
                f"run?host=127.0.0.1&port={listener.port}",
                f"@127.0.0.1:{listener.port}/db",
            ):
                status, body = view.get(f"/api/run?path={quote(name, safe='')}")
                assert status == 404 and body["error"]["code"] == "not_found", body
            assert view.get("/api/run?path=run")[0] == 200
        finally:
            assert view.stop() == 0
        time.sleep(0.3)
        assert listener.connections == 0 and listener.received == b""
