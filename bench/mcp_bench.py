"""Benchmark of the MCP server: start-up, tool-call round trips over stdio and HTTP, and HTTP
throughput.

Start-up is what a client waits for before its first call: `tether mcp` spawned over stdio by
the official SDK client and initialized (the client's own handshake, its `server/discover` probe
included), p50 of N starts. The walk is the one `bench/core_bench.py` times: a sequence of 20
one-step actions, gate included, driven as next_step + submit pairs on the file store. Round
trips are timed per call, with the SDK's client (what an agent pays) and with a bare JSON-RPC
client (the server's share).
Throughput: N concurrent clients over HTTP, each driving its own execution on the file store.
Prints a table; asserts nothing.
Usage: python bench/mcp_bench.py [--starts N] [--start-only] [--walks N] [--clients N] [--rounds N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx2
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters

SERVE = [sys.executable, "-m", "tether.cli.main", "mcp"]
# What a client configures: the installed command (the SDK's client runs it with a default
# environment, which leaves out PYTHONPATH: pass ours, so a checkout's code is what is measured).
TETHER = str(Path(sys.executable).with_name("tether"))
ACTIONS = 20

Call = Callable[[str, dict[str, Any]], Awaitable[Any]]


def write_tree(folder: Path) -> str:
    actions = [
        {"type": "action", "name": f"Step_{i}", "steps": [{"instruct": f"Do step {i}."}]}
        for i in range(ACTIONS)
    ]
    tree = {
        "name": "bench",
        "version": "1.0.0",
        "tree": {"type": "sequence", "name": "Bench", "children": actions},
    }
    (folder / "bench.json").write_text(json.dumps(tree))
    return "bench.json"


async def walk(call: Call, trace: str, timings: dict[str, list[float]]) -> int:
    """Drive one execution from the gate to done; returns the steps answered."""
    await call("start_execution", {"tree_uri": "bench.json", "trace_output": trace})
    steps = 0
    while True:
        started = time.perf_counter()
        request = await call("next_step", {"trace_output": trace})
        timings["next_step"].append(time.perf_counter() - started)
        if "step" not in request:
            return steps
        started = time.perf_counter()
        await call("submit", {"trace_output": trace, "status": "success", "step": request["step"]})
        timings["submit"].append(time.perf_counter() - started)
        steps += 1


def sdk_call(client: Client) -> Call:
    async def call(tool: str, args: dict[str, Any]) -> Any:
        result = await client.call_tool(tool, args)
        if result.is_error:
            raise RuntimeError(result.content[0].text)  # type: ignore[union-attr]
        return result.structured_content

    return call


def _message(n: int, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    params = {"name": tool, "arguments": args}
    return {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": params}


def _result(reply: dict[str, Any]) -> Any:
    result = reply["result"]
    if result.get("isError"):
        raise RuntimeError(result["content"][0]["text"])
    return result["structuredContent"]


class RawStdio:
    """A bare JSON-RPC client on the server's pipes: one line out, one line back."""

    def __init__(self, root: Path) -> None:
        self.process = subprocess.Popen(
            [*SERVE, "--root", str(root)], stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
        self.n = 0
        hello = {"protocolVersion": "2025-06-18", "capabilities": {}}
        self._send("initialize", {**hello, "clientInfo": {"name": "bench", "version": "1"}})
        assert self.process.stdin is not None
        self.process.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')

    def _send(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.n += 1
        message = {"jsonrpc": "2.0", "id": self.n, "method": method, "params": params}
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()
        return json.loads(self.process.stdout.readline())

    async def call(self, tool: str, args: dict[str, Any]) -> Any:
        return _result(self._send("tools/call", {"name": tool, "arguments": args}))

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=30)


def raw_http(http: httpx2.AsyncClient, url: str) -> Call:
    counter = iter(range(1, 1 << 62))

    async def call(tool: str, args: dict[str, Any]) -> Any:
        response = await http.post(url, json=_message(next(counter), tool, args))
        response.raise_for_status()
        return _result(response.json())

    return call


HEADERS = {"Accept": "application/json, text/event-stream"}


def start_http(root: Path) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [*SERVE, "--http", "--port", "0", "--root", str(root)],
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    for _ in range(100):
        match = re.search(r"serving (http://\S+/mcp)", process.stderr.readline())
        if match:
            return process, match.group(1)
    process.kill()
    raise RuntimeError("the HTTP server did not start")


def percentiles(samples: list[float]) -> tuple[float, float]:
    cuts = statistics.quantiles(samples, n=100)
    return cuts[49] * 1000, cuts[94] * 1000


async def latency(
    name: str, call: Call, walks: int, rows: list[tuple[str, ...]], store: str = "file"
) -> None:
    timings: dict[str, list[float]] = {"next_step": [], "submit": []}
    for n in range(walks):
        trace = f"{name.split(',')[0]}-{n}-{time.monotonic_ns()}"
        await walk(call, f"memory://{trace}" if store == "memory" else f"{trace}.json", timings)
    both = timings["next_step"] + timings["submit"]
    for label, samples in (*timings.items(), ("next+submit", both)):
        p50, p95 = percentiles(samples)
        rows.append((name, label, str(len(samples)), f"{p50:.2f}", f"{p95:.2f}"))


async def throughput(url: str, clients: int, rounds: int) -> tuple[float, float, int]:
    """Steps (next + submit) per second and calls per second, N clients at once."""
    timings: dict[str, list[float]] = {"next_step": [], "submit": []}
    limits = httpx2.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx2.AsyncClient(headers=HEADERS, limits=limits, timeout=60) as http:
        call = raw_http(http, url)

        async def client(k: int) -> int:
            return sum([await walk(call, f"tp-{k}-{r}.json", timings) for r in range(rounds)])

        started = time.perf_counter()
        steps = sum(await asyncio.gather(*(client(k) for k in range(clients))))
        elapsed = time.perf_counter() - started
    calls = steps * 2 + clients * rounds * 2  # every walk also starts and reads `done`
    return steps / elapsed, calls / elapsed, steps


async def start_ms(root: Path, starts: int) -> tuple[float, float]:
    """p50 and p95 of `tether mcp` spawned over stdio and initialized by the SDK's client."""
    params = StdioServerParameters(
        command=TETHER, args=["mcp", "--root", str(root)], env=dict(os.environ)
    )
    samples = []
    for _ in range(starts):
        started = time.perf_counter()
        async with Client(params) as client:
            samples.append(time.perf_counter() - started)
            assert client.server_info is not None and client.server_info.name == "tether"
    return percentiles(samples)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--starts", type=int, default=20, help="stdio starts timed")
    parser.add_argument("--start-only", action="store_true", help="time the start-up only")
    parser.add_argument("--walks", type=int, default=25, help="walks per latency row")
    parser.add_argument("--clients", type=int, default=16, help="concurrent HTTP clients")
    parser.add_argument("--rounds", type=int, default=3, help="walks per throughput client")
    options = parser.parse_args()
    rows: list[tuple[str, ...]] = []
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        write_tree(root)
        start_p50, start_p95 = await start_ms(root, options.starts)
        print(
            f"MCP stdio start, `tether mcp` spawned and initialized by the SDK client, "
            f"{options.starts} starts: p50 {start_p50:.0f} ms, p95 {start_p95:.0f} ms "
            "(target: 150 ms)"
        )
        if options.start_only:
            return

        params = StdioServerParameters(
            command=SERVE[0], args=[*SERVE[1:], "--root", folder], env=dict(os.environ)
        )
        async with Client(params) as client:
            await latency("stdio, SDK client", sdk_call(client), options.walks, rows)
            call = sdk_call(client)
            await latency("stdio, SDK, memory://", call, options.walks, rows, "memory")
        raw = RawStdio(root)
        try:
            await latency("stdio, bare JSON-RPC", raw.call, options.walks, rows)
            await latency("stdio, bare, memory://", raw.call, options.walks, rows, "memory")
        finally:
            raw.close()

        process, url = start_http(root)
        try:
            async with Client(url) as client:
                await latency("http, SDK client", sdk_call(client), options.walks, rows)
            async with httpx2.AsyncClient(headers=HEADERS, timeout=60) as http:
                await latency("http, bare JSON-RPC", raw_http(http, url), options.walks, rows)
            steps, calls, total = await throughput(url, options.clients, options.rounds)
        finally:
            process.terminate()
            process.wait(timeout=30)

    print(f"MCP tool-call round trip, {ACTIONS}-action walk, file store unless marked (ms)")
    print(f"{'transport, client':<24} {'tool':<12} {'calls':>6} {'p50':>7} {'p95':>7}")
    for row in rows:
        print(f"{row[0]:<24} {row[1]:<12} {row[2]:>6} {row[3]:>7} {row[4]:>7}")
    print()
    print(
        f"HTTP throughput, {options.clients} clients, each its own execution on the file store: "
        f"{steps:.0f} steps/s ({calls:.0f} tool calls/s, {total} steps)"
    )


if __name__ == "__main__":
    asyncio.run(main())
