"""A human step's timeout through the real `tether` command, on the real clock: `next` shows the
deadline; long past it (the execution written by a runtime whose clock the test set in 2020),
`next` records the timeout and the tree goes on, `verify` agrees, and a person's `approve` at a
real terminal is refused with `timed_out`; a bad `timeout` in a tree file is refused saying
where. Rows of docs/semantics.md ("Timeouts")."""

from __future__ import annotations

import json
from pathlib import Path

from support.command import ok, refused
from support.person import at_terminal
from support.stats_scenario import Clock
from tether.verbs import Runtime

TREE = """\
name: sign-off
version: 1
tree:
  type: selector
  name: Ship
  children:
    - type: action
      name: Sign_Off
      steps:
        - human: Approve the release?
          timeout: 2h
    - type: action
      name: Escalate
      steps:
        - instruct: Nobody signed off in time; ask in the release channel.
"""


def _tree(folder: Path, text: str = TREE) -> Path:
    (folder / "sign-off.yaml").write_text(text)
    return folder / "sign-off.yaml"


def test_next_shows_the_deadline_of_a_human_step(tmp_path: Path) -> None:
    run = tmp_path / "run.json"
    ok("start", _tree(tmp_path), run)
    accepted = ok("submit", run, "success")
    human = ok("next", run)
    assert human == accepted["next"] and human["on_timeout"] == "reject"
    opened = Runtime().trace(str(run))[-1]["ts"]
    assert human["deadline"] > opened and human["deadline"][:4] == opened[:4]
    assert [e["kind"] for e in Runtime().trace(str(run))] == ["protocol"]


def test_long_past_the_deadline_next_records_the_timeout_and_approve_is_refused(
    tmp_path: Path,
) -> None:
    run = str(tmp_path / "run.json")
    rt = Runtime(clock=Clock("2020-01-01T00:00:00"))
    rt.start(str(_tree(tmp_path)), run)
    human = rt.submit(run, "success")["next"]
    assert human["deadline"] == "2020-01-01T02:00:00.000Z"
    assert ok("next", run)["name"] == "Escalate"
    (entry,) = [e for e in ok("trace", run) if e["kind"] == "timeout"]
    assert (entry["step"], entry["on_timeout"], entry["outcome"]) == (
        human["step"],
        "reject",
        "failure",
    )
    assert ok("verify", run)["ok"] is True
    answered = at_terminal(["approve", run, "--step", human["step"]])
    assert answered.returncode == 5 and answered.stdout == ""
    error = json.loads(answered.stderr)["error"]
    assert error["code"] == "timed_out"
    assert error["message"].startswith("human step 'Sign_Off' timed out at 2020-01-01T02:00:00")
    assert "Type" not in answered.terminal  # never asked: there is nothing left to confirm
    answered = at_terminal(["approve", run])
    assert json.loads(answered.stderr)["error"]["code"] == "timed_out"
    assert ok("next", run)["name"] == "Escalate"
    assert len([e for e in ok("trace", run) if e["kind"] == "timeout"]) == 1


def test_a_bad_timeout_is_refused_with_the_file_line_and_node_path(tmp_path: Path) -> None:
    bad = _tree(tmp_path, TREE.replace("timeout: 2h", "timeout: 2 hours"))
    error = refused(3, "invalid_tree", "start", bad, tmp_path / "run.json")
    assert "sign-off.yaml:11:20: timeout must be a duration such as 30m, 4h" in error["message"]
    assert "got string '2 hours' at tree.children[0].steps[0].timeout" in error["message"]
    assert not (tmp_path / "run.json").exists()
    never = _tree(tmp_path, TREE.replace("timeout: 2h", "on_timeout: fail"))
    error = refused(3, "invalid_tree", "start", never, tmp_path / "run.json")
    assert "on_timeout needs a timeout at tree.children[0].steps[0].on_timeout" in error["message"]
