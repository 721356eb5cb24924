"""Per-session state: what is tracked, and the fold of a session's events into it.

Owns: the compiled `state_tracking` (sets, counters, flags and which tools touch them), the target
of a call (and, for the binding, which tools only read, where a writing tool names its files and
where a shell call runs: `reads_only`, `WRITTEN_KEYS`, `shell_folder`), the `SessionState`
snapshot and the events that change it. The state is a pure fold over an append-only list of
events, so a session can be rebuilt by replaying its log. It does not decide anything (that
is the engine) and does not persist anything (that is the session store).

Events (plain JSON objects):

- `{"e": "user", "text": ...}`: a user message starts a new turn.
- `{"e": "text", "text": ...}`: the model produced text.
- `{"e": "tool", "tool", "ok", "target", "add", "inc", "reset", "set", "unset"}`: a tool call.
  `ok` is true on a sign of success from the harness, false on a sign of failure, null when it
  gave neither (`outcome` reads a response; `claude.tool_ok` an event). A failed call counts as a
  call but changes no set, counter or flag; a call of unknown outcome ran, so its effects apply.
  The effects are computed when the event is made, so replay needs no configuration.
- `{"e": "decision", "rule", "action", "phase"}`: a rule fired (recorded in `violations`).
"""

from __future__ import annotations

import os
from typing import Any, NamedTuple

from tether.guard.rules.patterns import Pattern
from tether.guard.rules.triggers import Trigger, bare, canonical

DEFAULT_TARGET_KEYS: tuple[str, ...] = (
    "file_path",
    "path",
    "filepath",
    "url",
    "query",
    "pattern",
    "target",
)
# Tools that only read (canonical names), and the words a tool named for reading begins with.
READ_TOOLS = frozenset({"read", "glob", "grep", "ls", "notebookread"})
_READ_WORDS = ("read", "list", "search", "get")


def reads_only(tool: str) -> bool:
    """Whether a tool only reads, by its name: a reading tool (`Read`, `Grep`, ...), or one
    named for reading (`read_text_file`, `list_directory`, `search_files`, `get_file_info`)."""
    name = bare(tool)
    return name in READ_TOOLS or name.startswith(_READ_WORDS)


# The arguments a tool that writes names the files it writes in (a file tool's, another
# server's `write_file` or `move_file`): read by the binding's guarded files and file scopes.
WRITTEN_KEYS = ("file_path", "notebook_path", "path", "source", "destination", "target")
# Where a shell call says it runs (Cursor's and Qwen Code's `cwd`, Codex's `workdir`, Gemini
# CLI's `dir_path`, which its adapter hands on as `path`).
_SHELL_FOLDER_KEYS = ("cwd", "workdir", "dir_path", "directory", "path")


def shell_folder(params: dict[str, Any], base: str) -> str:
    """The folder a shell call runs its line in: the one its arguments name, relative to `base`
    (the hook's working folder), else `base`. (Claude Code refuses an argument its tool does
    not take before any hook runs, so a model cannot name a folder its shell does not use.)"""
    named = (params[k] for k in _SHELL_FOLDER_KEYS if isinstance(params.get(k), str))
    return os.path.join(base, os.path.expanduser(next(named, "")))


HISTORY_LIMIT = 50
VIOLATION_LIMIT = 50


def outcome(response: Any) -> bool | None:
    """What a tool response (Claude Code's shape, which each harness's adapter gives) says of
    how the call went: False on a sign of failure (`is_error`, `isError`, `error`, `success:
    false`, `interrupted`, a non-zero exit code), True on a sign of success (`success: true`,
    `is_error: false`, `isError: false`, an exit code of 0), None when it says neither."""
    if not isinstance(response, dict):
        return None
    if response.get("is_error") or response.get("isError") or response.get("error"):
        return False
    if response.get("success") is False or response.get("interrupted") is True:
        return False
    codes = [response.get(k) for k in ("exit_code", "exitCode", "returncode", "returnCode")]
    codes = [c for c in codes if isinstance(c, int) and not isinstance(c, bool)]
    if any(codes):
        return False
    said = (response.get("success"), response.get("is_error"), response.get("isError"))
    return True if codes or said[0] is True or False in said[1:] else None


def _is_path_key(key: str) -> bool:
    return key.endswith("path")


def extract_target(params: dict[str, Any], keys: tuple[str, ...], cwd: str | None) -> str | None:
    """The first non-empty value among `keys`; path-like keys are made absolute against `cwd`."""
    for key in keys:
        value = params.get(key)
        if value is None or value == "":
            continue
        text = value if isinstance(value, str) else str(value)
        if _is_path_key(key):
            text = os.path.expanduser(text)
            if cwd and not os.path.isabs(text):
                text = os.path.join(cwd, text)
            text = os.path.normpath(text)
        return text
    return None


class SetSpec(NamedTuple):
    name: str
    add_on: Trigger
    keys: tuple[str, ...]


class ResetWhen(NamedTuple):
    tool: Trigger
    param: str
    pattern: Pattern


class CounterSpec(NamedTuple):
    name: str
    increment_on: Trigger
    reset_on: Trigger | None
    reset_when: tuple[ResetWhen, ...]


class FlagSpec(NamedTuple):
    name: str
    set_on: Trigger
    unset_on: Trigger | None


class ToolEffects(NamedTuple):
    """Which sets, counters and flags one tool touches (computed once per tool name)."""

    sets: tuple[SetSpec, ...]
    inc: tuple[str, ...]
    reset: tuple[str, ...]
    reset_when: tuple[tuple[str, ResetWhen], ...]
    set_flags: tuple[str, ...]
    unset_flags: tuple[str, ...]


def _trigger(spec: dict[str, Any], key: str) -> Trigger | None:
    """The trigger `spec` gives under `key`, if any."""
    return Trigger(spec[key]) if spec.get(key) else None


def set_keys(spec: dict[str, Any]) -> tuple[str, ...]:
    """The target keys of a set: its `target`, its `aliases`, then the default keys."""
    keys: list[str] = []
    for key in [spec.get("target"), *spec.get("aliases", []), *DEFAULT_TARGET_KEYS]:
        if key and key not in keys:
            keys.append(key)
    return tuple(keys)


class Tracking:
    """The compiled `state_tracking` block."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.sets = {
            name: SetSpec(name, Trigger(spec["add_on"]), set_keys(spec))
            for name, spec in config.get("sets", {}).items()
        }
        self.counters = {
            name: CounterSpec(
                name,
                Trigger(spec["increment_on"]),
                _trigger(spec, "reset_on"),
                tuple(
                    ResetWhen(Trigger(item["tool"]), item["param"], Pattern(item["matches"]))
                    for item in spec.get("reset_when", [])
                ),
            )
            for name, spec in config.get("counters", {}).items()
        }
        self.flags = {
            name: FlagSpec(name, Trigger(spec["set_on"]), _trigger(spec, "unset_on"))
            for name, spec in config.get("flags", {}).items()
        }
        self._effects: dict[str, ToolEffects] = {}

    def effects_for(self, tool: str) -> ToolEffects:
        found = self._effects.get(tool)
        if found is None:
            found = ToolEffects(
                sets=tuple(s for s in self.sets.values() if s.add_on.matches(tool)),
                inc=tuple(c.name for c in self.counters.values() if c.increment_on.matches(tool)),
                reset=tuple(
                    c.name
                    for c in self.counters.values()
                    if c.reset_on is not None and c.reset_on.matches(tool)
                ),
                reset_when=tuple(
                    (c.name, rw)
                    for c in self.counters.values()
                    for rw in c.reset_when
                    if rw.tool.matches(tool)
                ),
                set_flags=tuple(f.name for f in self.flags.values() if f.set_on.matches(tool)),
                unset_flags=tuple(
                    f.name
                    for f in self.flags.values()
                    if f.unset_on is not None and f.unset_on.matches(tool)
                ),
            )
            self._effects[tool] = found
        return found

    def tool_event(
        self, tool: str, params: dict[str, Any], ok: bool | None, cwd: str | None
    ) -> dict[str, Any]:
        """The event recording a call of `tool` that succeeded (`ok`), failed, or ran with no
        sign either way (None)."""
        event: dict[str, Any] = {
            "e": "tool",
            "tool": canonical(tool),
            "ok": ok,
            "target": extract_target(params, DEFAULT_TARGET_KEYS, cwd),
        }
        if ok is False:
            return event
        fx = self.effects_for(tool)
        add = {}
        for spec in fx.sets:
            target = extract_target(params, spec.keys, cwd)
            if target is not None:
                add[spec.name] = target
        reset = list(fx.reset)
        for name, rw in fx.reset_when:
            value = params.get(rw.param)
            if value is not None and rw.pattern.search(str(value)) and name not in reset:
                reset.append(name)
        for key, value in (
            ("add", add),
            ("inc", list(fx.inc)),
            ("reset", reset),
            ("set", list(fx.set_flags)),
            ("unset", list(fx.unset_flags)),
        ):
            if value:
                event[key] = value
        return event


_FIELDS: dict[str, Any] = {
    "turn": 0,
    "step": 0,
    "awaiting_step": True,
    "tool_calls_this_turn": 0,
    "total_tool_calls": 0,
    "text_this_turn": False,
    "last_tool": None,
    "streak": 0,
    "last_user_message": None,
    "events": 0,
    "violation_count": 0,
}
_COLLECTIONS = ("sets", "counters", "flags", "history", "violations", "classified")


class SessionState:
    """Everything a session has accumulated; `apply` folds one event into it."""

    __slots__ = (*_FIELDS, *_COLLECTIONS)

    turn: int
    step: int
    awaiting_step: bool
    tool_calls_this_turn: int
    total_tool_calls: int
    text_this_turn: bool
    last_tool: str | None
    streak: int
    last_user_message: str | None
    events: int
    violation_count: int
    sets: dict[str, dict[str, None]]
    counters: dict[str, int]
    flags: dict[str, bool]
    history: list[list[Any]]
    violations: list[dict[str, Any]]
    classified: list[int]

    def __init__(self) -> None:
        for name, value in _FIELDS.items():
            setattr(self, name, value)
        self.sets = {}
        self.counters = {}
        self.flags = {}
        self.history = []
        self.violations = []
        self.classified = []

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SessionState) and self.to_json() == other.to_json()

    def __repr__(self) -> str:
        return f"SessionState({self.to_json()!r})"

    def apply(self, event: dict[str, Any]) -> None:
        kind = event["e"]
        self.events += 1
        if kind == "user":
            self.turn += 1
            self.tool_calls_this_turn = 0
            self.text_this_turn = False
            self.awaiting_step = True
            self.last_tool = None
            self.streak = 0
            self.last_user_message = event.get("text")
            if event.get("classified"):
                self.classified.append(self.turn)
        elif kind == "text":
            self.text_this_turn = True
            self._begin_step()
        elif kind == "tool":
            self._begin_step()
            self.awaiting_step = True
            tool = event["tool"]
            self.tool_calls_this_turn += 1
            self.total_tool_calls += 1
            self.streak = self.streak + 1 if self.last_tool == tool else 1
            self.last_tool = tool
            self.history.append([tool, event.get("target"), event["ok"]])
            del self.history[:-HISTORY_LIMIT]
            for name, target in event.get("add", {}).items():
                self.sets.setdefault(name, {})[target] = None
            for name in event.get("inc", ()):
                self.counters[name] = self.counters.get(name, 0) + 1
            for name in event.get("reset", ()):
                self.counters[name] = 0
            for name in event.get("set", ()):
                self.flags[name] = True
            for name in event.get("unset", ()):
                self.flags[name] = False
        elif kind == "decision":
            self.violation_count += 1
            self.violations.append(
                {"rule": event["rule"], "action": event["action"], "turn": self.turn}
            )
            del self.violations[:-VIOLATION_LIMIT]
        else:
            raise ValueError(f"unknown event kind {kind!r}")

    def _begin_step(self) -> None:
        if self.awaiting_step:
            self.step += 1
            self.awaiting_step = False

    def to_json(self) -> dict[str, Any]:
        out = {name: getattr(self, name) for name in self.__slots__}
        out["sets"] = {name: list(values) for name, values in self.sets.items()}
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SessionState:
        state = cls()
        for name in state.__slots__:
            if name in data:
                setattr(state, name, data[name])
        state.sets = {name: dict.fromkeys(values) for name, values in data["sets"].items()}
        return state

    @classmethod
    def replay(cls, events: list[dict[str, Any]]) -> SessionState:
        state = cls()
        for event in events:
            state.apply(event)
        return state
