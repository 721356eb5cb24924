"""Executions of known outcomes for the `tether stats` tests, driven through the real verbs (and,
for a bound session, the real `tether guard hook`), on a clock the test moves, so that every
figure is known in advance (`EXPECTED`). `drive(place, project)` writes them into a folder, a
database or `memory://`; the file store's and PostgreSQL's tests assert the same figures.

The `release` tree: Build (retries: 2; a check that it built), Review (a `tools` policy; an
evaluate), Sign_Off (a human step), Close_Out (writes notes; a check on them). Executions:

- a: complete, nothing refused (answers after 10, 5, 100 (a person), 20 s);
- b: failed at Build: a failure, a refused success without its write, then two answers whose
  check fails (retries used up);
- c: running at Review, bound to a session whose Write the policy denies, whose stop is refused
  and whose Read is recorded; then a stale answer to Build;
- d: failed: the agent's submit to Sign_Off refused (human_only), then the person rejects;
- e: complete after two refused closes of Close_Out (its write missing; its check false);
- f: running: a refused answer, then a reset (what came before it is not counted);
- g: the `tiny` tree, complete.
"""

from __future__ import annotations

import calendar
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tether.errors import TetherError
from tether.verbs import Runtime

RELEASE = """\
name: release
version: "2.1"
tree:
  type: sequence
  name: Release
  children:
    - type: action
      name: Build
      retries: 2
      steps:
        - instruct: Build it and store whether it built at $VAR.built.
          writes: [built]
        - check: $VAR.built == true
    - type: action
      name: Review
      tools: {allow: [Read, Grep], deny: [Write, Edit]}
      steps:
        - evaluate: Is the diff small?
    - type: action
      name: Sign_Off
      steps:
        - human: Ship it?
    - type: action
      name: Close_Out
      steps:
        - instruct: Write the release notes at $VAR.notes.
          writes: [notes]
        - check: size($VAR.notes) > 3
"""

TINY = """\
name: tiny
tree:
  type: action
  name: Only
  steps:
    - instruct: Do the one thing.
"""

BUILD_CHECK = "$VAR.built == true"
NOTES_CHECK = "size($VAR.notes) > 3"
SESSION = "5b0e8a53-6c1d-4f0a-9d8e-1c2b3a4d5e6f"


class Clock:
    """The verbs' clock: a fixed instant that the scenario moves on by hand."""

    def __init__(self, start: str = "2026-03-02T09:00:00") -> None:
        self.ms = calendar.timegm(time.strptime(start, "%Y-%m-%dT%H:%M:%S")) * 1000

    def __call__(self) -> str:
        whole, ms = divmod(self.ms, 1000)
        return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)) + f".{ms:03d}Z"

    def wait(self, seconds: float) -> None:
        self.ms += round(seconds * 1000)


def refused(call: Any, code: str) -> None:
    """Run `call`, which the runtime must refuse with `code`."""
    try:
        call()
    except TetherError as exc:
        assert exc.code == code, exc.to_dict()
    else:
        raise AssertionError(f"not refused ({code} expected)")


def hook(project: Path, event: str, **fields: Any) -> dict[str, Any] | None:
    """`tether guard hook` as Claude Code runs it, for the scenario's session."""
    payload = {
        "session_id": SESSION,
        "transcript_path": str(project / ".claude" / "transcript.jsonl"),
        "cwd": str(project),
        "permission_mode": "default",
        "hook_event_name": event,
        **fields,
    }
    state = str(project / ".state")
    done = subprocess.run(
        [sys.executable, "-m", "tether.cli.main", "guard", "hook", "--state-dir", state],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        cwd=project,
        env={**os.environ, "CLAUDE_PROJECT_DIR": str(project)},
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout) if done.stdout.strip() else None


def drive(place: str, project: Path) -> dict[str, str]:
    """Write the scenario's executions into `place` (a folder, `memory://` or a database URI
    without `#name`); `project` holds the tree files and the bound session's guard
    configuration. Returns the executions' URIs by letter."""
    project.mkdir(parents=True, exist_ok=True)
    (project / "release.yaml").write_text(RELEASE)
    (project / "tiny.yaml").write_text(TINY)
    release, tiny = str(project / "release.yaml"), str(project / "tiny.yaml")
    clock = Clock()
    rt = Runtime(clock=clock)
    sep = "#" if place.startswith("postgresql") else "/"
    uris = {}

    def begin(letter: str, tree: str = release) -> str:
        clock.wait(1000)
        uri = str(rt.start(tree, f"{place.rstrip('/')}{sep}{letter}.json")["uri"])
        uris[letter] = uri
        clock.wait(1)
        rt.submit(uri, "success")
        return uri

    def build(uri: str) -> None:
        clock.wait(10)
        rt.submit(uri, "success", values={"built": True})

    uri = begin("a")
    build(uri)
    clock.wait(5)
    rt.eval(uri, True)
    clock.wait(100)
    rt.approve(uri)
    clock.wait(20)
    assert rt.submit(uri, "success", values={"notes": "shipped"})["next"] == {"status": "done"}

    uri = begin("b")
    clock.wait(10)
    rt.submit(uri, "failure")
    clock.wait(1)
    refused(lambda: rt.submit(uri, "success"), "writes_missing")
    for _ in range(2):
        clock.wait(10)
        rt.submit(uri, "success", values={"built": False})
    assert rt.next(uri) == {"status": "failure"}

    uri = begin("c")
    stale = rt.next(uri)["step"]
    build(uri)
    if place.startswith("memory:"):  # a hook runs in a process of its own: the verbs it calls
        rt.deny_tool(uri, "Write", {"file_path": "app.py"}, reason="the policy denies Write")
        assert rt.stop(uri, cap=3)["status"] == "refused"
        rt.record_tool(uri, "Read", {"file_path": "app.py"}, ok=True)
    else:
        _bound_session(project, uri)
    clock.wait(1)
    refused(lambda: rt.submit(uri, "success", step=stale), "stale_step")

    uri = begin("d")
    build(uri)
    clock.wait(5)
    rt.eval(uri, True)
    clock.wait(1)
    refused(lambda: rt.submit(uri, "success"), "human_only")
    clock.wait(50)
    rt.reject(uri)

    uri = begin("e")
    build(uri)
    clock.wait(5)
    rt.eval(uri, True)
    clock.wait(30)
    rt.approve(uri)
    clock.wait(1)
    refused(lambda: rt.close(uri), "writes_missing")
    clock.wait(1)
    rt.var_write(uri, "notes", "ok")
    clock.wait(1)
    refused(lambda: rt.close(uri), "check_failed")
    clock.wait(10)
    rt.submit(uri, "success", values={"notes": "shipped"})

    uri = begin("f")
    clock.wait(1)
    refused(lambda: rt.submit(uri, "success"), "writes_missing")
    clock.wait(1)
    rt.reset(uri)
    clock.wait(1)
    rt.submit(uri, "success")

    uri = begin("g", tiny)
    clock.wait(3)
    rt.submit(uri, "success")
    return uris


def drive_forks(place: str, project: Path) -> dict[str, str]:
    """Forks after failures, into `place`, of the `release` tree named `forks`: `a` fails Build
    once (10 s after its request) and is left with the retry open; `b`, forked from `a` after
    that failure, fails Build again (20 s after it was forked: a fork's step was requested when
    it was made), then passes it (30 s); `c`, forked from `b` at the point after its failure,
    fails Build a third time in a row (40 s), which uses up its two retries; then an answer to
    the failed `c`, refused and aimed at no step. Every failure happened once: Build has 5
    attempts, 3 failures, 2 retries used."""
    project.mkdir(parents=True, exist_ok=True)
    (project / "release.yaml").write_text(RELEASE.replace("name: release", "name: forks", 1))
    clock = Clock()
    rt = Runtime(clock=clock)
    sep = "#" if place.startswith("postgresql") else "/"
    uris = {letter: f"{place.rstrip('/')}{sep}fork-{letter}.json" for letter in "abc"}
    rt.start(str(project / "release.yaml"), uris["a"])
    clock.wait(1)
    rt.submit(uris["a"], "success")
    clock.wait(10)
    rt.submit(uris["a"], "failure")
    clock.wait(100)
    rt.fork(uris["a"], uris["b"], at=len(rt.trace(uris["a"])))
    clock.wait(20)
    rt.submit(uris["b"], "failure")
    failed = len(rt.trace(uris["b"]))
    clock.wait(30)
    rt.submit(uris["b"], "success", values={"built": True})
    clock.wait(50)
    rt.fork(uris["b"], uris["c"], at=failed)
    clock.wait(40)
    rt.submit(uris["c"], "failure")
    assert rt.next(uris["c"]) == {"status": "failure"}
    clock.wait(1)
    refused(lambda: rt.submit(uris["c"], "success"), "execution_finished")
    return uris


def _bound_session(project: Path, uri: str) -> None:
    """A Claude Code session bound to `uri`: its Write denied, its stop refused, its Read
    recorded, each through the real hook."""
    (project / ".tether").mkdir(exist_ok=True)
    (project / ".tether" / "guard.yaml").write_text(f"workflow:\n  trace: {json.dumps(uri)}\n")
    hook(project, "UserPromptSubmit", prompt="Review the change.")
    write = {"file_path": str(project / "app.py"), "content": "x"}
    denied = hook(project, "PreToolUse", tool_name="Write", tool_input=write, tool_use_id="t1")
    assert denied is not None
    assert denied["hookSpecificOutput"]["permissionDecision"] == "deny", denied
    stop = hook(project, "Stop", stop_hook_active=False, last_assistant_message="Done.")
    assert stop is not None and stop["decision"] == "block", stop
    read = {"file_path": str(project / "app.py")}
    hook(
        project,
        "PostToolUse",
        tool_name="Read",
        tool_input=read,
        tool_response={},
        tool_use_id="t2",
    )


def _spread(count: int, median: float | None, p90: float | None) -> dict[str, Any]:
    return {"count": count, "median": median, "p90": p90}


NONE = _spread(0, None, None)


def _action(path: list[int], name: str, **figures: Any) -> dict[str, Any]:
    base = {
        "path": path,
        "name": name,
        "reached": 0,
        "attempts": 0,
        "failures": 0,
        "retries": 0,
        "refused": {},
        "answer_time": NONE,
        "stops_refused": 0,
        "tools_denied": 0,
        "tools_recorded": 0,
        "human_wait": NONE,
    }
    return {**base, **figures}


# The figures of `release` and `tiny` in `drive`'s executions (their hashes aside).
EXPECTED_RELEASE: dict[str, Any] = {
    "name": "release",
    "version": "2.1",
    "executions": {"running": 2, "complete": 2, "failed": 2, "total": 6},
    # a 136 s, b 32 s, d 67 s, e 59 s
    "time_to_finish": _spread(4, 63.0, 115.3),
    "refused": {"writes_missing": 2, "check_failed": 1, "human_only": 1, "stale_step": 1},
    "refused_no_step": {},
    "actions": [
        # seven answers (10 s each but b's second, 11 s after the first: its refused answer
        # is not in the trace); b's three failures, two of them retried; f's open attempt
        _action(
            [0],
            "Build",
            reached=6,
            attempts=8,
            failures=3,
            retries=2,
            refused={"stale_step": 1, "writes_missing": 1},
            answer_time=_spread(7, 10.0, 10.4),
        ),
        # c's bound session: its Write denied, its stop refused, its Read recorded
        _action(
            [1],
            "Review",
            reached=4,
            attempts=4,
            answer_time=_spread(3, 5.0, 5.0),
            stops_refused=1,
            tools_denied=1,
            tools_recorded=1,
        ),
        # waits of 100 s (a), 51 s (d, rejected), 30 s (e)
        _action(
            [2],
            "Sign_Off",
            reached=3,
            attempts=3,
            failures=1,
            refused={"human_only": 1},
            human_wait=_spread(3, 51.0, 90.2),
        ),
        _action(
            [3],
            "Close_Out",
            reached=2,
            attempts=2,
            refused={"check_failed": 1, "writes_missing": 1},
            answer_time=_spread(2, 16.5, 19.3),
        ),
    ],
    "checks": [
        {
            "path": [0],
            "action": "Build",
            "step": 1,
            "expression": BUILD_CHECK,
            "failed": 2,
            "refused": 0,
            "total": 2,
        },
        {
            "path": [3],
            "action": "Close_Out",
            "step": 1,
            "expression": NOTES_CHECK,
            "failed": 0,
            "refused": 1,
            "total": 1,
        },
    ],
    "agents": [],
}

EXPECTED_TINY: dict[str, Any] = {
    "name": "tiny",
    "version": None,
    "executions": {"running": 0, "complete": 1, "failed": 0, "total": 1},
    "time_to_finish": _spread(1, 4.0, 4.0),
    "refused": {},
    "refused_no_step": {},
    "actions": [_action([], "Only", reached=1, attempts=1, answer_time=_spread(1, 3.0, 3.0))],
    "checks": [],
    "agents": [],
}


def without_hashes(figures: dict[str, Any]) -> list[dict[str, Any]]:
    """The trees of `figures`, each without its hash (which the tree files' text decides)."""
    return [{k: v for k, v in tree.items() if k != "hash"} for tree in figures["trees"]]


# The figures of `forks` in `drive_forks`' executions: every failure once, in the execution
# it happened in; the refused answer to the failed `c` aimed at no step.
EXPECTED_FORKS: dict[str, Any] = {
    "name": "forks",
    "version": "2.1",
    "executions": {"running": 2, "complete": 0, "failed": 1, "total": 3},
    "time_to_finish": _spread(1, 40.0, 40.0),  # c, from its fork
    "refused": {"execution_finished": 1},
    "refused_no_step": {"execution_finished": 1},
    "actions": [
        # a: a failure and the retry open; b: a failure (its run goes on from a's: retried)
        # and a pass; c: a third failure in a row (retries used up)
        _action(
            [0],
            "Build",
            reached=3,
            attempts=5,
            failures=3,
            retries=2,
            answer_time=_spread(4, 25.0, 37.0),
        ),
        _action([1], "Review", reached=1, attempts=1),
        _action([2], "Sign_Off"),
        _action([3], "Close_Out"),
    ],
    "checks": [],
    "agents": [],
}


TIMED = """\
name: timed
version: 1
tree:
  type: action
  name: Sign_Off
  retries: 1
  steps:
    - human: Ship it?
      timeout: 1h
"""


def drive_timeouts(place: str, project: Path) -> str:
    """A human step that times out twice, into `place`: its action retries once (the first
    timeout, 1 h after the step opened) and fails at the second, failing the execution. Sign_Off
    has 2 attempts, 2 failures, 1 retry used; no person's wait was recorded."""
    project.mkdir(parents=True, exist_ok=True)
    (project / "timed.yaml").write_text(TIMED)
    clock = Clock()
    rt = Runtime(clock=clock)
    sep = "#" if place.startswith("postgresql") else "/"
    uri = f"{place.rstrip('/')}{sep}timed.json"
    rt.start(str(project / "timed.yaml"), uri)
    rt.submit(uri, "success")
    for _ in range(2):
        clock.wait(2 * 3600)
        rt.next(uri)
    assert rt.next(uri) == {"status": "failure"}
    return uri


TEAM = """\
name: stats-team
tree:
  type: sequence
  name: Root
  children:
    - type: action
      name: Plan
      steps: [{instruct: List the files., writes: [files]}]
    - type: action
      name: Fix
      for_each: {in: VAR.files, as: file, parallel: true}
      steps: [{instruct: Fix the file.}]
"""


def drive_team(place: str, project: Path) -> str:
    """A team on two items of a fanned-out loop, into `place`: the lead plans; alice claims
    a.py (and again) and lets her lease lapse; carol's answer to it and her claim are refused
    (`claimed`) until she takes it over and fixes it; bob claims b.py and fails it."""
    project.mkdir(parents=True, exist_ok=True)
    (project / "team.yaml").write_text(TEAM)
    clock = Clock()
    rt = Runtime(clock=clock)
    sep = "#" if place.startswith("postgresql") else "/"
    run = str(rt.start(str(project / "team.yaml"), f"{place.rstrip('/')}{sep}team.json")["uri"])
    rt.submit(run, "success")
    rt.submit(run, "success", values={"files": ["a.py", "b.py"]}, agent="lead")
    steps = {r["item"]["value"]: str(r["step"]) for r in rt.next(run, all=True)}
    rt.claim(run, "alice", step=steps["a.py"], lease=60)
    rt.claim(run, "alice", step=steps["a.py"], lease=60)
    rt.claim(run, "bob", step=steps["b.py"], lease=60)
    refused(lambda: rt.submit(run, "success", step=steps["a.py"], agent="carol"), "claimed")
    refused(lambda: rt.claim(run, "carol", step=steps["a.py"]), "claimed")
    clock.wait(61)
    rt.claim(run, "carol", step=steps["a.py"], lease=60)
    rt.submit(run, "success", step=steps["a.py"], agent="carol")
    rt.submit(run, "failure", step=steps["b.py"], agent="bob")
    return run


_NO_FIGURES: dict[str, Any] = {"answers": 0, "attempts": 0, "failures": 0, "claims": 0}
_NO_FIGURES |= {"renewals": 0, "takeovers": 0, "lapsed": 0, "refused": {}}
# The agents of `drive_team`'s execution: alice claimed, renewed and lapsed; bob answered and
# failed; carol was refused twice, took over and answered; the lead planned.
EXPECTED_TEAM_AGENTS: list[dict[str, Any]] = [
    {**_NO_FIGURES, "agent": "alice", "claims": 1, "renewals": 1, "lapsed": 1},
    {**_NO_FIGURES, "agent": "bob", "answers": 1, "attempts": 1, "failures": 1, "claims": 1},
    {
        **_NO_FIGURES,
        "agent": "carol",
        "answers": 1,
        "attempts": 1,
        "takeovers": 1,
        "refused": {"claimed": 2},
    },
    {**_NO_FIGURES, "agent": "lead", "answers": 1, "attempts": 1},
]
