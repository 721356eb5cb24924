"""A bound session and a human step: the agent may stop while only a person can answer, and the
guard keeps the person's answer (`tether approve`/`reject`) out of the agent's shell. Real hook
payloads through `tether guard hook` (a fresh process per event) and `serve`."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from guard import hookkit as hk
from support.command import TETHER
from support.person import at_terminal
from support.trees import SIGN_OFF_YAML
from tether.guard.rules.shell import answers_for_a_person
from tether.verbs import Runtime

RUN = "runs/ship.json"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "sign-off.yaml").write_text(SIGN_OFF_YAML)
    (tmp_path / "runs").mkdir()
    (tmp_path / ".tether").mkdir()
    (tmp_path / ".tether" / "guard.yaml").write_text(f"workflow:\n  trace: {RUN}\n")
    return tmp_path


@pytest.fixture
def run(project: Path) -> str:
    """The configured execution past its gate and its draft: `Sign_Off` (a person's) and
    `Lint` (the agent's) are open side by side."""
    rt = Runtime()
    uri = str(rt.start(str(project / "sign-off.yaml"), str(project / RUN))["uri"])
    rt.submit(uri, "success")
    rt.submit(uri, "success", values={"notes": "v2: faster"})
    opened = rt.open_steps(uri)
    assert [r["name"] for r in opened["open"]] == ["Sign_Off", "Lint"]
    assert opened["for_person"] is False, "the agent still has Lint to answer"
    return uri


def lint_done(uri: str) -> None:
    """The agent submits its `Lint`, by token: only the sign-off is left open."""
    lint = next(r for r in Runtime().open_steps(uri)["open"] if r["name"] == "Lint")
    Runtime().submit(uri, "success", step=lint["step"])
    assert Runtime().open_steps(uri)["for_person"] is True


def stops(uri: str) -> list[dict[str, Any]]:
    return [e for e in Runtime().trace(uri) if e["kind"] == "stop"]


def human_step(uri: str) -> dict[str, Any]:
    return next(r for r in Runtime().open_steps(uri)["open"] if r["type"] == "human")


def deny_reason(out: dict[str, Any] | None) -> str:
    assert out is not None, "the call was let through"
    specific = out["hookSpecificOutput"]
    assert specific["permissionDecision"] == "deny"
    return str(specific["permissionDecisionReason"])


# -- Stop while a person decides ----------------------------------------------------------------


def test_stop_is_refused_while_the_agent_still_has_a_step_beside_the_human_one(
    project: Path, run: str
) -> None:
    out = hk.hook_json(project, hk.stop(project))
    assert out is not None and out["decision"] == "block"
    assert "instruct 'Lint'" in out["reason"] and "Sign_Off" not in out["reason"]
    lint = next(r for r in Runtime().open_steps(run)["open"] if r["name"] == "Lint")
    assert [(e["outcome"], e["name"], e["step"]) for e in stops(run)] == [
        ("refused", "Lint", lint["step"])
    ]


def test_stop_is_let_through_while_only_a_person_can_answer(project: Path, run: str) -> None:
    hk.hook_json(project, hk.stop(project))  # refused: Lint is still open
    lint_done(run)
    step = human_step(run)["step"]
    out = hk.hook_json(project, hk.stop(project, active=True))
    assert out is not None and "decision" not in out  # Claude Code lets the turn end
    message = out["systemMessage"]
    assert "waits on a person" in message and "'Sign_Off'" in message
    assert "Read the release notes. Approve to publish." in message
    assert f"tether approve {run}" in message and f"tether reject {run}" in message
    assert "viewer" in message and "the agent cannot" in message
    last = stops(run)[-1]
    assert last["outcome"] == "allowed" and last["name"] == "Sign_Off" and last["step"] == step
    assert "waits on a person" in last["note"]
    # every later stop is let through too, never counted towards the cap
    for _ in range(4):
        again = hk.hook_json(project, hk.stop(project, active=True))
        assert again is not None and "decision" not in again
    assert [e["outcome"] for e in stops(run)] == ["refused"] + ["allowed"] * 5
    assert Runtime().verify(run)["ok"]


def test_after_the_person_answers_the_stop_is_let_through_quietly(project: Path, run: str) -> None:
    lint_done(run)
    Runtime().approve(run, note="ship it")
    assert Runtime().next(run) == {"status": "done"}
    assert hk.hook_json(project, hk.stop(project)) is None


def test_stop_warn_tells_the_user_a_person_must_answer_and_records_nothing(
    project: Path, run: str
) -> None:
    (project / ".tether" / "guard.yaml").write_text(f"workflow:\n  trace: {RUN}\n  stop: warn\n")
    lint_done(run)
    out = hk.hook_json(project, hk.stop(project))
    assert out is not None and "decision" not in out
    assert "waits on a person" in out["systemMessage"]
    assert stops(run) == []


def test_the_context_tells_the_agent_to_wait_for_the_person(project: Path, run: str) -> None:
    lint_done(run)
    out = hk.hook_json(project, hk.prompt(project, "what now?"))
    assert out is not None
    context = out["hookSpecificOutput"]["additionalContext"]
    assert "human 'Sign_Off'" in context and "Only a person answers a human step" in context
    assert "Tell the user what it asks and wait." in context
    assert "the hooks refuse a stop" not in context


def test_serve_lets_the_stop_through_like_the_hook(project: Path, run: str) -> None:
    lint_done(run)
    with hk.serving(project) as url:
        out = hk.send(url, hk.stop(project))
    assert out is not None and "decision" not in out
    assert "waits on a person" in out["systemMessage"]
    assert stops(run)[-1]["outcome"] == "allowed"


# -- the person's answer is not the agent's -------------------------------------------------------


PERSON_LINES = [
    "tether approve {run}",
    "tether reject {run} --note 'not yet'",
    "tether approve {run} --step {step}",
    "cd runs && tether approve ship.json",
    "tether next {run}; tether approve {run}",
    "/usr/local/bin/tether approve {run}",
    "'tether' \"approve\" {run}",
    "env TETHER_X=1 tether approve {run}",
    "sudo -u me tether approve {run}",
    "bash -c 'tether approve {run}'",
    'sh -lc "tether reject {run}"',
    'eval "tether approve {run}"',
    "echo $(tether approve {run})",
    "echo `tether approve {run}`",
    "python -m tether approve {run}",
    "python3 -m tether.cli.main reject {run}",
    "TETHER approve {run}",
    # the spellings: launchers, the shell's rewriting, shells fed a script, wrappers
    "uvx --from tether-bt tether approve {run}",
    "uv run tether approve {run}",
    "python3 $(which tether) approve {run}",
    "tether \\\napprove {run}",
    "{{tether,}} approve {run}",
    "$'tether' approve {run}",
    "te${{NOPE}}ther approve {run}",
    "echo 'tether approve {run}' | bash",
    "bash <<< 'tether approve {run}'",
    "f() {{ tether approve {run}; }}; f",
    "alias t=tether; t approve {run}",
    "env -S 'tether approve {run}'",
    "flock /tmp/l tether approve {run}",
    "ionice -c3 tether approve {run}",
    "taskset -c 0 tether approve {run}",
    "script -qc 'tether approve {run}' /dev/null",
    "watch -g tether approve {run}",
    "tether approv? {run}",
]


@pytest.mark.parametrize("line", PERSON_LINES)
def test_a_bound_agent_may_not_run_a_persons_answer(project: Path, run: str, line: str) -> None:
    command = line.format(run=run, step=human_step(run)["step"])
    before = Runtime().trace(run)
    out = hk.hook_json(project, hk.pre(project, "Bash", {"command": command}))
    reason = deny_reason(out)
    assert "is a person's answer, not an agent's" in reason
    assert "Only a person answers a human step" in reason
    assert "tether approve" in reason and "viewer" in reason
    # the guard denied the call before it ran: nothing was answered or recorded
    assert Runtime().trace(run) == before
    assert human_step(run)["name"] == "Sign_Off"


@pytest.mark.parametrize(
    "line",
    [
        "tether next {run}",
        "tether submit {run} success",
        "echo 'to sign off: tether approve {run}'",
        "grep -r approve docs/",
        "git log --grep=approve",
    ],
)
def test_look_alikes_and_tethers_own_commands_still_run(project: Path, run: str, line: str) -> None:
    out = hk.hook_json(project, hk.pre(project, "Bash", {"command": line.format(run=run)}))
    assert out is None


def test_the_person_answers_from_their_own_terminal(project: Path, run: str) -> None:
    """The hooks see only the agent's calls: the person's `tether approve`, run outside the
    agent, answers the step."""
    lint_done(run)
    done = at_terminal(["approve", run, "--note", "ship it"])
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["status"] == "approved"
    human = [e for e in Runtime().trace(run) if e["kind"] == "human"]
    assert [(e["outcome"], e["by"]) for e in human] == [("success", "cli")]


def test_serve_denies_a_persons_answer_like_the_hook(project: Path, run: str) -> None:
    with hk.serving(project) as url:
        out = hk.send(url, hk.pre(project, "Bash", {"command": f"tether reject {run}"}))
    assert "is a person's answer" in deny_reason(out)


def test_an_unbound_session_is_not_held_to_it(project: Path, run: str) -> None:
    """Outside a binding the guard's workflow check says nothing (its other rules still speak);
    what a person runs in their own shell is never the guard's to stop."""
    (project / ".tether" / "guard.yaml").write_text("workflow:\n  bind: auto\n")
    out = hk.hook_json(project, hk.pre(project, "Bash", {"command": f"tether approve {run}"}))
    assert out is None


def test_a_line_nested_beyond_reading_is_refused() -> None:
    line = "tether approve runs/ship.json"
    for _ in range(12):
        line = f"echo $({line})"
    assert answers_for_a_person(line) is not None
    assert answers_for_a_person("echo $(" * 30000 + "tether approve x") is not None
    assert answers_for_a_person("echo $(" * 30000 + "ls") is None  # no tether: not read at all


def test_the_command_the_user_is_told_to_paste_runs_nothing_else(project: Path, run: str) -> None:
    """A trace named `runs/x;touch${IFS}PWNED;.json`: pasting the `tether approve` the user is
    told runs `tether approve` on that execution, and no `touch`."""
    odd = "runs/x;touch${IFS}PWNED;.json"
    Runtime().fork(run, str(project / odd), at=len(Runtime().trace(run)))
    (project / ".tether" / "guard.yaml").write_text(f"workflow:\n  trace: '{odd}'\n")
    lint_done(str(project / odd))
    out = hk.hook_json(project, hk.stop(project))
    assert out is not None
    pasted = re.search(r"`(tether approve [^`]*)`", out["systemMessage"])
    assert pasted is not None
    assert shlex.split(pasted.group(1))[2].endswith(odd)
    done = subprocess.run(
        ["bash", "-c", pasted.group(1).replace("tether", TETHER, 1)],
        cwd=project,
        capture_output=True,
        text=True,
        start_new_session=True,
        check=False,
    )
    assert not (project / "PWNED").exists(), done.stderr
    assert "terminal" in done.stderr  # it reached tether approve, which wants a person


PYTHON = shlex.quote(sys.executable)
# A harness's hook, as an agent forges it from its shell: a fake harness named `claude` (a Python
# script) that makes the socket a real harness gives its hooks, and runs `tether guard hook` with
# the person's prompt on it.
FAKE_HARNESS = """\
import json, os, socket, subprocess, sys
mine, theirs = socket.socketpair()
hook = subprocess.Popen([sys.executable, "-m", "tether.cli.main", "guard", "hook",
    "--state-dir", sys.argv[1]], stdin=theirs, stdout=subprocess.PIPE, text=True)
theirs.close()
mine.sendall(sys.argv[2].encode())
mine.shutdown(socket.SHUT_WR)
print(hook.communicate()[0])
"""


def test_the_prompts_grant_is_refused_from_a_hook_the_agent_runs(project: Path, run: str) -> None:
    """`tether: approve Sign_Off` as a UserPromptSubmit payload, handed to `tether guard hook`
    from the agent's shell: on a pipe with Claude Code's marks removed, on a socket of its own,
    and from a fake harness named `claude` that makes the socket as Claude Code does. None
    reads from the harness's own socket, so none answers the step."""
    lint_done(run)
    payload = json.dumps(hk.prompt(project, "tether: approve Sign_Off"))
    state = str(project / ".state")
    (project / "claude").write_text(FAKE_HARNESS)
    harness = str(project / "codex")  # the agent's harness, known by its program
    shutil.copy("/bin/bash", harness)
    hook = f"env -i PATH=$PATH PYTHONPATH=$PYTHONPATH {TETHER} guard hook --state-dir {state}"
    for line in (
        f"echo {shlex.quote(payload)} | {hook}",
        f"{PYTHON} -c {shlex.quote(FAKE_HARNESS)} {state} {shlex.quote(payload)}",
        f"{PYTHON} claude {state} {shlex.quote(payload)}",
        f"exec env -i PATH=$PATH PYTHONPATH=$PYTHONPATH {PYTHON} claude {state} "
        f"{shlex.quote(payload)}",
    ):
        done = subprocess.run(  # the agent's shell, a child of its harness
            [harness, "-c", f"CLAUDECODE=1 bash -c {shlex.quote(line)}; true"],
            cwd=project,
            env={**os.environ, "CLAUDE_PROJECT_DIR": str(project)},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            start_new_session=True,
            timeout=60,
            check=False,
        )
        assert "answered nothing" in done.stdout and "is not one" in done.stdout, (line, done)
        assert human_step(run)["name"] == "Sign_Off", line
        assert [e for e in Runtime().trace(run) if e["kind"] == "human"] == [], line
