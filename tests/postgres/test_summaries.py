"""The summaries PostgreSQL keeps at commit (`tether_summaries`): what the listing and `/api/runs`
read instead of every state. They equal the summaries read from the committed states after runs
of every kind, after a process killed in the middle of a commit, and after a store of schema
version 2 (which had no summaries) is opened for the first time by a new Tether."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import psycopg

from support.postgres import PostgresServer
from tether.store import store_for
from tether.store.base import Summary
from tether.store.postgres import SCHEMA_VERSION
from tether.verbs import Runtime

HELLO = str(Path(__file__).resolve().parents[2] / "examples" / "hello-world.yaml")


def _database(server: PostgresServer) -> tuple[str, str]:
    name = f"sum_{uuid.uuid4().hex[:12]}"
    server.create_database(name)
    return name, server.database_uri(name)


def _from_states(dsn: str) -> list[Summary]:
    """The listing recounted from each execution's committed state."""
    store = store_for(dsn)
    with psycopg.connect(dsn) as conn:
        names = [r[0] for r in conn.execute("SELECT name FROM tether_executions").fetchall()]
    out = []
    for name in sorted(names, key=lambda n: n.encode()):
        uri = store.canonical(f"{dsn}#{name}")
        out.append(Summary.of(uri, name, store.load(uri)))
    return out


def _walk(dsn: str) -> None:
    """Executions in every status and phase: running, complete, failed, reset, with refusals."""
    rt = Runtime()
    for name in ("b-running", "a-complete", "c-failed", "d-reset"):
        rt.start(HELLO, f"{dsn}#{name}")
    rt.submit(f"{dsn}#a-complete", "success")
    rt.submit(f"{dsn}#c-failed", "failure")
    rt.submit(f"{dsn}#d-reset", "success")
    rt.reset(f"{dsn}#d-reset")


def test_the_kept_summaries_equal_the_states_and_page_by_tree_and_status(
    server: PostgresServer,
) -> None:
    _, dsn = _database(server)
    _walk(dsn)
    store = store_for(dsn)
    assert store.list(dsn) == _from_states(dsn)
    page, total, trees = store.page(dsn, status="running", limit=1, offset=1)
    running = [s for s in _from_states(dsn) if s.status == "running"]
    assert (page, total, trees) == (running[1:2], len(running), ["hello-world"])
    assert store.page(dsn, tree="another")[:2] == ([], 0)


def test_the_fingerprint_a_viewer_polls_moves_with_each_create_and_commit_alone(
    server: PostgresServer,
) -> None:
    """`fingerprint` (read in constant time from the pulse each commit moves) counts the
    executions and changes with every create and commit, and with nothing else."""
    _, dsn = _database(server)
    _walk(dsn)
    store = store_for(dsn)
    first = store.fingerprint(dsn)
    assert first[0] == len(store.list(dsn)) and store.fingerprint(dsn) == first
    store.tally(dsn)  # a reader keeps counts: no change to the listing
    assert store.fingerprint(dsn) == first
    Runtime().submit(f"{dsn}#b-running", "success")  # a commit
    second = store.fingerprint(dsn)
    assert second[0] == first[0] and second != first
    Runtime().start(HELLO, f"{dsn}#another")
    assert store.fingerprint(dsn)[0] == first[0] + 1


def test_a_store_of_schema_version_2_gains_its_summaries_on_first_open(
    server: PostgresServer,
) -> None:
    _, dsn = _database(server)
    _walk(dsn)
    expected = _from_states(dsn)
    with psycopg.connect(dsn, autocommit=True) as conn:  # as Tether 2's schema left it
        conn.execute("DROP TABLE tether_summaries")
        conn.execute("UPDATE tether_schema SET version = 2")
    listed = subprocess.run(  # a new process: the first to open it
        [sys.executable, "-m", "tether", "list", dsn, "--json"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert listed.returncode == 0, listed.stderr
    assert [row["name"] for row in json.loads(listed.stdout)] == [s.name for s in expected]
    assert [Summary(**row) for row in json.loads(listed.stdout)] == expected
    assert store_for(dsn).fingerprint(dsn)[0] == len(expected)
    with psycopg.connect(dsn) as conn:
        assert conn.execute("SELECT version FROM tether_schema").fetchone() == (SCHEMA_VERSION,)


_KILLED_STEP = """
import sys
from tether.verbs import Runtime
Runtime().submit(sys.argv[1], "success")
"""


def test_a_process_killed_between_the_trace_and_the_summary_leaves_both_as_they_were(
    server: PostgresServer,
) -> None:
    """The step's commit writes the trace and the state, then the summary; the summaries table
    is held locked so that the step stops there, and the process is killed while it waits."""
    _, dsn = _database(server)
    _walk(dsn)
    uri = f"{dsn}#b-running"
    before, entries = Runtime().get(uri), len(Runtime().trace(uri))
    fingerprint = store_for(dsn).fingerprint(dsn)
    with psycopg.connect(dsn) as holder:
        holder.execute("LOCK TABLE tether_summaries IN EXCLUSIVE MODE")
        step = subprocess.Popen(
            [sys.executable, "-c", _KILLED_STEP, uri], env={**os.environ}, start_new_session=True
        )
        try:
            _await_waiting_on_summaries(server, dsn)
        finally:
            os.kill(step.pid, signal.SIGKILL)
            step.wait(timeout=30)
        holder.rollback()
    after = Runtime().get(uri)
    assert after["revision"] == before["revision"]
    assert store_for(dsn).fingerprint(dsn) == fingerprint
    assert len(Runtime().trace(uri)) == entries
    assert store_for(dsn).list(dsn) == _from_states(dsn)
    assert Runtime().verify(uri)["ok"]
    Runtime().submit(uri, "success")  # the next step commits, summary and all
    assert store_for(dsn).list(dsn) == _from_states(dsn)
    assert store_for(dsn).fingerprint(dsn) != fingerprint


def _await_waiting_on_summaries(server: PostgresServer, dsn: str) -> None:
    """Until a session of the database waits on a lock while writing a summary (the state and
    trace of its commit already written in its transaction)."""
    deadline = time.monotonic() + 60
    with psycopg.connect(dsn, autocommit=True) as watcher:
        while time.monotonic() < deadline:
            row = watcher.execute(
                "SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                " AND query LIKE %s AND datname = current_database()",
                ("%INSERT INTO tether_summaries%",),
            ).fetchone()
            if row is not None:
                return
            time.sleep(0.05)
    raise AssertionError("the step never reached its summary")
