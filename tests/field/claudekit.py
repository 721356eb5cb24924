"""Running the real Claude Code headless in a project Tether was installed into, for the field
tests of `test_claude_code.py`.

Owns: finding the harness (`.cache/harnesses`, installed by scripts/install-test-deps-harnesses;
a missing one fails the test and says so), a temporary project set up with Tether's own install
commands (`tether init`, `tether guard install claude`), one `claude -p` run against a scripted
model (a fresh `HOME`, no traffic but to the model server), and reading what came out: the
stream-json events, the execution's trace, the guard's state folder.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from field.anthropic import AnthropicModel

REPO = Path(__file__).resolve().parents[2]
CLAUDE = REPO / ".cache" / "harnesses" / "node_modules" / ".bin" / "claude"
BIN = Path(sys.executable).parent
TETHER = str(BIN / "tether")
TOOLS = "Bash Edit Read Write Agent"


def claude_binary() -> str:
    """The pinned Claude Code; a missing one fails the test with how to install it."""
    if not CLAUDE.exists():
        pytest.fail(
            f"Claude Code is not installed at {CLAUDE.relative_to(REPO)}: run "
            "scripts/install-test-deps-harnesses (scripts/test runs it)",
            pytrace=False,
        )
    return str(CLAUDE)


def home(project: Path) -> Path:
    """The fresh HOME of the project's test: Claude Code's and every `tether` call's."""
    folder = project.parent / "home"
    folder.mkdir(exist_ok=True)
    return folder


def tether(project: Path, *args: str, check: bool = True) -> Any:
    """`tether ARGS` in the project, with its HOME; the JSON answer, or the completed process."""
    done = subprocess.run(
        [TETHER, *args],
        cwd=project,
        env={**os.environ, "HOME": str(home(project))},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if not check:
        return done
    assert done.returncode == 0, (args, done.stdout, done.stderr)
    return json.loads(done.stdout)


def project(tmp: Path, guard: str = "", *, install: bool = True, trees: dict[str, str]) -> Path:
    """A project set up as a user would: `tether init`, the trees written, the `workflow`
    section of `.tether/guard.yaml` extended with `guard` (YAML lines indented under it), and
    `tether guard install claude`."""
    root = tmp / "project"
    root.mkdir()
    tether(root, "init", ".")
    for name, text in trees.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    if guard:
        config = root / ".tether" / "guard.yaml"
        config.write_text(config.read_text() + guard)
    if install:
        tether(root, "guard", "install", "claude")
    return root


@dataclass
class Run:
    """What one `claude -p` run left: its exit code, its stream-json events, its stderr."""

    code: int
    events: list[dict[str, Any]]
    stderr: str
    session: str

    def hooks(self, event: str | None = None) -> list[dict[str, Any]]:
        """The hook responses Claude Code reported (`--include-hook-events`)."""
        return [
            e
            for e in self.events
            if e.get("type") == "system"
            and e.get("subtype") == "hook_response"
            and (event is None or e.get("hook_event") == event)
        ]

    @property
    def result(self) -> dict[str, Any]:
        found = [e for e in self.events if e.get("type") == "result"]
        assert found, (self.code, self.stderr, self.events[-3:])
        return found[-1]


def environment(home: Path, model: AnthropicModel, **extra: str) -> dict[str, str]:
    """Claude Code's environment: the scripted model, a fresh HOME, no other traffic; the
    `tether` of this test run first on PATH."""
    keep = {k: v for k, v in os.environ.items() if k in ("PATH", "PYTHONPATH", "LANG", "TERM")}
    return {
        **keep,
        "PATH": f"{BIN}{os.pathsep}{keep.get('PATH', '/usr/bin:/bin')}",
        "HOME": str(home),
        "ANTHROPIC_API_KEY": "dummy",
        "ANTHROPIC_BASE_URL": model.url,
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        **extra,
    }


def claude(
    project: Path,
    model: AnthropicModel,
    prompt: str = "Do the work.",
    *args: str,
    tools: str = TOOLS,
    session: str | None = None,
    env: dict[str, str] | None = None,
) -> Run:
    """One headless Claude Code turn in `project` against `model`."""
    session = session or str(uuid.uuid4())
    resume = "--resume" in args
    command = [
        claude_binary(),
        "-p",
        prompt,
        "--output-format",
        "stream-json",
        "--verbose",
        "--include-hook-events",
        "--allowedTools",
        tools,
        *([] if resume else ["--session-id", session]),
        *args,
    ]
    done = subprocess.run(
        command,
        cwd=project,
        env=environment(home(project), model, **(env or {})),
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    events = []
    for line in done.stdout.splitlines():
        try:
            events.append(json.loads(line))
        except ValueError:
            continue
    return Run(done.returncode, events, done.stderr, session)


@contextmanager
def serving(project: Path) -> Iterator[str]:
    """`tether guard serve` for the project on a free port, with the test's HOME; yields the
    hook URL it prints."""
    server = subprocess.Popen(
        [TETHER, "guard", "serve", "--port", "0"],
        cwd=project,
        env={**os.environ, "HOME": str(home(project))},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert server.stdout is not None and server.stderr is not None
    try:
        line = server.stdout.readline()
        assert line, server.stderr.read()
        yield str(json.loads(line)["hook"])
    finally:
        server.terminate()
        server.wait(timeout=10)
        server.stdout.close()
        server.stderr.close()


def run_claude_command(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`claude ARGS` (`plugin validate`, `plugin install`, ...) with the test's HOME."""
    folder = tmp / "home"
    folder.mkdir(exist_ok=True)
    env = {**os.environ, "HOME": str(folder), "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}
    return subprocess.run(
        [claude_binary(), *args], env=env, capture_output=True, text=True, timeout=120, check=False
    )


def trace(project: Path, uri: str) -> list[dict[str, Any]]:
    """The execution's trace entries."""
    return list(tether(project, "trace", uri))


def kinds(entries: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e for e in entries if e["kind"] == kind]
