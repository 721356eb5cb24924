"""`tether list` on a real PostgreSQL database: every execution in it, the status filter, the
password kept out of what is printed, and the refusals (a URI naming one execution, a database
that cannot be reached)."""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from pathlib import Path

from support.command import TETHER
from support.postgres import PostgresServer, free_port
from tether.verbs import Runtime

HELLO = str(Path(__file__).resolve().parents[2] / "examples" / "hello-world.yaml")


def _tether(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [TETHER, *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
        check=False,
    )


def _database(server: PostgresServer) -> str:
    """A fresh database of this test alone, and its URI."""
    name = f"list_{uuid.uuid4().hex[:12]}"
    server.create_database(name)
    return server.database_uri(name)


def test_list_shows_every_execution_in_the_database(server: PostgresServer) -> None:
    dsn = _database(server)
    rt = Runtime()
    for name in ("beta", "alpha", "gamma run"):
        rt.start(HELLO, f"{dsn}#{name}")
    rt.submit(f"{dsn}#alpha", "success")
    rt.submit(f"{dsn}#gamma run", "failure")
    done = _tether("list", dsn, "--json")
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    assert [r["name"] for r in rows] == ["alpha", "beta", "gamma run"]
    alpha = rows[0]
    assert alpha["uri"] == f"{dsn}#alpha" and alpha["tree"] == "hello-world"
    assert (alpha["status"], alpha["phase"], alpha["revision"]) == ("running", "performing", 1)
    assert alpha["open_step"] == {"name": "Determine_Time", "type": "instruct"}
    assert rows[2]["uri"] == f"{dsn}#gamma%20run"
    assert rows == rt.list_executions(dsn)
    assert [r["status"] for r in rows] == ["running", "running", "failed"]
    for status, names in (
        ("running", ["alpha", "beta"]),
        ("failed", ["gamma run"]),
        ("complete", []),
    ):
        done = _tether("list", dsn, "--json", "--status", status)
        assert [r["name"] for r in json.loads(done.stdout)] == names, status
    table = _tether("list", dsn).stdout.splitlines()
    assert [line.split()[0] for line in table] == ["NAME", "alpha", "beta", "gamma"]


def test_the_default_store_is_listed_and_a_password_is_not_printed(
    server: PostgresServer,
) -> None:
    dsn = _database(server)
    Runtime().start(HELLO, f"{dsn}#one")
    with_password = dsn.replace("tether@", "tether:hunter2@")
    done = _tether("list", "--json", env={"TETHER_STORE": with_password})
    assert done.returncode == 0, done.stderr
    assert [r["uri"] for r in json.loads(done.stdout)] == [f"{dsn}#one"]
    assert "hunter2" not in done.stdout + done.stderr


def test_a_uri_naming_one_execution_or_no_database_is_refused(server: PostgresServer) -> None:
    dsn = _database(server)
    Runtime().start(HELLO, f"{dsn}#one")
    done = _tether("list", f"{dsn}#one")
    assert done.returncode == 3 and done.stdout == ""
    error = json.loads(done.stderr)["error"]
    assert error["code"] == "invalid_value" and f"give the database, {dsn}" in error["message"]
    nowhere = f"postgresql://tether@127.0.0.1:{free_port()}/postgres"
    done = _tether("list", nowhere, env={"TETHER_PG_TIMEOUT": "1"})
    assert done.returncode == 1 and done.stdout == ""
    assert json.loads(done.stderr)["error"]["code"] == "store_unavailable"
