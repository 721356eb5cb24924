"""Every answer's `next` is exactly what `tether next` returns at that moment, on every interface:
the command line, the MCP runtime tools and the bot tools, over trees that end in success, in
failure (a root that fails) and at a human step (approved, or rejected)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from mcp.client.client import Client

from bot.botkit import action, bot, phase
from support.person import at_terminal
from tether.bot.session import BotSession
from tether.mcp.bot import build_server as build_bot_server
from tether.mcp.server import build_server
from tether.verbs import Runtime

pytestmark = pytest.mark.anyio

TREES = {
    # the root action fails on a false evaluate: `next` was {"status": "failure", "message": ...}
    "abort": {
        "name": "abort",
        "tree": {"type": "action", "name": "Abort", "steps": [{"evaluate": "Is it safe?"}]},
    },
    "ship": {
        "name": "ship",
        "tree": {
            "type": "sequence",
            "name": "Ship",
            "children": [
                {"type": "action", "name": "Check", "steps": [{"evaluate": "Ready?"}]},
                {
                    "type": "action",
                    "name": "Build",
                    "steps": [{"instruct": "Build it."}, {"instruct": "Tag it."}],
                },
            ],
        },
    },
    "gated": {
        "name": "gated",
        "tree": {
            "type": "action",
            "name": "Sign_Off",
            "steps": [{"instruct": "Write the notes."}, {"human": "Publish?"}],
        },
    },
}
# The answers an agent gives to each request, by request name (the gate is accepted first).
ANSWERS = {"Is it safe?": False, "Ready?": True}


def tether(folder: Path, *args: str) -> Any:
    done = subprocess.run(
        [sys.executable, "-m", "tether.cli.main", *args],
        cwd=folder,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def person(folder: Path, verb: str, *args: str) -> Any:
    """A person's `tether approve|reject` at a terminal of its own, typing the code it shows."""
    done = at_terminal([verb, str(folder / "run.json"), *args])
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    for name, data in TREES.items():
        (tmp_path / f"{name}.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    return tmp_path


def _answer(request: dict[str, Any]) -> tuple[str, str]:
    """The verb and the answer an agent gives `request`."""
    if request["type"] == "evaluate":
        return "eval", "true" if ANSWERS[request["expression"]] else "false"
    return "submit", "success"


@pytest.mark.parametrize(
    ("name", "person_says", "last"),
    [
        ("abort", None, {"status": "failure"}),
        ("ship", None, {"status": "done"}),
        ("gated", "approve", {"status": "done"}),
        ("gated", "reject", {"status": "failure"}),
    ],
)
def test_each_answer_of_the_command_line_carries_what_next_returns(
    folder: Path, name: str, person_says: str | None, last: dict[str, str]
) -> None:
    tether(folder, "start", f"{name}.yaml", "run.json")
    request = tether(folder, "next", "run.json")
    answered = 0
    while "status" not in request:
        if request["type"] == "human":
            verb = str(person_says)
            out = person(folder, verb, "--step", request["step"])
        else:
            verb, answer = _answer(request)
            out = tether(folder, verb, "run.json", answer, "--step", request["step"])
        request = tether(folder, "next", "run.json")
        assert out["next"] == request, (verb, out)
        answered += 1
    assert tether(folder, "next", "run.json", "--all") == [request]
    assert request == last and answered >= 2


@pytest.mark.parametrize("name", ["abort", "ship", "gated"])
async def test_each_answer_of_the_mcp_tools_carries_what_next_step_returns(
    folder: Path, name: str
) -> None:
    async with Client(build_server(Runtime(root=str(folder)))) as client:

        async def call(tool: str, **args: Any) -> Any:
            result = await client.call_tool(tool, {"trace_output": "run.json", **args})
            assert not result.is_error, result.content
            return result.structured_content

        await call("start_execution", tree_uri=f"{name}.yaml")
        request = await call("next_step")
        while "status" not in request and request["type"] != "human":
            verb, answer = _answer(request)
            value = {"result": answer == "true"} if verb == "eval" else {"status": answer}
            out = await call(verb, step=request["step"], **value)
            request = await call("next_step")
            assert out["next"] == request == tether(folder, "next", "run.json"), out
        if request.get("type") == "human":  # a person answers, from the command line
            out = person(folder, "reject", "--step", request["step"])
            request = await call("next_step")
            assert out["next"] == request == {"status": "failure"}
        assert request in ({"status": "done"}, {"status": "failure"})


async def test_each_close_of_the_bot_tools_carries_what_next_returns(
    folder: Path, write_tree: Callable[..., Path]
) -> None:
    tree = write_tree(
        bot(
            "plan",
            phase("shape", action("gather"), action("agree")),
            phase("ship", action("publish")),
        )
    )
    state = str(folder / "bot.json")
    async with Client(build_bot_server(BotSession(Runtime(), str(tree), state))) as client:
        await client.call_tool("plan_tool", {})
        closes = 0
        while True:
            result = await client.call_tool("plan_close_current_action", {})
            if result.is_error:
                text = result.content[0].text  # type: ignore[union-attr]
                assert json.loads(text)["error"]["code"] == "execution_finished"
                break
            out = result.structured_content
            assert out is not None
            assert out["next"] == Runtime().next(state) == tether(folder, "next", state), out
            closes += 1
    assert closes == 3 and Runtime().next(state) == {"status": "done"}


@pytest.fixture
def write_tree(folder: Path) -> Callable[..., Path]:
    def write(data: dict[str, Any]) -> Path:
        path = folder / "plan.yaml"
        path.write_text(yaml.safe_dump(data, sort_keys=False))
        return path

    return write
