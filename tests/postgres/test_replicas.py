"""Two `tether mcp --http` replicas on one PostgreSQL database, many MCP clients answering the
same executions at once: no step advanced twice, no answer lost, `verify` passes — and the same
while the database restarts under them."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import anyio
import pytest

from support.postgres import PostgresServer, Replica, Walker, start_executions, walk_all
from tether.verbs import Runtime

STEPS = 12


@pytest.fixture
def fleet() -> Iterator[Callable[..., list[Replica]]]:
    """Starts replicas (stopped at the end of the test)."""
    started: list[Replica] = []

    def spawn(root: Path, store: str, count: int, **env: str) -> list[Replica]:
        replicas = [Replica(root, store, env) for _ in range(count)]
        started.extend(replicas)
        return replicas

    yield spawn
    for replica in started:
        replica.stop()


def _check_execution(
    server: PostgresServer, name: str, walkers: list[Walker], steps: int, *, outage: bool
) -> None:
    """The execution's trace holds every step once, each the answer of one walker, and every
    answer a walker was told was taken. (Across an outage, an answer whose commit went through
    while its reply was lost is in the trace although its walker heard an error.)"""
    rt = Runtime()
    uri = server.uri(name)
    trace = rt.trace(uri)
    assert [e["seq"] for e in trace] == list(range(len(trace)))
    answered = [e for e in trace if e["kind"] in ("protocol", "instruct")]
    assert [e["name"] for e in answered] == ["Acknowledge_Protocol"] + [
        f"Step_{i}" for i in range(steps)
    ]
    taken = sorted(note for w in walkers if w.trace == name for note in w.answered)
    notes = sorted(e["note"] for e in answered)
    if outage:
        assert set(taken) <= set(notes) and len(set(taken)) == len(taken)
    else:
        assert notes == taken
    assert rt.next(uri) == {"status": "done"}
    report = rt.verify(uri)
    assert report["ok"], report["differences"]


def test_two_replicas_serialise_concurrent_answers(
    server: PostgresServer,
    chain: Callable[[int], Path],
    new_name: Callable[[], str],
    fleet: Callable[..., list[Replica]],
) -> None:
    tree = chain(STEPS)
    replicas = fleet(tree.parent, server.dsn, 2)
    names = [new_name() for _ in range(4)]
    anyio.run(start_executions, replicas[0].url, tree.name, names)
    walkers = [
        Walker(replica.url, name, f"client {n} of {name} via replica {r}")
        for name in names
        for r, replica in enumerate(replicas)
        for n in range(2)
    ]
    anyio.run(walk_all, walkers, 180)

    for name in names:
        _check_execution(server, name, walkers, STEPS, outage=False)
    assert sum(w.stale for w in walkers) > 0, "the clients never raced for a step"
    for r in range(2):
        assert any(f"via replica {r}" in note for w in walkers for note in w.answered)


def test_replicas_ride_out_a_database_restart(
    own_server: PostgresServer,
    chain: Callable[[int], Path],
    fleet: Callable[..., list[Replica]],
) -> None:
    steps = 60
    tree = chain(steps)
    replicas = fleet(tree.parent, own_server.dsn, 2, TETHER_PG_TIMEOUT="2")
    names = [f"restart-{n}" for n in range(4)]
    anyio.run(start_executions, replicas[1].url, tree.name, names)
    walkers = [
        Walker(replica.url, name, f"{name} via replica {r}")
        for name in names
        for r, replica in enumerate(replicas)
    ]
    restarted: list[int] = []

    async def restart_mid_run() -> None:
        with anyio.fail_after(60):
            while sum(len(w.answered) for w in walkers) < 20:
                await anyio.sleep(0.05)
        await anyio.to_thread.run_sync(own_server.stop)
        with anyio.fail_after(60):
            while sum(w.outages for w in walkers) == 0:  # down until the clients have felt it
                await anyio.sleep(0.05)
        await anyio.to_thread.run_sync(own_server.start)
        restarted.append(sum(len(w.answered) for w in walkers))

    async def run() -> None:
        async with anyio.create_task_group() as group:
            group.start_soon(restart_mid_run)
            group.start_soon(walk_all, walkers, 240)

    anyio.run(run)

    assert restarted and restarted[0] < len(names) * (steps + 1), "the run ended before it"
    assert sum(w.outages for w in walkers) > 0, "no client saw the outage"
    for name in names:
        _check_execution(own_server, name, walkers, steps, outage=True)
