"""Notifications: what a person's targets (the guard's configuration, `workflow.notify`, and
`TETHER_NOTIFY`) are told, by a real detached sender, of a human step that opens, a park, a
timeout and an execution's end; a receiver on 127.0.0.1 that is slow or down holds no step up,
and what it did not take is in the guard's log after the bounded tries; a tree cannot name a
target. Rows of docs/inbox.md ("Being told")."""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from support.command import ok
from support.stats_scenario import Clock
from support.waiting import until
from tether import guardlog, notify
from tether.errors import TetherError
from tether.guard.rules.config import plan_from_file
from tether.verbs import Runtime

SCHEMA = json.loads((Path(__file__).parents[2] / "schema" / "notification.schema.json").read_text())
# A command target: each event's JSON, one per line, appended to the file it names.
RECEIVE = "import sys; open(sys.argv[1], 'ab').write(sys.stdin.buffer.read() + b'\\n')"

TREE = """\
name: sign-off
version: 3
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


def _command(out: Path, *events: str) -> dict[str, Any]:
    target: dict[str, Any] = {"command": [sys.executable, "-c", RECEIVE, str(out)]}
    return target | ({"events": list(events)} if events else {"events": list(notify.EVENTS)})


def _tree(folder: Path, on_timeout: str = "reject") -> str:
    path = folder / "sign-off.yaml"
    path.write_text(TREE.format(on_timeout=on_timeout))
    return str(path)


def _lines(out: Path) -> list[bytes]:
    return out.read_bytes().splitlines() if out.exists() else []


def _received(out: Path, count: int) -> list[dict[str, Any]]:
    """The events the command target wrote, once `count` have arrived (the sender is detached:
    the test waits for the state it asserts), each checked against the schema."""
    until(lambda: len(_lines(out)) >= count, what=f"{count} events")
    events = [json.loads(line) for line in _lines(out)]
    for event in events:
        jsonschema.validate(event, SCHEMA)
    return events


def _walk_to_sign_off(rt: Runtime, tree: str, run: str) -> None:
    rt.start(tree, run)
    rt.submit(run, "success")  # the protocol
    rt.submit(run, "success")  # Build


def test_a_human_step_that_opens_tells_the_person_what_is_asked_and_how_to_answer(
    tmp_path: Path,
) -> None:
    out, run = tmp_path / "events.jsonl", str(tmp_path / "run.json")
    _walk_to_sign_off(Runtime(notify=[_command(out)]), _tree(tmp_path), run)
    [event] = _received(out, 1)
    assert event["event"] == "human" and event["tree"] == "sign-off" and event["version"] == "3"
    assert event["execution"] == run and event["uri"].startswith("file://")
    assert event["step"] == "Sign_Off" and "Approve the release of" in event["prompt"]
    assert "1.4.0" in json.dumps(event["shows"])
    assert event["approve"] == f"tether approve {run} --step {event['token']}"
    assert event["reject"] == f"tether reject {run} --step {event['token']}"


def test_each_commit_raises_its_events_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A timeout read twice is told once; the failure it leads to is told; the sender gets each
    commit's events as they were raised (no time waited: the hand-over is what is watched)."""
    sent: list[list[str]] = []
    monkeypatch.setattr(
        notify, "send", lambda pairs, log: sent.append([p["event"]["event"] for p in pairs])
    )
    clock = Clock("2020-01-01T00:00:00")
    rt = Runtime(clock=clock, notify=[_command(tmp_path / "unused")])
    run = str(tmp_path / "run.json")
    _walk_to_sign_off(rt, _tree(tmp_path, on_timeout="fail"), run)
    clock.wait(3 * 3600)
    assert rt.next(run)["status"] == "failure"
    rt.next(run)  # a second read records nothing, raises nothing
    told = [names for names in sent if names]
    assert told == [["human"], ["timeout", "failed"]]


def test_a_target_is_told_only_the_events_it_names(tmp_path: Path) -> None:
    finished = _command(tmp_path / "x", "finished")
    events = [{"event": "human", "uri": "u"}, {"event": "finished", "uri": "u"}]
    pairs = notify.jobs([finished], {"name": "t", "version": "1"}, events)
    assert [p["event"]["event"] for p in pairs] == ["finished"]


def test_a_parked_execution_is_told_with_the_line_that_resumes_it(tmp_path: Path) -> None:
    out, run = tmp_path / "events.jsonl", str(tmp_path / "run.json")
    rt = Runtime(notify=[_command(out, "parked")])
    rt.start(_tree(tmp_path), run)
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
    out, run = tmp_path / "events.jsonl", tmp_path / "run.json"
    monkeypatch.setenv("TETHER_NOTIFY", f'{sys.executable} -c "{RECEIVE}" {out}')
    monkeypatch.setenv("TETHER_VIEWER_URL", "http://127.0.0.1:8421/")
    ok("start", _tree(tmp_path), run)  # the real command, in a process of its own
    ok("submit", run, "success")
    ok("submit", run, "success")
    [event] = _received(out, 1)
    assert event["event"] == "human" and event["viewer"] == "http://127.0.0.1:8421/?inbox"


def test_a_memory_execution_tells_no_one_and_a_bad_environment_loses_no_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = tmp_path / "guard-state"
    monkeypatch.setenv("TETHER_GUARD_STATE", str(state))
    sent: list[object] = []
    monkeypatch.setattr(notify, "send", lambda pairs, log: sent.append(pairs))
    _walk_to_sign_off(Runtime(notify=[_command(tmp_path / "x")]), _tree(tmp_path), "memory://n")
    assert sent == []  # the calling process's own executions (tree tests, replays)
    monkeypatch.setenv("TETHER_NOTIFY", 'echo "unclosed')
    run = str(tmp_path / "run.json")
    _walk_to_sign_off(Runtime(), _tree(tmp_path), run)
    assert Runtime().next(run)["name"] == "Sign_Off"  # the answer stands
    errors = guardlog.read_log(str(state), 0)  # one a commit
    assert errors and all(e["code"] == "notify_failed" for e in errors)
    assert all("TETHER_NOTIFY cannot be split" in e["message"] for e in errors)


def test_the_guard_configuration_names_targets_and_a_bad_one_is_refused_saying_where(
    tmp_path: Path,
) -> None:
    config = tmp_path / "guard.yaml"
    config.write_text(
        "workflow:\n  notify:\n    - command: notify-send Tether\n      events: [human]\n"
        "    - url: https://hooks.example/t/${TOKEN}\n"
    )
    workflow = plan_from_file(config)[0]["workflow"]
    commands = [t["command"] for t in workflow["notify"] if t["command"]]
    assert commands == [["notify-send", "Tether"]]
    assert workflow["notify"][1]["events"] == list(notify.EVENTS)
    for target, says in [
        ("{command: x, url: 'http://x'}", "one of command or url"),
        ("{url: 'ftp://x'}", "url"),
        ("{command: 'a \"b'}", "cannot split the command line"),
        ("{command: x, events: [lunch]}", "events"),
        ("{command: x, on: [human]}", "on"),
    ]:
        config.write_text(f"workflow:\n  notify:\n    - {target}\n")
        with pytest.raises(TetherError) as refused:
            plan_from_file(config)
        assert "notify" in refused.value.message and says in refused.value.message, target


def test_a_tree_cannot_name_a_target(tmp_path: Path) -> None:
    """A tree is what an agent may write: a target in it would run a command outside the agent's
    sandbox (in the guard's hook)."""
    path = tmp_path / "t.yaml"
    path.write_text(
        TREE.format(on_timeout="reject").replace("version: 3\n", "version: 3\nnotify: []\n")
    )
    with pytest.raises(TetherError) as refused:
        Runtime().start(str(path), str(tmp_path / "run.json"))
    assert refused.value.code == "invalid_tree" and "notify" in refused.value.message


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


def test_a_slow_receiver_holds_no_step_up(
    tmp_path: Path, receiver: _Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = tmp_path / "run.json"
    monkeypatch.setenv("TETHER_NOTIFY", receiver.url)
    ok("start", _tree(tmp_path), run)
    ok("submit", run, "success")
    ok("submit", run, "success")  # opens the human step: the command ends, the POST still held
    assert receiver.arrived.wait(60), "the event never reached the receiver"
    assert receiver.bodies == []  # still held: the step above ended without waiting for it
    assert ok("next", run)["name"] == "Sign_Off"
    receiver.release.set()
    assert [b["event"] for b in until(lambda: receiver.bodies)] == ["human"]


def test_a_receiver_that_is_down_is_tried_then_logged_in_the_guards_log(tmp_path: Path) -> None:
    state, run = tmp_path / "guard-state", str(tmp_path / "run.json")
    closed = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    url = f"http://127.0.0.1:{closed.server_port}/hook"
    closed.server_close()  # nothing listens there any more
    rt = Runtime(notify=[{"url": url, "events": ["human"]}], log=str(state))
    _walk_to_sign_off(rt, _tree(tmp_path), run)
    [error] = until(lambda: guardlog.read_log(str(state), 0), what="the logged failure")
    assert error["code"] == "notify_failed" and error["event"]["event"] == "human"
    assert url in error["message"] and "tried 3 times" in error["message"]
