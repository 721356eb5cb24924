"""The destructive-command rule reads a command line as the shell runs it: the obvious evasions
are refused, harmless look-alikes pass, and no line can make it hang."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tether.guard import Guard
from tether.guard.rules.shell import MAX_DEPTH, destructive

HOOK = [sys.executable, "-m", "tether.guard.cli", "hook"]
EVASIONS = [
    "rm${IFS}-rf${IFS}/",
    "rm$IFS-rf$IFS/",
    "coproc rm -rf /",
    "coproc NAME { rm -rf /; }",
    "trap 'rm -rf /' EXIT",
    "trap -- 'git push --force' EXIT",
    "git -c alias.x='!rm -rf /' x",
    "git -c 'alias.y=! git push -f' y",
    "parallel rm -rf ::: /",
    "parallel -j 2 rm -rf ::: a b",
    "'rm' -rf /",
    'r""m -rf /',
    "\\rm -rf /",
    "r$()m -rf /",
    "``rm -rf /",
    "RM -rf /",
    "rm -r --force x",
    "rm --recursive -f x",
    "rm --rec --forc x",
    "rm -fr x",
    "rm -Rf x",
    "rm x -rf",
    "rm -rf -- /",
    "/bin/rm -rf /",
    "sudo rm -rf /",
    "sudo -u root -- rm -rf /",
    "doas rm -rf /",
    "env FOO=1 rm -rf /",
    "FOO=1 rm -rf /",
    "nohup rm -rf / &",
    "timeout 5 rm -rf /",
    "nice -n 5 command rm -rf /",
    "busybox rm -rf /",
    "2>/dev/null rm -rf /",
    "ls; rm -rf /",
    "true && rm -rf /",
    "false || rm -rf /",
    "cat list | rm -rf /",
    "sleep 1 & rm -rf /",
    "echo hi\nrm -rf /",
    "(rm -rf /)",
    "{ rm -rf /; }",
    "! rm -rf /",
    "if true; then rm -rf /; fi",
    "bash -c 'rm -rf /'",
    'sh -lc "rm -rf /"',
    "bash -c \"bash -c 'rm -rf /'\"",
    'su -c "rm -rf /" root',
    'eval "rm -rf /"',
    "echo $(rm -rf /)",
    'echo "$(rm -rf /)"',
    "echo `rm -rf /`",
    "x=$(rm -rf /)",
    "find . -name x -exec rm -rf {} \\;",
    "find . | xargs rm -rf",
    "git push origin +main",
    "git push --force-with-lease",
    "git push --force-with-lease=main:abc origin main",
    "git push --force origin main",
    "git push -f",
    "git push -uf origin main",
    "git push origin :main",
    "git push --delete origin old",
    "git push --mirror backup",
    "git -C repo push -f",
    "cd repo && git push -f",
    "git reset --hard",
    "git reset --hard HEAD~1",
    "git clean -fd",
    "git clean -f -d",
    "git clean -xf",
    # spellings the shell rewrites before it runs them
    "{rm,-rf,/}",
    "r{m,x} -rf /",
    "$'rm' -rf /",
    "$'\\x72m' -rf /",
    "rm \\\n-rf /",
    "r\\\nm -rf /",
    "r${NOPE}m -rf /",
    "${X:-rm} -rf /",
    "/bin/r? -rf /",
    "echo 'rm -rf /' | bash",
    "printf 'rm -rf /' | sh -s",
    "bash <<< 'rm -rf /'",
    "sh <<EOF\nrm -rf /\nEOF",
    'f(){ rm -rf "$@"; }; f /',
    'f(){ "$@"; }; f rm -rf /',
    'function g { "$@"; }; g rm -rf /',
    "alias x='rm -rf'; x /",
    "env -S 'rm -rf /'",
    "env -S'rm -rf /'",
    "env --split-string='rm -rf /'",
    "flock /tmp/lock rm -rf /",
    "flock -w 5 /tmp/lock -c 'rm -rf /'",
    "ionice -c3 rm -rf /",
    "ionice -c 3 -n 7 rm -rf /",
    "taskset -c 0 rm -rf /",
    "chrt 1 rm -rf /",
    "script -qc 'rm -rf /' /dev/null",
    "watch -g rm -rf /",
    "uv run rm -rf /",
    "runuser -u me -c 'rm -rf /'",
    "psql -c 'DROP TABLE users'",
    "psql -c 'drop/**/table users'",
    "psql -c 'drop -- a comment\n table users'",
    "psql -c 'TRUNCATE\tTABLE users'",
    "x" * 70000 + " && psql -c 'DROP TABLE users'",
]

HARMLESS = [
    "git push origin main",
    "git push",
    "git push -u origin main",
    "git push origin HEAD:main",
    "git push --follow-tags",
    "git -c user.name=x commit -m ok",
    "parallel echo ::: a b",
    "rm file.txt",
    "rm -f stale.lock",
    "rm -r build",
    'echo "rm -rf /"',
    "echo rm -rf /",
    'git commit -m "rm -rf the old tree, git push -f"',
    "printf '%s\\n' 'git reset --hard'",
    "grep -rf patterns.txt src",
    "git reset --soft HEAD~1",
    "git clean -n",
    "git clean -fn",
    "chmod -R 755 dist",
    "pytest -q tests",
    "cat README.md | grep rm",
    "",
    "echo {a,b} && ls",
    'curl -d \'{"rm": 1, "rf": 2}\' http://127.0.0.1/',
    "echo 'rm -rf /' > notes.txt",
    "psql -c 'select * from drop_table_log'",
    "echo $HOME",
    "bash build.sh",
]


@pytest.mark.parametrize("command", EVASIONS)
def test_evasions_are_refused(command: str) -> None:
    assert destructive(command), command
    session = Guard.from_config({"rules": {"confirm_destructive": True}}).session()
    decision = session.pre_tool("Bash", {"command": command})
    assert decision.blocked
    assert decision.rules == ["confirm_destructive"]


@pytest.mark.parametrize("command", HARMLESS)
def test_harmless_look_alikes_pass(command: str) -> None:
    assert destructive(command) is None
    session = Guard.from_config({"rules": {"confirm_destructive": True}}).session()
    assert session.pre_tool("Bash", {"command": command}).action == "allow"


@pytest.mark.parametrize(
    "command",
    [
        'f(){ rm "$@"; }; f -rf x',
        "f(){ rm $*; }; f -rf x",
        'f(){ rm "${1}" "$2"; }; f -rf x',
        'function g { git push "$@"; }; g -f origin main',
        'f() ( rm "$@" ); f -rf x',
        'f(){ g(){ rm "$@"; }; g "$@"; }; f -rf x',
        'f(){ rm "$@"; f -rf x',  # a body that does not close: cannot be read
    ],
)
def test_n21_a_function_body_is_read_with_its_calls_arguments(command: str) -> None:
    """N21: `confirm_destructive` reads what a function runs with the arguments it is called
    with; a function whose body cannot be found is refused when called."""
    session = Guard.from_config({"rules": {"confirm_destructive": True}}).session()
    decision = session.pre_tool("Bash", {"command": command})
    assert decision.blocked and decision.rules == ["confirm_destructive"], command
    harmless = 'f(){ rm "$@"; }; f stale.lock'
    assert session.pre_tool("Bash", {"command": harmless}).action == "allow"


def test_the_explanation_names_what_was_destructive() -> None:
    session = Guard.from_config({"rules": {"confirm_destructive": True}}).session()
    decision = session.pre_tool("Bash", {"command": "ls && sudo /bin/rm -r -f /"}, explain=True)
    assert decision.firings[0].explanation["condition"] == {
        "condition": "destructive_command",
        "args": "command",
        "saw": "rm -r -f",
        "result": True,
    }


def test_nesting_beyond_the_limit_counts_as_destructive() -> None:
    line = "rm -rf /"
    for _ in range(MAX_DEPTH + 1):
        line = f"echo $({line})"
    assert destructive(line) == f"commands nested more than {MAX_DEPTH} levels deep"
    assert destructive("echo $(" * 30000 + "rm -rf /") is not None
    assert destructive("eval " * 20000 + "rm -rf /") is not None


def test_long_lines_in_a_real_hook(tmp_path: Path) -> None:
    """A long `git push` line (34.7 s on the old pattern) and 64 KiB of padding before the real
    command: the hook answers, and the padding hides nothing."""
    config = tmp_path / "guard.yaml"
    config.write_text("rules: {confirm_destructive: true}\n")
    lines = {
        "git push origin main " + "--verbose " * 20000: False,
        "x" * 70000 + "; rm -rf /": True,
        "git push origin " + " " * 100000 + "+main": True,
    }
    for command, denied in lines.items():
        payload = {
            "session_id": "s",
            "cwd": str(tmp_path),
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": command},
        }
        done = subprocess.run(
            [*HOOK, "--config", str(config), "--state-dir", str(tmp_path / "state")],
            input=json.dumps(payload),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert ('"deny"' in done.stdout) is denied
