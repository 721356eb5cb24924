"""File scopes: a node's `writes` globs, enforced by the guard while a step beneath it is open.

Real hook payloads through `tether guard hook` (a fresh process per event) and `tether guard
serve` (the attack table, many calls to one server), in Claude Code's, Codex's and Gemini CLI's
shapes; each call is one an agent would try to write outside its scope."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from guard import harnesskit as hx
from guard import hookkit as hk
from tether.verbs import Runtime

TREE = """\
name: team
version: 1
tree:
  type: sequence
  name: Team
  children:
    - type: action
      name: Plan
      steps:
        - instruct: Plan the change.
    - type: parallel
      name: Build
      children:
        - type: action
          name: Backend
          writes: ["src/**"]
          steps:
            - instruct: Change the code under src.
        - type: action
          name: Docs
          writes: ["docs/*.md", "CHANGELOG.md"]
          steps:
            - instruct: Document the change.
    - type: action
      name: Ship
      writes: ["src/**"]
      tools: {deny: [NotebookEdit]}
      steps:
        - instruct: Fix what the review found, under src only.
"""
BOUND = "workflow:\n  trace: runs/team.json\n"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "team.yaml").write_text(TREE)
    (tmp_path / "runs").mkdir()
    (tmp_path / ".tether").mkdir()
    (tmp_path / ".tether" / "guard.yaml").write_text(BOUND)
    for folder in ("src", "docs", "lib"):
        (tmp_path / folder).mkdir()
    (tmp_path / "src" / "app.py").write_text("print('hi')\n")
    (tmp_path / "lib" / "util.py").write_text("x = 1\n")
    return tmp_path


@pytest.fixture
def run(project: Path) -> str:
    """The execution started and past its gate: `Plan` is open (no scope)."""
    rt = Runtime()
    uri = rt.start(str(project / "team.yaml"), str(project / "runs" / "team.json"))["uri"]
    rt.submit(uri, "success")
    return str(uri)


def at_ship(uri: str) -> str:
    """Answer Plan and both branches: `Ship` (writes `src/**`) is open; its step token."""
    rt = Runtime()
    rt.submit(uri, "success")
    for request in rt.next(uri, all=True):
        rt.submit(uri, "success", step=request["step"])
    request = rt.next(uri)
    assert request["name"] == "Ship"
    return str(request["step"])


def reason(out: dict[str, Any] | None) -> str | None:
    """The denial's reason, or None when the call may run."""
    if out is None or out["hookSpecificOutput"].get("permissionDecision") != "deny":
        return None
    return str(out["hookSpecificOutput"]["permissionDecisionReason"])


def write(project: Path, path: str, **kw: Any) -> dict[str, Any]:
    return hk.pre(project, "Write", {"file_path": path, "content": "x = 2\n"}, **kw)


def bash(project: Path, command: str, **kw: Any) -> dict[str, Any]:
    return hk.pre(project, "Bash", {"command": command}, **kw)


# -- the scope of the open step -------------------------------------------------------------------


def test_a_write_outside_the_scope_is_denied_and_named(project: Path, run: str) -> None:
    step = at_ship(run)
    why = reason(hk.hook_json(project, write(project, str(project / "lib" / "util.py"))))
    assert why is not None
    assert "Write may not run while the instruct 'Ship' is open" in why
    assert "it writes lib/util.py, outside the scope" in why
    assert "'Ship' writes only src/**" in why and step in why
    inside = write(project, str(project / "src" / "app.py"))
    assert hk.hook_json(project, inside) is None
    assert (project / "lib" / "util.py").read_text() == "x = 1\n"  # the hook wrote nothing
    stats = subprocess.run(
        [sys.executable, "-m", "tether.cli.main", "stats", str(project / "runs"), "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    actions = json.loads(stats.stdout)["trees"][0]["actions"]
    assert {a["name"]: a["tools_denied"] for a in actions}.get("Ship") == 1  # counted, once


def test_a_step_without_a_scope_writes_anywhere(project: Path, run: str) -> None:
    assert hk.hook_json(project, write(project, str(project / "lib" / "util.py"))) is None
    assert hk.hook_json(project, bash(project, "python -c 'print(1)' > out.txt")) is None


def test_each_open_branch_of_a_parallel_writes_its_own_files(project: Path, run: str) -> None:
    """Both branches are open: a write either branch's scope holds runs, any other is denied
    (a session bound to one branch alone is held to that one's)."""
    Runtime().submit(run, "success")
    assert {r["name"] for r in Runtime().next(run, all=True)} == {"Backend", "Docs"}
    for path in ("src/new.py", "docs/guide.md", "CHANGELOG.md"):
        assert hk.hook_json(project, write(project, str(project / path))) is None, path
    for path in ("docs/sub/deep.md", "lib/util.py", "README.md"):
        why = reason(hk.hook_json(project, write(project, str(project / path))))
        assert why is not None and f"it writes {path}, outside the scope" in why, path


def test_the_tools_policy_and_the_scope_both_hold(project: Path, run: str) -> None:
    at_ship(run)
    notebook = {"notebook_path": str(project / "src" / "n.ipynb"), "new_source": "x"}
    why = reason(hk.hook_json(project, hk.pre(project, "NotebookEdit", notebook)))
    assert why is not None and "matches 'NotebookEdit' in deny" in why
    assert reason(hk.hook_json(project, bash(project, f"tether next {run}"))) is None


def test_a_relative_shell_write_lands_in_the_harness_working_folder(
    project: Path, run: str
) -> None:
    """The hook's `cwd` is where the harness's shell is: `echo > x.py` from `src` writes
    `src/x.py`; from the project root it writes `x.py`."""
    at_ship(run)
    in_src = hk.pre(project / "src", "Bash", {"command": "echo 1 > x.py"})
    assert hk.hook_json(project, in_src) is None
    why = reason(hk.hook_json(project, bash(project, "echo 1 > x.py")))
    assert why is not None and "it writes x.py, outside the scope" in why


# -- the attack table ----------------------------------------------------------------------------

ALLOWED = [
    "echo 'x = 2' > src/app.py",
    "printf 'x' >> src/app.py 2>&1",
    "cat lib/util.py | grep x > src/found.txt",
    "cd src && echo 1 > new.py",
    "mkdir -p src/pkg && touch src/pkg/__init__.py",
    "mkdir -p src",  # `src/**` holds the folder itself
    "tee src/a.py src/b.py < lib/util.py",
    "cp lib/util.py src/",
    "cp -r lib src/lib",
    "mv src/app.py src/main.py",
    "sed -i 's/hi/hello/g' src/app.py",
    "sed -e 's/a/b/' lib/util.py > src/copy.py",
    "rm -rf src/*.pyc",
    "git diff > src/diff.txt",
    "grep -rn 'x' lib 2>/dev/null",
    "ls -la; git status; git log --oneline -3",
    "cat > src/gen.py <<'EOF'\nrm lib/util.py\necho $X > lib/util.py\nEOF",  # text, not commands
    "find . -name '*.py'",
    "echo done >&2",
    "echo hi # > lib/util.py is a comment",
    "cat <<-EOF > src/x.py\n\tx = 1\n\tEOF",
    "timeout 60 nice -n 5 grep -r x src > src/hits.txt",
]

DENIED = [
    # outside the scope, plainly
    ("echo x > lib/util.py", "it writes lib/util.py, outside"),
    ("echo x > README.md", "it writes README.md, outside"),
    ("tee -a lib/util.py < src/app.py", "it writes lib/util.py, outside"),
    ("cp src/app.py lib/", "it writes lib/app.py, outside"),
    ("mv lib/util.py src/", "it writes lib/util.py, outside"),  # the source goes away
    ("sed -i 's/x/y/' lib/util.py", "it writes lib/util.py, outside"),
    ("sed -i.bak 's/x/y/' src/app.py", None),  # the backup is inside: allowed below
    ("touch src/ok.py lib/no.py", "it writes lib/no.py, outside"),
    ("rm -rf lib", "it writes lib, outside"),
    ("truncate -s 0 lib/util.py", "it writes lib/util.py, outside"),
    ("chmod +x lib/util.py", "it writes lib/util.py, outside"),
    # leaving the project
    ("echo x > ../escaped.txt", "outside the scope"),
    ("echo x > /tmp/escaped.txt", "it writes /tmp/escaped.txt, outside"),
    ("echo x > ~/.bashrc", "outside the scope"),
    ("echo x > src/../lib/util.py", "it writes lib/util.py, outside"),
    ("rm src/*/../../lib/util.py", "it writes lib/util.py, outside"),
    # `cd` followed
    ("cd lib && echo x > util.py", "it writes lib/util.py, outside"),
    ("cd src; echo x > util.py", "it writes util.py, outside"),  # the cd may fail
    ("cd src/.. && echo x > lib/util.py", "it writes lib/util.py, outside"),
    ("cd && echo x > .profile", "outside the scope"),
    # cannot tell: refused
    ('python -c \'open("lib/util.py", "w").write("")\'', "python is a program"),
    ("python3 src/app.py", "python3 is a program"),
    ("./build.sh", "./build.sh is a program the guard cannot read"),
    ("bash -c 'echo x > lib/util.py'", "bash is a program"),
    ("sh -c 'echo x > src/a.py'", "sh is a program"),
    ("eval 'echo x > lib/util.py'", "eval is a program"),
    ("echo x > $HOME/f", "an expansion or substitution"),
    ("echo x > src/$(echo ../lib/util.py)", "an expansion or substitution"),
    ("echo x > `echo lib/util.py`", "an expansion or substitution"),
    ("cat src/app.py > >(tee lib/util.py)", "a process substitution"),
    ("touch src/{a,../lib/b}.py", "a brace expansion"),
    ("F=lib/util.py sed -i 's/x/y/' src/app.py", "sets the environment"),
    ("sed -i 's/x/y/w lib/util.py' src/app.py", "not plain substitutions"),
    ("sed -i '1e touch lib/x' src/app.py", "not plain substitutions"),
    ("sed -f script.sed -i src/app.py", "a sed script read from a file"),
    ("find src -name '*.py' -delete", "find with an action"),
    ("find . -exec touch lib/x {} +", "find with an action"),
    ("ls src | xargs rm", "xargs is a program"),
    ("dd if=src/app.py of=lib/util.py", "dd is a program"),
    ("awk '{print > \"lib/util.py\"}' src/app.py", "awk is a program"),
    ("perl -pi -e 's/x/y/' lib/util.py", "perl is a program"),
    ("git checkout -- lib/util.py", "git checkout may write files"),
    ("git diff --output=lib/diff.txt", "an option that writes a file"),
    ("sort -o lib/util.py src/app.py", "an option that writes a file"),
    ("sort -ro lib/util.py src/app.py", "an option that writes a file"),
    ("git diff --ext-diff", "an option that writes a file or runs a program"),
    ("rg --pre ./evil x src", "an option that writes a file or runs a program"),
    ("less -o lib/util.py src/app.py", "less is a program"),
    ("tree -R -H . src", "tree is a program"),
    ("ln -s /etc src/etc", "ln is a program"),
    ("cp -s /etc/passwd src/p", "the guard reads only plain copies"),
    ("cp -t src lib/util.py", "the guard reads only plain copies"),
    ("cat > src/x.py <<EOF\n$(touch lib/x)\nEOF", "a here-document the shell expands"),
    ("echo 'unclosed > src/x", "its quotes do not close"),
    # here-documents and comments that are not what they look like
    ("cat <<< EOF\necho x > lib/util.py", "it writes lib/util.py, outside"),
    ("echo '<<EOF'\necho x > lib/util.py", "it writes lib/util.py, outside"),
    ("echo hi # <<EOF\necho x > lib/util.py", "it writes lib/util.py, outside"),
    ('cat > src/x <<E"O"F\nbody\nEOF', "a here-document whose delimiter"),
    ("time -o lib/util.py cat src/app.py", "time -o"),
    ("timeout -o 5 ls", "timeout -o"),
    # a link made by the line itself, then written through
    ("cp -P lib/link src/l && echo x > src/l/util.py", "lies under a path an earlier command"),
    ("mv lib src/lib2 && cd src/lib2 && echo x > y", "which an earlier command of the line"),
]


@pytest.fixture
def served(project: Path, run: str) -> Iterator[str]:
    at_ship(run)
    with hk.serving(project) as url:
        yield url


def test_what_an_agent_tries_in_the_shell(project: Path, served: str) -> None:
    """Every spelling: the allowed ones run; each denied one is refused with why (a write
    outside the scope, named as the project names it, or what the guard cannot read)."""
    for command in ALLOWED:
        assert reason(hk.send(served, bash(project, command))) is None, command
    for command, why in DENIED:
        out = reason(hk.send(served, bash(project, command)))
        if why is None:
            assert out is None, command
            continue
        assert out is not None, command
        assert why in out, (command, out)


def test_a_link_inside_the_scope_is_judged_where_it_leads(project: Path, served: str) -> None:
    (project / "src" / "out").symlink_to(project / "lib")
    (project / "src" / "etc").symlink_to("/etc")
    (project / "src" / "dangling").symlink_to(project / "lib" / "new.py")
    for path in ("src/out/util.py", "src/dangling"):
        why = reason(hk.send(served, write(project, str(project / path))))
        assert why is not None and "outside the scope" in why, path
        why = reason(hk.send(served, bash(project, f"echo x > {path}")))
        assert why is not None and "outside the scope" in why, path
    why = reason(hk.send(served, bash(project, "echo x >> src/etc/hosts")))
    assert why is not None and "it writes /etc/hosts, outside the scope" in why
    why = reason(hk.send(served, bash(project, "cd src/out && echo x > util.py")))
    assert why is not None and "outside the scope" in why
    why = reason(hk.send(served, bash(project, "rm src/o*/util.py")))  # a glob through it
    assert why is not None and "it writes lib/util.py, outside the scope" in why


def test_a_hard_link_inside_the_scope_is_outside(project: Path, served: str) -> None:
    os.link(project / "lib" / "util.py", project / "src" / "twin.py")
    why = reason(hk.send(served, write(project, str(project / "src" / "twin.py"))))
    assert why is not None and "a file with other hard links" in why


def test_other_tools_path_arguments_are_judged(project: Path, served: str) -> None:
    outside = str(project / "lib" / "util.py")
    inside = str(project / "src" / "moved.py")
    denied: list[tuple[str, dict[str, Any]]] = [
        ("mcp__filesystem__write_file", {"path": outside, "content": "x"}),
        ("mcp__filesystem__edit_file", {"path": outside, "edits": []}),
        ("mcp__filesystem__move_file", {"source": outside, "destination": inside}),
        ("mcp__filesystem__move_file", {"source": inside, "destination": outside}),
        ("mcp__files__create_directory", {"path": str(project / "lib" / "new")}),
        ("Edit", {"file_path": outside, "old_string": "x", "new_string": "y"}),
        ("MultiEdit", {"file_path": outside, "edits": []}),
    ]
    for tool, params in denied:
        why = reason(hk.send(served, hk.pre(project, tool, params)))
        assert why is not None and "outside the scope" in why, (tool, params)
    for tool, params in [
        ("mcp__filesystem__read_text_file", {"path": outside}),
        ("Read", {"file_path": outside}),
        ("mcp__filesystem__write_file", {"path": inside, "content": "x"}),
        ("WebFetch", {"url": "https://example.com", "prompt": "read it"}),
    ]:
        assert reason(hk.send(served, hk.pre(project, tool, params))) is None, tool
    nameless = reason(hk.send(served, hk.pre(project, "Write", {"content": "x"})))
    assert nameless is not None and "names no file" in nameless


# -- other harnesses -----------------------------------------------------------------------------


def test_a_codex_patch_outside_the_scope_is_denied(project: Path, run: str) -> None:
    at_ship(run)
    patch = hx.codex_patch(("Update", "src/app.py", "@@\n-a\n+b"), ("Add", "lib/new.py", "+x"))
    payload = hx.codex(
        "PreToolUse", project, tool_name="apply_patch", tool_input={"command": patch}
    )
    out = hx.answer(project, "codex", payload)
    why = out["hookSpecificOutput"]["permissionDecisionReason"]
    assert "it writes lib/new.py, outside the scope" in why
    inside = hx.codex_patch(("Update", "src/app.py", "@@\n-a\n+b"))
    payload = hx.codex(
        "PreToolUse", project, tool_name="apply_patch", tool_input={"command": inside}
    )
    assert hx.answer(project, "codex", payload) == {}


def test_a_gemini_write_outside_the_scope_is_denied(project: Path, run: str) -> None:
    at_ship(run)
    params = {"file_path": str(project / "lib" / "util.py"), "content": "x"}
    payload = hx.gemini("BeforeTool", project, tool_name="write_file", tool_input=params)
    out = hx.answer(project, "gemini", payload)
    assert out.get("decision") == "deny", out
    assert "it writes lib/util.py, outside the scope" in out["reason"]
    shell = {"command": "echo x > lib/util.py"}
    payload = hx.gemini("BeforeTool", project, tool_name="run_shell_command", tool_input=shell)
    assert hx.answer(project, "gemini", payload).get("decision") == "deny"
    for folder, decision in (("src", None), ("lib", "deny")):  # the folder it names (dir_path)
        shell = {"command": "echo x > new.py", "dir_path": folder}
        payload = hx.gemini("BeforeTool", project, tool_name="run_shell_command", tool_input=shell)
        assert hx.answer(project, "gemini", payload).get("decision") == decision, folder


def test_the_guards_files_are_judged_from_the_harness_working_folder(
    project: Path, run: str
) -> None:
    """After `cd .tether` (Claude Code keeps its shell's folder), `echo > guard.yaml` writes the
    guard's configuration: denied like `echo > .tether/guard.yaml` from the project."""
    folder = project / ".tether"
    out = hk.hook_json(project, hk.pre(folder, "Bash", {"command": "echo x > guard.yaml"}))
    why = reason(out)
    assert why is not None and "the guard's configuration" in why


def test_a_cursor_shell_line_runs_in_its_own_folder(project: Path, run: str) -> None:
    """Cursor gives a shell line its folder (`cwd`): `echo > x.py` there writes `src/x.py`."""
    at_ship(run)
    command = "echo 1 > x.py"
    inside = hx.cursor("beforeShellExecution", project, command=command, cwd=str(project / "src"))
    assert hx.answer(project, "cursor", inside).get("permission") != "deny"
    outside = hx.cursor("beforeShellExecution", project, command=command, cwd=str(project))
    assert hx.answer(project, "cursor", outside)["permission"] == "deny"


def test_the_context_names_the_files_the_step_may_write(project: Path, run: str) -> None:
    at_ship(run)
    out = hk.hook_json(project, hk.prompt(project, "Go on."))
    assert out is not None
    context = out["hookSpecificOutput"]["additionalContext"]
    assert "Current request: instruct 'Ship'" in context
    assert "Write only src/** while it is open (the writes of 'Ship')." in context


@pytest.mark.parametrize(
    ("globs", "path", "inside"),
    [
        (["src/**"], "src", True),
        (["src/**"], "src/a/b.py", True),
        (["src/**"], "srcx/a.py", False),
        (["src/*.py"], "src/a.py", True),
        (["src/*.py"], "src/pkg/a.py", False),
        (["src/**/test_*.py"], "src/test_a.py", True),
        (["src/**/test_*.py"], "src/a/b/test_a.py", True),
        (["src/**/test_*.py"], "src/a/b/a.py", False),
        (["**/*.md"], "README.md", True),
        (["**/*.md"], "docs/a/b.md", True),
        (["CHANGELOG.md"], "docs/CHANGELOG.md", False),  # relative to the project, not a name
        (["**"], "any/thing", True),
        (["**"], "../outside", False),
    ],
)
def test_a_scopes_globs(tmp_path: Path, globs: list[str], path: str, inside: bool) -> None:
    """The globs alone (no hook): what each holds, relative to the project."""
    from tether.guard.binding.scopes import refusal

    why = refusal({"writes": globs, "node": "N"}, "Write", {"file_path": path}, str(tmp_path), None)
    assert (why is None) == inside, why


def test_a_shell_calls_own_folder_holds_the_guards_files_too(project: Path, run: str) -> None:
    """Gemini CLI names the folder a shell line runs in (`dir_path`): `echo > guard.yaml` in
    `.tether` writes the guard's configuration, denied whatever the step."""
    shell = {"command": "echo x > guard.yaml", "dir_path": ".tether"}
    payload = hx.gemini("BeforeTool", project, tool_name="run_shell_command", tool_input=shell)
    out = hx.answer(project, "gemini", payload)
    assert out.get("decision") == "deny" and "the guard's configuration" in out["reason"], out
