"""Patterns run on RE2: a backtracking pattern cannot hang a hook, syntax RE2 lacks is refused
where it is written, and a pattern sees a bounded prefix of a value."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tether.errors import EXIT_INVALID
from tether.guard import Guard
from tether.guard.rules.patterns import MAX_TEXT, Pattern

GUARD = [sys.executable, "-m", "tether.guard.cli"]


def write(path: Path, text: str) -> str:
    path.write_text(textwrap.dedent(text).lstrip())
    return str(path)


def test_a_catastrophic_pattern_answers_at_once_in_a_real_hook(tmp_path: Path) -> None:
    """`^(a+)+$` on 64 a's and a bang: a backtracking engine would run for longer than the age of
    the universe (the subprocess time-out would fail this test); RE2 answers straight away."""
    config = write(
        tmp_path / "guard.yaml",
        """
        rule_definitions:
          - id: evil
            trigger: bash
            action: block
            condition: {param_matches: {param: command, pattern: "^(a+)+$"}}
        """,
    )
    checked = subprocess.run(
        [*GUARD, "check", config], capture_output=True, text=True, timeout=60, check=False
    )
    assert checked.returncode == 0, checked.stderr
    for command, denied in (("a" * 64 + "!", False), ("a" * 64, True)):
        payload = {
            "session_id": "s",
            "cwd": str(tmp_path),
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": command},
        }
        done = subprocess.run(
            [*GUARD, "hook", "--config", config, "--state-dir", str(tmp_path / "state")],
            input=json.dumps(payload),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert ("deny" in done.stdout) is denied


@pytest.mark.parametrize(
    ("yaml", "path", "line", "words"),
    [
        (
            """
            rule_definitions:
              - id: echo
                condition: {param_matches: {param: command, pattern: '(\\w+) \\1'}}
            """,
            "rule_definitions[0].condition.param_matches.pattern",
            3,
            "no backreferences",
        ),
        (
            """
            rule_definitions:
              - id: text
                when: on_text
                condition:
                  text_matches: 'sure(?!ly)'
            """,
            "rule_definitions[0].condition.text_matches",
            5,
            "lookaround",
        ),
        (
            """
            custom:
              - id: legacy
                param: command
                pattern: '(?<=sudo )rm'
            """,
            "custom[0]",
            2,
            "lookaround",
        ),
        (
            """
            state_tracking:
              counters:
                c:
                  increment_on: edit
                  reset_when: {tool: bash, param: command, matches: '(?=pytest)'}
            """,
            "state_tracking.counters.c.reset_when.matches",
            5,
            "RE2",
        ),
    ],
)
def test_syntax_re2_lacks_is_a_located_check_error(
    tmp_path: Path, yaml: str, path: str, line: int, words: str
) -> None:
    config = write(tmp_path / "guard.yaml", yaml)
    done = subprocess.run(
        [*GUARD, "check", config], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == EXIT_INVALID
    error = json.loads(done.stderr)["error"]
    assert error["code"] == "invalid_value"
    assert (error["file"], error["path"], error["line"]) == (config, path, line)
    assert words in error["message"]
    assert done.stdout == ""


def test_matching_is_case_insensitive_and_unicode_aware() -> None:
    assert Pattern(r"\bdrop\s+table\b").search("psql -c 'DROP  TABLE users'")
    assert Pattern("é+").search("CAFÉÉ")
    assert not Pattern(r"\bpytest\b").search("mypytest")


def test_a_pattern_sees_the_first_max_text_characters() -> None:
    hidden = "x" * MAX_TEXT + "needle"
    assert not Pattern("needle").search(hidden)
    assert Pattern("needle").search(hidden[-MAX_TEXT:])
    guard = Guard.from_config(
        {
            "rule_definitions": [
                {
                    "id": "r",
                    "condition": {"param_matches": {"param": "q", "pattern": "x$"}},
                }
            ]
        }
    )
    # The cut is at the limit: `$` matches at its end, whatever follows.
    assert guard.session().pre_tool("t", {"q": "x" * (MAX_TEXT + 10) + "y"}).rules == ["r"]
