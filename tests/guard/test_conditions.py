"""Every condition type, the composites, and condition errors, seen through a one-rule guard."""

from __future__ import annotations

import logging

import pytest

from tether.errors import TetherError
from tether.guard import Guard

FILES = {"sets": {"seen": {"add_on": ["read"], "target": "file_path"}}}


def test_target_not_in_set_and_in_set(one_rule, tmp_path):
    for cond, before, after in (("target_not_in_set", True, False), ("target_in_set", False, True)):
        s = one_rule({cond: "seen"}, tracking=FILES).session("s", cwd=str(tmp_path))
        assert (s.pre_tool("edit", {"file_path": "a.py"}).rules == ["r"]) is before
        s.post_tool("read", {"file_path": "a.py"}, {})
        assert (s.pre_tool("edit", {"file_path": "a.py"}).rules == ["r"]) is after
        # A call without any target never satisfies either condition.
        assert s.pre_tool("edit", {}).rules == []


def test_counter_gte(one_rule):
    tracking = {"counters": {"n": {"increment_on": ["read"]}}}
    s = one_rule({"counter_gte": {"name": "n", "value": 2}}, tracking=tracking).session()
    s.post_tool("read", {"file_path": "/a"})
    assert s.pre_tool("x", {}).rules == []
    s.post_tool("read", {"file_path": "/b"})
    assert s.pre_tool("x", {}).rules == ["r"]


def test_flag_is(one_rule):
    tracking = {"flags": {"backup": {"set_on": ["db.backup"], "unset_on": ["db.execute"]}}}
    g = one_rule({"flag_is": {"name": "backup", "value": False}}, tracking=tracking)
    s = g.session()
    assert s.pre_tool("db.execute", {}).rules == ["r"]
    s.post_tool("db.backup", {})
    assert s.pre_tool("db.execute", {}).rules == []
    s.post_tool("db.execute", {})
    assert s.pre_tool("db.execute", {}).rules == ["r"]


def test_param_matches_is_a_case_insensitive_search(one_rule):
    s = one_rule({"param_matches": {"param": "query", "pattern": "(update|delete)\\s"}}).session()
    assert s.pre_tool("db", {"query": "DELETE FROM t"}).rules == ["r"]
    assert s.pre_tool("db", {"query": "select 1"}).rules == []
    assert s.pre_tool("db", {}).rules == []


def test_param_contains_is_case_insensitive(one_rule):
    s = one_rule({"param_contains": {"param": "file_path", "value": "Migration"}}).session()
    assert s.pre_tool("edit", {"file_path": "db/MIGRATIONS/1.sql"}).rules == ["r"]
    assert s.pre_tool("edit", {"file_path": "db/models.py"}).rules == []


def test_param_of_a_structured_value_is_matched_as_json(one_rule):
    s = one_rule({"param_contains": {"param": "edits", "value": "secret"}}).session()
    assert s.pre_tool("edit", {"edits": [{"new_string": "SECRET=1"}]}).rules == ["r"]


def test_no_text_before_tools(one_rule):
    s = one_rule({"no_text_before_tools": True}).session()
    s.on_user_message("go")
    assert s.pre_tool("read", {}).rules == ["r"]
    s.on_text("I will read the file.")
    assert s.pre_tool("read", {}).rules == []
    s.on_user_message("again")
    assert s.pre_tool("read", {}).rules == ["r"]


def test_first_tool_this_turn_in_pre_and_post(one_rule):
    for when in ("pre_tool", "post_tool"):
        s = one_rule({"first_tool_this_turn": True}, when=when).session()
        s.on_user_message("go")
        first = s.pre_tool("a", {}) if when == "pre_tool" else s.post_tool("a", {})
        assert first.rules == ["r"]
        if when == "pre_tool":
            s.post_tool("a", {})
        second = s.pre_tool("b", {}) if when == "pre_tool" else s.post_tool("b", {})
        assert second.rules == []


def test_first_tool_false_fires_on_later_calls(one_rule):
    s = one_rule({"first_tool_this_turn": False}).session()
    assert s.pre_tool("a", {}).rules == []
    s.post_tool("a", {})
    assert s.pre_tool("a", {}).rules == ["r"]


def test_consecutive_gte_counts_the_upcoming_call(one_rule):
    s = one_rule({"consecutive_gte": 3}).session()
    for _ in range(2):
        assert s.pre_tool("read", {}).rules == []
        s.post_tool("read", {})
    assert s.pre_tool("read", {}).rules == ["r"]
    assert s.pre_tool("grep", {}).rules == []


def test_tool_calls_this_turn_eq(one_rule):
    s = one_rule({"tool_calls_this_turn_eq": 2}, when="post_tool").session()
    s.on_user_message("go")
    assert s.post_tool("a", {}).rules == []
    assert s.post_tool("b", {}).rules == ["r"]
    assert s.post_tool("c", {}).rules == []
    s.on_user_message("next")
    s.post_tool("a", {})
    assert s.post_tool("b", {}).rules == ["r"]


def test_target_exists_on_disk(one_rule, tmp_path):
    (tmp_path / "there.txt").write_text("x")
    s = one_rule({"target_exists_on_disk": True}).session(cwd=str(tmp_path))
    assert s.pre_tool("write", {"file_path": "there.txt"}).rules == ["r"]
    assert s.pre_tool("write", {"file_path": "missing.txt"}).rules == []
    s2 = one_rule({"target_exists_on_disk": False}).session(cwd=str(tmp_path))
    assert s2.pre_tool("write", {"file_path": "missing.txt"}).rules == ["r"]


def test_text_matches(one_rule):
    s = one_rule({"text_matches": "not sure"}, when="on_text").session()
    assert s.on_text("I am NOT SURE about that").rules == ["r"]
    assert s.on_text("I know this").rules == []


def test_result_has_lint_errors(one_rule):
    s = one_rule({"result_has_lint_errors": True}, when="post_tool").session()
    error = {"severity": "error", "message": "E501"}
    assert s.post_tool("edit", {}, {"lint": [error]}).rules == ["r"]
    assert s.post_tool("edit", {}, {"data": {"lint": [error]}}).rules == ["r"]
    assert s.post_tool("edit", {}, {"lint": [{"severity": "warning"}]}).rules == []
    assert s.post_tool("edit", {}, "plain text").rules == []


def test_composites_nest(one_rule):
    condition = {
        "any": [
            {
                "all": [
                    {"param_contains": {"param": "q", "value": "drop"}},
                    {"not": {"consecutive_gte": 2}},
                ]
            },
            {"param_contains": {"param": "q", "value": "truncate"}},
        ]
    }
    s = one_rule(condition).session()
    assert s.pre_tool("db", {"q": "drop table x"}).rules == ["r"]
    assert s.pre_tool("db", {"q": "truncate t"}).rules == ["r"]
    assert s.pre_tool("db", {"q": "select"}).rules == []
    s.post_tool("db", {})
    # The second db call in a row: `not consecutive_gte 2` is now false.
    assert s.pre_tool("db", {"q": "drop table x"}).rules == []


def test_several_keys_in_one_mapping_mean_all(one_rule):
    s = one_rule(
        {"param_contains": {"param": "q", "value": "a"}, "first_tool_this_turn": True}
    ).session()
    assert s.pre_tool("t", {"q": "a"}).rules == ["r"]
    assert s.pre_tool("t", {"q": "b"}).rules == []
    s.post_tool("t", {})
    assert s.pre_tool("t", {"q": "a"}).rules == []


def test_empty_condition_always_fires(one_rule):
    assert one_rule({}).session().pre_tool("anything", {}).rules == ["r"]


def test_unknown_condition_is_logged_and_never_fires(one_rule, caplog):
    with caplog.at_level(logging.WARNING, logger="tether.guard"):
        g = one_rule({"future_condition": 1})
    assert "behavior: unknown condition type: future_condition" in caplog.text
    assert g.session().pre_tool("x", {}).rules == []
    assert g.warnings[0]["path"] == "rule_definitions[0].condition.future_condition"
    # Inside a composite, the unknown leaf is false and the rest still counts.
    g2 = one_rule({"any": [{"future_condition": 1}, {"consecutive_gte": 1}]})
    assert g2.session().pre_tool("x", {}).rules == ["r"]


@pytest.mark.parametrize(
    ("condition", "path", "words"),
    [
        ({"counter_gte": {"name": "changes_since_test"}}, "condition.counter_gte", "missing field"),
        (
            {"counter_gte": {"name": "x", "value": 1}},
            "condition.counter_gte.name",
            "unknown counter",
        ),
        ({"flag_is": {"name": "nope", "value": True}}, "condition.flag_is.name", "unknown flag"),
        ({"target_in_set": "nope"}, "condition.target_in_set", "unknown set"),
        ({"consecutive_gte": -1}, "condition.consecutive_gte", "whole number"),
        ({"first_tool_this_turn": "yes"}, "condition.first_tool_this_turn", "true or false"),
        (
            {"param_matches": {"param": "q", "pattern": "("}},
            "condition.param_matches.pattern",
            "invalid regular expression",
        ),
        (
            {"param_matches": {"param": "q", "regex": "x"}},
            "condition.param_matches.regex",
            "unknown field",
        ),
        ({"all": []}, "condition.all", "non-empty list"),
        ({"not": ["x"]}, "condition.not", "mapping"),
    ],
)
def test_bad_condition_arguments_fail_with_their_path(condition, path, words):
    with pytest.raises(TetherError) as info:
        Guard.from_config({"rule_definitions": [{"id": "r", "condition": condition}]})
    assert info.value.code == "invalid_value"
    assert info.value.details["path"] == f"rule_definitions[0].{path}"
    assert words in info.value.message
