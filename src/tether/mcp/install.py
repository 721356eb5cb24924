"""Registering Tether's MCP server with a client: writing or merging its configuration file.

Owns where each client keeps its MCP servers (Claude Code, Claude Desktop, Cursor, VS Code,
Gemini CLI; per
project, per user, and Claude Code's local scope: one project's entry in the user's own file),
the entry written for Tether, and the merge: the file's other servers and other keys are kept as
they are, an unreadable file is refused rather than overwritten, and the file is replaced
atomically. A project file is shared (teams commit it), so an entry whose command names this
machine (an absolute path) is written to the local or user scope instead, and the result says
so. It does not choose the command (`tether.command.launch`), start servers or parse the command
line (`tether.mcp.cli`). Reading and writing the file is `tether.files`'s (`read_json`,
`write_file`).
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from tether.command.launch import SHAREABLE
from tether.errors import TetherError
from tether.files import read_json, write_file

TARGETS = ("claude-code", "claude-desktop", "cursor", "vscode", "gemini")
SCOPES = ("project", "local", "user")
# Where an entry that must not be shared goes instead of the project's file.
PRIVATE_SCOPE = {"claude-code": "local", "cursor": "user", "vscode": "user", "gemini": "user"}


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
    portable: bool = True  # False when the command names this machine (an absolute path)
    root: Path | None = None  # passed to the server as --root


def config_path(plan: Install) -> Path:
    """The client's configuration file for this target and scope."""
    if plan.target not in TARGETS:
        raise TetherError(
            "usage", f"--target must be one of {', '.join(TARGETS)}, got {plan.target!r}"
        )
    if plan.scope not in SCOPES:
        raise TetherError("usage", f"--scope must be project, local or user, got {plan.scope!r}")
    if plan.scope == "local" and plan.target != "claude-code":
        raise TetherError(
            "usage", "--scope local is Claude Code's (one project's entry in ~/.claude.json)"
        )
    home = plan.home.expanduser()
    if plan.target == "claude-desktop":
        if plan.scope == "project":
            raise TetherError(
                "usage", "Claude Desktop has no project configuration; use --scope user"
            )
        return _app_config_dir(home) / "Claude" / "claude_desktop_config.json"
    if plan.target == "claude-code":
        return plan.project / ".mcp.json" if plan.scope == "project" else home / ".claude.json"
    if plan.target in ("cursor", "gemini"):
        base = plan.project if plan.scope == "project" else home
        return base / (".cursor/mcp.json" if plan.target == "cursor" else ".gemini/settings.json")
    if plan.scope == "project":
        return plan.project / ".vscode" / "mcp.json"
    return _app_config_dir(home) / "Code" / "User" / "mcp.json"


def _app_config_dir(home: Path) -> Path:
    if sys.platform == "darwin":
        return home / "Library" / "Application Support"
    if os.name == "nt":
        return Path(os.environ.get("APPDATA", home / "AppData" / "Roaming"))
    return Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")


def server_args(plan: Install) -> list[str]:
    """The server's arguments: `--root` relative to the project in a project file (clients start
    project servers there), so that the shared file names nothing of this machine."""
    args = list(plan.args)
    if plan.root is not None:
        root = str(plan.root)
        if plan.scope == "project" and plan.root.is_relative_to(plan.project):
            root = plan.root.relative_to(plan.project).as_posix()
        args += ["--root", root]
    return args


def entry(plan: Install) -> dict[str, Any]:
    """The server entry written for Tether (VS Code also wants the transport type)."""
    out: dict[str, Any] = {"command": plan.command, "args": server_args(plan)}
    if plan.target in ("claude-code", "vscode"):
        out = {"type": "stdio", **out}
    return out


def claude_add_command(plan: Install) -> str:
    """The `claude mcp add` line that registers the same server with Claude Code."""
    words = ["claude", "mcp", "add", "--scope", plan.scope, plan.name, "--", plan.command]
    return shlex.join([*words, *server_args(plan)])


def placed(plan: Install) -> tuple[Install, str | None]:
    """The plan as it will be written, and why it moved: an entry whose command names this
    machine goes to the local (Claude Code) or user scope instead of the shared project file."""
    if plan.scope != "project" or plan.portable or plan.target not in PRIVATE_SCOPE:
        return plan, None
    scope = PRIVATE_SCOPE[plan.target]
    note = (
        f"the command {shlex.join([plan.command, *plan.args])} names a path on this machine, so "
        f"the entry went to the {scope} scope, not the project's shared file; for a project "
        f"entry, {SHAREABLE}"
    )
    return replace(plan, scope=scope), note


def _servers_key(plan: Install) -> tuple[str, ...]:
    """Where the servers object sits in the file: under the project's path for the local scope."""
    key = "servers" if plan.target == "vscode" else "mcpServers"
    return ("projects", str(plan.project), key) if plan.scope == "local" else (key,)


def install(plan: Install) -> dict[str, Any]:
    """Add or update Tether's entry in the client's file; returns what was done."""
    config_path(plan)  # refuse a bad target or scope before moving anything
    plan, note = placed(plan)
    path = config_path(plan)
    document = read_json(path)
    servers = document
    for key in _servers_key(plan):
        servers = servers.setdefault(key, {})
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
        write_file(path, json.dumps(document, ensure_ascii=False, indent=2) + "\n")
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
    if note:
        result["note"] = note
    return result
