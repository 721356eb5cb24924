"""Installing the guard into Claude Code (`.claude/settings.json`), Codex (`.codex/hooks.json`),
Gemini CLI (`.gemini/settings.json`), Cursor (`.cursor/hooks.json`), Copilot CLI
(`.github/hooks/tether.json`), Qwen Code (`.qwen/settings.json`) and Factory Droid
(`.factory/settings.json`): hook entries merged in.

Owns: the hook entries the guard needs (one per event it answers), merging them into an existing
settings file without disturbing anything else in it (other hooks, permissions, other keys), and
writing a starter configuration when there is none. A command hook runs `tether guard hook` and
carries `--on-error` when one is chosen; an http hook posts to `tether guard serve` with
`Authorization: Bearer $TETHER_GUARD_TOKEN` (Claude Code fills in the variable, listed in
`allowedEnvVars`; an unset token sends an empty one, which a server without a token ignores).
Running it twice changes nothing the second time; running it again with other options replaces
the guard's own entries in place. `.claude/settings.json` is shared (teams commit it), so hooks
whose command is a path on this machine go to `.claude/settings.local.json` instead
(`settings_file`). Codex, Gemini CLI and Cursor get command hooks running `tether guard hook
--harness NAME` (`install_harness`); they have no file of one project's hooks for one user, so a
command that is a path on this machine is written to the project's file, and the output says so.
Tether's Claude Code plugin runs the same hooks: installing them beside an enabled plugin is
said (`plugin_enabled`, read from `enabledPlugins` in the user's and the project's settings), and
the plugin's hooks say so when they find these installed (`claude.installed_hooks`); either way
each event is handled once (`hooks`). `install_managed` writes the same hooks into Claude Code's
managed settings, which no project or user file can remove. It does not choose the command
(`tether.command.launch`) or run hooks.
"""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path
from typing import Any

from tether.command.launch import SHAREABLE, Launch
from tether.errors import TetherError
from tether.guard.harness.claude import (
    CLAUDE_FILES,
    EVENTS,
    LOCAL_SETTINGS,
    SHARED_SETTINGS,
    TOOL_EVENTS,
    enables_plugin,
    read_settings,
    twice,
)
from tether.guard.harness.failsafe import mode
from tether.guard.harness.serve import TOKEN_ENV

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


def plugin_enabled(project: Path) -> str | None:
    """The settings file that enables Tether's Claude Code plugin for `project`, if one does."""
    files = [Path.home() / ".claude" / "settings.json", *(project / f for f in CLAUDE_FILES)]
    for path in files:
        if enables_plugin(read_settings(path)):
            return str(path)
    return None


def settings_file(given: str | None, command: Launch, http: bool) -> tuple[str, str | None]:
    """The settings file to write, and why when it is not the one asked for: the shared project
    file, unless the hook command is a path on this machine (then the local settings)."""
    if given is not None:
        return given, None
    if http or command.portable:
        return SHARED_SETTINGS, None
    note = (
        f"the command {command.shell()} names a path on this machine, so the hooks went to "
        f"{LOCAL_SETTINGS} (yours alone), not {SHARED_SETTINGS} (shared); for shared hooks, "
        f"{SHAREABLE}"
    )
    return LOCAL_SETTINGS, note


def install_claude(
    settings: str,
    config: str,
    command: str = "tether",
    http: str | None = None,
    on_error: str | None = None,
) -> dict[str, Any]:
    """Merge the guard's hooks into `settings`; returns what was added or changed."""
    from tether.files import write_file

    path = Path(settings)
    data: dict[str, Any] = {}
    if path.exists():
        try:
            data = json.loads(path.read_text(encoding="utf-8") or "{}")
        except ValueError as exc:
            raise TetherError("invalid_json", f"{settings} is not valid JSON: {exc}") from None
        if not isinstance(data, dict):
            raise TetherError("invalid_json", f"{settings} must hold a JSON object")
    entry = hook_entry(config, command, http, on_error)
    added, updated = _merged(data, entry, command, settings)
    write_file(path, json.dumps(data, indent=2) + "\n", root=Path.cwd())
    plugin = plugin_enabled(path.resolve().parent.parent)
    return {
        "settings": str(path),
        "added": added,
        "updated": updated,
        **_configured(path, config, http, on_error),
        **({"installed_twice": twice(str(path), f"enabled in {plugin}")} if plugin else {}),
    }


def _merged(
    data: dict[str, Any], entry: dict[str, Any], command: str, settings: str
) -> tuple[list[str], list[str]]:
    """Merge the guard's handler `entry` into the settings object `data` for every event:
    added where it has none, replaced in place where it has one of its own (`_ours`); returns
    the events added and those updated."""
    hooks = data.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise TetherError("invalid_json", f"{settings}: hooks must be an object")
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
    return added, sorted(set(updated), key=EVENTS.index)


def _not_yours(path: Path, why: str) -> TetherError:
    return TetherError(
        "forbidden",
        f"cannot write {path} ({why}): managed settings are an administrator's file, and this "
        "user may not write there. Run the same command as an administrator (`sudo tether "
        "guard install claude --managed`), or hand this file's hooks to the tool that manages "
        "the machine's settings; until then the project's hooks (`tether guard install "
        "claude`) are the guard's, and a session can remove those.",
        path=str(path),
    )


def install_managed(
    settings: str, config: str, command: str = "tether", on_error: str | None = None
) -> dict[str, Any]:
    """Merge the guard's command hooks into Claude Code's managed settings (`settings`, the
    platform's file unless another is given): hooks no project or user file can remove or
    switch off (`disableAllHooks` below the managed settings leaves them running). They run in
    every project on the machine, so they carry `--if-configured`: a project that never had a
    configuration gets no answer. Writing there is an administrator's right: where this user
    may not, the error says so and what to run instead; nothing else is written."""
    from tether.files import read_json, write_file

    path = Path(settings)
    try:
        data = read_json(path)
    except TetherError as exc:
        if exc.code != "invalid_value":  # not JSON: said as it is
            raise
        raise _not_yours(path, exc.message.rpartition(": ")[2]) from None
    entry = hook_entry(config, command, None, on_error)
    entry["command"] += " --if-configured"
    added, updated = _merged(data, entry, command, settings)
    try:
        write_file(path, json.dumps(data, indent=2) + "\n")
    except OSError as exc:
        raise _not_yours(path, str(exc.strerror or exc)) from None
    return {
        "settings": str(path),
        "managed": True,
        "added": added,
        "updated": updated,
        "config": config,
        "on_error": mode(None, on_error),
    }


def _configured(
    path: Path, config: str, http: str | None, on_error: str | None, depth: int = 2
) -> dict[str, Any]:
    """The configuration beside the hooks file `path` (`<project>/.<agent>/<file>`, or `depth`
    folders deeper than the project: Copilot CLI's `.github/hooks/<file>`), written with the
    starter when command hooks need one and there is none; and the on_error mode."""
    project = path.resolve().parents[depth - 1]
    config_file = Path(config) if os.path.isabs(config) else project / config
    created = False
    if not http and not config_file.exists():
        from tether.files import write_file

        write_file(config_file, starter(mode(None, on_error)), root=project)
        created = True
    chosen = mode(None, on_error)
    where = "--on-error" if on_error else "the default"
    if http:
        where = f"`tether guard serve{' --on-error ' + on_error if on_error else ''}`"
    return {
        "config": config,
        "created_config": created,
        "on_error": chosen,
        "on_error_means": f"{_MODES[chosen]} (set by {where}; a configuration's on_error "
        "wins; every error is listed by `tether guard log`)",
    }


# -- Codex, Gemini CLI, Cursor, Copilot CLI, Qwen Code, Factory Droid -----------------------------

# Where each keeps its project hooks, and the time it gives a hook (Gemini CLI counts in ms).
HARNESS_FILES = {
    "codex": os.path.join(".codex", "hooks.json"),
    "gemini": os.path.join(".gemini", "settings.json"),
    "cursor": os.path.join(".cursor", "hooks.json"),
    "copilot": os.path.join(".github", "hooks", "tether.json"),
    "qwen": os.path.join(".qwen", "settings.json"),
    "droid": os.path.join(".factory", "settings.json"),
}
_TIMEOUTS = {"codex": HOOK_TIMEOUT, "gemini": HOOK_TIMEOUT * 1000, "cursor": HOOK_TIMEOUT}
_TIMEOUTS.update(copilot=HOOK_TIMEOUT, qwen=HOOK_TIMEOUT * 1000, droid=HOOK_TIMEOUT)
# Harnesses whose hooks file lists each event's handlers flat (no matcher groups), under
# `"version": 1`; Copilot CLI names a handler's command `bash`.
_FLAT = ("cursor", "copilot")
# What a harness needs before it runs the hooks, where it runs none, unguarded, without a word.
BEFORE_IT_RUNS = {
    "codex": "Codex runs a project's hooks only in a trusted project and once you trust them in "
    "its /hooks review (again after each change of the file); until then every session runs "
    "unguarded and Codex says nothing. codex exec runs them unreviewed only with "
    "--dangerously-bypass-hook-trust",
    "copilot": "Copilot CLI runs a project's hooks (.github/hooks) in an interactive session, but "
    "in copilot -p only with GITHUB_COPILOT_PROMPT_MODE_REPO_HOOKS=true in its environment; "
    "without it a prompt-mode session runs unguarded",
    "qwen": "Qwen Code runs a project's hooks with folder trust off (its default) or in a "
    "folder you trusted; with security.folderTrust.enabled true in an untrusted folder it runs "
    "none (and no shell either)",
}


def harness_command(harness: str, config: str, command: str, on_error: str | None) -> str:
    """The hook command: a relative `--config` is found from the event's project (the hook
    resolves it, since Codex runs hooks in the session's folder and no harness but Claude Code
    and Gemini CLI names the project in a variable)."""
    flag = f" --on-error {on_error}" if on_error else ""
    return f"{command} guard hook --harness {harness} --config {shlex.quote(config)}{flag}"


def _handler(harness: str, command: str) -> dict[str, Any]:
    timeout = _TIMEOUTS[harness]
    if harness == "cursor":
        return {"command": command, "timeout": timeout}
    if harness == "copilot":
        return {"type": "command", "bash": command, "timeoutSec": timeout}
    handler = {"type": "command", "command": command, "timeout": timeout}
    if harness == "gemini":
        handler = {"name": "tether-guard", **handler, "description": "Tether's guard"}
    return handler


def _our_handlers(harness: str, groups: list[Any], mark: str) -> list[tuple[list[Any], int]]:
    """Where the guard's own handlers (their command holding `mark`) sit among one event's
    `groups`: each as its list of handlers and its place in it (Cursor lists handlers flat)."""
    lists = (
        [groups]
        if harness in _FLAT
        else [
            g["hooks"] for g in groups if isinstance(g, dict) and isinstance(g.get("hooks"), list)
        ]
    )
    return [
        (handlers, i)
        for handlers in lists
        for i, handler in enumerate(handlers)
        if isinstance(handler, dict)
        and mark in str(handler.get("command", handler.get("bash", ""))) + " "
    ]


def guard_commands(harness: str, data: dict[str, Any]) -> dict[str, list[str]]:
    """The guard's own hooks in a harness's hooks file (`data`), by the harness's event name:
    each a command line (Claude Code's http hooks by their URL)."""
    hooks = data.get("hooks")
    mark = " guard hook " if harness == "claude" else f" guard hook --harness {harness} "
    out: dict[str, list[str]] = {}
    for native, groups in hooks.items() if isinstance(hooks, dict) else ():
        for handlers, i in _our_handlers(harness, groups, mark) if isinstance(groups, list) else ():
            out.setdefault(native, []).append(str(handlers[i]["command"]))
        if harness == "claude" and isinstance(groups, list):
            handlers = [h for g in groups if isinstance(g, dict) for h in g.get("hooks") or []]
            urls = [str(h.get("url")) for h in handlers if isinstance(h, dict)]
            out[native] = [*out.get(native, []), *(u for u in urls if u.endswith("/hook"))]
    return {native: lines for native, lines in out.items() if lines}


def install_harness(
    harness: str,
    file: str | None,
    config: str,
    command: str,
    on_error: str | None = None,
    portable: bool = True,
) -> dict[str, Any]:
    """Merge the guard's hooks into `harness`'s hooks file (`file`, default the project's, as in
    `HARNESS_FILES`): one command hook per event in `adapters.INSTALLED`, an entry of its own
    found by its `guard hook --harness` and replaced in place; everything else is kept.
    `portable`: whether `command` names nothing of this machine (`tether.command.launch`)."""
    from tether.files import read_json, write_file
    from tether.guard.harness.adapters import EVENTS as NATIVE_EVENTS
    from tether.guard.harness.adapters import INSTALLED

    path = Path(file or HARNESS_FILES[harness])
    data = read_json(path)
    if harness in _FLAT:
        data = {"version": 1, **data}
    hooks = data.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise TetherError("invalid_value", f"{path}: hooks must be an object", path=str(path))
    line = harness_command(harness, config, command, on_error)
    entry = _handler(harness, line)
    mark = f" guard hook --harness {harness} "
    added, updated = [], []
    for native in INSTALLED[harness]:
        groups = hooks.setdefault(native, [])
        if not isinstance(groups, list):
            raise TetherError(
                "invalid_value", f"{path}: hooks.{native} must be a list", path=str(path)
            )
        ours = _our_handlers(harness, groups, mark)
        for handlers, i in ours:
            if handlers[i] != entry:
                handlers[i] = entry
                updated.append(native)
        if ours:
            continue
        if harness in _FLAT:
            groups.append(entry)
        elif NATIVE_EVENTS[harness][native] in TOOL_EVENTS:
            groups.append({"matcher": "*", "hooks": [entry]})
        else:
            groups.append({"hooks": [entry]})
        added.append(native)
    write_file(path, json.dumps(data, ensure_ascii=False, indent=2) + "\n", root=Path.cwd())
    out = {
        "harness": harness,
        "file": str(path),
        "added": added,
        "updated": sorted(set(updated), key=INSTALLED[harness].index),
        "command": line,
        **_configured(path, config, None, on_error, len(Path(HARNESS_FILES[harness]).parts)),
    }
    if harness in BEFORE_IT_RUNS:
        out["before_it_runs"] = BEFORE_IT_RUNS[harness]
    if not portable:
        out["note"] = (
            f"the command {command} names a path on this machine, and {path} is the project's "
            "(there is no file of one project's hooks for you alone): before you share it, "
            f"{SHAREABLE}, and install again"
        )
    return out
