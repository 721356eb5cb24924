"""A step's `tools` policy against real call shapes: shell lines read as commands, paths against
the project, Tether's own tools, and patterns that cannot backtrack."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tether.guard.binding.steptools import (
    MCP_TOOLS,
    glob_match,
    is_own_tool,
    path_matches,
    refusal,
    simple_commands,
)
from tether.mcp.tools import TOOLS

REVIEW = {"allow": ["Read", "Grep", "Glob", "Bash(git diff*)"], "deny": ["Edit", "Write"]}
PROJECT = "/work/project"


def test_the_runtime_tools_are_the_mcp_servers() -> None:
    assert {spec.name for spec in TOOLS} == MCP_TOOLS


@pytest.mark.parametrize(
    ("tool", "params", "allowed"),
    [
        ("Read", {"file_path": "/work/project/a.py"}, True),
        ("mcp__filesystem__read", {"path": "a.py"}, True),  # a bare trigger, any server
        ("Edit", {"file_path": "/work/project/a.py"}, False),
        ("Bash", {"command": "git diff HEAD"}, True),
        ("Bash", {"command": "git diff HEAD | head -50"}, False),
        ("Bash", {"command": "git diff; rm -rf src"}, False),
        ("Bash", {"command": "git diff $(rm -rf src)"}, False),
        ("Bash", {"command": "git diff `rm -rf src`"}, False),
        ("Bash", {"command": "git diff 'unbalanced"}, False),
        ("Bash", {"command": "git diff\nrm calc.py"}, False),  # a newline ends a command
        ("Bash", {"command": "git diff\nprintf pwned > calc.py"}, False),
        ("Bash", {"command": "git diff\r\nrm calc.py"}, False),
        ("Bash", {"command": "git diff \\\n  HEAD"}, True),  # a backslash-newline does not
        ("Bash", {"command": "pytest"}, False),
        ("WebFetch", {"url": "https://example.org"}, False),
    ],
)
def test_review_policy(tool: str, params: dict[str, Any], allowed: bool) -> None:
    assert (refusal(REVIEW, tool, params, PROJECT) is None) is allowed


@pytest.mark.parametrize(
    ("command", "allowed"),
    [
        ("git diff > calc.py", False),
        ("git diff >> calc.py", False),
        ("git diff >| calc.py", False),
        ("git diff &> calc.py", False),
        ("git diff 1>calc.py", False),
        ("git diff >&calc.py", False),
        ("git diff <> calc.py", False),
        ("git diff --output=calc.py", False),
        ("git diff --output calc.py", False),
        ("git diff -ocalc.py", False),
        ("git diff 2>&1", True),
        ("git diff > /dev/null 2>&1", True),
        ("git diff --stat", True),
    ],
)
def test_r9_an_allow_entry_never_covers_a_redirection_or_an_output_option(
    command: str, allowed: bool
) -> None:
    """R9: under the Review policy (`Bash(git diff*)`), a `git diff` that writes a file, by a
    redirection or by an output option, is covered by no allow entry: read-only stays so."""
    assert (refusal(REVIEW, "Bash", {"command": command}, PROJECT) is None) is allowed
    assert refusal({"allow": ["Bash"]}, "Bash", {"command": command}, PROJECT) is None


def test_deny_wins_over_allow() -> None:
    policy = {"allow": ["*"], "deny": ["Bash(rm:*)"]}
    assert refusal(policy, "Bash", {"command": "ls && rm -rf /"}, PROJECT) == (
        "it matches 'Bash(rm:*)' in deny"
    )
    assert refusal(policy, "Bash", {"command": "ls -la"}, PROJECT) is None


@pytest.mark.parametrize(
    "command",
    [
        "rm -rf build",
        "/bin/rm -rf build",
        "command rm build",
        "sudo rm build",
        "sudo -u root -- /usr/bin/rm build",
        "env X=1 rm build",
        "ls\nrm build",
        "bash -c 'rm build'",
        "echo $(rm build)",
        "{rm,build}",
        "$'rm' build",
        "r\\\nm build",
        "xargs rm < list",
        "find . -name '*.o' -exec rm {} +",
    ],
)
def test_a_shell_deny_entry_reads_commands_as_the_shell_runs_them(command: str) -> None:
    policy = {"deny": ["Bash(rm*)"]}
    assert (
        refusal(policy, "Bash", {"command": command}, PROJECT) == "it matches 'Bash(rm*)' in deny"
    )


@pytest.mark.parametrize("command", ["ls -la", "git rm --cached x", "echo rm build", "grep rm x"])
def test_a_shell_deny_entry_spares_lookalikes(command: str) -> None:
    assert refusal({"deny": ["Bash(rm*)"]}, "Bash", {"command": command}, PROJECT) is None


@pytest.mark.parametrize(
    ("entry", "tool"),
    [
        ("Edit", "mcp__filesystem__edit_file"),
        ("Write", "mcp__filesystem__write_file"),
        ("Edit", "mcp__filesystem__write_file"),
        ("Write", "mcp__filesystem__move_file"),
        ("Write", "mcp__filesystem__create_directory"),
        ("Read", "mcp__filesystem__read_text_file"),
        ("Edit(src/**)", "mcp__filesystem__edit_file"),
    ],
)
def test_a_file_deny_entry_covers_other_servers_file_tools(entry: str, tool: str) -> None:
    params = {"path": "/work/project/src/app.py"}
    assert refusal({"deny": [entry]}, tool, params, PROJECT) == f"it matches {entry!r} in deny"
    assert refusal({"deny": [entry], "allow": ["*"]}, tool, params, PROJECT) is not None


def test_a_file_deny_entry_keeps_to_its_verb_and_path() -> None:
    params = {"path": "/work/project/docs/a.md"}
    assert (
        refusal({"deny": ["Edit(src/**)"]}, "mcp__filesystem__edit_file", params, PROJECT) is None
    )
    assert refusal({"deny": ["Edit"]}, "mcp__filesystem__read_text_file", params, PROJECT) is None
    assert refusal({"deny": ["Write"]}, "mcp__db__query", {"sql": "select 1"}, PROJECT) is None


def test_a_policy_without_allow_allows_what_it_does_not_deny() -> None:
    assert refusal({"deny": ["Write"]}, "Edit", {"file_path": "a"}, PROJECT) is None
    assert refusal({"deny": ["Write"]}, "Write", {"file_path": "a"}, PROJECT) is not None


def test_an_empty_allow_allows_nothing() -> None:
    assert refusal({"allow": []}, "Read", {"file_path": "a"}, PROJECT) is not None


def test_each_command_of_a_line_may_be_allowed_by_its_own_entry() -> None:
    policy = {"allow": ["Bash(pytest*)", "Bash(git status)"]}
    assert refusal(policy, "Bash", {"command": "git status && pytest -q"}, PROJECT) is None
    assert refusal(policy, "Bash", {"command": "git status && make"}, PROJECT) is not None


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        ("src/**", "/work/project/src/a/b.py", True),
        ("src/**", "/work/project/lib/b.py", False),
        ("src/*.py", "/work/project/src/a/b.py", False),
        ("*.py", "/work/project/lib/deep/b.py", True),  # no `/`: the name at any depth
        ("./docs/*.md", "/work/project/docs/a.md", True),
        ("src/**", "/work/project/../other/src/a.py", False),  # `..` climbs out
        ("src/**", "/work/projectx/src/a.py", False),
        ("//etc/**", "/etc/passwd", True),
        ("src/**", "src/a.py", True),  # relative paths are the project's
    ],
)
def test_path_patterns(pattern: str, path: str, matches: bool) -> None:
    assert path_matches(pattern, path, PROJECT) is matches


def test_edit_with_a_path_argument() -> None:
    policy = {"allow": ["Edit(src/**)", "Read"]}
    assert refusal(policy, "Edit", {"file_path": "/work/project/src/m.py"}, PROJECT) is None
    assert refusal(policy, "Edit", {"file_path": "/work/project/setup.py"}, PROJECT) is not None
    assert refusal(policy, "Edit", {}, PROJECT) is not None  # no path: nothing to match


def test_web_fetch_domains() -> None:
    policy = {"allow": ["WebFetch(domain:example.com)"]}
    assert refusal(policy, "WebFetch", {"url": "https://docs.example.com/x"}, PROJECT) is None
    assert refusal(policy, "WebFetch", {"url": "https://example.com.evil.io"}, PROJECT)


def test_globs_do_not_backtrack() -> None:
    text = "a" * 50_000
    assert glob_match("*a*a*a*a*a*a*a*a*a*a*b", text, slash=True) is False
    assert glob_match("*a*a*a*a*a*a*a*a*a*a*", text, slash=True) is True
    assert glob_match("**/" * 200 + "x", "/".join(["d"] * 5000) + "/x", slash=False)


def test_r5_python_m_tether_importing_the_projects_tether_package_is_not_tethers_own(
    tmp_path: Path,
) -> None:
    """R5: the agent writes a `tether` package (`__main__.py`) in the project, then runs
    `python3 -m tether` under `allow: []`: that imports the project's package, so it is not
    Tether's own (denied).
    `python3 -I -m tether` is, and it runs the installed Tether, not the agent's."""
    fake = tmp_path / "tether"
    fake.mkdir()
    (fake / "__init__.py").write_text("")
    (fake / "__main__.py").write_text("print('pwned')\n")
    policy: dict[str, Any] = {"allow": []}
    for python in ("python3", sys.executable):
        line = f"{python} -m tether next runs/a.json"
        assert not is_own_tool("Bash", {"command": line}, str(tmp_path))
        assert refusal(policy, "Bash", {"command": line}, str(tmp_path)) is not None
    assert is_own_tool("Bash", {"command": "python3 -I -m tether next a"}, str(tmp_path))
    plain = subprocess.run(
        [sys.executable, "-m", "tether", "--version"], cwd=tmp_path, capture_output=True, text=True
    )
    isolated = subprocess.run(
        [sys.executable, "-I", "-m", "tether", "--version"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert plain.stdout == "pwned\n" and "pwned" not in isolated.stdout + isolated.stderr


def test_simple_commands_are_tokens_not_substrings() -> None:
    assert simple_commands("a 'b; c' && d|e") == [["a", "b; c"], ["d"], ["e"]]
    assert simple_commands("git diff\nrm calc.py") == [["git", "diff"], ["rm", "calc.py"]]
    assert simple_commands("git \\\ndiff 'a\nb'") == [["git", "diff", "a\nb"]]
    assert simple_commands('echo "unbalanced') is None


@pytest.mark.parametrize(
    ("tool", "command", "own"),
    [
        ("Bash", "tether next runs/a.json", True),
        ("Bash", f"{os.path.dirname(sys.executable)}/tether submit runs/a.json success", True),
        ("Bash", "python -I -m tether next runs/a.json", True),
        ("Bash", "python -m tether next runs/a.json", False),  # R5: imports ./tether first
        ("Bash", "tether next a && tether var a x 1", True),
        ("Bash", "tether var a x --file notes/x.txt", True),
        ("Bash", "tether \\\nnext a", True),  # a continued line is one command
        ("Bash", "tether next a; rm -rf /", False),
        ("Bash", "echo tether next a", False),
        ("Bash", "tether next $(rm -rf /)", False),
        ("Bash", "tether approve runs/a.json", False),
        ("Bash", "tether reject runs/a.json", False),
        ("Bash", "tether guard install claude", False),
        ("Bash", "not-tether next a", False),
        # the attacks: a newline, redirections, assignments, another `tether`, a file
        ("Bash", "tether next a\nrm calc.py", False),
        ("Bash", "tether next a\n\nprintf pwned > calc.py", False),
        ("Bash", "tether next a > calc.py", False),
        ("Bash", "tether schema > runs/f.json", False),
        ("Bash", "tether schema >> .tether/guard.yaml", False),
        ("Bash", "tether next a 2>calc.py", False),
        ("Bash", "tether next a < /etc/passwd", False),
        ("Bash", "PYTHONPATH=evil tether next a", False),
        ("Bash", "TETHER_STORE=postgresql://db/t tether next a", False),
        ("Bash", "env LD_PRELOAD=/tmp/x.so tether next a", False),
        ("Bash", "./tether next a", False),
        ("Bash", "/tmp/tether next a", False),
        ("Bash", "tether var a x --file /etc/passwd", False),
        ("Bash", "tether var a x --file=../../.ssh/id_rsa", False),
        ("Bash", "tether submit a success --note-file /etc/shadow", False),
        ("Bash", "tether var a x $SECRET", False),
        ("Bash", "tether var a x ~/.netrc", False),
        ("Bash", "tether var a x *", False),
        ("Bash", "{tether,} next a", False),
    ],
)
def test_tethers_own_shell_commands(tool: str, command: str, own: bool) -> None:
    assert is_own_tool(tool, {"command": command}, PROJECT) is own


def test_tethers_own_mcp_tools_on_any_server() -> None:
    assert is_own_tool("mcp__tether__submit", {}, PROJECT)
    assert is_own_tool("mcp__runtime__next_step", {}, PROJECT)
    assert not is_own_tool("mcp__tether__delete_everything", {}, PROJECT)
    assert not is_own_tool("submit", {}, PROJECT)
