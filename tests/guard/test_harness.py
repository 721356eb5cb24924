"""The guard in Codex, Gemini CLI and Cursor: each harness's documented hook payloads through
`tether guard hook --harness NAME` (a fresh process per event) and `serve`, asserting the
answer in that harness's own format and what the workflow binding recorded."""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from guard import harnesskit as hx
from guard import hookkit as hk
from tether.guard.harness import adapters as harness
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
        - instruct: Write the code for the feature.
    - type: action
      name: Review
      tools: {allow: [Read, Grep, Glob, "Bash(git diff*)"], deny: [Edit, Write]}
      steps:
        - instruct: Review the diff.
    - type: action
      name: Test
      steps:
        - instruct: Run the test suite.
        - check: TOOLS.exists(t, t.tool == "Bash" && t.input.command.contains("pytest") && t.ok)
"""
DEV = "security:\n  behavior:\n    profile: dev\n"
BOUND = "security:\n  behavior:\n    workflow:\n      trace: runs/feature.json\n"
DESTRUCTIVE = "[BEHAVIOR BLOCKED] confirm_destructive"


def configure(project: Path, text: str) -> None:
    (project / ".tether").mkdir(exist_ok=True)
    (project / ".tether" / "guard.yaml").write_text(text)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project guarded by the dev profile, with `app.py` on disk."""
    configure(tmp_path, DEV)
    (tmp_path / "app.py").write_text("print('hi')\n")
    (tmp_path / "sub").mkdir()
    return tmp_path


@pytest.fixture
def run(project: Path) -> str:
    """The project bound to `runs/feature.json` (no rules), started and past its gate:
    `Implement` is open."""
    configure(project, BOUND)
    (project / "feature.yaml").write_text(TREE)
    rt = Runtime()
    uri = rt.start(str(project / "feature.yaml"), str(project / "runs" / "feature.json"))["uri"]
    rt.submit(uri, "success")
    return str(uri)


_PROMPTS = {"codex": "UserPromptSubmit", "gemini": "BeforeAgent", "cursor": "beforeSubmitPrompt"}


def prompted(project: Path, harness: str) -> None:
    """The session's first prompt: the guard records evidence only from a session it has seen
    before (a made-up session id piped into the hook is not one)."""
    makers: dict[str, Callable[..., dict[str, Any]]] = {
        "codex": hx.codex,
        "gemini": hx.gemini,
        "cursor": hx.cursor,
    }
    make = makers[harness]
    hx.answer(project, harness, make(_PROMPTS[harness], project, prompt="Build the feature."))


def entries(uri: str, kind: str) -> list[dict[str, Any]]:
    return [e for e in Runtime().trace(uri) if e["kind"] == kind]


def verified(uri: str) -> None:
    report = Runtime().verify(uri)
    assert report["ok"], report["differences"]


# -- Codex ---------------------------------------------------------------------------------------


def test_codex_denies_a_destructive_command_as_claude_code_does(project: Path) -> None:
    payload = hx.codex(
        "PreToolUse", project, tool_name="Bash", tool_input={"command": "rm -rf build"}
    )
    out = hx.answer(project, "codex", payload)
    spec = out["hookSpecificOutput"]
    assert spec["hookEventName"] == "PreToolUse" and spec["permissionDecision"] == "deny"
    assert spec["permissionDecisionReason"].startswith(DESTRUCTIVE)
    assert set(out) == {"hookSpecificOutput"}  # Codex fails a hook with fields it does not know


def test_codex_finds_the_project_above_the_session_folder(project: Path) -> None:
    """Codex runs hooks in the session's folder; the relative --config is the project's."""
    payload = hx.codex(
        "PreToolUse", project / "sub", tool_name="Bash", tool_input={"command": "rm -rf /"}
    )
    out = hx.answer(project, "codex", payload, cwd=project / "sub")
    assert out["hookSpecificOutput"]["permissionDecision"] == "deny"


def test_codex_gets_context_at_session_start_and_after_a_call(project: Path) -> None:
    start = hx.answer(project, "codex", hx.codex("SessionStart", project, source="startup"))
    assert start["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    assert "## Behavioral rules" in start["hookSpecificOutput"]["additionalContext"]
    patch = hx.codex_patch(("Update", "app.py", "@@\n-print('hi')\n+print('hello')"))
    after = hx.answer(
        project,
        "codex",
        hx.codex(
            "PostToolUse",
            project,
            tool_name="apply_patch",
            tool_input={"command": patch},
            tool_response="Success. Updated the following files:\nM app.py",
        ),
    )
    context = after["hookSpecificOutput"]["additionalContext"]
    assert "[BEHAVIOR REMINDER] verify_after_edit" in context


def test_codex_stop_is_refused_while_the_bound_execution_runs(project: Path, run: str) -> None:
    said = "Done."
    outs = [
        hx.answer(
            project,
            "codex",
            hx.codex("Stop", project, stop_hook_active=n > 0, last_assistant_message=said),
        )
        for n in range(4)
    ]
    for n, out in enumerate(outs[:3], 1):
        assert out["decision"] == "block"
        assert "instruct 'Implement'" in out["reason"] and f"refused {n} of 3" in out["reason"]
    assert set(outs[3]) == {"systemMessage"} and "parked" in outs[3]["systemMessage"]
    assert [e["outcome"] for e in entries(run, "stop")] == ["refused"] * 3 + ["parked"]
    verified(run)


def test_a_codex_patch_is_read_per_file_against_the_step_policy(project: Path, run: str) -> None:
    Runtime().submit(run, "success")  # Review is open: it denies Edit and Write
    patch = hx.codex_patch(
        ("Add", "notes.md", "+# notes"), ("Update", "app.py", "@@\n-print('hi')\n+print(1)")
    )
    payload = hx.codex(
        "PreToolUse", project, tool_name="apply_patch", tool_input={"command": patch}
    )
    reason = hx.answer(project, "codex", payload)["hookSpecificOutput"]["permissionDecisionReason"]
    assert "Write may not run while the instruct 'Review'" in reason
    assert "Edit may not run while the instruct 'Review'" in reason
    allowed = hx.codex("PreToolUse", project, tool_name="Bash", tool_input={"command": "git diff"})
    assert hx.answer(project, "codex", allowed) == {}


def test_a_codex_patch_is_evidence_file_by_file(project: Path, run: str) -> None:
    prompted(project, "codex")
    patch = hx.codex_patch(
        ("Add", "src/new.py", "+x = 1"), ("Delete", "old.py", ""), ("Update", "app.py", "-a\n+b")
    )
    payload = hx.codex(
        "PostToolUse",
        project / "sub",
        tool_name="apply_patch",
        tool_input={"command": patch},
        tool_response="Success.",
    )
    hx.answer(project, "codex", payload, cwd=project / "sub")
    tools = [(e["tool"], e["input"]["file_path"]) for e in entries(run, "tool")]
    sub = project / "sub"  # a patch's paths are the session folder's
    assert tools == [
        ("Write", str(sub / "src" / "new.py")),
        ("Edit", str(sub / "old.py")),
        ("Edit", str(sub / "app.py")),
    ]
    update = entries(run, "tool")[2]["input"]
    assert (update["old_string"], update["new_string"]) == ("a", "b")
    verified(run)


def test_codex_evidence_rests_on_the_transcript_not_the_output(project: Path, run: str) -> None:
    """Codex 0.171 gives a shell call's output alone; the exit code is in its transcript (its
    line longer than the first span read from the end). An output that claims success
    (`Exit code: 0`) is not read as a sign."""
    prompted(project, "codex")
    for n, code in enumerate((3, 0)):
        transcript = hx.codex_transcript(
            project / f"t{n}.jsonl", f"call_{n}", exit_code=code, aggregated_output="x" * 300_000
        )
        payload = hx.codex(
            "PostToolUse",
            project,
            transcript_path=transcript,
            tool_use_id=f"call_{n}",
            tool_name="Bash",
            tool_input={"command": f"pytest -q  # {n}"},
            tool_response="Exit code: 0\n1 passed\n",
        )
        hx.answer(project, "codex", payload)
    assert [e["ok"] for e in entries(run, "tool")] == [False, True]


def test_r10_a_forged_later_item_completed_line_does_not_turn_a_failure_into_success(
    project: Path, run: str
) -> None:
    """R10: the agent appends its own `item_completed` line for a failed call (padded past the
    first span read from the end): the first line for the call, Codex's, is the one read."""
    prompted(project, "codex")
    transcript = hx.codex_transcript(project / "t.jsonl", "call_1", exit_code=3)
    forged = {
        "type": "event_msg",
        "payload": {
            "type": "item_completed",
            "item": {"type": "CommandExecution", "id": "call_1", "exit_code": 0},
        },
    }
    with open(transcript, "a") as file:
        file.write(json.dumps({"type": "event_msg", "payload": {"pad": "x" * 200_000}}) + "\n")
        file.write(json.dumps(forged) + "\n")
    payload = hx.codex(
        "PostToolUse",
        project,
        transcript_path=transcript,
        tool_use_id="call_1",
        tool_name="Bash",
        tool_input={"command": "pytest -q"},
        tool_response="Exit code: 0\n",
    )
    hx.answer(project, "codex", payload)
    assert [e["ok"] for e in entries(run, "tool")] == [False]


def test_a_codex_patch_is_ok_as_its_transcript_says(project: Path) -> None:
    patch = hx.codex_patch(("Add", "a.md", "+a"))
    transcript = hx.codex_transcript(project / "t.jsonl", "call_1", status="completed")
    raw = hx.codex(
        "PostToolUse",
        project,
        transcript_path=transcript,
        tool_use_id="call_1",
        tool_name="apply_patch",
        tool_input={"command": patch},
        tool_response="Exit code: 0\nSuccess.",
    )
    (found,) = harness.events("codex", raw, None)
    assert found["tool_response"] == {"stdout": "Exit code: 0\nSuccess.", "success": True}


@pytest.mark.parametrize("kind", ["missing", "fifo", "another call", "not json"])
def test_codex_evidence_claims_nothing_the_transcript_does_not_say(
    project: Path, kind: str
) -> None:
    """No sign, no claim: the response stays Codex's bare output, with no exit code or success
    for the core to read as success. A transcript path that is a FIFO is not waited on."""
    path = project / "t.jsonl"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "another call":
        hx.codex_transcript(path, "call_9", exit_code=0, status="completed")
    elif kind == "not json":
        path.write_text('{"item_completed" "call_1"\n')
    raw = hx.codex(
        "PostToolUse",
        project,
        transcript_path=str(path),
        tool_name="Bash",
        tool_input={"command": "make"},
        tool_response="ok\n",
    )
    (found,) = harness.events("codex", raw, None)
    assert found["tool_response"] == "ok\n"


POLICY_DOCS = (
    "name: docs\nversion: 1\ntree:\n  type: action\n  name: Docs\n"
    "  tools: {allow: ['Edit(docs/**)']}\n  steps:\n    - instruct: Improve the docs.\n"
)


@pytest.mark.parametrize(
    "patch",
    [
        "*** Begin Patch\n*** Update File: docs/a.md\n*** Move to: src/app.py\n@@\n-a\n+b\n"
        "*** End Patch\n",
        "*** Begin Patch\n*** Update File: docs/a.md\n*** Move to: docs/../src/app.py\n@@\n"
        "-a\n+b\n*** End Patch\n",
        # Codex reads an indented header as a file of the patch.
        "*** Begin Patch\n*** Update File: docs/a.md\n@@\n-a\n+b\n  *** Add File: src/app.py\n"
        "+b\n*** End Patch\n",
    ],
    ids=["move", "move climbing out", "indented header"],
)
def test_a_codex_patch_writing_outside_the_allowed_folder_is_denied(
    project: Path, patch: str
) -> None:
    configure(project, BOUND)
    (project / "docs.yaml").write_text(POLICY_DOCS)
    rt = Runtime()
    rt.submit(
        rt.start(str(project / "docs.yaml"), str(project / "runs/feature.json"))["uri"], "success"
    )
    call = {"tool_name": "apply_patch", "tool_input": {"command": patch}}
    out = hx.answer(project, "codex", hx.codex("PreToolUse", project, **call))
    reason = out["hookSpecificOutput"]["permissionDecisionReason"]
    assert "Write may not run while the instruct 'Docs' is open" in reason
    plain = hx.codex_patch(("Update", "docs/a.md", "@@\n-a\n+b"))
    call = {"tool_name": "apply_patch", "tool_input": {"command": plain}}
    assert hx.answer(project, "codex", hx.codex("PreToolUse", project, **call)) == {}


SHELL_DOCS = POLICY_DOCS.replace("['Edit(docs/**)']", "[Bash, 'Edit(docs/**)']")


def _heredoc(prefix: str, *lines: str) -> str:
    return (
        f"{prefix}apply_patch <<'EOF'\n*** Begin Patch\n"
        + "\n".join(lines)
        + "\n*** End Patch\nEOF\n"
    )


@pytest.mark.parametrize(
    ("command", "denied"),
    [
        (_heredoc("cd docs && ", "*** Add File: ../src/app.py", "+x"), "Write"),
        (
            _heredoc("", "*** Update File: docs/a.md", "*** Move to: src/app.py", "@@", "-a", "+b"),
            "Write",
        ),
        (_heredoc("cd src; cd ../docs && ", "*** Update File: a.md", "@@", "-a", "+b"), "Edit"),
        (_heredoc("cd docs && ", "*** Update File: a.md", "@@", "-a", "+b"), None),
    ],
    ids=["cd then climb out", "move", "where the shell is, unknown", "inside docs"],
)
def test_a_patch_through_codexs_shell_is_held_to_the_policy_as_its_files(
    project: Path, command: str, denied: str | None
) -> None:
    """Codex applies `[cd DIR &&] apply_patch <<'EOF'` itself, reported as Bash alone: a step
    that allows the shell still holds the patch's files to `Edit(docs/**)`."""
    configure(project, BOUND)
    (project / "docs.yaml").write_text(SHELL_DOCS)
    rt = Runtime()
    rt.submit(
        rt.start(str(project / "docs.yaml"), str(project / "runs/feature.json"))["uri"], "success"
    )
    call = {"tool_name": "Bash", "tool_input": {"command": command}}
    out = hx.answer(project, "codex", hx.codex("PreToolUse", project, **call))
    if denied is None:
        assert out == {}
    else:
        reason = out["hookSpecificOutput"]["permissionDecisionReason"]
        assert f"{denied} may not run while the instruct 'Docs' is open" in reason


def test_codex_patch_reading_stays_linear_on_long_lines(project: Path) -> None:
    """A header padded with 200,000 spaces and a shell line of 20,000 `apply_patch` words are
    read at once (a lazy path before `[ \\t]*$` took minutes on them)."""
    pad = " " * 200_000
    patch = (
        f"*** Begin Patch\n*** Add File: a{pad}b{pad}\n+x\n"
        f"*** Update File: c\n*** Move to: d{pad}\n"
    )
    raw = hx.codex("PreToolUse", project, tool_name="apply_patch", tool_input={"command": patch})
    found = harness.events("codex", raw, None)
    paths = [(e["tool_name"], e["tool_input"]["file_path"]) for e in found]
    assert paths == [
        ("Write", str(project / f"a{pad}b")),
        ("Edit", str(project / "c")),
        ("Write", str(project / "d")),
    ]
    shell = "apply_patch " * 20_000
    raw = hx.codex("PreToolUse", project, tool_name="Bash", tool_input={"command": shell})
    assert [e["tool_name"] for e in harness.events("codex", raw, None)] == ["Bash"]


# -- Gemini CLI ----------------------------------------------------------------------------------


def test_gemini_denies_a_destructive_command(project: Path) -> None:
    payload = hx.gemini(
        "BeforeTool",
        project,
        tool_name="run_shell_command",
        tool_input={"command": "git push --force origin main", "dir_path": "."},
    )
    out = hx.answer(project, "gemini", payload)
    assert out["decision"] == "deny" and out["reason"].startswith(DESTRUCTIVE)


def test_gemini_warns_the_user_before_a_call_and_lets_it_run(project: Path) -> None:
    """BeforeTool has no context field (coreToolHookTriggers.ts reads none): a warning before
    a call can only reach the user."""
    payload = hx.gemini(
        "BeforeTool",
        project,
        tool_name="replace",
        tool_input={"file_path": str(project / "app.py"), "old_string": "hi", "new_string": "ho"},
    )
    out = hx.answer(project, "gemini", payload)
    assert set(out) == {"systemMessage"}
    assert "[BEHAVIOR WARNING] read_before_edit" in out["systemMessage"]


def test_gemini_gets_context_at_start_at_each_prompt_and_after_a_call(
    project: Path, run: str
) -> None:
    configure(project, DEV + BOUND.removeprefix("security:\n  behavior:\n"))
    start = hx.answer(project, "gemini", hx.gemini("SessionStart", project, source="startup"))
    spec = start["hookSpecificOutput"]
    assert spec["hookEventName"] == "SessionStart"
    assert "## Behavioral rules" in spec["additionalContext"]
    assert "[Tether] This session is bound to the execution" in spec["additionalContext"]
    prompt = hx.answer(project, "gemini", hx.gemini("BeforeAgent", project, prompt="go on"))
    assert prompt["hookSpecificOutput"]["hookEventName"] == "BeforeAgent"
    assert (
        "Current request: instruct 'Implement'" in prompt["hookSpecificOutput"]["additionalContext"]
    )
    after = hx.answer(
        project,
        "gemini",
        hx.gemini(
            "AfterTool",
            project,
            tool_name="replace",
            tool_input={"file_path": str(project / "app.py"), "old_string": "a", "new_string": "b"},
            tool_response={"llmContent": "Successfully modified file", "returnDisplay": "ok"},
        ),
    )
    assert after["hookSpecificOutput"]["hookEventName"] == "AfterTool"
    assert "verify_after_edit" in after["hookSpecificOutput"]["additionalContext"]


def test_gemini_after_agent_is_refused_while_the_bound_execution_runs(
    project: Path, run: str
) -> None:
    outs = [
        hx.answer(
            project,
            "gemini",
            hx.gemini(
                "AfterAgent",
                project,
                prompt="build it",
                prompt_response="All done.",
                stop_hook_active=n > 0,
            ),
        )
        for n in range(4)
    ]
    for out in outs[:3]:
        assert out["decision"] == "deny" and "instruct 'Implement'" in out["reason"]
    assert "decision" not in outs[3] and "parked" in outs[3]["systemMessage"]
    assert [e["outcome"] for e in entries(run, "stop")] == ["refused"] * 3 + ["parked"]


def test_gemini_tools_meet_policies_written_with_claude_code_names(project: Path, run: str) -> None:
    Runtime().submit(run, "success")  # Review: allow Read, Grep, Glob, Bash(git diff*)
    edit = hx.gemini(
        "BeforeTool",
        project,
        tool_name="replace",
        tool_input={"file_path": str(project / "app.py"), "old_string": "a", "new_string": "b"},
    )
    out = hx.answer(project, "gemini", edit)
    assert out["decision"] == "deny" and "Edit may not run" in out["reason"]
    for tool, params in [
        ("read_file", {"file_path": str(project / "app.py")}),
        ("grep_search", {"pattern": "def ", "dir_path": "src"}),
        ("run_shell_command", {"command": "git diff --stat"}),
    ]:
        assert (
            hx.answer(
                project,
                "gemini",
                hx.gemini("BeforeTool", project, tool_name=tool, tool_input=params),
            )
            == {}
        )
    shell = hx.gemini(
        "BeforeTool", project, tool_name="run_shell_command", tool_input={"command": "pytest -q"}
    )
    assert "Bash may not run" in hx.answer(project, "gemini", shell)["reason"]


def test_gemini_calls_are_evidence_under_claude_code_names(project: Path, run: str) -> None:
    prompted(project, "gemini")
    rt = Runtime()
    rt.submit(run, "success")
    rt.submit(run, "success")  # Test is open: its check wants a Bash pytest run that passed

    # As Gemini CLI 0.61 sends them (tests/field/test_gemini_cli.py): a failing command sets no
    # `error`, its exit code is a section of `llmContent`, written only when it is not 0, and
    # the whole is wrapped as untrusted.
    def shell(text: str) -> dict[str, str]:
        return {"llmContent": f"<untrusted_context>\n{text}\n</untrusted_context>"}

    failed = shell("Output: 1 failed\nExit Code: 1\nProcess Group PGID: 7")
    broken = {"llmContent": "", "returnDisplay": "", "error": {"message": "spawn failed"}}
    moved = shell("Command moved to background (PID: 9). Output hidden.")
    passed = shell("Output: Exit Code: 1 is what it printed\n5 passed\nProcess Group PGID: 8")
    for response in (failed, broken, moved, passed):
        hx.answer(
            project,
            "gemini",
            hx.gemini(
                "AfterTool",
                project,
                tool_name="run_shell_command",
                tool_input={"command": "python -m pytest -q"},
                tool_response=response,
            ),
        )
    tools = entries(run, "tool")
    assert [t["ok"] for t in tools] == [False, False, None, True]
    assert {t["tool"] for t in tools} == {"Bash"}
    assert rt.submit(run, "success")["status"] == "action_complete"
    assert rt.next(run) == {"status": "done"}
    verified(run)


def test_a_gemini_mcp_start_binds_the_session(project: Path) -> None:
    configure(project, "workflow:\n  bind: auto\n")
    (project / "feature.yaml").write_text(TREE)
    result = Runtime().start(str(project / "feature.yaml"), str(project / "runs" / "g.json"))
    stop = hx.gemini("AfterAgent", project, prompt="x", prompt_response="y", stop_hook_active=False)
    assert hx.answer(project, "gemini", stop) == {}
    started = hx.gemini(
        "AfterTool",
        project,
        tool_name="mcp_tether_start_execution",
        tool_input={"tree_uri": "feature.yaml", "trace_output": "runs/g.json"},
        mcp_context={"server_name": "tether", "tool_name": "start_execution"},
        tool_response={"llmContent": [{"text": json.dumps(result)}], "returnDisplay": "started"},
    )
    hx.answer(project, "gemini", started)
    out = hx.answer(project, "gemini", stop)
    assert out["decision"] == "deny" and "Acknowledge_Protocol" in out["reason"]


def test_a_broken_gemini_guard_still_denies_destructive_commands(project: Path) -> None:
    configure(project, "security:\n  behavior:\n    rulez: {}\n")
    rm = hx.gemini(
        "BeforeTool", project, tool_name="run_shell_command", tool_input={"command": "rm -rf /"}
    )
    out = hx.answer(project, "gemini", rm)
    assert out["decision"] == "deny" and "tether guard cannot start" in out["reason"]
    ls = hx.gemini("BeforeTool", project, tool_name="list_directory", tool_input={"dir_path": "."})
    out = hx.answer(project, "gemini", ls)
    assert set(out) == {"systemMessage"} and "cannot start" in out["systemMessage"]


def test_gemini_reads_a_failed_hook_as_text(project: Path) -> None:
    """Gemini CLI parses a JSON object on stderr as the answer (allowing the call), so the hook
    writes its error as text there: exit 2 then denies."""
    done = hx.hook(project, "gemini", {})
    assert done.returncode == 0 and done.stdout == ""  # an event the guard does not answer
    bad = hx.hook(project, "gemini", ["not", "an", "object"])  # type: ignore[arg-type]
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr.startswith("tether guard: invalid_json: hook input must be a JSON object")


# -- Cursor --------------------------------------------------------------------------------------


def test_cursor_denies_a_destructive_command(project: Path) -> None:
    payload = hx.cursor(
        "preToolUse", project, tool_name="Shell", tool_input={"command": "git reset --hard HEAD~3"}
    )
    out = hx.answer(project, "cursor", payload)
    assert out["permission"] == "deny"
    assert out["agent_message"].startswith(DESTRUCTIVE)
    assert out["user_message"] == out["agent_message"]


def test_cursor_reads_the_shell_event_too(project: Path) -> None:
    payload = hx.cursor("beforeShellExecution", project, command="rm -rf /", cwd=str(project))
    assert hx.answer(project, "cursor", payload)["permission"] == "deny"


def test_cursor_warns_the_agent_and_lets_the_call_run(project: Path) -> None:
    payload = hx.cursor(
        "preToolUse",
        project,
        tool_name="StrReplace",
        tool_input=json.dumps({"path": str(project / "app.py"), "old_string": "a"}),
    )
    out = hx.answer(project, "cursor", payload)
    assert out["permission"] == "allow"
    assert "[BEHAVIOR WARNING] read_before_edit" in out["agent_message"]
    assert str(project / "app.py") in out["agent_message"]  # Cursor's `path` read as file_path


def test_cursor_gets_context_at_session_start_and_after_a_call_not_at_a_prompt(
    project: Path,
) -> None:
    start = hx.answer(project, "cursor", hx.cursor("sessionStart", project))
    assert set(start) == {"additional_context"}
    assert "## Behavioral rules" in start["additional_context"]
    # beforeSubmitPrompt has no context field: the turn starts, nothing is said.
    assert hx.answer(project, "cursor", hx.cursor("beforeSubmitPrompt", project, prompt="hi")) == {}
    after = hx.answer(
        project,
        "cursor",
        hx.cursor(
            "postToolUse",
            project,
            tool_name="Edit",
            tool_input={"file_path": str(project / "app.py")},
            tool_output=json.dumps({"success": True}),
        ),
    )
    assert "verify_after_edit" in after["additional_context"]


def test_cursor_stop_queues_a_follow_up_while_the_execution_runs(project: Path, run: str) -> None:
    aborted = hx.cursor("stop", project, status="aborted", loop_count=0)
    assert hx.answer(project, "cursor", aborted) == {}  # the user stopped it: nothing is held
    outs = [
        hx.answer(project, "cursor", hx.cursor("stop", project, status="completed", loop_count=n))
        for n in range(4)
    ]
    for n, out in enumerate(outs[:3], 1):
        assert set(out) == {"followup_message"}
        assert "instruct 'Implement'" in out["followup_message"]
        assert f"refused {n} of 3" in out["followup_message"]
    assert outs[3] == {}  # let through: Cursor's stop has no message for the user
    assert [e["outcome"] for e in entries(run, "stop")] == ["refused"] * 3 + ["parked"]
    verified(run)


def test_cursor_tools_meet_the_policy_and_are_evidence(project: Path, run: str) -> None:
    prompted(project, "cursor")
    shell = hx.cursor(
        "postToolUse",
        project,
        tool_name="Shell",
        tool_input={"command": "make"},
        tool_output=json.dumps({"exit_code": 2}),
    )
    hx.answer(project, "cursor", shell)
    assert [(t["tool"], t["ok"]) for t in entries(run, "tool")] == [("Bash", False)]
    Runtime().submit(run, "success")  # Review
    edit = hx.cursor(
        "preToolUse",
        project,
        tool_name="StrReplace",
        tool_input={"path": "app.py", "old_string": "a", "new_string": "b"},
    )
    out = hx.answer(project, "cursor", edit)
    assert out["permission"] == "deny" and "Edit may not run" in out["agent_message"]
    read = hx.cursor("beforeReadFile", project, file_path=str(project / "app.py"), content="x")
    assert hx.answer(project, "cursor", read) == {}
    verified(run)


def test_cursor_evidence_claims_only_what_its_payload_says(project: Path, run: str) -> None:
    """Cursor has no command line to run here, so this follows its documented payloads
    (https://cursor.com/docs/agent/hooks): a failed call is `postToolUseFailure`, so a
    `postToolUse` of a file tool is a success; a shell command's payload carries its output
    only (`afterShellExecution`: `command`, `output`), so without an exit code its outcome is
    unknown (null), and a check reads it as not ok."""
    prompted(project, "cursor")
    app = str(project / "app.py")
    calls = [
        ("postToolUse", "Read", {"path": app}, {"tool_output": json.dumps({"content": "x"})}),
        ("postToolUse", "Shell", {"command": "make"}, {"tool_output": "make: done"}),
        ("postToolUseFailure", "Read", {"path": "/nope"}, {"error_message": "no such file"}),
        ("afterShellExecution", "", {}, {"command": "pytest", "output": "5 passed"}),
    ]
    for event, name, params, more in calls:
        fields = {"tool_name": name, "tool_input": params} if name else {}
        hx.answer(project, "cursor", hx.cursor(event, project, **fields, **more))
    assert [(t["tool"], t["ok"]) for t in entries(run, "tool")] == [
        ("Read", True),
        ("Bash", None),
        ("Read", False),
        ("Bash", None),
    ]
    verified(run)


# -- serve ---------------------------------------------------------------------------------------


def post(url: str, payload: dict[str, Any], headers: dict[str, str] | None = None) -> Any:
    request = urllib.request.Request(
        url,
        data=json.dumps(payload).encode(),
        headers={"Content-Type": "application/json", **(headers or {})},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def test_serve_answers_each_harness_in_its_format(project: Path) -> None:
    rm = {"command": "rm -rf /"}
    with hk.serving(project) as url:
        gemini = post(
            url + "?harness=gemini",
            hx.gemini("BeforeTool", project, tool_name="run_shell_command", tool_input=rm),
        )
        cursor = post(
            url,
            hx.cursor("preToolUse", project, tool_name="Shell", tool_input=rm),
            {"X-Tether-Harness": "cursor"},
        )
        claude = post(url, hk.pre(project, "Bash", rm))
        with pytest.raises(urllib.error.HTTPError) as refused:
            post(url + "?harness=aider", hk.pre(project, "Bash", rm))
        error = json.loads(refused.value.read())  # read while the server still runs
    assert gemini["decision"] == "deny" and cursor["permission"] == "deny"
    assert claude["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert refused.value.code == 400 and error["error"]["code"] == "usage"


def test_a_codex_patch_cannot_climb_out_of_an_allowed_folder(project: Path) -> None:
    """Each file of a patch is held to `Edit(src/**)` by its resolved path: `src/../..` is not
    under `src`, and one such file denies the whole patch."""
    configure(project, BOUND)
    (project / "fenced.yaml").write_text(
        "name: fenced\nversion: 1\ntree:\n  type: action\n  name: Fix\n"
        "  tools: {allow: ['Edit(src/**)', 'Write(src/**)']}\n"
        "  steps:\n    - instruct: Fix the bug in src.\n"
    )
    rt = Runtime()
    uri = rt.start(str(project / "fenced.yaml"), str(project / "runs" / "feature.json"))["uri"]
    rt.submit(uri, "success")
    inside = hx.codex_patch(("Update", "src/calc.py", "-a\n+b"))
    outside = hx.codex_patch(
        ("Update", "src/calc.py", "-a\n+b"), ("Update", "src/../../escape.py", "-a\n+b")
    )
    call = {"tool_name": "apply_patch"}
    ok = hx.answer(
        project, "codex", hx.codex("PreToolUse", project, **call, tool_input={"command": inside})
    )
    assert ok == {}
    out = hx.answer(
        project, "codex", hx.codex("PreToolUse", project, **call, tool_input={"command": outside})
    )
    reason = out["hookSpecificOutput"]["permissionDecisionReason"]
    assert (
        "Edit may not run while the instruct 'Fix' is open (no entry of allow covers it)" in reason
    )
    assert reason.count("may not run") == 1  # only the file outside src
    assert not (project.parent / "escape.py").exists()
