"""Claude Code's side of the wire: what it sends a hook, what it writes, where it keeps hooks.

Owns the hook events the guard answers (`EVENTS`; `TOOL_EVENTS` carry a tool call), the marks
of a payload (`NATIVE`: set by an adapter on a payload of another harness; `delivery`: what makes
an event one, whichever hook delivers it), how a call went (`tool_ok`), the reads of a session
transcript (its entries, the text the model wrote, the last assistant entry: a bounded read of
the file's tail) and of Claude Code's settings files (`CLAUDE_FILES`: which of them holds the
guard's hooks, `installed_hooks`, and what the user is told when the plugin runs them too,
`twice`; for every settings file, the managed one included, which events run the guard's hooks
and which file switches hooks off, `coverage`). It decides nothing and writes nothing: `hooks`
answers an event, `install` writes the settings, `replay` drives the guard over a whole
transcript.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from tether.appendlog import parse
from tether.guard.rules.state import outcome

if TYPE_CHECKING:
    from pathlib import Path

TAIL_BYTES = 256 * 1024
TOOL_EVENTS = ("PreToolUse", "PostToolUse", "PostToolUseFailure")
SESSION_EVENTS = ("UserPromptSubmit", *TOOL_EVENTS, "Stop", "SubagentStop")
EVENTS = ("SessionStart", "SubagentStart", *SESSION_EVENTS, "ConfigChange", "SessionEnd")
# The harness's own name of the event, set by `adapters.events` on a payload of another harness:
# a payload without it is Claude Code's.
NATIVE = "harness_event"
SHARED_SETTINGS = os.path.join(".claude", "settings.json")
LOCAL_SETTINGS = os.path.join(".claude", "settings.local.json")
CLAUDE_FILES = (SHARED_SETTINGS, LOCAL_SETTINGS)
PLUGIN = "tether"  # the plugin's name in .claude-plugin/plugin.json


def read_settings(path: Path) -> dict[str, Any]:
    """A settings file's JSON object; {} when it cannot be read or holds something else."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _entries_backwards(path: str) -> Iterator[dict[str, Any]]:
    """The transcript's last entries, newest first (a bounded read of the file's tail)."""
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - TAIL_BYTES))
            chunk = handle.read()
    except OSError:
        return
    if size > TAIL_BYTES:
        chunk = chunk.partition(b"\n")[2]  # the first line is cut
    yield from reversed(parse(chunk))


def _blocks(entry: dict[str, Any]) -> list[Any]:
    content = (entry.get("message") or {}).get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return content if isinstance(content, list) else []


def is_user_prompt(entry: dict[str, Any]) -> bool:
    """A transcript entry that is a message the user typed (not a tool result)."""
    if entry.get("type") != "user" or entry.get("isMeta"):
        return False
    blocks = _blocks(entry)
    return bool(blocks) and not any(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in blocks
    )


def assistant_text(entry: dict[str, Any]) -> str:
    """The text blocks of an assistant transcript entry, joined."""
    if entry.get("type") != "assistant":
        return ""
    return "\n".join(
        b.get("text", "")
        for b in _blocks(entry)
        if isinstance(b, dict) and b.get("type") == "text" and b.get("text", "").strip()
    )


def text_since_prompt(transcript: str) -> bool:
    """Whether the model wrote any text since the user's last prompt."""
    for entry in _entries_backwards(transcript):
        if is_user_prompt(entry):
            return False
        if assistant_text(entry):
            return True
    return False


def last_assistant_text(transcript: str) -> str:
    for entry in _entries_backwards(transcript):
        if is_user_prompt(entry):
            return ""
        text = assistant_text(entry)
        if text:
            return text
    return ""


def tool_ok(payload: dict[str, Any]) -> bool | None:
    """How a call went (evidence never claims more than it saw): False for
    `PostToolUseFailure`, else what its response says (`state.outcome`, which an adapter of
    another harness fills in where that harness gave a sign), else True for Claude Code's own
    `PostToolUse` (it sends `PostToolUseFailure` for a call that failed), else None."""
    if payload.get("hook_event_name") == "PostToolUseFailure":
        return False
    ok = outcome(payload.get("tool_response"))
    return True if ok is None and NATIVE not in payload else ok


def last_assistant_uuid(transcript: str) -> str | None:
    """The `uuid` of the transcript's last assistant entry (Claude Code writes it before `Stop`)."""
    for entry in _entries_backwards(transcript):
        if entry.get("type") == "assistant" and isinstance(entry.get("uuid"), str):
            return str(entry["uuid"])
    return None


def delivery(payload: dict[str, Any]) -> str | None:
    """What makes this event one, whichever hook delivers it (None: nothing does)."""
    event = payload.get("hook_event_name", "")
    if event in TOOL_EVENTS:
        call = payload.get("tool_use_id")
        params = payload.get("tool_input")
        target = params.get("file_path") if isinstance(params, dict) else None
        return f"{event} {call} {payload.get('tool_name')} {target}" if call else None
    if event == "UserPromptSubmit":
        prompt = payload.get("prompt_id")
        return f"{event} {prompt}" if prompt else None
    if event == "SubagentStart":
        agent = payload.get("agent_id")
        return f"{event} {agent}" if agent else None
    transcript = payload.get("agent_transcript_path") or payload.get("transcript_path")
    if not isinstance(transcript, str) or not transcript:
        return None
    if event in ("Stop", "SubagentStop"):
        return _stop_delivery(event, payload, transcript)
    if event == "SessionStart":
        try:
            size = os.stat(transcript).st_size
        except OSError:
            size = 0
        return f"{event} {payload.get('source')} {size}"
    return None


def _stop_delivery(event: str, payload: dict[str, Any], transcript: str) -> str | None:
    """A stop by what the harness sent (its `last_assistant_message` and `stop_hook_active`:
    the same in every hook that delivers it, whatever the transcript holds yet, and out of the
    agent's reach); which delivery is a repeat is `SessionStore.first_stop`'s to say. A
    harness that sends no message is keyed on the transcript's last assistant entry."""
    said = payload.get("last_assistant_message")
    if isinstance(said, str):
        digest = hashlib.sha256(said.encode()).hexdigest()[:32]
        return f"{event} {payload.get('agent_id')} {payload.get('stop_hook_active')} {digest}"
    entry = last_assistant_uuid(transcript)
    return f"{event} {payload.get('agent_id')} {entry}" if entry else None


def guard_handlers(settings: dict[str, Any]) -> dict[str, int]:
    """How many of the guard's own handlers (a command running `tether guard hook`, an http
    hook to `/hook`) each event of a settings object runs."""
    counts: dict[str, int] = {}
    hooks = settings.get("hooks")
    for event, groups in hooks.items() if isinstance(hooks, dict) else ():
        for group in groups if isinstance(groups, list) else ():
            handlers = group.get("hooks") if isinstance(group, dict) else None
            for handler in handlers if isinstance(handlers, list) else ():
                if isinstance(handler, dict) and (
                    " guard hook " in f"{handler.get('command', '')} "
                    or str(handler.get("url", "")).endswith("/hook")
                ):
                    counts[event] = counts.get(event, 0) + 1
    return counts


def installed_hooks(project: Path) -> str | None:
    """The project's Claude Code settings file holding the guard's own hooks, if one does."""
    for name in CLAUDE_FILES:
        if guard_handlers(read_settings(project / name)):
            return name
    return None


def enables_plugin(settings: dict[str, Any]) -> bool | None:
    """Whether a settings object enables Tether's plugin (True), disables it (False), or says
    nothing of it (None)."""
    enabled = settings.get("enabledPlugins")
    said = [
        on
        for name, on in (enabled.items() if isinstance(enabled, dict) else ())
        if str(name).split("@")[0] == PLUGIN
    ]
    return any(on is True for on in said) if said else None


def settings_sources(project: Path, managed: str) -> dict[str, Path]:
    """Claude Code's settings files for `project`, by the `source` its `ConfigChange` names,
    from the lowest precedence to the highest."""
    from pathlib import Path

    return {
        "user_settings": Path.home() / ".claude" / "settings.json",
        "project_settings": project / SHARED_SETTINGS,
        "local_settings": project / LOCAL_SETTINGS,
        "policy_settings": Path(managed),
    }


def coverage(project: Path, managed: str) -> dict[str, Any]:
    """Where the guard's hooks run from in `project` as Claude Code's settings files stand now:
    `events`, each event's sources that run a guard handler for it (a source as often as it
    holds one; `plugin` when Tether's plugin is enabled), counting only what runs (a
    `disableAllHooks` turns off every hook but the managed ones, or all of them when the managed
    settings say it); `installed`, the same before any `disableAllHooks`; `disabled`, the sources
    that say `disableAllHooks`."""
    events: dict[str, list[str]] = {event: [] for event in EVENTS}
    disabled: list[str] = []
    plugin = None
    for source, path in settings_sources(project, managed).items():
        settings = read_settings(path)
        if settings.get("disableAllHooks") is True:
            disabled.append(source)
        said = enables_plugin(settings)
        plugin = plugin if said is None else said
        for event, count in guard_handlers(settings).items():
            if event in events:
                events[event] += [source] * count
    installed = {
        event: [*sources, *(["plugin"] if plugin else [])] for event, sources in events.items()
    }
    running = {
        event: [s for s in sources if s == "policy_settings" and "policy_settings" not in disabled]
        if disabled
        else sources
        for event, sources in installed.items()
    }
    return {"events": running, "installed": installed, "disabled": disabled}


def twice(hooks: str, plugin: str) -> str:
    """What the user is told when the plugin and installed hooks both run."""
    return (
        f"Tether's hooks run twice: installed in {hooks} and by the Tether plugin ({plugin}). "
        "Each event is still handled once, but keep one: remove the guard's entries from "
        f"{hooks}, or disable the plugin (/plugin)."
    )
