"""The real Claude Code 2.1.332, headless, against a scripted model: a lead agent and two
sub-agents it starts through the Agent (Task) tool walk one execution, each sub-agent bound by
the guard to the branch it claimed (docs/teams.md, "Sub-agents in the guard"). The sub-agents'
turns react to what the harness showed them (their name, from the guard's `SubagentStart`
context; the step tokens), as a model would."""

from __future__ import annotations

import json
import re
from pathlib import Path

from field import claudekit as ck
from field.anthropic import AnthropicModel, said, tool_results
from field.scripted import Call, Reacting, Request, Text, Turn

TEAM = """\
name: team
version: 1
tree:
  type: parallel
  name: Release
  children:
    - type: action
      name: Notes
      tools: {allow: [Read, Write, Agent], deny: [Edit]}
      writes: [NOTES.md]
      steps: [{instruct: Write the release notes to NOTES.md.}]
    - type: action
      name: Version
      tools: {allow: [Read, Edit, Write, Agent]}
      writes: [version.py]
      steps: [{instruct: Bump the version in version.py.}]
"""
VERSION = 'VERSION = "1.0"\n'
_NAME = re.compile(r"You are the sub-agent (\S+) ")


def bash(command: str) -> Call:
    return Call("Bash", {"command": command, "description": "run"})


def hand_off(prompt: str) -> Call:
    """The lead starts a sub-agent and waits for it (so that its turns come in order)."""
    return Call(
        "Agent",
        {
            "description": prompt,
            "prompt": prompt,
            "subagent_type": "general-purpose",
            "run_in_background": False,
        },
    )


def me(request: Request) -> str:
    """The sub-agent's name, as the guard told it at its start."""
    found = _NAME.search(said(request))
    assert found, said(request)[-2000:]
    return found.group(1)


def step_of(request: Request, name: str) -> str:
    """The token of the open step `name`, as the guard's context listed it."""
    found = re.search(rf"'{name}' \(step (\S+?)[,)]", said(request))
    assert found, said(request)[-2000:]
    return found.group(1)


def claim(name: str, *, as_: str | None = None) -> Reacting:
    return lambda r: [
        bash(f"tether claim run.json --agent {as_ or me(r)} --step {step_of(r, name)}")
    ]


def answer(name: str) -> Reacting:
    return lambda r: [
        bash(f"tether submit run.json success --step {step_of(r, name)} --agent {me(r)}")
    ]


def test_two_sub_agents_each_held_to_the_branch_it_claimed(tmp_path: Path) -> None:
    project = ck.project(tmp_path, trees={"team.yaml": TEAM, "version.py": VERSION})
    version, notes = project / "version.py", project / "NOTES.md"
    read = Call("Read", {"file_path": str(version)})
    bump = Call("Edit", {"file_path": str(version), "old_string": "1.0", "new_string": "1.1"})
    write = Call("Write", {"file_path": str(notes), "content": "# 1.1\n"})
    script: list[Turn | Reacting] = [
        [bash("tether start team.yaml run.json")],  # 0 the lead
        [bash("tether submit run.json success")],  # 1 the protocol
        [hand_off("Write the release notes: claim the Notes step.")],  # 2
        claim("Notes"),  # 3 the first sub-agent
        [read],  # 4
        [bump],  # 5 denied: Notes denies Edit
        Text("I cannot edit; stopping."),  # 6 refused: Notes is open
        [write],  # 7
        answer("Notes"),  # 8
        Text("Notes written."),  # 9 its stop goes through
        Text("Waiting for the version."),  # 10 the lead's stop: refused, Version is open
        [hand_off("Bump the version: claim the Version step.")],  # 11
        claim("Version", as_="lead"),  # 12 the second sub-agent, under another name: denied
        claim("Version"),  # 13
        [write],  # 14 denied: Version writes only version.py
        [read],  # 15
        [bump],  # 16
        answer("Version"),  # 17
        Text("Version bumped."),  # 18
        Text("Released."),  # 19 the lead: the execution is done, its stop goes through
    ]
    with AnthropicModel(script) as model:
        run = ck.claude(project, model, "Release it with two sub-agents.")
    assert run.result["subtype"] == "success", run.result
    turns = model.turns
    first, second = me(turns[3]), me(turns[12])
    assert first != second
    assert version.read_text() == 'VERSION = "1.1"\n' and notes.read_text() == "# 1.1\n"

    denied = tool_results(turns[6])[-1]
    assert denied["is_error"] and "Edit may not run while the instruct 'Notes'" in denied["text"]
    refused = said(turns[7])
    assert "Stop hook feedback:" in refused and "'Notes'" in refused
    assert f"--agent {first}" in refused
    lead_refused = said(turns[11])
    assert "Stop hook feedback:" in lead_refused and "'Version'" in lead_refused
    spoofed = tool_results(turns[13])[-1]
    assert f"You are the sub-agent {second}" in spoofed["text"], spoofed
    denied = tool_results(turns[15])[-1]
    assert "Write may not run while the instruct 'Version'" in denied["text"], denied
    assert "'Version' writes only version.py" in denied["text"], denied

    trace = ck.trace(project, "run.json")
    who = [(e["kind"], e["name"], e.get("agent")) for e in trace if e.get("agent")]
    assert ("claim", "Notes", first) in who and ("claim", "Version", second) in who
    assert ("instruct", "Notes", first) in who and ("instruct", "Version", second) in who
    tools = [(e["tool"], e["name"], e.get("agent")) for e in ck.kinds(trace, "tool")]
    assert ("Write", "Notes", first) in tools and ("Edit", "Version", second) in tools
    assert not any(agent == first and name == "Version" for _, name, agent in tools), tools
    stops = [(e["name"], e.get("agent"), e["outcome"]) for e in ck.kinds(trace, "stop")]
    assert stops == [("Notes", first, "refused"), ("Version", None, "refused")], stops
    assert ck.tether(project, "get", "run.json")["status"] == "complete"
    assert ck.tether(project, "verify", "run.json")["ok"] is True


def test_a_sub_agent_that_keeps_stopping_is_parked_before_the_harness_cap(
    tmp_path: Path,
) -> None:
    project = ck.project(tmp_path, "      max_stop_blocks: 20\n", trees={"team.yaml": TEAM})
    script: list[Turn | Reacting] = [
        [bash("tether start team.yaml run.json")],
        [bash("tether submit run.json success")],
        [hand_off("Write the release notes: claim the Notes step.")],
        claim("Notes"),
        *[Text(f"Stopping, try {n}.") for n in range(1, 9)],  # the sub-agent's stops
    ]
    with AnthropicModel(script) as model:
        run = ck.claude(project, model, "Release it with a sub-agent.")
    assert run.result["subtype"] == "success", run.result
    agent = me(model.turns[3])
    stops = [
        (e.get("agent"), e["outcome"]) for e in ck.kinds(ck.trace(project, "run.json"), "stop")
    ]
    # parked at its 8th stop, before Claude Code ends the sub-agent itself at its 9th refusal;
    # the lead's own stops come after, counted apart
    assert stops[:8] == [(agent, "refused")] * 7 + [(agent, "parked")], stops
    assert all(who is None for who, _ in stops[8:]) and stops[8:], stops
    report = [t for t in model.turns if "Stopping, try 8." in said(t)]
    assert report, "the lead got the sub-agent's last word as its report"


def _lead(done: int) -> Turn:
    """The lead's turn after `done` tool results: start, accept the protocol, hand both branches
    out in one message (Claude Code runs the two sub-agents at once), then end."""
    if done == 0:
        return [bash("tether start team.yaml run.json")]
    if done == 1:
        return [bash("tether submit run.json success")]
    if done == 2:
        return [hand_off("Branch Notes: claim it."), hand_off("Branch Version: claim it.")]
    return Text("Released.")


def _sub(request: Request, done: int, branch: str, files: Path) -> Turn:
    """A sub-agent's turn after `done` tool results, on its `branch`: claim it, try a call its
    branch does not allow, stop once too early, do the work, answer, end."""
    version, notes = files / "version.py", files / "NOTES.md"
    read = Call("Read", {"file_path": str(version)})
    bump = Call("Edit", {"file_path": str(version), "old_string": "1.0", "new_string": "1.1"})
    write = Call("Write", {"file_path": str(notes), "content": "# 1.1\n"})
    work = {"Notes": [read, bump, write], "Version": [write, read, bump]}[branch]
    if done == 0:
        return claim(branch)(request)
    if done <= 2:
        return [work[done - 1]]
    if done == 3 and "Stop hook feedback:" not in said(request):
        return Text("Stopping early.")
    if done == 3:
        return [work[2]]
    if done == 4:
        return answer(branch)(request)
    return Text(f"{branch} done.")


def test_two_sub_agents_at_once_each_held_to_its_branch(tmp_path: Path) -> None:
    """The lead hands both branches out in one message: the two sub-agents run at the same time,
    their hooks interleaved; each turn is made from the conversation it answers."""
    project = ck.project(tmp_path, trees={"team.yaml": TEAM, "version.py": VERSION})

    def turn(request: Request) -> Turn:
        done = len(tool_results(request))
        first = json.dumps(request.body["messages"][:1])  # the prompt the lead gave it
        if "You are the sub-agent" not in said(request):
            return _lead(done)
        branch = "Notes" if "Branch Notes" in first else "Version"
        return _sub(request, done, branch, project)

    with AnthropicModel([turn] * 40) as model:
        run = ck.claude(project, model, "Release it with two sub-agents at once.")
    assert run.result["subtype"] == "success", run.result
    assert (project / "version.py").read_text() == 'VERSION = "1.1"\n'
    assert (project / "NOTES.md").read_text() == "# 1.1\n"
    trace = ck.trace(project, "run.json")
    holders = {e["name"]: e["agent"] for e in ck.kinds(trace, "claim")}
    assert len(set(holders.values())) == 2, holders
    answers = {e["name"]: e.get("agent") for e in ck.kinds(trace, "instruct")}
    assert answers == holders, (answers, holders)
    stops = [(e["name"], e.get("agent"), e["outcome"]) for e in ck.kinds(trace, "stop")]
    assert sorted(stops) == sorted((name, agent, "refused") for name, agent in holders.items())
    tools = {(e["tool"], e["name"], e.get("agent")) for e in ck.kinds(trace, "tool")}
    assert ("Write", "Notes", holders["Notes"]) in tools
    assert ("Edit", "Version", holders["Version"]) in tools
    assert ("Edit", "Notes", holders["Notes"]) not in tools  # denied, never run
    assert ("Write", "Version", holders["Version"]) not in tools
    denials = [r["text"] for t in model.turns for r in tool_results(t) if r["is_error"]]
    assert any("Edit may not run while the instruct 'Notes'" in d for d in denials), denials
    assert any("'Version' writes only version.py" in d for d in denials), denials
    assert ck.tether(project, "get", "run.json")["status"] == "complete"
    assert ck.tether(project, "verify", "run.json")["ok"] is True
