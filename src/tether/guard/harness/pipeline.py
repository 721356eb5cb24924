"""One hook event, from the bytes a harness sent to the answer it reads back: the one pipeline
that command hooks (`tether guard hook`) and `tether guard serve` both run.

Owns, in order:
- the deadline over all of it (`within`: past it, the failsafe answers);
- reading the event: a JSON object, else `invalid_json` (a server still learns its event from
  the text, `sniffed`, so that a tool call it cannot read is denied under `on_error: block`);
- the harness's payloads of it (`adapters.events`: none for an event the guard does not answer)
  and its answer in the harness's format (`adapters.answer`, `adapters.render`);
- the guard that decides it (`Choose`): a command hook's is the project's configuration, or the
  last good plan made from it with a note for the user in every answer (`configured`: a lost
  configuration is unreadable, never "not guarded"); the server has its own; each payload is
  decided by `hooks.handle`;
- what anything that fails becomes (`failsafe.Attempt`: logged, then the exit code, the answer
  and the error), a command hook whose command line cannot be parsed included (`hook`).
It does not speak HTTP or read standard input (`tether.guard.harness.serve`, `tether.guard.cli`),
say where a configuration is (`rules.plan.config_path`), or decide a tool call (`hooks.handle`).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from typing import Any, NamedTuple

from tether.errors import TetherError
from tether.guard.harness.adapters import EVENTS, NATIVE, answer, events, render
from tether.guard.harness.failsafe import Attempt
from tether.guard.harness.hooks import handle
from tether.guard.harness.session_store import SessionStore
from tether.guard.rules.deadline import within
from tether.guard.rules.plan import config_path, find_config, last_plan
from tether.guard.rules.ruleset import Guard

# The guard for an event's first payload and a note the user is told with every answer, or None
# when the event gets no answer at all (a project that never had a configuration).
Choose = Callable[[dict[str, Any]], "tuple[Guard, str | None] | None"]
_EVENT = re.compile(rb'"hook_event_name"\s*:\s*"([A-Za-z]{1,40})"')


class Answered(NamedTuple):
    """What the pipeline made of one event: the exit code a command hook ends with (0: the
    answer stands), the answer in the harness's format (None: nothing to say), and the error
    when something failed (None when nothing did)."""

    code: int
    out: dict[str, Any] | None
    error: dict[str, Any] | None


def respond(
    harness: str,
    read: Callable[[], bytes],
    attempt: Attempt,
    deadline: float,
    choose: Choose,
    store: SessionStore,
    *,
    binder: Any = None,
    channel: str | None = None,
    config: str | None = None,
    sniff: bool = False,
) -> Answered:
    """Answer the event `read` gives (called within `deadline`) for `harness`; `binder` and
    `channel` as `hooks.handle` takes them, `config` as `adapters.events` does; with `sniff`,
    the event of a body that is not JSON is learned from its text (`sniffed`), so that it is
    answered as that event (a server does; a command hook answers an unknown event)."""

    def decide() -> dict[str, Any] | None:
        found = _payloads(harness, read(), attempt, config, sniff)
        chosen = choose(found[0]) if found else None
        if chosen is None:
            return None
        guard, note = chosen
        attempt.configured = guard.plan.get("on_error")
        attempt.started = True
        return answer(
            harness, found, lambda event: _noted(handle(event, guard, store, binder, channel), note)
        )

    try:
        return Answered(0, within(deadline, decide), None)
    except Exception as exc:
        code, failed, error = attempt.failed(exc)
        return Answered(code, render(harness, attempt.payload or {}, failed), error)


def hook(
    harness: str,
    read: Callable[[], bytes],
    state_dir: str,
    deadline: float,
    *,
    config: str | None = None,
    on_error: str | None = None,
    if_configured: bool = False,
    broken: TetherError | None = None,
) -> Answered:
    """A command hook's event (`tether guard hook`), decided under `configured`. With `broken`,
    the error its command line gave, the guard cannot start: the event is answered as the
    failsafe says, and one the guard does not answer still says the command line is broken."""
    attempt, store = Attempt(state_dir, on_error), SessionStore(state_dir)
    if broken is None:
        choose = configured(config, harness, attempt, if_configured)
        return respond(harness, read, attempt, deadline, choose, store, config=config)

    def cannot(event: dict[str, Any]) -> None:
        raise broken

    answered = respond(harness, read, attempt, deadline, cannot, store)
    if answered.error is not None:
        return answered
    code, failed, error = attempt.failed(broken)
    return Answered(code, render(harness, attempt.payload or {}, failed), error)


def load(config: str | None, state_dir: str, cwd: str | None = None) -> Guard:
    """The guard of the configuration `rules.plan.find_config` finds, its plan cached."""
    return Guard.from_file(find_config(config, cwd), cache_dir=os.path.join(state_dir, "plans"))


def configured(config: str | None, harness: str, attempt: Attempt, if_configured: bool) -> Choose:
    """A command hook's guard for an event: the project's configuration (`config`, a relative one
    being the project's as the event's `cwd` names it, except under Claude Code, which runs hooks
    there). When it cannot be read, or was there and is gone, the last good plan made from it
    applies, with a note and a line in the error log; without one the error stands, except that
    under `if_configured` a project that has no configuration and never had one gets no answer."""

    def choose(event: dict[str, Any]) -> tuple[Guard, str | None] | None:
        cwd = event.get("cwd")
        given = config
        if harness != "claude" and given and not os.path.isabs(given):
            given = os.path.join(str(cwd), given)
        try:
            return load(given, attempt.state_dir, cwd), None
        except TetherError as exc:
            path = config_path(given, cwd)
            plan = last_plan(path, os.path.join(attempt.state_dir, "plans"))
            if plan is None and if_configured and exc.code == "not_found":
                return None
            if plan is None:
                raise
            attempt.log("last good configuration", exc.to_dict())
            return Guard(plan), (
                f"tether guard cannot read {path} ({exc.code}: {exc.message}); until it is "
                "fixed the last good configuration read from it applies (`tether guard log`)."
            )

    return choose


def _payloads(
    harness: str, raw: bytes, attempt: Attempt, config: str | None, sniff: bool
) -> list[dict[str, Any]]:
    """The harness's payloads of the event in `raw`; `attempt.payload` is the first, or the
    event as sent, or (with `sniff`) what its text names when it is not JSON."""
    try:
        payload = json.loads(raw or b"{}")
    except (ValueError, RecursionError) as exc:
        attempt.payload = sniffed(harness, raw) if sniff else None
        raise TetherError("invalid_json", f"hook input is not JSON: {exc}") from None
    if not isinstance(payload, dict):
        raise TetherError("invalid_json", "hook input must be a JSON object")
    found = events(harness, payload, config)
    attempt.payload = found[0] if found else payload
    return found


def sniffed(harness: str, raw: bytes) -> dict[str, Any] | None:
    """The event a body that cannot be parsed names (`{"hook_event_name": ...}`, as Claude Code
    calls it), read from its text; None when it names none."""
    found = _EVENT.search(raw[:65536])
    if found is None:
        return None
    name = found.group(1).decode()
    event = name if harness == "claude" else EVENTS.get(harness, {}).get(name)
    return {"hook_event_name": event, NATIVE: name} if event else None


def _noted(out: dict[str, Any] | None, note: str | None) -> dict[str, Any] | None:
    """A hook output with `note` for the user (`systemMessage`)."""
    if note is None:
        return out
    out = dict(out or {})
    out["systemMessage"] = f"{out['systemMessage']} {note}" if out.get("systemMessage") else note
    return out
