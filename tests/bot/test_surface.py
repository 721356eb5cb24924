"""The tool surface a tree yields: the names, their limits, descriptions, and trees that are not
bots."""

from __future__ import annotations

import re
from typing import Any

import pytest

from bot.botkit import EXAMPLE_TREE, action, bot, phase
from tether.bot.surface import MAX_NAME, Surface, name_budget, surface_of
from tether.errors import TetherError
from tether.tree.load import load_tree, normalise

EXAMPLE_NAMES = [
    "story_mapping_tool",
    "story_mapping_close_current_action",
    "story_mapping_restart",
    "story_mapping_shape_tool",
    "story_mapping_map_tool",
    "story_mapping_slice_tool",
    "story_mapping_shape_gather_context",
    "story_mapping_shape_identify_users",
    "story_mapping_shape_define_goal",
    "story_mapping_shape_agree_scope",
    "story_mapping_map_list_activities",
    "story_mapping_map_break_into_steps",
    "story_mapping_map_write_stories",
    "story_mapping_map_walk_the_map",
    "story_mapping_slice_set_release_goals",
    "story_mapping_slice_cut_walking_skeleton",
    "story_mapping_slice_slice_releases",
    "story_mapping_slice_record_the_plan",
    "story_mapping_glossary",
]


def _surface(data: dict[str, Any], server: str = "tether") -> Surface:
    return surface_of(normalise(data), "t.yaml", server)


def test_the_example_yields_the_documented_19_tools() -> None:
    surface = surface_of(load_tree(EXAMPLE_TREE).data)
    assert [t.name for t in surface.tools] == EXAMPLE_NAMES
    kinds = [t.kind for t in surface.tools]
    assert kinds == ["continue", "close", "restart"] + ["phase"] * 3 + ["action"] * 12 + [
        "independent"
    ]


def test_descriptions_carry_the_node_description_and_trigger_patterns() -> None:
    surface = surface_of(load_tree(EXAMPLE_TREE).data)
    by_name = {t.name: t.description for t in surface.tools}
    users = by_name["story_mapping_shape_identify_users"]
    assert "Name the kinds of people who use the product." in users
    assert users.endswith("Trigger patterns: identify users, who are the users, personas")
    assert (
        "Trigger patterns: shape the product, start a story map"
        in by_name["story_mapping_shape_tool"]
    )
    assert "Phases, in order: shape, map, slice." in by_name["story_mapping_tool"]


def test_action_records_instructions_criteria_checks_and_writes() -> None:
    surface = surface_of(load_tree(EXAMPLE_TREE).data)
    users = surface.action("shape", "identify_users")
    assert users.instructions[0].startswith("List the user roles")
    assert users.criteria == ("Every role on the list is one the user recognises.",)
    assert users.checks == ("size(VAR.users) >= 1",)
    assert users.writes == ("users",)
    assert users.path == (0, 1)


def test_names_are_lower_case_and_other_characters_become_underscores() -> None:
    surface = _surface(bot("My Bot!", phase("Shape-It", action("Gather--Context"))))
    assert [t.name for t in surface.tools][3:] == [
        "my_bot_shape_it_tool",
        "my_bot_shape_it_gather_context",
    ]


def test_long_names_are_shortened_deterministically_to_fit_64_with_the_client_prefix() -> None:
    long = "a" * 40
    data = bot("bot", phase(long, action(long + "_one"), action(long + "_two")))
    names = [t.name for t in _surface(data).tools]
    assert names == [t.name for t in _surface(data).tools]
    # Claude Code shows a tool of the server `tether` as mcp__tether__<name>: 13 characters.
    assert all(len(f"mcp__tether__{n}") <= MAX_NAME for n in names)
    assert max(len(n) for n in names) == MAX_NAME - len("mcp__tether__") == 51
    assert all(re.fullmatch(r"[a-z0-9_]+", n) for n in names)
    assert len(set(names)) == len(names)
    one, two = names[-2:]
    assert one.startswith("bot_" + "a" * 38) and two.startswith("bot_" + "a" * 38)


@pytest.mark.parametrize("server", ["t", "tether", "story-bot", "plugin_tether_tether", "x" * 33])
def test_every_name_fits_64_characters_under_the_server_name_in_use(server: str) -> None:
    long = "phase_with_a_rather_long_name"
    data = bot("a bot with a long name", phase(long, action(long + "_one"), action("b" * 70)))
    surface = _surface(data, server)
    names = [t.name for t in surface.tools]
    assert all(len(f"mcp__{server}__{n}") <= MAX_NAME for n in names)
    assert len(set(names)) == len(names)
    assert len(max(names, key=len)) == name_budget(server)


def test_a_longer_server_name_shortens_only_the_names_that_no_longer_fit() -> None:
    data = bot("bot", phase("p", action("a" * 44)))
    short = [t.name for t in _surface(data, "t").tools]
    long = [t.name for t in _surface(data, "my-story-server").tools]
    assert short[-1] == "bot_p_" + "a" * 44  # 50 characters; mcp__t__ leaves 56
    assert long[:-1] == short[:-1]
    assert long[-1] != short[-1] and long[-1].startswith("bot_p_aaa")
    assert len(long[-1]) == name_budget("my-story-server") == 64 - len("mcp__my-story-server__")


@pytest.mark.parametrize(
    ("server", "message"),
    [
        ("my server", "must be letters, digits, '_' and '-'"),
        ("", "must be letters, digits, '_' and '-'"),
        ("x" * 34, "is too long: tool names would have 23 characters left"),
    ],
)
def test_a_server_name_that_is_no_client_name_or_leaves_no_room_is_refused(
    server: str, message: str
) -> None:
    with pytest.raises(TetherError) as caught:
        _surface(bot("bot", phase("p", action("a"))), server)
    assert caught.value.code == "usage"
    assert message in caught.value.message


def test_names_that_would_collide_never_do() -> None:
    # "A-b" and "a_b" slug alike; an action named "tool" would take its phase tool's name.
    data = bot(
        "bot",
        phase("A-b", action("x")),
        phase("a_b", action("x")),
        phase("p", action("tool")),
        phase("close", action("current_action")),
    )
    surface = _surface(data)
    names = [t.name for t in surface.tools]
    assert len(set(names)) == len(names)
    assert names[:3] == ["bot_tool", "bot_close_current_action", "bot_restart"]
    assert surface.phase("A-b").tool == "bot_a_b_tool"
    assert surface.phase("a_b").tool.startswith("bot_a_b_tool_")
    assert surface.phase("p").tool == "bot_p_tool"
    assert surface.action("p", "tool").tool.startswith("bot_p_tool_")
    assert surface.action("close", "current_action").tool.startswith("bot_close_current_action_")


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            {
                "name": "t",
                "tree": {"type": "selector", "name": "R", "children": [phase("p", action("a"))]},
            },
            "t.yaml is not a bot (phases of actions): the root is a selector; it must be a "
            "sequence of phases, run in order at tree",
        ),
        (
            bot("t", action("loose")),
            "t.yaml is not a bot (phases of actions): phase 'loose' is an action; it must be a "
            "sequence of actions, run in order at tree.children[0]",
        ),
        (
            bot("t", phase("p", action("a"), phase("nested", action("b")))),
            "t.yaml is not a bot (phases of actions): 'nested' in phase 'p' is a sequence; a "
            "phase holds actions only at tree.children[0].children[1]",
        ),
        (
            bot("t", phase("p", action("a", {"check": "true"}, {"instruct": "x"}))),
            "t.yaml is not a bot (phases of actions): action 'a' opens with a check, which the "
            "runtime would judge on arrival, before any work; put checks after its instructions "
            "at tree.children[0].children[0].steps[0]",
        ),
        (
            bot("t", phase("p", action("a"), require_all=True)),
            "t.yaml is not a bot (phases of actions): phase 'p' has require_all, which holds a "
            "whole bot open and belongs on the root at tree.children[0].require_all",
        ),
    ],
    ids=[
        "root_not_a_sequence",
        "phase_is_an_action",
        "phase_holds_a_sequence",
        "leading_check",
        "require_all_on_a_phase",
    ],
)
def test_a_tree_that_is_not_phases_of_actions_is_refused(
    data: dict[str, object], message: str
) -> None:
    with pytest.raises(TetherError) as caught:
        _surface(data)
    assert caught.value.code == "invalid_tree"
    assert caught.value.message == message


def test_an_unknown_phase_or_action_names_the_ones_there_are() -> None:
    surface = surface_of(load_tree(EXAMPLE_TREE).data)
    with pytest.raises(TetherError, match="has no phase 'ship'; its phases are shape, map, slice"):
        surface.phase("ship")
    with pytest.raises(TetherError, match="phase 'map' has no action 'deploy'; its actions are"):
        surface.action("map", "deploy")


def test_require_all_is_read_from_the_root_and_told_in_the_close_tool() -> None:
    held = _surface(bot("t", phase("p", action("a")), require_all=True))
    assert held.require_all is True
    close = next(t for t in held.tools if t.name == "t_close_current_action")
    assert "t requires every action closed" in close.description
    plain = _surface(bot("t", phase("p", action("a")), require_all=False))
    assert plain.require_all is False
    assert "requires every action closed" not in plain.tools[1].description
    # Stored only when true, so trees without it keep their hash.
    assert (
        "require_all" not in normalise(bot("t", phase("p", action("a")), require_all=False))["root"]
    )


def test_require_all_must_be_true_or_false() -> None:
    with pytest.raises(TetherError) as caught:
        normalise(bot("t", phase("p", action("a")), require_all="yes"))
    assert caught.value.code == "invalid_tree"
    assert "require_all must be true or false" in caught.value.message
