"""Installing the guard into Claude Code: hook entries merged into `.claude/settings.json`.

Owns: the hook entries the guard needs (one per event it answers), merging them into an existing
settings file without disturbing anything else in it (other hooks, permissions, other keys), and
writing a starter configuration when there is none. A command hook runs `tether guard hook` and
carries `--on-error` when one is chosen; an http hook posts to `tether guard serve` with
`Authorization: Bearer $TETHER_GUARD_TOKEN` (Claude Code fills in the variable, listed in
`allowedEnvVars`; an unset token sends an empty one, which a server without a token ignores).
Running it twice changes nothing the second time; running it again with other options replaces
the guard's own entries in place. It does not run hooks.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from tether.errors import TetherError
from tether.files import write_atomic
from tether.guard.failsafe import mode
from tether.guard.hooks import EVENTS, TOOL_EVENTS
from tether.guard.serve import TOKEN_ENV

# Seconds Claude Code gives a hook: longer than the classifier's default 15-second deadline and
# the hook's own 25-second one, so the guard answers before Claude Code gives up on it.
HOOK_TIMEOUT = 30
_MODES = {
    "block": "a tool call the guard cannot decide is denied; while its configuration cannot be "
    "read it blocks destructive commands only",
    "allow": "a tool call the guard cannot decide goes ahead",
}


def starter(on_error: str) -> str:
    """A new configuration: the dev profile, and the on_error mode spelled out."""
    return (
        f"security:\n  behavior:\n    profile: dev\n    on_error: {on_error}"
        "   # block: a tool call the guard cannot decide is denied; allow: it goes ahead\n"
    )


def hook_entry(
    config: str, command: str, http: str | None, on_error: str | None = None
) -> dict[str, Any]:
    """The hook handler: a command running `tether guard hook`, or an http hook to `serve`."""
    if http:
        return {
            "type": "http",
            "url": http,
            "headers": {"Authorization": f"Bearer ${TOKEN_ENV}"},
            "allowedEnvVars": [TOKEN_ENV],
            "timeout": HOOK_TIMEOUT,
        }
    target = config if os.path.isabs(config) else f"$CLAUDE_PROJECT_DIR/{config}"
    quoted = '"' + target.replace('"', '\\"') + '"'
    flag = f" --on-error {on_error}" if on_error else ""
    return {
        "type": "command",
        "command": f"{command} guard hook --config {quoted}{flag}",
        "timeout": HOOK_TIMEOUT,
    }


def _ours(handler: Any, entry: dict[str, Any], command: str) -> bool:
    """Whether `handler` is an entry this installation wrote (maybe with other options)."""
    if not isinstance(handler, dict) or handler.get("type") != entry["type"]:
        return False
    if entry["type"] == "http":
        return handler.get("url") == entry["url"]
    return str(handler.get("command", "")).startswith(f"{command} guard hook ")


def install_claude(
    settings: str,
    config: str,
    command: str = "tether",
    http: str | None = None,
    on_error: str | None = None,
) -> dict[str, Any]:
    """Merge the guard's hooks into `settings`; returns what was added or changed."""
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
    entry = hook_entry(config, command, http, on_error)
    added, updated = [], []
    for event in EVENTS:
        groups = hooks.setdefault(event, [])
        handlers = [
            (group["hooks"], i)
            for group in groups
            if isinstance(group, dict) and isinstance(group.get("hooks"), list)
            for i, handler in enumerate(group["hooks"])
            if _ours(handler, entry, command)
        ]
        if handlers:
            for found, i in handlers:
                if found[i] != entry:
                    found[i] = entry
                    updated.append(event)
            continue
        group: dict[str, Any] = {"hooks": [entry]}
        if event in TOOL_EVENTS:
            group = {"matcher": "*", **group}
        groups.append(group)
        added.append(event)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(str(path), json.dumps(data, indent=2) + "\n")
    project = path.resolve().parent.parent
    config_file = Path(config) if os.path.isabs(config) else project / config
    created = False
    if not http and not config_file.exists():
        config_file.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(str(config_file), starter(mode(None, on_error)))
        created = True
    chosen = mode(None, on_error)
    where = "--on-error" if on_error else "the default"
    if http:
        where = f"`tether guard serve{' --on-error ' + on_error if on_error else ''}`"
    return {
        "settings": str(path),
        "added": added,
        "updated": sorted(set(updated), key=EVENTS.index),
        "config": config,
        "created_config": created,
        "on_error": chosen,
        "on_error_means": f"{_MODES[chosen]} (set by {where}; a configuration's on_error "
        "wins; every error is listed by `tether guard log`)",
    }
