"""`tether guard` commands: check, prompt, install claude, replay, test, and their errors."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tether.guard.cli import main

DATA = Path(__file__).parent / "data"


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict, dict]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, json.loads(out) if out else {}, json.loads(err) if err else {}


def write(path: Path, text: str) -> str:
    path.write_text(textwrap.dedent(text).lstrip())
    return str(path)


def test_check_lists_rules_and_reports_unknown_conditions(tmp_path, capsys):
    config = write(
        tmp_path / "g.yaml",
        """
        profile: assistant
        rule_definitions:
          - id: future
            condition: {moon_phase: full}
        """,
    )
    code, out, _ = cli(capsys, "check", config)
    assert code == 0
    assert out["profile"] == "assistant"
    assert [r["id"] for r in out["rules"]] == [
        "read_before_edit",
        "read_before_write_existing",
        "confirm_destructive",
        "web_search_when_unknown",
        "future",
    ]
    assert out["rules"][-1]["source"] == f"{config}:3"
    assert out["warnings"] == [
        {
            "file": config,
            "line": 4,
            "path": "rule_definitions[0].condition.moon_phase",
            "message": "unknown condition type 'moon_phase'",
        }
    ]


def test_check_warns_about_a_classifier_without_brain(tmp_path, capsys):
    config = write(tmp_path / "g.yaml", "profile: dev\nclassify_turns: true\n")
    _, out, _ = cli(capsys, "check", config)
    assert out["classifier"] is False
    assert out["warnings"][0]["path"] == "classify_turns"
    assert "no brain is configured" in out["warnings"][0]["message"]


@pytest.mark.parametrize(("cap", "warned"), [(3, False), (8, False), (9, True), (50, True)])
def test_check_warns_when_max_stop_blocks_passes_claude_codes_own_cap(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], cap: int, warned: bool
) -> None:
    config = write(tmp_path / "g.yaml", f"workflow:\n  max_stop_blocks: {cap}\n")
    code, out, _ = cli(capsys, "check", config)
    assert code == 0 and out["workflow"]["max_stop_blocks"] == cap
    found = [
        w
        for w in out["warnings"]
        if w["path"] == "workflow.max_stop_blocks" and "Claude Code" in w["message"]
    ]
    assert bool(found) is warned
    if warned:
        assert "at the 9th stop blocked in a row" in found[0]["message"]
        assert "keep it at 8 or less" in found[0]["message"]
        assert "CLAUDE_CODE_STOP_HOOK_BLOCK_CAP" in found[0]["message"]


@pytest.mark.parametrize(
    ("cap", "named"), [(7, ""), (8, "Qwen Code at the 8th"), (9, "Copilot CLI at the 9th")]
)
def test_check_warns_when_max_stop_blocks_passes_another_harness_cap(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], cap: int, named: str
) -> None:
    config = write(tmp_path / "g.yaml", f"workflow:\n  max_stop_blocks: {cap}\n")
    _, out, _ = cli(capsys, "check", config)
    found = [w["message"] for w in out["warnings"] if "in a row ends a turn" in w["message"]]
    assert bool(found) is bool(named)
    if named:
        assert named in found[0] and "keep it at 7 or less for them" in found[0]


POLICY_TREE = """\
name: policies
version: 1
tree:
  type: sequence
  name: Top
  tools:
    allow: [Read, read, Grep, Glob, "Bash(rg *)", Agent, Task, TodoWrite, WebFetch, LS, Serch,
            mcp__github__search, filesystem.edit, "*", run_shell_command]
  children:
    - type: action
      name: Look
      tools: {deny: ["Reed(*.md)", "Edit(src/**)", NotebookEdit]}
      steps:
        - instruct: Look.
"""


def test_check_warns_on_a_policy_entry_no_harness_has(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write(tmp_path / "g.yaml", "profile: dev\n")
    tree = tmp_path / "t.yaml"
    tree.write_text(POLICY_TREE)
    code, out, _ = cli(capsys, "check", config, "--tree", str(tree))
    assert code == 0
    warned = {(w["path"], w["message"].split("'")[1]) for w in out["warnings"]}
    # Claude Code's names of every harness's tools pass, whatever the case, as do MCP tools,
    # dotted names and `*`; a typo does not, in allow or deny, with or without an argument.
    # Gemini's own name of its shell is not a name rules and policies use.
    assert warned == {
        ("/Top/tools/allow/10", "Serch"),
        ("/Top/tools/allow/14", "run_shell_command"),
        ("/Top/Look/tools/deny/0", "Reed"),
    }
    assert all(w["file"] == str(tree) for w in out["warnings"])
    assert "mcp__server__tool" in out["warnings"][0]["message"]


def test_the_example_trees_name_only_tools_harnesses_have(
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo = Path(__file__).resolve().parents[2]
    examples = repo / "examples"
    trees = [
        str(p) for p in [*examples.glob("*.yaml"), examples / "bound-feature" / "feature.yaml"]
    ]
    args = [a for tree in trees for a in ("--tree", tree)]
    code, out, _ = cli(capsys, "check", str(repo / "examples" / "guard" / "coding.yaml"), *args)
    assert code == 0 and out["warnings"] == []


def test_check_of_a_broken_tree_says_where(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write(tmp_path / "g.yaml", "profile: dev\n")
    tree = tmp_path / "t.yaml"
    tree.write_text(POLICY_TREE.replace("NotebookEdit", "[NotebookEdit]"))
    code, _, err = cli(capsys, "check", config, "--tree", str(tree))
    assert code == 3 and err["error"]["code"] == "invalid_tree"
    assert err["error"]["line"] == 12


def test_check_reports_errors_as_json_with_exit_code(tmp_path, capsys):
    config = write(tmp_path / "g.yaml", "profile: dev\nrules:\n  nope: true\n")
    code, out, err = cli(capsys, "check", config)
    assert code == 3
    assert out == {}
    assert err["error"]["code"] == "invalid_value"
    assert err["error"]["line"] == 3
    assert err["error"]["path"] == "rules.nope"


def test_usage_errors_are_json(capsys):
    code, _, err = cli(capsys, "frobnicate")
    assert code == 2
    assert err["error"]["code"] == "usage"


def test_prompt(tmp_path, capsys):
    config = write(tmp_path / "g.yaml", "profile: creative\n")
    code, out, _ = cli(capsys, "prompt", config)
    assert code == 0
    assert "## Profile: creative" in out["prompt"]


def test_install_claude_merges_and_is_idempotent(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", str(Path(sys.executable).parent))  # this installation's tether
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    existing = {
        "permissions": {"allow": ["Bash(npm test)"]},
        "hooks": {
            "PreToolUse": [
                {"matcher": "Bash", "hooks": [{"type": "command", "command": "lint.sh"}]}
            ]
        },
    }
    settings.write_text(json.dumps(existing))
    code, out, _ = cli(capsys, "install", "claude")
    assert code == 0
    assert out["created_config"] is True
    assert (tmp_path / ".tether" / "guard.yaml").read_text().startswith("security:")
    data = json.loads(settings.read_text())
    assert data["permissions"] == existing["permissions"]
    pre = data["hooks"]["PreToolUse"]
    assert pre[0] == existing["hooks"]["PreToolUse"][0]
    assert pre[1]["matcher"] == "*"
    command = pre[1]["hooks"][0]["command"]
    assert command == 'tether guard hook --config "$CLAUDE_PROJECT_DIR/.tether/guard.yaml"'
    assert set(out["added"]) == {
        "SessionStart",
        "UserPromptSubmit",
        "PreToolUse",
        "PostToolUse",
        "PostToolUseFailure",
        "Stop",
        "SubagentStart",
        "SubagentStop",
        "ConfigChange",
        "SessionEnd",
    }
    assert "matcher" not in data["hooks"]["UserPromptSubmit"][0]
    code, out, _ = cli(capsys, "install", "claude")
    assert (out["added"], out["updated"]) == ([], [])
    assert json.loads(settings.read_text()) == data


def test_install_http_hooks(tmp_path, capsys):
    settings = tmp_path / "settings.json"
    code, out, _ = cli(
        capsys,
        "install",
        "claude",
        "--settings",
        str(settings),
        "--http",
        "http://127.0.0.1:8977/hook",
    )
    assert (code, out["added"][0]) == (0, "SessionStart")
    hooks = json.loads(settings.read_text())["hooks"]
    assert hooks["PostToolUse"][0]["hooks"][0] == {
        "type": "http",
        "url": "http://127.0.0.1:8977/hook",
        "headers": {"Authorization": "Bearer $TETHER_GUARD_TOKEN"},
        "allowedEnvVars": ["TETHER_GUARD_TOKEN"],
        "timeout": 30,
    }
    assert out["on_error"] == "block"
    assert "tether guard serve" in out["on_error_means"]


def test_install_says_which_on_error_mode_and_switches_in_place(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, _ = cli(capsys, "install", "claude", "--command", "tether")
    assert (code, out["on_error"]) == (0, "block")
    assert "denied" in out["on_error_means"] and "the default" in out["on_error_means"]
    assert "on_error: block" in (tmp_path / ".tether" / "guard.yaml").read_text()
    settings = tmp_path / ".claude" / "settings.json"
    command = json.loads(settings.read_text())["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
    assert "--on-error" not in command
    code, out, _ = cli(capsys, "install", "claude", "--command", "tether", "--on-error", "allow")
    assert (out["on_error"], out["added"]) == ("allow", [])
    assert "PreToolUse" in out["updated"] and "goes ahead" in out["on_error_means"]
    hooks = json.loads(settings.read_text())["hooks"]
    assert all(len(groups) == 1 for groups in hooks.values())
    assert hooks["PreToolUse"][0]["hooks"][0]["command"] == (
        'tether guard hook --config "$CLAUDE_PROJECT_DIR/.tether/guard.yaml" --on-error allow'
    )
    assert (
        cli(capsys, "install", "claude", "--command", "tether", "--on-error", "allow")[1]["updated"]
        == []
    )


def test_install_refuses_a_broken_settings_file(tmp_path, capsys):
    settings = tmp_path / "settings.json"
    settings.write_text("{not json")
    code, _, err = cli(capsys, "install", "claude", "--settings", str(settings))
    assert code == 3
    assert err["error"]["code"] == "invalid_json"
    assert settings.read_text() == "{not json"


def test_replay_prints_every_decision(tmp_path, capsys):
    config = write(tmp_path / "g.yaml", "profile: dev\n")
    code, out, _ = cli(capsys, "replay", str(DATA / "session.jsonl"), "--config", config)
    assert code == 0
    rows = [
        (d["line"], d["event"], d["action"], [r["rule"] for r in d["rules"]])
        for d in out["decisions"]
    ]
    assert rows == [
        (2, "user_message", "allow", []),
        (3, "pre_tool", "warn", ["read_before_edit", "plan_before_execute"]),
        (4, "post_tool", "allow", []),
        (5, "text", "allow", []),
        (5, "pre_tool", "allow", []),
        (6, "post_tool", "allow", []),
        (7, "pre_tool", "allow", []),
        (8, "post_tool", "remind", ["verify_after_edit"]),
        (9, "pre_tool", "block", ["confirm_destructive"]),
        (10, "post_tool", "allow", []),
        (11, "text", "warn", ["web_search_when_unknown"]),
    ]
    assert out["counts"] == {"allow": 7, "remind": 1, "warn": 2, "block": 1}


def test_replay_explain_gives_sources_and_values(tmp_path, capsys):
    config = write(tmp_path / "g.yaml", "profile: dev\n")
    _, out, _ = cli(capsys, "replay", str(DATA / "session.jsonl"), "--config", config, "--explain")
    blocked = next(d for d in out["decisions"] if d["action"] == "block")
    explanation = blocked["rules"][0]["explanation"]
    assert explanation["source"] == "builtin (profile dev)"
    assert explanation["condition"]["saw"] == "git reset --hard"
    assert any(e["rule"] == "no_bash_for_files" for e in blocked["evaluated"])


def test_replay_of_a_missing_transcript(tmp_path, capsys):
    config = write(tmp_path / "g.yaml", "profile: dev\n")
    code, _, err = cli(capsys, "replay", str(tmp_path / "none.jsonl"), "--config", config)
    assert code == 4
    assert err["error"]["code"] == "not_found"


CASES = """
config: g.yaml
cases:
  - name: editing without reading warns
    cwd: /project
    steps:
      - user: "fix it"
      - text: "Reading first."
      - pre: {tool: Edit, params: {file_path: a.py}}
        expect: {action: warn, rules: [read_before_edit]}
      - call: {tool: Read, params: {file_path: /project/a.py}}
      - call: {tool: Edit, params: {file_path: a.py}}
        expect: {rules: [verify_after_edit], contains: "Re-read"}
  - name: destructive commands are blocked
    steps:
      - pre: {tool: Bash, params: {command: "rm -rf /"}}
        expect: {action: block}
"""


def test_cases_pass(tmp_path, capsys):
    write(tmp_path / "g.yaml", "profile: dev\nrules: {plan_before_execute: false}\n")
    cases = write(tmp_path / "cases.yaml", CASES)
    code, out, _ = cli(capsys, "test", cases)
    assert code == 0
    assert out == {
        "passed": 2,
        "failed": 0,
        "cases": [
            {"name": "editing without reading warns", "passed": True, "failures": []},
            {"name": "destructive commands are blocked", "passed": True, "failures": []},
        ],
    }


def test_cases_fail_with_where_and_why(tmp_path, capsys):
    write(tmp_path / "g.yaml", "profile: assistant\n")
    cases = write(tmp_path / "cases.yaml", CASES)
    code, out, err = cli(capsys, "test", cases)
    assert code == 3
    assert err["error"]["code"] == "verify_failed"
    failure = out["cases"][0]["failures"][0]
    assert failure["where"] == f"{cases}:11"
    assert failure["problems"] == [
        "expected rules ['verify_after_edit'], got []",
        "expected the text to contain 'Re-read', got ''",
    ]
    assert out["cases"][1]["passed"] is True


def test_cases_file_errors_are_located(tmp_path, capsys):
    write(tmp_path / "g.yaml", "profile: dev\n")
    cases = write(
        tmp_path / "cases.yaml",
        "config: g.yaml\ncases:\n  - name: x\n    steps:\n      - usr: hi\n",
    )
    code, _, err = cli(capsys, "test", cases)
    assert code == 3
    assert err["error"]["line"] == 5
    assert err["error"]["path"] == "cases[0].steps[0].usr"


def test_module_entry_point(tmp_path):
    config = write(tmp_path / "g.yaml", "profile: dev\n")
    result = subprocess.run(
        [sys.executable, "-m", "tether.guard.cli", "check", config],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0
    assert json.loads(result.stdout)["ok"] is True
