"""A human step's timeout through the verbs, on every store (file, memory, PostgreSQL): the next
read or answer past the deadline records it once, the tree goes on as declared, a person's late
answer is refused with `timed_out`, `verify` agrees; and replicas reading at once record it once
(threads held at one instant, and real `tether next` processes). Rows of docs/semantics.md
("Timeouts")."""

from __future__ import annotations

import json
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

from support.command import TETHER
from support.stats_scenario import Clock
from support.stores import BACKENDS, Backend
from tether.errors import TetherError
from tether.verbs import Runtime

ESCALATE = """\
name: escalate
version: 1
tree:
  type: sequence
  name: Release
  children:
    - type: selector
      name: Approval
      children:
        - type: action
          name: Lead
          steps:
            - human: Lead, ship $VAR.version?
              timeout: 4h
        - type: action
          name: Manager
          steps:
            - human: Manager, ship $VAR.version?
              timeout: 1d
              on_timeout: fail
    - type: action
      name: Ship
      steps:
        - instruct: Ship it.
"""
HOUR = 3600


def _started(backend: Backend, tmp_path: Path, clock: Clock) -> tuple[Runtime, str]:
    """An execution of ESCALATE waiting on the lead since the clock's time."""
    (tmp_path / "escalate.yaml").write_text(ESCALATE)
    rt = Runtime(clock=clock)
    uri = rt.start(str(tmp_path / "escalate.yaml"), backend.new_uri(), var={"version": "1.2"})[
        "uri"
    ]
    rt.submit(uri, "success")
    return rt, uri


def _timeouts(rt: Runtime, uri: str) -> list[dict[str, Any]]:
    return [e for e in rt.trace(uri) if e["kind"] == "timeout"]


def _refused(code: str, call: Any) -> TetherError:
    with pytest.raises(TetherError) as err:
        call()
    assert err.value.code == code, err.value.to_dict()
    return err.value


@pytest.mark.parametrize("kind", sorted(BACKENDS))
def test_the_next_read_past_the_deadline_records_the_timeout_once_and_goes_on(
    kind: str, tmp_path: Path
) -> None:
    clock = Clock()
    rt, uri = _started(BACKENDS[kind](tmp_path), tmp_path, clock)
    lead = rt.next(uri)
    assert (lead["deadline"], lead["on_timeout"]) == ("2026-03-02T13:00:00.000Z", "reject")
    clock.wait(4 * HOUR - 1)
    assert rt.next(uri) == lead and _timeouts(rt, uri) == []
    clock.wait(2)
    manager = rt.next(uri)
    assert manager["name"] == "Manager" and manager["deadline"] == "2026-03-03T13:00:01.000Z"
    for read in (rt.next, rt.resume, rt.open_steps, rt.get):
        read(uri)
    (entry,) = _timeouts(rt, uri)
    assert (entry["name"], entry["step"], entry["ts"]) == ("Lead", lead["step"], clock())
    assert rt.verify(uri)["ok"]


@pytest.mark.parametrize("kind", sorted(BACKENDS))
def test_an_answer_past_the_deadline_records_the_timeout_first(kind: str, tmp_path: Path) -> None:
    """A person's late answer is refused with `timed_out`, the timeout kept; the agent's answer
    to another step is taken after it, in the same commit."""
    clock = Clock()
    rt, uri = _started(BACKENDS[kind](tmp_path), tmp_path, clock)
    lead = rt.next(uri)
    clock.wait(5 * HOUR)
    err = _refused("timed_out", lambda: rt.approve(uri, step=lead["step"], note="late"))
    assert err.message == (
        "human step 'Lead' timed out at 2026-03-02T13:00:00.000Z (on_timeout: reject) and is "
        "no longer open: a late answer is not taken"
    )
    assert err.exit_code == 5 and err.details["current"]["name"] == "Manager"
    assert len(_timeouts(rt, uri)) == 1
    store_refusals = [r["code"] for r in _refusals(rt, uri)]
    assert store_refusals == ["timed_out"]
    # without a token: the last human step to end timed out, and none is open
    clock.wait(24 * HOUR)
    err = _refused("timed_out", lambda: rt.reject(uri))
    assert "human step 'Manager' timed out" in err.message and "on_timeout: fail" in err.message
    assert rt.next(uri) == {"status": "failure"}
    assert [e["name"] for e in _timeouts(rt, uri)] == ["Lead", "Manager"]
    state = rt.get(uri)
    assert state["failure"].startswith("Human step 'Manager' timed out at 2026-03-03T14:00:00")
    assert rt.verify(uri)["ok"]


def _refusals(rt: Runtime, uri: str) -> list[dict[str, Any]]:
    from tether.store import store_for

    return store_for(uri).refusals(uri)


def test_an_answer_in_time_is_taken_and_a_stale_token_stays_stale(tmp_path: Path) -> None:
    clock = Clock()
    rt, uri = _started(BACKENDS["file"](tmp_path), tmp_path, clock)
    lead = rt.next(uri)
    _refused("stale_step", lambda: rt.approve(uri, step=lead["step"] + "x"))
    clock.wait(4 * HOUR - 1)
    assert rt.approve(uri, step=lead["step"])["next"]["name"] == "Ship"
    clock.wait(10 * HOUR)
    assert rt.next(uri)["name"] == "Ship" and _timeouts(rt, uri) == []
    _refused("wrong_phase", lambda: rt.approve(uri))


def test_the_agent_s_answer_after_the_deadline_follows_the_timeout(tmp_path: Path) -> None:
    """An answer that arrives first after the deadline: the timeout entry, then the answer, in
    one commit; an answer the timeout made moot is refused, the timeout kept."""
    (tmp_path / "t.yaml").write_text(
        "name: t\ntree:\n  type: parallel\n  name: P\n  policy: any\n  children:\n"
        "    - {type: action, name: Ask, steps: [{human: ok?, timeout: 30m}]}\n"
        "    - {type: action, name: Work, steps: [{instruct: work}, {instruct: more}]}\n"
    )
    clock = Clock()
    rt = Runtime(clock=clock)
    uri = rt.start(str(tmp_path / "t.yaml"), str(tmp_path / "run.json"))["uri"]
    rt.submit(uri, "success")
    work = rt.next(uri, all=True)[1]
    revision = rt.resume(uri)["revision"]
    clock.wait(HOUR)
    assert rt.submit(uri, "success", step=work["step"])["next"]["instruction"] == "more"
    assert [e["kind"] for e in rt.trace(uri)] == ["protocol", "timeout", "instruct"]
    assert rt.resume(uri)["revision"] == revision + 1
    assert rt.verify(uri)["ok"]
    (tmp_path / "all.yaml").write_text((tmp_path / "t.yaml").read_text().replace("any", "all"))
    uri = rt.start(str(tmp_path / "all.yaml"), str(tmp_path / "all.json"))["uri"]
    rt.submit(uri, "success")
    work = rt.next(uri, all=True)[1]
    clock.wait(HOUR)
    _refused("execution_finished", lambda: rt.submit(uri, "success", step=work["step"]))
    assert [e["kind"] for e in rt.trace(uri)] == ["protocol", "timeout"]
    assert rt.next(uri) == {"status": "failure"} and rt.verify(uri)["ok"]


# -- replicas reading at once ------------------------------------------------------------------


class _Held:
    """A clock that holds its first reading until every reader has read the state: all of them
    then find the step past its deadline before any has recorded it."""

    def __init__(self, barrier: threading.Barrier, at: str) -> None:
        self.barrier = barrier
        self.at = at
        self.first = True

    def __call__(self) -> str:
        if self.first:
            self.first = False
            self.barrier.wait(timeout=60)
        return self.at


@pytest.mark.parametrize("kind", ["file", "postgresql"])
def test_replicas_reading_at_once_record_one_timeout(kind: str, tmp_path: Path) -> None:
    clock = Clock()
    rt, uri = _started(BACKENDS[kind](tmp_path), tmp_path, clock)
    clock.wait(5 * HOUR)
    readers = 6
    barrier = threading.Barrier(readers)
    seen: list[Any] = []
    errors: list[BaseException] = []

    def read() -> None:
        try:
            seen.append(Runtime(clock=_Held(barrier, clock())).next(uri)["name"])
        except BaseException as exc:  # reported below, with the thread's own error
            errors.append(exc)

    threads = [threading.Thread(target=read) for _ in range(readers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert errors == [] and seen == ["Manager"] * readers
    (entry,) = _timeouts(rt, uri)
    assert entry["name"] == "Lead"
    assert [e["seq"] for e in rt.trace(uri)] == list(range(len(rt.trace(uri))))
    assert rt.verify(uri)["ok"]


@pytest.mark.parametrize("kind", ["file", "postgresql"])
def test_tether_next_processes_at_once_record_one_timeout(kind: str, tmp_path: Path) -> None:
    """Real `tether next` processes on the real clock, long past a deadline set in 2020."""
    rt, uri = _started(BACKENDS[kind](tmp_path), tmp_path, Clock("2020-01-01T00:00:00"))
    procs = [
        subprocess.Popen([TETHER, "next", uri], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for _ in range(6)
    ]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0] * 6, [err for _, err in outs]
    # the manager's step opened at the timeout's time, the real one: it waits a day from it
    assert [json.loads(out)["name"] for out, _ in outs] == ["Manager"] * 6
    (entry,) = _timeouts(rt, uri)
    assert entry["name"] == "Lead" and entry["deadline"] == "2020-01-01T04:00:00.000Z"
    assert rt.verify(uri)["ok"]
