"""A human step that waits only so long (`timeout`, `on_timeout`), through the pure engine with
the time passed in. Each test proves a row of docs/semantics.md ("Timeouts")."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from support.stats_scenario import Clock
from support.trees import action, ins, par, refused, sel, seq, tree
from tether import build
from tether.engine import public as engine
from tether.engine.replay import refit, replay, verify
from tether.errors import TetherError


def ask(question: str = "Ship it?", seconds: int = 3600, how: str = "reject") -> dict[str, Any]:
    """A human step that waits `seconds`, then does `how`, as the loader normalises one."""
    return {"human": question, "timeout": seconds, "on_timeout": how}


class Walk(build.Walk):
    """`build.Walk` on a clock the test moves (`wait`), with fixed step tokens."""

    def __init__(self, t: dict[str, Any]) -> None:
        self.at = Clock()
        super().__init__(t, clock=self.at, salt="abcd1234")

    def wait(self, seconds: float) -> None:
        self.at.wait(seconds)

    def time_out(self) -> list[dict[str, Any]]:
        """What the verbs do at a read: a `Timeout` for each open human step past its deadline
        now, one answer each; their responses."""
        return [
            self.apply(engine.Timeout(r["step"])) for r in engine.expired(self.state, self.at())
        ]

    def verified(self) -> None:
        assert verify(self.tree, self.state, self.trace) == []


LEAD = tree(
    sel(
        "Approval",
        action("Lead", ask("Lead: ship it?", 4 * 3600)),
        action("Manager", {"human": "Manager: ship it?"}),
    )
)


def test_a_human_request_with_a_timeout_carries_its_deadline_and_what_happens_then() -> None:
    w = Walk(LEAD)
    lead = w.next()
    assert (lead["deadline"], lead["on_timeout"]) == ("2026-03-02T13:00:00.000Z", "reject")
    assert w.state["runtime"]["0"][engine.Key.DEADLINE] == lead["deadline"]
    w.apply(engine.Human(False, "api"))
    manager = w.next()
    assert manager["name"] == "Manager"
    assert "deadline" not in manager and "on_timeout" not in manager
    w.verified()


def test_before_its_deadline_nothing_has_expired_and_a_timeout_is_refused() -> None:
    w = Walk(LEAD)
    w.wait(4 * 3600 - 0.001)
    assert engine.expired(w.state, w.at()) == []
    err = refused("wrong_phase", w, engine.Timeout())
    assert "waits until 2026-03-02T13:00:00.000Z" in err.message
    untimed = Walk(tree(action("Ask", {"human": "OK?"})))
    untimed.wait(10**7)
    assert "has no timeout" in refused("wrong_phase", untimed, engine.Timeout()).message
    w.wait(0.001)  # at the deadline itself it has passed
    assert [r["name"] for r in engine.expired(w.state, w.at())] == ["Lead"]


def test_reject_on_timeout_fails_the_action_and_the_tree_goes_on_as_for_a_rejection() -> None:
    w = Walk(LEAD)
    lead = w.next()
    w.wait(5 * 3600)
    (response,) = w.time_out()
    assert response["status"] == "timed_out"
    assert response["message"] == "Lead timed out (on_timeout: reject)."
    assert response["next"]["name"] == "Manager" == w.next()["name"]
    entry = w.trace[-1]
    assert entry == {
        "seq": entry["seq"],
        "ts": "2026-03-02T14:00:00.000Z",
        "kind": "timeout",
        "cursor": {"path": [0], "step": 0},
        "name": "Lead",
        "step": lead["step"],
        "deadline": "2026-03-02T13:00:00.000Z",
        "on_timeout": "reject",
        "outcome": "failure",
    }
    assert w.time_out() == []  # once: the step is no longer open
    w.verified()


def test_a_person_answer_after_the_timeout_finds_the_step_gone() -> None:
    w = Walk(LEAD)
    lead = w.next()
    w.wait(4 * 3600)
    w.time_out()
    refused("stale_step", w, engine.Human(True, "api", step=lead["step"]))


def test_reject_on_timeout_with_retries_asks_again_with_a_new_deadline() -> None:
    w = Walk(tree(seq("S", action("Ask", ask(seconds=60), retries=1), action("Go", ins("go")))))
    first = w.next()
    w.wait(90)
    w.time_out()
    again = w.next()
    assert again["step"] != first["step"]
    assert again["deadline"] == "2026-03-02T09:02:30.000Z"  # 60 s after the timeout's time
    w.wait(60)
    w.time_out()
    assert w.next() == {"status": "failure"}
    assert [e["kind"] for e in w.trace[-2:]] == ["timeout", "timeout"]
    w.verified()


def test_fail_on_timeout_fails_the_execution_whatever_is_above_it() -> None:
    t = tree(
        par(
            "Release",
            sel("Either", action("Ask", ask(seconds=60, how="fail")), action("Else", ins("x"))),
            action("Work", ins("work")),
            policy="any",
        ),
    )
    t["root"]["children"][0]["optional"] = True
    w = Walk(t)
    assert w.names() == ["Ask", "Work"]
    w.wait(61)
    (response,) = w.time_out()
    assert response["status"] == "timed_out" and response["next"] == {"status": "failure"}
    message = "Human step 'Ask' timed out at 2026-03-02T09:01:00.000Z (on_timeout: fail)."
    assert response["message"] == message + " The workflow has failed."
    assert w.state["status"] == "failed" and w.state["failure"] == message
    assert w.state["open"] == [] and w.state["runtime"] == {}
    assert w.trace[-1]["on_timeout"] == "fail"
    w.verified()


def test_the_deadline_is_kept_while_other_answers_come_and_shown_values_change() -> None:
    t = tree(
        par("P", action("Ask", ask("Publish $VAR.v?", 600)), action("Work", ins("a"), ins("b"))),
        var={"v": 1},
    )
    w = Walk(t)
    ask_, work = w.open()
    w.wait(300)
    w.submit("success", step=work["step"])
    w.write("v", 2)  # re-opens the request with a new token: same deadline
    shown = w.open()[0]
    assert shown["step"] != ask_["step"]
    assert shown["deadline"] == ask_["deadline"] == "2026-03-02T09:10:00.000Z"
    w.wait(300)
    assert [r["step"] for r in engine.expired(w.state, w.at())] == [shown["step"]]
    w.verified()


def test_two_human_steps_past_their_deadlines_time_out_one_entry_each() -> None:
    t = tree(par("P", action("A", ask("A?", 60)), action("B", ask("B?", 120)), policy="any"))
    w = Walk(t)
    w.wait(200)
    responses = w.time_out()
    assert [e["name"] for e in w.trace if e["kind"] == "timeout"] == ["A", "B"]
    assert responses[-1]["next"] == {"status": "failure"}
    w.verified()


def test_an_approval_in_time_ends_the_wait() -> None:
    w = Walk(tree(seq("S", action("Ask", ask(seconds=60)), action("Go", ins("go")))))
    w.wait(59)
    w.apply(engine.Human(True, "api"))
    w.wait(3600)
    assert engine.expired(w.state, w.at()) == [] and w.next()["name"] == "Go"
    w.verified()


def test_an_action_s_later_human_step_gets_its_own_deadline_or_none() -> None:
    steps = [ask("first?", 60), {"human": "second?"}, ask("third?", 120)]
    w = Walk(tree(action("Ask", *steps)))
    w.wait(10)
    w.apply(engine.Human(True, "api"))
    assert "deadline" not in w.next()
    w.wait(10)
    w.apply(engine.Human(True, "api"))
    assert w.next()["deadline"] == "2026-03-02T09:02:20.000Z"
    w.verified()


def test_a_timeout_entry_moved_before_its_deadline_does_not_verify() -> None:
    w = Walk(LEAD)
    w.wait(5 * 3600)
    w.time_out()
    early = copy.deepcopy(w.trace)
    early[-1]["ts"] = "2026-03-02T12:59:59.999Z"
    (diff,) = verify(w.tree, w.state, early)
    assert diff["field"] == "trace" and "has not timed out" in diff["problem"]
    moved = copy.deepcopy(w.trace)
    moved[-1]["deadline"] = "2026-03-02T10:00:00.000Z"
    assert verify(w.tree, w.state, moved) != []


def test_replay_rebuilds_the_deadline_from_the_time_the_step_opened() -> None:
    w = Walk(seq_tree := tree(seq("S", action("Go", ins("go")), action("Ask", ask(seconds=60)))))
    w.wait(1000)
    w.submit("success")
    state, _ = replay(seq_tree, w.state, w.trace)
    assert state["open"][0]["deadline"] == "2026-03-02T09:17:40.000Z" == w.next()["deadline"]


def test_an_edit_may_not_give_the_open_human_step_a_timeout_or_change_it() -> None:
    plain = tree(action("Ask", {"human": "Ship it?"}))
    w = Walk(plain)
    with pytest.raises(TetherError) as err:
        refit(plain, tree(action("Ask", ask())), w.state, w.trace)
    assert err.value.code == "invalid_tree"
    timed = Walk(LEAD)
    longer = copy.deepcopy(LEAD)
    longer["root"]["children"][0]["steps"][0]["timeout"] = 8 * 3600
    with pytest.raises(TetherError):
        refit(LEAD, longer, timed.state, timed.trace)
