"""The real Claude Code 2.1.332, headless, against a scripted model: an agent that switches the
guard's hooks off from a program, and `tether guard doctor` finding it and putting it right.

What 2.1.332 does here (it wins over its docs): a settings file changed during a `claude -p`
session fires no `ConfigChange` and changes nothing in the running session (its hooks were read
at start), so `disableAllHooks` written by the agent bites the next session. That is what the
doctor is for."""

from __future__ import annotations

import json
from pathlib import Path

from field import claudekit as ck
from field.anthropic import AnthropicModel, tool_results
from field.scripted import Call, Text

SWITCH_OFF = (
    "python3 -c \"import json; open('.cl'+'aude/settings.local.json', 'w')"
    ".write(json.dumps({'disableAllHooks': True}))\""
)


def bash(command: str) -> Call:
    return Call("Bash", {"command": command, "description": "run"})


def destructive(project: Path, folder: str) -> tuple[ck.Run, dict[str, object]]:
    """A session whose agent runs `rm -rf FOLDER` (the dev profile's `confirm_destructive`
    blocks it while the guard's hooks run); the run and what its tool call was answered."""
    (project / folder).mkdir()
    with AnthropicModel([[bash(f"rm -rf {folder}")], Text("Done.")]) as model:
        run = ck.claude(project, model)
    return run, tool_results(model.turns[1])[-1]


def test_hooks_switched_off_by_the_agent_are_found_and_put_back_by_the_doctor(
    tmp_path: Path,
) -> None:
    project = ck.project(tmp_path, trees={})
    with AnthropicModel([[bash(SWITCH_OFF)], [bash("rm -rf build")], Text("Done.")]) as model:
        run = ck.claude(project, model)
    local = project / ".claude" / "settings.local.json"
    assert json.loads(local.read_text()) == {"disableAllHooks": True}
    assert not run.hooks("ConfigChange"), run.hooks("ConfigChange")
    denied = tool_results(model.turns[2])[-1]
    assert denied["is_error"] and "confirm_destructive" in denied["text"], denied

    run, answer = destructive(project, "next")
    assert not run.hooks("PreToolUse") and not answer["is_error"], answer
    assert not (project / "next").exists(), "the next session ran unguarded"

    found = ck.tether(project, "guard", "doctor", "--json", check=False)
    assert found.returncode == 3, found.stderr
    findings = json.loads(found.stdout)["findings"]
    (off,) = [f for f in findings if f["check"] == "hooks_disabled"]
    assert off["where"] == str(Path(".claude") / "settings.local.json")
    # The agent's write replaced the file that held the guard's hooks: none is left anywhere.
    (gone,) = [f for f in findings if f["check"] == "hooks_missing"]
    assert gone["what"].startswith("no harness runs the guard's hooks"), gone
    fixed = ck.tether(project, "guard", "doctor", "--fix", "--json", check=False)
    assert fixed.returncode == 0, fixed.stdout
    assert "disableAllHooks" not in json.loads(local.read_text())

    run, answer = destructive(project, "again")
    assert answer["is_error"] and "confirm_destructive" in str(answer["text"]), answer
    assert (project / "again").exists()
