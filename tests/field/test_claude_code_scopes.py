"""File scopes in the real Claude Code, headless, against a scripted model: a step whose node
declares `writes: ["src/**"]` lets the agent write under `src/` and nowhere else, with its file
tools or its shell, and the denied files are never written."""

from __future__ import annotations

from pathlib import Path

from field import claudekit as ck
from field.anthropic import AnthropicModel, tool_results
from field.scripted import Call, Text

FIX = """\
name: fix
version: 1
tree:
  type: action
  name: Fix
  writes: ["src/**"]
  steps:
    - instruct: Fix the bug in src/calc.py; change nothing else.
"""

CALC = "def add(a, b):\n    return a - b\n"


def bash(command: str) -> Call:
    return Call("Bash", {"command": command, "description": "run"})


def test_a_write_outside_the_steps_scope_is_denied_in_claude_code(tmp_path: Path) -> None:
    """Claude Code's shell keeps its folder from one call to the next, and the hook's `cwd`
    follows it: after `cd src`, `echo >> calc.py` writes `src/calc.py` (allowed) and `echo >
    ../NOTES.md` the project's `NOTES.md` (denied)."""
    project = ck.project(tmp_path, trees={"fix.yaml": FIX, "src/calc.py": CALC})
    inside, outside = project / "src" / "calc.py", project / "NOTES.md"
    turns: list[list[Call] | Text] = [
        [bash("tether start fix.yaml run.json")],
        [bash("tether submit run.json success")],
        [Call("Read", {"file_path": str(inside)})],
        [Call("Edit", {"file_path": str(inside), "old_string": "a - b", "new_string": "a + b"})],
        [Call("Write", {"file_path": str(outside), "content": "I was here.\n"})],
        [bash("echo 'I was here.' > NOTES.md")],
        [bash('python3 -c \'open("NOTES.md", "w").write("x")\'')],
        [bash("cd src")],
        [bash("echo '# fixed' >> calc.py")],
        [bash("echo 'I was here.' > ../NOTES.md")],
        [bash(f"tether submit {project / 'run.json'} success")],
        Text("Fixed."),
    ]
    with AnthropicModel(turns) as model:
        run = ck.claude(project, model)
    assert run.result["subtype"] == "success", run.result
    assert inside.read_text() == "def add(a, b):\n    return a + b\n# fixed\n"
    assert not outside.exists()
    denied = [tool_results(model.turns[n])[-1] for n in (5, 6, 7, 10)]
    for result in denied:
        assert result["is_error"], result
        assert "[Tether] " in result["text"], result
        assert "may not run while the instruct 'Fix' is open" in result["text"], result
    assert "it writes NOTES.md, outside the scope" in denied[0]["text"]
    assert "it writes NOTES.md, outside the scope" in denied[1]["text"]
    assert "cannot tell what it writes: python3 is a program" in denied[2]["text"]
    assert "it writes NOTES.md, outside the scope" in denied[3]["text"]
    assert "'Fix' writes only src/**" in denied[3]["text"]
    trace = ck.trace(project, "run.json")
    tools = [e["tool"] for e in ck.kinds(trace, "tool")]
    assert tools == ["Read", "Edit", "Bash", "Bash"], tools  # a denied call is no evidence
    assert ck.kinds(trace, "instruct")[-1]["outcome"] == "action_complete"
