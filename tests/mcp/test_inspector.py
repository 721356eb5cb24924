"""End to end with the official MCP Inspector CLI (npm @modelcontextprotocol/inspector, installed
under .cache/ by scripts/install-test-deps-mcp): it lists the runtime tools and drives hello-world
from the gate to done, over stdio and over Streamable HTTP. A missing Inspector fails the tests."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from tether.mcp.tools import TOOLS

pytestmark = pytest.mark.anyio

REPO = Path(__file__).resolve().parents[2]
INSPECTOR = REPO / ".cache" / "mcp-inspector" / "node_modules" / ".bin" / "mcp-inspector"


class Inspector:
    """Runs `mcp-inspector --cli` against one server target (a command, or a URL)."""

    def __init__(self, target: list[str], home: Path) -> None:
        assert INSPECTOR.exists(), (
            "the MCP Inspector is not installed: run scripts/install-test-deps-mcp"
        )
        self.target = target
        self.env = {**os.environ, "MCP_CATALOG_PATH": str(home / "catalog.json")}

    async def run(self, *args: str) -> tuple[int, Any, str]:
        with anyio.fail_after(120):
            done = await anyio.run_process(
                [str(INSPECTOR), "--cli", *self.target, *args], check=False, env=self.env
            )
        out = done.stdout.decode()
        return done.returncode, json.loads(out) if out.strip() else None, done.stderr.decode()

    async def call(self, tool: str, args: dict[str, Any]) -> tuple[bool, Any]:
        code, result, err = await self.run(
            "--method",
            "tools/call",
            "--tool-name",
            tool,
            "--tool-args-json",
            json.dumps(args),
        )
        assert result is not None, err
        assert (code == 0) == (not result["isError"]), (code, result)
        if result["isError"]:
            return False, json.loads(result["content"][0]["text"])
        assert json.loads(result["content"][0]["text"]) == result["structuredContent"]
        return True, result["structuredContent"]


async def _lists_and_walks(inspector: Inspector, trace: str, walks: Any) -> None:
    code, listing, err = await inspector.run("--method", "tools/list", "--strict")
    assert code == 0, err
    assert len(listing["tools"]) == len(TOOLS)
    assert {t["name"] for t in listing["tools"]} >= {"start_execution", "next_step", "read_trace"}
    assert "Warning" not in err
    walks.check(walks.hello, await walks.replay(walks.hello, trace, inspector.call))
    ok, document = await inspector.call("get_execution", {"trace_output": trace})
    assert ok and document["status"] == "complete"
    assert document["var"] == {"time_of_day": "morning", "greeting": "Good morning!"}
    ok, error = await inspector.call("submit", {"trace_output": trace, "status": "sideways"})
    assert not ok and error["error"]["argument"] == "status"


async def test_the_inspector_drives_the_stdio_server(
    root: Path, tmp_path: Path, walks: Any
) -> None:
    command = [sys.executable, "-m", "tether.cli.main", "mcp", "--root", str(root)]
    # Every Inspector call starts its own server process, so the execution lives in a file.
    await _lists_and_walks(Inspector(command, tmp_path), "inspected.json", walks)
    assert (root / "inspected.json").is_file()


async def test_the_inspector_drives_the_http_server(
    http_server: Any, tmp_path: Path, walks: Any
) -> None:
    # The HTTP server outlives each Inspector call, so the execution can live in its memory.
    await _lists_and_walks(Inspector([http_server.url], tmp_path), "memory://inspected", walks)


async def test_the_inspector_sends_the_bearer_token(
    spawn_http: Any, tmp_path: Path, walks: Any
) -> None:
    server = spawn_http("--token", "inspector-token")
    refused = Inspector([server.url], tmp_path)
    code, _, _ = await refused.run("--method", "tools/list")
    assert code != 0
    allowed = Inspector([server.url, "--header", "Authorization: Bearer inspector-token"], tmp_path)
    code, listing, err = await allowed.run("--method", "tools/list")
    assert code == 0, err
    assert len(listing["tools"]) == len(TOOLS)
