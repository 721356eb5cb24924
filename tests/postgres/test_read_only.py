"""A database role that may only read: `tether stats` and the executions behind a figure
answer for it from what is kept and what it counts again in memory, keeping nothing; the
figures equal those a writer keeps, and those counted from every trace."""

from __future__ import annotations

import itertools
import json
import subprocess
import uuid
from pathlib import Path

import pytest
from psycopg import sql

from support.command import TETHER
from support.postgres import PostgresServer
from support.stats_scenario import drive, refused
from tether import stats
from tether.errors import TetherError
from tether.store import store_for
from tether.store.tally import MARKS, behind_of, count_each, marked, tally_of
from tether.verbs import Runtime


def _reader(server: PostgresServer, database: str) -> str:
    """A login role granted only SELECT on Tether's tables (and what connecting needs)."""
    role = f"reader_{uuid.uuid4().hex[:8]}"
    with server.connect(database) as conn:
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(role)))
        conn.execute(
            sql.SQL("GRANT SELECT ON ALL TABLES IN SCHEMA public TO {}").format(
                sql.Identifier(role)
            )
        )
    return f"postgresql://{role}@127.0.0.1:{server.port}/{database}"


def _read_only_transactions(server: PostgresServer, database: str) -> str:
    """The writing role, its transactions read-only (as on a standby)."""
    options = "options=-c%20default_transaction_read_only%3Don"
    return f"{server.database_uri(database)}?{options}"


@pytest.mark.parametrize("reader", [_reader, _read_only_transactions])
def test_a_role_that_may_only_read_gets_the_figures_and_keeps_nothing(
    server: PostgresServer, tmp_path: Path, reader: object
) -> None:
    database = f"ro_{uuid.uuid4().hex[:12]}"
    server.create_database(database)
    dsn = server.database_uri(database)
    drive(dsn, tmp_path / "pg")
    store = store_for(dsn)
    store.tally(dsn)  # a writer kept the counts; then more happened, noted behind
    running = next(s for s in store.list(dsn) if s.status == "running")
    refused(lambda: Runtime().submit(running.uri, "sideways"), "invalid_value")
    Runtime().think(running.uri, "a step the reader counts in memory")
    ended = next(s for s in store.list(dsn) if s.status != "running")
    Runtime().reset(ended.uri)
    assert callable(reader)
    read_only = str(reader(server, database))

    with server.connect(database) as conn:
        noted = sorted(name for (name,) in conn.execute("SELECT name FROM tether_stale"))
        kept = conn.execute("SELECT count(*), sum(revision) FROM tether_figures").fetchone()
    assert noted == sorted([running.name, ended.name])

    done = subprocess.run(
        [TETHER, "stats", read_only, "--json"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout)
    recounted = tally_of(count_each(store, dsn))
    assert store_for(read_only).tally(read_only) == recounted
    for since in ("2026-03-02T10:20:00.000Z", "2026-03-03"):
        assert store_for(read_only).tally(read_only, since=since) == tally_of(
            count_each(store, dsn), since=since
        )
    for tree in recounted["trees"]:
        for key, measure, page in itertools.product(
            tree["actions"], MARKS, (slice(0, 2), slice(1, 50))
        ):
            asked = (tree["name"], tree["hash"], key, measure, page)
            assert store_for(read_only).behind(read_only, *asked) == behind_of(
                marked(count_each(store, dsn)), *asked
            )
    with pytest.raises(TetherError, match="refused a statement"):  # it may not write
        Runtime().think(f"{read_only}#{running.name}", "a step the reader may not take")
    with server.connect(database) as conn:  # nothing kept by the reader
        assert sorted(name for (name,) in conn.execute("SELECT name FROM tether_stale")) == noted
        assert conn.execute("SELECT count(*), sum(revision) FROM tether_figures").fetchone() == kept

    written = stats.collect(dsn)  # a writer catches the counts up: the same figures
    assert {**figures, "place": None} == {**written, "place": None}
