"""What a person is shown at the terminal is what the trace says they were shown: `tether
approve` prints the human step's question with the values it names filled in (the request's
`shows`) before the one-time code, and the answer records those values as `shown`. Run at a real
pseudo-terminal on the shipped release example."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from support.command import REPO, TETHER
from support.person import at_terminal
from tether.verbs import Runtime

RELEASE = str(REPO / "examples" / "release.yaml")


def person_env() -> dict[str, str]:
    """A person's terminal: no agent harness's mark."""
    env = {**os.environ, "PATH": f"{Path(TETHER).parent}{os.pathsep}{os.environ['PATH']}"}
    env.pop("CLAUDECODE", None)
    return env


def at_sign_off(tmp_path: Path, **values: Any) -> str:
    """An execution of the release example whose open step is the human `Sign_Off`, after the
    agent wrote `values`."""
    rt = Runtime()
    uri = str(rt.start(RELEASE, str(tmp_path / "release.json"))["uri"])
    rt.submit(uri, "success")
    answered = rt.submit(uri, "success", values=values)
    assert answered["next"]["type"] == "human", answered
    return uri


def printed_values(terminal: str) -> dict[str, Any]:
    """The values the terminal printed under the question, read back as JSON, in order; the
    text before the code."""
    before = terminal.split("Type ", 1)[0]
    lines = before.splitlines()
    rows = lines[lines.index("with these values:") + 1 :]
    pairs = (row.strip().partition(" = ") for row in rows)
    return {name: json.loads(value) for name, _, value in pairs}


def shown_entry(uri: str) -> dict[str, Any]:
    (entry,) = [e for e in Runtime().trace(uri) if e["kind"] == "human"]
    return entry


def test_the_terminal_prints_the_values_before_the_code_and_the_trace_records_them(
    tmp_path: Path,
) -> None:
    uri = at_sign_off(tmp_path, version="1.2.3", changes="retries in the HTTP client")
    answered = at_terminal(["approve", uri, "--note", "read it"], env=person_env())
    assert answered.returncode == 0, answered.stderr
    terminal = answered.terminal
    assert "Publish version $VAR.version ($VAR.changes)?" in terminal
    assert terminal.index('$VAR.version = "1.2.3"') < terminal.index("Type ")
    assert printed_values(terminal) == {
        "$VAR.version": "1.2.3",
        "$VAR.changes": "retries in the HTTP client",
    }
    entry = shown_entry(uri)
    assert entry["by"] == "cli" and entry["outcome"] == "success"
    assert entry["shown"] == printed_values(terminal)
    assert Runtime().verify(uri)["ok"]


def test_a_value_that_would_move_the_cursor_is_printed_escaped_and_recorded_as_it_is(
    tmp_path: Path,
) -> None:
    """An agent's value that would redraw the line (an escape sequence, a carriage return) or
    reorder it (a bidi override) is printed as its JSON escape: the person reads every
    character, and the printed JSON reads back as the value recorded."""
    sly = "9.9.9\r\x1b[2K\x1b[1A1.2.3\u202e3.2.1\u200b"
    uri = at_sign_off(tmp_path, version=sly, changes={"notes": ["a\nb"], "n": 2})
    answered = at_terminal(["reject", uri], env=person_env())
    assert answered.returncode == 0, answered.stderr
    question = answered.terminal.split("Type ", 1)[0]
    assert "\x1b" not in question and "\u202e" not in question and "\u200b" not in question
    assert "\\u001b[2K" in question and "\\u202e" in question and "\\r" in question
    assert printed_values(answered.terminal) == {
        "$VAR.version": sly,
        "$VAR.changes": {"notes": ["a\nb"], "n": 2},
    }
    entry = shown_entry(uri)
    assert entry["outcome"] == "failure" and entry["shown"] == printed_values(answered.terminal)


def test_a_value_changed_after_it_was_printed_records_nothing(tmp_path: Path) -> None:
    """The agent writes another version while the person reads the question: the code typed
    back answers the step that was shown, which is stale now; nothing is recorded."""
    uri = at_sign_off(tmp_path, version="1.2.3", changes="a fix")

    def agent_writes_then_person_types(code: str) -> str:
        Runtime().var_write(uri, "version", "6.6.6")
        return code

    answered = at_terminal(["approve", uri], typed=agent_writes_then_person_types, env=person_env())
    assert answered.returncode != 0
    assert json.loads(answered.stderr)["error"]["code"] == "stale_step"
    assert printed_values(answered.terminal)["$VAR.version"] == "1.2.3"
    assert [e for e in Runtime().trace(uri) if e["kind"] == "human"] == []
    assert Runtime().next(uri)["shows"]["$VAR.version"] == "6.6.6"


@pytest.mark.parametrize("verb", ["approve", "reject"])
def test_a_question_that_names_no_value_prints_no_values(tmp_path: Path, verb: str) -> None:
    (tmp_path / "ask.yaml").write_text(
        "name: ask\nversion: 1\ntree:\n  type: action\n  name: Ask\n  steps:\n"
        "    - human: Is it fine?\n"
    )
    rt = Runtime()
    uri = str(rt.start(str(tmp_path / "ask.yaml"), str(tmp_path / "ask.json"))["uri"])
    rt.submit(uri, "success")
    answered = at_terminal([verb, uri], env=person_env())
    assert answered.returncode == 0, answered.stderr
    assert "Is it fine?" in answered.terminal and "with these values" not in answered.terminal
    assert "shown" not in shown_entry(uri)


def test_the_readmes_person_in_the_loop_example_runs_as_written(tmp_path: Path) -> None:
    """The README's lines, run in a project where `tether init` put the examples: the agent's
    two calls in a shell, then the person's `tether approve` at their terminal."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    block = readme.split("Try it on the shipped `examples/release.yaml`", 1)[1]
    block = block.split("```bash\n", 1)[1].split("```", 1)[0]
    lines = [line.split("   #", 1)[0].strip() for line in block.splitlines()]
    agent, person = lines[:2], lines[2]
    shutil.copytree(REPO / "examples", tmp_path / "examples")
    for line in agent:
        done = subprocess.run(
            ["bash", "-c", line],
            cwd=tmp_path,
            env=person_env(),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, (line, done.stderr)
    assert json.loads(done.stdout)["next"]["shows"] == {
        "$VAR.version": "1.2.3",
        "$VAR.changes": "a fix",
    }
    words = person.split()
    assert words[:2] == ["tether", "approve"]
    answered = at_terminal([*words[1:2], str(tmp_path / words[2])], env=person_env())
    assert answered.returncode == 0, answered.stderr
    assert printed_values(answered.terminal) == shown_entry(str(tmp_path / "rel.json"))["shown"]
