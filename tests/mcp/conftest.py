"""Shared pieces of the MCP tests: a root folder with the examples, an `Agent` that drives any
MCP client (in-memory, stdio, HTTP) and checks every result's shape, and server processes."""

from __future__ import annotations

import json
import shutil
import sys
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp.client.client import Client

from support.servers import HttpServer, start_server
from tether.mcp.server import build_server
from tether.verbs import Runtime

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SERVE = [sys.executable, "-m", "tether.cli.main", "mcp"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A server root holding copies of the example trees."""
    folder = tmp_path / "root"
    folder.mkdir()
    for name in ("hello-world.yaml", "code-review.yaml"):
        shutil.copy(EXAMPLES / name, folder / name)
    return folder


@pytest.fixture
def memory_uri() -> str:
    """A fresh memory:// URI (the memory store is shared by the whole test process)."""
    return f"memory://test-{uuid.uuid4().hex}"


class Agent:
    """Drives an MCP client and checks each result: a success carries structured content equal to
    its JSON text; a failure is a tool error whose text is {"error": {"code", "message", ...}}."""

    def __init__(self, client: Client) -> None:
        self.client = client

    async def ok(self, tool: str, **args: Any) -> Any:
        result = await self.client.call_tool(tool, args)
        text = result.content[0].text  # type: ignore[union-attr]
        assert not result.is_error, text
        assert json.loads(text) == result.structured_content
        return result.structured_content

    async def fail(self, tool: str, code: str, **args: Any) -> dict[str, Any]:
        result = await self.client.call_tool(tool, args)
        text = result.content[0].text  # type: ignore[union-attr]
        assert result.is_error, text
        assert result.structured_content is None
        error = json.loads(text)["error"]
        assert error["code"] == code, error
        return error

    async def result(self, tool: str, args: dict[str, Any]) -> tuple[bool, Any]:
        """(succeeded, structured content or the error document) for one call."""
        result = await self.client.call_tool(tool, args)
        text = json.loads(result.content[0].text)  # type: ignore[union-attr]
        if result.is_error:
            return False, text
        assert text == result.structured_content
        return True, result.structured_content

    async def hello_to_done(self, trace: str) -> dict[str, Any]:
        """Walk hello-world at `trace` from the gate to done; returns the final document."""
        check_walk(HELLO_WALK, await replay(HELLO_WALK, trace, self.result))
        return await self.ok("get_execution", trace_output=trace)


# A recorded walk: (tool, arguments without trace_output, expected summary of the answer). STEP
# stands for the step token of the last request next_step returned; a summary is the request's
# name, or the answer's status, or "!" and the error code.
STEP = "<the step token of the last request>"
Walk = list[tuple[str, dict[str, Any], str]]

HELLO_WALK: Walk = [
    ("start_execution", {"tree_uri": "hello-world.yaml"}, "started"),
    ("next_step", {}, "Acknowledge_Protocol"),
    ("submit", {"status": "success", "step": STEP}, "protocol_accepted"),
    ("next_step", {}, "Determine_Time"),
    ("var_write", {"path": "time_of_day", "value": '"morning"'}, "written"),
    ("submit", {"status": "success", "step": STEP}, "action_complete"),
    ("next_step", {}, "Morning_Greeting"),
    ("eval", {"result": True, "step": STEP}, "evaluation_passed"),
    ("next_step", {}, "Morning_Greeting"),
    ("var_write", {"path": "greeting", "value": "Good morning!"}, "written"),
    ("submit", {"status": "success", "step": STEP}, "action_complete"),
    ("next_step", {}, "done"),
]


async def replay(
    walk: Walk, trace: str, call: Callable[[str, dict[str, Any]], Awaitable[tuple[bool, Any]]]
) -> list[tuple[bool, Any]]:
    """Run `walk` against `trace` through `call`; returns every (succeeded, answer)."""
    answers: list[tuple[bool, Any]] = []
    token = None
    for tool, args, _ in walk:
        sent = {"trace_output": trace, **{k: token if v is STEP else v for k, v in args.items()}}
        ok, answer = await call(tool, sent)
        if tool == "next_step" and ok and "step" in answer:
            token = answer["step"]
        answers.append((ok, answer))
    return answers


def summary(ok: bool, answer: Any) -> str:
    if not ok:
        return "!" + answer["error"]["code"]
    if isinstance(answer, dict) and ("name" in answer or "status" in answer):
        return str(answer.get("name") or answer.get("status"))
    return type(answer).__name__


def check_walk(walk: Walk, answers: list[tuple[bool, Any]]) -> None:
    assert [summary(ok, a) for ok, a in answers] == [expected for _, _, expected in walk]


REVIEW_WALK: Walk = [
    ("start_execution", {"tree_uri": "code-review.yaml"}, "started"),
    ("eval", {"result": True}, "!wrong_phase"),
    ("think", {"thought": "too early"}, "!wrong_phase"),
    ("next_step", {}, "Acknowledge_Protocol"),
    ("submit", {"status": "running", "step": STEP}, "running"),
    ("submit", {"status": "success", "step": STEP}, "protocol_accepted"),
    ("submit", {"status": "success", "step": "gate:0:0:0:00000000"}, "!stale_step"),
    ("next_step", {}, "Gather_Context"),
    ("submit", {"status": "success", "step": STEP}, "!writes_missing"),
    ("var_write", {"path": "summary", "value": "Fixes the flaky retry."}, "written"),
    ("think", {"thought": "summary written"}, "recorded"),
    ("submit", {"status": "success", "step": STEP, "note": "read the diff"}, "action_complete"),
    ("next_step", {"all": True}, "list"),
    ("next_step", {}, "Review_Style"),
    ("var_write", {"path": "findings", "value": '["typo in README"]'}, "written"),
    ("submit", {"status": "success", "step": STEP}, "action_complete"),
    ("next_step", {}, "Run_Tests"),
    ("var_write", {"path": "tests_passed", "value": "false"}, "written"),
    ("submit", {"status": "success", "step": STEP}, "action_failed"),
    ("next_step", {}, "Run_Tests"),
    ("var_write", {"path": "tests_passed", "value": "true"}, "written"),
    ("submit", {"status": "success", "step": STEP}, "action_complete"),
    ("next_step", {}, "Approve"),
    ("eval", {"result": False, "note": "not minor", "step": STEP}, "evaluation_failed"),
    ("next_step", {}, "Request_Changes"),
    ("var_write", {"path": "verdict", "value": "changes_requested"}, "written"),
    ("submit", {"status": "success", "step": STEP}, "action_complete"),
    ("next_step", {}, "done"),
    ("var_read", {"path": "findings"}, "list"),
    ("var_read", {}, "dict"),
    ("const_read", {"path": "max_findings"}, "int"),
    ("read_trace", {"from": 3, "to": 6}, "list"),
    ("read_trace", {}, "list"),
    ("get_execution", {}, "complete"),
    ("submit", {"status": "success"}, "!execution_finished"),
    ("resume_execution", {}, "complete"),
    ("reset_execution", {}, "reset"),
    ("next_step", {}, "Acknowledge_Protocol"),
    ("var_read", {"path": "nope.deeper"}, "!not_found"),
    ("var_write", {"path": "a..b", "value": "1"}, "!invalid_path"),
    ("const_read", {}, "dict"),
]


class Walks:
    """The recorded walks and how to run and check them (for the test modules)."""

    STEP = STEP
    hello = HELLO_WALK
    review = REVIEW_WALK
    replay = staticmethod(replay)
    check = staticmethod(check_walk)
    summary = staticmethod(summary)


@pytest.fixture
def walks() -> type[Walks]:
    return Walks


@pytest.fixture
async def agent(root: Path) -> AsyncIterator[Agent]:
    """An agent connected in-process (the SDK's in-memory transport) to a server rooted at
    `root`."""
    async with Client(build_server(Runtime(root=str(root)))) as client:
        yield Agent(client)


def start_http(root: Path, *extra: str, env: dict[str, str] | None = None) -> HttpServer:
    """Start `tether mcp --http` rooted at `root` and wait (bounded) for its URL."""
    return start_server([*SERVE, "--http", "--port", "0", "--root", str(root), *extra], env)


@pytest.fixture
def agent_for() -> Callable[[Client], Agent]:
    return Agent


@pytest.fixture
def spawn_http(root: Path) -> Iterator[Callable[..., HttpServer]]:
    """Starts HTTP servers rooted at `root` (extra options, extra environment); all are stopped
    at the end of the test."""
    started: list[HttpServer] = []

    def spawn(*extra: str, env: dict[str, str] | None = None) -> HttpServer:
        server = start_http(root, *extra, env=env)
        started.append(server)
        return server

    yield spawn
    for server in started:
        server.stop()


@pytest.fixture
def http_server(spawn_http: Callable[..., HttpServer]) -> HttpServer:
    return spawn_http()
