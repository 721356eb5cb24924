"""One call per step through the real `tether` command, on every store a command line can reach
(a file, and PostgreSQL): each answer's `next`, writes sent with the answer, and refusals that
take those writes with them."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from support.person import at_terminal
from support.trees import SIGN_OFF_YAML
from tether.errors import EXIT_CONFLICT, EXIT_INVALID, EXIT_USAGE

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
TETHER = str(Path(sys.executable).parent / "tether")


def run(*args: str | Path) -> tuple[int, Any, Any]:
    """`tether ARGS` in a process of its own: (exit code, stdout JSON, stderr JSON)."""
    done = subprocess.run(
        [TETHER, *map(str, args)], capture_output=True, text=True, timeout=60, check=False
    )
    out = json.loads(done.stdout) if done.stdout.strip() else None
    err = json.loads(done.stderr) if done.stderr.strip() else None
    return done.returncode, out, err


def ok(*args: str | Path) -> Any:
    code, out, err = run(*args)
    assert code == 0, err
    return out


def refused(exit_code: int, error_code: str, *args: str | Path) -> dict[str, Any]:
    code, out, err = run(*args)
    assert out is None
    assert (code, err["error"]["code"]) == (exit_code, error_code), err
    return dict(err["error"])


@pytest.fixture(params=["file", "postgresql"])
def trace(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where the execution under test lives: a file, or a PostgreSQL execution."""
    if request.param == "file":
        return str(tmp_path / "run.json")
    from support.postgres import shared_server

    return shared_server().uri(f"steps-{uuid.uuid4().hex[:12]}")


# The agent's part of a hello-world morning, keyed by what the request asks.
MORNING = {
    ("instruct", "Acknowledge_Protocol"): ["submit", "success"],
    ("instruct", "Determine_Time"): ["submit", "success", "--set", "time_of_day=morning"],
    ("evaluate", "Morning_Greeting"): ["eval", "true"],
    ("instruct", "Morning_Greeting"): [
        "submit",
        "success",
        "--set-json",
        'greeting="Good morning!"',
    ],
}


def test_hello_world_takes_one_call_per_step_after_start(trace: str) -> None:
    request = ok("start", EXAMPLES / "hello-world.yaml", trace)["current"]
    calls: list[str] = []
    while "step" in request:
        verb, *rest = MORNING[(request["type"], request["name"])]
        response = ok(verb, trace, *rest, "--step", request["step"])
        calls.append(verb)
        if len(calls) == 2:
            assert ok("next", trace) == response["next"], "next says what the answer said"
        request = response["next"]
    assert request == {"status": "done"}
    assert calls == ["submit", "submit", "eval", "submit"], "one call per step, nothing else"
    assert ok("var", trace) == {"time_of_day": "morning", "greeting": "Good morning!"}
    entries = ok("trace", trace)
    writes = [(e["path"], e["cursor"], e["name"]) for e in entries if e["kind"] == "var_write"]
    assert writes == [
        ("time_of_day", {"path": [0], "step": 0}, "Determine_Time"),
        ("greeting", {"path": [1, 0], "step": 1}, "Morning_Greeting"),
    ]
    assert ok("verify", trace)["ok"] is True


def test_writes_sent_with_a_refused_answer_are_not_written(trace: str) -> None:
    gate = ok("start", EXAMPLES / "hello-world.yaml", trace)["current"]
    first = ok("submit", trace, "success", "--step", gate["step"])["next"]
    before = ok("get", trace)

    refused(
        EXIT_CONFLICT,
        "stale_step",
        "submit",
        trace,
        "success",
        "--set",
        "time_of_day=x",
        "--step",
        gate["step"],
    )
    refused(EXIT_CONFLICT, "wrong_phase", "eval", trace, "true", "--set", "time_of_day=x")
    missing = refused(
        EXIT_CONFLICT, "writes_missing", "submit", trace, "success", "--set", "greeting=hello"
    )
    assert missing["missing"] == ["time_of_day"] and missing["current"] == first
    refused(
        EXIT_INVALID,
        "invalid_json",
        "submit",
        trace,
        "success",
        "--set",
        "greeting=hi",
        "--set-json",
        "time_of_day=morning",
    )
    refused(
        EXIT_INVALID,
        "invalid_path",
        "submit",
        trace,
        "success",
        "--set",
        "time_of_day=x",
        "--set",
        "greeting..x=1",
    )
    refused(
        EXIT_USAGE,
        "usage",
        "submit",
        trace,
        "success",
        "--set",
        "time_of_day=a",
        "--set-json",
        'time_of_day="b"',
    )
    refused(EXIT_USAGE, "usage", "submit", trace, "success", "--set", "no-equals-sign")

    after = ok("get", trace)
    assert after == before, "nothing of a refused answer was stored"
    assert after["var"] == {"time_of_day": None, "greeting": None}


def test_a_value_starting_with_a_dash_is_a_value(tmp_path: Path) -> None:
    trace = tmp_path / "run.json"
    ok("start", EXAMPLES / "hello-world.yaml", trace)
    ok("submit", trace, "success")
    response = ok("submit", trace, "success", "--set", "time_of_day=-5", "--note", "-n")
    assert response["status"] == "action_complete"
    assert ok("var", trace, "time_of_day") == -5


def test_a_human_step_is_refused_to_the_agent_and_approved_from_the_cli(
    trace: str, tmp_path: Path
) -> None:
    tree = tmp_path / "sign-off.yaml"
    tree.write_text(SIGN_OFF_YAML)
    ok("start", tree, trace)
    refused(EXIT_CONFLICT, "wrong_phase", "approve", trace)
    ok("submit", trace, "success")
    human = ok("submit", trace, "success", "--set", "notes=faster builds")["next"]
    assert (human["type"], human["name"]) == ("human", "Sign_Off")
    assert human["prompt"] == "Read the release notes. Approve to publish."
    before = ok("get", trace)
    for answer in (["submit", "success"], ["eval", "true"], ["submit", "failure"]):
        error = refused(EXIT_CONFLICT, "human_only", answer[0], trace, *answer[1:])
        assert error["current"] == human
    refused(EXIT_CONFLICT, "human_only", "submit", trace, "success", "--set", "notes=x")
    assert ok("get", trace) == before
    answered = at_terminal(["approve", trace, "--note", "-ship it-", "--step", human["step"]])
    approved = json.loads(answered.stdout)
    assert approved["status"] == "approved" and approved["next"]["name"] == "Lint"
    refused(EXIT_CONFLICT, "wrong_phase", "reject", trace)
    entry = ok("trace", trace)[-1]
    assert (entry["kind"], entry["outcome"], entry["note"], entry["by"]) == (
        "human",
        "success",
        "-ship it-",
        "cli",
    )
    assert ok("submit", trace, "success")["next"] == {"status": "done"}
    assert ok("verify", trace)["ok"] is True


def test_reject_fails_the_action(tmp_path: Path) -> None:
    tree, trace = tmp_path / "sign-off.yaml", tmp_path / "run.json"
    tree.write_text(SIGN_OFF_YAML)
    ok("start", tree, trace)
    ok("submit", trace, "success")
    ok("submit", trace, "success", "--set", "notes=n")
    rejected = json.loads(at_terminal(["reject", str(trace), "--note", "not yet"]).stdout)
    assert rejected["status"] == "rejected" and rejected["next"]["status"] == "failure"
    assert ok("verify", trace)["ok"] is True


def test_fork_from_the_command_line_leaves_the_original_alone(tmp_path: Path) -> None:
    from support.postgres import shared_server

    trace = tmp_path / "run.json"
    ok("start", EXAMPLES / "hello-world.yaml", trace)
    ok("submit", trace, "success")
    at = len(ok("trace", trace))
    ok("submit", trace, "success", "--set", "time_of_day=evening")
    # The original's own files (the folder's index gains the fork's line, as it should).
    files = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("run.json")}

    database = shared_server().uri(f"fork-{uuid.uuid4().hex[:12]}")
    forked = ok("fork", trace, database, "--at", str(at))
    assert forked["forked_from"] == {"uri": "file://" + str(trace), "at": at}
    assert forked["next"]["name"] == "Determine_Time"
    assert ok("next", database) == forked["next"]
    ok("submit", database, "success", "--set", "time_of_day=morning")
    assert ok("verify", database)["ok"] is True
    back = tmp_path / "back.json"
    ok("fork", database, back, "--at", str(len(ok("trace", database))))
    assert ok("var", back, "time_of_day") == "morning"
    assert ok("verify", back)["ok"] is True

    refused(EXIT_CONFLICT, "already_exists", "fork", trace, back, "--at", "0")
    refused(EXIT_INVALID, "invalid_value", "fork", trace, tmp_path / "x.json", "--at", "99")
    refused(EXIT_INVALID, "invalid_value", "fork", trace, tmp_path / "x.json", "--at", "-1")
    refused(EXIT_USAGE, "usage", "fork", trace, tmp_path / "x.json")
    refused(EXIT_USAGE, "usage", "fork", trace, tmp_path / "x.json", "--at", "two")
    assert not (tmp_path / "x.json").exists()
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.name in files} == files
