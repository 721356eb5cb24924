"""A Claude Code session bound to an execution: real hook payloads through `tether guard hook`
(a fresh process per event) and `serve`, asserting Claude Code's output and the trace."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from guard import hookkit as hk
from tether.verbs import Runtime

TREE = """\
name: feature
version: 1
tree:
  type: sequence
  name: Feature
  children:
    - type: action
      name: Implement
      steps:
        - instruct: |-
            Write the code for the feature.
            Keep it small.
    - type: action
      name: Review
      tools: {allow: [Read, Grep, Glob, "Bash(git diff*)"], deny: [Edit, Write]}
      steps:
        - instruct: Review the diff.
    - type: action
      name: Test
      steps:
        - instruct: Run the test suite and fix what fails.
        - check: TOOLS.exists(t, t.tool == "Bash" && t.input.command.contains("pytest") && t.ok)
"""


def write_config(project: Path, workflow: str) -> None:
    (project / ".tether").mkdir(exist_ok=True)
    (project / ".tether" / "guard.yaml").write_text(workflow)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "feature.yaml").write_text(TREE)
    (tmp_path / "runs").mkdir()
    write_config(tmp_path, "workflow:\n  trace: runs/feature.json\n")
    return tmp_path


@pytest.fixture
def run(project: Path) -> str:
    """The configured execution, started and past its protocol gate: `Implement` is open; the
    session has had its first prompt, so the guard knows it."""
    rt = Runtime()
    uri = rt.start(str(project / "feature.yaml"), str(project / "runs" / "feature.json"))["uri"]
    rt.submit(uri, "success")
    hk.hook_json(project, hk.prompt(project, "Build the feature."))
    return str(uri)


def finish(uri: str) -> None:
    """Answer every step, with the evidence the last one checks for."""
    rt = Runtime()
    rt.submit(uri, "success")
    rt.submit(uri, "success")
    rt.record_tool(uri, "Bash", {"command": "pytest -q"}, ok=True)
    rt.submit(uri, "success")
    assert rt.next(uri) == {"status": "done"}


def entries(uri: str, kind: str) -> list[dict[str, Any]]:
    return [e for e in Runtime().trace(uri) if e["kind"] == kind]


def verified(uri: str) -> None:
    report = Runtime().verify(uri)
    assert report["ok"], report["differences"]


# -- Stop ---------------------------------------------------------------------------------------


def test_stop_is_refused_then_parked_at_the_cap(project: Path, run: str) -> None:
    outputs = [hk.hook_json(project, hk.stop(project, active=n > 0)) for n in range(4)]
    for n, out in enumerate(outputs[:3], 1):
        assert out is not None and out["decision"] == "block"
        reason = out["reason"]
        assert "instruct 'Implement': Write the code for the feature. Keep it small. Do" in reason
        assert "submit success" in reason and run in reason
        assert f"refused {n} of 3 times" in reason
    assert outputs[3] is not None and "decision" not in outputs[3]
    assert "parked after 3 refusals" in outputs[3]["systemMessage"]
    stops = entries(run, "stop")
    assert [e["outcome"] for e in stops] == ["refused"] * 3 + ["parked"]
    assert "3 stops refused in a row" in stops[-1]["note"]
    assert all(e["name"] == "Implement" and e["cap"] == 3 for e in stops)
    # the count starts again after a stop is let through
    again = hk.hook_json(project, hk.stop(project))
    assert again is not None and "refused 1 of 3 times" in again["reason"]
    verified(run)


def _assistant_line(uuid: str, text: str) -> str:
    entry = {
        "type": "assistant",
        "uuid": uuid,
        "message": {"content": [{"type": "text", "text": text}]},
    }
    return json.dumps(entry) + "\n"


def test_r8_stops_are_told_apart_without_the_transcript(project: Path, run: str) -> None:
    """R8: two hooks (the plugin's and an installed one) deliver each stop, the first before the
    transcript is flushed, and the agent re-appends the same assistant line before each stop:
    every stop counts once, is refused and recorded, and both hooks give the same refusal."""
    transcript = project / ".claude" / "transcript.jsonl"
    transcript.parent.mkdir()
    line = _assistant_line("a-1", "All done: the feature is implemented and tested.")
    transcript.write_text(line)
    for n in range(3):
        payload = hk.stop(project, active=n > 0)
        plugin = hk.hook(project, payload, TETHER_CLAUDE_PLUGIN="1")  # before the flush
        with open(transcript, "a") as file:
            file.write(line)  # flushed now, or re-appended by the agent: the same line
        installed = hk.hook(project, payload)
        assert plugin.returncode == installed.returncode == 0, plugin.stderr + installed.stderr
        first, second = json.loads(plugin.stdout), json.loads(installed.stdout)
        assert first == second and f"refused {n + 1} of 3 times" in first["reason"]
    assert [e["outcome"] for e in entries(run, "stop")] == ["refused"] * 3
    out = hk.hook_json(project, hk.stop(project, active=True))  # one hook alone: a new stop
    assert out is not None and "parked after 3 refusals" in out["systemMessage"]
    assert [e["outcome"] for e in entries(run, "stop")] == ["refused"] * 3 + ["parked"]
    verified(run)


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        # a sentence wrapped over lines: the whole sentence, its lines joined
        (
            "Write the failing test for the feature\nin tests/test_feature.py, then run it.",
            ": Write the failing test for the feature in tests/test_feature.py, then run it. Do",
        ),
        # too long for the reason: the whole sentences that fit
        (
            "Write the failing test for the feature\nin tests/test_feature.py, then run it.\n"
            + "Keep it small and do not touch anything else. " * 5,
            ": Write the failing test for the feature in tests/test_feature.py, then run it. "
            "Keep it small and do not touch anything else. Keep",
        ),
        # a numbered list: "1." is no sentence end
        ("1. Run the suite\n2. Fix what fails.", ": 1. Run the suite 2. Fix what fails. Do"),
        # a sentence longer than the reason allows: cut at a word and marked
        ("Rewrite " + "every module " * 30 + "today.", ": Rewrite every module"),
    ],
)
def test_a_stop_reason_shows_whole_sentences_or_marks_the_cut(
    project: Path, text: str, shown: str
) -> None:
    indented = "\n".join("            " + line for line in text.splitlines())
    tree = TREE.replace(
        "            Write the code for the feature.\n            Keep it small.", indented
    )
    (project / "feature.yaml").write_text(tree)
    rt = Runtime()
    uri = rt.start(str(project / "feature.yaml"), str(project / "runs" / "feature.json"))["uri"]
    rt.submit(uri, "success")
    out = hk.hook_json(project, hk.stop(project))
    assert out is not None
    reason = out["reason"]
    assert shown in reason
    assert "\n" not in reason
    opened = reason.split("'Implement': ", 1)[1].split(" Do the work", 1)[0]
    assert opened.endswith((".", "…")) and len(opened) <= 200


def test_an_answer_starts_the_count_again(project: Path, run: str) -> None:
    write_config(project, "workflow:\n  trace: runs/feature.json\n  max_stop_blocks: 2\n")
    first = hk.hook_json(project, hk.stop(project))
    assert first is not None and "refused 1 of 2" in first["reason"]
    Runtime().submit(run, "success")
    out = hk.hook_json(project, hk.stop(project, active=True))
    assert out is not None and out["decision"] == "block"
    assert "instruct 'Review'" in out["reason"] and "refused 1 of 2" in out["reason"]
    verified(run)


def test_stop_is_allowed_once_the_execution_is_done(project: Path, run: str) -> None:
    finish(run)
    assert hk.hook_json(project, hk.stop(project)) is None
    assert entries(run, "stop") == []


def test_stop_is_allowed_once_the_execution_failed(project: Path, run: str) -> None:
    Runtime().submit(run, "failure")
    assert hk.hook_json(project, hk.stop(project)) is None


def test_stop_warn_only_tells_and_off_does_nothing(project: Path, run: str) -> None:
    write_config(project, "workflow:\n  trace: runs/feature.json\n  stop: warn\n")
    out = hk.hook_json(project, hk.stop(project))
    assert out is not None and "decision" not in out
    assert "still running" in out["systemMessage"] and "'Implement'" in out["systemMessage"]
    write_config(project, "workflow:\n  trace: runs/feature.json\n  stop: off\n")
    assert hk.hook_json(project, hk.stop(project)) is None
    assert entries(run, "stop") == []


def test_an_unbound_session_stops_freely(project: Path, run: str) -> None:
    write_config(project, "workflow:\n  bind: auto\n")
    assert hk.hook_json(project, hk.stop(project)) is None
    assert entries(run, "stop") == []


def test_a_bound_execution_that_does_not_exist_binds_nothing(project: Path) -> None:
    assert hk.hook_json(project, hk.stop(project)) is None
    assert not (project / "runs" / "feature.json").exists()


def test_check_shows_the_workflow_settings(project: Path) -> None:
    write_config(project, "workflow:\n  trace: runs/feature.json\n  stop: off\n")
    done = tether_cli(project, "guard", "check", ".tether/guard.yaml")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["workflow"] == {
        "trace": "runs/feature.json",
        "bind": "auto",
        "stop": "off",  # YAML reads a bare off as false; it means off
        "max_stop_blocks": 3,
        "park": True,
        "context": True,
        "evidence": True,
        "strict": False,
        "mcp_servers": ["tether", "plugin_tether_tether"],
        "notify": [],
    }


def test_the_workflow_section_is_strict(project: Path) -> None:
    write_config(project, "workflow:\n  trace: runs/feature.json\n  stopp: block\n")
    done = hk.hook(project, hk.stop(project))
    assert done.returncode == 1  # never 2, which Claude Code reads as "block"
    error = json.loads(done.stderr)["error"]
    assert error["code"] == "invalid_value"
    assert error["line"] == 3 and error["path"] == "workflow.stopp"
    write_config(project, "security:\n  behavior:\n    workflow:\n      max_stop_blocks: 0\n")
    error = json.loads(hk.hook(project, hk.stop(project)).stderr)["error"]
    assert error["path"] == "security.behavior.workflow.max_stop_blocks"


def test_serve_refuses_a_stop_like_the_hook(project: Path, run: str) -> None:
    with hk.serving(project) as url:
        outs = [hk.send(url, hk.stop(project, active=True)) for _ in range(4)]
    assert [(o or {}).get("decision") for o in outs] == ["block"] * 3 + [None]
    assert [e["outcome"] for e in entries(run, "stop")] == ["refused"] * 3 + ["parked"]
    verified(run)


# -- context ------------------------------------------------------------------------------------


@pytest.mark.parametrize("source", ["startup", "resume", "compact"])
def test_session_start_tells_the_agent_its_current_request(
    project: Path, run: str, source: str
) -> None:
    out = hk.hook_json(project, hk.session_start(project, source))
    assert out is not None
    specific = out["hookSpecificOutput"]
    assert specific["hookEventName"] == "SessionStart"
    context = specific["additionalContext"]
    step = Runtime().next(run)["step"]
    for part in (run, "instruct 'Implement'", f"step {step}", "Write the code for the feature."):
        assert part in context
    assert len(context) < 1000


def test_each_prompt_tells_the_agent_its_current_request(project: Path, run: str) -> None:
    Runtime().submit(run, "success")
    out = hk.hook_json(project, hk.prompt(project, "carry on"))
    assert out is not None
    context = out["hookSpecificOutput"]["additionalContext"]
    assert "instruct 'Review'" in context and "Review the diff." in context
    assert out["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"


def test_context_is_short_whatever_the_step_text(project: Path) -> None:
    long_tree = TREE.replace("Run the test suite and fix what fails.", "x" * 5000)
    (project / "feature.yaml").write_text(long_tree)
    rt = Runtime()
    uri = rt.start(str(project / "feature.yaml"), str(project / "runs" / "feature.json"))["uri"]
    for _ in range(3):
        rt.submit(uri, "success")
    out = hk.hook_json(project, hk.prompt(project, "go"))
    assert out is not None and len(out["hookSpecificOutput"]["additionalContext"]) < 1000


def test_context_says_when_the_execution_is_done(project: Path, run: str) -> None:
    finish(run)
    out = hk.hook_json(project, hk.prompt(project, "anything else?"))
    assert out is not None and "is done" in out["hookSpecificOutput"]["additionalContext"]


def test_context_off_adds_nothing(project: Path, run: str) -> None:
    write_config(project, "workflow:\n  trace: runs/feature.json\n  context: false\n")
    assert hk.hook_json(project, hk.session_start(project)) is None
    assert hk.hook_json(project, hk.prompt(project, "go")) is None


# -- tool policy --------------------------------------------------------------------------------


def at_review(uri: str) -> str:
    Runtime().submit(uri, "success")
    request = Runtime().next(uri)
    assert request["name"] == "Review"
    return str(request["step"])


def decision(out: dict[str, Any] | None) -> str | None:
    return None if out is None else out["hookSpecificOutput"].get("permissionDecision")


def test_a_call_outside_the_step_policy_is_denied(project: Path, run: str) -> None:
    step = at_review(run)
    edit = {"file_path": str(project / "app.py"), "old_string": "a", "new_string": "b"}
    out = hk.hook_json(project, hk.pre(project, "Edit", edit))
    assert decision(out) == "deny"
    assert out is not None
    reason = out["hookSpecificOutput"]["permissionDecisionReason"]
    assert "Edit may not run while the instruct 'Review' is open" in reason
    assert "allows Read, Grep, Glob, Bash(git diff*) and denies Edit, Write" in reason
    assert step in reason
    shell = hk.pre(project, "Bash", {"command": "git diff HEAD && rm -rf src"})
    assert decision(hk.hook_json(project, shell)) == "deny"


def test_a_call_the_step_policy_allows_runs(project: Path, run: str) -> None:
    at_review(run)
    for tool, params in [
        ("Read", {"file_path": str(project / "app.py")}),
        ("Bash", {"command": "git diff HEAD~1 -- src"}),
        ("mcp__tether__submit", {"trace_output": run, "status": "success"}),
        ("Bash", {"command": f"tether next {run} && tether submit {run} success"}),
    ]:
        assert hk.hook_json(project, hk.pre(project, tool, params)) is None, tool


def test_a_person_only_command_is_not_tethers_own(project: Path, run: str) -> None:
    at_review(run)
    out = hk.hook_json(project, hk.pre(project, "Bash", {"command": f"tether approve {run}"}))
    assert decision(out) == "deny"


def test_a_step_without_a_policy_allows_every_tool(project: Path, run: str) -> None:
    edit = {"file_path": str(project / "app.py"), "old_string": "a", "new_string": "b"}
    assert hk.hook_json(project, hk.pre(project, "Edit", edit)) is None


def test_a_sub_agent_is_held_to_the_policy_too(project: Path, run: str) -> None:
    at_review(run)
    payload = hk.pre(project, "Write", {"file_path": str(project / "x.py"), "content": "x"})
    payload.update(agent_id="agent-7", agent_type="general-purpose")
    assert decision(hk.hook_json(project, payload)) == "deny"


def test_serve_denies_and_allows_like_the_hook(project: Path, run: str) -> None:
    at_review(run)
    with hk.serving(project) as url:
        denied = hk.send(url, hk.pre(project, "Write", {"file_path": "x.py", "content": ""}))
        allowed = hk.send(url, hk.pre(project, "Grep", {"pattern": "def ", "path": "src"}))
    assert decision(denied) == "deny" and allowed is None


def test_the_policy_and_the_rules_both_speak(project: Path, run: str) -> None:
    write_config(project, "profile: dev\nworkflow:\n  trace: runs/feature.json\n")
    at_review(run)
    out = hk.hook_json(project, hk.pre(project, "Bash", {"command": "git push --force"}))
    assert decision(out) == "deny"
    assert out is not None
    reason = out["hookSpecificOutput"]["permissionDecisionReason"]
    assert reason.startswith("[Tether] Bash may not run")
    assert "[BEHAVIOR BLOCKED] confirm_destructive" in reason


# -- evidence -----------------------------------------------------------------------------------


def test_tool_calls_are_recorded_under_the_open_step_and_verify(project: Path, run: str) -> None:
    step = Runtime().next(run)["step"]
    app = str(project / "app.py")
    hk.hook_json(project, hk.post(project, "Read", {"file_path": app}, {"type": "text"}))
    hk.hook_json(project, hk.failure(project, "Bash", {"command": "make"}, "Exit code 2"))
    hk.hook_json(
        project,
        hk.post(project, "mcp__db__query", {"sql": "select 1"}, {"isError": True, "content": []}),
    )
    hk.hook_json(
        project, hk.post(project, "Bash", {"command": "false"}, {"stdout": "", "exit_code": 1})
    )
    tools = entries(run, "tool")
    assert [(e["tool"], e["ok"]) for e in tools] == [
        ("Read", True),
        ("Bash", False),
        ("mcp__db__query", False),
        ("Bash", False),
    ]
    assert tools[0]["input"] == {"file_path": app}
    assert all(e["step"] == step and e["name"] == "Implement" for e in tools)
    verified(run)


def test_each_string_of_the_input_is_cut_and_marked(project: Path, run: str) -> None:
    content = "x" * 4000
    write = {"file_path": str(project / "big.py"), "content": content}
    hk.hook_json(project, hk.post(project, "Write", write, {"type": "create"}))
    (entry,) = entries(run, "tool")
    kept = entry["input"]["content"]
    assert kept.startswith("x" * 1000) and kept.endswith("…[cut 3000 characters]")
    assert entry["input"]["file_path"] == write["file_path"]
    verified(run)


def test_tethers_own_calls_are_not_evidence(project: Path, run: str) -> None:
    own = [
        ("mcp__tether__next_step", {"trace_output": run}),
        ("Bash", {"command": f"tether next {run}"}),
    ]
    for tool, params in own:
        hk.hook_json(project, hk.post(project, tool, params, {"stdout": "{}"}))
    assert entries(run, "tool") == []


def test_evidence_off_records_nothing(project: Path, run: str) -> None:
    write_config(project, "workflow:\n  trace: runs/feature.json\n  evidence: false\n")
    hk.hook_json(project, hk.post(project, "Read", {"file_path": "a"}, {}))
    assert entries(run, "tool") == []


def at_test(uri: str) -> None:
    rt = Runtime()
    rt.submit(uri, "success")
    rt.submit(uri, "success")
    assert rt.next(uri)["name"] == "Test"


def submit_through_the_agent(project: Path, uri: str) -> dict[str, Any]:
    """The agent answers with Tether's CLI, as a Bash call would, then its PostToolUse fires."""
    done = subprocess.run(
        [sys.executable, "-m", "tether.cli.main", "submit", uri, "success"],
        capture_output=True,
        text=True,
        check=True,
    )
    hook_out = hk.hook_json(
        project,
        hk.post(project, "Bash", {"command": f"tether submit {uri} success"}, {"stdout": ""}),
    )
    assert hook_out is None
    return dict(json.loads(done.stdout))


def test_an_evidence_check_fails_without_the_test_run(project: Path, run: str) -> None:
    at_test(run)
    hk.hook_json(project, hk.post(project, "Bash", {"command": "echo tests pass"}, {}))
    answer = submit_through_the_agent(project, run)
    assert answer["status"] == "action_failed"
    check = entries(run, "check")[-1]
    assert check["outcome"] == "failed" and check["name"] == "Test"
    assert Runtime().next(run)["status"] == "failure"
    verified(run)


def test_an_evidence_check_passes_with_the_test_run(project: Path, run: str) -> None:
    at_test(run)
    hk.hook_json(project, hk.failure(project, "Bash", {"command": "pytest -q"}, "1 failed"))
    hk.hook_json(project, hk.post(project, "Edit", {"file_path": "a.py"}, {}))
    run_tests = hk.post(project, "Bash", {"command": "python -m pytest -q"}, hk.bash_response("ok"))
    hk.hook_json(project, run_tests)
    answer = submit_through_the_agent(project, run)
    assert answer["status"] == "action_complete"
    assert entries(run, "check")[-1]["outcome"] == "passed"
    assert Runtime().next(run) == {"status": "done"}
    assert hk.hook_json(project, hk.stop(project)) is None  # done: the agent may stop
    verified(run)


def test_without_a_binding_an_evidence_check_fails_and_says_why(project: Path) -> None:
    rt = Runtime()
    uri = rt.start(str(project / "feature.yaml"), str(project / "runs" / "other.json"))["uri"]
    for _ in range(4):
        rt.submit(uri, "success")
    check = [e for e in rt.trace(uri) if e["kind"] == "check"][-1]
    assert check["outcome"] == "failed" and "TOOLS is empty" in check["note"]


# -- auto-binding -------------------------------------------------------------------------------


@pytest.fixture
def unbound(project: Path) -> Path:
    """The project without a configured `trace`: sessions bind by what they start."""
    write_config(project, "workflow:\n  bind: auto\n")
    return project


def tether_cli(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tether.cli.main", *args],
        capture_output=True,
        text=True,
        cwd=project,
        check=False,
    )


def bound_stop(project: Path, session: str = hk.SESSION) -> dict[str, Any] | None:
    return hk.hook_json(project, hk.stop(project, session=session))


def test_an_mcp_start_binds_the_session(unbound: Path) -> None:
    project = unbound
    result = Runtime().start(str(project / "feature.yaml"), str(project / "runs" / "mcp.json"))
    response = [{"type": "text", "text": json.dumps(result)}]
    args = {"tree_uri": "feature.yaml", "trace_output": "runs/mcp.json"}
    assert bound_stop(project) is None
    hk.hook_json(project, hk.post(project, "mcp__tether__start_execution", args, response))
    out = bound_stop(project)
    assert out is not None and out["decision"] == "block"
    assert "Acknowledge_Protocol" in out["reason"] and "Accept the protocol" in out["reason"]
    assert bound_stop(project, session="another-session") is None  # the binding is per session
    assert [e["outcome"] for e in entries(result["uri"], "stop")] == ["refused"]


def test_an_mcp_resume_binds_by_its_argument(unbound: Path) -> None:
    project = unbound
    uri = Runtime().start(str(project / "feature.yaml"), str(project / "runs" / "r.json"))["uri"]
    post = hk.post(project, "mcp__tether__resume_execution", {"trace_output": "runs/r.json"}, "")
    hk.hook_json(project, post)
    out = bound_stop(project)
    assert out is not None and uri in out["reason"]


def test_only_the_server_tether_is_registered_as_is_tethers_own(project: Path, run: str) -> None:
    """Another MCP server's `submit` or `resume_execution` is any other tool: judged by the
    step's policy, recorded as evidence, and it binds nothing."""
    rt = Runtime()
    rt.submit(run, "success")  # Review is open: its policy allows no MCP tool
    other = rt.start(str(project / "feature.yaml"), str(project / "runs" / "o.json"))["uri"]
    resume = {"trace_output": "runs/o.json"}
    for tool in ("mcp__evil__submit", "mcp__evil__resume_execution"):
        assert decision(hk.hook_json(project, hk.pre(project, tool, resume))) == "deny"
    hk.hook_json(project, hk.post(project, "mcp__evil__resume_execution", resume, ""))
    hk.hook_json(project, hk.post(project, "mcp__evil__submit", {"outcome": "success"}, {}))
    assert [e["tool"] for e in entries(run, "tool")] == [
        "mcp__evil__resume_execution",
        "mcp__evil__submit",
    ]
    assert bound_stop(project) is not None
    assert entries(other, "stop") == []  # o.json was never bound
    assert (
        decision(hk.hook_json(project, hk.pre(project, "mcp__tether__next_step", resume))) is None
    )
    write_config(project, "workflow:\n  trace: runs/feature.json\n  mcp_servers: [evil]\n")
    assert decision(hk.hook_json(project, hk.pre(project, "mcp__evil__submit", resume))) is None


def test_a_shell_tether_start_binds_the_session(unbound: Path) -> None:
    project = unbound
    command = "cd . && tether start feature.yaml runs/shell.json --var ticket=T-1"
    done = tether_cli(project, "start", "feature.yaml", "runs/shell.json", "--var", "ticket=T-1")
    assert done.returncode == 0, done.stderr
    response = hk.bash_response(done.stdout)
    hk.hook_json(project, hk.post(project, "Bash", {"command": command}, response))
    out = bound_stop(project)
    assert out is not None and "runs/shell.json" in out["reason"]
    status = json.loads(done.stdout)
    assert entries(status["uri"], "stop")[0]["outcome"] == "refused"


def test_a_shell_tether_resume_binds_even_without_its_output(unbound: Path) -> None:
    project = unbound
    Runtime().start(str(project / "feature.yaml"), str(project / "runs" / "old.json"))
    post = hk.post(project, "Bash", {"command": "tether resume runs/old.json"}, hk.bash_response())
    hk.hook_json(project, post)
    out = bound_stop(project)
    assert out is not None and str(project / "runs" / "old.json") in out["reason"]


@pytest.mark.parametrize("via", ["shell", "mcp"])
def test_a_fork_binds_the_session_to_the_fork(unbound: Path, via: str) -> None:
    project = unbound
    rt = Runtime()
    old = rt.start(str(project / "feature.yaml"), str(project / "runs" / "old.json"))["uri"]
    rt.submit(old, "failure")  # the protocol declined: the original has failed
    hk.hook_json(project, hk.post(project, "Bash", {"command": "tether resume runs/old.json"}, ""))
    assert bound_stop(project) is None  # bound to a failed execution: free to stop
    done = tether_cli(project, "fork", "runs/old.json", "runs/new.json", "--at", "0")
    assert done.returncode == 0, done.stderr
    if via == "shell":
        command = "tether fork runs/old.json runs/new.json --at 0"
        post = hk.post(project, "Bash", {"command": command}, hk.bash_response(done.stdout))
    else:
        args = {"trace_output": "runs/old.json", "new_trace_output": "runs/new.json", "at": 0}
        post = hk.post(project, "mcp__tether__fork_execution", args, json.loads(done.stdout))
    hk.hook_json(project, post)
    out = bound_stop(project)
    assert out is not None and out["decision"] == "block"
    assert str(project / "runs" / "new.json") in out["reason"]
    assert entries(json.loads(done.stdout)["uri"], "stop")[0]["outcome"] == "refused"
    assert entries(old, "stop") == []


@pytest.mark.parametrize(
    "command",
    [
        "echo tether start feature.yaml runs/x.json",
        "grep 'tether resume runs/x.json' notes.txt",
        "tether get runs/x.json",
    ],
)
def test_a_shell_line_that_only_mentions_tether_binds_nothing(unbound: Path, command: str) -> None:
    project = unbound
    Runtime().start(str(project / "feature.yaml"), str(project / "runs" / "x.json"))
    hk.hook_json(project, hk.post(project, "Bash", {"command": command}, hk.bash_response()))
    assert bound_stop(project) is None


def test_a_failed_start_binds_nothing(unbound: Path) -> None:
    project = unbound
    Runtime().start(str(project / "feature.yaml"), str(project / "runs" / "x.json"))
    hk.hook_json(
        project,
        hk.failure(project, "Bash", {"command": "tether start feature.yaml runs/x.json"}, "exit 5"),
    )
    assert bound_stop(project) is None


def test_bind_off_binds_only_the_configured_trace(unbound: Path) -> None:
    project = unbound
    write_config(project, "workflow:\n  bind: off\n")
    result = Runtime().start(str(project / "feature.yaml"), str(project / "runs" / "m.json"))
    args = {"tree_uri": "feature.yaml", "trace_output": "runs/m.json"}
    hk.hook_json(project, hk.post(project, "mcp__tether__start_execution", args, result))
    assert bound_stop(project) is None


def test_the_latest_start_wins_over_the_configured_trace(project: Path, run: str) -> None:
    other = Runtime().start(str(project / "feature.yaml"), str(project / "runs" / "o.json"))
    post = hk.post(project, "Bash", {"command": "tether start feature.yaml runs/o.json"}, other)
    hk.hook_json(project, post)
    out = bound_stop(project)
    assert out is not None and other["uri"] in out["reason"]


# -- status -------------------------------------------------------------------------------------


def guard_status(project: Path, *args: str) -> dict[str, Any]:
    state = str(project / ".state")
    done = subprocess.run(
        [sys.executable, "-m", "tether.cli.main", "guard", "status", "--state-dir", state, *args],
        capture_output=True,
        text=True,
        cwd=project,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def test_status_shows_each_sessions_binding(unbound: Path) -> None:
    project = unbound
    result = Runtime().start(str(project / "feature.yaml"), str(project / "runs" / "s.json"))
    Runtime().submit(result["uri"], "success")
    Runtime().submit(result["uri"], "success")
    args = {"tree_uri": "feature.yaml", "trace_output": "runs/s.json"}
    hk.hook_json(project, hk.post(project, "mcp__tether__start_execution", args, result))
    bound_stop(project)
    shown = guard_status(project, "--session", hk.SESSION)
    (bound,) = shown["bound"]
    assert (bound["trace"], bound["via"]) == (result["uri"], "mcp")
    execution = bound["execution"]
    assert execution["status"] == "running" and execution["stop_blocks"] == 1
    (review,) = execution["open"]
    assert review["name"] == "Review" and review["tools"]["node"] == "Review"
    listing = guard_status(project)
    assert listing["trace"] is None
    assert [(s["session"], s["executions"]) for s in listing["sessions"]] == [
        (hk.SESSION, [{"trace": result["uri"], "via": "mcp"}])
    ]
    assert guard_status(project, "--session", "nobody") == {"session": "nobody", "bound": None}


def test_status_shows_the_configured_trace(project: Path, run: str) -> None:
    shown = guard_status(project, "--session", "any")
    (bound,) = shown["bound"]
    assert (bound["trace"], bound["via"], bound["execution"]["status"]) == (
        run,
        "config",
        "running",
    )
    assert guard_status(project)["trace"] == "runs/feature.json"


# -- the example --------------------------------------------------------------------------------

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "bound-feature"


def searched(project: Path) -> None:
    """Claude Code, which has no Grep or Glob tool, may search through its shell under the
    open step's policy, and may not remove a file."""
    for command in ("grep -rn 'a + b' .", "rg -n add", "git status"):
        call = hk.pre(project, "Bash", {"command": command})
        assert decision(hk.hook_json(project, call)) != "deny", command
    assert decision(hk.hook_json(project, hk.pre(project, "Bash", {"command": "rm calc.py"}))) == (
        "deny"
    )


def test_the_example_project_holds_an_agent_to_its_tree(tmp_path: Path) -> None:
    project = tmp_path / "bound-feature"
    shutil.copytree(EXAMPLE, project)
    started = tether_cli(project, "start", "feature.yaml", "runs/feature.json")
    assert started.returncode == 0, started.stderr
    command = {"command": "tether start feature.yaml runs/feature.json"}
    hk.hook_json(project, hk.post(project, "Bash", command, hk.bash_response(started.stdout)))
    uri = json.loads(started.stdout)["uri"]
    rt = Runtime()
    rt.submit(uri, "success")
    edit = {"file_path": str(project / "calc.py"), "old_string": "a + b", "new_string": "b + a"}
    assert decision(hk.hook_json(project, hk.pre(project, "Edit", edit))) == "deny"
    searched(project)
    rt.var_write(uri, "plan", "swap the operands")
    rt.submit(uri, "success")
    assert decision(hk.hook_json(project, hk.pre(project, "Edit", edit))) != "deny"
    rt.submit(uri, "success")
    assert decision(hk.hook_json(project, hk.pre(project, "Edit", edit))) == "deny"
    searched(project)
    rt.var_write(uri, "review", "fine")
    rt.submit(uri, "success")
    assert "Retrying" in rt.submit(uri, "success")["message"]  # no test run: no evidence
    tests = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        capture_output=True,
        text=True,
        cwd=project,
        check=False,
    )
    assert tests.returncode == 0, tests.stdout
    ran = hk.post(project, "Bash", {"command": "pytest -q"}, hk.bash_response(tests.stdout))
    hk.hook_json(project, ran)
    assert rt.submit(uri, "success")["status"] == "action_complete"
    assert rt.next(uri) == {"status": "done"}
    verified(uri)


# -- boundaries ---------------------------------------------------------------------------------


def test_a_session_id_cannot_place_a_binding_outside_the_state_folder(unbound: Path) -> None:
    project = unbound
    result = Runtime().start(str(project / "feature.yaml"), str(project / "runs" / "b.json"))
    session = "../../../escaped"
    post = hk.post(project, "Bash", {"command": "tether start feature.yaml runs/b.json"}, result)
    post["session_id"] = session
    hk.hook_json(project, post)
    files = [p.relative_to(project) for p in project.rglob("*") if "escaped" in p.name]
    assert files == []
    (binding,) = (project / ".state" / "bindings").glob("*.json")
    assert json.loads(binding.read_text())["session"] == session
    assert bound_stop(project, session=session) is not None  # still bound, under a safe name


def test_an_input_that_nests_or_sprawls_is_bounded(project: Path, run: str) -> None:
    nested: Any = "deep"
    for _ in range(60):
        nested = {"a": nested}
    params = {"nested": nested, "many": list(range(5000)), "keys": {str(i): i for i in range(500)}}
    hk.hook_json(project, hk.post(project, "mcp__x__do", params, {}))
    (entry,) = entries(run, "tool")
    kept = entry["input"]
    depth, node = 0, kept["nested"]
    while isinstance(node, dict):
        node, depth = node["a"], depth + 1
    assert depth < 10 and node == "…[cut: nested too deep]"
    assert len(kept["many"]) == 101 and kept["many"][-1] == "…[cut 4900 items]"
    assert len(kept["keys"]) == 101 and kept["keys"]["…"] == "[cut 400 keys]"
    verified(run)


# -- parking ------------------------------------------------------------------------------------


def test_twenty_stops_in_a_row_park_every_fourth_and_a_new_session_is_told(
    project: Path, run: str
) -> None:
    outs = [hk.hook_json(project, hk.stop(project, active=n > 0)) for n in range(20)]
    outcomes = [e["outcome"] for e in entries(run, "stop")]
    assert outcomes == (["refused"] * 3 + ["parked"]) * 5
    assert all(o is not None and "decision" not in o for o in outs[3::4])
    assert all(o is not None and o["decision"] == "block" for n, o in enumerate(outs) if n % 4 != 3)
    start = hk.hook_json(project, hk.session_start(project, session="a-new-session"))
    context = start["hookSpecificOutput"]["additionalContext"] if start else ""
    assert f"The execution {run} was parked" in context and "'Implement'" in context
    verified(run)


def test_a_parked_execution_answered_since_is_not_told_again(project: Path, run: str) -> None:
    for n in range(4):
        hk.hook_json(project, hk.stop(project, active=n > 0))
    Runtime().submit(run, "success")  # the parked step is answered: nothing parked is left
    start = hk.hook_json(project, hk.session_start(project, session="a-new-session"))
    context = start["hookSpecificOutput"]["additionalContext"] if start else ""
    assert "was parked" not in context


def test_a_max_stop_blocks_past_the_harness_cap_parks_before_it(project: Path, run: str) -> None:
    write_config(project, "workflow:\n  trace: runs/feature.json\n  max_stop_blocks: 50\n")
    for n in range(9):
        hk.hook_json(project, hk.stop(project, active=n > 0))
    # Qwen Code, the lowest known cap, ends a turn at its 8th refusal: park at the 8th stop
    assert [e["outcome"] for e in entries(run, "stop")] == ["refused"] * 7 + ["parked", "refused"]


def test_a_stop_with_background_tasks_is_let_through_and_not_counted(
    project: Path, run: str
) -> None:
    hk.hook_json(project, hk.stop(project))
    tasks = [{"id": "b1", "type": "bash", "command": "sleep 100"}]
    for _ in range(20):
        out = hk.hook_json(project, hk.stop(project, active=True, background_tasks=tasks))
        assert out is not None and "decision" not in out
        assert "background work runs" in out["systemMessage"]
    # not a list, or an empty one: the stop counts (fail closed)
    forged: object
    for forged in ("yes", [], {"b1": "x"}, True):
        hk.hook_json(project, hk.stop(project, active=True, background_tasks=forged))
    outcomes = [e["outcome"] for e in entries(run, "stop")]
    assert outcomes == ["refused", *["background"] * 20, "refused", "refused", "parked", "refused"]
    verified(run)
