"""A real, throwaway PostgreSQL server for the tests: initdb'd in a temporary folder, listening on
127.0.0.1 on a free port, stopped (and its folder removed) at the end.

Owns finding the server binaries (on PATH or in Debian's /usr/lib/postgresql/<version>/bin, put
there by `scripts/install-test-deps-postgres`), running them as the `postgres` user when the tests
run as root (initdb and postgres refuse root), and stopping or restarting the server on demand
for the outage tests. `shared_server()` is the one server of a test session that the conformance
suite and most PostgreSQL tests use; it is stopped when the session's process exits.

It also owns the fleet the replica tests and the benchmark drive: `tether mcp --http` replicas
started with `--store` naming the database, and agents that walk an execution over MCP
(Streamable HTTP), passing step tokens back and retrying what the store could not take. It does
not know Tether's schema (the store creates it).
"""

from __future__ import annotations

import atexit
import glob
import json
import os
import pwd
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import psycopg
from psycopg import sql

if TYPE_CHECKING:
    from mcp import Client

INSTALL_HINT = "run scripts/install-test-deps-postgres to install PostgreSQL"


def _binary(name: str) -> str:
    found = shutil.which(name)
    if found is not None:
        return found
    candidates = sorted(
        glob.glob(f"/usr/lib/postgresql/*/bin/{name}"),
        key=lambda p: int(Path(p).parts[-3]) if Path(p).parts[-3].isdigit() else 0,
    )
    if not candidates:
        raise RuntimeError(f"PostgreSQL's {name} is not installed: {INSTALL_HINT}")
    return candidates[-1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PostgresServer:
    """One PostgreSQL cluster in a temporary folder; `start`, `stop` and `restart` it at will.
    Unless `durable`, it runs with `fsync=off` (the tests lose nothing when the process stops
    cleanly, and run faster); the benchmark keeps PostgreSQL's durable defaults."""

    user = "tether"

    def __init__(self, *, durable: bool = False) -> None:
        self.durable = durable
        self.port = free_port()
        self._as_root = os.geteuid() == 0
        self.folder = tempfile.mkdtemp(prefix="tether-pg-")
        self.data = os.path.join(self.folder, "data")
        self.log = os.path.join(self.folder, "server.log")
        if self._as_root:
            owner = pwd.getpwnam("postgres")
            os.chown(self.folder, owner.pw_uid, owner.pw_gid)
        initdb = [_binary("initdb"), "-D", self.data, "-U", self.user, "-A", "trust"]
        self._run(*initdb, "-E", "UTF8", "--no-sync", "--no-instructions")
        self.running = False

    def database_uri(self, database: str = "postgres") -> str:
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/{database}"

    @property
    def dsn(self) -> str:
        """The URI of the default database, as `TETHER_STORE` takes it."""
        return self.database_uri()

    def uri(self, name: str, database: str = "postgres") -> str:
        """The URI of execution `name` in `database`."""
        return f"{self.database_uri(database)}#{name}"

    def connect(self, database: str = "postgres") -> psycopg.Connection[Any]:
        """A direct connection (autocommit) for a test to look at or prepare the database."""
        return psycopg.connect(
            host="127.0.0.1", port=self.port, user=self.user, dbname=database, autocommit=True
        )

    def create_database(self, name: str) -> None:
        with self.connect() as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))

    def add_password_user(self, name: str, password: str) -> None:
        """A login role that must give `password` over TCP (the other roles are trusted)."""
        with self.connect() as conn:
            conn.execute(
                sql.SQL("CREATE ROLE {} LOGIN SUPERUSER PASSWORD {}").format(
                    sql.Identifier(name), sql.Literal(password)
                )
            )
            hba = Path(self.data, "pg_hba.conf")
            line = f"host all {name} 127.0.0.1/32 scram-sha-256\n"
            hba.write_text(line + hba.read_text())
            conn.execute("SELECT pg_reload_conf()")
        conninfo = f"host=127.0.0.1 port={self.port} user={name} dbname=postgres"
        for _ in range(100):  # the server rereads the file shortly after the signal
            try:
                with psycopg.connect(conninfo):
                    pass
            except psycopg.OperationalError:
                return
            time.sleep(0.05)
        raise RuntimeError(f"the server did not start asking {name} for a password")

    def _run(self, *command: str, timeout: float = 60) -> None:
        prefix = ["runuser", "-u", "postgres", "--"] if self._as_root else []
        done = subprocess.run(
            [*prefix, *command], capture_output=True, text=True, timeout=timeout, check=False
        )
        if done.returncode != 0:
            log = Path(self.log).read_text() if os.path.exists(self.log) else ""
            raise RuntimeError(
                f"{' '.join(command)} failed ({done.returncode}):\n{done.stdout}{done.stderr}{log}"
            )

    def start(self) -> None:
        options = (
            f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.folder} -c max_connections=200"
        )
        if not self.durable:
            options += " -c fsync=off"
        self._run(_binary("pg_ctl"), "-D", self.data, "-l", self.log, "-o", options, "-w", "start")
        self.running = True

    def stop(self) -> None:
        self._run(_binary("pg_ctl"), "-D", self.data, "-m", "fast", "-w", "stop")
        self.running = False

    def restart(self) -> None:
        self.stop()
        self.start()

    def close(self) -> None:
        """Stop the server if it runs and remove its folder."""
        if self.running:
            self.stop()
        shutil.rmtree(self.folder, ignore_errors=True)


_shared: PostgresServer | None = None
_shared_lock = threading.Lock()


def shared_server() -> PostgresServer:
    """The session's server, started on first use and stopped when the process exits."""
    global _shared
    with _shared_lock:
        if _shared is None:
            server = PostgresServer()
            server.start()
            atexit.register(server.close)
            _shared = server
        return _shared


# -- a fleet of MCP replicas ---------------------------------------------------------------------


class Replica:
    """`tether mcp --http --store STORE` in a subprocess on a free loopback port (with no
    `TETHER_STORE` in its environment, so the option alone names the store); its stderr is kept
    in `log`."""

    def __init__(self, root: Path, store: str, env: dict[str, str] | None = None) -> None:
        command = [sys.executable, "-m", "tether.cli.main", "mcp", "--http", "--port", "0"]
        environment = {k: v for k, v in os.environ.items() if k != "TETHER_STORE"}
        self.process = subprocess.Popen(
            [*command, "--root", str(root), "--store", store],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env={**environment, **(env or {})},
        )
        self.log: list[str] = []
        self.url = self._await_url()
        self._drain = threading.Thread(target=self._read_log, daemon=True)
        self._drain.start()

    def _await_url(self) -> str:
        assert self.process.stderr is not None
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            line = self.process.stderr.readline()
            self.log.append(line)
            match = re.search(r"serving (http://\S+/mcp)", line)
            if match:
                return match.group(1)
            if not line and self.process.poll() is not None:
                break
        self.stop()
        raise RuntimeError("tether mcp --http did not report its URL:\n" + "".join(self.log))

    def _read_log(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.log.append(line)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)


@dataclass
class Walker:
    """One MCP client answering one execution until it is done, alongside others that answer
    the same execution: it passes each request's step token back, so of two answers to one step
    exactly one is taken and the other is refused as stale; an answer the store could not take
    (`store_unavailable`) is sent again, unchanged."""

    url: str
    trace: str
    label: str
    answered: list[str] = field(default_factory=list)  # notes of the answers that were taken
    stale: int = 0
    outages: int = 0
    calls: int = 0

    async def call(self, client: Client, tool: str, deadline: float, **args: Any) -> Any:
        """The tool's result, or its error document when another answer won the race (the step
        is stale, or the other answer finished the execution)."""
        while True:
            self.calls += 1
            result = await client.call_tool(tool, args)
            text = result.content[0].text  # type: ignore[union-attr]
            if not result.is_error:
                return json.loads(text)
            error = json.loads(text)["error"]
            if error["code"] in ("stale_step", "execution_finished"):
                return {"error": error}
            if error["code"] != "store_unavailable" or time.monotonic() > deadline:
                raise RuntimeError(f"{self.label}: {tool} failed: {error}")
            self.outages += 1
            await anyio.sleep(0.1)

    async def walk(self, deadline: float) -> None:
        from mcp import Client  # the MCP SDK only for the fleet, not for the conformance suite

        async with Client(self.url) as client:
            while time.monotonic() < deadline:
                request = await self.call(client, "next_step", deadline, trace_output=self.trace)
                if "status" in request:
                    return
                note = f"{self.label} answered {request['name']}"
                answer = await self.call(
                    client,
                    "submit",
                    deadline,
                    trace_output=self.trace,
                    status="success",
                    step=request["step"],
                    note=note,
                )
                if "error" in answer:
                    self.stale += 1
                else:
                    self.answered.append(note)
        raise RuntimeError(f"{self.label} did not finish {self.trace} in time")


def write_chain(folder: Path, steps: int) -> Path:
    """A tree file: a sequence of `steps` actions of one instruct step each."""
    children = [
        {"type": "action", "name": f"Step_{i}", "steps": [{"instruct": f"Do part {i}."}]}
        for i in range(steps)
    ]
    chain = {"type": "sequence", "name": "Chain", "children": children}
    path = folder / f"chain-{steps}.json"
    path.write_text(json.dumps({"name": "chain", "version": "1", "tree": chain}))
    return path


async def start_executions(url: str, tree: str, names: list[str]) -> None:
    """Start an execution of `tree` at each name, through the MCP server at `url`."""
    from mcp import Client

    async with Client(url) as client:
        for name in names:
            args = {"tree_uri": tree, "trace_output": name}
            result = await client.call_tool("start_execution", args)
            if result.is_error:
                raise RuntimeError(f"start_execution {name} failed: {result.content}")


async def walk_all(walkers: list[Walker], seconds: float) -> None:
    """Run every walker at once, for at most `seconds`."""
    deadline = time.monotonic() + seconds
    async with anyio.create_task_group() as group:
        for walker in walkers:
            group.start_soon(walker.walk, deadline)
