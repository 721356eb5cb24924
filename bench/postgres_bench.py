"""Benchmark: steps per second through `tether mcp --http` replicas, PostgreSQL against files.

Owns one measurement: N MCP clients (Streamable HTTP, one process, concurrent) each walk an
execution of their own — a chain of one-step actions, `next_step` then `submit` with the step
token, the protocol gate included — through the replicas in turn, and the figure is answers taken
per second of wall time. It compares the fleet of the PostgreSQL store (2 replicas on one
database) with one replica on the file store, and shows 1 replica on PostgreSQL to tell the
store's cost from the replicas' gain. The PostgreSQL server is a throwaway cluster on 127.0.0.1
with its durable defaults (fsync on); the file store runs as shipped (no fsync). It does not
check correctness (tests/postgres does).

    .venv/bin/python bench/postgres_bench.py [--clients 16] [--steps 40]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
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


@dataclass
class Run:
    store: str
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
                Walker(fleet[n % replicas].url, name, f"client {n}")
                for n, name in enumerate(names)
            ]
            began = time.perf_counter()
            anyio.run(walk_all, walkers, 600)
            seconds = time.perf_counter() - began
        finally:
            for replica in fleet:
                replica.stop()
    taken = sum(len(w.answered) for w in walkers)
    return Run(label, replicas, clients, taken, seconds, sum(w.calls for w in walkers))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--steps", type=int, default=40, help="steps per execution")
    args = parser.parse_args()
    server = PostgresServer(durable=True)
    server.start()
    try:
        runs = [
            measure("file", "", 1, args.clients, args.steps),
            measure("postgresql", server.dsn, 1, args.clients, args.steps),
            measure("postgresql", server.dsn, 2, args.clients, args.steps),
        ]
    finally:
        server.close()
    print(f"{'store':<12} {'replicas':>8} {'clients':>7} {'steps':>6} {'seconds':>8} "
          f"{'steps/s':>8} {'ms/call':>8}")
    for run in runs:
        print(f"{run.store:<12} {run.replicas:>8} {run.clients:>7} {run.steps:>6} "
              f"{run.seconds:>8.2f} {run.per_second:>8.1f} "
              f"{1000 * run.seconds * run.clients / run.calls:>8.2f}")


if __name__ == "__main__":
    main()
