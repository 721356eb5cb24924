"""A loop tree over MCP, as a real stdio server: every request inside the loop carries its item,
the walk reaches done one call per step, and the execution it leaves on disk verifies."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters

from tether.mcp.tools import TOOLS
from tether.verbs import Runtime

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _call(request: dict[str, Any], passes: dict[str, int]) -> tuple[str, dict[str, Any]]:
    """The agent's answer to a review-changes request: each file needs one fix, then is clean."""
    name = request["name"]
    if name == "List_Changes":
        return "submit", {"status": "success", "values": {"files": ["a.py", "b.py", "c.py"]}}
    if name == "No_Secrets":
        return "eval", {"result": False}
    if name == "Review_File":
        file = request["item"]["value"]
        passes[file] = passes.get(file, 0) + 1
        verdict = "fixed" if passes[file] == 1 else "clean"
        return "submit", {"status": "success", "values": {"verdict": verdict}}
    if name == "Summarise":
        return "submit", {"status": "success", "values": {"summary": "Three fixes."}}
    return "submit", {"status": "success"}


def test_the_request_schema_describes_the_item() -> None:
    next_step = next(t for t in TOOLS if t.name == "next_step")
    assert "item" in next_step.output["properties"]


@pytest.mark.anyio
async def test_a_stdio_client_walks_a_loop_tree_to_done(root: Path, agent_for: Any) -> None:
    shutil.copy(EXAMPLES / "review-changes.yaml", root / "review-changes.yaml")
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "tether.cli.main", "mcp", "--root", str(root)],
        env=dict(os.environ),  # the server runs the same Tether as the test
    )
    passes: dict[str, int] = {}
    items: list[Any] = []
    async with Client(params) as client:
        agent = agent_for(client)
        started = await agent.ok(
            "start_execution", tree_uri="review-changes.yaml", trace_output="loop.json"
        )
        request = started["current"]
        while "step" in request:
            if request["name"] == "Review_File":
                items.append(request["item"]["index"])
            tool, args = _call(request, passes)
            response = await agent.ok(tool, trace_output="loop.json", step=request["step"], **args)
            request = response["next"]
        assert request == {"status": "done"}
    assert items == [0, 0, 1, 1, 2, 2], "two passes over each of three files"
    assert Runtime().verify(str(root / "loop.json"))["ok"] is True
