"""Registering Tether's MCP server with a client: writing or merging its configuration file.

Owns where each client keeps its MCP servers (Claude Code, Claude Desktop, Cursor, VS Code; per
project or per user), the entry written for Tether, and the merge: the file's other servers and
other keys are kept as they are, an unreadable file is refused rather than overwritten, and the
file is replaced atomically. It does not start servers or parse the command line
(`tether.mcp.cli`).
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tether.errors import TetherError
from tether.files import write_atomic

TARGETS = ("claude-code", "claude-desktop", "cursor", "vscode")
SCOPES = ("project", "user")


@dataclass(frozen=True)
class Install:
    """What to register, and where the project and the user's home are."""

    target: str
    scope: str = "project"
    name: str = "tether"
    command: str = "tether"
    args: tuple[str, ...] = ("mcp",)
    project: Path = Path(".")
    home: Path = Path("~")


def config_path(plan: Install) -> Path:
    """The client's configuration file for this target and scope."""
    if plan.target not in TARGETS:
        raise TetherError(
            "usage", f"--target must be one of {', '.join(TARGETS)}, got {plan.target!r}"
        )
    if plan.scope not in SCOPES:
        raise TetherError("usage", f"--scope must be project or user, got {plan.scope!r}")
    home = plan.home.expanduser()
    if plan.target == "claude-desktop":
        if plan.scope == "project":
            raise TetherError(
                "usage", "Claude Desktop has no project configuration; use --scope user"
            )
        return _app_config_dir(home) / "Claude" / "claude_desktop_config.json"
    if plan.target == "claude-code":
        return plan.project / ".mcp.json" if plan.scope == "project" else home / ".claude.json"
    if plan.target == "cursor":
        base = plan.project if plan.scope == "project" else home
        return base / ".cursor" / "mcp.json"
    if plan.scope == "project":
        return plan.project / ".vscode" / "mcp.json"
    return _app_config_dir(home) / "Code" / "User" / "mcp.json"


def _app_config_dir(home: Path) -> Path:
    if sys.platform == "darwin":
        return home / "Library" / "Application Support"
    if os.name == "nt":
        return Path(os.environ.get("APPDATA", home / "AppData" / "Roaming"))
    return Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")


def entry(plan: Install) -> dict[str, Any]:
    """The server entry written for Tether (VS Code also wants the transport type)."""
    out: dict[str, Any] = {"command": plan.command, "args": list(plan.args)}
    if plan.target in ("claude-code", "vscode"):
        out = {"type": "stdio", **out}
    return out


def claude_add_command(plan: Install) -> str:
    """The `claude mcp add` line that registers the same server with Claude Code."""
    words = ["claude", "mcp", "add", "--scope", plan.scope, plan.name, "--", plan.command]
    return shlex.join([*words, *plan.args])


def install(plan: Install) -> dict[str, Any]:
    """Add or update Tether's entry in the client's file; returns what was done."""
    path = config_path(plan)
    key = "servers" if plan.target == "vscode" else "mcpServers"
    document = _read(path)
    servers = document.setdefault(key, {})
    if not isinstance(servers, dict):
        raise TetherError(
            "invalid_value",
            f"{path}: {key!r} is not an object; fix or remove it, then install again",
            path=str(path),
        )
    new = entry(plan)
    previous = servers.get(plan.name)
    action = "unchanged" if previous == new else "updated" if previous is not None else "added"
    if action != "unchanged":
        servers[plan.name] = new
        _write(path, document)
    result: dict[str, Any] = {
        "status": action,
        "target": plan.target,
        "scope": plan.scope,
        "file": str(path),
        "name": plan.name,
        "entry": new,
    }
    if plan.target == "claude-code":
        result["equivalent"] = claude_add_command(plan)
    return result


def _read(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise TetherError(
            "invalid_value", f"cannot read {path}: {exc.strerror}", path=str(path)
        ) from None
    if not text.strip():
        return {}
    try:
        document = json.loads(text)
    except ValueError as exc:
        raise TetherError(
            "invalid_json",
            f"{path} is not valid JSON ({exc}); it was left untouched",
            path=str(path),
        ) from None
    if not isinstance(document, dict):
        raise TetherError(
            "invalid_value",
            f"{path} does not hold a JSON object; it was left untouched",
            path=str(path),
        )
    return document


def _write(path: Path, document: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(str(path), json.dumps(document, ensure_ascii=False, indent=2) + "\n")
