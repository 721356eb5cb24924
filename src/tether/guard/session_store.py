"""Session state kept on disk between hook processes.

Owns: where a session's state lives (one folder per session, one snapshot and one append-only
event log per agent within it: the main agent and each sub-agent), and the exclusive file lock
that makes concurrent hook processes on one session serialise their read-modify-write, so that no
event is lost. It does not decide anything: callers get a `GuardSession` over the loaded state,
and every event it records is appended to the log and folded into the snapshot on exit.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tether.guard.engine import Guard, GuardSession
from tether.guard.state import SessionState

_SAFE = re.compile(r"[^A-Za-z0-9_-]")


def default_state_dir() -> str:
    """`$TETHER_GUARD_STATE`, else `$XDG_STATE_HOME/tether/guard`, else `~/.local/state/...`."""
    explicit = os.environ.get("TETHER_GUARD_STATE")
    if explicit:
        return explicit
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "state"
    )
    return os.path.join(base, "tether", "guard")


def _name(value: str) -> str:
    """A file name for an id: readable when the id is tame, a digest otherwise."""
    if value and len(value) <= 80 and not _SAFE.search(value):
        return value
    import hashlib

    return "h-" + hashlib.sha256(value.encode()).hexdigest()[:32]


class SessionStore:
    """Snapshots and event logs under `root/sessions/<session>/<agent>.{json,log}`."""

    def __init__(self, root: str) -> None:
        self.root = root

    def folder(self, session_id: str) -> str:
        return os.path.join(self.root, "sessions", _name(session_id))

    def paths(self, session_id: str, agent_id: str | None) -> tuple[str, str, str]:
        stem = os.path.join(
            self.folder(session_id), "main" if not agent_id else "agent-" + _name(agent_id)
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
        os.makedirs(os.path.dirname(snapshot), exist_ok=True)
        with open(lock, "a+b") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                state = self._load(snapshot)
                new: list[dict[str, Any]] = []
                yield GuardSession(guard, session_id, cwd, state, new.append)
                if new:
                    with open(log, "a", encoding="utf-8") as out:
                        out.write("".join(json.dumps(e) + "\n" for e in new))
                    tmp = f"{snapshot}.{os.getpid()}.tmp"
                    with open(tmp, "w", encoding="utf-8") as out:
                        out.write(json.dumps(state.to_json()))
                    os.replace(tmp, snapshot)
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    @staticmethod
    def _load(snapshot: str) -> SessionState:
        try:
            with open(snapshot, encoding="utf-8") as handle:
                return SessionState.from_json(json.loads(handle.read()))
        except FileNotFoundError:
            return SessionState()

    def state(self, session_id: str, agent_id: str | None = None) -> SessionState:
        """The stored snapshot of a session (an empty state when there is none)."""
        return self._load(self.paths(session_id, agent_id)[0])

    def events(self, session_id: str, agent_id: str | None = None) -> list[dict[str, Any]]:
        """The stored event log of a session, oldest first."""
        log = self.paths(session_id, agent_id)[1]
        try:
            with open(log, encoding="utf-8") as handle:
                lines = handle.read().splitlines()
        except FileNotFoundError:
            return []
        return [json.loads(line) for line in lines if line]

    def end(self, session_id: str) -> None:
        """Forget a session: its main agent and every sub-agent."""
        import shutil

        shutil.rmtree(self.folder(session_id), ignore_errors=True)
