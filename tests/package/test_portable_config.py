"""What `tether mcp install` and `tether guard install claude` write survives leaving this machine.

Project files (`.mcp.json`, `.cursor/mcp.json`, `.vscode/mcp.json`, `.claude/settings.json`)
are committed by teams, so they may name `tether` (on PATH) or `uvx --from tether-bt tether`
(after a release), never a path of this machine; when only a path will do, the entry goes to
the user's own files (`~/.claude.json` under the project, `.claude/settings.local.json`, the
user's client config) and the output says so. Each case runs the real command in a fresh process
with its own PATH, home and uv cache.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

SCRIPT = str(Path(sys.executable).with_name("tether"))
BIN = str(Path(sys.executable).parent)
SYSTEM_PATH = "/usr/bin:/bin"
PROJECT_FILES = (".mcp.json", ".cursor/mcp.json", ".vscode/mcp.json", ".claude/settings.json")
HOOK_TAIL = 'guard hook --config "$CLAUDE_PROJECT_DIR/.tether/guard.yaml"'


class Machine:
    """A project and a home folder, and the tether command run in the project."""

    def __init__(self, tmp: Path, path: str, **env: str) -> None:
        self.project = tmp / "project"
        self.home = tmp / "home"
        self.project.mkdir()
        self.home.mkdir()
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("UV_", "XDG_"))},
            "PATH": path,
            "HOME": str(self.home),
            **env,
        }

    def run(self, *args: str) -> dict[str, Any]:
        done = subprocess.run(
            [sys.executable, "-m", "tether.cli.main", *args],
            cwd=self.project,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    def install_everything(self) -> list[dict[str, Any]]:
        outs = [
            self.run("mcp", "install", "--target", t) for t in ("claude-code", "cursor", "vscode")
        ]
        return [*outs, self.run("guard", "install", "claude")]

    def json(self, relative: str, base: Path | None = None) -> Any:
        return json.loads(((base or self.project) / relative).read_text(encoding="utf-8"))

    def machine_paths_in_project_files(self) -> list[str]:
        found = []
        for name in PROJECT_FILES:
            path = self.project / name
            if path.exists():
                text = path.read_text(encoding="utf-8")
                found += [
                    f"{name}: {p}"
                    for p in (str(self.project), str(self.home), sys.prefix, BIN, SCRIPT)
                    if p in text
                ]
        return found


def _hook_commands(settings: dict[str, Any]) -> set[str]:
    return {
        h["command"] for groups in settings["hooks"].values() for g in groups for h in g["hooks"]
    }


def test_tether_on_path_is_written_as_tether_in_the_project_files(tmp_path: Path) -> None:
    machine = Machine(tmp_path, f"{BIN}:{SYSTEM_PATH}")
    outs = machine.install_everything()
    assert all(o["launch"] == {"how": "path", "command": "tether", "portable": True} for o in outs)
    assert all("note" not in o for o in outs)
    assert machine.json(".mcp.json")["mcpServers"]["tether"]["command"] == "tether"
    assert machine.json(".cursor/mcp.json")["mcpServers"]["tether"]["args"] == ["mcp"]
    assert machine.json(".vscode/mcp.json")["servers"]["tether"]["command"] == "tether"
    assert _hook_commands(machine.json(".claude/settings.json")) == {f"tether {HOOK_TAIL}"}
    assert machine.machine_paths_in_project_files() == []
    assert not (machine.project / ".claude" / "settings.local.json").exists()
    assert list(machine.home.iterdir()) == []


def test_a_path_on_this_machine_goes_only_to_the_users_own_files(tmp_path: Path) -> None:
    machine = Machine(tmp_path, SYSTEM_PATH)  # no tether on PATH, not under uvx
    outs = machine.install_everything()
    assert all(
        o["launch"] == {"how": "absolute", "command": SCRIPT, "portable": False} for o in outs
    )
    assert [o["scope"] for o in outs[:3]] == ["local", "user", "user"]
    assert all("a path on this machine" in o["note"] for o in outs)
    for name in PROJECT_FILES:
        assert not (machine.project / name).exists(), name
    project_entry = machine.json(".claude.json", machine.home)["projects"][str(machine.project)]
    assert project_entry["mcpServers"]["tether"] == {
        "type": "stdio",
        "command": SCRIPT,
        "args": ["mcp"],
    }
    assert "--scope local" in outs[0]["equivalent"]
    assert (
        machine.json(".cursor/mcp.json", machine.home)["mcpServers"]["tether"]["command"] == SCRIPT
    )
    vscode = machine.json(".config/Code/User/mcp.json", machine.home)
    assert vscode["servers"]["tether"]["command"] == SCRIPT
    local = machine.json(".claude/settings.local.json")
    assert outs[3]["settings"] == os.path.join(".claude", "settings.local.json")
    assert _hook_commands(local) == {f"{SCRIPT} {HOOK_TAIL}"}
    # The guard's configuration is still the project's, and names no path either.
    assert (machine.project / ".tether" / "guard.yaml").exists()


def test_an_explicit_scope_or_settings_file_is_kept(tmp_path: Path) -> None:
    machine = Machine(tmp_path, SYSTEM_PATH)
    out = machine.run("mcp", "install", "--target", "claude-code", "--scope", "user")
    assert (out["scope"], "note" in out) == ("user", False)
    assert machine.json(".claude.json", machine.home)["mcpServers"]["tether"]["command"] == SCRIPT
    out = machine.run("guard", "install", "claude", "--settings", "team.json")
    assert "note" not in out and _hook_commands(machine.json("team.json")) == {
        f"{SCRIPT} {HOOK_TAIL}"
    }


def _checkout() -> str:
    """The folder this Tether was installed from (an editable install of a checkout), as PEP
    610's direct_url.json of the installed distribution records it."""
    from importlib import metadata

    url = json.loads(metadata.distribution("tether-bt").read_text("direct_url.json") or "")["url"]
    assert url.startswith("file://")
    return url[len("file://") :]


@pytest.mark.parametrize("cache", ["UV_CACHE_DIR", "XDG_CACHE_HOME"])
def test_under_uvx_the_uvx_command_names_its_source_never_the_cache_path(
    tmp_path: Path, cache: str
) -> None:
    # uvx runs tools from environments inside uv's cache; this interpreter's environment is
    # made to sit inside the cache by naming its parent folder as the cache. It was installed
    # from a checkout, as `uvx --from PATH` would be (no release is on the package index), so
    # the command names that folder and goes only to the user's own files.
    parent = str(Path(sys.prefix).resolve().parent)
    if cache == "XDG_CACHE_HOME":
        (tmp_path / "cache").mkdir()
        (tmp_path / "cache" / "uv").symlink_to(parent)
        env = {cache: str(tmp_path / "cache")}
    else:
        env = {cache: parent}
    machine = Machine(tmp_path, f"{BIN}:{SYSTEM_PATH}", **env)
    outs = machine.install_everything()
    checkout = _checkout()
    assert (Path(checkout) / "src" / "tether" / "command" / "launch.py").is_file()
    uvx = f"uvx --from {checkout} tether"
    assert all(o["launch"] == {"how": "uvx", "command": uvx, "portable": False} for o in outs)
    assert all("names a path on this machine" in o["note"] for o in outs)
    assert all("pipx install ." in o["note"] for o in outs)
    for name in PROJECT_FILES:
        assert not (machine.project / name).exists(), name
    project_entry = machine.json(".claude.json", machine.home)["projects"][str(machine.project)]
    assert project_entry["mcpServers"]["tether"] == {
        "type": "stdio",
        "command": "uvx",
        "args": ["--from", checkout, "tether", "mcp"],
    }
    assert _hook_commands(machine.json(".claude/settings.local.json")) == {f"{uvx} {HOOK_TAIL}"}
    assert sys.prefix not in json.dumps(project_entry)


def test_claude_desktop_gets_the_project_as_root_and_a_full_command(tmp_path: Path) -> None:
    machine = Machine(tmp_path, f"{BIN}:{SYSTEM_PATH}")
    out = machine.run("mcp", "install", "--target", "claude-desktop")
    assert out["scope"] == "user"
    entry = machine.json(".config/Claude/claude_desktop_config.json", machine.home)
    # Claude Desktop starts servers in `/` and without the shell's PATH.
    assert entry["mcpServers"]["tether"] == {
        "command": SCRIPT,
        "args": ["mcp", "--root", str(machine.project)],
    }
    other = tmp_path / "elsewhere"
    other.mkdir()
    machine.run("mcp", "install", "--target", "claude-desktop", "--root", str(other))
    entry = machine.json(".config/Claude/claude_desktop_config.json", machine.home)
    assert entry["mcpServers"]["tether"]["args"] == ["mcp", "--root", str(other)]
