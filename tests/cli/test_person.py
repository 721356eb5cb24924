"""Only a person answers a human step: the spellings of `tether approve` an agent's shell can
run here are run for real, as an agent's tool call runs them (no terminal, inside a harness's
process tree), and none records an answer; a person at a real terminal still can."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import tether
from support.command import TETHER
from support.person import at_terminal
from support.trees import SIGN_OFF_YAML
from tether.verbs import Runtime

RUN = "runs/ship.json"
BIN = str(Path(TETHER).parent)

# Each spelling runs in `bash -c` from the project, with R the execution.
SPELLINGS = [
    "tether approve R",
    "tether \\\napprove R",
    "{tether,} approve R",
    "$'tether' approve R",
    "te${NOPE}ther approve R",
    "echo 'tether approve R' | bash",
    "bash <<< 'tether approve R'",
    "f() { tether approve R; }; f",
    "shopt -s expand_aliases\nalias t=tether\nt approve R",
    "env -u CLAUDECODE tether approve R",
    "env -i PATH=$PATH PYTHONPATH=$PYTHONPATH tether approve R",
    "env -S 'tether approve R'",
    "flock /tmp/tether-person-test.lock tether approve R",
    "ionice -c 3 tether approve R",
    "taskset -c 0 tether approve R",
    "python3 $(which tether) approve R",
    "python3 -m tether.cli.main approve R",
    f"{sys.executable} -c \"from tether.verbs import Runtime; Runtime().approve('R')\"",
    f"{sys.executable} -c \"import subprocess; subprocess.run(['tether', 'approve', 'R'])\"",
    "cp $(which tether) ./t && ./t approve R",
    "touch approve && tether approv? R",
    "nohup tether approve R",
    "setsid tether approve R",
    "timeout 20 watch -g -n 1 tether approve R",
    "tether reject R",
]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "sign-off.yaml").write_text(SIGN_OFF_YAML)
    (tmp_path / "runs").mkdir()
    return tmp_path


@pytest.fixture
def run(project: Path) -> str:
    """An execution whose only open step is the human `Sign_Off`."""
    uri = _waiting(project)
    assert [r["name"] for r in Runtime().open_steps(uri)["open"]] == ["Sign_Off"]
    return uri


def agent_env(**extra: str) -> dict[str, str]:
    """The environment of a command an agent harness starts (Claude Code marks it so)."""
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    env.pop("CLAUDECODE", None)
    return {**env, **extra}


def as_agent(line: str, project: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run `line` as an agent's tool call runs it: a shell with no terminal, no input."""
    return subprocess.run(
        ["bash", "-c", line],
        cwd=project,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        start_new_session=True,
        timeout=60,
        check=False,
    )


def human_entries(uri: str) -> list[dict[str, object]]:
    return [e for e in Runtime().trace(uri) if e["kind"] == "human"]


def unanswered(uri: str) -> bool:
    open_steps = Runtime().open_steps(uri)["open"]
    return [r["name"] for r in open_steps] == ["Sign_Off"] and human_entries(uri) == []


@pytest.mark.parametrize("spelling", SPELLINGS)
def test_an_agents_spelling_records_no_answer(project: Path, run: str, spelling: str) -> None:
    done = as_agent(spelling.replace(" R", f" {run}"), project, agent_env(CLAUDECODE="1"))
    assert unanswered(run), (spelling, done.stdout, done.stderr)


@pytest.mark.parametrize("spelling", SPELLINGS[:6])
def test_without_a_harness_mark_no_terminal_still_records_no_answer(
    project: Path, run: str, spelling: str
) -> None:
    """A harness Tether does not know marks nothing; its shell still has no terminal."""
    done = as_agent(spelling.replace(" R", f" {run}"), project, agent_env())
    assert unanswered(run), (spelling, done.stdout, done.stderr)
    assert "this process has none" in done.stderr


def test_a_terminal_the_agent_makes_cannot_supply_the_code(project: Path, run: str) -> None:
    """`script -qc` gives the command a terminal fed from the agent's input: what the agent
    types before it sees the code is not the code."""
    for guess in ("y", "yes", "approve", "Sign_Off"):
        line = f"printf '{guess}\\n' | script -qec 'tether approve {run}' /dev/null"
        done = as_agent(line, project, agent_env())
        assert unanswered(run), (guess, done.stdout)
        assert "not confirmed" in done.stdout + done.stderr


def test_a_terminal_driven_from_inside_the_agent_is_refused_even_with_the_code(
    project: Path, run: str
) -> None:
    """An agent that drives a terminal of its own and reads the code back (as Codex's terminal
    sessions allow) is still inside the harness's process tree."""
    answered = at_terminal(["approve", run], env=agent_env(CLAUDECODE="1"))
    assert answered.returncode != 0 and "runs under an agent" in answered.stderr
    assert "CLAUDECODE" in answered.stderr
    assert unanswered(run)
    # the mark is read from the ancestry: removing it from the command's own environment
    # (env -u) leaves it on the shell the harness started (wrapped as Claude Code wraps it)
    answered = at_terminal(
        ["-c", f"eval 'env -u CLAUDECODE tether approve {run}' && pwd -P >/dev/null"],
        program=["bash"],
        env=agent_env(CLAUDECODE="1"),
    )
    assert "process" in answered.stderr and "carries CLAUDECODE" in answered.stderr
    assert unanswered(run)


def test_the_harness_itself_is_known_by_its_program(project: Path, run: str) -> None:
    """A shell that replaced itself with the command leaves the harness as the parent."""
    harness = project / "bin" / "codex"
    harness.parent.mkdir()
    shutil.copy("/bin/bash", harness)
    answered = at_terminal(
        ["-c", f"tether approve {run}; true"], program=[str(harness)], env=agent_env()
    )
    assert "is Codex" in answered.stderr and unanswered(run)


def test_a_person_at_their_terminal_approves(project: Path, run: str) -> None:
    answered = at_terminal(["approve", run, "--note", "ship it"], env=agent_env())
    assert answered.returncode == 0, answered.stderr
    assert "The human step 'Sign_Off' asks" in answered.terminal
    assert "Read the release notes. Approve to publish." in answered.terminal
    (entry,) = human_entries(run)
    assert entry["outcome"] == "success" and entry["note"] == "ship it"
    assert Runtime().next(run) == {"status": "done"}
    assert Runtime().verify(run)["ok"]


def test_a_person_who_types_something_else_answers_nothing(project: Path, run: str) -> None:
    answered = at_terminal(["reject", run], typed=lambda code: code[::-1] + "x", env=agent_env())
    assert answered.returncode != 0 and "not confirmed" in answered.stderr
    assert unanswered(run)
    answered = at_terminal(["reject", run], env=agent_env())
    assert answered.returncode == 0 and human_entries(run)[0]["outcome"] == "failure"


def test_the_verb_itself_refuses_inside_an_agent(
    project: Path, run: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every interface shares the check: the viewer's source too."""
    monkeypatch.setenv("GEMINI_CLI", "1")
    with pytest.raises(Exception, match="runs under an agent"):
        Runtime().approve(run, by="viewer")
    assert unanswered(run)


TWO_PEOPLE = """\
name: two
version: 1
tree:
  type: parallel
  name: Both
  children:
    - type: action
      name: Legal
      steps:
        - human: Is the licence fine?
    - type: action
      name: Design
      steps:
        - human: Does it look right?
"""


def test_with_several_human_steps_open_the_one_answered_is_the_one_confirmed(
    tmp_path: Path,
) -> None:
    (tmp_path / "two.yaml").write_text(TWO_PEOPLE)
    rt = Runtime()
    uri = str(rt.start(str(tmp_path / "two.yaml"), str(tmp_path / "two.json"))["uri"])
    rt.submit(uri, "success")
    assert [r["type"] for r in rt.open_steps(uri)["open"]] == ["human", "human"]
    done = as_agent(f"tether approve {uri}", tmp_path, agent_env())
    assert "this process has none" in done.stderr
    assert [e for e in rt.trace(uri) if e["kind"] == "human"] == []
    answered = at_terminal(["approve", uri], env=agent_env())
    assert "'Legal' asks" in answered.terminal and answered.returncode == 0
    assert [r["name"] for r in rt.open_steps(uri)["open"]] == ["Design"]


def test_r7_the_librarys_private_answer_is_refused_inside_an_agent(project: Path, run: str) -> None:
    """`Runtime()._answer(R, Human(True, "cli"))`, one line of Python from the agent's shell,
    and every other source it could name: the person gate sits in the answer itself."""
    for source in ("cli", "api", "viewer", "prompt"):
        line = (
            f'{sys.executable} -c "from tether.verbs import Runtime; from tether.engine import '
            f"public; Runtime()._answer('{run}', public.Human(True, '{source}'))\""
        )
        done = as_agent(line, project, agent_env(CLAUDECODE="1"))
        refused = "hook the harness runs" if source == "prompt" else "runs under an agent"
        assert done.returncode != 0 and refused in done.stderr, (source, done.stderr)
        assert unanswered(run), source


def test_r7_memory_executions_are_the_librarys_own_way_past_the_gate(
    project: Path, run: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An execution in `memory://` (tests, `tether test` walks) lives in its process alone: a
    person's answer there needs no person, even under an agent; a file's still does."""
    monkeypatch.setenv("CLAUDECODE", "1")
    rt = Runtime()
    uri = str(rt.start(str(project / "sign-off.yaml"), "memory://r7-walk")["uri"])
    rt.submit(uri, "success")
    rt.submit(uri, "success", values={"notes": "v2"})
    lint = next(r for r in rt.open_steps(uri)["open"] if r["name"] == "Lint")
    rt.submit(uri, "success", step=lint["step"])
    assert rt.approve(uri)["status"] == "approved"
    with pytest.raises(Exception, match="runs under an agent"):
        rt.approve(run)
    assert unanswered(run)


SOURCE = str(Path(tether.__file__).resolve().parents[1])


def _tether_as(*drop: str) -> list[str] | None:
    """The `tether` command as the user `drop` makes (this one when empty) can run it inside a
    PID namespace of its own: this test's interpreter, else the system's `python3` with this
    checkout's sources (an unprivileged user may not reach the first); None when neither runs."""
    for python, extra in ((sys.executable, []), ("/usr/bin/python3", [f"PYTHONPATH={SOURCE}"])):
        command = ["env", *extra, python, "-m", "tether.cli.main"]
        probe = [*drop, "unshare", "-rpf", "--mount-proc", *command, "--version"]
        if subprocess.run(probe, capture_output=True, check=False).returncode == 0:
            return command
    return None


UNPRIVILEGED = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


@pytest.mark.parametrize("user", ["this user", "unprivileged"])
def test_r6_a_child_pid_namespace_is_refused(request: pytest.FixtureRequest, user: str) -> None:
    """`unshare -rpf --mount-proc tether approve R` in a terminal the agent drives: inside the
    new PID namespace no ancestor shows, so no mark is found; the code is typed back, and the
    answer is still refused. Unprivileged, the same without the namespace is approved, so the
    refusal is the namespace's."""
    drop = UNPRIVILEGED if user == "unprivileged" else []
    if drop and os.geteuid() != 0:  # the install scripts run as root too (apt-get)
        pytest.fail("dropping to another user needs root: run the tests as root", pytrace=False)
    command = _tether_as(*drop)
    if command is None:  # util-linux's unshare and user namespaces: on every Debian machine
        pytest.fail(
            f"as {user}, unshare -rpf --mount-proc cannot run tether on this machine", pytrace=False
        )
    # a folder both users reach (pytest's own is this user's alone), removed at the end
    shared = Path(tempfile.mkdtemp(prefix="tether-r6-", dir="/tmp"))
    request.addfinalizer(lambda: shutil.rmtree(shared, ignore_errors=True))
    (shared / "sign-off.yaml").write_text(SIGN_OFF_YAML)
    (shared / "runs").mkdir()
    uri = _waiting(shared)
    if drop:
        for path in (shared, *shared.rglob("*")):
            path.chmod(0o777 if path.is_dir() else 0o666)
    env = agent_env(CLAUDECODE="1")
    attack = [*drop, "unshare", "-rpf", "--mount-proc", "env", "-u", "CLAUDECODE", *command]
    answered = at_terminal(["approve", uri], program=attack, env=env)
    assert answered.returncode != 0, answered.terminal
    assert "PID namespace of its own" in answered.stderr, answered.stderr
    assert unanswered(uri)
    if drop:  # the person, unprivileged, in no namespace of their own: approved
        answered = at_terminal(["approve", uri], program=[*drop, *command], env=agent_env())
        assert answered.returncode == 0, answered.stderr
        assert [e["outcome"] for e in human_entries(uri)] == ["success"]


def _waiting(project: Path) -> str:
    rt = Runtime()
    uri = str(rt.start(str(project / "sign-off.yaml"), str(project / RUN))["uri"])
    rt.submit(uri, "success")
    rt.submit(uri, "success", values={"notes": "v2: faster"})
    lint = next(r for r in rt.open_steps(uri)["open"] if r["name"] == "Lint")
    rt.submit(uri, "success", step=lint["step"])
    return uri
