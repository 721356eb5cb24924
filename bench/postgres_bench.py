"""Benchmark: steps per second through `tether mcp --http` replicas, PostgreSQL against files.

Owns one measurement: N MCP clients (Streamable HTTP, one process, concurrent) each walk an
execution of their own — a chain of one-step actions, `next_step` then `submit` with the step
token, the protocol gate included — through the replicas in turn, and the figure is answers taken
per second of wall time. It compares the fleet of the PostgreSQL store (2 replicas on one
database) with one replica on the file store, and shows 1 replica on PostgreSQL to tell the
store's cost from the replicas' gain; a second table gives each store's cost alone (one thread
calling the verbs in-process). The PostgreSQL server is a throwaway cluster on 127.0.0.1
with its durable defaults (fsync on); the file store runs as shipped (no fsync). It does not
check correctness (tests/postgres does).

    .venv/bin/python bench/postgres_bench.py [--clients 16] [--steps 40] [--rounds 3]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from support.postgres import (
    PostgresServer,
    Replica,
    Walker,
    start_executions,
    walk_all,
    write_chain,
)
from tether.verbs import Runtime


@dataclass
class Run:
    replicas: int
    clients: int
    steps: int
    seconds: float
    calls: int

    @property
    def per_second(self) -> float:
        return self.steps / self.seconds


def measure(label: str, store: str, replicas: int, clients: int, steps: int) -> Run:
    """Walk `clients` executions of `steps` steps through `replicas` replicas of `store` (a
    database URI, or "" for files under the replicas' root)."""
    with tempfile.TemporaryDirectory(prefix="tether-bench-") as folder:
        root = Path(folder)
        tree = write_chain(root, steps)
        fleet = [Replica(root, store) for _ in range(replicas)]
        try:
            suffix = "" if store else ".json"
            names = [f"bench-{label}-{replicas}-{n}{suffix}" for n in range(clients)]
            for r, replica in enumerate(fleet):
                anyio.run(start_executions, replica.url, tree.name, names[r::replicas])
            walkers = [
                Walker(fleet[n % replicas].url, name, f"client {n}") for n, name in enumerate(names)
            ]
            began = time.perf_counter()
            anyio.run(walk_all, walkers, 600)
            seconds = time.perf_counter() - began
        finally:
            for replica in fleet:
                replica.stop()
    taken = sum(len(w.answered) for w in walkers)
    return Run(replicas, clients, taken, seconds, sum(w.calls for w in walkers))


def in_process(store_uri: Callable[[Path], str], steps: int) -> float:
    """Steps per second of one thread calling the verbs directly (`next`, then `submit` with the
    token): the store's own cost, without MCP, HTTP or a second process."""
    with tempfile.TemporaryDirectory(prefix="tether-bench-") as folder:
        rt, uri = Runtime(), store_uri(Path(folder))
        rt.start(str(write_chain(Path(folder), steps)), uri)
        rt.submit(uri, "success")
        began = time.perf_counter()
        for _ in range(steps):
            rt.submit(uri, "success", step=rt.next(uri)["step"])
        return steps / (time.perf_counter() - began)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--steps", type=int, default=40, help="steps per execution")
    parser.add_argument("--rounds", type=int, default=3, help="runs of each setup, interleaved")
    args = parser.parse_args()
    server = PostgresServer(durable=True)
    server.start()
    setups = [("file", "", 1), ("postgresql", server.dsn, 1), ("postgresql", server.dsn, 2)]
    runs: dict[tuple[str, int], list[Run]] = {(label, n): [] for label, _, n in setups}
    try:
        direct = {
            "file": in_process(lambda folder: str(folder / "direct.json"), 300),
            "postgresql": in_process(lambda folder: server.uri(f"direct-{folder.name}"), 300),
        }
        for round_ in range(args.rounds):
            for label, store, replicas in setups:
                run = measure(f"{label}{round_}", store, replicas, args.clients, args.steps)
                runs[(label, replicas)].append(run)
    finally:
        server.close()
    print(
        f"{args.clients} clients, {args.steps} steps each, {args.rounds} rounds "
        "(steps/s: median, then the range; ms/call: median latency one client sees)"
    )
    print(f"{'store':<12} {'replicas':>8} {'steps/s':>8} {'range':>15} {'ms/call':>8}")
    for (label, replicas), done in runs.items():
        rates = sorted(r.per_second for r in done)
        latencies = sorted(1000 * r.seconds * r.clients / r.calls for r in done)
        median = rates[len(rates) // 2]
        print(
            f"{label:<12} {replicas:>8} {median:>8.1f} {rates[0]:>7.1f}-{rates[-1]:<7.1f} "
            f"{latencies[len(latencies) // 2]:>8.2f}"
        )
    print("\nthe store alone: one thread calling the verbs in-process (next + submit per step)")
    for label, rate in direct.items():
        print(f"{label:<12} {rate:>8.1f} steps/s  {1000 / rate:>6.2f} ms/step")


if __name__ == "__main__":
    main()
