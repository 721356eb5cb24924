"""The bot server through the official MCP client: in memory, as a real stdio subprocess, and as
two HTTP servers on one state file."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import yaml
from mcp import Client
from mcp.shared.exceptions import MCPError

from bot.botkit import EXAMPLE_FOLDER, EXAMPLE_TREE, action, bot, phase, stdio_server
from bot.test_surface import EXAMPLE_NAMES
from support.locks import held_lock, wait_until_waiting
from support.servers import HttpServer, start_server
from tether.bot.session import BotSession
from tether.errors import EXIT_INVALID, EXIT_USAGE
from tether.mcp.bot import build_server
from tether.mcp.cli import main
from tether.verbs import Runtime

pytestmark = pytest.mark.anyio
SERVE = [sys.executable, "-m", "tether.cli.main", "mcp"]
_LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}


class Bot:
    """A connected client that checks every result: a success carries structured content equal
    to its JSON text; a refusal is a tool error {"error": {"code", "message", ...}}."""

    def __init__(self, client: Client) -> None:
        self.client = client

    async def ok(self, tool: str, **args: Any) -> dict[str, Any]:
        result = await self.client.call_tool(tool, args)
        text = result.content[0].text  # type: ignore[union-attr]
        assert not result.is_error, text
        assert json.loads(text) == result.structured_content
        assert result.structured_content is not None
        return result.structured_content

    async def fail(self, tool: str, code: str, **args: Any) -> dict[str, Any]:
        result = await self.client.call_tool(tool, args)
        text = result.content[0].text  # type: ignore[union-attr]
        assert result.is_error, text
        error: dict[str, Any] = json.loads(text)["error"]
        assert error["code"] == code, error
        return error


def _session(tree: Path, state: str) -> BotSession:
    return BotSession(Runtime(), str(tree), state)


async def test_the_example_lists_exactly_the_19_documented_tools(example: Path) -> None:
    async with Client(build_server(_session(example, "memory://bot-list"))) as client:
        tools = (await client.list_tools()).tools
        assert [t.name for t in tools] == EXAMPLE_NAMES
        by_name = {t.name: t for t in tools}
        close = by_name["story_mapping_close_current_action"]
        assert close.input_schema["properties"]["note"]["type"] == "string"
        assert close.input_schema["properties"]["values"]["type"] == "object"
        assert close.input_schema["required"] == []
        assert close.input_schema["additionalProperties"] is False
        assert by_name["story_mapping_tool"].input_schema["properties"] == {}
        assert by_name["story_mapping_tool"].annotations.read_only_hint is True  # type: ignore[union-attr]
        assert close.output_schema is not None
        assert close.output_schema["required"] == [
            "status",
            "message",
            "bot",
            "completed",
            "actions",
        ]
        users = by_name["story_mapping_shape_identify_users"].description or ""
        assert "Trigger patterns: identify users, who are the users, personas" in users
        assert "story_mapping_close_current_action" in (client.instructions or "")


async def test_a_chat_walk_through_every_tool(example: Path, tmp_path: Path) -> None:
    state = str(tmp_path / "run.json")
    async with Client(build_server(_session(example, state))) as client:
        bot = Bot(client)
        current = await bot.ok("story_mapping_tool")
        assert (current["phase"], current["action"]) == ("shape", "gather_context")
        assert current["completion_criteria"] and current["instructions"]

        within = await bot.ok("story_mapping_close_current_action", note="confirmed")
        assert (within["status"], within["action"]) == ("closed", "identify_users")

        refused = await bot.fail(
            "story_mapping_close_current_action", "check_failed", values={"users": []}
        )
        assert "size(VAR.users) >= 1" in refused["message"]
        assert (await bot.ok("story_mapping_tool"))["action"] == "identify_users"

        phase = await bot.ok("story_mapping_map_tool", note="user wants the map")
        assert (phase["status"], phase["phase"], phase["action"]) == (
            "jumped",
            "map",
            "list_activities",
        )
        action = await bot.ok("story_mapping_shape_agree_scope")
        assert (action["phase"], action["action"]) == ("shape", "agree_scope")
        at_phase_end = await bot.ok("story_mapping_close_current_action")
        assert (at_phase_end["phase"], at_phase_end["action"]) == ("map", "list_activities")

        back = await bot.ok("story_mapping_shape_tool")
        assert back["action"] == "identify_users", "the first unfinished action of shape"

        await bot.ok("story_mapping_slice_record_the_plan")
        done = await bot.ok(
            "story_mapping_close_current_action", values={"releases": ["first", "second"]}
        )
        assert done["status"] == "done"
        assert done["completed"] == [
            "shape.gather_context",
            "shape.agree_scope",
            "slice.record_the_plan",
        ]
        finished = await bot.fail("story_mapping_close_current_action", "execution_finished")
        assert "is complete" in finished["message"]
    trace = Runtime().trace(state)
    assert next(e["note"] for e in trace if e["kind"] == "jump") == "user wants the map"
    assert Runtime().verify(state)["ok"]


async def test_restart_reloads_the_edited_tree_file(example: Path, tmp_path: Path) -> None:
    async with Client(build_server(_session(example, str(tmp_path / "run.json")))) as client:
        bot = Bot(client)
        await bot.ok("story_mapping_tool")
        assert (await bot.ok("story_mapping_restart"))["status"] == "unchanged"
        data = yaml.safe_load(example.read_text(encoding="utf-8"))
        first = data["tree"]["children"][0]["children"][0]
        first["steps"][0]["instruct"] = "Ask what the product is."
        first["triggers"] = ["context please"]
        example.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
        restarted = await bot.ok("story_mapping_restart")
        assert restarted["status"] == "restarted"
        assert restarted["instructions"] == ["Ask what the product is."]
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert (tools["story_mapping_shape_gather_context"].description or "").endswith(
            "Trigger patterns: context please"
        )
        first["name"] = "renamed"
        example.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
        refused = await bot.fail("story_mapping_restart", "invalid_tree")
        assert "'gather_context' at [0, 0] is now action 'renamed'" in refused["message"]


async def test_bad_arguments_and_unknown_tools_say_what_is_wrong(example: Path) -> None:
    async with Client(build_server(_session(example, "memory://bot-args"))) as client:
        bot = Bot(client)
        error = await bot.fail("story_mapping_close_current_action", "usage", note=5)
        assert error["argument"] == "note" and "'note' must be a string" in error["message"]
        error = await bot.fail("story_mapping_map_tool", "usage", phase="map")
        assert "unknown argument 'phase'" in error["message"]
        with pytest.raises(MCPError, match="unknown tool 'story_mapping_ship_tool'"):
            await client.call_tool("story_mapping_ship_tool", {})


def test_main_refuses_bad_options_and_trees_before_serving(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hello = str(EXAMPLE_TREE.parent / "hello-world.yaml")
    state = str(tmp_path / "run.json")
    cases = [
        (["--bot", str(EXAMPLE_TREE)], EXIT_USAGE, "--state is required"),
        (["--bot", hello, "--state", state], EXIT_INVALID, "is not a bot (phases of actions)"),
        (["--bot", str(EXAMPLE_FOLDER), "--state", state], EXIT_USAGE, "tether bot build"),
        (
            ["--bot", str(EXAMPLE_TREE), "--state", state, "--port", "9"],
            EXIT_USAGE,
            "--port applies to --http only",
        ),
        (
            ["--bot", str(EXAMPLE_TREE), "--state", state, "--name", "n" * 40],
            EXIT_USAGE,
            "is too long: tool names would have 17 characters left",
        ),
    ]
    for argv, code, message in cases:
        assert main(argv) == code, argv
        assert message in json.loads(capsys.readouterr().err)["error"]["message"]
    assert not Path(state).exists()


# -- real processes ------------------------------------------------------------------------------


async def test_the_state_survives_a_server_restart_over_stdio(
    example: Path, tmp_path: Path
) -> None:
    state = tmp_path / "run.json"
    async with Client(stdio_server(example, state)) as client:
        assert len((await client.list_tools()).tools) == 19
        bot = Bot(client)
        await bot.ok("story_mapping_map_write_stories", note="start with stories")
        moved = await bot.ok("story_mapping_close_current_action")
        assert moved["action"] == "walk_the_map"
    async with Client(stdio_server(example, state)) as client:
        again = await Bot(client).ok("story_mapping_tool")
        assert (again["phase"], again["action"]) == ("map", "walk_the_map")
        assert again["completed"] == ["map.write_stories"]
    assert Runtime().verify(str(state))["ok"]


def _http(tree: Path, state: Path) -> HttpServer:
    return start_server(
        [*SERVE, "--bot", str(tree), "--state", str(state), "--http", "--port", "0"]
    )


@pytest.fixture
def two_servers(example: Path, tmp_path: Path) -> Iterator[tuple[HttpServer, HttpServer]]:
    state = tmp_path / "shared.json"
    first = _http(example, state)
    try:
        second = _http(example, state)
    except AssertionError:
        first.stop()
        raise
    yield first, second
    first.stop()
    second.stop()


async def test_two_http_servers_on_one_state_file_see_the_same_current_action(
    two_servers: tuple[HttpServer, HttpServer],
) -> None:
    first, second = two_servers
    assert first.url != second.url
    async with Client(first.url) as a, Client(second.url) as b:
        one, two = Bot(a), Bot(b)
        assert (await one.ok("story_mapping_tool"))["action"] == "gather_context"
        await one.ok("story_mapping_slice_slice_releases")
        seen = await two.ok("story_mapping_tool")
        assert (seen["phase"], seen["action"]) == ("slice", "slice_releases")
        await two.ok("story_mapping_close_current_action", note="closed on the second")
        after = await one.ok("story_mapping_tool")
        assert (after["action"], after["completed"]) == (
            "record_the_plan",
            ["slice.slice_releases"],
        )


async def test_an_execution_that_turns_unreadable_is_reported_not_crashed_on(
    example: Path, tmp_path: Path
) -> None:
    state = tmp_path / "bot.json"
    async with Client(build_server(_session(example, str(state)))) as client:
        bot = Bot(client)
        assert len((await client.list_tools()).tools) == 19
        state.write_text("{broken")
        with pytest.raises(MCPError, match="corrupt"):
            await client.list_tools()
        error = await bot.fail("story_mapping_tool", "corrupt_execution")
        assert "bot.json" in error["message"]


@pytest.fixture
def bot_http(example: Path, tmp_path: Path) -> Iterator[HttpServer]:
    server = _http(example, tmp_path / "run.json")
    yield server
    server.stop()


def _structured(reply: tuple[int, Any]) -> dict[str, Any]:
    status, body = reply
    assert status == 200, body
    assert not body["result"].get("isError"), body
    result: dict[str, Any] = body["result"]["structuredContent"]
    return result


def test_a_blocked_close_stalls_neither_health_nor_other_calls(
    bot_http: HttpServer, tmp_path: Path
) -> None:
    assert _structured(bot_http.call("story_mapping_tool"))["action"] == "gather_context"
    # The execution's writer lock is held here, so the server's close waits for it.
    with ThreadPoolExecutor(1) as pool, held_lock(tmp_path / "run.json") as lock:
        stuck = pool.submit(bot_http.call, "story_mapping_close_current_action", note="waited")
        wait_until_waiting(bot_http.process.pid, lock)
        assert bot_http.request("GET", "/health")[0] == 200
        assert _structured(bot_http.call("story_mapping_tool"))["action"] == "gather_context"
        assert bot_http.request("POST", body=_LIST)[0] == 200
        assert not stuck.done()
    closed = _structured(stuck.result(timeout=30))
    assert (closed["status"], closed["action"]) == ("closed", "identify_users")
    assert closed["completed"] == ["shape.gather_context"]


def test_the_bot_server_takes_post_only(bot_http: HttpServer) -> None:
    for method in ("GET", "DELETE"):
        status, headers = bot_http.head(
            method, headers={"Accept": "text/event-stream", "Content-Type": None}
        )
        assert (status, headers["allow"]) == (405, "POST"), method
    assert len(json.loads(bot_http.request("POST", body=_LIST)[2])["result"]["tools"]) == 19


async def test_require_all_keeps_the_workflow_open_until_every_action_is_closed(
    write_tree: Any, tmp_path: Path
) -> None:
    tree = write_tree(
        bot(
            "checklist",
            phase("prepare", action("gather"), action("plan")),
            phase("ship", action("release")),
            require_all=True,
        )
    )
    state = tmp_path / "checklist.json"
    async with Client(build_server(_session(tree, str(state)))) as client:
        one = Bot(client)
        await one.ok("checklist_prepare_gather")
        await one.ok("checklist_close_current_action")
        await one.ok("checklist_ship_release", note="the user wants to ship now")
        # Closing the last action with plan skipped does not finish: nothing moves.
        held = await one.ok("checklist_close_current_action", note="released")
        assert held["status"] == "incomplete"
        assert held["unclosed"] == ["prepare.plan"]
        assert (held["phase"], held["action"]) == ("ship", "release")
        assert held["actions"] == {"closed": 1, "skipped": 1, "total": 3}
        assert "prepare.plan (checklist_prepare_plan)" in held["message"]
        assert "closed" not in held
        assert Runtime().get(str(state))["status"] == "running"
        assert [e["kind"] for e in Runtime().trace(str(state))].count("close") == 1
        # Close what is left, then the last action: now the workflow is done, all closed.
        assert (await one.ok("checklist_prepare_tool"))["action"] == "plan"
        assert (await one.ok("checklist_close_current_action"))["action"] == "release"
        done = await one.ok("checklist_close_current_action")
        assert done["status"] == "done"
        assert done["actions"] == {"closed": 3, "skipped": 0, "total": 3}
        assert done["message"] == "Closed ship.release. Every phase of checklist is complete."
    assert Runtime().verify(str(state))["ok"]


async def test_a_jump_never_skips_a_human_sign_off(write_tree: Any, tmp_path: Path) -> None:
    """Jump past the sign-off, close the last action: not done, and no human entry is made up;
    once a person approves the sign-off (reached by its tool), closing the last action is."""
    tree = write_tree(
        bot(
            "release",
            phase("prepare", action("draft"), action("sign_off", {"human": "Publish $VAR.v?"})),
            phase("ship", action("publish")),
        )
    )
    state = str(tmp_path / "release.json")
    async with Client(build_server(_session(tree, state))) as client:
        one = Bot(client)
        await one.ok("release_ship_publish", note="straight to publishing")
        held = await one.ok("release_close_current_action")
        assert held["status"] == "incomplete" and held["unclosed"] == ["prepare.sign_off"]
        assert "sign-off" in held["message"] and "release_prepare_sign_off" in held["message"]
        assert Runtime().get(state)["status"] == "running"
        assert not any(e["kind"] == "human" for e in Runtime().trace(state))
        # The person approves; the last action's close now finishes the workflow.
        assert (await one.ok("release_prepare_sign_off"))["action"] == "sign_off"
        Runtime().approve(state, note="go")
        await one.ok("release_ship_publish")
        done = await one.ok("release_close_current_action")
        assert done["status"] == "done"
    assert Runtime().verify(state)["ok"]


async def test_a_close_with_60000_values_is_too_large_and_writes_none(
    write_tree: Any, tmp_path: Path
) -> None:
    tree = write_tree(bot("big", phase("only", action("one"))))
    state = str(tmp_path / "big.json")
    async with Client(build_server(_session(tree, state))) as client:
        one = Bot(client)
        await one.ok("big_tool")
        values = {f"k{i}": i for i in range(60_000)}
        error = await one.fail("big_close_current_action", "too_large", values=values)
        assert error["argument"] == "values" and "60,000 writes" in error["message"]
    assert Runtime().var_read(state) == {}
    assert not any(e["kind"] == "var_write" for e in Runtime().trace(state))
