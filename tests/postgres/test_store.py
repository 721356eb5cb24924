"""The PostgreSQL store beyond the shared conformance suite: its URI form, its schema and version,
the append-only trace, the serialisation of concurrent answers, and the `tether` command on it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from support.postgres import PostgresServer
from tether.errors import TetherError
from tether.store import store_for
from tether.store.postgres import SCHEMA_VERSION
from tether.verbs import Runtime


def _tether(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tether.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
        check=False,
    )


def _error(call: Callable[..., Any], *args: Any) -> TetherError:
    with pytest.raises(TetherError) as err:
        call(*args)
    return err.value


def test_canonical_form_drops_the_password_and_orders_parameters() -> None:
    store = store_for("postgresql://x@localhost/db#a")
    given = "postgres://ann:s3cret@127.0.0.1:5432/db?sslmode=disable&application_name=t#run 1"
    canonical = store.canonical(given)
    assert canonical == (
        "postgresql://ann@127.0.0.1:5432/db?application_name=t&sslmode=disable#run%201"
    )
    assert store.canonical(canonical) == canonical
    as_parameter = "postgresql://ann@127.0.0.1/db?password=s3cret&sslmode=disable#r"
    assert store.canonical(as_parameter) == "postgresql://ann@127.0.0.1/db?sslmode=disable#r"


def test_a_uri_without_an_execution_name_or_libpq_cannot_read_is_refused() -> None:
    store = store_for("postgresql://x@localhost/db#a")
    err = _error(store.canonical, "postgresql://ann@127.0.0.1/db")
    assert err.code == "invalid_value"
    assert "postgresql://ann@127.0.0.1/db#run-1" in err.message
    err = _error(store.canonical, "postgresql://ann@127.0.0.1/db?colour=blue#run-1")
    assert err.code == "invalid_value" and "colour" in err.message


def test_schema_is_created_on_first_use_with_its_version(
    server: PostgresServer, chain: Callable[[int], Path]
) -> None:
    server.create_database("fresh")
    uri = server.uri("first", database="fresh")
    Runtime().start(str(chain(2)), uri)
    with server.connect("fresh") as conn:
        assert conn.execute("SELECT version FROM tether_schema").fetchall() == [(SCHEMA_VERSION,)]
        names = conn.execute("SELECT name, revision, trace_entries FROM tether_executions")
        assert names.fetchall() == [("first", 0, 0)]


def test_a_database_of_a_newer_schema_is_refused_and_left_alone(server: PostgresServer) -> None:
    server.create_database("future")
    with server.connect("future") as conn:
        conn.execute("CREATE TABLE tether_schema (singleton boolean PRIMARY KEY, version integer)")
        conn.execute("INSERT INTO tether_schema VALUES (true, %s)", (SCHEMA_VERSION + 1,))
    uri = server.uri("any", database="future")
    err = _error(Runtime().resume, uri)
    assert err.code == "internal"
    assert f"schema version {SCHEMA_VERSION + 1}" in err.message and "upgrade" in err.message
    with server.connect("future") as conn:
        tables = conn.execute("SELECT tablename FROM pg_tables WHERE tablename LIKE 'tether%'")
        assert tables.fetchall() == [("tether_schema",)]


def _trace_rows(server: PostgresServer, name: str) -> list[tuple[Any, ...]]:
    with server.connect() as conn:
        return conn.execute(
            "SELECT epoch, idx, xmin::text, entry::text FROM tether_trace WHERE name = %s "
            "ORDER BY epoch, idx",
            (name,),
        ).fetchall()


def test_steps_append_to_the_trace_and_never_rewrite_it(
    server: PostgresServer, chain: Callable[[int], Path], new_name: Callable[[], str]
) -> None:
    rt, name = Runtime(), new_name()
    uri = server.uri(name)
    rt.start(str(chain(5)), uri)
    rt.submit(uri, "success")
    rt.submit(uri, "success")
    before = _trace_rows(server, name)
    rt.think(uri, "halfway")
    rt.submit(uri, "success")
    after = _trace_rows(server, name)
    assert after[: len(before)] == before  # same rows, same row versions: nothing rewritten
    assert [row[1] for row in after] == list(range(len(after)))
    assert [e["seq"] for e in rt.trace(uri)] == list(range(len(after)))

    rt.reset(uri)
    reset_rows = _trace_rows(server, name)
    assert {row[0] for row in reset_rows} == {1}  # a new epoch; the old one is gone
    assert [e["kind"] for e in rt.trace(uri)] == ["reset"]
    rt.submit(uri, "success")
    assert _trace_rows(server, name)[:1] == reset_rows
    assert rt.verify(uri)["ok"]


def test_concurrent_answers_to_one_step_advance_it_once(
    server: PostgresServer, chain: Callable[[int], Path], new_name: Callable[[], str]
) -> None:
    rt = Runtime()
    uri = server.uri(new_name())
    rt.start(str(chain(3)), uri)
    rt.submit(uri, "success")
    request = rt.next(uri)
    outcomes: list[Any] = []
    barrier = threading.Barrier(8)

    def answer() -> None:
        barrier.wait(timeout=30)
        try:
            outcomes.append(rt.submit(uri, "success", step=request["step"]))
        except TetherError as exc:
            outcomes.append(exc)

    threads = [threading.Thread(target=answer) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    won = [o for o in outcomes if isinstance(o, dict)]
    lost = [o for o in outcomes if isinstance(o, TetherError)]
    assert len(won) == 1 and won[0]["status"] == "action_complete"
    assert len(lost) == 7 and {e.code for e in lost} == {"stale_step"}
    assert all(e.details["current"]["name"] == "Step_1" for e in lost)
    assert [e["name"] for e in rt.trace(uri) if e["kind"] == "instruct"] == ["Step_0"]


def test_the_command_line_drives_an_execution_by_uri_and_by_default_store(
    server: PostgresServer, chain: Callable[[int], Path], new_name: Callable[[], str]
) -> None:
    name = new_name()
    uri = server.uri(name)
    started = _tether("start", str(chain(1)), uri)
    assert started.returncode == 0, started.stderr
    assert json.loads(started.stdout)["uri"] == uri
    env = {"TETHER_STORE": server.dsn}
    for _ in range(2):  # the protocol, then the one step, each answered by its plain name
        step = json.loads(_tether("next", name, env=env).stdout)["step"]
        answered = _tether("submit", name, "success", "--step", step, env=env)
        assert answered.returncode == 0, answered.stderr
    assert json.loads(_tether("next", uri).stdout) == {"status": "done"}
    verified = _tether("verify", name, env=env)
    assert verified.returncode == 0 and json.loads(verified.stdout)["ok"]


def test_a_password_in_the_uri_is_used_but_never_shown(
    server: PostgresServer, chain: Callable[[int], Path], new_name: Callable[[], str]
) -> None:
    server.add_password_user("keyholder", "open-sesame")
    name = new_name()
    with_password = f"postgresql://keyholder:open-sesame@127.0.0.1:{server.port}/postgres#{name}"
    rt = Runtime()
    started = rt.start(str(chain(1)), with_password)
    shown = started["uri"]
    assert shown == f"postgresql://keyholder@127.0.0.1:{server.port}/postgres#{name}"
    assert rt.submit(shown, "success")["status"] == "protocol_accepted"
    assert "open-sesame" not in json.dumps(rt.get(shown))

    refused = _tether("next", shown, env={"TETHER_PG_TIMEOUT": "1"})
    error = json.loads(refused.stderr)["error"]
    assert refused.returncode == 1 and error["code"] == "store_unavailable"
    assert "no password supplied" in error["message"]
    given = _tether("next", shown, env={"PGPASSWORD": "open-sesame"})
    assert given.returncode == 0 and json.loads(given.stdout)["name"] == "Step_0"


def test_n26_a_nul_in_an_execution_name_is_an_invalid_value(
    server: PostgresServer, chain: Callable[[int], Path]
) -> None:
    """N26: `#a%00b` names an execution PostgreSQL cannot store: refused as `invalid_value`
    (exit 3) before any connection, not an internal error."""
    done = _tether("start", str(chain(2)), server.uri("a%00b"))
    assert done.returncode == 3 and done.stdout == ""
    error = json.loads(done.stderr)["error"]
    assert error["code"] == "invalid_value" and "NUL" in error["message"]
