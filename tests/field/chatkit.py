"""Running GitHub Copilot CLI, Qwen Code and Factory Droid headless against the scripted Chat
Completions model, in a project Tether was installed into, for their field tests
(`test_copilot_cli.py`, `test_qwen_code.py`, `test_droid.py`).

Owns: finding each harness (`.cache/harnesses`, installed by scripts/install-test-deps-harnesses;
a missing one fails the test and says so), each one's headless run (`HARNESSES`: its program,
arguments, environment and user settings, a fresh `HOME`, no traffic but to the model on
127.0.0.1), the project as a user sets it up (`tether init`, then `tether guard install NAME`
in the bound-feature example it writes), and reading what came out: the execution's trace and
the sessions' bindings. What the model was told is read from the model (`ChatModel.told`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from field.openai_chat import ChatModel
from field.scripted import Call, Text, Turn

REPO = Path(__file__).resolve().parents[2]
BIN = REPO / ".cache" / "harnesses" / "node_modules" / ".bin"
TETHER = str(Path(sys.executable).with_name("tether"))
TRACE = "runs/feature.json"
PYTEST = "python -m pytest -q -p no:cacheprovider test_calc.py"  # the venv's python, first on PATH
REFUSED = "(Stop refused {} of 3 times in a row.)"


@dataclass(frozen=True)
class Harness:
    """How one harness runs headless: its program, its arguments around the prompt, its
    environment and the user settings it needs, given the model's URL and the HOME."""

    program: str
    args: Callable[[str], list[str]]
    env: Callable[[str], dict[str, str]]
    settings: Callable[[Path, str], None]


def _write(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def _qwen_settings(home: Path, url: str) -> None:
    _write(
        home / ".qwen" / "settings.json",
        {
            "security": {"auth": {"selectedType": "openai"}, "folderTrust": {"enabled": False}},
            "privacy": {"usageStatisticsEnabled": False},
            "telemetry": {"enabled": False},
            "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
        },
    )


def _droid_settings(home: Path, url: str) -> None:
    model = {
        "model": "fake-model",
        "displayName": "Fake",
        "baseUrl": f"{url}/v1",
        "apiKey": "sk-fake",
        "provider": "generic-chat-completion-api",
        "maxOutputTokens": 4096,
    }
    _write(home / ".factory" / "settings.json", {"customModels": [model]})


HARNESSES = {
    "copilot": Harness(
        "copilot",
        lambda prompt: ["-p", prompt, "--allow-all-tools", "--no-color"],
        lambda url: {
            "COPILOT_OFFLINE": "true",
            "COPILOT_PROVIDER_BASE_URL": f"{url}/v1",
            "COPILOT_PROVIDER_TYPE": "openai",
            "COPILOT_PROVIDER_API_KEY": "sk-fake",
            "COPILOT_MODEL": "gpt-4.1",
            "GITHUB_COPILOT_PROMPT_MODE_REPO_HOOKS": "true",  # the project's hooks in -p
        },
        lambda home, url: None,
    ),
    "qwen": Harness(
        "qwen",
        lambda prompt: ["-p", prompt, "--yolo"],
        lambda url: {
            "OPENAI_BASE_URL": f"{url}/v1",
            "OPENAI_API_KEY": "sk-fake",
            "OPENAI_MODEL": "fake-model",
            "QWEN_CODE_SUPPRESS_YOLO_WARNING": "1",
        },
        _qwen_settings,
    ),
    "droid": Harness(
        "droid",
        lambda prompt: ["exec", "-m", "custom:Fake-0", "--auto", "high", prompt],
        lambda url: {},
        _droid_settings,
    ),
}


def installed(name: str) -> Path:
    """The pinned harness; a missing one fails the test with how to install it."""
    program = BIN / HARNESSES[name].program
    if not program.exists():
        pytest.fail(
            f"{name} is not installed at {program.relative_to(REPO)}: run "
            "scripts/install-test-deps-harnesses (scripts/test runs it)",
            pytrace=False,
        )
    return program


def _environment(home: Path, extra: dict[str, str]) -> dict[str, str]:
    """A fresh HOME, this test run's `tether` first on PATH, nothing of the machine's own
    (no credentials, no configuration elsewhere)."""
    keep = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "TERM")}
    path = f"{os.path.dirname(TETHER)}{os.pathsep}{keep.get('PATH', '/usr/bin:/bin')}"
    return {**keep, "PATH": path, "HOME": str(home), **extra}


def tether(project: Path, *args: str) -> Any:
    """`tether ARGS` in the project, with the test's HOME; its JSON answer."""
    home = project.parents[2] / "home"
    done = subprocess.run(
        [TETHER, *args],
        cwd=project,
        env=_environment(home, {}),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, (args, done.stdout, done.stderr)
    return json.loads(done.stdout) if done.stdout.strip() else None


def setup(tmp: Path, name: str) -> Path:
    """`tether init` in a fresh folder, then the harness's hooks installed by `tether guard
    install NAME` in the bound-feature example it wrote (a git repository, as projects are)."""
    installed(name)
    (tmp / "home").mkdir()
    (tmp / "work").mkdir()
    done = subprocess.run(
        [TETHER, "init", str(tmp / "work")],
        env=_environment(tmp / "home", {}),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    project = tmp / "work" / "examples" / "bound-feature"
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    result = tether(project, "guard", "install", name)
    assert result["harness"] == name and result["added"], result
    return project


@dataclass
class Run:
    code: int
    stdout: str
    stderr: str


def run(name: str, project: Path, model: ChatModel, prompt: str = "Do the work.") -> Run:
    """One headless session of harness `name` in `project` against `model`."""
    spec = HARNESSES[name]
    home = project.parents[2] / "home"
    spec.settings(home, model.url)
    done = subprocess.run(
        [str(installed(name)), *spec.args(prompt)],
        cwd=project,
        env=_environment(home, spec.env(model.url)),
        capture_output=True,
        text=True,
        timeout=240,
        stdin=subprocess.DEVNULL,
    )
    return Run(done.returncode, done.stdout, done.stderr)


def walk_to(project: Path, step: str) -> None:
    """The execution started outside the session and answered up to `step` (Review, Test)."""
    tether(project, "start", "feature.yaml", TRACE)
    answers = [[], ["--set", "plan=Keep add as it is."], [], ["--set", "review=Fine."]]
    for extra in answers[: 3 if step == "Review" else 4]:
        tether(project, "submit", TRACE, "success", *extra)
    assert tether(project, "next", TRACE)["name"] == step


def entries(project: Path, kind: str) -> list[dict[str, Any]]:
    return [e for e in tether(project, "trace", TRACE) if e["kind"] == kind]


def bindings(project: Path) -> list[dict[str, Any]]:
    """Every execution a session is bound to (`trace`, `via`), over the sessions."""
    folder = project.parents[2] / "home" / ".local" / "state" / "tether" / "guard" / "bindings"
    files = sorted(folder.glob("*.json"))
    return [e for p in files for e in json.loads(p.read_text())["executions"]]


# -- the scenarios each harness's module runs -----------------------------------------------------


@dataclass(frozen=True)
class Tools:
    """A harness's calls as its model makes them: a shell command, a read and an edit of a
    file."""

    shell: Callable[[str], Call]
    read: Callable[[Path], Call]
    edit: Callable[[Path, str, str], Call]


def binds_and_refuses_stops(name: str, tmp: Path, tools: Tools) -> ChatModel:
    """A shell start binds the session; its stops are refused up to the cap (3), each reason
    reaching the model as the next prompt, and the fourth is let through."""
    project = setup(tmp, name)
    script: list[Turn] = [[tools.shell(f"tether start feature.yaml {TRACE}")], Text("All done.")]
    with ChatModel(script) as model:
        done = run(name, project, model, "Start the feature workflow.")
    assert done.code == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert [(b["via"], b["trace"].endswith(TRACE)) for b in bindings(project)] == [("shell", True)]
    assert [s["outcome"] for s in entries(project, "stop")] == ["refused"] * 3 + ["parked"]
    told = model.told()
    for n in (1, 2, 3):
        reason = next(t for t in told if REFUSED.format(n) in t)
        assert "its open step is the instruct 'Acknowledge_Protocol'" in reason
    assert len(model.turns) == 5  # the start, the stop, three refusals: not asked a sixth time
    return model


def denies_outside_the_policy(name: str, tmp: Path, tools: Tools) -> list[str]:
    """At Review (Read, Grep, Glob and read-only shell commands), an edit and a shell write are
    denied, the model is told why, the file is unchanged and no evidence is recorded; the
    denials' texts as the model got them are returned."""
    project = setup(tmp, name)
    walk_to(project, "Review")
    calc = project / "calc.py"
    before = calc.read_text()
    script: list[Turn] = [
        [tools.shell(f"tether resume {TRACE}")],
        [tools.edit(calc, "return a + b", "return b + a")],
        [tools.shell("sed -i 's/a + b/a - b/' calc.py")],
        Text("Reviewed."),
    ]
    with ChatModel(script) as model:
        done = run(name, project, model, "Review the change.")
    assert done.code == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert calc.read_text() == before
    denied = [t for t in model.tool_results() if "may not run while the instruct 'Review'" in t]
    assert len(denied) == 2, model.tool_results()
    assert "Edit may not run" in denied[0] and "Bash may not run" in denied[1]
    assert [b["via"] for b in bindings(project)] == ["shell"]  # bound by its resume
    assert entries(project, "tool") == []  # a denied call never ran: no evidence of it
    return denied


def evidence_decides_the_check(name: str, tmp: Path, tools: Tools) -> list[tuple[str, Any]]:
    """At Test, a failing pytest run is not a passing one: the check refuses the first submit
    and passes the second, after the fix and a passing run. Returns the evidence recorded,
    `(tool, ok)` in order."""
    project = setup(tmp, name)
    walk_to(project, "Test")
    calc = project / "calc.py"
    calc.write_text(calc.read_text().replace("a + b", "a - b"))  # a bug for the tests to find
    submit = [tools.shell(f"tether submit {TRACE} success")]
    script: list[Turn] = [
        [tools.shell(f"tether resume {TRACE}")],
        [tools.shell(PYTEST)],  # fails: exit 1
        submit,  # refused by the check: no passing pytest run yet
        [tools.read(calc)],  # Qwen Code edits only a file read in the session
        [tools.edit(calc, "return a - b", "return a + b")],
        [tools.shell(PYTEST)],  # passes
        submit,
        Text("Tests pass."),
    ]
    with ChatModel(script) as model:
        done = run(name, project, model, "Run the tests and fix what fails.")
    assert done.code == 0, done.stdout[-2000:] + done.stderr[-2000:]
    checks = [c["outcome"] for c in entries(project, "check") if c["name"] == "Test"]
    assert checks == ["failed", "passed"], model.tool_results()
    retried = next(t for t in model.tool_results() if "Retrying" in t)
    assert "'Test' attempt 2 of 3" in retried
    assert tether(project, "next", TRACE) == {"status": "done"}
    assert entries(project, "stop") == []  # done: the stop went through unrecorded
    return [(e["tool"], e["ok"]) for e in entries(project, "tool")]


def tells_the_open_step(name: str, tmp: Path, tools: Tools) -> str:
    """With the project's execution configured, the model is told its open step before its
    first turn; the text it was told is returned."""
    project = setup(tmp, name)
    config = project / ".tether" / "guard.yaml"
    config.write_text(config.read_text().replace(f"# trace: {TRACE}", f"trace: {TRACE}"))
    walk_to(project, "Review")
    with ChatModel([Text("Nothing to do.")]) as model:
        done = run(name, project, model, "What now?")
    assert done.code == 0, done.stdout[-2000:] + done.stderr[-2000:]
    first = model.turns[0].body["messages"]
    said = "\n".join(json.dumps(m.get("content")) for m in first)
    assert "[Tether] This session is bound" in said, said[-3000:]
    assert "Current request: instruct 'Review' (step " in said
    return said


HUMAN = """\
name: release
version: 1
tree:
  type: action
  name: Release
  steps:
    - human: Approve the release notes.
"""


def refuses_the_agents_approve(name: str, tmp: Path, tools: Tools, harness: str) -> None:
    """A person's step is not the agent's to answer: an approve the guard does not read (a
    program that runs `tether approve`) is refused by the runtime, which knows the process runs
    under `harness` (by the mark its shell carries, or its program)."""
    project = setup(tmp, name)
    (project / "release.yaml").write_text(HUMAN)
    sneak = 'python3 -c \'import subprocess; subprocess.run(["tether", "approve", "run.json"])\''
    script: list[Turn] = [
        [tools.shell("tether start release.yaml run.json")],
        [tools.shell("tether submit run.json success")],
        [tools.shell(sneak)],
        Text("Over to you."),
    ]
    with ChatModel(script) as model:
        done = run(name, project, model, "Release it.")
    assert done.code == 0, done.stdout[-2000:] + done.stderr[-2000:]
    refused = [t for t in model.tool_results() if "human_only" in t]
    assert refused and f"({harness})" in refused[0], model.tool_results()
    trace = tether(project, "trace", "run.json")
    assert [e for e in trace if e["kind"] == "human"] == []
    assert tether(project, "get", "run.json")["status"] == "running"


def ends_the_turn_itself_at(name: str, tmp: Path, tools: Tools, cap: int) -> None:
    """With `max_stop_blocks` above the harness's own limit, the harness ends the turn at the
    `cap`th blocked stop in a row: each refusal before it reaches the model, that one does not,
    and the model is not asked again."""
    project = setup(tmp, name)
    config = project / ".tether" / "guard.yaml"
    config.write_text(
        config.read_text().replace("max_stop_blocks: 3", "max_stop_blocks: 20\n      park: false")
    )
    script: list[Turn] = [[tools.shell(f"tether start feature.yaml {TRACE}")], Text("Done.")]
    with ChatModel(script) as model:
        done = run(name, project, model, "Start the feature workflow.")
    assert done.code == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert [s["outcome"] for s in entries(project, "stop")] == ["refused"] * cap
    shown = [t for t in model.told() if "of 20 times in a row.)" in t]
    assert len(shown) == cap - 1 and len(model.turns) == 2 + cap - 1
