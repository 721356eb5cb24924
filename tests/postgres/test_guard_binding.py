"""A Claude Code session bound to an execution in PostgreSQL: the same hooks, the same trace."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from guard import hookkit as hk
from support.postgres import PostgresServer
from tether.verbs import Runtime

TREE = """\
name: pg-feature
tree:
  type: sequence
  name: Feature
  children:
    - type: action
      name: Review
      tools: {allow: [Read, "Bash(git diff*)"]}
      steps:
        - instruct: Review the diff.
    - type: action
      name: Test
      steps:
        - instruct: Run the tests.
        - check: TOOLS.exists(t, t.tool == "Bash" && t.input.command.contains("pytest") && t.ok)
"""


def _project(tmp_path: Path, workflow: str) -> Path:
    (tmp_path / "feature.yaml").write_text(TREE)
    (tmp_path / ".tether").mkdir()
    (tmp_path / ".tether" / "guard.yaml").write_text(workflow)
    return tmp_path


def test_a_session_bound_to_a_database_execution(
    tmp_path: Path, server: PostgresServer, new_name: Callable[[], str]
) -> None:
    uri = server.uri(new_name())
    project = _project(tmp_path, f"workflow:\n  trace: '{uri}'\n")
    rt = Runtime()
    rt.start(str(project / "feature.yaml"), uri)
    rt.submit(uri, "success")

    context = hk.hook_json(project, hk.session_start(project))
    assert context is not None and "'Review'" in context["hookSpecificOutput"]["additionalContext"]
    denied = hk.hook_json(project, hk.pre(project, "Edit", {"file_path": "a.py"}))
    assert denied is not None
    assert denied["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert hk.hook_json(project, hk.pre(project, "Bash", {"command": "git diff"})) is None
    refused = hk.hook_json(project, hk.stop(project))
    assert refused is not None and refused["decision"] == "block" and uri in refused["reason"]

    rt.submit(uri, "success")
    tests = hk.post(project, "Bash", {"command": "pytest -q"}, hk.bash_response("3 passed"))
    hk.hook_json(project, tests)
    assert rt.submit(uri, "success")["status"] == "action_complete"
    assert rt.next(uri) == {"status": "done"}
    assert hk.hook_json(project, hk.stop(project)) is None

    kinds = [e["kind"] for e in rt.trace(uri)]
    assert kinds.count("stop") == 1 and kinds.count("tool") == 1
    report = rt.verify(uri)
    assert report["ok"], report["differences"]


def test_a_shell_start_in_the_database_binds_the_session(
    tmp_path: Path, server: PostgresServer, new_name: Callable[[], str]
) -> None:
    project = _project(tmp_path, "workflow:\n  bind: auto\n")
    uri = server.uri(new_name())
    done = subprocess.run(
        [sys.executable, "-m", "tether.cli.main", "start", "feature.yaml", uri],
        capture_output=True,
        text=True,
        cwd=project,
        check=True,
    )
    command = f"tether start feature.yaml '{uri}'"
    post = hk.post(project, "Bash", {"command": command}, hk.bash_response(done.stdout))
    hk.hook_json(project, post)
    with hk.serving(project) as url:
        out = hk.send(url, hk.stop(project, active=True))
    assert out is not None and out["decision"] == "block"
    assert json.loads(done.stdout)["uri"] in out["reason"]
    assert [e["outcome"] for e in Runtime().trace(uri) if e["kind"] == "stop"] == ["refused"]
