"""How soon `tether view` pushes a commit to a page that follows an execution.

Run: `.venv/bin/python bench/viewer_bench.py [COMMITS]` (prints a table). A real `tether view`
serves a folder with one execution of `examples/hello-world.yaml`; a client follows it through
`/api/events?path=…` (the stream a page listens to) while the bench writes
`time_of_day` in process COMMITS times (each write is a commit that moves the revision).
Measured: from the return of each commit to the event's arrival at the client, in ms. The
browser tests assert that the page follows; how fast it does is measured here, not there.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from tether.verbs import Runtime

REPO = Path(__file__).resolve().parents[1]
TETHER = str(Path(sys.executable).parent / "tether")


def _serve(folder: Path) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [TETHER, "view", str(folder)], stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True
    )
    assert process.stdout is not None
    lines = []
    for line in process.stdout:
        lines.append(line)
        if line.rstrip() == "}":
            break
    return process, json.loads("".join(lines))["url"].split("?")[0]


def _follow(base: str, runtime: Runtime, run: Path, commits: int) -> list[float]:
    waits = []
    with urllib.request.urlopen(f"{base}api/events?path={run.name}", timeout=30) as stream:
        stream.readline(), stream.readline()  # the revision at connection, then a blank line
        for n in range(commits):
            runtime.var_write(str(run), "time_of_day", f"evening {n}")
            committed = time.perf_counter()
            while not stream.readline().startswith(b"data: "):
                pass
            waits.append((time.perf_counter() - committed) * 1000)
    return waits


def main() -> None:
    commits = int(sys.argv[1]) if len(sys.argv) > 1 else 50
    runtime = Runtime()
    with tempfile.TemporaryDirectory() as temp:
        run = Path(temp) / "hello.json"
        runtime.start(str(REPO / "examples" / "hello-world.yaml"), str(run))
        runtime.submit(str(run), "success")
        process, base = _serve(Path(temp))
        try:
            waits = sorted(_follow(base, runtime, run, commits))
        finally:
            process.terminate()
            process.wait(timeout=10)
    p99 = waits[min(len(waits) - 1, int(len(waits) * 0.99))]
    print(f"commit -> event at the page's stream, {commits} commits, ms")
    print("| p50 | p99 | max |")
    print("|---|---|---|")
    print(f"| {statistics.median(waits):.1f} | {p99:.1f} | {waits[-1]:.1f} |")


if __name__ == "__main__":
    main()
