"""`tether mcp install`: each client's file is written where the client reads it, merged without
touching the other servers in it, and a file that cannot be read is left alone."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tether.errors import EXIT_INVALID, EXIT_OK, EXIT_USAGE
from tether.mcp.cli import main


class Installer:
    """Runs `tether mcp install` in-process with a fake home and project folder."""

    def __init__(self, capsys: pytest.CaptureFixture[str], project: Path, home: Path) -> None:
        self.capsys = capsys
        self.project = project
        self.home = home

    def __call__(self, *args: str) -> tuple[int, Any]:
        code = main(["install", "--dir", str(self.project), "--command", "tether", *args])
        out, err = self.capsys.readouterr()
        return code, json.loads(out if code == EXIT_OK else err)


@pytest.fixture
def installer(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Installer:
    home = tmp_path / "home"
    project = tmp_path / "project"
    home.mkdir()
    project.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.setattr(sys, "platform", "linux")
    return Installer(capsys, project, home)


@pytest.mark.parametrize(
    ("target", "scope", "where", "key"),
    [
        ("claude-code", "project", "project/.mcp.json", "mcpServers"),
        ("claude-code", "user", "home/.claude.json", "mcpServers"),
        ("cursor", "project", "project/.cursor/mcp.json", "mcpServers"),
        ("cursor", "user", "home/.cursor/mcp.json", "mcpServers"),
        ("vscode", "project", "project/.vscode/mcp.json", "servers"),
        ("vscode", "user", "home/.config/Code/User/mcp.json", "servers"),
        ("gemini", "project", "project/.gemini/settings.json", "mcpServers"),
        ("gemini", "user", "home/.gemini/settings.json", "mcpServers"),
        ("claude-desktop", "user", "home/.config/Claude/claude_desktop_config.json", "mcpServers"),
    ],
)
def test_each_client_file_is_written_where_the_client_reads_it(
    installer: Installer, target: str, scope: str, where: str, key: str
) -> None:
    code, result = installer("--target", target, "--scope", scope)
    assert code == EXIT_OK
    path = installer.project.parent / where
    assert result["file"] == str(path)
    assert result["status"] == "added"
    entry = json.loads(path.read_text())[key]["tether"]
    assert entry["command"] == "tether"
    # Claude Desktop starts servers in `/`: its entry names the project as the root.
    root = ["--root", str(installer.project)] if target == "claude-desktop" else []
    assert entry["args"] == ["mcp", *root]
    if target in ("claude-code", "vscode"):
        assert entry["type"] == "stdio"


def test_other_servers_and_keys_are_kept(installer: Installer) -> None:
    path = installer.project / ".mcp.json"
    other = {"command": "npx", "args": ["-y", "other-server"], "env": {"KEY": "v"}}
    path.write_text(json.dumps({"mcpServers": {"other": other}, "extra": [1, 2]}))
    code, result = installer("--target", "claude-code", "--root", str(installer.project))
    assert code == EXIT_OK
    document = json.loads(path.read_text())
    assert document["extra"] == [1, 2]
    assert document["mcpServers"]["other"] == other
    # The shared project file names the root relative to the project, never this machine's path.
    assert document["mcpServers"]["tether"]["args"] == ["mcp", "--root", "."]
    # Installing again changes nothing; a different root updates only Tether's entry.
    assert (
        installer("--target", "claude-code", "--root", str(installer.project))[1]["status"]
        == "unchanged"
    )
    code, result = installer("--target", "claude-code")
    assert result["status"] == "updated"
    document = json.loads(path.read_text())
    assert document["mcpServers"]["other"] == other
    assert document["mcpServers"]["tether"]["args"] == ["mcp"]


def test_the_claude_mcp_add_equivalent_is_reported(installer: Installer) -> None:
    _, result = installer("--target", "claude-code", "--scope", "user", "--name", "flow")
    assert shlex.split(result["equivalent"]) == [
        "claude",
        "mcp",
        "add",
        "--scope",
        "user",
        "flow",
        "--",
        "tether",
        "mcp",
    ]
    assert "flow" in json.loads((installer.home / ".claude.json").read_text())["mcpServers"]


@pytest.mark.parametrize("content", ["{not json", "[1, 2]", '{"mcpServers": [1]}'])
def test_a_file_that_cannot_be_merged_is_left_untouched(installer: Installer, content: str) -> None:
    path = installer.project / ".cursor" / "mcp.json"
    path.parent.mkdir()
    path.write_text(content)
    code, error = installer("--target", "cursor")
    assert code == EXIT_INVALID
    assert error["error"]["code"] in ("invalid_json", "invalid_value")
    assert str(path) in error["error"]["message"]
    assert path.read_text() == content


@pytest.mark.parametrize(
    ("args", "words"),
    [
        ([], "needs --target"),
        (["--target", "emacs"], "claude-code, claude-desktop, cursor, vscode"),
        (["--target", "cursor", "--scope", "global"], "project, local or user"),
        (["--target", "cursor", "--scope", "local"], "--scope local is Claude Code's"),
        (["--target", "claude-desktop", "--scope", "project"], "use --scope user"),
    ],
)
def test_bad_install_options(installer: Installer, args: list[str], words: str) -> None:
    code, error = installer(*args)
    assert code == EXIT_USAGE
    assert words in error["error"]["message"]
    assert not any(installer.project.iterdir())


def test_the_command_line_installs_into_the_working_directory(tmp_path: Path) -> None:
    # This installation's tether on PATH: the shared project file gets the bare command.
    path = str(Path(sys.executable).parent)
    done = subprocess.run(
        [sys.executable, "-m", "tether.cli.main", "mcp", "install", "--target", "vscode"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PATH": path, "HOME": str(tmp_path / "home")},
    )
    assert done.returncode == 0, done.stderr
    entry = json.loads((tmp_path / ".vscode" / "mcp.json").read_text())["servers"]["tether"]
    assert entry == {"type": "stdio", "command": "tether", "args": ["mcp"]}
    assert json.loads(done.stdout)["launch"] == {
        "how": "path",
        "command": "tether",
        "portable": True,
    }
