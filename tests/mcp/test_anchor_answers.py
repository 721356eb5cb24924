"""Answers that the anchors' clients (abtree, behaviors-sh) parse come back in their shapes: a
finished execution's next step is exactly `{status: done}` or `{status: failure}` over MCP and
the CLI, and `start_execution` carries `ok: true`. (`GET /health` is in `test_http.py`.)"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
TETHER = [sys.executable, "-m", "tether.cli.main"]

pytestmark = pytest.mark.anyio


async def test_start_execution_says_ok(agent: Any, memory_uri: str) -> None:
    started = await agent.ok(
        "start_execution", tree_uri="hello-world.yaml", trace_output=memory_uri
    )
    assert started["ok"] is True and started["status"] == "started"
    tool = next(t for t in (await agent.client.list_tools()).tools if t.name == "start_execution")
    assert tool.output_schema["properties"]["ok"] == {
        "const": True,
        "description": "Always true (behaviors-sh clients read it).",
    }


async def test_a_failed_execution_answers_exactly_failure(agent: Any, memory_uri: str) -> None:
    await agent.ok("start_execution", tree_uri="code-review.yaml", trace_output=memory_uri)
    await agent.ok("submit", trace_output=memory_uri, status="success")
    await agent.ok("var_write", trace_output=memory_uri, path="summary", value="x")
    ended = await agent.ok("submit", trace_output=memory_uri, status="failure")
    assert ended["status"] == "action_failed" and "has failed" in ended["message"]
    assert await agent.ok("next_step", trace_output=memory_uri) == {"status": "failure"}
    assert await agent.ok("next_step", trace_output=memory_uri, all=True) == {
        "requests": [{"status": "failure"}]
    }
    document = await agent.ok("get_execution", trace_output=memory_uri)
    assert document["status"] == "failed" and document["failure"]


def test_the_cli_prints_exactly_done_and_failure(tmp_path: Path) -> None:
    def tether(*args: str) -> Any:
        done = subprocess.run(
            [*TETHER, *args], cwd=tmp_path, capture_output=True, text=True, check=True
        )
        return json.loads(done.stdout)

    tree = str(EXAMPLES / "hello-world.yaml")
    tether("start", tree, "no.json")
    tether("submit", "no.json", "failure")
    assert tether("next", "no.json") == {"status": "failure"}
    assert tether("next", "no.json", "--all") == [{"status": "failure"}]
    tether("start", tree, "yes.json")
    tether("submit", "yes.json", "success")
    tether("var", "yes.json", "time_of_day", "morning")
    tether("submit", "yes.json", "success")
    tether("eval", "yes.json", "true")
    tether("var", "yes.json", "greeting", "Good morning!")
    tether("submit", "yes.json", "success")
    assert tether("next", "yes.json") == {"status": "done"}
