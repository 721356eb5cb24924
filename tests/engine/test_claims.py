"""Claims: two agents on one execution, each holding its own branch of a `parallel` node (or
item of a `for_each`). A claimed action takes its holder's answers only; a claim renews, lapses
and is taken over, each a `claim` entry; `verify` re-derives the whole team's walk. Rows of
docs/semantics.md ("Claims") and docs/teams.md."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from support.stats_scenario import Clock
from tether.errors import TetherError
from tether.verbs import Runtime

TEAM: dict[str, Any] = {
    "name": "team",
    "tree": {
        "type": "sequence",
        "name": "Release",
        "children": [
            {
                "type": "parallel",
                "name": "Both",
                "children": [
                    {
                        "type": "action",
                        "name": "Docs",
                        "steps": [{"instruct": "Write the docs."}, {"instruct": "Proofread."}],
                    },
                    {"type": "action", "name": "Code", "steps": [{"instruct": "Write the code."}]},
                ],
            },
            {"type": "action", "name": "Ship", "steps": [{"instruct": "Ship it."}]},
        ],
    },
}
ITEMS: dict[str, Any] = {
    "name": "items",
    "state": {"var": {"files": ["a.py", "b.py"]}},
    "tree": {
        "type": "action",
        "name": "Fix",
        "for_each": {"in": "$VAR.files", "as": "file"},
        "steps": [{"instruct": "Fix {{file}}."}],
    },
}


def _started(tmp_path: Path, tree: dict[str, Any]) -> tuple[Runtime, Clock, str]:
    path = tmp_path / "tree.json"
    path.write_text(json.dumps(tree))
    clock = Clock("2026-01-01T09:00:00")
    rt = Runtime(clock=clock)
    run = f"memory://claims-{tmp_path.name}"
    rt.start(str(path), run)
    rt.submit(run, "success")  # the protocol
    return rt, clock, run


def _token(rt: Runtime, run: str, name: str) -> str:
    return next(str(r["step"]) for r in rt.next(run, all=True) if r["name"] == name)


def _refused(call: object, code: str) -> TetherError:
    with pytest.raises(TetherError) as refused:
        call()  # type: ignore[operator]
    assert refused.value.code == code, refused.value.to_dict()
    return refused.value


def test_a_claimed_branch_takes_its_holders_answers_only(tmp_path: Path) -> None:
    rt, _, run = _started(tmp_path, TEAM)
    docs = _token(rt, run, "Docs")
    held = rt.claim(run, "alice", step=docs, lease=600)
    assert (held["status"], held["until"]) == ("claimed", "2026-01-01T09:10:00.000Z")
    for agent in ("bob", None):
        error = _refused(lambda a=agent: rt.submit(run, "success", step=docs, agent=a), "claimed")
        assert error.details["holder"] == "alice" and "alice" in error.message
    code = _token(rt, run, "Code")
    rt.submit(run, "success", step=code, agent="bob")  # an unclaimed branch: anyone answers
    rt.submit(run, "success", step=docs, agent="alice")
    entries = rt.trace(run)
    assert [(e["name"], e.get("agent")) for e in entries if e["kind"] == "instruct"] == [
        ("Code", "bob"),
        ("Docs", "alice"),
    ]


def test_an_answer_renews_the_lease_and_a_lapsed_one_is_taken_over(tmp_path: Path) -> None:
    rt, clock, run = _started(tmp_path, TEAM)
    docs = _token(rt, run, "Docs")
    rt.claim(run, "alice", step=docs, lease=600)
    clock.wait(500)
    rt.submit(run, "success", step=docs, agent="alice")  # step 1 done: the lease starts again
    proofread = _token(rt, run, "Docs")
    clock.wait(500)  # 1,000 s after the claim, 500 after alice's answer: still hers
    assert (
        _refused(lambda: rt.claim(run, "carol", step=proofread), "claimed").details["until"]
        == "2026-01-01T09:18:20.000Z"
    )
    assert rt.claim(run, "alice", step=proofread, lease=600)["status"] == "renewed"
    clock.wait(601)
    taken = rt.claim(run, "carol", step=proofread, lease=600)
    assert taken["status"] == "taken_over"
    _refused(lambda: rt.submit(run, "success", step=proofread, agent="alice"), "claimed")
    rt.submit(run, "success", step=proofread, agent="carol")
    claims = [e for e in rt.trace(run) if e["kind"] == "claim"]
    assert [(e["outcome"], e["agent"]) for e in claims] == [
        ("claimed", "alice"),
        ("renewed", "alice"),
        ("taken_over", "carol"),
    ]
    assert claims[-1]["lapsed"] == {"agent": "alice", "until": claims[-2]["until"]}
    assert rt.verify(run)["ok"] is True


def test_each_for_each_item_is_claimed_apart_and_verify_agrees(tmp_path: Path) -> None:
    rt, _, run = _started(tmp_path, ITEMS)
    first = rt.claim(run, "alice")
    assert first["current"]["item"]["value"] == "a.py"
    rt.submit(run, "success", agent="alice")
    second = rt.claim(run, "bob")  # the next item: a claim of its own
    assert (second["status"], second["current"]["item"]["value"]) == ("claimed", "b.py")
    _refused(lambda: rt.submit(run, "success", agent="alice"), "claimed")
    rt.submit(run, "success", agent="bob")
    assert rt.next(run)["status"] == "done"
    assert rt.verify(run)["ok"] is True


def test_a_claimed_execution_forks_and_a_lease_out_of_bounds_is_refused(tmp_path: Path) -> None:
    rt, _, run = _started(tmp_path, TEAM)
    docs = _token(rt, run, "Docs")
    rt.claim(run, "alice", step=docs)
    rt.submit(run, "success", step=docs, agent="alice")
    fork = f"{run}-fork"
    rt.fork(run, fork, at=len(rt.trace(run)))
    assert [e["agent"] for e in rt.trace(fork) if e["kind"] == "claim"] == ["alice"]
    assert rt.verify(fork)["ok"] is True
    for lease in (0, 10**12, 1.5, True):
        _refused(lambda lease=lease: rt.claim(run, "bob", lease=lease), "invalid_value")


def test_only_a_branch_is_claimed(tmp_path: Path) -> None:
    rt, _, run = _started(tmp_path, TEAM)
    rt.submit(run, "success", step=_token(rt, run, "Code"))
    for _ in range(2):
        rt.submit(run, "success", step=_token(rt, run, "Docs"))
    error = _refused(lambda: rt.claim(run, "alice"), "invalid_value")
    assert "'Ship' is not in a parallel branch or a for_each item" in error.message
    _refused(lambda: rt.claim(run, "alice", step=None, lease=0), "invalid_value")


FAN: dict[str, Any] = {
    "name": "fan",
    "tree": {
        "type": "sequence",
        "name": "Root",
        "children": [
            {
                "type": "action",
                "name": "Plan",
                "steps": [{"instruct": "List the files.", "writes": ["files"]}],
            },
            {
                "type": "action",
                "name": "Fix",
                "for_each": {"in": "$VAR.files", "as": "file", "parallel": True},
                "steps": [{"instruct": "Fix the file."}],
            },
        ],
    },
}


def test_each_fanned_out_item_is_claimed_by_its_own_agent_and_verify_agrees(
    tmp_path: Path,
) -> None:
    rt, clock, run = _started(tmp_path, FAN)
    rt.submit(run, "success", values={"files": ["a.py", "b.py"]})
    steps = {r["item"]["value"]: str(r["step"]) for r in rt.next(run, all=True)}
    assert sorted(steps) == ["a.py", "b.py"], "one open, claimable branch per item"
    rt.claim(run, "alice", step=steps["a.py"], lease=60)
    rt.claim(run, "bob", step=steps["b.py"], lease=60)
    error = _refused(lambda: rt.submit(run, "success", step=steps["a.py"], agent="bob"), "claimed")
    assert error.details["holder"] == "alice"
    clock.wait(61)
    taken = rt.claim(run, "carol", step=steps["a.py"], lease=60)
    assert (taken["status"], taken["current"]["item"]["value"]) == ("taken_over", "a.py")
    rt.submit(run, "success", step=steps["b.py"], agent="bob")
    rt.submit(run, "success", step=steps["a.py"], agent="carol")
    assert rt.next(run)["status"] == "done"
    answered = [(e.get("item"), e.get("agent")) for e in rt.trace(run) if e["kind"] == "instruct"]
    assert answered[1:] == [(1, "bob"), (0, "carol")]
    assert rt.verify(run)["ok"] is True
    fork = f"{run}-fork"
    rt.fork(run, fork, at=len(rt.trace(run)) - 1)
    assert rt.verify(fork)["ok"] is True


def test_a_sub_agents_stops_are_counted_in_its_claim_and_replayed(tmp_path: Path) -> None:
    rt, _, run = _started(tmp_path, TEAM)
    docs, code = _token(rt, run, "Docs"), _token(rt, run, "Code")
    rt.claim(run, "alice", step=docs)
    rt.claim(run, "bob", step=code)
    outcomes = [rt.stop(run, cap=2, agent="alice", step=docs)["status"] for _ in range(3)]
    assert outcomes == ["refused", "refused", "allowed"]
    # bob's count is his own, and the lead's (the execution's) is untouched
    assert rt.stop(run, cap=2, agent="bob", step=code)["blocks"] == 1
    assert rt.stop(run, cap=2)["blocks"] == 1
    _refused(lambda: rt.stop(run, cap=2, agent="bob", step=docs), "claimed")
    rt.stop(run, cap=2, agent="alice", step=docs)
    rt.submit(run, "success", step=docs, agent="alice")  # her answer starts her count again
    assert rt.stop(run, cap=2, agent="alice", step=_token(rt, run, "Docs"))["blocks"] == 1
    rt.record_tool(run, "Read", {"file_path": "a"}, ok=True, step=code, agent="bob")
    stops = [e for e in rt.trace(run) if e["kind"] == "stop"]
    assert [(s.get("agent"), s["name"]) for s in stops][:3] == [("alice", "Docs")] * 3
    tool = [e for e in rt.trace(run) if e["kind"] == "tool"][-1]
    assert (tool["agent"], tool["name"], tool["step"]) == ("bob", "Code", code)
    report = rt.verify(run)
    assert report["ok"], report["differences"]


def test_a_claimed_actions_checks_read_no_other_sub_agents_calls(tmp_path: Path) -> None:
    checked = "TOOLS.exists(t, t.tool == 'Bash' && t.ok)"
    tree = json.loads(json.dumps(TEAM))
    tree["tree"]["children"][0]["children"][0]["steps"] = [
        {"instruct": "Write the docs."},
        {"check": checked},
    ]
    rt, _, run = _started(tmp_path, tree)
    docs, code = _token(rt, run, "Docs"), _token(rt, run, "Code")
    rt.claim(run, "alice", step=docs)
    rt.claim(run, "bob", step=code)
    rt.record_tool(run, "Bash", {"command": "make docs"}, ok=True, step=code, agent="bob")
    failed = rt.submit(run, "success", step=docs, agent="alice")
    assert failed["status"] == "action_failed", failed  # bob's call is not alice's evidence
    again = tmp_path / "again"
    again.mkdir()
    rt, _, run = _started(again, tree)
    docs = _token(rt, run, "Docs")
    rt.claim(run, "alice", step=docs)
    rt.record_tool(run, "Bash", {"command": "make docs"}, ok=True)  # the lead's, naming nobody
    assert rt.submit(run, "success", step=docs, agent="alice")["status"] != "action_failed"
    assert rt.verify(run)["ok"] is True
