"""Notifications: what a tree's `notify` targets (and `TETHER_NOTIFY`) are told, by a real
detached sender, of a human step that opens, a park, a timeout and an execution's end; a
receiver on 127.0.0.1 that is slow or down holds no step up, and what it did not take is in the
guard's log after the bounded tries. Rows of docs/notifications.md."""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from support.command import ok
from support.stats_scenario import Clock
from support.waiting import until
from tether import guardlog
from tether.errors import TetherError
from tether.verbs import Runtime

SCHEMA = json.loads((Path(__file__).parents[2] / "schema" / "notification.schema.json").read_text())
# A command target: each event's JSON, one per line, appended to the file it names.
RECEIVE = "import sys; open(sys.argv[1], 'ab').write(sys.stdin.buffer.read() + b'\\n')"

TREE = """\
name: sign-off
version: 3
notify:
{targets}
tree:
  type: sequence
  name: Ship
  children:
    - type: action
      name: Build
      steps:
        - instruct: Build it.
    - type: action
      name: Sign_Off
      steps:
        - human: Approve the release of $VAR.version?
          timeout: 2h
          on_timeout: {on_timeout}
    - type: action
      name: Publish
      steps:
        - instruct: Publish it.
state:
  var: {{version: "1.4.0"}}
"""


def _command(out: Path, events: str = "") -> str:
    line = f"  - command: [{json.dumps(sys.executable)}, -c, {json.dumps(RECEIVE)}, {out}]"
    return line + (f"\n    events: [{events}]" if events else "")


def _tree(folder: Path, targets: str, on_timeout: str = "reject") -> str:
    path = folder / "sign-off.yaml"
    path.write_text(TREE.format(targets=targets, on_timeout=on_timeout))
    return str(path)


def _received(out: Path, count: int) -> list[dict[str, Any]]:
    """The events the command target wrote, once `count` have arrived (the sender is detached:
    the test waits for the state it asserts), each checked against the schema."""
    until(lambda: len(_lines(out)) >= count, what=f"{count} events")
    events = [json.loads(line) for line in _lines(out)]
    for event in events:
        jsonschema.validate(event, SCHEMA)
    return events


def _lines(out: Path) -> list[bytes]:
    return out.read_bytes().splitlines() if out.exists() else []


def _walk_to_sign_off(rt: Runtime, tree: str, run: str) -> None:
    rt.start(tree, run)
    rt.submit(run, "success")  # the protocol
    rt.submit(run, "success")  # Build


def test_a_human_step_that_opens_tells_the_person_what_is_asked_and_how_to_answer(
    tmp_path: Path,
) -> None:
    out, run = tmp_path / "events.jsonl", str(tmp_path / "run.json")
    _walk_to_sign_off(Runtime(), _tree(tmp_path, _command(out)), run)
    [event] = _received(out, 1)
    assert event["event"] == "human" and event["tree"] == "sign-off" and event["version"] == "3"
    assert event["execution"] == run and event["uri"].startswith("file://")
    assert event["step"] == "Sign_Off" and "Approve the release of" in event["prompt"]
    assert "1.4.0" in json.dumps(event["shows"])
    assert event["approve"] == f"tether approve {run} --step {event['token']}"
    assert event["reject"] == f"tether reject {run} --step {event['token']}"


def test_a_timeout_and_the_end_it_leads_to_are_told_once_each(tmp_path: Path) -> None:
    out, run = tmp_path / "events.jsonl", str(tmp_path / "run.json")
    clock = Clock("2020-01-01T00:00:00")
    rt = Runtime(clock=clock)
    _walk_to_sign_off(rt, _tree(tmp_path, _command(out), on_timeout="fail"), run)
    clock.wait(3 * 3600)
    assert rt.next(run)["status"] == "failure"
    rt.next(run)  # a second read records nothing more
    # one sender per commit: events of different commits may arrive in any order
    by_event = {e["event"]: e for e in _received(out, 3)}
    assert sorted(by_event) == ["failed", "human", "timeout"]
    timeout, failed = by_event["timeout"], by_event["failed"]
    assert timeout["step"] == "Sign_Off" and timeout["on_timeout"] == "fail"
    assert timeout["since"] == "2020-01-01T03:00:00.000Z"
    assert "timed out" in failed["failure"]
    time.sleep(0.5)  # what a second event would need to arrive, were one sent
    assert len(_received(out, 3)) == 3


def test_a_target_is_told_only_the_events_it_names(tmp_path: Path) -> None:
    out, run = tmp_path / "events.jsonl", "memory://sign-off"  # memory: no person gate
    rt = Runtime()
    _walk_to_sign_off(rt, _tree(tmp_path, _command(out, events="finished")), run)
    rt.approve(run)
    rt.submit(run, "success")  # Publish
    assert rt.next(run)["status"] == "done"
    [event] = _received(out, 1)
    assert event["event"] == "finished" and event["failure"] is None
    time.sleep(0.5)  # what another event would need to arrive, were one sent
    assert len(_received(out, 1)) == 1


def test_a_parked_execution_is_told_with_the_line_that_resumes_it(tmp_path: Path) -> None:
    out, run = tmp_path / "events.jsonl", str(tmp_path / "run.json")
    rt = Runtime()
    rt.start(_tree(tmp_path, _command(out, events="parked")), run)
    rt.submit(run, "success")
    assert rt.stop(run, cap=1)["status"] == "refused"
    assert rt.stop(run, cap=1, park="the agent kept stopping")["status"] == "parked"
    [event] = _received(out, 1)
    assert event["event"] == "parked" and event["step"] == "Build"
    assert event["reason"] == "the agent kept stopping"
    assert event["resume"] == f"tether resume {run}"


def test_tether_notify_in_the_environment_is_told_every_event(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out, run = tmp_path / "events.jsonl", str(tmp_path / "run.json")
    monkeypatch.setenv("TETHER_NOTIFY", f'{sys.executable} -c "{RECEIVE}" {out}')
    monkeypatch.setenv("TETHER_VIEWER_URL", "http://127.0.0.1:8421/")
    tree = tmp_path / "plain.yaml"
    tree.write_text(TREE.replace("notify:\n{targets}\n", "").format(on_timeout="reject"))
    _walk_to_sign_off(Runtime(), str(tree), run)
    [event] = _received(out, 1)
    assert event["event"] == "human" and event["viewer"] == "http://127.0.0.1:8421/?inbox"


class _Receiver:
    """A real HTTP receiver on 127.0.0.1 that holds each POST until `release` is set."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.arrived, self.release = threading.Event(), threading.Event()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.arrived.set()
                receiver.release.wait(60)
                receiver.bodies.append(json.loads(body))
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def receiver() -> Iterator[_Receiver]:
    served = _Receiver()
    yield served
    served.release.set()
    served.server.shutdown()


def test_a_slow_receiver_holds_no_step_up(tmp_path: Path, receiver: _Receiver) -> None:
    run = tmp_path / "run.json"
    tree = _tree(tmp_path, f"  - url: {receiver.url}")
    ok("start", tree, run)
    ok("submit", run, "success")
    ok("submit", run, "success")  # opens the human step: the command ends, the POST still held
    assert receiver.arrived.wait(60), "the event never reached the receiver"
    assert receiver.bodies == []  # still held: the step above ended without waiting for it
    assert ok("next", run)["name"] == "Sign_Off"
    receiver.release.set()
    assert [b["event"] for b in until(lambda: receiver.bodies)] == ["human"]


def test_a_receiver_that_is_down_is_tried_then_logged_in_the_guards_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state, run = tmp_path / "guard-state", str(tmp_path / "run.json")
    monkeypatch.setenv("TETHER_GUARD_STATE", str(state))
    closed = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    url = f"http://127.0.0.1:{closed.server_port}/hook"
    closed.server_close()  # nothing listens there any more
    _walk_to_sign_off(Runtime(), _tree(tmp_path, f"  - url: {url}"), run)
    [error] = until(lambda: guardlog.read_log(str(state), 0), what="the logged failure")
    assert error["code"] == "notify_failed" and error["event"]["event"] == "human"
    assert url in error["message"] and "tried 3 times" in error["message"]


@pytest.mark.parametrize(
    ("target", "says"),
    [
        ("  - {command: x, url: 'http://x'}", "one of 'command' or 'url' at notify[0]"),
        ("  - {url: 'ftp://x'}", "url must be an http:// or https:// URL"),
        ("  - {command: 'a \"b'}", "cannot split the command line"),
        ("  - {command: x, events: [lunch]}", "events must be a non-empty list"),
        ("  - {command: x, on: [human]}", "unknown key"),
    ],
)
def test_a_bad_target_is_refused_saying_where(tmp_path: Path, target: str, says: str) -> None:
    with pytest.raises(TetherError) as refused:
        Runtime().start(_tree(tmp_path, target), str(tmp_path / "run.json"))
    assert refused.value.code == "invalid_tree" and says in refused.value.message
