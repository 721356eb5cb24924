"""What a session is given at `SessionStart`: the rules and a short profile section (under 2,000
characters for every built-in profile), the whole section under `context: full`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from guard.hookkit import hook_json, session_start
from tether.errors import EXIT_INVALID
from tether.guard.rules.profiles import PROFILES
from tether.guard.rules.ruleset import Guard

LIMIT = 2000


def _project(tmp_path: Path, config: str) -> Path:
    (tmp_path / ".tether").mkdir()
    (tmp_path / ".tether" / "guard.yaml").write_text(config)
    return tmp_path


def _context(project: Path) -> str:
    out = hook_json(project, session_start(project))
    assert out is not None
    return str(out["hookSpecificOutput"]["additionalContext"])


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_every_builtin_profile_starts_a_session_with_a_short_context(
    tmp_path: Path, profile: str
) -> None:
    context = _context(_project(tmp_path, f"profile: {profile}\n"))
    assert len(context) < LIMIT
    guard = Guard.from_config({"profile": profile})
    for rule in guard.rules:
        if rule.description:
            assert f"- {rule.description} ({rule.id}, {rule.action})" in context
    assert f"## Profile: {profile}" in context


def test_the_dev_section_is_cut_to_its_heading_and_first_paragraph(tmp_path: Path) -> None:
    context = _context(_project(tmp_path, "profile: dev\n"))
    assert context.endswith(
        "## Senior developer discipline\n\nYou work the way a careful senior engineer works on a "
        "production codebase. These habits are not\nsuggestions; a guard watches your tool calls "
        "and reminds you when you drift from them."
    )
    assert "### Verify what you did" not in context


def test_context_full_gives_the_whole_section(tmp_path: Path) -> None:
    context = _context(_project(tmp_path, "profile: dev\ncontext: full\n"))
    assert "### Verify what you did" in context
    assert context == Guard.from_config({"profile": "dev"}).system_prompt()
    assert len(context) > 3000


def test_a_custom_profile_keeps_its_own_prompt_in_the_short_context(tmp_path: Path) -> None:
    project = _project(tmp_path, 'profile: "{{behavior.strict}}"\n')
    (project / ".tether" / "behavior").mkdir()
    (project / ".tether" / "behavior" / "strict.yaml").write_text(
        "extends: dev\nprompt: Run tests after EVERY change.\n"
    )
    context = _context(project)
    assert len(context) < LIMIT
    assert "## Senior developer discipline" in context
    assert context.endswith("drift from them.\n\nRun tests after EVERY change.")


def _guard(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tether.cli.main", "guard", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_context_is_checked_like_every_other_key(tmp_path: Path) -> None:
    config = tmp_path / "guard.yaml"
    config.write_text("profile: dev\ncontext: medium\n")
    done = _guard("check", str(config))
    assert done.returncode == EXIT_INVALID
    error = json.loads(done.stderr)["error"]
    assert (error["code"], error["line"], error["path"]) == ("invalid_value", 2, "context")
    assert done.stdout == ""


def test_prompt_shows_the_whole_section_and_what_a_session_gets(tmp_path: Path) -> None:
    config = tmp_path / "guard.yaml"
    config.write_text("profile: dev\n")
    done = _guard("prompt", str(config))
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["context"] == "short"
    assert "### Verify what you did" in out["prompt"]
    assert out["prompt"].startswith(out["session_start"].split("## Senior")[0])
    assert len(out["session_start"]) < LIMIT
