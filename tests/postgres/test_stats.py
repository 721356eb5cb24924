"""`tether stats` on a real PostgreSQL database: the figures of executions of known outcomes
(`support.stats_scenario`, its bound session through the real hook), from the counts the
database keeps, equal to the file store's for the same executions; the refusal log in its own
table."""

from __future__ import annotations

import itertools
import json
import subprocess
import uuid
from pathlib import Path

import jsonschema
import pytest

from support.command import REPO, TETHER
from support.postgres import PostgresServer
from support.stats_scenario import (
    EXPECTED_FORKS,
    EXPECTED_RELEASE,
    EXPECTED_TEAM_AGENTS,
    EXPECTED_TINY,
    RELEASE,
    drive,
    drive_forks,
    drive_team,
    drive_timeouts,
    refused,
    without_hashes,
)
from tether import stats
from tether.store import store_for
from tether.store.postgres import SCHEMA_VERSION, PostgresStore
from tether.verbs import Runtime

SCHEMA = json.loads((REPO / "schema" / "stats.schema.json").read_text())


def _database(server: PostgresServer) -> str:
    name = f"stats_{uuid.uuid4().hex[:12]}"
    server.create_database(name)
    return server.database_uri(name)


def test_the_database_gives_the_known_figures_and_agrees_with_the_files(
    server: PostgresServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dsn = _database(server)
    drive(dsn, tmp_path / "pg")
    drive(str(tmp_path / "files" / "runs"), tmp_path / "files")

    def no_trace_read(*args: object, **kwargs: object) -> None:
        raise AssertionError("stats read a trace into Python")

    for method in ("read_execution", "read_trace", "load", "refusals"):
        monkeypatch.setattr(PostgresStore, method, no_trace_read)
    figures = stats.collect(dsn)
    monkeypatch.undo()
    assert figures["place"] == dsn
    assert without_hashes(figures) == [EXPECTED_RELEASE, EXPECTED_TINY]
    files = stats.collect(str(tmp_path / "files" / "runs"))
    assert {**figures, "place": None} == {**files, "place": None}
    jsonschema.validate(figures, SCHEMA)


def test_a_fork_counts_only_what_happened_in_it_in_the_database_too(
    server: PostgresServer, tmp_path: Path
) -> None:
    """The forks of `drive_forks`, counted on PostgreSQL: each failure once, as on files."""
    dsn = _database(server)
    drive_forks(dsn, tmp_path / "pg")
    drive_forks(str(tmp_path / "files" / "runs"), tmp_path / "files")
    figures = stats.collect(dsn)
    assert without_hashes(figures) == [EXPECTED_FORKS]
    files = stats.collect(str(tmp_path / "files" / "runs"))
    assert {**figures, "place": None} == {**files, "place": None}
    done = subprocess.run(
        [TETHER, "stats", dsn], capture_output=True, text=True, timeout=60, check=False
    )
    build = next(line.split() for line in done.stdout.splitlines() if "  Build " in line)
    assert build[:6] == ["Build", "3", "5", "3", "2", "0"], done.stdout + done.stderr


def test_the_command_counts_a_database_with_filters(server: PostgresServer, tmp_path: Path) -> None:
    dsn = _database(server)
    drive(dsn, tmp_path)
    done = subprocess.run(
        [TETHER, "stats", dsn, "--json", "--tree", "release", "--since", "2026-03-02T10:20Z"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout)
    jsonschema.validate(figures, SCHEMA)
    assert figures["executions"] == 2 and figures["trees"][0]["executions"]["complete"] == 1
    table = subprocess.run(
        [TETHER, "stats", dsn], capture_output=True, text=True, timeout=60, check=False
    )
    assert table.returncode == 0, table.stderr
    assert f"{dsn}: 7 executions" in table.stdout and "  Build " in table.stdout
    missing = subprocess.run(
        [TETHER, "stats", dsn, "--tree", "nope"], capture_output=True, text=True, check=False
    )
    assert missing.returncode == 4 and "--tree 'nope'" in missing.stderr


def test_a_refusal_is_kept_beside_the_trace_and_changes_nothing(
    server: PostgresServer, tmp_path: Path
) -> None:
    dsn = _database(server)
    (tmp_path / "release.yaml").write_text(RELEASE)
    rt = Runtime()
    uri = rt.start(str(tmp_path / "release.yaml"), f"{dsn}#run")["uri"]
    rt.submit(uri, "success")
    before = store_for(uri).read_execution(uri)
    refused(lambda: rt.submit(uri, "success"), "writes_missing")
    assert store_for(uri).read_execution(uri) == before
    assert rt.verify(uri)["ok"]
    assert [r["code"] for r in store_for(uri).refusals(uri)] == ["writes_missing"]


def test_a_database_of_the_first_schema_gains_the_refusal_log(
    server: PostgresServer, tmp_path: Path
) -> None:
    name = f"stats_{uuid.uuid4().hex[:12]}"
    server.create_database(name)
    with server.connect(name) as conn:
        conn.execute(
            "CREATE TABLE tether_schema (singleton boolean PRIMARY KEY DEFAULT true"
            " CHECK (singleton), version integer NOT NULL, installed_at timestamptz"
            " NOT NULL DEFAULT now())"
        )
        conn.execute("INSERT INTO tether_schema (version) VALUES (1)")
    dsn = server.database_uri(name)
    (tmp_path / "release.yaml").write_text(RELEASE)
    rt = Runtime()
    uri = rt.start(str(tmp_path / "release.yaml"), f"{dsn}#run")["uri"]
    refused(lambda: rt.eval(uri, True), "wrong_phase")
    assert stats.collect(dsn)["trees"][0]["refused"] == {"wrong_phase": 1}
    with server.connect(name) as conn:
        assert conn.execute("SELECT version FROM tether_schema").fetchall() == [(SCHEMA_VERSION,)]


def test_a_timed_out_human_step_counts_as_a_failed_attempt_as_on_files(
    server: PostgresServer, tmp_path: Path
) -> None:
    dsn = _database(server)
    drive_timeouts(dsn, tmp_path / "pg")
    drive_timeouts(str(tmp_path / "runs"), tmp_path / "files")
    figures = stats.collect(dsn, tree="timed")
    (action,) = figures["trees"][0]["actions"]
    assert (action["attempts"], action["failures"], action["retries"]) == (2, 2, 1)
    files = stats.collect(str(tmp_path / "runs"), tree="timed")
    assert {**figures, "place": None} == {**files, "place": None}


def test_kept_counts_and_sums_equal_the_traces_after_more_steps_and_older_schemas(
    server: PostgresServer, tmp_path: Path
) -> None:
    """`tally` adds up the kept sums of settled executions and the kept counts of the others,
    `behind` reads each execution's kept marks; each counts again what it finds behind (a
    commit, a refusal, a settled execution reset, a store of schema version 5 without the
    notes of what is behind and the ranked marks, 3 without the tables or 4 with counts of
    another form), and its figures are those counted from every trace, for any `--since`."""
    import psycopg

    from tether.store import postgres
    from tether.store.tally import MARKS, behind_of, count_each, marked, tally_of

    dsn = _database(server)
    drive(dsn, tmp_path / "pg")
    store = store_for(dsn)

    def equal() -> None:
        recounted = tally_of(count_each(store, dsn))
        assert store.tally(dsn) == recounted and recounted["trees"]
        for tree in recounted["trees"]:
            for key, measure, page in itertools.product(
                tree["actions"], MARKS, (slice(0, 2), slice(1, 50), slice(60, 70))
            ):
                asked = (tree["name"], tree["hash"], key, measure, page)
                assert store.behind(dsn, *asked) == behind_of(
                    marked(count_each(store, dsn)), *asked
                )
        for since in ("2026-03-02T10:20:00.000Z", "2026-03-02T00:00:00.000Z", "2026-03-03"):
            assert store.tally(dsn, since=since) == tally_of(count_each(store, dsn), since=since)

    equal()
    with psycopg.connect(dsn, autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM tether_sums").fetchone() != (0,)
    running = next(s for s in store.list(dsn) if s.status == "running")
    refused(lambda: Runtime().submit(running.uri, "sideways"), "invalid_value")
    Runtime().think(running.uri, "a step that changes the revision")
    equal()
    ended = next(s for s in store.list(dsn) if s.status != "running")
    Runtime().reset(ended.uri)  # a settled execution runs again: its sum is taken away
    equal()
    Runtime().think(running.uri, "a step a store of schema version 5 finds by its revision")
    with psycopg.connect(dsn, autocommit=True) as conn:  # as schema 5 left it
        conn.execute("DROP TABLE tether_stale")
        conn.execute("DROP TABLE tether_marks")
        conn.execute("DROP TABLE tether_marked")
        conn.execute("UPDATE tether_schema SET version = 5")
    postgres._ready.discard(dsn)
    assert store.exists(running.uri)  # opened: what its counts are behind on is noted, once
    with psycopg.connect(dsn, autocommit=True) as conn:
        noted = conn.execute("SELECT name FROM tether_stale").fetchall()
        assert noted == [(running.name,)]
        assert conn.execute("SELECT count(*) FROM tether_marks").fetchone() != (0,)
    equal()
    for version in (3, 4):
        with psycopg.connect(dsn, autocommit=True) as conn:  # as Tether's schema left it
            conn.execute("DROP TABLE tether_figures")
            conn.execute("DROP TABLE tether_sums")
            if version == 4:
                conn.execute(
                    "CREATE TABLE tether_figures (name text PRIMARY KEY, revision bigint NOT NULL,"
                    " refusals bigint NOT NULL, record json NOT NULL)"
                )
            conn.execute("UPDATE tether_schema SET version = %s", (version,))
        postgres._ready.discard(dsn)  # this process opens it again, as a new one would
        equal()
    with psycopg.connect(dsn, autocommit=True) as conn:
        assert conn.execute("SELECT version FROM tether_schema").fetchone() == (SCHEMA_VERSION,)


def test_a_team_is_counted_per_agent_from_the_kept_counts(
    server: PostgresServer, tmp_path: Path
) -> None:
    """`drive_team` on the database: the same figures per agent as in a folder, read from
    the counts the database keeps."""
    dsn = _database(server)
    drive_team(dsn, tmp_path / "pg")
    figures = stats.collect(dsn, tree="stats-team")
    jsonschema.validate(figures, SCHEMA)
    assert figures["trees"][0]["agents"] == EXPECTED_TEAM_AGENTS


def test_readers_racing_to_catch_the_sums_up_add_each_execution_once(
    server: PostgresServer, tmp_path: Path
) -> None:
    """Four readers at once find every count behind: each execution's count is moved into the
    sums once (the rows they take are locked in one order), and every reader's figures are the
    traces'."""
    from concurrent.futures import ThreadPoolExecutor

    from tether.store.tally import count_each, tally_of

    for round_ in range(3):
        dsn = _database(server)
        drive(dsn, tmp_path / f"pg{round_}")
        store = store_for(dsn)
        with ThreadPoolExecutor(4) as pool:
            results = list(pool.map(store.tally, [dsn] * 4))
        recounted = tally_of(count_each(store, dsn))
        assert all(result == recounted for result in results)
        assert store.tally(dsn) == recounted


_KILLED_IN_ITS_COUNT = """
import os, signal, sys
from tether.store import store_for, tally
def killed(self):
    os.kill(os.getpid(), signal.SIGKILL)  # in the transaction that keeps counts and sums
    yield
tally.Sums.each = killed
store_for(sys.argv[1]).tally(sys.argv[1])
"""


def test_a_reader_killed_while_it_keeps_counts_and_sums_leaves_them_right(
    server: PostgresServer, tmp_path: Path
) -> None:
    import sys

    from tether.store.tally import count_each, tally_of

    dsn = _database(server)
    drive(dsn, tmp_path / "pg")
    done = subprocess.run(
        [sys.executable, "-c", _KILLED_IN_ITS_COUNT, dsn], capture_output=True, timeout=120
    )
    assert done.returncode == -9, done.stderr
    store = store_for(dsn)
    assert store.tally(dsn) == tally_of(count_each(store, dsn))


_KILLED_BEFORE_ITS_NOTE = """
import os, signal, sys
import psycopg
from tether.store import postgres
from tether.verbs import Runtime
execute = psycopg.Connection.execute
def killing(self, query, *args, **kwargs):
    if query is postgres._CHANGED:  # the commit's row is written, the note not yet
        os.kill(os.getpid(), signal.SIGKILL)
    return execute(self, query, *args, **kwargs)
psycopg.Connection.execute = killing
Runtime().think(sys.argv[1], "a step killed before its note")
"""


def test_a_commit_killed_between_its_row_and_its_note_leaves_the_counts_right(
    server: PostgresServer, tmp_path: Path
) -> None:
    """A commit says what the kept counts are behind on in its own transaction: killed after
    it wrote the execution's row and before the note, neither is kept; a commit that lands
    is noted (so is a tree swap), counted again by the next reader, and its note dropped (as
    is the note of an execution no longer there)."""
    import sys

    import psycopg

    from tether.store.tally import count_each, tally_of

    dsn = _database(server)
    drive(dsn, tmp_path / "pg")
    store = store_for(dsn)
    assert store.tally(dsn) == tally_of(count_each(store, dsn))
    running = next(s for s in store.list(dsn) if s.status == "running")
    before = store.read_execution(running.uri)
    done = subprocess.run(
        [sys.executable, "-c", _KILLED_BEFORE_ITS_NOTE, running.uri],
        capture_output=True,
        timeout=120,
    )
    assert done.returncode == -9, done.stderr
    assert store.read_execution(running.uri) == before
    with psycopg.connect(dsn, autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM tether_stale").fetchone() == (0,)
    assert store.tally(dsn) == tally_of(count_each(store, dsn))
    Runtime().think(running.uri, "a step that lands")
    with psycopg.connect(dsn, autocommit=True) as conn:
        noted = conn.execute("SELECT name FROM tether_stale").fetchall()
    assert noted == [(running.name,)]
    assert store.tally(dsn) == tally_of(count_each(store, dsn))
    swapped = tmp_path / "release-2.2.yaml"  # a tree swap is noted too: its hash moves
    swapped.write_text(RELEASE.replace('version: "2.1"', 'version: "2.2"'))
    release = next(s for s in store.list(dsn) if s.status == "running" and s.tree == "release")
    assert Runtime().replace_tree(release.uri, str(swapped))["status"] == "replaced"
    with psycopg.connect(dsn, autocommit=True) as conn:
        noted = conn.execute("SELECT name FROM tether_stale").fetchall()
    assert noted == [(release.name,)]
    with psycopg.connect(dsn, autocommit=True) as conn:  # a note of an execution not there
        conn.execute("INSERT INTO tether_stale (name, changes) VALUES ('gone', 1)")
    assert store.tally(dsn) == tally_of(count_each(store, dsn))
    with psycopg.connect(dsn, autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM tether_stale").fetchone() == (0,)


def test_commits_racing_readers_leave_nothing_behind_unnoted(
    server: PostgresServer, tmp_path: Path
) -> None:
    """Steps commit while readers count again: a reader drops a note only when no change came
    since it read it, so after the race the next reader's figures are the traces'."""
    import threading

    from tether.store.tally import count_each, tally_of

    dsn = _database(server)
    drive(dsn, tmp_path / "pg")
    store = store_for(dsn)
    running = [s.uri for s in store.list(dsn) if s.status == "running"]
    stepping = threading.Event()

    def read() -> None:
        while not stepping.is_set():
            store.tally(dsn)

    readers = [threading.Thread(target=read) for _ in range(2)]
    for reader in readers:
        reader.start()
    try:
        for n in range(20):  # each a refusal, which the figures count
            uri = running[n % len(running)]
            refused(lambda uri=uri: Runtime().submit(uri, "sideways"), "invalid_value")
    finally:
        stepping.set()
        for reader in readers:
            reader.join()
    assert store.tally(dsn) == tally_of(count_each(store, dsn))
