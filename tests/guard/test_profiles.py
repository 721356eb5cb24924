"""The six built-in profiles and custom profiles in behavior/<name>.yaml."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tether.errors import TetherError
from tether.guard import Guard
from tether.guard.rules.rule import BUILTIN_IDS


def active(profile: str) -> set[str]:
    return {r.id for r in Guard.from_config({"profile": profile}).rules}


def test_dev_runs_everything_with_tight_thresholds():
    guard = Guard.from_config({"profile": "dev"})
    assert [r.id for r in guard.rules] == list(BUILTIN_IDS)
    assert guard.plan["thresholds"]["max_blind_reads"] == 2
    assert guard.plan["thresholds"]["changes_before_test_reminder"] == 2
    assert guard.plan["profile"]["autonomy"] == "medium"
    prompt = guard.system_prompt()
    assert "## Senior developer discipline" in prompt
    assert len(prompt) > 3000


def test_coding_is_dev_without_web_search_and_looser_reads():
    guard = Guard.from_config({"profile": "coding"})
    assert active("coding") == set(BUILTIN_IDS) - {"web_search_when_unknown"}
    assert guard.plan["thresholds"]["max_blind_reads"] == 3
    assert guard.plan["profile"]["autonomy"] == "high"
    assert "Senior developer discipline" not in guard.system_prompt()


def test_research_switches_off_the_editing_rules():
    guard = Guard.from_config({"profile": "research"})
    off = {"read_before_edit", "test_after_changes", "verify_after_edit", "always_lint_check"}
    assert active("research") == set(BUILTIN_IDS) - off
    assert guard.plan["thresholds"]["max_blind_reads"] == 10


def test_data_is_strict_with_web_search_and_large_reads():
    rules = active("data")
    for rule in (
        "read_before_edit",
        "test_after_changes",
        "always_lint_check",
        "web_search_when_unknown",
        "delegate_large_reads",
        "search_before_read",
    ):
        assert rule in rules
    assert Guard.from_config({"profile": "data"}).plan["profile"]["autonomy"] == "medium"


def test_creative_is_low_autonomy_and_detailed():
    guard = Guard.from_config({"profile": "creative"})
    assert {"plan_before_execute", "web_search_when_unknown"} <= active("creative")
    assert "test_after_changes" not in active("creative")
    assert guard.plan["profile"]["autonomy"] == "low"
    assert guard.plan["profile"]["verbosity"] == "detailed"
    assert "Verbosity: detailed" in guard.system_prompt()


def test_assistant_is_minimal():
    assert active("assistant") == {
        "read_before_edit",
        "read_before_write_existing",
        "confirm_destructive",
        "web_search_when_unknown",
    }


def test_rules_override_the_profile():
    guard = Guard.from_config(
        {"profile": "dev", "rules": {"plan_before_execute": False, "max_blind_reads": 1}}
    )
    assert "plan_before_execute" not in {r.id for r in guard.rules}
    s = guard.session()
    s.post_tool("Read", {"file_path": "/a"}, {})
    assert "search_before_read" in s.pre_tool("Read", {"file_path": "/b"}).rules


def custom_profile(tmp_path: Path, profile_text: str, config: str | None = None) -> str:
    (tmp_path / "behavior").mkdir()
    (tmp_path / "behavior" / "strict_dev.yaml").write_text(textwrap.dedent(profile_text))
    path = tmp_path / "guard.yaml"
    path.write_text(config or 'security:\n  behavior:\n    profile: "{{behavior.strict_dev}}"\n')
    return str(path)


STRICT_DEV = """
    name: strict_dev
    description: Ultra-strict developer discipline
    extends: dev
    rules:
      max_blind_reads: 1
      plan_before_execute: false
    prompt: |
      Run tests after EVERY change.
    custom:
      - id: protect_migrations
        trigger: edit
        when: pre_tool
        action: block
        condition:
          param_contains: { param: file_path, value: "migration" }
        message: "Migration files are protected."
"""


def test_custom_profile_extends_a_builtin(tmp_path):
    guard = Guard.from_file(custom_profile(tmp_path, STRICT_DEV))
    ids = [r.id for r in guard.rules]
    assert "plan_before_execute" not in ids
    assert ids[-1] == "protect_migrations"
    assert guard.plan["thresholds"]["max_blind_reads"] == 1
    assert guard.plan["thresholds"]["changes_before_test_reminder"] == 2
    prompt = guard.system_prompt()
    assert "## Profile: strict_dev" in prompt
    assert "Senior developer discipline" in prompt
    assert prompt.rstrip().endswith("Run tests after EVERY change.")
    d = guard.session().pre_tool("Edit", {"file_path": "/db/migration_1.py"})
    assert d.blocked
    assert guard.rules[-1].source.endswith("behavior/strict_dev.yaml:11")


def test_custom_profile_errors_point_into_the_profile_file(tmp_path):
    path = custom_profile(tmp_path, "extends: dev\nrulez: {}\n")
    with pytest.raises(TetherError) as info:
        Guard.from_file(path)
    assert info.value.details["file"].endswith("behavior/strict_dev.yaml")
    assert info.value.details["line"] == 2
    assert info.value.details["path"] == "rulez"


def test_custom_profile_extends_only_builtins(tmp_path):
    with pytest.raises(TetherError) as info:
        Guard.from_file(custom_profile(tmp_path, "extends: strict\n"))
    assert info.value.details["path"] == "extends"


def test_missing_custom_profile(tmp_path):
    path = tmp_path / "guard.yaml"
    path.write_text('profile: "{{behavior.nothing}}"\n')
    with pytest.raises(TetherError) as info:
        Guard.from_file(str(path))
    assert "custom profile file not found" in info.value.message
    assert info.value.details["line"] == 1
