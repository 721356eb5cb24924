"""Loading configuration: where the block lives, strictness, defaults, and located errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tether.errors import TetherError
from tether.guard import Guard


def write(tmp_path: Path, text: str, name: str = "guard.yaml") -> str:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip())
    return str(path)


def error_of(path: str) -> TetherError:
    with pytest.raises(TetherError) as info:
        Guard.from_file(path)
    return info.value


def test_block_under_security_behavior_or_at_the_root(tmp_path):
    nested = write(tmp_path, "security:\n  behavior:\n    profile: coding\n", "a.yaml")
    root = write(tmp_path, "profile: coding\n", "b.yaml")
    a, b = Guard.from_file(nested).plan, Guard.from_file(root).plan
    assert (a.pop("files"), b.pop("files")) == ([nested], [root])
    assert a == b


def test_defaults_of_the_reference(tmp_path):
    guard = Guard.from_file(write(tmp_path, "security:\n  behavior: {}\n"))
    plan = guard.plan
    assert plan["profile"] is None
    assert plan["rules"] == []
    assert plan["classify_turns"] is False
    assert plan["use_agent_brain"] is True
    assert plan["brain"] is None
    assert plan["thresholds"] == {
        "max_blind_reads": 3,
        "changes_before_test_reminder": 3,
        "max_sequential_same_tool": 8,
    }
    classifier = plan["classifier"]
    assert classifier["frequency"] == "every_turn"
    assert classifier["skip_followups"] is True
    assert classifier["timeout"] == 15
    assert classifier["max_directives"] == 5
    assert classifier["high_risk_threshold"] == "medium"
    assert classifier["risk_levels"] == ["none", "low", "medium", "high"]


def test_unknown_key_reports_file_line_and_path(tmp_path):
    path = write(
        tmp_path,
        """
        security:
          behavior:
            profile: dev
            rule_definitions:
              - id: r
                trigger: edit
                whn: pre_tool
        """,
    )
    err = error_of(path)
    assert err.code == "invalid_value"
    assert err.details["file"] == path
    assert err.details["line"] == 7
    assert err.details["path"] == "security.behavior.rule_definitions[0].whn"
    assert f"{path}:7: security.behavior.rule_definitions[0].whn: unknown key 'whn'" in err.message


def test_bad_enum_value_is_located(tmp_path):
    path = write(tmp_path, "rule_definitions:\n  - id: r\n    action: deny\n")
    err = error_of(path)
    assert err.details["line"] == 3
    assert err.details["path"] == "rule_definitions[0].action"
    assert "'block', 'warn' or 'remind'" in err.message


def test_every_error_is_listed(tmp_path):
    path = write(tmp_path, "profile: dev\nclassify_turn: true\nrule_definition: []\n")
    err = error_of(path)
    paths = [e["path"] for e in err.details["errors"]]
    assert paths == ["classify_turn", "rule_definition"]
    assert "(and 1 more)" in err.message


def test_unknown_rule_toggle_is_an_error(tmp_path):
    err = error_of(write(tmp_path, "profile: dev\nrules:\n  max_blind_read: 2\n"))
    assert err.details["path"] == "rules.max_blind_read"
    assert err.details["line"] == 3
    assert "unknown rule or threshold" in err.message


def test_toggle_and_threshold_types(tmp_path):
    err = error_of(write(tmp_path, "rules:\n  read_before_edit: 3\n"))
    assert "read_before_edit is a rule: true or false" in err.message
    err = error_of(write(tmp_path, "rules:\n  max_blind_reads: true\n", "b.yaml"))
    assert "takes a whole number" in err.message


def test_counter_without_increment_on_is_an_error(tmp_path):
    path = write(
        tmp_path,
        """
        state_tracking:
          counters:
            stuck:
              reset_on: [grep]
        """,
    )
    err = error_of(path)
    assert err.details["path"] == "state_tracking.counters.stuck.increment_on"
    assert err.details["line"] == 3
    assert "a counter that never changes" in err.message


def test_flag_without_set_on_is_an_error(tmp_path):
    err = error_of(write(tmp_path, "state_tracking:\n  flags:\n    f:\n      unset_on: [x]\n"))
    assert err.details["path"] == "state_tracking.flags.f.set_on"
    assert "a flag that never changes" in err.message
    err = error_of(
        write(tmp_path, "state_tracking:\n  flags:\n    f:\n      set_on: []\n", "b.yaml")
    )
    assert err.details["path"] == "state_tracking.flags.f.set_on"


def test_bad_regex_in_reset_when(tmp_path):
    path = write(
        tmp_path,
        """
        state_tracking:
          counters:
            c:
              increment_on: edit
              reset_when: {tool: bash, param: command, matches: "(pytest"}
        """,
    )
    err = error_of(path)
    assert err.details["path"] == "state_tracking.counters.c.reset_when.matches"
    assert err.details["line"] == 5
    assert "invalid regular expression" in err.message


def test_user_tracking_merges_with_the_defaults():
    guard = Guard.from_config(
        {
            "profile": "dev",
            "state_tracking": {
                "counters": {"queries": {"increment_on": "db.query, db.execute"}},
                "sets": {"read_files": {"add_on": ["read", "cat"], "target": "file_path"}},
            },
        }
    )
    tracking = guard.plan["tracking"]
    assert set(tracking["counters"]) == {"reads_since_search", "changes_since_test", "queries"}
    assert tracking["counters"]["queries"]["increment_on"] == ["db.query", "db.execute"]
    assert tracking["sets"]["read_files"]["add_on"] == ["read", "cat"]
    assert "has_web_searched" in tracking["flags"]
    s = guard.session()
    assert "read_before_edit" in s.pre_tool("edit", {"file_path": "/a"}).rules
    s.post_tool("cat", {"file_path": "/a"})
    assert "read_before_edit" not in s.pre_tool("edit", {"file_path": "/a"}).rules


def test_rule_definitions_override_a_builtin_in_place():
    guard = Guard.from_config(
        {
            "profile": "dev",
            "rule_definitions": [
                {
                    "id": "confirm_destructive",
                    "trigger": "bash",
                    "action": "warn",
                    "condition": {"param_contains": {"param": "command", "value": "rm "}},
                    "message": "careful",
                },
            ],
        }
    )
    ids = [r.id for r in guard.rules]
    assert ids.index("confirm_destructive") == 7
    assert ids.count("confirm_destructive") == 1
    d = guard.session().pre_tool("Bash", {"command": "rm -rf x"})
    assert "confirm_destructive" in d.rules
    assert not d.blocked
    assert guard.rules[7].source == "<config>:rule_definitions[0]"


def test_a_definition_wins_over_a_false_toggle():
    guard = Guard.from_config(
        {
            "rules": {"read_before_edit": False},
            "rule_definitions": [{"id": "read_before_edit", "trigger": "edit", "message": "m"}],
        }
    )
    assert [r.id for r in guard.rules] == ["read_before_edit"]


def test_duplicate_rule_ids_are_an_error(tmp_path):
    path = write(tmp_path, "rule_definitions:\n  - id: a\n  - id: a\n")
    err = error_of(path)
    assert err.details["path"] == "rule_definitions[1].id"
    assert err.details["line"] == 3


def test_legacy_custom_rules_are_converted():
    guard = Guard.from_config(
        {
            "custom": [
                {
                    "id": "no_env",
                    "tool": "write",
                    "param": "file_path",
                    "pattern": r"\.env$",
                    "action": "block",
                    "message": "no {param:file_path}",
                },
            ]
        }
    )
    rule = guard.plan["rules"][0]
    assert rule["trigger"] == "write"
    assert rule["condition"] == {"param_matches": {"param": "file_path", "pattern": r"\.env$"}}
    d = guard.session().pre_tool("Write", {"file_path": "/p/.env"})
    assert d.blocked and d.firings[0].message == "no /p/.env"


def test_legacy_param_without_pattern_is_an_error():
    with pytest.raises(TetherError) as info:
        Guard.from_config({"custom": [{"id": "x", "param": "file_path"}]})
    assert "param and pattern go together" in info.value.message
    assert info.value.details["path"] == "custom[0]"


def test_unknown_profile(tmp_path):
    err = error_of(write(tmp_path, "security:\n  behavior:\n    profile: strict\n"))
    assert err.details["path"] == "security.behavior.profile"
    assert err.details["line"] == 3
    assert "{{behavior.<name>}}" in err.message


def test_invalid_yaml_names_the_line_and_where_the_bracket_opened(tmp_path):
    path = write(tmp_path, "profile: dev\nrules: [secret-value,\n")
    err = error_of(path)
    assert err.code == "invalid_value"
    assert err.message == (
        f"invalid guard configuration: {path}:3:1: malformed YAML: did not find expected node "
        "content (the flow sequence opened at line 2, column 8 was never closed)"
    )
    assert (err.details["line"], err.details["column"]) == (3, 1)
    assert (err.details["context_line"], err.details["context_column"]) == (2, 8)
    assert "secret-value" not in err.message


BOMB = "a: &a [x,x,x,x,x,x,x,x,x]\n" + "".join(
    f"{b}: &{b} [{', '.join([f'*{a}'] * 9)}]\n" for a, b in zip("abcdefgh", "bcdefghi", strict=True)
)


def guard_check(path: str) -> tuple[int, dict]:
    """`tether guard check` in a fresh process: its exit code and the error it printed."""
    done = subprocess.run(
        [sys.executable, "-m", "tether.cli.main", "guard", "check", path],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.stdout == ""
    return done.returncode, json.loads(done.stderr)["error"]


@pytest.mark.parametrize(
    ("text", "position", "words"),
    [
        (
            "profile: dev\n" + BOMB,
            (2, 4),
            "YAML anchors and aliases (&name, *name) are not allowed",
        ),
        ("base: {profile: dev}\nsecurity:\n  <<: {behavior: {}}\n", (3, 3), "merge keys (<<)"),
        ("profile: !!python/object:os.system dev\n", (1, 10), "YAML tags are not allowed"),
        ("rules: " + "[" * 600 + "]" * 600 + "\n", (1, 107), "nested more than 100 levels deep"),
    ],
    ids=["alias_bomb", "merge_key", "tag", "deep"],
)
def test_yaml_that_expands_or_nests_is_refused_with_its_line(tmp_path, text, position, words):
    code, err = guard_check(write(tmp_path, text))
    assert (code, err["code"]) == (3, "invalid_value")
    assert (err["line"], err["column"]) == position
    assert words in err["message"]


def test_a_fifo_is_refused_without_blocking(tmp_path):
    os.mkfifo(tmp_path / "guard.yaml")
    code, err = guard_check(str(tmp_path / "guard.yaml"))
    assert (code, err["code"]) == (3, "invalid_value")
    assert err["message"].endswith("guard.yaml: not a regular file (a FIFO)")


def test_missing_file():
    with pytest.raises(TetherError) as info:
        Guard.from_file("does-not-exist.yaml")
    assert info.value.code == "not_found"


def test_root_must_be_a_mapping(tmp_path):
    err = error_of(write(tmp_path, "- profile\n"))
    assert "must be a mapping" in err.message


def test_unknown_placeholder_in_a_message(tmp_path):
    path = write(tmp_path, "rule_definitions:\n  - id: r\n    message: 'see {file}'\n")
    err = error_of(path)
    assert err.details["path"] == "rule_definitions[0].message"
    assert "unknown placeholder {file}" in err.message


def test_message_naming_an_untracked_counter(tmp_path):
    path = write(tmp_path, "rule_definitions:\n  - id: r\n    message: '{counter:nope}'\n")
    assert "unknown counter 'nope'" in error_of(path).message


def test_classifier_threshold_must_be_a_risk_level(tmp_path):
    path = write(
        tmp_path,
        """
        classifier:
          risk_levels: [safe, risky]
          high_risk_threshold: medium
        """,
    )
    err = error_of(path)
    assert err.details["path"] == "classifier"
    assert "not one of the risk_levels (safe, risky)" in err.message


def test_classifier_template_placeholders(tmp_path):
    err = error_of(write(tmp_path, "classifier:\n  directive_prefix: '[{level}]'\n"))
    assert err.details["path"] == "classifier.directive_prefix"
    assert "unknown placeholder {level}" in err.message


def test_brain_needs_an_endpoint(tmp_path):
    err = error_of(write(tmp_path, "brain: {provider: acme, model: m}\n"))
    assert "has no known endpoint" in err.message


def test_brain_backend_is_openai_compat(tmp_path):
    err = error_of(write(tmp_path, "brain: {provider: openai, model: m, backend: grpc}\n"))
    assert err.details["path"] == "brain.backend"


@pytest.mark.parametrize(
    ("text", "path", "words"),
    [
        ("rule_definitions:\n  - id: 'has space'\n", "rule_definitions[0].id", "should match"),
        ("classifier:\n  approaches: [a, b, a]\n", "classifier.approaches", "duplicate entries: a"),
        ("classifier:\n  risk_levels: []\n", "classifier.risk_levels", "at least one entry"),
        ("classifier:\n  timeout: 0\n", "classifier.timeout", "greater than 0"),
        ("classifier:\n  frequency: hourly\n", "classifier.frequency", "every_turn"),
        (
            "classifier:\n  context: {history_depth: -1}\n",
            "classifier.context.history_depth",
            "greater than or equal to 0",
        ),
        ("classifier:\n  approaches: [{label: x}]\n", "classifier.approaches[0].name", "required"),
        (
            "brain: {provider: openai, model: m, config: {api_key: '{{env.KEY}}'}}\n",
            "brain",
            "{{secret.NAME}}",
        ),
        ("brain: {provider: openai}\n", "brain.model", "Field required"),
        (
            "state_tracking:\n  sets:\n    s: {add_on: [read], targt: x}\n",
            "state_tracking.sets.s.targt",
            "unknown key",
        ),
        ("use_agent_brain: maybe\n", "use_agent_brain", "valid boolean"),
    ],
)
def test_validators(tmp_path, text, path, words):
    err = error_of(write(tmp_path, text))
    assert err.details["path"] == path
    assert words in err.message


def test_cached_plan_follows_edits_and_skips_yaml_pydantic_and_re2(tmp_path):
    config = write(tmp_path, "profile: assistant\n")
    cache = str(tmp_path / "cache")
    assert len(Guard.from_file(config, cache_dir=cache).rules) == 4
    probe = (
        "import sys; from tether.guard.rules.ruleset import Guard; "
        f"g = Guard.from_file({config!r}, cache_dir={cache!r}); "
        "print(len(g.rules), *(m in sys.modules for m in ('pydantic', 'yaml', 're2')))"
    )
    run = [sys.executable, "-c", probe]
    assert subprocess.run(run, capture_output=True, text=True, check=True).stdout.split() == [
        "4",
        "False",
        "False",
        "False",
    ]
    Path(config).write_text("profile: dev\n")
    assert len(Guard.from_file(config, cache_dir=cache).rules) == 14
