"""Core benchmark: per-step cost in process on the file store, and CLI wall time per call.

Run: `.venv/bin/python bench/core_bench.py` (prints a table). Measures the speed targets the
README's "Speed" table states:

- per step (next + answer) in process with the trace at 10 and at 10,000 entries (target: the
  long trace within 1.5x of the short one);
- per step with a 10-node and a 10,000-node tree (target: within 2x);
- `tether next` and `tether submit` wall time as fresh processes on a 20-action walk, gate
  included (target: at most 60 ms; aim 42 ms).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tether.verbs import Runtime


def _tree_file(folder: Path, actions: int, name: str) -> Path:
    children = [
        {"type": "action", "name": f"A{i}", "steps": [{"instruct": f"step {i}"}]}
        for i in range(actions)
    ]
    path = folder / f"{name}.json"
    path.write_text(
        json.dumps(
            {
                "name": name,
                "version": "1",
                "tree": {"type": "sequence", "name": "Root", "children": children},
            }
        )
    )
    return path


def _per_step_ms(rt: Runtime, uri: str, steps: int) -> float:
    samples = []
    for _ in range(steps):
        t0 = time.perf_counter()
        request = rt.next(uri)
        rt.submit(uri, "success", step=request["step"])
        samples.append((time.perf_counter() - t0) * 1000)
    return statistics.median(samples)


def _started(rt: Runtime, folder: Path, tree: Path, name: str) -> str:
    uri = str(folder / f"{name}.run.json")
    rt.start(str(tree), uri)
    rt.submit(uri, "success")
    return uri


def bench_trace_length(folder: Path) -> list[tuple[str, float]]:
    rt = Runtime()
    tree = _tree_file(folder, 600, "trace-len")
    rows = []
    for entries in (10, 10_000):
        uri = _started(rt, folder, tree, f"trace-{entries}")
        for i in range(entries - 1):
            rt.think(uri, f"padding {i}")
        rows.append((f"per step, trace at {entries:,} entries", _per_step_ms(rt, uri, 300)))
    return rows


def bench_tree_size(folder: Path) -> list[tuple[str, float]]:
    rt = Runtime()
    rows = []
    for nodes in (10, 10_000):
        tree = _tree_file(folder, nodes - 1, f"size-{nodes}")
        uri = _started(rt, folder, tree, f"size-{nodes}")
        rows.append(
            (f"per step, {nodes:,}-node tree", _per_step_ms(rt, uri, 9 if nodes == 10 else 300))
        )
    return rows


def bench_cli(folder: Path) -> list[tuple[str, float]]:
    tether = str(Path(sys.executable).with_name("tether"))
    tree = _tree_file(folder, 20, "cli-walk")
    uri = str(folder / "cli.run.json")

    def run(*args: str) -> tuple[float, Any]:
        t0 = time.perf_counter()
        out = subprocess.run([tether, *args], capture_output=True, text=True, check=True).stdout
        return (time.perf_counter() - t0) * 1000, json.loads(out)

    run("start", str(tree), uri)
    nexts, submits = [], []
    while True:
        ms, request = run("next", uri)
        nexts.append(ms)
        if "status" in request:
            break
        ms, _ = run("submit", uri, "success", "--step", request["step"])
        submits.append(ms)
    return [
        ("CLI `tether next` wall time (median)", statistics.median(nexts)),
        ("CLI `tether submit` wall time (median)", statistics.median(submits)),
    ]


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        trace_rows = bench_trace_length(folder)
        size_rows = bench_tree_size(folder)
        cli_rows = bench_cli(folder)
    print(f"| {'measure':<44} | {'ms':>8} | {'target':<28} |")
    print(f"|{'-' * 46}|{'-' * 10}|{'-' * 30}|")
    ratio_trace = trace_rows[1][1] / trace_rows[0][1]
    ratio_size = size_rows[1][1] / size_rows[0][1]
    for label, ms in trace_rows:
        print(f"| {label:<44} | {ms:>8.3f} | {'':<28} |")
    print(f"| {'  ratio 10,000 / 10 entries':<44} | {ratio_trace:>7.2f}x | {'<= 1.5x':<28} |")
    for label, ms in size_rows:
        print(f"| {label:<44} | {ms:>8.3f} | {'':<28} |")
    print(f"| {'  ratio 10,000 / 10 nodes':<44} | {ratio_size:>7.2f}x | {'<= 2x':<28} |")
    for label, ms in cli_rows:
        print(f"| {label:<44} | {ms:>8.1f} | {'<= 60 ms (aim 42 ms)':<28} |")


if __name__ == "__main__":
    main()
