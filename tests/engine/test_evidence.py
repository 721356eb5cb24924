"""What a bound agent session records (`stop` and `tool` entries) and what `check` sees of it
(`TOOLS`): each test proves a row of docs/semantics.md, and every walk replays through verify."""

from __future__ import annotations

from typing import Any

import pytest

from support.trees import Walk, action, chk, ins, par, seq, tree
from tether.engine import public as engine
from tether.engine.replay import verify
from tether.errors import TetherError

TESTED = 'TOOLS.exists(t, t.tool == "Bash" && t.input.command.contains("pytest") && t.ok)'


def _verify(w: Walk) -> None:
    assert verify(w.tree, w.state, w.trace) == []


def tool(w: Walk, name: str, ok: bool | None = True, step: str | None = None, **params: Any) -> Any:
    return w.apply(engine.ToolCall(name, params, ok, step))


def stops(w: Walk) -> list[str]:
    return [e["outcome"] for e in w.trace if e["kind"] == "stop"]


# -- stop ----------------------------------------------------------------------------------------


def test_stop_is_refused_cap_times_then_allowed_and_counts_again() -> None:
    w = Walk(tree(seq("S", action("A", ins("a")))))
    answers = [w.apply(engine.Stop(2)) for _ in range(4)]
    assert [a["status"] for a in answers] == ["refused", "refused", "allowed", "refused"]
    assert [a["blocks"] for a in answers] == [1, 2, 2, 1]
    assert answers[0]["current"]["name"] == "A"
    entry = next(e for e in w.trace if e["kind"] == "stop")
    assert entry["name"] == "A" and entry["cursor"] == {"path": [0], "step": 0}
    assert entry["step"] == w.next()["step"] and entry["cap"] == 2
    assert w.next()["name"] == "A"  # a stop never moves the cursor
    _verify(w)


def test_an_ended_session_is_recorded_never_counted_and_replays() -> None:
    w = Walk(tree(seq("S", action("A", ins("a")))))
    w.apply(engine.Stop(2))
    ended = w.apply(engine.Stop(2, ended=True))
    assert ended["status"] == "ended" and ended["blocks"] == 1
    assert w.apply(engine.Stop(2))["status"] == "refused"  # the end took no refusal's place
    assert stops(w) == ["refused", "ended", "refused"]
    assert w.next()["name"] == "A"
    _verify(w)


def test_a_stop_at_the_cap_is_parked_with_its_reason_and_replays() -> None:
    w = Walk(tree(seq("S", action("A", ins("a")))))
    for _ in range(2):
        assert w.apply(engine.Stop(2, park="before the harness's cap"))["status"] == "refused"
    parked = w.apply(engine.Stop(2, park="before the harness's cap"))
    assert parked["status"] == "parked" and "stops" not in w.state
    assert w.trace[-1]["note"] == "before the harness's cap"
    assert w.apply(engine.Stop(2, park="again"))["status"] == "refused"  # counted afresh
    assert stops(w) == ["refused", "refused", "parked", "refused"]
    assert w.next()["name"] == "A"
    _verify(w)


def test_a_stop_with_background_work_is_let_through_never_counted_and_replays() -> None:
    w = Walk(tree(seq("S", action("A", ins("a")))))
    w.apply(engine.Stop(2))
    for _ in range(20):
        assert w.apply(engine.Stop(2, background=True))["status"] == "background"
    assert w.state["stops"] == 1  # twenty background stops took no refusal's place
    assert w.apply(engine.Stop(2))["status"] == "refused"
    assert stops(w) == ["refused", *["background"] * 20, "refused"]
    _verify(w)


def test_an_answer_ends_a_run_of_refused_stops_and_a_thought_does_not() -> None:
    w = Walk(tree(seq("S", action("A", ins("a"), ins("b")))))
    w.apply(engine.Stop(2))
    w.think("still on it")
    assert w.apply(engine.Stop(2))["blocks"] == 2
    w.submit("success")
    assert "stops" not in w.state
    assert w.apply(engine.Stop(2))["blocks"] == 1
    assert stops(w) == ["refused", "refused", "refused"]
    _verify(w)


def test_reset_clears_the_stop_count() -> None:
    w = Walk(tree(seq("S", action("A", ins("a")))))
    w.apply(engine.Stop(3))
    w.reset()
    assert "stops" not in w.state
    _verify(w)


def test_stop_and_tool_calls_are_refused_once_the_execution_is_finished() -> None:
    w = Walk(tree(seq("S", action("A", ins("a")))))
    w.submit("success")
    for answer in (engine.Stop(3), engine.ToolCall("Read", {}, True)):
        with pytest.raises(TetherError) as info:
            w.apply(answer)
        assert info.value.code == "execution_finished"


def hum(text: str) -> dict[str, Any]:
    return {"human": text}


def test_a_stop_is_let_through_at_once_while_every_open_step_is_a_human_one() -> None:
    w = Walk(tree(seq("S", action("A", ins("a")), action("Sign", hum("Approve?")))))
    assert w.apply(engine.Stop(1))["status"] == "refused"
    w.submit("success")
    for _ in range(3):  # never counted, never capped
        answer = w.apply(engine.Stop(1))
        assert (answer["status"], answer["waiting"], answer["blocks"]) == ("allowed", "person", 0)
        assert answer["current"]["type"] == "human"
    assert "stops" not in w.state
    entry = [e for e in w.trace if e["kind"] == "stop"][-1]
    assert entry["name"] == "Sign" and entry["note"] == engine.PERSON_NOTE
    assert entry["step"] == w.next()["step"]
    assert stops(w) == ["refused", "allowed", "allowed", "allowed"]
    w.apply(engine.Human(True, "cli"))
    assert w.next() == {"status": "done"}
    _verify(w)


def test_a_stop_beside_a_human_step_is_refused_and_names_the_agents_step() -> None:
    w = Walk(tree(seq("S", par("P", action("Sign", hum("Approve?")), action("Lint", ins("l"))))))
    answer = w.apply(engine.Stop(3))
    assert answer["status"] == "refused" and "waiting" not in answer
    assert answer["current"]["name"] == "Lint"
    entry = next(e for e in w.trace if e["kind"] == "stop")
    assert entry["name"] == "Lint" and "note" not in entry
    assert engine.waits_on_person(w.state["open"]) is False
    _verify(w)


def test_a_stop_cap_below_one_is_refused() -> None:
    w = Walk(tree(seq("S", action("A", ins("a")))))
    with pytest.raises(TetherError) as info:
        w.apply(engine.Stop(0))
    assert info.value.code == "invalid_value"


# -- tool ----------------------------------------------------------------------------------------


def test_tool_calls_are_recorded_against_the_step_and_replay() -> None:
    w = Walk(tree(par("P", action("A", ins("a")), action("B", ins("b")))))
    b = w.open()[1]["step"]
    tool(w, "Read", file_path="/p/a.py")
    tool(w, "Bash", ok=False, step=b, command="pytest")
    recorded = [e for e in w.trace if e["kind"] == "tool"]
    assert [(e["name"], e["tool"], e["ok"]) for e in recorded] == [
        ("A", "Read", True),
        ("B", "Bash", False),
    ]
    assert recorded[1]["step"] == b and recorded[1]["input"] == {"command": "pytest"}
    assert recorded[1]["cursor"] == {"path": [1], "step": 0}
    assert [r["name"] for r in w.open()] == ["A", "B"]  # the cursor did not move
    _verify(w)


def test_a_tool_call_with_a_stale_token_is_refused() -> None:
    w = Walk(tree(seq("S", action("A", ins("a")))))
    with pytest.raises(TetherError) as info:
        tool(w, "Read", step="0:0:0:9:nope")
    assert info.value.code == "stale_step"


def test_only_actions_whose_checks_read_tools_mark_where_their_calls_begin() -> None:
    w = Walk(tree(par("P", action("A", ins("a"), chk(TESTED)), action("B", ins("b")))))
    tool(w, "Bash", command="pytest -q")
    first = w.trace[-1]["seq"]
    tool(w, "Read", file_path="/p/a.py")
    assert w.state["runtime"]["0"]["t"] == first  # the calls stay in the trace alone
    assert "t" not in w.state["runtime"]["1"]
    assert engine.tools_since(w.state) == first
    assert engine.tool_records(w.trace, first) == [
        {"tool": "Bash", "input": {"command": "pytest -q"}, "ok": True, "seq": first},
        {"tool": "Read", "input": {"file_path": "/p/a.py"}, "ok": True, "seq": first + 1},
    ]


# -- TOOLS in check ------------------------------------------------------------------------------


def test_an_evidence_check_passes_with_the_test_run() -> None:
    w = Walk(tree(seq("S", action("Test", ins("Run the tests."), chk(TESTED)))))
    tool(w, "Read", file_path="/p/a.py")
    tool(w, "Bash", command="python -m pytest -q")
    assert w.submit("success")["status"] == "action_complete"
    assert w.trace[-1]["kind"] == "check" and w.trace[-1]["outcome"] == "passed"
    assert w.next() == {"status": "done"}
    _verify(w)


def test_an_evidence_check_fails_without_the_test_run_and_says_why() -> None:
    w = Walk(tree(seq("S", action("Test", ins("Run the tests."), chk(TESTED)))))
    assert w.submit("success")["status"] == "action_failed"
    check = w.trace[-1]
    assert check["outcome"] == "failed" and "TOOLS is empty" in check["note"]
    assert "TOOLS is empty" in w.state["failure"]
    _verify(w)


def test_a_failed_test_run_is_no_evidence() -> None:
    w = Walk(tree(seq("S", action("Test", ins("Run the tests."), chk(TESTED)))))
    tool(w, "Bash", ok=False, command="pytest")
    assert w.submit("success")["status"] == "action_failed"
    assert "note" not in w.trace[-1]  # TOOLS was not empty, the check was simply false
    _verify(w)


@pytest.mark.parametrize(
    "check",
    [TESTED, "TOOLS.all(t, t.ok)", "TOOLS.filter(t, t.ok).size() > 0", "TOOLS.exists(t, t.ok)"],
)
def test_a_run_of_unknown_outcome_is_kept_as_such_and_read_as_not_ok(check: str) -> None:
    """A harness that gave no sign either way: the entry says null, and a check reads it as
    not ok (false, not an expression error), whatever form the check takes."""
    w = Walk(tree(seq("S", action("Test", ins("Run the tests."), chk(check)))))
    tool(w, "Bash", ok=None, command="pytest")
    assert next(e for e in w.trace if e["kind"] == "tool")["ok"] is None
    assert w.submit("success")["status"] == "action_failed"
    assert w.trace[-1]["outcome"] == "failed"  # false, not "error"
    _verify(w)


def test_tools_are_those_of_this_attempt_only() -> None:
    w = Walk(tree(seq("S", action("Test", ins("Run the tests."), chk(TESTED), retries=1))))
    tool(w, "Bash", ok=False, command="pytest")
    assert "Retrying" in w.submit("success")["message"]
    assert "t" not in w.state["runtime"]["0"]
    tool(w, "Bash", command="pytest")
    assert w.submit("success")["status"] == "action_complete"
    _verify(w)


def test_close_checks_see_tools_too() -> None:
    w = Walk(tree(seq("S", action("Test", ins("Run the tests."), chk(TESTED)))))
    with pytest.raises(TetherError) as info:
        w.apply(engine.Close())
    assert info.value.code == "check_failed" and "TOOLS is empty" in info.value.message
    tool(w, "Bash", command="pytest")
    assert w.apply(engine.Close())["status"] == "action_complete"
    _verify(w)


def test_an_open_request_carries_the_tools_policy_that_applies_to_it() -> None:
    policy = {"allow": ["Read"], "deny": ["Edit"]}
    w = Walk(tree(seq("S", action("A", ins("a"), tools=policy), action("B", ins("b")))))
    assert w.next()["tools"] == {**policy, "node": "A"}
    w.submit("success")
    assert "tools" not in w.next()
    _verify(w)
