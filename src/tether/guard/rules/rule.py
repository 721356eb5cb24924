"""Rules: the 14 built-in rule definitions, their thresholds and tracking, and the compiled `Rule`.

Owns: the declarative text of the built-in rules (`BUILTIN_RULES`, module data in the same
shape a user writes under `rule_definitions`, a `Threshold` where a rule reads one), the numeric
thresholds they read (filled in by `builtin_rules`), the state tracking they need, and
`Rule`, a definition compiled for evaluation (trigger, condition, message template, source).
It does not choose which rules are active (profiles and configuration do) and does not evaluate
a session (the engine does).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from tether.guard.rules.conditions import Condition, References, compile_condition
from tether.guard.rules.messages import Template
from tether.guard.rules.triggers import Trigger

THRESHOLDS: dict[str, int] = {
    "max_blind_reads": 3,
    "changes_before_test_reminder": 3,
    "max_sequential_same_tool": 8,
}

TEST_COMMANDS = (
    r"\b(pytest|py\.test|tox|nox|unittest|npm (run )?test|yarn test|pnpm test|go test|"
    r"cargo test|mvn test|gradle test|make test|rspec|jest|vitest|phpunit|ctest)\b"
)
BASH_FILE_COMMANDS = (
    r"(^|[;&|(]|\s)(cat|head|tail|less|more|bat|sed|awk)\s|(^|[;&|(]|\s)perl\s+-\w*[pi]"
)
# A search in the shell: Claude Code 2.1 has no Grep or Glob tool and searches this way.
SHELL_SEARCH = r"(^|[;&|(]|\s)(rg|grep|egrep|fgrep|ag|ack|git\s+grep|fd)\s"
BLIND_EXPLORATION = r"\bfind\s+\.|\bls\s+-\w*R|(^|[;&|]\s*)tree\b|\bdir\s+/s\b"
UNSURE = r"\b(not sure|unsure|don'?t know|do not know|uncertain|can'?t remember|cannot remember)\b"

DEFAULT_TRACKING: dict[str, dict[str, dict[str, Any]]] = {
    "sets": {
        "read_files": {"add_on": ["read"], "target": "file_path", "aliases": ["path", "filepath"]},
        "edited_files": {
            "add_on": ["edit", "write"],
            "target": "file_path",
            "aliases": ["path", "filepath"],
        },
    },
    "counters": {
        "reads_since_search": {
            "increment_on": ["read"],
            "reset_on": ["grep", "glob", "search"],
            "reset_when": [{"tool": "bash", "param": "command", "matches": SHELL_SEARCH}],
        },
        "changes_since_test": {
            "increment_on": ["edit", "write"],
            "reset_when": [{"tool": "bash", "param": "command", "matches": TEST_COMMANDS}],
        },
    },
    "flags": {"has_web_searched": {"set_on": ["web.search", "search"]}},
}


class Threshold(str):
    """Where a built-in rule reads a threshold: its name, filled in by `builtin_rules`."""


# The 14 built-in rule definitions, in the shape a user writes under `rule_definitions`.
BUILTIN_RULES: tuple[dict[str, Any], ...] = (
    {
        "id": "read_before_edit",
        "description": "Read a file before editing it.",
        "trigger": ["edit"],
        "when": "pre_tool",
        "action": "warn",
        "condition": {
            "all": [
                {"target_not_in_set": "read_files"},
                {"target_not_in_set": "edited_files"},
            ]
        },
        "message": "You are editing '{target}' without reading it first. Read it, then edit.",
    },
    {
        "id": "read_before_write_existing",
        "description": "Read an existing file before overwriting it.",
        "trigger": ["write"],
        "when": "pre_tool",
        "action": "warn",
        "condition": {
            "target_exists_on_disk": True,
            "all": [
                {"target_not_in_set": "read_files"},
                {"target_not_in_set": "edited_files"},
            ],
        },
        "message": "'{target}' exists and you have not read it. Read it before overwriting.",
    },
    {
        "id": "search_before_read",
        "description": "Search (grep, glob) before reading many files blind.",
        "trigger": ["read"],
        "when": "pre_tool",
        "action": "warn",
        "condition": {
            "counter_gte": {"name": "reads_since_search", "value": Threshold("max_blind_reads")}
        },
        "message": "{counter:reads_since_search} reads without a search. "
        "Use grep or glob to find what you need instead of reading files one by one.",
    },
    {
        "id": "verify_after_edit",
        "description": "Re-read what you changed after an edit.",
        "trigger": ["edit"],
        "when": "post_tool",
        "action": "remind",
        "condition": {},
        "message": "Re-read the part of '{target}' you just changed to verify the edit.",
    },
    {
        "id": "test_after_changes",
        "description": "Run the tests after a few changes.",
        "trigger": ["edit", "write"],
        "when": "post_tool",
        "action": "remind",
        "condition": {
            "counter_gte": {
                "name": "changes_since_test",
                "value": Threshold("changes_before_test_reminder"),
            }
        },
        "message": "{counter:changes_since_test} changes since the tests last ran. Run them.",
    },
    {
        "id": "no_bash_for_files",
        "description": "Use the file tools, not cat/head/tail/sed/awk in the shell.",
        "trigger": ["bash"],
        "when": "pre_tool",
        "action": "warn",
        "condition": {"param_matches": {"param": "command", "pattern": BASH_FILE_COMMANDS}},
        "message": "Use the Read, Edit and Grep tools instead of shell file commands: "
        "'{param:command}'.",
    },
    {
        "id": "no_blind_exploration",
        "description": "Explore with glob and grep, not find/ls -R/tree.",
        "trigger": ["bash"],
        "when": "pre_tool",
        "action": "warn",
        "condition": {"param_matches": {"param": "command", "pattern": BLIND_EXPLORATION}},
        "message": "Blind exploration ('{param:command}'). Use glob or grep with a pattern.",
    },
    {
        "id": "confirm_destructive",
        "description": "Never run destructive commands without the user's confirmation.",
        "trigger": ["bash"],
        "when": "pre_tool",
        "action": "block",
        "condition": {"destructive_command": "command"},
        "message": "'{param:command}' is destructive. Ask the user to confirm it first.",
    },
    {
        "id": "plan_before_execute",
        "description": "Say what you are going to do before the first tool call of a turn.",
        "trigger": "*",
        "when": "pre_tool",
        "action": "warn",
        "condition": {"first_tool_this_turn": True, "no_text_before_tools": True},
        "message": "You called {tool} before saying what you plan to do. State the plan first.",
    },
    {
        "id": "web_search_when_unknown",
        "description": "Search the web when unsure instead of guessing.",
        "trigger": "*",
        "when": "on_text",
        "action": "warn",
        "condition": {
            "text_matches": UNSURE,
            "flag_is": {"name": "has_web_searched", "value": False},
        },
        "message": "You said you are unsure. Search the web before answering from memory.",
    },
    {
        "id": "delegate_complex",
        "description": "Delegate to a sub-agent when a turn grows long.",
        "trigger": "*",
        "when": "post_tool",
        "action": "remind",
        "condition": {"tool_calls_this_turn_eq": 8},
        "message": "{tool_calls_this_turn} tool calls this turn. "
        "Consider delegating the rest to a sub-agent.",
    },
    {
        "id": "delegate_large_reads",
        "description": "Delegate long reading sessions to a sub-agent.",
        "trigger": ["read"],
        "when": "post_tool",
        "action": "remind",
        "condition": {"consecutive_gte": 5},
        "message": "{consecutive_same_tool} reads in a row. "
        "Delegate large reading to a sub-agent and ask for a summary.",
    },
    {
        "id": "max_sequential_same_tool",
        "description": "Step back when calling the same tool over and over.",
        "trigger": "*",
        "when": "pre_tool",
        "action": "warn",
        "condition": {"consecutive_gte": Threshold("max_sequential_same_tool")},
        "message": "{tool} {consecutive_same_tool} times in a row. Step back and rethink.",
    },
    {
        "id": "always_lint_check",
        "description": "Fix lint errors in what you just changed.",
        "trigger": ["edit", "write"],
        "when": "post_tool",
        "action": "warn",
        "condition": {"result_has_lint_errors": True},
        "message": "'{target}' has lint errors after your change. Fix them now.",
    },
)


def builtin_rules(thresholds: dict[str, int]) -> list[dict[str, Any]]:
    """The built-in rule definitions (fresh copies), with the given thresholds filled in."""
    values = {**THRESHOLDS, **thresholds}
    return [_filled(rule, values) for rule in BUILTIN_RULES]


def _filled(value: Any, thresholds: dict[str, int]) -> Any:
    if isinstance(value, Threshold):
        return thresholds[value]
    if isinstance(value, dict):
        return {key: _filled(item, thresholds) for key, item in value.items()}
    if isinstance(value, list):
        return [_filled(item, thresholds) for item in value]
    return value


BUILTIN_IDS: tuple[str, ...] = tuple(rule["id"] for rule in BUILTIN_RULES)


class Rule(NamedTuple):
    """A rule compiled for evaluation."""

    id: str
    description: str
    trigger: Trigger
    when: str
    action: str
    condition: Condition
    message: Template
    source: str

    @classmethod
    def compile(cls, spec: dict[str, Any], refs: References) -> Rule:
        """Compile a validated definition (see `config.resolve`); `source` says where it is."""
        return cls(
            id=spec["id"],
            description=spec.get("description", ""),
            trigger=Trigger(spec.get("trigger", "*")),
            when=spec.get("when", "pre_tool"),
            action=spec.get("action", "warn"),
            condition=compile_condition(spec.get("condition") or None, refs),
            message=Template(spec.get("message", "")),
            source=spec.get("source", "builtin"),
        )
