"""`tether guard replay` through the workflow binding: a recorded Claude Code session in which
the agent starts an execution, stops early, edits during review and submits untested work."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from tether.results import Resumed

TREE = """\
name: feature
tree:
  type: sequence
  name: Feature
  children:
    - type: action
      name: Implement
      steps:
        - instruct: Write the code for the feature.
    - type: action
      name: Review
      tools: {allow: [Read, Grep, "Bash(git diff*)"], deny: [Edit, Write]}
      steps:
        - instruct: Review the diff.
    - type: action
      name: Test
      steps:
        - instruct: Run the test suite and fix what fails.
        - check: TOOLS.exists(t, t.tool == "Bash" && t.input.command.contains("pytest") && t.ok)
"""


class Transcript:
    """A Claude Code transcript (JSONL), entry by entry as the harness writes it."""

    def __init__(self, project: Path) -> None:
        self.project = project
        self.lines: list[dict[str, Any]] = [{"type": "summary", "summary": "Add the feature"}]
        self.ids = itertools.count(1)

    def _entry(self, kind: str, message: dict[str, Any], **extra: Any) -> None:
        self.lines.append(
            {
                "parentUuid": None,
                "isSidechain": False,
                "userType": "external",
                "cwd": str(self.project),
                "sessionId": "7c1e9a20-0b1d-4f4e-8a77-3d2c1b0a9f8e",
                "version": "2.0.14",
                "type": kind,
                "uuid": f"e{len(self.lines)}",
                "timestamp": "2026-03-01T10:00:00.000Z",
                "message": message,
                **extra,
            }
        )

    def prompt(self, text: str) -> None:
        self._entry("user", {"role": "user", "content": text})

    def say(self, text: str) -> None:
        content = [{"type": "text", "text": text}]
        self._entry("assistant", {"role": "assistant", "content": content, "stop_reason": None})

    def call(self, tool: str, params: dict[str, Any], result: Any, error: bool = False) -> None:
        use = f"toolu_{next(self.ids):02d}"
        content = [{"type": "tool_use", "id": use, "name": tool, "input": params}]
        self._entry("assistant", {"role": "assistant", "content": content, "stop_reason": None})
        block = {"tool_use_id": use, "type": "tool_result", "content": result, "is_error": error}
        self._entry("user", {"role": "user", "content": [block]})

    def write(self) -> Path:
        path = self.project / "session.jsonl"
        path.write_text("".join(json.dumps(line) + "\n" for line in self.lines))
        return path


def replay(project: Path, transcript: Path) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "tether.cli.main", "guard", "replay", str(transcript)],
        capture_output=True,
        text=True,
        cwd=project,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "feature.yaml").write_text(TREE)
    (tmp_path / ".tether").mkdir()
    (tmp_path / ".tether" / "guard.yaml").write_text("workflow:\n  max_stop_blocks: 2\n")
    return tmp_path


def mcp(text: Mapping[str, Any]) -> list[dict[str, Any]]:
    """An MCP tool's result as the transcript keeps it: text blocks."""
    return [{"type": "text", "text": json.dumps(text)}]


def test_a_transcript_replays_through_the_binding(project: Path) -> None:
    recorded = f"file://{project}/runs/feature.json"
    trace = {"trace_output": "runs/feature.json"}
    t = Transcript(project)
    t.prompt("Add the feature, following the workflow in feature.yaml.")
    started = {"status": "started", "uri": recorded, "current": {"name": "Acknowledge_Protocol"}}
    t.call("mcp__tether__start_execution", {"tree_uri": "feature.yaml", **trace}, mcp(started))
    t.call("mcp__tether__submit", {**trace, "status": "success"}, mcp({"status": "accepted"}))
    t.say("The feature is done.")  # stops in the middle of Implement
    t.prompt("Is it?")
    edit = {"file_path": str(project / "app.py"), "old_string": "a", "new_string": "b"}
    t.call("Edit", edit, "ok")
    t.call("mcp__tether__submit", {**trace, "status": "success"}, mcp({"status": "done"}))
    t.call("Edit", edit, "ok")
    t.call("Bash", {"command": "git diff"}, "diff --git a/app.py b/app.py")
    t.call("Bash", {"command": "tether submit runs/feature.json success"}, "{}")
    t.say("Tests pass.")
    t.call("mcp__tether__submit", {**trace, "status": "success"}, mcp({"status": "failed"}))
    out = replay(project, t.write())

    rows = [(d["event"], d["action"]) for d in out["decisions"] if "workflow" in d]
    assert rows == [
        ("stop", "block"),
        ("context", "allow"),
        ("pre_tool", "block"),
    ]
    stop, context, edit = (d for d in out["decisions"] if "workflow" in d)
    assert "instruct 'Implement'" in stop["workflow"] and "refused 1 of 2" in stop["workflow"]
    assert "instruct 'Implement'" in context["workflow"]
    assert "Edit may not run while the instruct 'Review' is open" in edit["workflow"]
    (execution,) = out["executions"]
    assert execution["recorded"] == recorded
    assert execution["current"]["status"] == "failure"
    assert "TOOLS" in execution["failure"]
    assert execution["verified"] is True
    kinds = [(e["kind"], e["name"], e.get("tool")) for e in execution["entries"]]
    assert kinds == [
        ("stop", "Implement", None),
        ("tool", "Implement", "Edit"),
        ("tool", "Review", "Edit"),
        ("tool", "Review", "Bash"),
    ]
    assert not (project / "runs").exists()  # the recorded execution is never written


def test_a_transcript_that_runs_the_tests_passes_the_check(project: Path) -> None:
    t = Transcript(project)
    t.prompt("Add the feature.")
    shell = "tether start feature.yaml runs/f.json"
    t.call("Bash", {"command": shell}, json.dumps({"uri": f"file://{project}/runs/f.json"}))
    for _ in range(3):
        t.call("Bash", {"command": "tether submit runs/f.json success"}, "{}")
    t.call("Bash", {"command": "pytest -q"}, "3 passed")
    t.call("Bash", {"command": "tether submit runs/f.json success"}, "{}")
    t.say("Done, and tested.")
    out = replay(project, t.write())
    assert [d for d in out["decisions"] if d.get("event") == "stop"] == []
    (execution,) = out["executions"]
    assert execution["current"] == {"status": "done"} and execution["verified"]


def test_a_transcript_without_tether_replays_as_before(project: Path) -> None:
    t = Transcript(project)
    t.prompt("hello")
    t.say("hi")
    out = replay(project, t.write())
    assert "executions" not in out
    assert all("workflow" not in d for d in out["decisions"])


@pytest.mark.parametrize("tree", ["../outside.yaml", "link/feature.yaml", "/etc/hostname"])
def test_replay_reads_no_tree_outside_the_project(tmp_path: Path, tree: str) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / ".tether").mkdir()
    (project / ".tether" / "guard.yaml").write_text("workflow:\n  bind: auto\n")
    (tmp_path / "outside.yaml").write_text(TREE)
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "feature.yaml").write_text(TREE)
    (project / "link").symlink_to(tmp_path / "elsewhere")
    t = Transcript(project)
    t.prompt("go")
    t.call("Bash", {"command": f"tether start {tree} runs/x.json"}, "{}")
    t.say("Done.")
    out = replay(project, t.write())
    assert "executions" not in out  # nothing was started from the file outside
    assert all("workflow" not in d for d in out["decisions"])


@pytest.mark.parametrize("via", ["shell", "mcp"])
def test_a_recorded_fork_is_replayed_in_memory_and_bound(project: Path, via: str) -> None:
    """A fork names a second execution to write: replay makes it in memory too (never at the
    recorded path), binds the session to it as the hooks would, and goes on there."""
    t = Transcript(project)
    t.prompt("Add the feature.")
    shell = "tether start feature.yaml runs/f.json"
    t.call("Bash", {"command": shell}, json.dumps({"uri": f"file://{project}/runs/f.json"}))
    t.call("Bash", {"command": "tether submit runs/f.json success"}, "{}")
    forked = {"status": "forked", "uri": f"file://{project}/runs/g.json"}
    if via == "shell":
        line = "tether fork runs/f.json runs/g.json --at 0"
        t.call("Bash", {"command": line}, json.dumps(forked))
    else:
        args = {"trace_output": "runs/f.json", "new_trace_output": "runs/g.json", "at": 0}
        t.call("mcp__tether__fork_execution", args, mcp(forked))
    t.call("Bash", {"command": "tether submit runs/g.json success"}, "{}")  # the gate, again
    t.say("Stopping here.")
    out = replay(project, t.write())
    recorded = {e["recorded"]: e for e in out["executions"]}
    assert set(recorded) == {f"file://{project}/runs/f.json", f"file://{project}/runs/g.json"}
    fork = recorded[f"file://{project}/runs/g.json"]
    assert fork["current"]["name"] == "Implement" and fork["verified"]
    assert [e["kind"] for e in fork["entries"]] == ["stop"]  # bound: its stop was refused
    # the session stays bound to the original too, which still runs: its stop was refused there
    original = recorded[f"file://{project}/runs/f.json"]["entries"]
    assert [(e["kind"], e["outcome"]) for e in original] == [("stop", "refused")]
    assert not (project / "runs").exists()


def _earlier_session(project: Path, run: str) -> Resumed:
    """An execution an earlier session started and took past its gate and `Implement`; the
    answer a resume gave at that point."""
    from tether.verbs import Runtime

    rt = Runtime()
    rt.start(str(project / "feature.yaml"), str(project / run))
    rt.submit(str(project / run), "success")
    return rt.resume(str(project / run))


@pytest.mark.parametrize("via", ["shell", "mcp"])
def test_a_session_that_resumes_an_execution_it_did_not_start_is_replayed(
    project: Path, via: str
) -> None:
    """The session resumes an execution started before it: replay binds it to an in-memory
    copy of that execution as it stood when resumed, and leaves the file as it is."""
    resumed = _earlier_session(project, "runs/f.json")
    step = resumed["current"]["step"]
    t = Transcript(project)
    t.prompt("Carry on with the feature.")
    if via == "shell":
        t.call("Bash", {"command": "tether resume runs/f.json"}, json.dumps(resumed))
        t.call("Bash", {"command": f"tether submit runs/f.json success --step {step}"}, "{}")
    else:
        trace = {"trace_output": "runs/f.json"}
        t.call("mcp__tether__resume_execution", trace, mcp(resumed))
        t.call("mcp__tether__submit", {**trace, "status": "success", "step": step}, mcp({}))
    edit = {"file_path": str(project / "app.py"), "old_string": "a", "new_string": "b"}
    t.call("Edit", edit, "ok")  # during Review
    t.say("Done.")  # stops in the middle of Review
    before = (project / "runs" / "f.json").read_bytes()
    # the real execution went on after the resume; replay starts where the resume found it
    from tether.verbs import Runtime

    Runtime().submit(str(project / "runs" / "f.json"), "success", step=step)
    Runtime().submit(str(project / "runs" / "f.json"), "success")
    after = (project / "runs" / "f.json").read_bytes()
    out = replay(project, t.write())

    assert (project / "runs" / "f.json").read_bytes() == after != before  # never written
    rows = [(d["event"], d["action"]) for d in out["decisions"] if "workflow" in d]
    assert rows == [("pre_tool", "block"), ("stop", "block")]
    edit_row, stop_row = (d for d in out["decisions"] if "workflow" in d)
    assert "Edit may not run while the instruct 'Review' is open" in edit_row["workflow"]
    assert "instruct 'Review'" in stop_row["workflow"]
    (execution,) = out["executions"]
    assert execution["recorded"] == f"file://{project}/runs/f.json"
    assert execution["current"]["name"] == "Review" and execution["verified"]
    assert [(e["kind"], e["name"]) for e in execution["entries"]] == [
        ("tool", "Review"),
        ("stop", "Review"),
    ]


@pytest.mark.parametrize("recorded", [True, False])
@pytest.mark.parametrize("where", ["../outside/f.json", "link/f.json", "link"])
def test_replay_reads_no_resumed_execution_outside_the_project(
    tmp_path: Path, where: str, recorded: bool
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / ".tether").mkdir()
    (project / ".tether" / "guard.yaml").write_text("workflow:\n  bind: auto\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "feature.yaml").write_text(TREE)
    resumed = _earlier_session(outside, "f.json")
    if where == "link":  # the state file itself is a link out of the project
        (project / "link").symlink_to(outside / "f.json")
    else:
        (project / "link").symlink_to(outside)
    t = Transcript(project)
    t.prompt("go")
    answer = json.dumps(resumed) if recorded else "{}"  # the answer names the file outside
    t.call("Bash", {"command": f"tether resume {where}"}, answer)
    t.say("Done.")
    out = replay(project, t.write())
    assert "executions" not in out  # nothing was read from outside the project
    assert all("workflow" not in d for d in out["decisions"])
