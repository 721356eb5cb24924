"""Session state kept on disk between hook processes.

Owns: where a session's state lives (one folder per session; per agent within it, the main agent
and each sub-agent, an append-only event log and a snapshot), and the exclusive file lock that
makes concurrent hook processes on one session serialise their read-modify-write, so that no
event is lost. The state is the snapshot plus the log lines written after it (the snapshot
records how many log bytes it covers and is rewritten every `SNAPSHOT_EVERY` events); a
long-lived store (`serve`) keeps the state in memory while the log has not grown under it. The
log is a `tether.appendlog` log: a torn last line (a crash mid-write) is skipped when reading and
cut off before the next append, so no later event is lost with it. No file of a session is
written through a symbolic link (the log and the lock are opened without following one, the
snapshot is replaced, never written into). It does not decide anything:
callers get a `GuardSession` over the loaded state, and every event it records is appended to the
log on exit.

It also keeps which events of a session were delivered (`first_delivery`): when several hooks
deliver one event (the plugin's and the installed ones), the first is handled and the others
are not, so one event is recorded and counted once.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, NamedTuple

from tether import appendlog, locking
from tether.files import open_regular, safe_name, write_atomic
from tether.guard.rules.ruleset import Guard, GuardSession
from tether.guard.rules.state import SessionState

SNAPSHOT_EVERY = 64
_ANSWER_TRIES = 100  # 5 s: how long a repeated stop waits for the first delivery's answer
_KEPT_ANSWERS = 16
KEPT_DELIVERIES = 256  # the last delivered events of a session that a repeat is checked against


class _Loaded(NamedTuple):
    size: int  # log bytes folded into `state`
    state: SessionState
    covered: int  # log bytes the snapshot file covers
    at_snapshot: int  # the state's event count in the snapshot file


class SessionStore:
    """Snapshots and event logs under `root/sessions/<session>/<agent>.{json,log}`."""

    def __init__(self, root: str) -> None:
        self.root = root
        self._cache: dict[str, _Loaded] = {}

    def folder(self, session_id: str) -> str:
        return os.path.join(self.root, "sessions", safe_name(session_id))

    def paths(self, session_id: str, agent_id: str | None) -> tuple[str, str, str]:
        stem = os.path.join(
            self.folder(session_id), "main" if not agent_id else "agent-" + safe_name(agent_id)
        )
        return f"{stem}.json", f"{stem}.log", f"{stem}.lock"

    @contextmanager
    def session(
        self,
        guard: Guard,
        session_id: str,
        agent_id: str | None = None,
        cwd: str | None = None,
    ) -> Iterator[GuardSession]:
        """A session over the stored state, locked against other processes until exit."""
        snapshot, log, lock = self.paths(session_id, agent_id)
        try:
            fd = open_regular(lock, os.O_RDWR | os.O_CREAT)
        except FileNotFoundError:
            os.makedirs(os.path.dirname(lock), exist_ok=True)
            fd = open_regular(lock, os.O_RDWR | os.O_CREAT)
        try:
            locking.lock(fd)
            cached = self._cache.pop(log, None)
            if cached is not None and cached.size == _size(log):
                loaded = cached
            else:
                loaded = _load(snapshot, log)
            state = loaded.state
            new: list[dict[str, Any]] = []
            yield GuardSession(guard, session_id, cwd, state, new.append)
            if new:
                size = appendlog.append(log, new)
                loaded = _Loaded(size, state, loaded.covered, loaded.at_snapshot)
                if state.events - loaded.at_snapshot >= SNAPSHOT_EVERY:
                    _write_snapshot(snapshot, state, size)
                    loaded = _Loaded(size, state, size, state.events)
            self._cache[log] = loaded
        finally:
            locking.unlock(fd)
            os.close(fd)

    def first_delivery(self, session_id: str, key: str) -> bool:
        """Whether the event `key` of the session is delivered for the first time (and note that
        it was): the session's `delivered` file, a key a line, is its own lock; it keeps the last
        `KEPT_DELIVERIES` keys."""
        path = os.path.join(self.folder(session_id), "delivered")
        try:
            handle = open(path, "a+b")  # noqa: SIM115 (closed by the with below)
        except FileNotFoundError:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            handle = open(path, "a+b")  # noqa: SIM115
        line = key.replace("\n", " ").encode()
        with handle, locking.locked(handle.fileno()):
            handle.seek(0)
            keys = handle.read().splitlines()
            if line in keys:
                return False
            if len(keys) >= 2 * KEPT_DELIVERIES:
                handle.truncate(0)
                handle.write(b"".join(k + b"\n" for k in keys[-KEPT_DELIVERIES:]))
            handle.write(line + b"\n")
        return True

    def first_stop(self, session_id: str, key: str, channel: str) -> str | None:
        """The name of this stop (`key` and its count) when it is a new one, None when it is
        another hook's delivery of the last stop of that key (`channel`: which hook delivers
        it). Two hooks deliver each stop once each: a stop from a channel that already
        delivered the last stop of that key is the next stop, however alike the two are."""
        path = os.path.join(self.folder(session_id), "stops.json")
        lock = self._answers_lock(session_id)
        with open(lock, "a+b") as handle, locking.locked(handle.fileno()):
            noted = {n[0]: n[1] for n in _noted(path) if isinstance(n[1], dict)}
            last = noted.pop(key, {"count": 0, "channels": []})
            repeat = last["count"] and channel not in last["channels"]
            last = (
                {"count": last["count"], "channels": [*last["channels"], channel]}
                if repeat
                else {"count": last["count"] + 1, "channels": [channel]}
            )
            kept = [*list(noted.items())[-_KEPT_ANSWERS + 1 :], (key, last)]
            write_atomic(path, json.dumps([list(pair) for pair in kept]))
        return None if repeat else f"{key} #{last['count']}"

    def last_stop(self, session_id: str, key: str) -> str:
        """The name `first_stop` gave the last stop of `key`."""
        path = os.path.join(self.folder(session_id), "stops.json")
        found = [n[1] for n in _noted(path) if n[0] == key and isinstance(n[1], dict)]
        return f"{key} #{found[0]['count'] if found else 0}"

    def answered(self, session_id: str, name: str, answer: dict[str, Any] | None) -> None:
        """Note the answer given to the stop `name`, for its repeats (the last
        `_KEPT_ANSWERS` stops' answers are kept)."""
        path = os.path.join(self.folder(session_id), "stop-answers.json")
        lock = self._answers_lock(session_id)
        with open(lock, "a+b") as handle, locking.locked(handle.fileno()):
            noted = [n for n in _noted(path) if n[0] != name][-_KEPT_ANSWERS + 1 :]
            write_atomic(path, json.dumps([*noted, [name, answer]]))

    def answer_of(self, session_id: str, name: str) -> tuple[bool, dict[str, Any] | None]:
        """(True, the answer noted for the stop `name`), waited for while the delivery that
        answers it runs; (False, None) when none comes, and the stop is then handled anew: a
        repeat of a refused stop is refused too, never let through unanswered."""
        path = os.path.join(self.folder(session_id), "stop-answers.json")
        for _ in range(_ANSWER_TRIES):
            for noted, answer in _noted(path):
                if noted == name:
                    return True, answer if isinstance(answer, dict) else None
            time.sleep(0.05)
        return False, None

    def _answers_lock(self, session_id: str) -> str:
        os.makedirs(self.folder(session_id), exist_ok=True)
        return os.path.join(self.folder(session_id), "stop-answers.lock")

    def state(self, session_id: str, agent_id: str | None = None) -> SessionState:
        """The stored state of a session (an empty state when there is none)."""
        snapshot, log, _ = self.paths(session_id, agent_id)
        return _load(snapshot, log).state

    def events(self, session_id: str, agent_id: str | None = None) -> list[dict[str, Any]]:
        """The stored event log of a session, oldest first."""
        return appendlog.read(self.paths(session_id, agent_id)[1])[0]

    def end(self, session_id: str) -> None:
        """Forget a session: its main agent and every sub-agent."""
        import shutil

        folder = self.folder(session_id)
        for log in [log for log in self._cache if log.startswith(folder + os.sep)]:
            del self._cache[log]
        shutil.rmtree(folder, ignore_errors=True)


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except FileNotFoundError:
        return 0


def _load(snapshot: str, log: str) -> _Loaded:
    """The snapshot, then the log lines written after it."""
    try:
        with open(snapshot, encoding="utf-8") as handle:
            data = json.loads(handle.read())
        state, covered = SessionState.from_json(data["state"]), int(data["log_bytes"])
    except (FileNotFoundError, ValueError, KeyError, TypeError):
        state, covered = SessionState(), 0
    events, size = appendlog.read(log, covered)
    if size < covered:  # the log is not the one the snapshot was taken of
        state, covered = SessionState(), 0
        events, size = appendlog.read(log)
    at_snapshot = state.events
    for event in events:
        state.apply(event)
    return _Loaded(size, state, covered, at_snapshot)


def _write_snapshot(snapshot: str, state: SessionState, covered: int) -> None:
    write_atomic(snapshot, json.dumps({"log_bytes": covered, "state": state.to_json()}))


def _noted(path: str) -> list[list[Any]]:
    """The stops' answers noted at `path` as [key, answer] pairs (none when unreadable)."""
    try:
        with open(path, encoding="utf-8") as file:
            noted = json.load(file)
    except (OSError, ValueError):
        return []
    pairs = noted if isinstance(noted, list) else []
    return [p for p in pairs if isinstance(p, list) and len(p) == 2]
