"""The real Claude Code 2.1.332, headless, against a scripted model: Tether installed with its own
commands holds the session to its workflow (docs/workflow-guard.md)."""

from __future__ import annotations

from pathlib import Path

from field import claudekit as ck
from field.anthropic import AnthropicModel, said, tool_results
from field.scripted import Call, Text

REPORT = """\
name: report
version: 1
tree:
  type: action
  name: Report
  steps:
    - instruct: Write the weekly report to report.md.
      writes: [report]
"""


def bash(command: str) -> Call:
    return Call("Bash", {"command": command, "description": "run"})


def test_a_shell_start_binds_and_stops_are_refused_up_to_the_cap(tmp_path: Path) -> None:
    project = ck.project(tmp_path, "      max_stop_blocks: 3\n", trees={"report.yaml": REPORT})
    script = [[bash("tether start report.yaml run.json")], [bash("tether submit run.json success")], Text("All done.")]
    with AnthropicModel(script) as model:
        run = ck.claude(project, model)
    assert run.result["subtype"] == "success", run.result
    entries = ck.trace(project, "run.json")
    stops = ck.kinds(entries, "stop")
    assert [s["outcome"] for s in stops] == ["refused"] * 3 + ["allowed"], stops
    asked = model.turns
    for request in asked[3:6]:
        assert "Stop hook feedback" in said(request)
        assert "'Report'" in said(request)
