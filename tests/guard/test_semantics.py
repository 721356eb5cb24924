"""The pinned semantics of the guard (each row of the docs' table names its test here)."""

from __future__ import annotations

import pytest

from tether.guard import Guard
from tether.guard.rules.state import SessionState, outcome
from tether.guard.rules.triggers import Trigger, canonical


@pytest.mark.parametrize(
    ("trigger", "tool", "matches"),
    [
        ("edit", "edit", True),
        ("edit", "Edit", True),
        ("edit", "filesystem.edit", True),
        ("edit", "filesystem__edit", True),
        ("edit", "mcp__filesystem__edit", True),
        ("filesystem.edit", "edit", True),
        ("filesystem.edit", "filesystem.edit", True),
        ("filesystem.edit", "other.edit", False),
        ("edit", "MultiEdit", True),
        ("read", "Read", True),
        ("web.fetch", "WebFetch", True),
        ("web.search", "WebSearch", True),
        ("bash", "Bash", True),
        ("grep", "Grep", True),
        ("glob", "Glob", True),
        ("task", "Task", True),
        ("edit", "write", False),
        ("*", "anything", True),
        ("Edit", "filesystem.edit", True),
    ],
)
def test_trigger_matching(trigger, tool, matches):
    assert Trigger(trigger).matches(tool) is matches


def test_trigger_lists():
    assert Trigger(["edit", "write"]).matches("Write")
    assert Trigger(["*"]).matches("x")
    assert canonical("mcp__github__create_issue") == "github.create_issue"


def test_target_is_the_first_of_the_sets_param_aliases_then_defaults(one_rule):
    tracking = {"sets": {"tables": {"add_on": ["db.query"], "target": "table", "aliases": ["tbl"]}}}
    s = one_rule({"target_in_set": "tables"}, tracking=tracking).session("s", cwd="/w")
    s.post_tool("db.query", {"tbl": "users", "query": "select"}, {})
    assert s.state.sets["tables"] == {"users": None}
    s.post_tool("db.query", {"query": "select 2"}, {})
    assert "select 2" in s.state.sets["tables"]
    assert s.pre_tool("db.query", {"table": "users", "tbl": "other"}).rules == ["r"]


def test_default_target_order_and_absolute_paths(one_rule):
    g = one_rule({}, message="{target}")
    s = g.session("s", cwd="/work/project")
    assert s.pre_tool("x", {"url": "u", "file_path": "src/../a.py"}).firings[0].message == (
        "/work/project/a.py"
    )
    assert s.pre_tool("x", {"path": "/abs/b.py"}).firings[0].message == "/abs/b.py"
    assert s.pre_tool("x", {"query": "q", "pattern": "p"}).firings[0].message == "q"
    assert s.pre_tool("x", {"pattern": "p", "target": "t"}).firings[0].message == "p"
    assert s.pre_tool("x", {"target": "t"}).firings[0].message == "t"


def test_relative_and_absolute_spellings_are_the_same_file(dev, tmp_path):
    s = dev.session("s", cwd=str(tmp_path))
    s.post_tool("Read", {"file_path": str(tmp_path / "pkg" / "m.py")}, {})
    assert "read_before_edit" not in s.pre_tool("Edit", {"file_path": "pkg/./m.py"}).rules


def test_a_turn_is_one_user_message_and_steps_count_separately():
    s = Guard.from_config({}).session()
    assert (s.state.turn, s.state.step) == (0, 0)
    s.on_user_message("do it")
    s.on_text("Plan: read then edit.")
    s.post_tool("Read", {"file_path": "/a"}, {})
    s.post_tool("Edit", {"file_path": "/a"}, {})
    s.on_text("Done.")
    assert s.state.turn == 1
    assert s.state.step == 3
    assert s.state.tool_calls_this_turn == 2
    s.on_user_message("thanks")
    assert (s.state.turn, s.state.tool_calls_this_turn, s.state.total_tool_calls) == (2, 0, 2)


def test_pre_tool_rules_see_the_state_before_the_call(one_rule):
    tracking = {"counters": {"n": {"increment_on": ["read"]}}}
    s = one_rule({"counter_gte": {"name": "n", "value": 1}}, tracking=tracking).session()
    assert s.pre_tool("read", {}).rules == []
    assert s.state.counters == {}


def test_state_updates_after_the_call_before_post_rules(one_rule):
    tracking = {"counters": {"n": {"increment_on": ["read"]}}}
    s = one_rule(
        {"counter_gte": {"name": "n", "value": 1}}, when="post_tool", tracking=tracking
    ).session()
    assert s.post_tool("read", {}, {}).rules == ["r"]


def test_a_blocked_call_changes_no_state(dev):
    s = dev.session()
    s.on_user_message("clean up")
    s.on_text("Removing the build folder.")
    before = s.state.to_json()
    d = s.pre_tool("Bash", {"command": "rm -rf build"})
    assert d.blocked
    after = s.state.to_json()
    for key in ("sets", "counters", "flags", "history", "tool_calls_this_turn", "streak", "step"):
        assert after[key] == before[key]
    assert after["violations"][-1] == {"rule": "confirm_destructive", "action": "block", "turn": 1}


def test_a_failed_call_does_not_count_as_a_read(dev):
    s = dev.session()
    s.post_tool("Read", {"file_path": "/missing.py"}, error="File does not exist.")
    assert s.state.sets.get("read_files", {}) == {}
    assert s.state.counters.get("reads_since_search", 0) == 0
    assert s.state.tool_calls_this_turn == 1
    assert s.state.history[-1] == ["read", "/missing.py", False]
    assert "read_before_edit" in s.pre_tool("Edit", {"file_path": "/missing.py"}).rules


def test_a_call_of_unknown_outcome_ran_and_is_recorded_as_unknown(dev):
    """No sign either way (`ok` None): the history says so, and the call counts as one that
    ran (the file was read) where a failed one would not."""
    s = dev.session()
    s.post_tool("Read", {"file_path": "/a.py"}, "the text")
    assert s.state.history[-1] == ["read", "/a.py", None]
    assert list(s.state.sets["read_files"]) == ["/a.py"]
    s.post_tool("Read", {"file_path": "/b.py"}, {"exit_code": 0})
    s.post_tool("Read", {"file_path": "/c.py"}, "the text", ok=True)  # the caller read it
    s.post_tool("Read", {"file_path": "/d.py"}, {"is_error": True}, ok=None)
    assert [h[2] for h in s.state.history] == [None, True, True, False]
    assert "/d.py" not in s.state.sets["read_files"]


@pytest.mark.parametrize(
    ("response", "ok"),
    [
        (None, None),
        ("5 passed", None),
        ({}, None),
        ({"interrupted": False, "stdout": ""}, None),  # Claude Code's Bash: no sign by itself
        ({"exit_code": True}, None),  # a boolean is no exit code
        ({"exit_code": 0}, True),
        ({"success": True}, True),
        ({"isError": False, "content": []}, True),
        ({"exit_code": 2}, False),
        ({"returncode": 0, "exitCode": 1}, False),
        ({"success": True, "is_error": True}, False),  # a sign of failure wins
        ({"interrupted": True}, False),
        ({"error": "boom"}, False),
    ],
)
def test_a_response_says_how_a_call_went_only_by_a_sign(response, ok):
    assert outcome(response) is ok


def test_a_failed_call_runs_no_post_rules(dev):
    d = dev.session().post_tool("Edit", {"file_path": "/a"}, error="old_string not found")
    assert d.rules == []


def test_sessions_never_share_state(dev):
    a, b = dev.session("a"), dev.session("b")
    a.post_tool("Read", {"file_path": "/x"}, {})
    assert "read_before_edit" not in a.pre_tool("Edit", {"file_path": "/x"}).rules
    assert "read_before_edit" in b.pre_tool("Edit", {"file_path": "/x"}).rules
    assert dev.session("a") is a
    dev.end_session("a")
    assert dev.session("a") is not a


def test_state_is_the_fold_of_the_event_log(dev):
    s = dev.session()
    s.on_user_message("go")
    s.on_text("Reading.")
    s.post_tool("Read", {"file_path": "/a"}, {})
    s.pre_tool("Bash", {"command": "git reset --hard"})
    s.post_tool("Edit", {"file_path": "/a"}, {})
    s.post_tool("Bash", {"command": "pytest"}, {})
    assert SessionState.replay(s.events) == s.state
    assert SessionState.from_json(s.state.to_json()) == s.state


def test_explanation_names_rule_source_and_values(tmp_path):
    path = tmp_path / "g.yaml"
    path.write_text(
        "rule_definitions:\n"
        "  - id: no_select_star\n"
        "    trigger: database.query\n"
        "    condition:\n"
        "      all:\n"
        "        - param_matches: {param: query, pattern: 'SELECT\\s+\\*'}\n"
        "        - not: {first_tool_this_turn: true}\n"
    )
    s = Guard.from_file(str(path)).session()
    s.post_tool("database.query", {"query": "select 1"}, {})
    d = s.pre_tool("database.query", {"query": "SELECT * FROM t"})
    explanation = d.firings[0].explanation
    assert explanation["source"] == f"{path}:2"
    assert explanation["condition"] == {
        "all": [
            {
                "condition": "param_matches",
                "args": {"param": "query", "pattern": "SELECT\\s+\\*"},
                "saw": "SELECT * FROM t",
                "result": True,
            },
            {
                "not": {
                    "condition": "first_tool_this_turn",
                    "args": True,
                    "saw": 2,
                    "result": False,
                },
                "result": True,
            },
        ],
        "result": True,
    }


def test_explain_lists_the_rules_that_did_not_fire(dev):
    d = dev.session().pre_tool("Bash", {"command": "ls"}, explain=True)
    quiet = {e["rule"] for e in d.evaluated}
    assert {"confirm_destructive", "no_bash_for_files", "no_blind_exploration"} <= quiet
    assert all(e["fired"] is False for e in d.evaluated)


def test_system_prompt_lists_rules_and_profile_prompt():
    guard = Guard.from_config(
        {
            "profile": "assistant",
            "rule_definitions": [{"id": "x", "description": "Never touch prod.", "message": "m"}],
        }
    )
    prompt = guard.session().system_prompt()
    assert "- Never touch prod. (x, warn)" in prompt
    assert "- Read a file before editing it. (read_before_edit, warn)" in prompt
    assert "## Profile: assistant" in prompt


def test_a_new_turn_resets_counts_text_and_streak():
    s = Guard.from_config({}).session()
    s.on_user_message("one")
    s.on_text("Reading.")
    s.post_tool("Read", {"file_path": "/a"}, {})
    s.post_tool("Read", {"file_path": "/b"}, {})
    assert (s.state.tool_calls_this_turn, s.state.streak, s.state.text_this_turn) == (2, 2, True)
    s.on_user_message("two")
    assert (s.state.tool_calls_this_turn, s.state.streak, s.state.text_this_turn) == (0, 0, False)
    assert s.state.sets["read_files"] == {"/a": None, "/b": None}
