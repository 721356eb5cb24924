"""What live OpenTelemetry emission costs a step (`tether.otel.send.emit`).

Run: `.venv/bin/python bench/otel_bench.py [--sizes 10,1000,10000] [--in-process]` (needs the
`otel` extra and PostgreSQL, as `scripts/install-test-deps-postgres` installs it; prints a
table). Every step here completes an action, of a sequence or of one of a `parallel`'s two
branches answered in turn, so every step with an endpoint configured reads the trace's tail
(from where the attempt it ended began), builds the span of that attempt and hands it to the
live outbox. The receiver is a local OTLP/HTTP endpoint on 127.0.0.1 that accepts every request
(sending happens on the outbox's own thread, so what it does with the spans does not reach the
step). Measured:

- per step in process (next + submit), no endpoint vs an endpoint, with the trace at 10, 1,000
  and 10,000 entries, a step in a sequence and a step in a `parallel`, on the file store and on
  PostgreSQL (a throwaway server on 127.0.0.1 with its durable defaults);
- `tether submit` as a fresh process, no endpoint vs an endpoint (the SDK's import and the flush
  at exit included) vs an endpoint where nothing listens (bounded by the flush's 1 s).
"""

from __future__ import annotations

import argparse
import http.server
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from support.postgres import PostgresServer
from tether.verbs import Runtime

TETHER = str(Path(sys.executable).parent / "tether")


class _Accept(http.server.BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def _receiver() -> str:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Accept)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}"


def _closed_port() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


def _tree(folder: Path, actions: int) -> Path:
    children = [
        {"type": "action", "name": f"A{i}", "steps": [{"instruct": f"step {i}"}]}
        for i in range(actions)
    ]
    path = folder / f"chain{actions}.json"
    root = {"type": "sequence", "name": "Root", "children": children}
    path.write_text(json.dumps({"name": "chain", "version": "1", "tree": root}))
    return path


def _branches(folder: Path, actions: int) -> Path:
    """A `parallel` of two branches, each a sequence of `actions` one-step actions."""
    branches = [
        {
            "type": "sequence",
            "name": side,
            "children": [
                {"type": "action", "name": f"{side}{i}", "steps": [{"instruct": f"step {i}"}]}
                for i in range(actions)
            ],
        }
        for side in ("L", "R")
    ]
    path = folder / f"branches{actions}.json"
    root = {"type": "parallel", "name": "Both", "children": branches}
    path.write_text(json.dumps({"name": "branches", "version": "1", "tree": root}))
    return path


def _per_step_ms(
    place: str, folder: Path, before: int, steps: int, endpoint: str | None, parallel: bool = False
) -> float:
    """Median ms of next + submit after `before` steps of an execution at `place` (a folder, or
    a database's `postgresql://...#` prefix), with `endpoint` configured or not: each step ends
    an action of a sequence, or with `parallel` one of a `parallel`'s two branches, answered in
    turn (their entries interleave)."""
    os.environ.pop("OTEL_EXPORTER_OTLP_ENDPOINT", None)
    rt = Runtime()
    uri = _uri(place, f"{'par' if parallel else 'run'}-{before}-{bool(endpoint)}")
    size = before + steps + 2  # an action more than the steps: `_reads_ms` takes one, still running
    rt.start(str(_branches(folder, size // 2 + 1) if parallel else _tree(folder, size)), uri)
    rt.submit(uri, "success")
    for n in range(before):
        _step(rt, uri, n)
    if endpoint:
        os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"] = endpoint
    samples = []
    for n in range(steps):
        t0 = time.perf_counter()
        _step(rt, uri, n)
        samples.append((time.perf_counter() - t0) * 1000)
    os.environ.pop("OTEL_EXPORTER_OTLP_ENDPOINT", None)
    return statistics.median(samples)


def _step(rt: Runtime, uri: str, n: int) -> None:
    """Answer one open request of `uri` with success: in turn the first and the last."""
    requests = rt.next(uri, all=True)
    rt.submit(uri, "success", step=requests[-(n % 2)]["step"])


def _uri(place: str, name: str) -> str:
    return f"{place}{name}" if place.endswith("#") else str(Path(place) / f"{name}.json")


def _reads_ms(uri: str) -> tuple[float, float]:
    """Median ms of what live emission reads and builds after one more step of `uri`: the
    whole trace (as it did before `read_tail`) and the tail (`send._completed`)."""
    from tether.otel import send
    from tether.otel.spans import spans
    from tether.store import store_for

    store = store_for(uri)
    tree, before = store.load_tree(uri), store.load(uri)
    _step(Runtime(), uri, 1)
    since = before["seq"]  # the step's entry
    whole, tail = [], []
    for _ in range(30):
        t0 = time.perf_counter()
        read, entries = store.read_execution(uri)
        spans(read, tree, entries, since)
        t1 = time.perf_counter()
        send._completed(store, uri, tree, since, before)
        t2 = time.perf_counter()
        whole.append((t1 - t0) * 1000)
        tail.append((t2 - t1) * 1000)
    return statistics.median(whole), statistics.median(tail)


def _in_process(
    places: dict[str, str], folder: Path, sizes: list[int], receiver: str
) -> list[tuple[str, str]]:
    """Rows per store and trace size: the median step without and with an endpoint, a step
    ending an action of a sequence, then of a `parallel`'s branch."""
    rows = []
    steps = 100
    for store, place in places.items():
        for parallel in (False, True):
            where = "in a parallel" if parallel else "in a sequence"
            for before in sizes:
                off = _per_step_ms(place, folder, before, steps, None, parallel)
                on = _per_step_ms(place, folder, before, steps, receiver, parallel)
                name = f"{'par' if parallel else 'run'}-{before}-True"
                whole, tail = _reads_ms(_uri(place, name))
                rows.append(
                    (
                        f"what emission reads after a step {where}, {store}, trace at "
                        f"{before:,} entries: the whole trace (before) / its tail (now)",
                        f"{whole:.2f} ms / {tail:.2f} ms",
                    )
                )
                rows.append(
                    (
                        f"per step {where} in process, {store}, trace at {before:,} entries, "
                        "no endpoint / endpoint",
                        f"{off:.2f} ms / {on:.2f} ms (+{on - off:.2f} ms)",
                    )
                )
    return rows


def _cli_ms(folder: Path, endpoint: str | None, steps: int) -> float:
    """Median wall ms of `tether submit` (each completing an action) as a fresh process."""
    rt = Runtime()
    uri = str(folder / f"cli-{len(list(folder.iterdir()))}.json")
    rt.start(str(_tree(folder, steps + 1)), uri)
    rt.submit(uri, "success")
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    if endpoint:
        env["OTEL_EXPORTER_OTLP_ENDPOINT"] = endpoint
    samples = []
    for _ in range(steps):
        t0 = time.perf_counter()
        subprocess.run([TETHER, "submit", uri, "success"], env=env, check=True, capture_output=True)
        samples.append((time.perf_counter() - t0) * 1000)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="10,1000,10000", help="trace sizes, in entries")
    parser.add_argument("--in-process", action="store_true", help="no `tether submit` rows")
    args = parser.parse_args()
    sizes = [int(n) for n in args.sizes.split(",")]
    receiver = _receiver()
    server = PostgresServer(durable=True)
    server.start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            places = {"files": tmp, "PostgreSQL": server.uri("")}
            rows = _in_process(places, folder, sizes, receiver)
            if args.in_process:
                return _print(rows)
            off = _cli_ms(folder, None, 15)
            on = _cli_ms(folder, receiver, 15)
            down = _cli_ms(folder, _closed_port(), 5)
            rows.append(
                (
                    "`tether submit`, fresh process, no endpoint / endpoint / endpoint down",
                    f"{off:.1f} ms / {on:.1f} ms / {down:.0f} ms",
                )
            )
    finally:
        server.close()
    _print(rows)


def _print(rows: list[tuple[str, str]]) -> None:
    print("| measure | result |\n|---|---|")
    for measure, result in rows:
        print(f"| {measure} | {result} |")


if __name__ == "__main__":
    main()
