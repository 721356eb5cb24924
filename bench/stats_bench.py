"""Benchmark: `tether stats` over 10,000 executions of 100 trace entries each, on the file store
and on PostgreSQL.

Owns one measurement: the wall time of `tether stats PLACE --json` (a fresh process, as a person
runs it), median of `--rounds`, and of `tether.stats.collect` in process, over N executions of a
33-action tree (each action: an instruct that writes a value, then a check), 100 entries each:
the protocol gate, then a var_write, an instruct and a check per action. A tenth of them are
failed (a check false at a random action) and a tenth still running (fewer entries: the
complete ones have 100), and a tenth carry two refused answers in their refusal log.

How the data is made, fast: three executions are driven through the real verbs (on a clock
moved by hand, so the times vary), and each of the N executions is a copy of one of them under
its own name. In a folder, the file store's own `create` writes each (its trace given whole: one
commit per execution) and `Transaction.refuse` its refusals, spread over 100 sub-folders as a
team's runs might be; in PostgreSQL, they are written as the store's rows directly, with COPY.
The PostgreSQL server is a throwaway cluster on 127.0.0.1 with its durable defaults. It does
not check the figures (tests/stats and tests/postgres do).

    .venv/bin/python bench/stats_bench.py [--executions 10000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from support.postgres import PostgresServer
from support.stats_scenario import Clock
from tether import stats
from tether.errors import TetherError
from tether.store import encode, store_for
from tether.verbs import Runtime

ACTIONS = 33
TETHER = str(Path(sys.executable).parent / "tether")
Template = tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]]]


def tree_text() -> str:
    actions = "".join(
        f"    - type: action\n      name: Step_{i}\n      steps:\n"
        f"        - instruct: Do part {i} and store its size at $VAR.part_{i}.\n"
        f"          writes: [part_{i}]\n"
        f"        - check: $VAR.part_{i} >= 0\n"
        for i in range(ACTIONS)
    )
    return f"name: bench\nversion: 1\ntree:\n  type: sequence\n  name: Work\n  children:\n{actions}"


def templates(folder: Path) -> list[Template]:
    """Three executions driven through the verbs: complete, failed at a random action, running
    at a random action; each as (state, tree, entries)."""
    tree = folder / "bench.yaml"
    tree.write_text(tree_text())
    rng = random.Random(7)
    out = []
    for kind in ("complete", "failed", "running"):
        clock = Clock()
        rt = Runtime(clock=clock)
        uri = str(folder / f"template-{kind}.json")
        rt.start(str(tree), uri)
        clock.wait(1)
        rt.submit(uri, "success")
        stop = rng.randrange(ACTIONS) if kind != "complete" else ACTIONS
        for i in range(ACTIONS if kind == "complete" else stop + (kind == "failed")):
            clock.wait(rng.uniform(2, 90))
            value = -1 if kind == "failed" and i == stop else i
            rt.submit(uri, "success", values={f"part_{i}": value})
        state, entries = store_for(uri).read_execution(uri)
        out.append((state, store_for(uri).load_tree(uri), entries))
    assert len(out[0][2]) == 1 + 3 * ACTIONS  # 100 entries
    return out


def fill(place: str, count: int, made: list[Template], *, spread: bool = True) -> float:
    """Write `count` copies of the `made` executions into `place` (a folder or a database URI),
    in a folder over 100 sub-folders, or all in it when not `spread`; returns the seconds it
    took."""
    started = time.perf_counter()
    if place.startswith("postgresql"):
        _copy_rows(place, count, made)
        return time.perf_counter() - started
    for n in range(count):
        state, tree, entries = _template(made, n)
        store = store_for(place)
        folder = f"team-{n % 100:02d}/" if spread else ""
        uri = store.canonical(os.path.join(place, f"{folder}run-{n:05d}.json"))
        store.create(uri, dict(state, uri=uri), tree, entries)
        if n % 10 == 3:
            with store.transaction(uri) as tx:
                for record in _refusals(state):
                    tx.refuse(record)
    return time.perf_counter() - started


def _template(made: list[Template], n: int) -> Template:
    """A tenth failed, a tenth running, the rest complete."""
    return made[0 if n % 10 > 1 else n % 10 + 1]


def _refusals(state: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"seq": state["seq"], "kind": "answer", "code": code, "cursor": None}
        for code in ("writes_missing", "stale_step")
    ]


def _copy_rows(database: str, count: int, made: list[Template]) -> None:
    """The executions as rows of the PostgreSQL store's tables (`tether.store.postgres`: the
    state with its trace's epoch and length, the tree, one row per entry and per refusal),
    loaded with COPY."""
    import psycopg

    store = store_for(database)
    store.list(database)  # the store creates its tables
    with psycopg.connect(database) as conn, conn.cursor() as cursor:
        with cursor.copy(
            "COPY tether_executions (name, state, tree, revision, trace_epoch, trace_entries)"
            " FROM STDIN"
        ) as copy:
            for n in range(count):
                state, tree, entries = _template(made, n)
                name = f"run-{n:05d}"
                uri = store.canonical(f"{database}#{name}")
                stored = dict(state, uri=uri, trace={"epoch": 0, "entries": len(entries)})
                copy.write_row(
                    (name, encode(stored), encode(tree), state["revision"], 0, len(entries))
                )
        with cursor.copy("COPY tether_trace (name, epoch, idx, entry) FROM STDIN") as copy:
            for n in range(count):
                for i, entry in enumerate(_template(made, n)[2]):
                    copy.write_row((f"run-{n:05d}", 0, i, encode(entry)))
        with cursor.copy("COPY tether_refusals (name, entry) FROM STDIN") as copy:
            for n in range(3, count, 10):
                for record in _refusals(_template(made, n)[0]):
                    copy.write_row((f"run-{n:05d}", encode(record)))


def measure(place: str, rounds: int) -> tuple[float, float, dict[str, Any]]:
    """Median seconds of `tether stats PLACE --json` (fresh process) and of `collect`."""
    cli, inproc = [], []
    figures: dict[str, Any] = {}
    for _ in range(rounds):
        started = time.perf_counter()
        done = subprocess.run(
            [TETHER, "stats", place, "--json"], capture_output=True, text=True, check=False
        )
        cli.append(time.perf_counter() - started)
        if done.returncode != 0:
            raise TetherError("internal", done.stderr)
        figures = json.loads(done.stdout)
        started = time.perf_counter()
        stats.collect(place)
        inproc.append(time.perf_counter() - started)
    return statistics.median(cli), statistics.median(inproc), figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--executions", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="tether-stats-bench-") as tmp:
        root = Path(tmp)
        (root / "runs").mkdir()
        made = templates(root)
        server = PostgresServer(durable=True)
        server.start()
        try:
            server.create_database("bench")
            for label, place in (
                ("file store", str(root / "runs")),
                ("PostgreSQL", server.database_uri("bench")),
            ):
                written = fill(place, args.executions, made)
                cli, inproc, figures = measure(place, args.rounds)
                assert figures["executions"] == args.executions, figures["executions"]
                rows.append((label, written, cli, inproc))
        finally:
            server.close()
    print(f"tether stats over {args.executions:,} executions of 100 entries each")
    print(f"{'store':<12} {'written in':>11} {'tether stats':>13} {'in process':>11}")
    for label, written, cli, inproc in rows:
        print(f"{label:<12} {written:>10.1f}s {cli:>12.2f}s {inproc:>10.2f}s")


if __name__ == "__main__":
    main()
