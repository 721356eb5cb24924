"""`tether init` and `tether install skill` as a user runs them.

`init` writes the shipped examples and a guard configuration and never overwrites: what exists
is skipped and named, and a symbolic link on the way is never written through. `install skill`
writes Claude Code's skill file or a marked section of AGENTS.md, the same on every run.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from tether.errors import EXIT_INVALID, EXIT_USAGE

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
SKILL = (REPO / "skills" / "tether" / "SKILL.md").read_text(encoding="utf-8")


def tether(*args: str, cwd: Path) -> tuple[int, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "tether.cli.main", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    text = done.stdout if done.returncode == 0 else done.stderr
    return done.returncode, json.loads(text) if text.strip() else None


def _tree(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }


def test_init_writes_the_examples_and_a_guard_config_and_says_what_to_run(tmp_path: Path) -> None:
    code, out = tether("init", "project", cwd=tmp_path)
    project = tmp_path / "project"
    assert code == 0
    assert _tree(project / "examples") == _tree(EXAMPLES)
    assert out["skipped"] == [] and "examples/hello-world.yaml" in out["created"]
    assert out["created"][-1] == ".tether/guard.yaml"
    config = yaml.safe_load((project / ".tether" / "guard.yaml").read_text())
    assert config["security"]["behavior"]["profile"] == "dev"
    assert config["security"]["behavior"]["workflow"] == {"bind": "auto", "stop": "block"}
    code, checked = tether("guard", "check", ".tether/guard.yaml", cwd=project)
    assert (code, checked["ok"], checked["profile"]) == (0, True, "dev")
    assert len(out["next"]) == 3 and out["run_next_in"] == str(project)
    # The first two commands it prints work as printed, in the folder it names.
    for command in out["next"][:2]:
        words = command.split()
        assert words[0].endswith("tether")
        code, result = tether(*words[1:], cwd=project)
        assert code == 0, result
    assert result["next"]["name"] == "Determine_Time"  # the protocol accepted, the walk begun
    assert out["next"][2].endswith("tether guard install claude")
    offered = [command.rsplit(" ", 1)[1] for command in out["other_agents"]]
    assert offered == ["codex", "gemini", "cursor", "copilot", "qwen", "droid", "opencode"]


def test_init_never_overwrites_and_names_every_file_it_left(tmp_path: Path) -> None:
    tether("init", cwd=tmp_path)
    hello = tmp_path / "examples" / "hello-world.yaml"
    hello.write_text("mine\n")
    (tmp_path / ".tether" / "guard.yaml").write_text("profile: coding\n")
    before = _tree(tmp_path)
    code, out = tether("init", cwd=tmp_path)
    assert code == 0
    assert out["created"] == []
    # the files that differ from what init writes are named; those as shipped are counted
    assert {s["path"] for s in out["skipped"]} == {
        "examples/hello-world.yaml",
        ".tether/guard.yaml",
    }
    assert all(s["reason"] == "exists; left as it is" for s in out["skipped"])
    assert out["unchanged"] == len(_tree(EXAMPLES)) - 1
    assert _tree(tmp_path) == before


def test_init_in_tethers_own_checkout_names_no_example_and_leaves_nothing_untracked(
    tmp_path: Path,
) -> None:
    """The checkout already holds every example as shipped: init counts them, names none, and
    writes the guard's configuration where the checkout's .gitignore keeps it out of git."""
    checkout = tmp_path / "tether"
    shutil.copytree(EXAMPLES, checkout / "examples")
    fifo = checkout / "examples" / "guard" / "cases.yaml"  # a FIFO is never read (nor waited on)
    fifo.unlink()
    os.mkfifo(fifo)
    code, out = tether("init", str(checkout), cwd=tmp_path)
    assert code == 0
    assert out["created"] == [".tether/guard.yaml"]
    left = {"path": "examples/guard/cases.yaml", "reason": "exists; left as it is"}
    assert out["skipped"] == [left]
    assert out["unchanged"] == len(_tree(EXAMPLES)) - 1
    ignored = (REPO / ".gitignore").read_text(encoding="utf-8").splitlines()
    assert "/.tether/" in ignored


def test_init_never_writes_through_a_symbolic_link(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    project = tmp_path / "project"
    project.mkdir()
    (project / "examples").symlink_to(outside)  # a folder that climbs out
    (project / ".tether").mkdir()
    (project / ".tether" / "guard.yaml").symlink_to(outside / "planted.yaml")  # dangling
    code, out = tether("init", str(project), cwd=tmp_path)
    assert code == 0
    assert out["created"] == []
    reasons = {s["path"]: s["reason"] for s in out["skipped"]}
    assert reasons["examples/hello-world.yaml"] == (
        "its folder examples is a symbolic link; left alone"
    )
    assert reasons[".tether/guard.yaml"] == "exists; left as it is"
    assert list(outside.iterdir()) == []


def test_init_into_a_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    code, out = tether("init", "f", cwd=tmp_path)
    assert code == EXIT_INVALID
    assert out["error"]["code"] == "invalid_value"
    assert (tmp_path / "f").read_text() == "x"


def test_install_skill_for_claude_writes_the_skill_once(tmp_path: Path) -> None:
    code, out = tether("install", "skill", "--target", "claude", cwd=tmp_path)
    path = tmp_path / ".claude" / "skills" / "tether" / "SKILL.md"
    assert (code, out["status"], out["file"]) == (0, "added", str(path))
    assert path.read_text(encoding="utf-8") == SKILL
    assert tether("install", "skill", "--target", "claude", cwd=tmp_path)[1]["status"] == (
        "unchanged"
    )
    # A link planted in the skill's place is replaced, not written through.
    outside = tmp_path / "outside.md"
    outside.write_text("keep")
    path.unlink()
    path.symlink_to(outside)
    assert tether("install", "skill", "--target", "claude", cwd=tmp_path)[1]["status"] == "updated"
    assert outside.read_text() == "keep"
    assert not path.is_symlink() and path.read_text(encoding="utf-8") == SKILL


def test_install_skill_for_agents_keeps_the_rest_of_agents_md(tmp_path: Path) -> None:
    agents = tmp_path / "AGENTS.md"
    agents.write_text("# Project\n\nRun make test.\n")
    code, out = tether("install", "skill", "--dir", str(tmp_path), "--target", "agents", cwd=REPO)
    assert (code, out["status"]) == (0, "added")
    text = agents.read_text(encoding="utf-8")
    assert text.startswith("# Project\n\nRun make test.\n\n<!-- tether:skill:start -->\n# Tether\n")
    assert text.endswith("<!-- tether:skill:end -->\n")
    assert "name: tether" not in text  # the frontmatter is the skill file's, not AGENTS.md's
    assert tether("install", "skill", "--target", "agents", cwd=tmp_path)[1]["status"] == (
        "unchanged"
    )
    # An edited section is put back; text after it stays.
    edited = text.replace("## Drive a tree", "## Drive it") + "\nMore notes.\n"
    agents.write_text(edited)
    assert tether("install", "skill", "--target", "agents", cwd=tmp_path)[1]["status"] == "updated"
    assert agents.read_text(encoding="utf-8") == text + "\nMore notes.\n"


def test_install_skill_refuses_broken_markers_and_bad_targets(tmp_path: Path) -> None:
    agents = tmp_path / "AGENTS.md"
    broken = "<!-- tether:skill:end -->\nmine\n<!-- tether:skill:start -->\n"
    agents.write_text(broken)
    code, out = tether("install", "skill", "--target", "agents", cwd=tmp_path)
    assert (code, out["error"]["code"]) == (EXIT_INVALID, "invalid_value")
    assert agents.read_text() == broken
    for args in (["skill", "--target", "cursor"], ["skill"], ["plugin"], []):
        code, out = tether("install", *args, cwd=tmp_path)
        assert (code, out["error"]["code"]) == (EXIT_USAGE, "usage"), args
    assert sorted(os.listdir(tmp_path)) == ["AGENTS.md"]
