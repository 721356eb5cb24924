"""The on-disk session store: snapshots plus log tails, a torn line, sessions and sub-agents."""

from __future__ import annotations

import pytest

from tether.guard import Guard
from tether.guard.harness.session_store import KEPT_DELIVERIES, SNAPSHOT_EVERY, SessionStore
from tether.guard.rules.state import SessionState


def fill(store: SessionStore, guard: Guard, calls: int, agent: str | None = None) -> None:
    for i in range(calls):
        with store.session(guard, "s", agent) as session:
            session.post_tool("Read", {"file_path": f"/f{i}"}, {})


def test_a_fresh_store_reads_snapshot_and_log_tail(tmp_path):
    guard = Guard.from_config({"profile": "dev"})
    warm = SessionStore(str(tmp_path))
    fill(warm, guard, SNAPSHOT_EVERY * 2 + 5)
    snapshot = warm.paths("s", None)[0]
    assert (tmp_path / snapshot).exists()
    cold = SessionStore(str(tmp_path)).state("s")
    assert cold.total_tool_calls == SNAPSHOT_EVERY * 2 + 5
    assert cold == SessionState.replay(warm.events("s"))
    assert len(cold.sets["read_files"]) == SNAPSHOT_EVERY * 2 + 5


def test_a_store_notices_writes_by_another_process(tmp_path):
    guard = Guard.from_config({"profile": "dev"})
    one, two = SessionStore(str(tmp_path)), SessionStore(str(tmp_path))
    fill(one, guard, 3)
    fill(two, guard, 2)
    with one.session(guard, "s") as session:
        assert session.state.total_tool_calls == 5


def test_a_torn_last_line_is_skipped(tmp_path):
    guard = Guard.from_config({"profile": "dev"})
    store = SessionStore(str(tmp_path))
    fill(store, guard, 2)
    with open(store.paths("s", None)[1], "a", encoding="utf-8") as log:
        log.write('{"e": "tool", "tool": "re')
    assert SessionStore(str(tmp_path)).state("s").total_tool_calls == 2


@pytest.mark.parametrize("warm", [False, True])
def test_the_event_after_a_torn_line_is_kept(tmp_path, warm):
    """A hook killed mid-write leaves a torn line; the next hook's event must not vanish with it
    (it used to be appended onto the torn line and dropped by the reader)."""
    guard = Guard.from_config({"profile": "dev"})
    store = SessionStore(str(tmp_path))
    fill(store, guard, 2)
    log = store.paths("s", None)[1]
    with open(log, "a", encoding="utf-8") as out:
        out.write('{"e": "tool", "tool": "Re')
    writer = store if warm else SessionStore(str(tmp_path))
    with writer.session(guard, "s") as session:
        session.post_tool("Read", {"file_path": "/after-the-tear"}, {})
    fresh = SessionStore(str(tmp_path))
    assert fresh.state("s").total_tool_calls == 3
    assert "/after-the-tear" in fresh.state("s").sets["read_files"]
    events = fresh.events("s")
    assert [e.get("target") for e in events if e["e"] == "tool"][-1] == "/after-the-tear"
    assert SessionState.replay(events) == fresh.state("s")
    with writer.session(guard, "s") as session:
        assert session.state.total_tool_calls == 3


def test_agents_are_kept_apart(tmp_path):
    guard = Guard.from_config({"profile": "dev"})
    store = SessionStore(str(tmp_path))
    fill(store, guard, 2)
    fill(store, guard, 1, agent="sub/agent:1")
    assert store.state("s").total_tool_calls == 2
    assert store.state("s", "sub/agent:1").total_tool_calls == 1
    store.end("s")
    assert store.state("s", "sub/agent:1").total_tool_calls == 0


def test_an_event_is_delivered_once_per_session_and_the_record_stays_bounded(tmp_path):
    store = SessionStore(str(tmp_path))
    assert store.first_delivery("s", "PreToolUse toolu_1")
    assert not store.first_delivery("s", "PreToolUse toolu_1")
    assert not SessionStore(str(tmp_path)).first_delivery("s", "PreToolUse toolu_1")  # a process
    assert store.first_delivery("other", "PreToolUse toolu_1")  # sessions are apart
    assert store.first_delivery("s", "PreToolUse toolu_1\nPreToolUse toolu_2")  # one key a line
    assert store.first_delivery("s", "PreToolUse toolu_2")
    for i in range(2 * KEPT_DELIVERIES):
        assert store.first_delivery("s", f"k{i}")
    delivered = tmp_path / "sessions" / "s" / "delivered"
    assert len(delivered.read_bytes().splitlines()) <= 2 * KEPT_DELIVERIES
    assert not store.first_delivery("s", f"k{2 * KEPT_DELIVERIES - 1}")  # the recent are kept
    store.end("s")
    assert store.first_delivery("s", "PreToolUse toolu_1")  # a session that ended starts afresh
