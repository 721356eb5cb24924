"""The 14 built-in rules: each fires when it should and stays quiet when it should not."""

from __future__ import annotations

import pytest

from tether.guard import Guard, GuardSession
from tether.guard.rules.rule import BUILTIN_IDS, THRESHOLDS


def only(rule_id: str, cwd: str | None = None, **thresholds: int) -> GuardSession:
    """A session whose guard runs the one built-in rule `rule_id`."""
    guard = Guard.from_config({"rules": {rule_id: True, **thresholds}})
    assert guard.plan["rules"][0]["id"] == rule_id
    return guard.session("s", cwd=cwd)


def test_the_reference_table():
    guard = Guard.from_config({"profile": "dev"})
    table = {r.id: (sorted(r.trigger.names) or ["*"], r.when, r.action) for r in guard.rules}
    assert list(table) == list(BUILTIN_IDS)
    assert table == {
        "read_before_edit": (["edit"], "pre_tool", "warn"),
        "read_before_write_existing": (["write"], "pre_tool", "warn"),
        "search_before_read": (["read"], "pre_tool", "warn"),
        "verify_after_edit": (["edit"], "post_tool", "remind"),
        "test_after_changes": (["edit", "write"], "post_tool", "remind"),
        "no_bash_for_files": (["bash"], "pre_tool", "warn"),
        "no_blind_exploration": (["bash"], "pre_tool", "warn"),
        "confirm_destructive": (["bash"], "pre_tool", "block"),
        "plan_before_execute": (["*"], "pre_tool", "warn"),
        "web_search_when_unknown": (["*"], "on_text", "warn"),
        "delegate_complex": (["*"], "post_tool", "remind"),
        "delegate_large_reads": (["read"], "post_tool", "remind"),
        "max_sequential_same_tool": (["*"], "pre_tool", "warn"),
        "always_lint_check": (["edit", "write"], "post_tool", "warn"),
    }


def test_every_threshold_reaches_the_plan_as_the_number_given():
    """The built-in rules are data naming their thresholds: each named one is filled in, in the
    plan a configuration compiles to, with the value given (never left as its name)."""
    given = {name: 40 + i for i, name in enumerate(THRESHOLDS)}
    plan = Guard.from_config({"profile": "dev", "rules": given}).plan
    read = {}
    for rule in plan["rules"]:
        for kind, arg in rule["condition"].items():
            if kind == "consecutive_gte":
                read[rule["id"]] = arg
            elif isinstance(arg, dict) and "value" in arg and kind == "counter_gte":
                read[rule["id"]] = arg["value"]
    assert all(type(value) is int for value in read.values()), read
    assert {rule: read[rule] for rule in read if read[rule] in given.values()} == {
        "search_before_read": given["max_blind_reads"],
        "test_after_changes": given["changes_before_test_reminder"],
        "max_sequential_same_tool": given["max_sequential_same_tool"],
    }


def test_read_before_edit(tmp_path):
    s = only("read_before_edit", cwd=str(tmp_path))
    assert s.pre_tool("Edit", {"file_path": "a.py"}).rules == ["read_before_edit"]
    s.post_tool("Read", {"file_path": str(tmp_path / "a.py")}, {})
    assert s.pre_tool("Edit", {"file_path": "a.py"}).rules == []
    assert s.pre_tool("MultiEdit", {"file_path": "b.py"}).rules == ["read_before_edit"]


def test_read_before_write_existing(tmp_path):
    (tmp_path / "old.txt").write_text("x")
    s = only("read_before_write_existing", cwd=str(tmp_path))
    assert s.pre_tool("Write", {"file_path": "new.txt"}).rules == []
    assert s.pre_tool("Write", {"file_path": "old.txt"}).rules == ["read_before_write_existing"]
    s.post_tool("Read", {"file_path": "old.txt"}, {})
    assert s.pre_tool("Write", {"file_path": "old.txt"}).rules == []


def test_search_before_read_after_three_blind_reads():
    s = only("search_before_read")
    for i in range(3):
        assert s.pre_tool("Read", {"file_path": f"/f{i}"}).rules == []
        s.post_tool("Read", {"file_path": f"/f{i}"}, {})
    assert s.pre_tool("Read", {"file_path": "/f3"}).rules == ["search_before_read"]
    s.post_tool("Grep", {"pattern": "x"}, {})
    assert s.pre_tool("Read", {"file_path": "/f3"}).rules == []


@pytest.mark.parametrize(
    "command", ["rg -n parse src", "grep -rn 'def parse' .", "cd src && git grep parse", "fd conf"]
)
def test_a_search_in_the_shell_counts_as_a_search(command):
    # Claude Code 2.1 has no Grep or Glob tool: it searches through Bash.
    s = only("search_before_read")
    for i in range(3):
        s.post_tool("Read", {"file_path": f"/f{i}"}, {})
    s.post_tool("Bash", {"command": command}, {})
    assert s.pre_tool("Read", {"file_path": "/f3"}).rules == []


def test_a_shell_command_that_only_names_grep_is_no_search():
    s = only("search_before_read")
    for i in range(3):
        s.post_tool("Read", {"file_path": f"/f{i}"}, {})
    for command in ("cat grep.txt", "echo rgb", "pip install ripgrep"):
        s.post_tool("Bash", {"command": command}, {})
    assert s.pre_tool("Read", {"file_path": "/f3"}).rules == ["search_before_read"]


def test_search_before_read_threshold_follows_max_blind_reads():
    s = only("search_before_read", max_blind_reads=1)
    s.post_tool("Read", {"file_path": "/a"}, {})
    assert s.pre_tool("Read", {"file_path": "/b"}).rules == ["search_before_read"]


def test_verify_after_edit():
    s = only("verify_after_edit")
    d = s.post_tool("Edit", {"file_path": "/a.py"}, {})
    assert d.rules == ["verify_after_edit"]
    assert d.action == "remind"
    assert s.post_tool("Read", {"file_path": "/a.py"}, {}).rules == []


def test_test_after_changes_and_reset_by_running_tests():
    s = only("test_after_changes")
    assert s.post_tool("Edit", {"file_path": "/a"}, {}).rules == []
    assert s.post_tool("Write", {"file_path": "/b"}, {}).rules == []
    assert s.post_tool("Edit", {"file_path": "/a"}, {}).rules == ["test_after_changes"]
    s.post_tool("Bash", {"command": "python -m pytest -q"}, {})
    assert s.state.counters["changes_since_test"] == 0
    assert s.post_tool("Edit", {"file_path": "/a"}, {}).rules == []
    s.post_tool("Bash", {"command": "ls"}, {})
    assert s.state.counters["changes_since_test"] == 1


@pytest.mark.parametrize(
    "command",
    [
        "cat README.md",
        "head -n 5 a.py",
        "tail -f log",
        "less x",
        "sed -i s/a/b/ f",
        "git log | awk '{print}'",
        "perl -pi -e s/a/b/ f",
        "bat x",
    ],
)
def test_no_bash_for_files_fires(command):
    assert only("no_bash_for_files").pre_tool("Bash", {"command": command}).rules == [
        "no_bash_for_files"
    ]


@pytest.mark.parametrize("command", ["pytest -q", "git status", "concatenate.sh", "python seds.py"])
def test_no_bash_for_files_quiet(command):
    assert only("no_bash_for_files").pre_tool("Bash", {"command": command}).rules == []


@pytest.mark.parametrize(
    "command", ["find . -name '*.py'", "ls -lRa", "tree", "cd x && tree -L 2", "dir /s"]
)
def test_no_blind_exploration_fires(command):
    assert only("no_blind_exploration").pre_tool("Bash", {"command": command}).rules == [
        "no_blind_exploration"
    ]


@pytest.mark.parametrize("command", ["ls -la src", "find src -name x", "git log --graph"])
def test_no_blind_exploration_quiet(command):
    assert only("no_blind_exploration").pre_tool("Bash", {"command": command}).rules == []


@pytest.mark.parametrize(
    "command",
    [
        "rm -rf build",
        "rm -fr /",
        "git reset --hard HEAD~1",
        "git push --force origin main",
        "git push -f",
        "git clean -fd",
        "psql -c 'DROP TABLE users'",
        "mysql -e 'drop database prod'",
        "psql -c 'TRUNCATE TABLE t'",
    ],
)
def test_confirm_destructive_blocks(command):
    d = only("confirm_destructive").pre_tool("Bash", {"command": command})
    assert d.blocked
    assert d.text.startswith("[BEHAVIOR BLOCKED] confirm_destructive:")


@pytest.mark.parametrize(
    "command", ["rm file.txt", "git reset --soft HEAD", "git push", "git clean -n"]
)
def test_confirm_destructive_allows(command):
    assert only("confirm_destructive").pre_tool("Bash", {"command": command}).action == "allow"


def test_plan_before_execute():
    s = only("plan_before_execute")
    s.on_user_message("fix the bug")
    assert s.pre_tool("Read", {"file_path": "/a"}).rules == ["plan_before_execute"]
    s.on_user_message("and the other one")
    s.on_text("First I will read the failing test.")
    assert s.pre_tool("Read", {"file_path": "/a"}).rules == []
    s.on_user_message("next")
    s.post_tool("Read", {"file_path": "/a"}, {})
    # Only the first call of a turn is concerned.
    assert s.pre_tool("Read", {"file_path": "/b"}).rules == []


def test_web_search_when_unknown():
    s = only("web_search_when_unknown")
    assert s.on_text("I'm not sure which flag does that.").rules == ["web_search_when_unknown"]
    assert s.on_text("The flag is -v.").rules == []
    s.post_tool("WebSearch", {"query": "flag"}, {})
    assert s.on_text("I don't know yet.").rules == []


def test_delegate_complex_at_exactly_eight_calls():
    s = only("delegate_complex")
    s.on_user_message("go")
    fired = [s.post_tool(f"t{i % 3}", {}, {}).rules for i in range(10)]
    assert [i + 1 for i, r in enumerate(fired) if r] == [8]


def test_delegate_large_reads_after_five_reads_in_a_row():
    s = only("delegate_large_reads")
    fired = [s.post_tool("Read", {"file_path": f"/f{i}"}, {}).rules for i in range(6)]
    assert [bool(r) for r in fired] == [False, False, False, False, True, True]
    s.post_tool("Grep", {"pattern": "x"}, {})
    assert s.post_tool("Read", {"file_path": "/g"}, {}).rules == []


def test_max_sequential_same_tool():
    s = only("max_sequential_same_tool")
    for _ in range(7):
        assert s.pre_tool("Bash", {"command": "ls"}).rules == []
        s.post_tool("Bash", {"command": "ls"}, {})
    d = s.pre_tool("Bash", {"command": "ls"})
    assert d.rules == ["max_sequential_same_tool"]
    assert "bash 8 times in a row" in d.text
    assert s.pre_tool("Read", {"file_path": "/a"}).rules == []


def test_max_sequential_same_tool_threshold():
    s = Guard.from_config({"rules": {"max_sequential_same_tool": 2}}).session()
    s.post_tool("Bash", {"command": "ls"}, {})
    assert s.pre_tool("Bash", {"command": "ls"}).rules == ["max_sequential_same_tool"]


def test_always_lint_check():
    s = only("always_lint_check")
    lint = {"lint": [{"severity": "error", "message": "undefined name"}]}
    d = s.post_tool("Write", {"file_path": "/a.py"}, lint)
    assert d.rules == ["always_lint_check"]
    assert d.text.startswith("[BEHAVIOR WARNING]")
    assert s.post_tool("Write", {"file_path": "/a.py"}, {"lint": []}).rules == []


def test_a_file_the_agent_wrote_counts_as_known(tmp_path):
    s = Guard.from_config({"profile": "assistant"}).session("s", cwd=str(tmp_path))
    s.post_tool("Write", {"file_path": "new.py", "content": "x = 1\n"}, {})
    (tmp_path / "new.py").write_text("x = 1\n")
    assert s.pre_tool("Edit", {"file_path": "new.py"}).rules == []
    assert s.pre_tool("Write", {"file_path": "new.py"}).rules == []
