"""Installing the guard into Claude Code: hook entries merged into `.claude/settings.json`.

Owns: the hook entries the guard needs (one per event it answers), merging them into an existing
settings file without disturbing anything else in it (other hooks, permissions, other keys), and
writing a starter configuration when there is none. Running it twice changes nothing the second
time. It does not run hooks.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from tether.errors import TetherError
from tether.guard.hooks import EVENTS, TOOL_EVENTS

# Seconds Claude Code gives a hook: longer than the classifier's default 15-second deadline.
HOOK_TIMEOUT = 30
STARTER = "security:\n  behavior:\n    profile: dev\n"


def hook_entry(config: str, command: str, http: str | None) -> dict[str, Any]:
    """The hook handler: a command running `tether guard hook`, or an http hook to `serve`."""
    if http:
        return {"type": "http", "url": http, "timeout": HOOK_TIMEOUT}
    target = config if os.path.isabs(config) else f"$CLAUDE_PROJECT_DIR/{config}"
    quoted = '"' + target.replace('"', '\\"') + '"'
    return {
        "type": "command",
        "command": f"{command} guard hook --config {quoted}",
        "timeout": HOOK_TIMEOUT,
    }


def install_claude(
    settings: str, config: str, command: str = "tether", http: str | None = None
) -> dict[str, Any]:
    """Merge the guard's hooks into `settings`; returns what was added."""
    path = Path(settings)
    data: dict[str, Any] = {}
    if path.exists():
        try:
            data = json.loads(path.read_text(encoding="utf-8") or "{}")
        except ValueError as exc:
            raise TetherError("invalid_json", f"{settings} is not valid JSON: {exc}") from None
        if not isinstance(data, dict):
            raise TetherError("invalid_json", f"{settings} must hold a JSON object")
    hooks = data.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise TetherError("invalid_json", f"{settings}: hooks must be an object")
    entry = hook_entry(config, command, http)
    added = []
    for event in EVENTS:
        groups = hooks.setdefault(event, [])
        present = any(
            handler == entry
            for group in groups
            if isinstance(group, dict)
            for handler in group.get("hooks", [])
        )
        if present:
            continue
        group: dict[str, Any] = {"hooks": [entry]}
        if event in TOOL_EVENTS:
            group = {"matcher": "*", **group}
        groups.append(group)
        added.append(event)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    project = path.resolve().parent.parent
    config_file = Path(config) if os.path.isabs(config) else project / config
    created = False
    if not http and not config_file.exists():
        config_file.parent.mkdir(parents=True, exist_ok=True)
        config_file.write_text(STARTER, encoding="utf-8")
        created = True
    return {"settings": str(path), "added": added, "config": config, "created_config": created}
