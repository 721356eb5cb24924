"""A bound session that does not play along: each attack on the binding, as a hostile agent would
make it, refused. Real hook payloads through `tether guard hook` (a fresh process per event) and
`serve`; real executions in the file store; the real `tether` command where the agent runs one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from guard import hookkit as hk
from tether.guard.binding.steptools import refusal
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
        - instruct: Write the code.
    - type: action
      name: Review
      tools: {allow: [Read, Grep, "Bash(git diff*)"], deny: [Write]}
      steps:
        - instruct: Review the diff.
"""
TRIVIAL = """\
name: trivial
version: 1
tree:
  type: action
  name: Only
  steps:
    - instruct: Nothing to do.
"""
# The evidence check the guide shows: the whole command is a pytest run, so no `echo pytest`,
# `pytest || true` or `pytest; true` satisfies it, and the run passed.
PYTEST_CHECK = (
    'TOOLS.exists(t, t.tool == "Bash" && t.ok && '
    't.input.command.matches("^\\\\s*(python3? -m )?pytest( [-A-Za-z0-9_./=:]+)*\\\\s*$"))'
)
EVIDENCE_TREE = f"""\
name: tested
version: 1
tree:
  type: action
  name: Test
  steps:
    - instruct: Run the tests with pytest.
    - check: '{PYTEST_CHECK}'
"""
CONFIG = "workflow:\n  trace: runs/feature.json\n"


def write_config(project: Path, text: str) -> None:
    (project / ".tether").mkdir(exist_ok=True)
    (project / ".tether" / "guard.yaml").write_text(text)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "feature.yaml").write_text(TREE)
    (tmp_path / "trivial.yaml").write_text(TRIVIAL)
    (tmp_path / "app.py").write_text("print('hi')\n")
    (tmp_path / "runs").mkdir()
    write_config(tmp_path, CONFIG)
    return tmp_path


@pytest.fixture
def run(project: Path) -> str:
    """The configured execution past its gate (`Implement` open), and the session's first
    prompt seen by the guard."""
    rt = Runtime()
    uri = str(
        rt.start(str(project / "feature.yaml"), str(project / "runs" / "feature.json"))["uri"]
    )
    rt.submit(uri, "success")
    hk.hook_json(project, hk.prompt(project, "Build the feature."))
    return uri


def tether_cli(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tether.cli.main", *args],
        capture_output=True,
        text=True,
        cwd=project,
        check=False,
    )


def decision(out: dict[str, Any] | None) -> str | None:
    if out is None or "hookSpecificOutput" not in out:
        return None
    return out["hookSpecificOutput"].get("permissionDecision")


def reason(out: dict[str, Any] | None) -> str:
    assert decision(out) == "deny", out
    assert out is not None
    return str(out["hookSpecificOutput"]["permissionDecisionReason"])


def entries(uri: str, kind: str) -> list[dict[str, Any]]:
    return [e for e in Runtime().trace(uri) if e["kind"] == kind]


def stop(project: Path, session: str = hk.SESSION) -> dict[str, Any] | None:
    return hk.hook_json(project, hk.stop(project, session=session))


def on_path(project: Path) -> dict[str, str]:
    """The environment of the agent's shell: this `tether` first on PATH."""
    folder = os.path.dirname(sys.executable)
    return {**os.environ, "PATH": folder + os.pathsep + os.environ["PATH"]}


# -- 1. the bound execution's files and the guard's ----------------------------------------------

WRITES = [
    ("Write", {"file_path": "runs/feature.json", "content": "{}"}),
    ("Edit", {"file_path": "runs/feature.json.trace.jsonl", "old_string": "a", "new_string": "b"}),
    ("NotebookEdit", {"notebook_path": ".tether/guard.yaml", "new_source": "x"}),
    ("Write", {"file_path": "runs/../.tether/guard.yaml", "content": "{}"}),
    ("Write", {"file_path": ".state/plans/plan-x.json", "content": "{}"}),
    ("mcp__filesystem__write_file", {"path": "runs/feature.json", "content": "{}"}),
    ("mcp__filesystem__move_file", {"source": "app.py", "destination": "runs/feature.json"}),
    ("Bash", {"command": "tether schema > runs/feature.json"}),
    ("Bash", {"command": "tether schema > .tether/guard.yaml"}),
    ("Bash", {"command": "git diff>>runs/feature.json.trace.jsonl"}),
    ("Bash", {"command": "echo '{}' &> runs/feature.json.tree.json"}),
    ("Bash", {"command": "cp /dev/null runs/feature.json"}),
    ("Bash", {"command": "sed -i s/running/complete/ runs/feature.json"}),
    ("Bash", {"command": "tee .tether/guard.yaml < /dev/null"}),
    ("Bash", {"command": "dd if=/dev/zero of=runs/feature.json count=1"}),
    ("Bash", {"command": "rm -rf runs"}),
    ("Bash", {"command": "rm runs/*.json"}),
    ("Bash", {"command": "bash -c 'tether schema > runs/feature.json'"}),
    ("Bash", {"command": "ls; echo $(tether schema > .tether/guard.yaml)"}),
    ("Bash", {"command": "true\ntruncate -s 0 runs/feature.json"}),
]


@pytest.mark.parametrize(("tool", "params"), WRITES, ids=[str(p) for _, p in WRITES])
def test_a_bound_sessions_tools_may_not_write_its_execution_or_the_guards_files(
    project: Path, run: str, tool: str, params: dict[str, Any]
) -> None:
    # `Implement` has no tools policy: everything else may run, but not these.
    why = reason(hk.hook_json(project, hk.pre(project, tool, params)))
    assert "may not write" in why
    assert "bound execution" in why or "the guard's" in why


@pytest.mark.parametrize(
    "command",
    [
        "cat runs/feature.json",
        "tether next runs/feature.json",
        "python -m tether submit runs/feature.json success",
        "uvx --from tether-bt tether trace runs/feature.json",
        "tether get runs/feature.json > notes.json",
        "echo done > notes.txt",
        "python -m pytest -q 2>&1 | tail -3",
    ],
)
def test_reading_the_execution_and_writing_elsewhere_still_run(
    project: Path, run: str, command: str
) -> None:
    out = hk.hook_json(project, hk.pre(project, "Bash", {"command": command}))
    assert decision(out) != "deny", out
    read = {"file_path": str(project / "runs" / "feature.json")}
    assert decision(hk.hook_json(project, hk.pre(project, "Read", read))) != "deny"


def test_an_execution_damaged_behind_the_guards_back_keeps_the_stop_refused(
    project: Path, run: str
) -> None:
    """A person's slip or a script the hooks never saw: the execution cannot be read. Stop is
    refused as while it runs (the same cap), only reading tools run, and each says why."""
    state = project / "runs" / "feature.json"
    state.write_text(json.dumps({"schema": "not an execution"}))
    outs = [stop(project) for _ in range(4)]
    for n, out in enumerate(outs[:3], 1):
        assert out is not None and out["decision"] == "block"
        assert "cannot be read" in out["reason"] and run in out["reason"]
        assert f"refused {n} of 3 times" in out["reason"]
    assert outs[3] is not None and "decision" not in outs[3]
    assert "let through after 3 refusals" in outs[3]["systemMessage"]
    edit = {"file_path": str(project / "app.py"), "old_string": "hi", "new_string": "yo"}
    assert "cannot be read" in reason(hk.hook_json(project, hk.pre(project, "Edit", edit)))
    read = {"file_path": str(project / "app.py")}
    assert decision(hk.hook_json(project, hk.pre(project, "Read", read))) != "deny"


def test_an_execution_removed_after_the_session_saw_it_keeps_the_stop_refused(
    project: Path, run: str
) -> None:
    for path in (project / "runs").iterdir():
        path.unlink()
    out = stop(project)
    assert out is not None and out["decision"] == "block"
    assert "cannot be read (not_found" in out["reason"]
    # a session that never saw it running is not held to an execution not started yet
    assert stop(project, session="a-new-session") is None


def test_a_finished_execution_cleared_away_frees_the_session(project: Path, run: str) -> None:
    rt = Runtime()
    rt.submit(run, "success")
    rt.submit(run, "success")
    assert rt.next(run) == {"status": "done"}
    assert stop(project) is None
    for path in (project / "runs").iterdir():
        path.unlink()
    assert stop(project) is None


def test_a_broken_configuration_keeps_the_last_good_one(project: Path, run: str) -> None:
    """`tether schema > .tether/guard.yaml` written by hand (the agent may not): the guard
    goes on under the last configuration it read, and says so."""
    schema = tether_cli(project, "schema")
    (project / ".tether" / "guard.yaml").write_text(schema.stdout)
    out = stop(project)
    assert out is not None and out["decision"] == "block" and "Implement" in out["reason"]
    assert "last good configuration" in out["systemMessage"]
    Runtime().submit(run, "success")  # Review: Edit is not allowed
    edit = {"file_path": str(project / "app.py"), "old_string": "hi", "new_string": "yo"}
    assert "no entry of allow" in reason(hk.hook_json(project, hk.pre(project, "Edit", edit)))
    approve = {"command": f"tether approve {run}"}
    assert "person's answer" in reason(hk.hook_json(project, hk.pre(project, "Bash", approve)))
    done = subprocess.run(
        [sys.executable, "-m", "tether.cli.main", "guard", "log", "--state-dir", ".state"],
        capture_output=True,
        text=True,
        cwd=project,
        check=True,
    )
    logged = json.loads(done.stdout)["errors"]
    assert logged and logged[-1]["outcome"] == "last good configuration"


# -- 2. a binding is never displaced --------------------------------------------------------------


def test_starting_another_tree_does_not_free_the_session(project: Path, run: str) -> None:
    """`tether start trivial.yaml t.json` and two submits finish t.json; the configured
    execution still holds the stop and the tools."""
    env = on_path(project)
    for command in (
        "tether start trivial.yaml t.json",
        "tether submit t.json success",
        "tether submit t.json success",
    ):
        pre = hk.hook_json(project, hk.pre(project, "Bash", {"command": command}))
        assert decision(pre) != "deny"
        done = subprocess.run(
            command, shell=True, capture_output=True, text=True, cwd=project, env=env
        )
        assert done.returncode == 0, done.stderr
        hk.hook_json(
            project, hk.post(project, "Bash", {"command": command}, hk.bash_response(done.stdout))
        )
    assert Runtime().next(str(project / "t.json")) == {"status": "done"}
    out = stop(project)
    assert out is not None and out["decision"] == "block" and run in out["reason"]
    Runtime().submit(run, "success")  # Review
    write = {"file_path": str(project / "app.py"), "content": "x"}
    assert "matches 'Write' in deny" in reason(
        hk.hook_json(project, hk.pre(project, "Write", write))
    )


def test_a_failed_resume_binds_nothing(project: Path, run: str) -> None:
    command = "tether resume runs/nothing.json || true"
    done = subprocess.run(
        command, shell=True, capture_output=True, text=True, cwd=project, env=on_path(project)
    )
    assert done.returncode == 0 and done.stdout == ""
    hk.hook_json(project, hk.post(project, "Bash", {"command": command}, hk.bash_response()))
    status = json.loads(
        tether_cli(
            project, "guard", "status", "--state-dir", ".state", "--session", hk.SESSION
        ).stdout
    )
    assert [b["trace"] for b in status["bound"]] == [run]
    out = stop(project)
    assert out is not None and out["decision"] == "block" and run in out["reason"]


def test_every_running_execution_the_session_started_holds_the_stop(project: Path) -> None:
    write_config(project, "workflow:\n  bind: auto\n")
    hk.hook_json(project, hk.prompt(project, "Build it."))
    env = on_path(project)
    started = {}
    for name in ("a", "b"):
        command = f"tether start trivial.yaml runs/{name}.json"
        done = subprocess.run(
            command, shell=True, capture_output=True, text=True, cwd=project, env=env
        )
        started[name] = json.loads(done.stdout)["uri"]
        hk.hook_json(
            project, hk.post(project, "Bash", {"command": command}, hk.bash_response(done.stdout))
        )
    rt = Runtime()
    rt.submit(started["b"], "success")
    rt.submit(started["b"], "success")  # b is done; a still runs
    out = stop(project)
    assert out is not None and out["decision"] == "block"
    assert started["a"] in out["reason"] and started["b"] not in out["reason"]
    rt.submit(started["a"], "success")
    rt.submit(started["a"], "success")
    assert stop(project) is None


# -- 3. the plan cache ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "poison",
    [
        {"version": 1, "files": {}},  # the shape the finding names
        {"texts": {}},
        {"sources": {}},
        {"texts": {"/nowhere": None}},
    ],
    ids=["files-empty", "texts-empty", "sources-empty", "texts-elsewhere"],
)
def test_a_poisoned_plan_cache_never_outranks_its_file(
    tmp_path: Path, poison: dict[str, Any]
) -> None:
    write_config(tmp_path, "profile: dev\n")

    def rm() -> dict[str, Any]:  # each call its own tool_use_id, as a harness sends them
        return hk.pre(tmp_path, "Bash", {"command": "rm -rf /"})

    assert decision(hk.hook_json(tmp_path, rm())) == "deny"
    (cache,) = (tmp_path / ".state" / "plans").glob("plan-*.json")
    data = json.loads(cache.read_text())
    data["plan"]["rules"] = []
    cache.write_text(json.dumps({**data, **poison}))
    assert "confirm_destructive" in reason(hk.hook_json(tmp_path, rm()))


def test_r3_a_cache_with_the_right_texts_and_no_rules_is_not_the_plan(tmp_path: Path) -> None:
    """R3: a cache written by the agent with the configuration's very texts and stamps and
    `rules: []` (its seal recomputed as well as it can be without the key) is not used: the
    configuration's own rules decide, and the cache is made afresh."""
    write_config(tmp_path, "profile: dev\n")

    def rm() -> dict[str, Any]:
        return hk.pre(tmp_path, "Bash", {"command": "rm -rf /"})

    assert decision(hk.hook_json(tmp_path, rm())) == "deny"
    (cache,) = (tmp_path / ".state" / "plans").glob("plan-*.json")
    data = json.loads(cache.read_text())
    for seal in (data["seal"], "0" * 64):
        forged = {**data, "plan": {**data["plan"], "rules": []}, "seal": seal}
        cache.write_text(json.dumps(forged))
        assert "confirm_destructive" in reason(hk.hook_json(tmp_path, rm()))
        assert json.loads(cache.read_text())["plan"]["rules"], "the cache was not made afresh"


N7_WRITES = [
    ("Write", {"file_path": ".state/plans/plan-x.json", "content": "{}"}),
    ("Edit", {"file_path": ".tether/guard.yaml", "old_string": "dev", "new_string": "x"}),
    ("Bash", {"command": "echo '{}' > .state/plans/plan-x.json"}),
    ("Bash", {"command": "rm -rf .state/plans"}),
    ("Bash", {"command": "cd .state && rm -r plans"}),
    ("Bash", {"command": "mv .tether/guard.yaml x"}),
    ("mcp__filesystem__write_file", {"path": ".tether/guard.yaml", "content": "{}"}),
]


@pytest.mark.parametrize(("tool", "params"), N7_WRITES, ids=[str(p) for _, p in N7_WRITES])
def test_n7_an_unbound_session_may_not_write_the_rules_own_files(
    tmp_path: Path, tool: str, params: dict[str, Any]
) -> None:
    """N7 (and R13's `mv`): with no execution bound, a write to the plan cache or the
    configuration, through any tool, is still denied; the files are unchanged."""
    write_config(tmp_path, "profile: dev\n")
    assert hk.hook_json(tmp_path, hk.prompt(tmp_path, "Tidy up.")) is None
    assert "rules change only by a person" in reason(
        hk.hook_json(tmp_path, hk.pre(tmp_path, tool, params))
    )
    assert (tmp_path / ".tether" / "guard.yaml").read_text() == "profile: dev\n"


def test_n7_an_unbound_session_still_writes_its_own_files(tmp_path: Path) -> None:
    write_config(tmp_path, "profile: dev\n")
    for tool, params in (
        ("Write", {"file_path": "plans/plan-a.json", "content": "{}"}),
        ("Bash", {"command": "echo hi > notes.txt && rm -f *.tmp"}),
        ("Edit", {"file_path": ".claude/settings.json", "old_string": "a", "new_string": "b"}),
    ):
        assert decision(hk.hook_json(tmp_path, hk.pre(tmp_path, tool, params))) is None


# -- 4. serve answers every request ---------------------------------------------------------------


def post_raw(url: str, body: bytes) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


@pytest.mark.parametrize("depth", [1000, 5000, 100_000])
def test_serve_denies_a_tool_call_nested_past_reading(project: Path, depth: int) -> None:
    inner = '{"a":' * depth + "1" + "}" * depth
    head = json.dumps(hk.pre(project, "Bash", {}))
    text = head.replace('"tool_input": {}', f'"tool_input": {inner}')
    with hk.serving(project) as url:
        status, body = post_raw(url, text.encode())
        assert status == 200
        assert body["hookSpecificOutput"]["permissionDecision"] == "deny"
        assert "could not decide" in body["hookSpecificOutput"]["permissionDecisionReason"]
        deep_stop = json.dumps(hk.stop(project))[:-1] + f', "x": {inner}}}'
        status, body = post_raw(url, deep_stop.encode())
        assert status == 400 and body["error"]["code"] == "invalid_json"
        assert post_raw(url, json.dumps(hk.stop(project)).encode())[0] == 200  # still serving


def test_serve_denies_a_nested_gemini_tool_call_in_geminis_format(project: Path) -> None:
    inner = '{"a":' * 2000 + "1" + "}" * 2000
    event = {"session_id": "g", "cwd": str(project), "hook_event_name": "BeforeTool"}
    text = (
        json.dumps({**event, "tool_name": "run_shell_command"})[:-1] + f', "tool_input": {inner}}}'
    )
    with hk.serving(project) as url:
        status, body = post_raw(url + "?harness=gemini", text.encode())
    assert status == 200 and body["decision"] == "deny" and "could not decide" in body["reason"]


def test_the_command_hook_denies_the_same_payload(project: Path) -> None:
    inner = '{"a":' * 1000 + "1" + "}" * 1000
    text = json.dumps(hk.pre(project, "Bash", {}))[:-1] + f', "tool_input": {inner}}}'
    done = subprocess.run(
        [sys.executable, "-m", "tether.cli.main", "guard", "hook", "--state-dir", ".state"],
        input=text,
        capture_output=True,
        text=True,
        cwd=project,
        env={**os.environ, "CLAUDE_PROJECT_DIR": str(project)},
        check=False,
    )
    assert done.returncode == 2  # the event could not be read: blocked


# -- 6. path policies resolve links ---------------------------------------------------------------


def test_a_path_policy_judges_a_link_where_it_leads(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "etc").symlink_to("/etc")
    (tmp_path / "docs" / "up").symlink_to(tmp_path / "src")
    policy = {"allow": ["Edit(docs/**)"]}
    for path in ("docs/etc/passwd", str(tmp_path / "docs/etc/passwd"), "docs/up/app.py"):
        assert refusal(policy, "Edit", {"file_path": path}, str(tmp_path)) is not None, path
    assert refusal(policy, "Edit", {"file_path": "docs/guide.md"}, str(tmp_path)) is None


# -- 7. driving an execution a person started -----------------------------------------------------


def test_answering_an_execution_a_person_started_binds_the_session(project: Path) -> None:
    write_config(project, "workflow:\n  bind: auto\n")
    person = Runtime().start(str(project / "feature.yaml"), str(project / "runs" / "p.json"))
    assert stop(project) is None
    command = "tether submit runs/p.json success"
    done = subprocess.run(
        command, shell=True, capture_output=True, text=True, cwd=project, env=on_path(project)
    )
    assert done.returncode == 0, done.stderr
    hk.hook_json(
        project, hk.post(project, "Bash", {"command": command}, hk.bash_response(done.stdout))
    )
    out = stop(project)
    assert out is not None and person["uri"] in out["reason"] and "Implement" in out["reason"]
    mcp = hk.post(project, "mcp__tether__next_step", {"trace_output": "runs/p.json"}, "")
    hk.hook_json(project, {**mcp, "session_id": "mcp-session"})
    assert stop(project, session="mcp-session") is not None
    missing = hk.post(project, "mcp__tether__next_step", {"trace_output": "runs/none.json"}, "")
    hk.hook_json(project, {**missing, "session_id": "third"})
    assert stop(project, session="third") is None


# -- 8. evidence ----------------------------------------------------------------------------------


def test_a_made_up_event_is_no_evidence(project: Path, run: str) -> None:
    forged = hk.post(project, "Bash", {"command": "pytest -q"}, hk.bash_response("5 passed"))
    hk.hook_json(project, {**forged, "session_id": "invented-session"})
    assert entries(run, "tool") == []
    hk.hook_json(project, forged)  # the session the guard has seen
    assert [e["input"]["command"] for e in entries(run, "tool")] == ["pytest -q"]
    # and the bound agent may not feed the guard's hook itself, however it spells the call
    for line in (
        "echo '{}' | tether guard hook --state-dir .state",
        "echo '{}' | python3 -m tether.guard.cli hook",
        "echo '{}' | python -m tether guard hook",
        "echo '{}' | uv run tether guard hook",
        "echo '{}' | uvx --from . tether guard hook",
        "echo '{}' | env X=1 /usr/local/bin/tether guard hook",
    ):
        out = hk.hook_json(project, hk.pre(project, "Bash", {"command": line}))
        assert "tether guard" in reason(out), line


@pytest.mark.parametrize(
    ("command", "ok", "passes"),
    [
        ("echo pytest", True, False),
        ("pytest || true", True, False),
        ("pytest; true", True, False),
        ("cat pytest.log", True, False),
        ("pytest -q tests/unit", False, False),
        ("pytest -q tests/unit", True, True),
        ("python -m pytest -q", True, True),
    ],
)
def test_the_guides_evidence_check_cannot_be_satisfied_by_an_echo(
    tmp_path: Path, command: str, ok: bool, passes: bool
) -> None:
    (tmp_path / "tested.yaml").write_text(EVIDENCE_TREE)
    rt = Runtime()
    uri = rt.start(str(tmp_path / "tested.yaml"), str(tmp_path / "t.json"))["uri"]
    rt.submit(uri, "success")
    rt.record_tool(uri, "Bash", {"command": command}, ok=ok)
    answer = rt.submit(uri, "success")
    assert (answer["status"] == "action_complete") is passes, answer


def test_the_guide_shows_the_check_the_tests_hold_it_to() -> None:
    root = Path(__file__).resolve().parents[2]
    assert PYTEST_CHECK in (root / "docs" / "workflow-guard.md").read_text()
    assert PYTEST_CHECK in (root / "examples" / "bound-feature" / "feature.yaml").read_text()


# -- 9. the guard's logs --------------------------------------------------------------------------


def test_the_guards_logs_are_never_written_through_a_link(project: Path, run: str) -> None:
    victim = project / "victim.txt"
    victim.write_text("precious\nno newline at the end")
    folder = project / ".state" / "sessions" / hk.SESSION
    (folder / "main.log").unlink()
    (folder / "main.log").symlink_to(victim)
    hk.hook(project, hk.prompt(project, "Next, please."))  # an event the log would keep
    errors = project / ".state" / "errors.log"
    errors.unlink()
    errors.symlink_to(victim)
    write_config(project, "profile: [not, a, profile]\n")
    hk.hook(project, hk.pre(project, "Bash", {"command": "ls"}, session_id="s2"))
    assert victim.read_text() == "precious\nno newline at the end"


# -- 10. reset ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "params"),
    [
        ("Bash", {"command": "tether reset runs/feature.json"}),
        ("Bash", {"command": "cd . && python -m tether reset runs/feature.json"}),
        ("Bash", {"command": "uvx --from tether-bt tether reset runs/feature.json"}),
        ("mcp__tether__reset_execution", {"trace_output": "runs/feature.json"}),
    ],
)
def test_a_bound_session_may_not_reset_away_its_evidence(
    project: Path, run: str, tool: str, params: dict[str, Any]
) -> None:
    hk.hook_json(project, hk.post(project, "Bash", {"command": "make"}, hk.bash_response()))
    stop(project)
    why = reason(hk.hook_json(project, hk.pre(project, tool, params)))
    assert "reset" in why and "their own terminal" in why
    assert len(entries(run, "tool")) == 1 and len(entries(run, "stop")) == 1


# -- 11. installers and a linked .claude/ ---------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ("install", "skill", "--target", "claude", "--dir", "."),
        ("guard", "install", "claude"),
        ("guard", "install", "codex"),
    ],
)
def test_installers_refuse_a_folder_linked_outside_the_project(
    tmp_path: Path, args: tuple[str, ...]
) -> None:
    project, outside = tmp_path / "project", tmp_path / "outside"
    project.mkdir()
    outside.mkdir()
    for folder in (".claude", ".codex"):
        (project / folder).symlink_to(outside)
    done = tether_cli(project, *args)
    assert done.returncode != 0
    error = json.loads(done.stderr)["error"]
    assert error["code"] == "forbidden" and "symbolic link" in error["message"]
    assert list(outside.iterdir()) == []
