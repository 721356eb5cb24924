"""Independent actions: a bot's actions outside its workflow, each a tool callable at any time
that leaves the workflow where it was; declared in a tree file (`independent:`) or a bot folder
(an action folder in the bot folder), served over MCP, recorded in the trace and replayed."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from mcp import Client

from bot.botkit import EXAMPLE_FOLDER, action, bot, phase, stdio_server
from bot.test_server import Bot
from tether.bot.folder import build_tree, render
from tether.bot.session import BotSession
from tether.bot.surface import name_budget, surface_of
from tether.errors import TetherError
from tether.tree.load import load_tree, normalise
from tether.tree.schema import json_schema
from tether.verbs import Runtime

TETHER = [sys.executable, "-m", "tether.cli.main"]
# Where the workflow stands: everything an independent call must leave as it was.
WHERE = ("phase", "action", "position", "instructions", "completed", "actions")


def _where(result: dict[str, Any]) -> dict[str, Any]:
    return {k: result.get(k) for k in WHERE}


def _fails(call: Callable[[], Any], code: str) -> TetherError:
    with pytest.raises(TetherError) as caught:
        call()
    assert caught.value.code == code, caught.value.message
    return caught.value


def _glossary_bot(**root: Any) -> dict[str, Any]:
    data = bot("shop", phase("plan", action("a"), action("b")), **root)
    data["independent"] = [
        action("lookup"),
        action(
            "record_terms",
            {"instruct": "Keep the terms at $VAR.terms.", "writes": ["terms"]},
            {"check": "size(VAR.terms) >= 1"},
        ),
    ]
    return data


# -- the tree format ------------------------------------------------------------------------------


def test_a_tree_declares_independent_actions_beside_its_workflow() -> None:
    data = normalise(_glossary_bot())
    assert [a["name"] for a in data["independent"]] == ["lookup", "record_terms"]
    assert [c["name"] for c in data["root"]["children"][0]["children"]] == ["a", "b"]
    assert "independent" not in normalise(bot("shop", phase("plan", action("a"))))


@pytest.mark.parametrize(
    ("independent", "key", "problem"),
    [
        ([phase("p", action("a"))], "independent[0]", "independent holds actions only"),
        ([action("x"), action("x")], "independent[1]", "duplicate name 'x'"),
        ([], "independent", "a non-empty list of action nodes"),
        ([{"type": "action", "name": "x"}], "independent[0]", "missing key 'steps'"),
    ],
    ids=["a_sequence", "a_name_twice", "empty", "an_action_without_steps"],
)
def test_independent_holds_distinct_actions_only(
    independent: list[Any], key: str, problem: str
) -> None:
    data = {**bot("shop", phase("plan", action("a"))), "independent": independent}
    with pytest.raises(TetherError) as caught:
        normalise(data)
    assert caught.value.code == "invalid_tree"
    assert caught.value.details["key"] == key and problem in caught.value.message


def test_the_schema_takes_independent_actions_and_only_actions() -> None:
    schema = json_schema()
    jsonschema.validate(_glossary_bot(), schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**_glossary_bot(), "independent": [phase("p", action("a"))]}, schema)


# -- the surface ----------------------------------------------------------------------------------


def test_each_independent_action_is_a_tool_named_after_the_bot_listed_last() -> None:
    surface = surface_of(normalise(_glossary_bot()))
    assert [(t.name, t.kind) for t in surface.tools][-2:] == [
        ("shop_lookup", "independent"),
        ("shop_record_terms", "independent"),
    ]
    assert [a.name for a in surface.actions] == ["a", "b"], "not part of the workflow"
    text = next(t.description for t in surface.tools if t.name == "shop_record_terms")
    assert "without moving the workflow" in text and "`close: true`" in text


def test_independent_names_never_collide_and_fit_the_budget() -> None:
    data = bot("shop", phase("plan", action("a")))
    data["independent"] = [action("plan_tool"), action("close_current_action"), action("x" * 80)]
    surface = surface_of(normalise(data), server="a_long_server_name_of_the_user")
    names = [t.name for t in surface.tools]
    assert len(set(names)) == len(names)
    assert all(len(n) <= name_budget("a_long_server_name_of_the_user") for n in names)
    independent = names[-3:]
    assert independent[0].startswith("shop_plan_tool_") and independent[0] != "shop_plan_tool"
    assert independent[1].startswith("shop_close_current")
    assert independent[1] != "shop_close_current_action"
    assert len(independent[2]) == name_budget("a_long_server_name_of_the_user")


# -- calling one ----------------------------------------------------------------------------------


@pytest.fixture
def shop(write_tree: Callable[..., Path], tmp_path: Path) -> BotSession:
    return BotSession(Runtime(), str(write_tree(_glossary_bot())), str(tmp_path / "run.json"))


def test_a_call_returns_its_instructions_and_leaves_the_workflow_where_it_was(
    shop: BotSession,
) -> None:
    shop.close()
    before = shop.resume()
    called = shop.independent("lookup", note="what is a SKU")
    assert called["status"] == "independent"
    assert called["independent"]["instructions"] == ["lookup"]
    assert _where(called) == _where(before) and (before["action"], before["completed"]) == (
        "b",
        ["plan.a"],
    )
    entry = Runtime().trace(shop.state)[-1]
    assert (entry["kind"], entry["name"], entry["outcome"], entry["note"]) == (
        "independent",
        "lookup",
        "called",
        "what is a SKU",
    )
    assert entry["cursor"] is None
    assert Runtime().verify(shop.state)["ok"]


def test_its_close_holds_it_to_its_writes_and_checks_and_writes_nothing_when_refused(
    shop: BotSession,
) -> None:
    before = shop.resume()
    entries = len(Runtime().trace(shop.state))
    _fails(lambda: shop.independent("record_terms", close=True), "writes_missing")
    failed = _fails(
        lambda: shop.independent("record_terms", close=True, values={"terms": []}),
        "check_failed",
    )
    assert "size(VAR.terms) >= 1" in failed.message
    assert Runtime().var_read(shop.state) == {} and len(Runtime().trace(shop.state)) == entries
    _fails(lambda: shop.independent("record_terms", values={"terms": ["sku"]}), "usage")
    closed = shop.independent("record_terms", close=True, values={"terms": ["sku"]})
    assert closed["status"] == "independent_closed" and _where(closed) == _where(before)
    assert Runtime().var_read(shop.state) == {"terms": ["sku"]}
    assert Runtime().verify(shop.state)["ok"], "the close's writes replay exactly"
    assert shop.close()["closed"] == {"phase": "plan", "action": "a"}


def test_an_independent_action_a_person_answers_is_not_closed_by_the_agent(
    write_tree: Callable[..., Path], tmp_path: Path
) -> None:
    data = bot("shop", phase("plan", action("a")))
    data["independent"] = [action("sign_off", {"instruct": "Ask."}, {"human": "Approved?"})]
    session = BotSession(Runtime(), str(write_tree(data)), str(tmp_path / "run.json"))
    assert session.independent("sign_off")["independent"]["instructions"] == ["Ask."]
    _fails(lambda: session.independent("sign_off", close=True), "human_only")


def test_the_workflow_never_waits_on_its_independent_actions(
    write_tree: Callable[..., Path], tmp_path: Path
) -> None:
    path = write_tree(_glossary_bot(require_all=True))
    session = BotSession(Runtime(), str(path), str(tmp_path / "run.json"))
    session.close()
    assert session.close()["status"] == "done", "require_all counts workflow actions only"
    _fails(lambda: session.independent("lookup"), "execution_finished")


def test_an_unknown_independent_action_is_refused_with_the_names(shop: BotSession) -> None:
    error = _fails(lambda: shop.independent("nope"), "invalid_value")
    assert "lookup, record_terms" in error.message


def test_restart_refuses_a_tree_without_an_independent_action_the_trace_called(
    shop: BotSession,
) -> None:
    shop.independent("lookup")
    data = _glossary_bot()
    data["independent"] = data["independent"][1:]
    Path(shop.tree).write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    error = _fails(shop.restart, "invalid_tree")
    assert "no independent action 'lookup'" in error.message


# -- bot folders ----------------------------------------------------------------------------------


def _agile_folder(root: Path) -> Path:
    """An agile_bot-style bot folder: a numbered phase holding a numbered and an unnumbered
    action, an unnumbered phase, and an independent action (an action folder at the top)."""
    files = {
        "1_shape/1_gather/instructions.md": "Gather the context.",
        "1_shape/review/instructions.md": "Review the context with the user.",
        "wrap_up/1_summarise/instructions.md": "Summarise the session.",
        "validate/instructions.md": "Check the map against the rules.",
        "validate/writes.txt": "verdict\n",
        "validate/checks.txt": "VAR.verdict == 'ok'\n",
        "validate/triggers.txt": "- validate the map\n",
    }
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def test_an_action_folder_in_the_bot_folder_is_an_independent_action(tmp_path: Path) -> None:
    data = build_tree(_agile_folder(tmp_path / "agile"))
    surface = surface_of(data)
    assert [(p.name, [a.name for a in p.actions]) for p in surface.phases] == [
        ("shape", ["gather", "review"]),
        ("wrap_up", ["summarise"]),
    ]
    (validate,) = surface.independent
    assert (validate.name, validate.writes, validate.checks) == (
        "validate",
        ("verdict",),
        ("VAR.verdict == 'ok'",),
    )
    assert validate.triggers == ("validate the map",)
    text = render(data, "agile")
    assert normalise(yaml.safe_load(text)) == data, "the built file reads back the same"


def test_an_independent_action_folder_holds_files_only(tmp_path: Path) -> None:
    root = _agile_folder(tmp_path / "agile")
    (root / "validate" / "deeper").mkdir()
    with pytest.raises(TetherError) as caught:
        build_tree(root)
    assert "deeper" in caught.value.message and "hold files only" in caught.value.message


# -- over MCP, with the official client -----------------------------------------------------------


@pytest.mark.anyio
async def test_an_agile_bot_folder_builds_and_serves_its_independent_action_over_stdio(
    tmp_path: Path,
) -> None:
    folder = _agile_folder(tmp_path / "agile")
    tree, state = tmp_path / "agile.yaml", tmp_path / "run.json"
    built = subprocess.run(
        [*TETHER, "bot", "build", str(folder), "-o", str(tree)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert built.returncode == 0, built.stderr
    assert json.loads(built.stdout)["independent"] == 1
    async with Client(stdio_server(tree, state)) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert list(tools)[-4:] == [
            "agile_shape_gather",
            "agile_shape_review",
            "agile_wrap_up_summarise",
            "agile_validate",
        ]
        validate = tools["agile_validate"]
        assert validate.input_schema["properties"]["close"]["type"] == "boolean"
        assert validate.input_schema["additionalProperties"] is False
        assert "agile_validate" in (client.instructions or "")
        bot = Bot(client)
        await bot.ok("agile_close_current_action")
        before = await bot.ok("agile_tool")
        assert (before["phase"], before["action"]) == ("shape", "review")
        called = await bot.ok("agile_validate", note="the user asked")
        assert called["independent"]["instructions"] == ["Check the map against the rules."]
        assert _where(called) == _where(before)
        refused = await bot.fail(
            "agile_validate", "check_failed", close=True, values={"verdict": "no"}
        )
        assert "VAR.verdict == 'ok'" in refused["message"]
        closed = await bot.ok("agile_validate", close=True, values={"verdict": "ok"})
        assert closed["status"] == "independent_closed" and _where(closed) == _where(before)
        assert (await bot.ok("agile_close_current_action"))["action"] == "summarise"
    verified = subprocess.run(
        [*TETHER, "verify", str(state)], capture_output=True, text=True, timeout=60
    )
    assert verified.returncode == 0, verified.stdout + verified.stderr
    kinds = [e["kind"] for e in Runtime().trace(str(state))]
    assert kinds.count("independent") == 2


@pytest.mark.anyio
async def test_the_example_s_glossary_keeps_the_story_map_where_it_was_over_stdio(
    tmp_path: Path,
) -> None:
    tree = Path(shutil.copy(EXAMPLE_FOLDER.with_suffix(".yaml"), tmp_path / "story.yaml"))
    async with Client(stdio_server(tree, tmp_path / "run.json")) as client:
        bot = Bot(client)
        before = await bot.ok("story_mapping_map_write_stories")
        looked_up = await bot.ok("story_mapping_glossary", note="what is a walking skeleton")
        assert _where(looked_up) == _where(before) and before["action"] == "write_stories"
        await bot.fail("story_mapping_glossary", "writes_missing", close=True)
        kept = await bot.ok(
            "story_mapping_glossary",
            close=True,
            values={"glossary": {"walking skeleton": "the thinnest slice end to end"}},
        )
        assert _where(kept) == _where(before)
    assert load_tree(tree).data["independent"][0]["name"] == "glossary"
