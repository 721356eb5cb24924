"""Benchmark of what a step costs an agent: tool calls per step and response bytes per step.

Every example tree is walked to its end twice through the real MCP server (the SDK's in-memory
client, memory store), by the same scripted agent:

- the old pattern: next_step, one var_write per path the step writes, then eval or submit, and a
  last next_step that says done;
- the new pattern: eval or submit with the step's writes in `values`, reading the following
  request from the answer's `next`.

Beside them, abtree's call pattern on the same walk (next, a local write per path, submit or
eval), its responses modelled from its source (flying-dice/abtree, packages/cli/src/commands.ts
and mcp/tools.ts): next returns `{type, name, expression | instruction}` or `{status}`; eval
`{status, message}` with "Precondition met. Advancing." / "Precondition not met. Action failed.";
submit `{status, message}` with "Step done. More steps remain.", "All steps done. Action
succeeded.", "Instruction failed. Action marked as failure.", "Acknowledged. Call next when
ready to continue."; a local write `{path, value}`. abtree prints every payload, on the command
line and as MCP text alike, as JSON.stringify(payload, null, 2). abtree is not run: statuses
come from Tether's walk (abtree has no `check` steps; the modelled statuses are the ones Tether
reached).

A step is a request the agent answers after the protocol gate, which is left out of every
figure (the new pattern's first request arrives in the gate's answer: those bytes are counted).
Response bytes are a proxy for tokens: the MCP text block a model reads (Tether's compact JSON,
abtree's indented JSON), and the command line's stdout (indented JSON for both). Prints a table;
asserts nothing. Usage: python bench/steps_bench.py
"""

from __future__ import annotations

import asyncio
import io
import json
import shutil
import tempfile
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp.client.client import Client

from tether.command.output import emit
from tether.mcp.server import build_server
from tether.verbs import Runtime

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

# The scripted agent: what it writes for each $VAR path, and its verdict on each evaluate
# (by action name; True when not listed).
SCRIPTS: dict[str, tuple[dict[str, Any], dict[str, bool]]] = {
    "hello-world": (
        {"time_of_day": "evening", "greeting": "Good evening!"},
        {"Morning_Greeting": False, "Afternoon_Greeting": False},
    ),
    "deploy": (
        {"tests_passed": True, "coverage": 86.5, "image_tag": "v1.4.2", "error_rate": 0.002},
        {},
    ),
    "code-review": (
        {
            "summary": "Adds retries to the flaky upload.",
            "findings": [],
            "tests_passed": True,
            "verdict": "approved",
        },
        {},
    ),
    "story-mapping": (
        {
            "users": ["buyer", "seller", "support agent"],
            "releases": [{"name": "walking skeleton"}, {"name": "release 2"}],
        },
        {},
    ),
}

ABTREE_EVAL = {
    "evaluation_passed": "Precondition met. Advancing.",
    "evaluation_failed": "Precondition not met. Action failed.",
}
ABTREE_SUBMIT = {
    "step_complete": "Step done. More steps remain.",
    "action_complete": "All steps done. Action succeeded.",
    "action_failed": "Instruction failed. Action marked as failure.",
    "running": "Acknowledged. Call next when ready to continue.",
}

Call = Callable[[str, dict[str, Any]], Awaitable[tuple[dict[str, Any], str]]]


@dataclass
class Tally:
    """The calls and response bytes of one walk, from the first step after the gate."""

    steps: int = 0
    calls: int = 0
    mcp: int = 0
    cli: int = 0
    record: list[tuple[str, dict[str, Any], dict[str, Any]]] = field(default_factory=list)

    def add(self, tool: str, args: dict[str, Any], result: dict[str, Any], text: str) -> None:
        self.calls += 1
        self.mcp += len(text.encode())
        self.cli += _cli_bytes(result)
        self.record.append((tool, args, result))


def _cli_bytes(result: Any) -> int:
    """What `tether` prints for this result (`tether.command.output.emit`), in bytes."""
    out = io.StringIO()
    emit(result, out)
    return len(out.getvalue().encode())


def _abtree_text(payload: Any) -> int:
    """abtree's `out` and MCP text: JSON.stringify(payload, null, 2) (+ a newline on the CLI)."""
    return len(json.dumps(payload, ensure_ascii=False, indent=2).encode())


def _answer(request: dict[str, Any], script: tuple[dict[str, Any], dict[str, bool]]) -> Any:
    """The scripted agent's answer to `request`: (tool, arguments, writes)."""
    values, verdicts = script
    writes = {path: values[path] for path in request.get("writes", [])}
    if request["type"] == "evaluate":
        return "eval", {"result": verdicts.get(request["name"], True)}, writes
    return "submit", {"status": "success"}, writes


async def walk_old(call: Call, trace: str, script: Any) -> Tally:
    tally = Tally()
    await call("submit", {"trace_output": trace, "status": "success"})  # the gate
    while True:
        request, text = await call("next_step", {"trace_output": trace})
        tally.add("next_step", {}, request, text)
        if "step" not in request:
            return tally
        tool, args, writes = _answer(request, script)
        for path, value in writes.items():
            sent = {"path": path, "value": value}
            result, text = await call("var_write", {"trace_output": trace, **sent})
            tally.add("var_write", sent, result, text)
        sent = {**args, "step": request["step"]}
        result, text = await call(tool, {"trace_output": trace, **sent})
        tally.add(tool, sent, result, text)
        tally.steps += 1


async def walk_new(call: Call, trace: str, script: Any) -> Tally:
    tally = Tally()
    gate, _ = await call("submit", {"trace_output": trace, "status": "success"})
    request = gate["next"]
    tally.mcp += len(json.dumps(request, ensure_ascii=False, separators=(",", ":")).encode())
    tally.cli += _cli_bytes(request)
    while "step" in request:
        tool, args, writes = _answer(request, script)
        sent = {**args, "step": request["step"], **({"values": writes} if writes else {})}
        result, text = await call(tool, {"trace_output": trace, **sent})
        tally.add(tool, sent, result, text)
        tally.steps += 1
        request = result["next"]
    return tally


def abtree_of(old: Tally) -> Tally:
    """abtree's responses to the same calls as the old pattern (see the module docstring)."""
    tally = Tally(steps=old.steps)
    for tool, args, result in old.record:
        if tool == "next_step":
            if "step" in result:
                text_key = "expression" if result["type"] == "evaluate" else "instruction"
                payload: dict[str, Any] = {
                    "type": result["type"],
                    "name": result["name"],
                    text_key: result[text_key],
                }
            else:
                payload = {"status": result["status"]}
        elif tool == "var_write":
            payload = {"path": args["path"], "value": args["value"]}
        elif tool == "eval":
            payload = {"status": result["status"], "message": ABTREE_EVAL[result["status"]]}
        else:
            payload = {"status": result["status"], "message": ABTREE_SUBMIT[result["status"]]}
        tally.calls += 1
        tally.mcp += _abtree_text(payload)
        tally.cli += _abtree_text(payload) + 1
    return tally


async def measure(root: Path) -> list[tuple[str, str, Tally]]:
    rows: list[tuple[str, str, Tally]] = []
    async with Client(build_server(Runtime(root=str(root)))) as client:

        async def call(tool: str, args: dict[str, Any]) -> tuple[dict[str, Any], str]:
            result = await client.call_tool(tool, args)
            text = result.content[0].text  # type: ignore[union-attr]
            if result.is_error:
                raise RuntimeError(text)
            assert result.structured_content is not None
            return result.structured_content, text

        for name, script in SCRIPTS.items():
            tallies = {}
            for pattern, walk in (("old", walk_old), ("new", walk_new)):
                trace = f"memory://steps-bench-{uuid.uuid4().hex}"
                await call("start_execution", {"tree_uri": f"{name}.yaml", "trace_output": trace})
                tallies[pattern] = await walk(call, trace, script)
                assert Runtime().next(trace) == {"status": "done"}, (name, pattern)
            assert tallies["old"].steps == tallies["new"].steps
            rows.append((name, "tether: next + var + answer", tallies["old"]))
            rows.append((name, "tether: one call (values, next)", tallies["new"]))
            rows.append(
                (name, "abtree (modelled): next + write + answer", abtree_of(tallies["old"]))
            )
    return rows


def main() -> None:
    folder = Path(tempfile.mkdtemp(prefix="tether-steps-bench-"))
    try:
        for name in SCRIPTS:
            shutil.copy(EXAMPLES / f"{name}.yaml", folder / f"{name}.yaml")
        rows = asyncio.run(measure(folder))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print("calls and response bytes per step, protocol gate left out (see the docstring)")
    print(
        f"{'tree':<14} {'pattern':<41} {'steps':>5} {'calls':>5} {'calls/step':>10} "
        f"{'MCP B/step':>10} {'CLI B/step':>10}"
    )
    totals: dict[str, Tally] = {}
    for name, pattern, t in rows:
        print(
            f"{name:<14} {pattern:<41} {t.steps:>5} {t.calls:>5} {t.calls / t.steps:>10.2f} "
            f"{t.mcp / t.steps:>10.0f} {t.cli / t.steps:>10.0f}"
        )
        total = totals.setdefault(pattern, Tally())
        total.steps += t.steps
        total.calls += t.calls
        total.mcp += t.mcp
        total.cli += t.cli
    for pattern, t in totals.items():
        print(
            f"{'all trees':<14} {pattern:<41} {t.steps:>5} {t.calls:>5} "
            f"{t.calls / t.steps:>10.2f} {t.mcp / t.steps:>10.0f} {t.cli / t.steps:>10.0f}"
        )


if __name__ == "__main__":
    main()
