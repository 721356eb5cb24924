"""The `postgresql://` store: executions in a PostgreSQL database, for fleets of runtime replicas.

Owns the URI form, the schema and its version, the connection pools, and the translation of
database failures into `TetherError`s. An execution is addressed as
`postgresql://[user[:password]@]host[:port]/database[?param=value&...]#name`: everything before `#`
(the DSN) selects the database and the process-wide connection pool for it; the fragment names
the execution inside that database. The canonical spelling drops the password (give it with
`PGPASSWORD` or a `.pgpass` file; a password written in a URI is used for that DSN's pool for the
life of the process) and sorts the query parameters.

Ten tables hold the data, created on first use under an advisory lock, with their version in
`tether_schema` (a database written by a newer Tether is refused; one of version 1 gains the
refusal log when first used, one of version 1 or 2 the summaries, filled from its executions'
rows in that same transaction; one of version 3 or 4 gains the kept counts and sums, filled when
first read; one of version 5 the notes and ranked marks, below, in its first open):

- `tether_executions` — one row per execution: the state (as JSON text, key order kept), the
  embedded tree, the revision and which trace epoch is current and how long it is;
- `tether_trace` — one row per trace entry, keyed by (name, epoch, idx). The current epoch is only
  ever appended to; a trace reset starts a new epoch and drops the older ones in the same
  transaction.
- `tether_refusals` — each execution's refusal log (`Transaction.refuse`): one row per answer
  the engine refused or tool call a policy denied, beside the trace, which it never changes.
- `tether_summaries` — one row per execution, what a listing shows of it (tree, tree hash and
  version, status, phase, open step, revision, trace length, created and updated): written by
  the database from the execution's row (`_SUMMARIZE`) in the transaction of every create, commit
  and tree swap, so it is never behind the state.
- `tether_pulse` — the executions created and the commits, counted in 64 rows (by a hash of
  the name), moved in the transaction of each create, commit and tree swap: what `fingerprint`
  reads, in constant time;
- `tether_stale` — the executions whose kept count is behind, each with a count of the changes
  since: noted (`_NOTE`) in the transaction of every create, commit, tree swap and refusal, so
  no kill leaves a change unnoted.
- `tether_figures` — each execution's count (`tether.store.tally.record_of`) with the revision
  and the number of refusals it was made at, its tree hash and day created, its marks
  (`tether.store.tally.marks_of`), and whether it is added to the sums (none: it could not be
  counted);
- `tether_marked` — each figure (tree hash, tree, action key, measure) numbered once;
- `tether_marks` — each execution's value of each figure where it is not 0 (the figure's
  number, the value, the name), indexed so that a page of the executions behind one figure is
  an index range scan and their number an index-only count;
- `tether_sums` — the counts of every execution that could be counted, running or ended, added
  up per tree hash and day created (`tether.store.tally.Sums`).

A reader writes the counts, marks and sums (a step writes two more rows, its note and pulse):
`tally` and `behind` first count again, from their traces, the executions noted in
`tether_stale`, in batches, each in one transaction that locks their rows (in name order, so
readers racing for one execution count it once), takes away what a count added to the sums
before, keeps the new count and its marks and adds it to its cell (cells locked in key order),
and drops each note unless a change came since it was read (the commit's note is a row write,
so the reader's delete waits for a commit in flight and then sees its change). `tally` then
reads the cells, and the counts of the executions created on the day a `--since` within a day
falls in: its cost grows with the days and trees and with what changed since the last reader,
not with the executions. A role that may not write (a read-only transaction, or no privilege
to: psycopg's errors) counts what is noted in memory for that one answer and keeps nothing. A
store of schema version 4 drops its counts, kept in another form, and counts again when first
read; one of version 5 notes what its counts are behind on by comparing revisions and refusals
once (`_BEHIND`), and ranks the marks it kept.

`list(DSN)` — a URI without `#name` — lists every execution in the database and `page(DSN, ...)`
one page of them, filtered by tree and status, with their number and the trees: both read the
summaries alone (indexed by tree, status and name), never a state.

A verb's `transaction` is one database transaction that begins with `SELECT ... FOR UPDATE` on the
execution's row, so concurrent verbs on one execution — from threads, processes or replicas on
other machines — are serialised as the file store's lock serialises them, and the whole step is
committed at once or not at all. Connections are checked when taken from the pool, so the pool
recovers by itself after the database restarts. The pool's size and its wait for a connection
come from `TETHER_PG_POOL_MAX` (default 10) and `TETHER_PG_TIMEOUT` (seconds, default 5).

It does not interpret the state (the engine and verbs do). psycopg is imported only here, and
this module only when a `postgresql://` or `postgres://` URI is used.
"""

from __future__ import annotations

import atexit
import builtins
import json
import logging
import math
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, NamedTuple
from urllib.parse import quote, unquote, urlsplit

import psycopg
from psycopg_pool import ConnectionPool, PoolTimeout

from tether.errors import TetherError
from tether.locking import may_wait
from tether.store.base import Summary
from tether.store.shared import REFUSAL_LOG_BYTES, encode

TYPE_CHECKING = False
if TYPE_CHECKING:
    from tether.store.tally import Behind, Counted, Sums

SCHEMA_VERSION = 6
_SCHEMES = ("postgresql", "postgres")
_POOL_MAX = int(os.environ.get("TETHER_PG_POOL_MAX", "10"))
_TIMEOUT = float(os.environ.get("TETHER_PG_TIMEOUT", "5"))
# After this long without a successful reconnection the pool gives up one attempt; the next
# request starts a fresh one, so a database that comes back is used again within seconds.
_RECONNECT_TIMEOUT = 10.0
_SCHEMA_LOCK = 0x7465_7468_6572_0001  # pg_advisory_xact_lock key for creating the schema
_NAME_SAFE = "-._~!$&'()*+,;=:@/"

# The pool logs each failed reconnection; without a handler of the application's own, Python
# would print them on stderr, where the CLI writes its JSON error. They still reach any handler
# that an application installs (the MCP server's log, for one).
logging.getLogger("psycopg.pool").addHandler(logging.NullHandler())

_DDL = """
CREATE TABLE IF NOT EXISTS tether_schema (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    version integer NOT NULL,
    installed_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS tether_executions (
    name text PRIMARY KEY,
    state json NOT NULL,
    tree json NOT NULL,
    revision bigint NOT NULL,
    trace_epoch bigint NOT NULL,
    trace_entries bigint NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS tether_trace (
    name text NOT NULL,
    epoch bigint NOT NULL,
    idx bigint NOT NULL,
    entry json NOT NULL,
    PRIMARY KEY (name, epoch, idx)
);
CREATE TABLE IF NOT EXISTS tether_refusals (
    id bigserial PRIMARY KEY,
    name text NOT NULL,
    entry json NOT NULL
);
CREATE INDEX IF NOT EXISTS tether_refusals_name ON tether_refusals (name, id);
CREATE TABLE IF NOT EXISTS tether_summaries (
    name text PRIMARY KEY,
    tree text,
    tree_hash text,
    version text,
    status text,
    phase text,
    open_step json,
    revision bigint NOT NULL,
    entries bigint NOT NULL,
    created_at text,
    updated_at text
);
CREATE INDEX IF NOT EXISTS tether_summaries_listed
    ON tether_summaries (tree, status, name COLLATE "C");
CREATE TABLE IF NOT EXISTS tether_figures (
    name text PRIMARY KEY,
    revision bigint NOT NULL,
    refusals bigint NOT NULL,
    tree_hash text,
    day text,
    added boolean NOT NULL DEFAULT false,
    record json,
    marks jsonb
);
CREATE INDEX IF NOT EXISTS tether_figures_others ON tether_figures (name) WHERE NOT added;
CREATE INDEX IF NOT EXISTS tether_figures_days ON tether_figures (day) WHERE added;
CREATE TABLE IF NOT EXISTS tether_sums (
    tree_hash text NOT NULL,
    day text NOT NULL,
    record json NOT NULL,
    PRIMARY KEY (tree_hash, day)
);
CREATE TABLE IF NOT EXISTS tether_stale (
    name text PRIMARY KEY,
    changes bigint NOT NULL
);
CREATE TABLE IF NOT EXISTS tether_pulse (
    shard integer PRIMARY KEY,
    created bigint NOT NULL,
    changes bigint NOT NULL
);
CREATE TABLE IF NOT EXISTS tether_marked (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tree_hash text NOT NULL,
    tree text NOT NULL,
    key text NOT NULL,
    measure text NOT NULL,
    UNIQUE (tree_hash, tree, key, measure)
);
CREATE TABLE IF NOT EXISTS tether_marks (
    figure bigint NOT NULL,
    value float8 NOT NULL,
    name text NOT NULL
);
CREATE INDEX IF NOT EXISTS tether_marks_name ON tether_marks (name);
CREATE INDEX IF NOT EXISTS tether_marks_ranked
    ON tether_marks (figure, value DESC, name COLLATE "C");
"""

# One execution's summary (what a listing shows), read from its committed row by the database:
# written in the transaction of every create, commit and tree swap (`_SUMMARIZE` with the name),
# and for every execution at once when a store of schema version 2 is first opened.
_SUMMARY_OF = """
SELECT x.name, x.state->>'tree_name', x.state->>'tree_hash', x.tree->>'version',
       x.state->>'status', x.state->>'phase',
       CASE WHEN x.state->>'status' = 'running' AND json_typeof(x.state->'open'->0) = 'object'
            THEN json_build_object('name', x.state->'open'->0->>'name',
                                   'type', x.state->'open'->0->>'type') END,
       x.revision, x.trace_entries, x.state->>'created_at', x.state->>'updated_at'
FROM tether_executions x
"""
_SUMMARIZE = f"""
INSERT INTO tether_summaries
    (name, tree, tree_hash, version, status, phase, open_step, revision, entries, created_at,
     updated_at)
{_SUMMARY_OF} WHERE %(name)s::text IS NULL OR x.name = %(name)s::text
ON CONFLICT (name) DO UPDATE SET
    tree = EXCLUDED.tree, tree_hash = EXCLUDED.tree_hash, version = EXCLUDED.version,
    status = EXCLUDED.status, phase = EXCLUDED.phase, open_step = EXCLUDED.open_step,
    revision = EXCLUDED.revision, entries = EXCLUDED.entries,
    created_at = EXCLUDED.created_at, updated_at = EXCLUDED.updated_at
"""
# An execution's kept count is behind it: noted in the transaction of every create, commit, tree
# swap and refusal, as one more change (a row write, so a reader's `_CAUGHT` waits for a change
# in flight and then sees it).
_NOTE = """
INSERT INTO tether_stale (name, changes) VALUES (%(name)s::text, 1)
ON CONFLICT (name) DO UPDATE SET changes = tether_stale.changes + 1
"""
# What a viewer polls to learn that the listing changed (`fingerprint`), read in constant time:
# executions created and commits, counted in 64 rows (an execution's by a hash of its name, so
# commits on different executions seldom wait for one row), moved in the commit's transaction.
_SHARDS = 64
_PULSE = f"""
UPDATE tether_pulse SET created = created + %(created)s::bigint, changes = changes + 1
WHERE shard = hashtext(%(name)s::text) & {_SHARDS - 1}
"""
_PULSES = f"""
INSERT INTO tether_pulse (shard, created, changes)
SELECT g, coalesce(s.n, 0), coalesce(s.r, 0)
FROM generate_series(0, {_SHARDS - 1}) AS g
LEFT JOIN (SELECT hashtext(name) & {_SHARDS - 1} AS shard, count(*) AS n, sum(revision) AS r
           FROM tether_summaries GROUP BY 1) s ON s.shard = g
ON CONFLICT (shard) DO UPDATE SET created = EXCLUDED.created, changes = EXCLUDED.changes
"""
# The summary of a created (`created` 1) or changed execution, the note that its count is
# behind, and the pulse.
_CHANGED = f"WITH noted AS ({_NOTE}), pulsed AS ({_PULSE}) {_SUMMARIZE}"

_COMMIT = """
WITH dropped AS (
    DELETE FROM tether_trace
    WHERE %(reset)s AND name = %(name)s AND epoch < %(epoch)s::bigint
), appended AS (
    INSERT INTO tether_trace (name, epoch, idx, entry)
    SELECT %(name)s, %(epoch)s::bigint, %(start)s::bigint + e.ord - 1, e.entry::json
    FROM unnest(%(entries)s::text[]) WITH ORDINALITY AS e(entry, ord)
)
UPDATE tether_executions
SET state = %(state)s::json, revision = %(revision)s::bigint, trace_epoch = %(epoch)s::bigint,
    trace_entries = %(length)s::bigint, updated_at = now()
WHERE name = %(name)s
"""

# One statement, so one snapshot: the state and the entries of the same commit.
_READ_EXECUTION = """
SELECT x.state::text,
       (SELECT json_agg(t.entry ORDER BY t.idx)::text FROM tether_trace t
        WHERE t.name = x.name AND t.epoch = x.trace_epoch AND t.idx < x.trace_entries)
FROM tether_executions x
WHERE x.name = %s
"""

# The trace's entries from seq %(since)s on: a trace's entries are numbered one after another,
# so the entry with seq S sits at idx S - (the state's seq - its entries); `read_tail` checks it.
_READ_TAIL = """
SELECT x.state::text,
       (SELECT json_agg(t.entry ORDER BY t.idx)::text FROM tether_trace t
        WHERE t.name = x.name AND t.epoch = x.trace_epoch AND t.idx < x.trace_entries
          AND t.idx >= x.trace_entries - ((x.state->>'seq')::bigint - %(since)s))
FROM tether_executions x
WHERE x.name = %(name)s
"""

_READ_TRACE = """
SELECT x.trace_entries, t.entry::text
FROM tether_executions x
LEFT JOIN tether_trace t
    ON t.name = x.name AND t.epoch = x.trace_epoch AND t.idx < x.trace_entries
WHERE x.name = %s
ORDER BY t.idx
"""


# What a listing reads of each execution: its kept summary (`_SUMMARIZE`), never the state.
_LIST = """
SELECT name, revision, tree, status, phase, open_step::text, updated_at
FROM tether_summaries
WHERE (%(status)s::text IS NULL OR status = %(status)s::text)
  AND (%(tree)s::text IS NULL OR tree = %(tree)s::text)
ORDER BY name COLLATE "C"
LIMIT %(limit)s OFFSET %(offset)s
"""
_COUNT = """
SELECT count(*) FILTER (WHERE (%(status)s::text IS NULL OR status = %(status)s::text)
                          AND (%(tree)s::text IS NULL OR tree = %(tree)s::text)),
       (SELECT json_agg(t ORDER BY t COLLATE "C")::text
        FROM (SELECT DISTINCT tree AS t FROM tether_summaries WHERE tree IS NOT NULL) d)
FROM tether_summaries
"""


@dataclass(frozen=True)
class Target:
    """A `postgresql://` URI taken apart: the canonical DSN (no password), the password it
    carried, if any, and the execution's name."""

    dsn: str
    password: str | None
    name: str

    @property
    def uri(self) -> str:
        return f"{self.dsn}#{quote(self.name, safe=_NAME_SAFE)}"


@lru_cache(maxsize=1024)
def _split(uri: str) -> Target:
    """A `postgresql://` (or `postgres://`) URI taken apart, its name empty when it has none;
    refuses one that libpq cannot read. A password, in the user part or as a `password`
    parameter, is set apart."""
    parts = urlsplit(uri)
    if parts.scheme.lower() not in _SCHEMES:
        raise TetherError("invalid_value", "not a postgresql:// URI", scheme=parts.scheme)
    userinfo, at, hosts = parts.netloc.rpartition("@")
    user, colon, secret = userinfo.partition(":")
    password = unquote(secret) if colon else None
    params = []
    for param in sorted(p for p in parts.query.split("&") if p):
        key, _, value = param.partition("=")
        if key == "password":
            password = unquote(value)
        else:
            params.append(param)
    dsn = f"postgresql://{user + '@' if at else ''}{hosts}{parts.path}"
    dsn += f"?{'&'.join(params)}" if params else ""
    try:
        psycopg.conninfo.conninfo_to_dict(dsn)
    except psycopg.ProgrammingError as exc:
        raise TetherError(
            "invalid_value", f"{dsn} is not a valid PostgreSQL URI: {_first_line(exc)}", uri=dsn
        ) from None
    return Target(dsn, password, unquote(parts.fragment))


def parse(uri: str) -> Target:
    """Split a URI that names an execution; refuse one that names none."""
    target = _split(uri)
    if not target.name:
        raise TetherError(
            "invalid_value",
            f"{target.dsn} names no execution: add one after '#', e.g. {target.dsn}#run-1",
            uri=target.dsn,
        )
    if "\x00" in target.name:
        raise TetherError(
            "invalid_value", "an execution's name cannot hold a NUL character", uri=target.dsn
        )
    return target


def database(uri: str) -> Target:
    """Split a URI that names a database (its name empty); refuse one that names an execution,
    which is not a place that holds executions."""
    target = _split(uri)
    if target.name:
        raise TetherError(
            "invalid_value",
            f"{target.uri} names one execution, not a database: give the database, {target.dsn}",
            uri=target.uri,
        )
    return target


# -- connections ---------------------------------------------------------------------------------

_pools: dict[str, ConnectionPool] = {}
_passwords: dict[str, str] = {}  # DSN -> the password a URI gave for it in this process
_ready: set[str] = set()
_pools_lock = threading.Lock()


def _pool(target: Target) -> ConnectionPool:
    """The process-wide pool for the target's DSN, opened on first use."""
    pool = _pools.get(target.dsn)
    if pool is not None:
        return pool
    with _pools_lock:
        pool = _pools.get(target.dsn)
        if pool is None:
            pool = ConnectionPool(
                target.dsn,
                kwargs=_connect_options(target),
                min_size=1,
                max_size=max(1, _POOL_MAX),
                open=False,
                check=ConnectionPool.check_connection,
                timeout=_TIMEOUT,
                reconnect_timeout=_RECONNECT_TIMEOUT,
                name=target.dsn,
            )
            pool.open(wait=False)
            _pools[target.dsn] = pool
    return pool


def _connect_options(target: Target) -> dict[str, Any]:
    options: dict[str, Any] = {"autocommit": True}
    password = target.password if target.password is not None else _passwords.get(target.dsn)
    if password is not None:
        options["password"] = password
    if "connect_timeout" not in psycopg.conninfo.conninfo_to_dict(target.dsn):
        options["connect_timeout"] = max(2, math.ceil(_TIMEOUT))
    return options


@atexit.register
def _close_pools() -> None:
    with _pools_lock:
        for pool in _pools.values():
            pool.close(timeout=1.0)
        _pools.clear()
        _ready.clear()


@contextmanager
def _connection(target: Target) -> Iterator[psycopg.Connection[Any]]:
    """A checked connection from the pool (schema ensured), with database failures turned into
    `store_unavailable` errors. A transaction left open by a failure is rolled back. Under
    `tether.locking.without_waiting` it raises `WouldWait`: a database is waited on."""
    may_wait()
    try:
        with _pool(target).connection() as conn:
            if target.dsn not in _ready:
                _ensure_schema(conn, target.dsn)
                _ready.add(target.dsn)
            yield conn
    except PoolTimeout:
        raise _unreachable(target) from None
    except (psycopg.OperationalError, psycopg.InterfaceError) as exc:
        raise TetherError(
            "store_unavailable",
            f"the PostgreSQL database at {target.dsn} failed during the call "
            f"({_first_line(exc)}); nothing half-written is stored: retry, or call next to see "
            "where the execution stands",
            uri=target.dsn,
        ) from None
    except psycopg.Error as exc:
        raise TetherError(
            "internal",
            f"the PostgreSQL database at {target.dsn} refused a statement: {_first_line(exc)}",
            uri=target.dsn,
        ) from None


def _unreachable(target: Target) -> TetherError:
    """The error for a pool that gave no connection in time, with the database's own reason
    when a direct connection attempt shows one."""
    try:
        with psycopg.connect(target.dsn, **_connect_options(target)):
            reason = f"all {_POOL_MAX} pooled connections stayed busy for {_TIMEOUT:g} s"
    except psycopg.Error as exc:
        reason = _first_line(exc)
    return TetherError(
        "store_unavailable",
        f"cannot reach the PostgreSQL database at {target.dsn}: {reason}",
        uri=target.dsn,
    )


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _stored_version(conn: psycopg.Connection[Any]) -> int | None:
    if conn.execute("SELECT to_regclass('tether_schema')").fetchone() == (None,):
        return None
    row = conn.execute("SELECT version FROM tether_schema").fetchone()
    return None if row is None else int(row[0])


def _upgrade(conn: psycopg.Connection[Any], stored: int | None) -> None:
    """Bring a database of schema version `stored` (None: new) to this one, in the caller's
    transaction, which holds the schema lock."""
    if stored is not None and stored < 5:
        conn.execute("DROP TABLE IF EXISTS tether_figures")  # counts of another form
    conn.execute(_DDL)
    conn.execute(_SUMMARIZE, {"name": None})  # an older store: its summaries, once
    conn.execute(_NOTED)  # and what its kept counts are behind on (all: none kept)
    conn.execute(_PULSES)
    if stored is not None:
        from tether.store.tally import MARKS

        for statement in _MARKED:  # schema 5's marks, ranked
            conn.execute(statement, {"measures": list(MARKS)})


def _ensure_schema(conn: psycopg.Connection[Any], dsn: str) -> None:
    """Create the tables if they are missing; refuse a schema newer than this module knows."""
    try:
        row = conn.execute("SELECT version FROM tether_schema").fetchone()
    except psycopg.errors.UndefinedTable:
        row = None
    if row is None or int(row[0]) < SCHEMA_VERSION:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
            stored = _stored_version(conn)  # another process may have brought it up meanwhile
            if stored is None or stored < SCHEMA_VERSION:
                _upgrade(conn, stored)
            row = conn.execute(
                "INSERT INTO tether_schema (version) VALUES (%s) ON CONFLICT (singleton)"
                " DO UPDATE SET version = GREATEST(tether_schema.version, EXCLUDED.version)"
                " RETURNING version",
                (SCHEMA_VERSION,),
            ).fetchone()
            assert row is not None  # RETURNING gives the row
    if int(row[0]) > SCHEMA_VERSION:
        raise TetherError(
            "internal",
            f"the database at {dsn} holds Tether schema version {row[0]}, newer than this "
            f"Tether's {SCHEMA_VERSION}: upgrade Tether to use it",
            uri=dsn,
        )


def _not_found(target: Target) -> TetherError:
    return TetherError("not_found", f"no execution at {target.uri}", uri=target.uri)


# -- the store -----------------------------------------------------------------------------------


class PostgresStore:
    """Executions in PostgreSQL databases (see the module docstring)."""

    scheme = "postgresql"

    def canonical(self, uri: str) -> str:
        """The URI without its password, which is kept for the DSN's pool (callers go on with
        the canonical spelling)."""
        target = parse(uri)
        self._remember(target)
        return target.uri

    def exists(self, uri: str) -> bool:
        target = parse(uri)
        with _connection(target) as conn:
            sql = "SELECT 1 FROM tether_executions WHERE name = %s"
            return conn.execute(sql, (target.name,)).fetchone() is not None

    def create(
        self,
        uri: str,
        state: dict[str, Any],
        tree: dict[str, Any],
        entries: builtins.list[dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        target = parse(uri)
        lines = [encode(e) for e in entries or []]
        stored = dict(state, trace={"epoch": 0, "entries": len(lines)})
        with _connection(target) as conn, conn.transaction():
            row = conn.execute(
                "INSERT INTO tether_executions"
                " (name, state, tree, revision, trace_epoch, trace_entries)"
                " VALUES (%s, %s::json, %s::json, %s, 0, %s)"
                " ON CONFLICT (name) DO NOTHING RETURNING 1",
                (target.name, encode(stored), encode(tree), int(stored["revision"]), len(lines)),
            ).fetchone()
            if row is not None:
                conn.execute("DELETE FROM tether_refusals WHERE name = %s", (target.name,))
                conn.execute(_CHANGED, {"name": target.name, "created": 1})
            if row is not None and lines:
                conn.execute(
                    "INSERT INTO tether_trace (name, epoch, idx, entry) SELECT %s, 0, e.ord - 1,"
                    " e.entry::json FROM unnest(%s::text[]) WITH ORDINALITY AS e(entry, ord)",
                    (target.name, lines),
                )
        if row is None:
            raise TetherError(
                "already_exists",
                f"an execution already exists at {target.uri}; resume it, reset it, or choose "
                "another",
                uri=target.uri,
            )
        return stored

    def load(self, uri: str) -> dict[str, Any]:
        return self._document(uri, "state")

    def load_tree(self, uri: str) -> dict[str, Any]:
        return self._document(uri, "tree")

    def _document(self, uri: str, column: str) -> dict[str, Any]:
        target = parse(uri)
        with _connection(target) as conn:
            row = conn.execute(
                f"SELECT {column}::text FROM tether_executions WHERE name = %s", (target.name,)
            ).fetchone()
        if row is None:
            raise _not_found(target)
        return dict(json.loads(row[0]))

    def read_execution(self, uri: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        target = parse(uri)
        with _connection(target) as conn:
            row = conn.execute(_READ_EXECUTION, (target.name,)).fetchone()
        if row is None:
            raise _not_found(target)
        state = dict(json.loads(row[0]))
        entries = json.loads(row[1]) if row[1] is not None else []
        if len(entries) != state["trace"]["entries"]:
            raise TetherError(
                "corrupt_execution",
                f"the trace of {target.uri} holds {len(entries)} of its "
                f"{state['trace']['entries']} committed entries",
                uri=target.uri,
            )
        return state, entries

    def read_tail(self, uri: str, since: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        target = parse(uri)
        with _connection(target) as conn:
            row = conn.execute(_READ_TAIL, {"name": target.name, "since": since}).fetchone()
        if row is None:
            raise _not_found(target)
        state = dict(json.loads(row[0]))
        tail = json.loads(row[1]) if row[1] is not None else []
        start = max(since, int(state["seq"]) - int(state["trace"]["entries"]))
        if len(tail) != max(0, int(state["seq"]) - start) or (tail and tail[0]["seq"] != start):
            # Entries not numbered one after another (or rows missing): read them all.
            state, entries = self.read_execution(uri)
            tail = [e for e in entries if e["seq"] >= since]
        return state, tail

    def read_trace(self, uri: str) -> Iterator[dict[str, Any]]:
        target = parse(uri)
        with _connection(target) as conn:
            rows = conn.execute(_READ_TRACE, (target.name,)).fetchall()
        if not rows:
            raise _not_found(target)
        entries = [json.loads(text) for _, text in rows if text is not None]
        if len(entries) != rows[0][0]:
            raise TetherError(
                "corrupt_execution",
                f"the trace of {target.uri} holds {len(entries)} of its {rows[0][0]} committed "
                "entries",
                uri=target.uri,
            )
        return iter(entries)

    def trace_length(self, state: dict[str, Any]) -> int:
        return int(state["trace"]["entries"])

    def revision(self, uri: str) -> int:
        target = parse(uri)
        with _connection(target) as conn:
            row = conn.execute(
                "SELECT revision FROM tether_executions WHERE name = %s", (target.name,)
            ).fetchone()
        if row is None:
            raise _not_found(target)
        return int(row[0])

    def list(self, where: str, *, status: str | None = None) -> builtins.list[Summary]:
        return self.page(where, status=status)[0]

    def page(
        self,
        where: str,
        *,
        status: str | None = None,
        tree: str | None = None,
        limit: int | None = None,
        offset: int = 0,
    ) -> tuple[builtins.list[Summary], int, builtins.list[str]]:
        target = self._database(where)
        asked = {"status": status, "tree": tree, "limit": limit, "offset": offset}
        with _connection(target) as conn:
            rows = conn.execute(_LIST, asked).fetchall()
            counted = conn.execute(_COUNT, asked).fetchone()
        assert counted is not None  # an aggregate gives one row
        out = []
        for name, revision, tree_name, state_status, phase, open_step, updated_at in rows:
            state = {
                "tree_name": tree_name,
                "status": state_status,
                "phase": phase,
                "open": [json.loads(open_step)] if open_step is not None else [],
                "revision": revision,
                "updated_at": updated_at,
            }
            out.append(Summary.of(Target(target.dsn, None, name).uri, name, state))
        return out, int(counted[0]), builtins.list(json.loads(counted[1] or "[]"))

    def fingerprint(self, where: str) -> tuple[int, object]:
        target = self._database(where)
        with _connection(target) as conn:
            row = conn.execute(
                "SELECT coalesce(sum(created), 0), coalesce(sum(changes), 0) FROM tether_pulse"
            ).fetchone()
        assert row is not None  # an aggregate gives one row
        return int(row[0]), int(row[1])

    def refusals(self, uri: str) -> builtins.list[dict[str, Any]]:
        target = parse(uri)
        with _connection(target) as conn:
            if not conn.execute(
                "SELECT 1 FROM tether_executions WHERE name = %s", (target.name,)
            ).fetchone():
                raise _not_found(target)
            rows = conn.execute(
                "SELECT entry::text FROM tether_refusals WHERE name = %s ORDER BY id",
                (target.name,),
            ).fetchall()
        return [json.loads(text) for (text,) in rows]

    def behind(
        self, where: str, tree: str, tree_hash: str, key: str, measure: str, page: slice
    ) -> tuple[int, builtins.list[Behind]]:
        from tether.store.tally import Behind, behind_of

        start, stop = page.start or 0, page.stop or 0
        asked: dict[str, Any] = {"tree": tree, "hash": tree_hash, "key": key, "measure": measure}
        with _connection(self._database(where)) as conn:
            _, unkept = _caught_up(conn)
            fresh = unkept.counts.values() if unkept else ()
            # Counted in memory: the kept rows from the first, less theirs, with the fresh ones.
            asked.update(without=[count.counted.name for count in fresh])
            asked.update(offset=0 if fresh else start, limit=stop if fresh else stop - start)
            found = conn.execute(_BEHIND_PAGE, asked).fetchall()
            counted = conn.execute(_BEHIND_COUNT, asked).fetchone()
        total = int((counted or (0,))[0])
        rows = [
            Behind.of(marks, measure, str(name), {"status": status, "updated_at": updated})
            for marks, name, status, updated in found
        ]
        if not fresh:
            return total, rows
        more, extra = behind_of(
            ((c.counted.name, c.counted.listed, c.counted.tree_hash, c.marks) for c in fresh),
            tree,
            tree_hash,
            key,
            measure,
            slice(0, stop),
        )
        rows = sorted([*rows, *extra], key=lambda row: (-row.value, row.name))
        return total + more, rows[start:stop]

    def tally(
        self, where: str, *, since: str | None = None, tree: str | None = None
    ) -> dict[str, Any]:
        from tether.store.tally import tally_of, whole_days

        first = whole_days(since)
        split = since[:10] if since and first != since[:10] else None
        with _connection(self._database(where)) as conn:
            trees, unkept = _caught_up(conn)
            cells = conn.execute(_CELLS, (first,)).fetchall()
            rows = conn.execute(_COUNTS + " WHERE NOT f.added OR f.day = %s", (split,)).fetchall()
            sums: Iterator[tuple[str, dict[str, Any], str, dict[str, Any]]] = (
                (str(h), trees[str(h)], str(day), json.loads(record)) for h, day, record in cells
            )
            counts = _counts(rows, trees)
            if unkept is not None:  # a role that may not write: counted again in memory
                sums, counts = unkept.sums(sums).each(), unkept.counted(counts, split)
            kept = [cell for cell in sums if cell[1]]
            return tally_of(counts, tree=tree, since=since, sums=kept)

    def locate(self, where: str, name: str) -> str:
        target = self._database(where)
        return self.canonical(Target(target.dsn, None, name).uri)

    def place(self, uri: str) -> tuple[str, str | None]:
        target = _split(uri)
        self._remember(target)
        return target.dsn, target.name or None

    def _database(self, where: str) -> Target:
        target = database(where)
        self._remember(target)
        return target

    @staticmethod
    def _remember(target: Target) -> None:
        """Keep a password the URI gave, for the DSN's pool (see `canonical`)."""
        if target.password is not None:
            _passwords[target.dsn] = target.password

    @contextmanager
    def transaction(self, uri: str) -> Iterator[_PostgresTransaction]:
        target = parse(uri)
        with _connection(target) as conn, conn.transaction():
            row = conn.execute(
                "SELECT state::text FROM tether_executions WHERE name = %s FOR UPDATE",
                (target.name,),
            ).fetchone()
            if row is None:
                raise _not_found(target)
            yield _PostgresTransaction(conn, target, dict(json.loads(row[0])))


class _PostgresTransaction:
    """One verb's hold on an execution row; its commit is written when the verb's block ends."""

    def __init__(
        self, conn: psycopg.Connection[Any], target: Target, state: dict[str, Any]
    ) -> None:
        self._conn = conn
        self._target = target
        self.state = state

    def tree(self) -> dict[str, Any]:
        row = self._conn.execute(
            "SELECT tree::text FROM tether_executions WHERE name = %s", (self._target.name,)
        ).fetchone()
        if row is None:
            raise _not_found(self._target)
        return dict(json.loads(row[0]))

    def commit(
        self, state: dict[str, Any], entries: list[dict[str, Any]], *, reset_trace: bool = False
    ) -> dict[str, Any]:
        trace = self.state["trace"]
        epoch = int(trace["epoch"]) + 1 if reset_trace else int(trace["epoch"])
        start = 0 if reset_trace else int(trace["entries"])
        revision = int(self.state["revision"]) + 1
        committed = dict(
            state, revision=revision, trace={"epoch": epoch, "entries": start + len(entries)}
        )
        self._conn.execute(
            _COMMIT,
            {
                "reset": reset_trace,
                "name": self._target.name,
                "epoch": epoch,
                "start": start,
                "entries": [encode(e) for e in entries],
                "state": encode(committed),
                "revision": revision,
                "length": start + len(entries),
            },
        )
        self._conn.execute(_CHANGED, {"name": self._target.name, "created": 0})
        self.state = committed
        return committed

    def refuse(self, record: dict[str, Any]) -> None:
        line = encode(record)
        self._conn.execute(
            f"WITH noted AS ({_NOTE})"
            " INSERT INTO tether_refusals (name, entry) SELECT %(name)s, %(entry)s::json"
            " WHERE (SELECT coalesce(sum(octet_length(entry::text)), 0) FROM tether_refusals"
            " WHERE name = %(name)s) + %(size)s <= %(cap)s",
            {
                "name": self._target.name,
                "entry": line,
                "size": len(line.encode()),
                "cap": REFUSAL_LOG_BYTES,
            },
        )

    def replace_tree(self, tree: dict[str, Any], state: dict[str, Any]) -> dict[str, Any]:
        revision = int(self.state["revision"]) + 1
        committed = dict(state, revision=revision, trace=self.state["trace"])
        self._conn.execute(
            "UPDATE tether_executions SET tree = %s::json, state = %s::json, revision = %s,"
            " updated_at = now() WHERE name = %s",
            (encode(tree), encode(committed), revision, self._target.name),
        )
        self._conn.execute(_CHANGED, {"name": self._target.name, "created": 0})
        self.state = committed
        return committed


# -- counting (tally) ----------------------------------------------------------------------------

# The kept counts (`tether_figures`), sums (`tether_sums`), notes of what they are behind on
# (`tether_stale`) and marks (`tether_marks`): see "Sums" above.
_LISTED_COLUMNS = ("tree_name", "tree_hash", "status", "created_at", "updated_at")
# What the counts of a store of schema version 5 or older are behind on, found by comparing
# revisions and refusals once, when it is first opened (`_NOTED`); later commits say it (`_NOTE`).
_BEHIND = """
SELECT s.name
FROM tether_summaries s
LEFT JOIN (SELECT name, count(*) AS n FROM tether_refusals GROUP BY name) r USING (name)
LEFT JOIN tether_figures f USING (name)
WHERE f.name IS NULL OR f.revision <> s.revision OR f.refusals <> coalesce(r.n, 0)
"""
_NOTED = f"""
INSERT INTO tether_stale (name, changes) SELECT name, 1 FROM ({_BEHIND}) b
ON CONFLICT (name) DO NOTHING
"""
# Schema 5's marks (one `jsonb` per execution) as ranked rows: each action's figure of each
# measure (`tether.store.tally.mark`, the same float8 arithmetic) where it is not 0.
_RANKED_FIGURES = """
SELECT * FROM (
    SELECT f.name, s.tree, f.tree_hash, m.key, ms.measure,
           coalesce(CASE ms.measure
               WHEN 'failures' THEN (m.v->>0)::float8 / nullif((m.v->>1)::float8, 0)
               WHEN 'retries' THEN (m.v->>2)::float8
               WHEN 'stops_refused' THEN (m.v->>3)::float8
               ELSE (m.v->>4)::float8 END, 0) AS value
    FROM tether_figures f JOIN tether_summaries s USING (name),
         jsonb_each(f.marks) AS m(key, v), unnest(%(measures)s::text[]) AS ms(measure)
    WHERE f.added AND s.tree IS NOT NULL
      AND NOT EXISTS (SELECT 1 FROM tether_marks k WHERE k.name = f.name)
) r
WHERE r.value <> 0
"""
_MARKED = (
    f"CREATE TEMPORARY TABLE tether_ranked ON COMMIT DROP AS {_RANKED_FIGURES}",
    """INSERT INTO tether_marked (tree_hash, tree, key, measure)
    SELECT DISTINCT tree_hash, tree, key, measure FROM tether_ranked ON CONFLICT DO NOTHING""",
    """INSERT INTO tether_marks (figure, value, name)
    SELECT f.id, r.value, r.name FROM tether_ranked r
    JOIN tether_marked f USING (tree_hash, tree, key, measure)""",
)
_STALE = 'SELECT name, changes FROM tether_stale ORDER BY name COLLATE "C"'
_COUNTS = """
SELECT s.name, f.tree_hash, f.record::text, s.tree, s.tree_hash, s.status, s.created_at,
       s.updated_at
FROM tether_summaries s JOIN tether_figures f USING (name)
"""
# A page of the executions behind one action's figure, from the ranked marks (an index range
# scan), less those counted again in memory (`without`); and how many there are (index only).
_RANKED = """
FROM tether_marks m
WHERE m.figure = (SELECT id FROM tether_marked WHERE tree_hash = %(hash)s AND tree = %(tree)s
                                                AND key = %(key)s AND measure = %(measure)s)
  AND m.name <> ALL(%(without)s::text[])
"""
_BEHIND_PAGE = f"""
SELECT f.marks->%(key)s, p.name, s.status, s.updated_at
FROM (SELECT m.name, m.value {_RANKED} ORDER BY m.value DESC, m.name COLLATE "C"
      LIMIT %(limit)s OFFSET %(offset)s) p
JOIN tether_figures f USING (name) JOIN tether_summaries s USING (name)
ORDER BY p.value DESC, p.name COLLATE "C"
"""
_BEHIND_COUNT = f"SELECT count(*) {_RANKED}"
_CELLS = "SELECT tree_hash, day, record::text FROM tether_sums WHERE day >= coalesce(%s, '')"
_TREE = """
SELECT x.tree::text FROM tether_summaries s JOIN tether_executions x USING (name)
WHERE s.tree_hash = %s LIMIT 1
"""
_AGAIN = """
SELECT x.name, x.revision, x.state::text,
       (SELECT json_agg(t.entry ORDER BY t.idx)::text FROM tether_trace t
        WHERE t.name = x.name AND t.epoch = x.trace_epoch AND t.idx < x.trace_entries),
       (SELECT json_agg(r.entry ORDER BY r.id)::text FROM tether_refusals r WHERE r.name = x.name),
       s.tree, s.tree_hash, s.status, s.created_at, s.updated_at
FROM tether_executions x LEFT JOIN tether_summaries s USING (name)
WHERE x.name = ANY(%s::text[])
"""
_PLACE = """
INSERT INTO tether_figures (name, revision, refusals)
SELECT unnest(%s::text[]), -1, -1
ON CONFLICT (name) DO NOTHING
"""
_HELD = """
SELECT name, added, tree_hash, day, record::text FROM tether_figures
WHERE name = ANY(%s::text[]) ORDER BY name COLLATE "C"
"""
_KEEP = """
UPDATE tether_figures f
SET revision = k.revision, refusals = k.refusals, tree_hash = k.tree_hash, day = k.day,
    added = k.added, record = k.record::json, marks = k.marks::jsonb
FROM unnest(%s::text[], %s::bigint[], %s::bigint[], %s::text[], %s::text[], %s::boolean[],
            %s::text[], %s::text[]) AS k(name, revision, refusals, tree_hash, day, added, record,
                                         marks)
WHERE f.name = k.name
"""
_UNMARK = "DELETE FROM tether_marks WHERE name = ANY(%s::text[])"
# A figure (tree hash, tree, action, measure) is numbered once, so a mark row holds its number.
_FIGURES = """
INSERT INTO tether_marked (tree_hash, tree, key, measure)
SELECT DISTINCT * FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[]) AS n(h, t, a, m)
WHERE NOT EXISTS (SELECT 1 FROM tether_marked f
                  WHERE (f.tree_hash, f.tree, f.key, f.measure) = (n.h, n.t, n.a, n.m))
ON CONFLICT DO NOTHING
"""
_MARK = """
INSERT INTO tether_marks (figure, value, name)
SELECT f.id, k.value, k.name
FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[], %s::text[], %s::float8[])
     AS k(name, tree, tree_hash, key, measure, value)
JOIN tether_marked f USING (tree_hash, tree, key, measure)
"""
# The notes of the executions counted again, unless a change came since they were read.
_CAUGHT = """
DELETE FROM tether_stale s USING unnest(%s::text[], %s::bigint[]) AS k(name, changes)
WHERE s.name = k.name AND s.changes = k.changes
"""
_HOLD_CELLS = """
SELECT tree_hash, day, record::text FROM tether_sums
WHERE (tree_hash, day) IN (SELECT * FROM unnest(%s::text[], %s::text[]))
ORDER BY tree_hash, day FOR UPDATE
"""
_KEEP_CELLS = """
INSERT INTO tether_sums (tree_hash, day, record)
SELECT * FROM unnest(%s::text[], %s::text[], %s::json[])
ON CONFLICT (tree_hash, day) DO UPDATE SET record = EXCLUDED.record
"""
_BATCH = 500  # executions counted again per query
# What a role that may not write meets when a reader would keep counts: it counts in memory.
_CANNOT_WRITE = (psycopg.errors.ReadOnlySqlTransaction, psycopg.errors.InsufficientPrivilege)


class _Trees(dict[str, dict[str, Any]]):
    """Trees by hash, each read from one of its executions when first asked for ({}: none)."""

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        super().__init__()
        self.conn = conn

    def __missing__(self, tree_hash: str) -> dict[str, Any]:
        row = self.conn.execute(_TREE, (tree_hash,)).fetchone()
        self[tree_hash] = tree = {} if row is None else dict(json.loads(row[0]))
        return tree


class _Count(NamedTuple):
    """One execution counted again: what `tether_figures` keeps of it (revision, refusals, tree
    hash, day created, whether it is added to the sums, its count and marks as JSON), and as
    `tally_of` and `behind` read it (`counted`, its `marks_of`)."""

    kept: tuple[Any, ...]
    counted: Counted
    marks: dict[str, builtins.list[float]]

    @property
    def added(self) -> bool:
        return bool(self.kept[4])

    def ranked(self) -> Iterator[tuple[Any, ...]]:
        """Its rows of `tether_marks`: each action's figure of each measure that is not 0."""
        from tether.store.tally import MARKS, Behind

        name, listed = self.counted.name, self.counted.listed
        for key, figures in self.marks.items():
            for measure in MARKS:
                value = Behind.of(figures, measure, name, listed).value
                if value and listed.get("tree_name") is not None:
                    yield name, listed["tree_name"], self.counted.tree_hash, key, measure, value


@dataclass
class _Unkept:
    """What a reader that may not write counted again in memory, for its answer alone: each
    execution's fresh count and what it changes in the sums."""

    counts: dict[str, _Count]
    delta: Sums

    def sums(self, cells: Iterator[tuple[str, dict[str, Any], str, dict[str, Any]]]) -> Sums:
        """The kept `cells` as they would be with the fresh counts moved into them."""
        from tether.store.tally import Sums

        out = Sums()
        for tree_hash, tree, day, record in cells:
            out.add(tree_hash, tree, day, record)
        for tree_hash, tree, day, record in self.delta.each():
            out.add(tree_hash, tree, day, record)
        return out

    def counted(self, kept: Iterator[Counted], split: str | None) -> Iterator[Counted]:
        """The `kept` counts `tally` reads one by one, the fresh ones in place of theirs."""
        yield from (counted for counted in kept if counted.name not in self.counts)
        for count in self.counts.values():
            if not count.added or count.kept[3] == split:
                yield count.counted


def _caught_up(conn: psycopg.Connection[Any]) -> tuple[_Trees, _Unkept | None]:
    """Count again every execution noted behind (`_count_again`): the trees by hash, as far
    as read, and, for a role that may not write, what it counted in memory instead."""
    from tether.store.tally import Sums

    trees = _Trees(conn)
    stale = {str(name): int(changes) for name, changes in conn.execute(_STALE)}
    names = builtins.list(stale)
    unkept: _Unkept | None = None
    for start in range(0, len(names), _BATCH):
        batch = names[start : start + _BATCH]
        counts = _count_again(conn, batch, trees)
        if unkept is None:
            try:
                _keep(conn, counts, {name: stale[name] for name in batch}, trees)
                continue
            except _CANNOT_WRITE:
                unkept = _Unkept({}, Sums())
        held = conn.execute(_HELD, (builtins.list(counts),)).fetchall()
        _moved(unkept.delta, held, counts, trees)
        unkept.counts.update(counts)
    return trees, unkept


def _counts(rows: builtins.list[Any], trees: _Trees) -> Iterator[Counted]:
    """Each row of `_COUNTS` as a `Counted` (an execution that cannot be counted: no record)."""
    from tether.store.tally import Counted

    for name, tree_hash, record, *summary in rows:
        listed = dict(zip(_LISTED_COLUMNS, summary, strict=True))
        tree = trees[str(tree_hash)] if record is not None else {}
        if not tree:
            yield Counted(str(name), listed, "", {}, None)
        else:
            yield Counted(str(name), listed, str(tree_hash), tree, json.loads(record))


def _count_again(
    conn: psycopg.Connection[Any], names: builtins.list[str], trees: _Trees
) -> dict[str, _Count]:
    """The executions `names` counted from their traces (`tether.store.tally.record_of`), with
    the revision and number of refusals each was counted at; one that cannot be counted has
    no count."""
    from tether.store.tally import Counted, marks_of, record_of

    out: dict[str, _Count] = {}
    for name, revision, state_text, entries_text, refusals_text, *summary in conn.execute(
        _AGAIN, (names,)
    ):
        listed = dict(zip(_LISTED_COLUMNS, summary, strict=True))
        refusals = json.loads(refusals_text or "[]")
        kept: tuple[Any, ...] = (revision, len(refusals), None, None, False, None, None)
        count = _Count(kept, Counted(str(name), listed, "", {}, None), {})
        try:
            state = json.loads(state_text)
            tree_hash = str(state["tree_hash"])
            record = record_of(state, trees[tree_hash], json.loads(entries_text or "[]"), refusals)
            day = str(state["created_at"])[:10]
            marks = marks_of(record)
            kept = (revision, len(refusals), tree_hash, day, True, encode(record), encode(marks))
            counted = Counted(str(name), listed, tree_hash, trees[tree_hash], record)
            count = _Count(kept, counted, marks)
        except (KeyError, TypeError, ValueError, TetherError):
            pass
        out[str(name)] = count
    return out


def _moved(delta: Sums, held: builtins.list[Any], counts: dict[str, _Count], trees: _Trees) -> None:
    """Into `delta`, what moving the fresh `counts` into the sums changes: the `held` counts
    (`_HELD`) that were added are taken away, the fresh ones added."""
    for _, added, tree_hash, day, record in held:
        if added:  # counted in the sums at its last count: taken away
            delta.add(tree_hash, trees[tree_hash], day, json.loads(record), -1)
    for count in counts.values():
        if count.added:
            _, _, tree_hash, day, _, record, _ = count.kept
            delta.add(tree_hash, trees[tree_hash], day, json.loads(record))


def _keep(
    conn: psycopg.Connection[Any], counts: dict[str, _Count], noted: dict[str, int], trees: _Trees
) -> None:
    """Keep each fresh count and its marks, and move it into the sums (taking away what it
    added before), in one transaction that locks its row, then its cells (in name and key
    order), and drops the `noted` notes (a name: its changes when read) of what was counted,
    or of an execution no longer there, unless another change came since."""
    from tether.store.tally import Sums

    names = builtins.list(counts)
    delta = Sums()
    with conn.transaction():
        conn.execute(_PLACE, (names,))
        _moved(delta, conn.execute(_HELD + " FOR UPDATE", (names,)).fetchall(), counts, trees)
        kept = [count.kept for count in counts.values()]
        conn.execute(_KEEP, [names, *([row[i] for row in kept] for i in range(7))])
        conn.execute(_UNMARK, (names,))
        ranked = [row for count in counts.values() for row in count.ranked()]
        conn.execute(_FIGURES, [[row[i] for row in ranked] for i in (2, 1, 3, 4)])
        conn.execute(_MARK, [[row[i] for row in ranked] for i in range(6)])
        if delta.cells:
            cells = sorted(delta.cells)
            held = conn.execute(_HOLD_CELLS, [[h for h, _ in cells], [d for _, d in cells]])
            for tree_hash, day, record in held.fetchall():
                delta.add(tree_hash, trees[tree_hash], day, json.loads(record))
            made = builtins.list(delta.each())
            conn.execute(
                _KEEP_CELLS,
                [[c[0] for c in made], [c[2] for c in made], [encode(c[3]) for c in made]],
            )
        conn.execute(_CAUGHT, (builtins.list(noted), builtins.list(noted.values())))
