"""Message placeholders and the prefixes of injected texts."""

from __future__ import annotations

from tether.guard import Guard

TRACKING = {
    "sets": {"seen": {"add_on": ["read"], "target": "file_path"}},
    "counters": {"n": {"increment_on": ["read"]}},
    "flags": {"f": {"set_on": ["read"]}},
}


def render(one_rule, message: str, **kw) -> str:
    guard = one_rule({}, message=message, tracking=TRACKING, **kw)
    s = guard.session("s", cwd="/work")
    s.on_user_message("hello")
    s.post_tool("read", {"file_path": "a.py"}, {})
    s.post_tool("read", {"file_path": "b.py"}, {})
    return s.pre_tool("mcp__fs__read", {"file_path": "c.py", "q": "x" * 150}).firings[0].message


def test_simple_placeholders(one_rule):
    message = "{target}|{tool}|{turn}|{tool_calls_this_turn}|{consecutive_same_tool}"
    assert render(one_rule, message) == "/work/c.py|read|1|3|1"


def test_named_placeholders(one_rule):
    message = "{counter:n}|{set_count:seen}|{flag:f}|{param:file_path}"
    assert render(one_rule, message) == "2|2|True|c.py"


def test_param_is_cut_at_100_characters(one_rule):
    assert render(one_rule, "{param:q}") == "x" * 100


def test_missing_values_render_empty_or_zero(one_rule):
    guard = one_rule({}, message="[{param:none}][{target}]", tracking=TRACKING)
    assert guard.session().pre_tool("x", {}).firings[0].message == "[][]"


def test_literal_braces(one_rule):
    assert render(one_rule, "{{not a placeholder}} {tool}") == "{not a placeholder} read"


def test_prefixes_and_rule_names(one_rule):
    for action, prefix in (
        ("block", "[BEHAVIOR BLOCKED] r: "),
        ("warn", "[BEHAVIOR WARNING] r: "),
        ("remind", "[BEHAVIOR REMINDER] r: "),
    ):
        d = one_rule({}, action=action, message="m").session().pre_tool("x", {})
        assert d.text == prefix + "m"
        assert d.action == action


def test_several_rules_join_in_rule_order():
    guard = Guard.from_config(
        {
            "rule_definitions": [
                {"id": "a", "action": "warn", "message": "one"},
                {"id": "b", "action": "block", "message": "two"},
            ]
        }
    )
    d = guard.session().pre_tool("x", {})
    assert d.action == "block"
    assert d.text == "[BEHAVIOR WARNING] a: one\n\n[BEHAVIOR BLOCKED] b: two"
