"""The PostgreSQL store when the database goes away: a clear error while it is down, no lost or
half-written step, and work that goes on by itself once it is back — with one agent, and with
several agents whose database is restarted in the middle of their run."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from support.postgres import PostgresServer
from tether.errors import TetherError
from tether.verbs import Runtime


def _until_reachable(call: Callable[[], Any], seconds: float = 60) -> Any:
    """`call()` once the store answers again; store errors until then, for at most `seconds`."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            return call()
        except TetherError as exc:
            if exc.code != "store_unavailable" or time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def test_a_stopped_database_gives_a_clear_error_and_loses_no_step(
    own_server: PostgresServer, chain: Callable[[int], Path]
) -> None:
    rt = Runtime()
    uri = own_server.uri("outage")
    rt.start(str(chain(3)), uri)
    rt.submit(uri, "success")
    request = rt.next(uri)
    own_server.stop()

    began = time.monotonic()
    with pytest.raises(TetherError) as err:
        rt.submit(uri, "success", note="done while the database was down", step=request["step"])
    assert time.monotonic() - began < 20
    assert err.value.code == "store_unavailable"
    assert f"127.0.0.1:{own_server.port}" in err.value.message
    assert "Connection refused" in err.value.message
    with pytest.raises(TetherError) as err:
        rt.next(uri)
    assert err.value.code == "store_unavailable"

    own_server.start()
    assert _until_reachable(lambda: rt.next(uri)) == request
    answered = rt.submit(uri, "success", note="done again", step=request["step"])
    assert answered["status"] == "action_complete"
    notes = [e.get("note") for e in rt.trace(uri) if e["kind"] == "instruct"]
    assert notes == ["done again"]
    assert rt.verify(uri)["ok"]


@dataclass
class _Agent:
    """Walks one execution step by step, retrying an answer the store could not take."""

    uri: str
    steps: int = 0
    thoughts: list[str] = field(default_factory=list)
    outages: int = 0
    stale: int = 0
    after_restart: int = 0
    failure: BaseException | None = None

    def call(self, verb: Callable[[], Any]) -> Any:
        while True:
            try:
                return verb()
            except TetherError as exc:
                if exc.code != "store_unavailable":
                    raise
                self.outages += 1
                time.sleep(0.1)

    def run(self, rt: Runtime, restarted: threading.Event, deadline: float) -> None:
        try:
            while time.monotonic() < deadline and self.after_restart < 10:
                request = self.call(lambda: rt.next(self.uri))
                thought = f"{self.uri} before {request['name']}, try {self.outages + self.stale}"
                self.call(partial(rt.think, self.uri, thought))
                self.thoughts.append(thought)
                try:
                    self.call(partial(rt.submit, self.uri, "success", step=request["step"]))
                except TetherError as exc:
                    if exc.code != "stale_step":  # an answer whose commit outlived its error
                        raise
                    self.stale += 1
                    continue
                self.steps += 1
                if restarted.is_set():
                    self.after_restart += 1
        except BaseException as exc:  # reported by the test
            self.failure = exc


def test_a_database_restart_mid_run_loses_nothing_committed(
    own_server: PostgresServer, chain: Callable[[int], Path]
) -> None:
    rt = Runtime()
    tree = str(chain(400))
    agents = [_Agent(own_server.uri(f"agent-{n}")) for n in range(4)]
    for agent in agents:
        rt.start(tree, agent.uri)
        rt.submit(agent.uri, "success")
    restarted = threading.Event()
    deadline = time.monotonic() + 120
    threads = [threading.Thread(target=a.run, args=(rt, restarted, deadline)) for a in agents]
    for t in threads:
        t.start()
    while min(a.steps for a in agents) < 5 and time.monotonic() < deadline:
        time.sleep(0.05)
    own_server.stop()
    while sum(a.outages for a in agents) == 0 and time.monotonic() < deadline:
        time.sleep(0.05)  # down until the clients have felt it
    own_server.start()
    restarted.set()
    for t in threads:
        t.join(timeout=150)

    assert [a.failure for a in agents] == [None] * 4
    assert sum(a.outages for a in agents) > 0, "no client saw the outage"
    for agent in agents:
        assert agent.after_restart == 10, "work did not go on after the restart"
        trace = rt.trace(agent.uri)
        done = [e["name"] for e in trace if e["kind"] == "instruct"]
        assert done == [f"Step_{i}" for i in range(len(done))]  # none twice, none skipped
        assert len(done) == agent.steps + agent.stale
        assert rt.next(agent.uri)["name"] == f"Step_{len(done)}"
        recorded = {e["submitted"] for e in trace if e["kind"] == "think"}
        assert set(agent.thoughts) <= recorded  # every acknowledged write is there
        assert rt.verify(agent.uri)["ok"]
