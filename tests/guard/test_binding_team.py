"""A team in one bound session: each sub-agent (the `agent_id` Claude Code's hook payloads carry)
bound to the branch it claimed. Its calls meet its branch's policy and are recorded naming it, its
`SubagentStop` is refused while its branch is open, it answers under its own name only, and one
that holds no claim is held to the lead's steps. docs/teams.md, "Sub-agents in the guard"."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from guard import hookkit as hk
from tether.verbs import Runtime

PAIR = """\
name: pair
version: 1
tree:
  type: sequence
  name: Pair
  children:
    - type: parallel
      name: Both
      children:
        - type: action
          name: Docs
          tools: {allow: [Read, Write, "Bash(echo*)"], deny: [Edit]}
          writes: [NOTES.md]
          steps: [{instruct: Write the release notes.}]
        - type: action
          name: Code
          tools: {allow: [Read, Edit, Write]}
          writes: [version.py]
          steps: [{instruct: Bump the version.}]
    - {type: action, name: Ship, steps: [{instruct: Tag and publish.}]}
"""
DOCS_AGENT = "a1f0c3d5e7b9d2c4a"
CODE_AGENT = "b2e1d4c6f8a0e3d5b"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pair.yaml").write_text(PAIR)
    (tmp_path / ".tether").mkdir()
    (tmp_path / ".tether" / "guard.yaml").write_text(
        "workflow:\n  trace: run.json\n  max_stop_blocks: 3\n"
    )
    return tmp_path


@pytest.fixture
def run(project: Path) -> str:
    """The execution, past its protocol gate: `Docs` and `Code` are open."""
    rt = Runtime()
    uri = str(rt.start(str(project / "pair.yaml"), str(project / "run.json"))["uri"])
    rt.submit(uri, "success")
    hk.hook_json(project, hk.prompt(project, "Ship the release with two sub-agents."))
    return uri


def token(uri: str, name: str) -> str:
    return next(str(r["step"]) for r in Runtime().next(uri, all=True) if r["name"] == name)


def sub(name: str, agent: str, project: Path, **fields: Any) -> dict[str, Any]:
    """A hook event of the sub-agent `agent`, as Claude Code 2.1.332 sends it."""
    payload = {"hook_event_name": name, "agent_id": agent, "agent_type": "general-purpose"}
    if name == "PreToolUse":
        return {**hk.pre(project, **fields), **payload}
    if name == "PostToolUse":
        return {**hk.post(project, **fields), **payload}
    return {**hk.event(name, project, **fields), **payload}


def sub_stop(project: Path, agent: str, said: str = "Done.") -> dict[str, Any]:
    transcript = str(project / ".claude" / f"agent-{agent}.jsonl")
    return sub(
        "SubagentStop",
        agent,
        project,
        stop_hook_active=False,
        last_assistant_message=said,
        agent_transcript_path=transcript,
        background_tasks=[],
    )


def pre(project: Path, agent: str | None, tool: str, params: dict[str, Any]) -> str | None:
    """The reason the call is denied (None: it runs)."""
    payload = (
        hk.pre(project, tool, params)
        if agent is None
        else sub("PreToolUse", agent, project, tool=tool, tool_input=params)
    )
    out = hk.hook_json(project, payload)
    specific = (out or {}).get("hookSpecificOutput", {})
    return specific.get("permissionDecisionReason") if specific.get("permissionDecision") else None


def claimed(project: Path, uri: str) -> tuple[str, str]:
    """Each sub-agent started and claimed its branch, as its `tether claim` line would."""
    docs, code = token(uri, "Docs"), token(uri, "Code")
    for agent, step in ((DOCS_AGENT, docs), (CODE_AGENT, code)):
        hk.hook_json(project, sub("SubagentStart", agent, project))
        line = f"tether claim run.json --agent {agent} --step {step}"
        assert pre(project, agent, "Bash", {"command": line}) is None
        Runtime().claim(uri, agent, step=step)
    return docs, code


def test_a_sub_agent_is_told_its_name_and_the_open_branches(project: Path, run: str) -> None:
    out = hk.hook_json(project, sub("SubagentStart", DOCS_AGENT, project))
    assert out is not None
    told = out["hookSpecificOutput"]["additionalContext"]
    assert out["hookSpecificOutput"]["hookEventName"] == "SubagentStart"
    assert f"You are the sub-agent {DOCS_AGENT}" in told
    assert f"--agent {DOCS_AGENT}" in told
    assert f"'Docs' (step {token(run, 'Docs')})" in told
    assert f"'Code' (step {token(run, 'Code')})" in told


def test_each_sub_agent_meets_the_policy_of_the_branch_it_claimed(project: Path, run: str) -> None:
    claimed(project, run)
    edit = {"file_path": str(project / "version.py"), "old_string": "1", "new_string": "2"}
    write = {"file_path": str(project / "NOTES.md"), "content": "Notes."}
    denied = pre(project, DOCS_AGENT, "Edit", edit)
    assert denied is not None and "Edit may not run while the instruct 'Docs' is open" in denied
    assert pre(project, DOCS_AGENT, "Write", write) is None
    denied = pre(project, CODE_AGENT, "Write", write)  # its tools allow Write, its scope not there
    assert denied is not None and "while the instruct 'Code' is open" in denied
    assert "'Code' writes only version.py" in denied
    assert pre(project, CODE_AGENT, "Edit", edit) is None
    assert pre(project, CODE_AGENT, "Write", {**write, "file_path": edit["file_path"]}) is None
    denied = pre(project, DOCS_AGENT, "Write", {**write, "file_path": edit["file_path"]})
    assert denied is not None and "'Docs' writes only NOTES.md" in denied
    # the lead is held to every open step: one that allows the call lets it run
    assert pre(project, None, "Edit", edit) is None and pre(project, None, "Write", write) is None


def test_a_sub_agent_without_a_claim_is_held_to_the_leads_steps(project: Path, run: str) -> None:
    claimed(project, run)
    stranger = "c3f2e5d7a9b1f4e6c"
    denied = pre(project, stranger, "Bash", {"command": "rm -rf build"})
    assert denied is not None and "may not run while the instruct" in denied
    assert pre(project, stranger, "Edit", {"file_path": str(project / "version.py")}) is None
    assert hk.hook_json(project, sub_stop(project, stranger)) is None  # it holds nothing


def test_a_sub_agent_answers_under_its_own_name_only(project: Path, run: str) -> None:
    docs, code = claimed(project, run)
    own = f"tether submit run.json success --step {docs} --agent {DOCS_AGENT}"
    assert pre(project, DOCS_AGENT, "Bash", {"command": own}) is None
    for line in (
        f"tether submit run.json success --step {code} --agent {CODE_AGENT}",
        f"tether submit run.json success --step {docs}",  # names nobody
        f"echo ok && tether claim run.json --agent={CODE_AGENT} --step {code}",
        f"bash -c 'tether submit run.json success --agent {CODE_AGENT}'",
    ):
        denied = pre(project, DOCS_AGENT, "Bash", {"command": line})
        assert denied is not None and f"You are the sub-agent {DOCS_AGENT}" in denied, line
    mcp = {"trace_output": run, "status": "success", "step": code, "agent": CODE_AGENT}
    assert pre(project, DOCS_AGENT, "mcp__tether__submit", mcp) is not None
    assert pre(project, CODE_AGENT, "mcp__tether__submit", mcp) is None
    # the lead answers under none of its sub-agents' names
    for line in (own, f"sh -c 'tether submit run.json success --agent={DOCS_AGENT}'"):
        lead = pre(project, None, "Bash", {"command": line})
        assert lead is not None and f"{DOCS_AGENT} is a sub-agent of this session" in lead
    assert pre(project, DOCS_AGENT, "Bash", {"command": "echo use --agent NAME"}) is None
    assert pre(project, None, "Bash", {"command": "tether claim run.json --agent lead"}) is None


def test_a_sub_agents_calls_are_its_branchs_evidence(project: Path, run: str) -> None:
    docs, _ = claimed(project, run)
    write = {"file_path": str(project / "NOTES.md"), "content": "Notes."}
    assert pre(project, DOCS_AGENT, "Write", write) is None
    post = sub("PostToolUse", DOCS_AGENT, project, tool="Write", tool_input=write, response={})
    hk.hook_json(project, post)
    hk.hook_json(project, hk.post(project, "Read", {"file_path": "x"}, {}))
    tools = [e for e in Runtime().trace(run) if e["kind"] == "tool"]
    assert [(t["tool"], t.get("agent"), t["name"]) for t in tools] == [
        ("Write", DOCS_AGENT, "Docs"),
        ("Read", None, "Docs"),
    ]
    assert tools[0]["step"] == docs


def test_a_sub_agents_stop_is_refused_while_its_branch_is_open(project: Path, run: str) -> None:
    docs, code = claimed(project, run)
    out = hk.hook_json(project, sub_stop(project, DOCS_AGENT))
    assert out is not None and out["decision"] == "block"
    assert "'Docs'" in out["reason"] and f"--step {docs} --agent {DOCS_AGENT}" in out["reason"]
    Runtime().submit(run, "success", step=code, agent=CODE_AGENT)
    assert hk.hook_json(project, sub_stop(project, CODE_AGENT)) is None  # its branch is done
    lead = hk.hook_json(project, hk.stop(project))
    assert lead is not None and lead["decision"] == "block"  # Docs is still open
    Runtime().submit(run, "success", step=docs, agent=DOCS_AGENT)
    assert hk.hook_json(project, sub_stop(project, DOCS_AGENT, "Now done.")) is None
    stops = [(e.get("agent"), e["name"], e["outcome"]) for e in Runtime().trace(run)]
    assert (DOCS_AGENT, "Docs", "refused") in [s for s in stops if s[0]]
    assert Runtime().verify(run)["ok"]


def test_a_sub_agent_that_keeps_stopping_is_parked_at_the_cap(project: Path, run: str) -> None:
    claimed(project, run)
    said = [hk.hook_json(project, sub_stop(project, DOCS_AGENT, f"Stop {i}.")) for i in range(4)]
    assert [(s or {}).get("decision") for s in said] == ["block"] * 3 + [None]
    last = said[-1]
    assert last is not None and "is parked after 3 refusals" in last["systemMessage"]
    stops = [e for e in Runtime().trace(run) if e["kind"] == "stop"]
    assert [(s["agent"], s["outcome"]) for s in stops] == [(DOCS_AGENT, "refused")] * 3 + [
        (DOCS_AGENT, "parked")
    ]
    # the lead's own count was never touched: its first stop is its first refusal
    lead = hk.hook_json(project, hk.stop(project))
    assert lead is not None and "refused 1 of 3" in lead["reason"]
    assert Runtime().verify(run)["ok"]


def test_with_stop_warn_a_sub_agents_stop_only_tells(project: Path, run: str) -> None:
    config = project / ".tether" / "guard.yaml"
    config.write_text(config.read_text() + "  stop: warn\n")
    claimed(project, run)
    out = hk.hook_json(project, sub_stop(project, DOCS_AGENT))
    assert out is not None and "decision" not in out
    assert "its open step is the instruct 'Docs'" in out["systemMessage"]
    assert [e for e in Runtime().trace(run) if e["kind"] == "stop"] == []
