"""Parity: the same recorded walks, run through the `tether` command line and through MCP, give
the same answers (errors included) and the same final documents, once timestamps, step-token
salts and execution locations are set aside."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters

pytestmark = pytest.mark.anyio

_VOLATILE = {"ts", "created_at", "updated_at", "uri", "tree_uri"}


def cli_argv(tool: str, args: dict[str, Any]) -> list[str]:
    """The `tether` command line for one tool call."""
    trace = args["trace_output"]
    options: list[str] = []
    for name in ("note", "step"):
        if name in args:
            options += [f"--{name}", args[name]]
    path = [args["path"]] if "path" in args else []
    commands: dict[str, list[str]] = {
        "start_execution": ["start", args.get("tree_uri", ""), trace],
        "resume_execution": ["resume", trace],
        "reset_execution": ["reset", trace],
        "next_step": ["next", trace, *(["--all"] if args.get("all") else [])],
        "eval": ["eval", trace, "true" if args.get("result") else "false", *options],
        "submit": ["submit", trace, args.get("status", ""), *options],
        "think": ["think", trace, args.get("thought", "")],
        "var_read": ["var", trace, *path],
        "var_write": ["var", trace, *path, args.get("value", "")],
        "const_read": ["const", trace, *path],
        "get_execution": ["get", trace],
        "read_trace": [
            "trace",
            trace,
            *(["--from", str(args["from"])] if "from" in args else []),
            *(["--to", str(args["to"])] if "to" in args else []),
        ],
    }
    return commands[tool]


def as_cli(tool: str, args: dict[str, Any], ok: bool, answer: Any) -> Any:
    """An MCP answer in the command line's shape: structured content is always an object, so MCP
    wraps what is not one ({requests}, {path, value}, {entries})."""
    if not ok:
        return answer
    if tool == "next_step" and args.get("all"):
        return answer["requests"]
    if tool in ("var_read", "const_read"):
        return answer["value"]
    if tool == "read_trace":
        return answer["entries"]
    return answer


def normal(value: Any, places: list[str]) -> Any:
    """`value` without what differs between two runs: timestamps, locations, token salts."""
    if isinstance(value, dict):
        return {
            k: v.rsplit(":", 1)[0] if k == "step" and isinstance(v, str) else normal(v, places)
            for k, v in value.items()
            if k not in _VOLATILE
        }
    if isinstance(value, list):
        return [normal(v, places) for v in value]
    if isinstance(value, str):
        for place in places:
            value = value.replace(place, "<trace>")
    return value


async def cli_call(folder: Path, tool: str, args: dict[str, Any]) -> tuple[bool, Any]:
    done = await anyio.run_process(
        [sys.executable, "-m", "tether.cli.main", *cli_argv(tool, args)], cwd=folder, check=False
    )
    if done.returncode == 0:
        return True, json.loads(done.stdout)
    return False, json.loads(done.stderr)


async def _compare(walks: Any, walk: Any, cli_folder: Path, mcp_root: Path, agent: Any) -> None:
    for name in ("hello-world.yaml", "code-review.yaml"):
        (cli_folder / name).write_text((mcp_root / name).read_text())

    async def via_cli(tool: str, args: dict[str, Any]) -> tuple[bool, Any]:
        return await cli_call(cli_folder, tool, args)

    async def via_mcp(tool: str, args: dict[str, Any]) -> tuple[bool, Any]:
        ok, answer = await agent.result(tool, args)
        return ok, as_cli(tool, args, ok, answer)

    by_cli = await walks.replay(walk, "run.json", via_cli)
    by_mcp = await walks.replay(walk, "run.json", via_mcp)
    walks.check(walk, by_cli)
    walks.check(walk, by_mcp)
    cli_places = ["file://" + str(cli_folder / "run.json"), str(cli_folder / "run.json")]
    mcp_places = ["file://" + str(mcp_root / "run.json"), str(mcp_root / "run.json")]
    for (tool, _, _), (cli_ok, cli_answer), (mcp_ok, mcp_answer) in zip(
        walk, by_cli, by_mcp, strict=True
    ):
        assert cli_ok == mcp_ok, tool
        assert normal(cli_answer, cli_places) == normal(mcp_answer, mcp_places), tool
    cli_document = (await via_cli("get_execution", {"trace_output": "run.json"}))[1]
    mcp_document = (await via_mcp("get_execution", {"trace_output": "run.json"}))[1]
    assert normal(cli_document, cli_places) == normal(mcp_document, mcp_places)
    assert cli_document["trace"], "the documents compared are not empty"


@pytest.mark.parametrize("name", ["hello", "review"])
async def test_cli_and_in_memory_mcp_agree(
    name: str, walks: Any, tmp_path: Path, root: Path, agent: Any
) -> None:
    cli_folder = tmp_path / "cli"
    cli_folder.mkdir()
    await _compare(walks, getattr(walks, name), cli_folder, root, agent)


async def test_cli_and_stdio_mcp_agree(
    walks: Any, tmp_path: Path, root: Path, agent_for: Any
) -> None:
    cli_folder = tmp_path / "cli"
    cli_folder.mkdir()
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "tether.cli.main", "mcp", "--root", str(root)]
    )
    async with Client(params) as client:
        await _compare(walks, walks.review, cli_folder, root, agent_for(client))


def test_normalising_keeps_real_differences() -> None:
    """The comparison would notice a different answer: only the volatile parts are set aside."""
    a = {"status": "written", "value": 1, "ts": "1", "step": "0:1:0:2:aaaa"}
    b = {"status": "written", "value": 2, "ts": "2", "step": "0:1:0:2:bbbb"}
    assert normal(a, []) != normal(b, [])
    assert normal({**a, "step": "0:1:0:3:aaaa"}, []) != normal(a, [])
    assert normal(a, []) == normal({**a, "ts": "3", "step": "0:1:0:2:cccc"}, [])
