"""Strict mode: a wall around the agent's own commands, built from the harness's own sandbox.

Owns:
- the paths no command of the agent may write in strict mode (`walled`): Tether's folder
  `.tether/` (the configuration and, in strict mode, the executions under `.tether/runs/`), the
  guard's state folder, every hook registration (`registrations`) and `.mcp.json`;
- Claude Code's settings that hold them (`wall_claude`): its sandbox on, no way out of it, those
  paths denied to every write from the shell and from its file tools, merged into
  `.claude/settings.local.json` (the paths are this machine's);
- turning on the configuration's `workflow.strict` (`mark_strict`).

It does not run a sandbox: Claude Code does (bubblewrap and socat on Linux, Seatbelt on macOS),
around the Bash tool's commands and their children only; hooks and MCP servers run in Claude
Code's own process, outside it, and so does every answer the agent gives through Tether's MCP
server. Where a strict session's executions may live is the binder's
(`binder.outside_the_wall`).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from tether.errors import TetherError
from tether.guard.binding.binder import TETHER_FOLDER
from tether.guard.binding.registrations import PROJECT_FILES

# Besides the hook registrations: where Claude Code registers MCP servers in the project (a
# command that rewrote it could put its own program beside Tether's).
MCP_REGISTRATION = ".mcp.json"

_WORKFLOW = re.compile(r"^(?P<indent>[ \t]*)workflow:[ \t]*(#.*)?$")
_BEHAVIOR = re.compile(r"^(?P<indent>[ \t]*)behavior:[ \t]*(#.*)?$")


def walled(project: Path, state: str) -> list[tuple[str, bool]]:
    """The absolute paths the agent's commands may not write, in strict mode, each with whether
    it is a folder (everything below it): Tether's folder, the guard's state, and every hook
    registration a bound session may not write either (`registrations`)."""
    root = project.resolve()
    found = [(root / TETHER_FOLDER, True), (Path(state).resolve(), True)]
    found += [(root / name, name.endswith(os.sep)) for name in (*PROJECT_FILES, MCP_REGISTRATION)]
    return list(dict.fromkeys((str(path), folder) for path, folder in found))


def _merged(found: Any, ours: list[str], where: str) -> list[Any]:
    if found is None:
        found = []
    if not isinstance(found, list):
        raise TetherError("invalid_value", f"{where} must be a list")
    return [*found, *(x for x in ours if x not in found)]


def _section(data: dict[str, Any], key: str, where: str) -> dict[str, Any]:
    found = data.setdefault(key, {})
    if not isinstance(found, dict):
        raise TetherError("invalid_value", f"{where}: {key} must be an object")
    return found


def wall_claude(settings: Path, project: Path, state: str) -> dict[str, Any]:
    """Merge strict mode into Claude Code's `settings`: the sandbox on (and Claude Code refusing
    to start without it), `dangerouslyDisableSandbox` ignored, the walled paths in
    `sandbox.filesystem.denyWrite` and as `Edit(...)` deny rules (Claude Code's file tools);
    everything else in the file is kept. Returns what strict mode set."""
    from tether.files import read_json, write_file

    data = read_json(settings)
    found = walled(project, state)
    paths = [path for path, _ in found]
    sandbox = _section(data, "sandbox", str(settings))
    sandbox.update(enabled=True, failIfUnavailable=True, allowUnsandboxedCommands=False)
    filesystem = _section(sandbox, "filesystem", f"{settings}: sandbox")
    filesystem["denyWrite"] = _merged(
        filesystem.get("denyWrite"), paths, f"{settings}: sandbox.filesystem.denyWrite"
    )
    rules = [f"Edit(/{path}/**)" if folder else f"Edit(/{path})" for path, folder in found]
    permissions = _section(data, "permissions", str(settings))
    permissions["deny"] = _merged(permissions.get("deny"), rules, f"{settings}: permissions.deny")
    write_file(settings, json.dumps(data, indent=2) + "\n", root=project)
    return {"settings": str(settings), "deny_write": paths, "deny_rules": rules}


def mark_strict(config: Path) -> bool:
    """Turn on `workflow.strict` in the configuration file `config`, its other lines kept;
    returns whether it changed. A configuration that says `strict: false` is refused (the user
    said so; strict mode is theirs to turn on there), and so is one the line cannot be added to."""
    from tether.files import write_file
    from tether.guard.rules.config import plan_from_file

    if plan_from_file(config)[0]["workflow"]["strict"]:
        return False
    lines = config.read_text(encoding="utf-8").splitlines()
    if any(re.match(r"^\s*strict:", line) for line in lines):
        raise TetherError(
            "invalid_value",
            f"{config} sets workflow.strict to false: set it to true there, or drop --strict",
            path=str(config),
        )
    text = _with_strict(lines)
    if text is None:
        raise TetherError(
            "invalid_value",
            f"{config} has no behavior section to add workflow.strict to: add `workflow:` "
            "with `strict: true` under it",
            path=str(config),
        )
    write_file(config, text, root=config.parent.parent)
    return True


def _with_strict(lines: list[str]) -> str | None:
    """The configuration's lines with `strict: true` under its `workflow:` (made under
    `behavior:` when there is none), or None when it has neither."""
    for i, line in enumerate(lines):
        found = _WORKFLOW.match(line)
        if found:
            indent = found["indent"] + "  "
            return "\n".join([*lines[: i + 1], f"{indent}strict: true", *lines[i + 1 :]]) + "\n"
    for i, line in enumerate(lines):
        found = _BEHAVIOR.match(line)
        if found:
            indent = found["indent"] + "  "
            added = [f"{indent}workflow:", f"{indent}  strict: true"]
            return "\n".join([*lines[: i + 1], *added, *lines[i + 1 :]]) + "\n"
    return None
