"""The viewer's model: per-node statuses after any trace prefix, derived by replay, checked against
scenarios a reader can follow and against the engine's own record of finished nodes."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from support.trees import Walk, action, chk, ev, ins, par, sel, seq, tree
from tether.engine import public as engine
from tether.engine.replay import replay
from tether.engine.ticking import Ticker
from tether.errors import TetherError
from tether.viewer.model import Timeline, index_tree, progress, snapshot


def _statuses(w: Walk, upto: int | None = None) -> dict[str, str]:
    snap = snapshot(w.tree, w.state, w.trace, upto)
    names = {k: n.name for k, n in index_tree(w.tree).items()}
    return {names[k]: v.status for k, v in snap.nodes.items()}


def test_hello_world_walk_marks_failures_the_cursor_and_the_unreached() -> None:
    w = Walk(
        tree(
            seq(
                "Root",
                action("Time", ins("find the time")),
                sel(
                    "Greet",
                    action("Morning", ev("morning?")),
                    action("Evening", ev("evening?")),
                ),
                action("Confirm", ev("confirmed?")),
            )
        )
    )
    w.submit("success")
    w.eval(False)
    assert _statuses(w) == {
        "Root": "open",
        "Time": "success",
        "Greet": "open",
        "Morning": "failure",
        "Evening": "open",
        "Confirm": "not_reached",
    }
    w.eval(True)
    w.eval(True)
    assert w.state["status"] == "complete"
    assert _statuses(w) == {
        "Root": "success",
        "Time": "success",
        "Greet": "success",
        "Morning": "failure",
        "Evening": "success",
        "Confirm": "success",
    }


def test_entries_count_per_node_and_cursor_comes_first() -> None:
    w = Walk(tree(seq("S", action("A", ins("a"), ins("b")), action("B", ev("b")))))
    w.write("x", 1)
    w.submit("running")
    w.submit("success")
    snap = snapshot(w.tree, w.state, w.trace)
    assert snap.nodes["0"].entries == 3
    assert snap.nodes["0"].step == 1
    assert snap.open_keys() == ["0"]
    assert snap.nodes["1"].entries == 0


def test_when_false_is_skipped_and_an_error_fails() -> None:
    w = Walk(
        tree(
            seq(
                "S",
                action("Off", ins("never"), when="VAR.on == true"),
                action("Broken", ins("never"), when="VAR.missing.deeper == 1", optional=True),
                action("B", ins("b")),
            ),
            var={"on": False},
        )
    )
    assert _statuses(w) == {
        "S": "open",
        "Off": "skipped",
        "Broken": "failure",
        "B": "open",
    }


def test_check_only_action_finishes_with_its_checks() -> None:
    w = Walk(
        tree(
            seq(
                "S", action("A", ins("a")), action("Gate", chk("VAR.n > 1")), action("C", ins("c"))
            ),
            var={"n": 1},
        )
    )
    w.submit("success")
    assert _statuses(w) == {"S": "failure", "A": "success", "Gate": "failure", "C": "not_reached"}


def test_parallel_any_halts_the_sibling_still_open() -> None:
    w = Walk(tree(par("P", action("A", ins("a")), action("B", ins("b")), policy="any")))
    assert _statuses(w) == {"P": "open", "A": "open", "B": "open"}
    assert snapshot(w.tree, w.state, w.trace).open_keys() == ["0", "1"]
    w.submit("success")
    assert _statuses(w) == {"P": "success", "A": "success", "B": "halted"}


def test_retry_counts_and_resets_the_subtree() -> None:
    w = Walk(tree(seq("S", action("A", ins("a")), action("B", ev("b?"), retries=1), retries=1)))
    w.submit("success")
    w.eval(False)
    snap = snapshot(w.tree, w.state, w.trace)
    assert (snap.nodes["1"].status, snap.nodes["1"].retries) == ("open", 1)
    w.eval(False)
    snap = snapshot(w.tree, w.state, w.trace)
    assert (snap.nodes[""].status, snap.nodes[""].retries) == ("open", 1)
    assert snap.nodes["0"].status == "open", "the sequence's retry starts again at A"
    assert (snap.nodes["1"].status, snap.nodes["1"].retries) == ("not_reached", 0)
    w.submit("success")
    w.eval(True)
    assert _statuses(w) == {"S": "success", "A": "success", "B": "success"}


def test_optional_failure_lets_the_sequence_go_on() -> None:
    w = Walk(tree(seq("S", action("A", ev("a?"), optional=True), action("B", ins("b")))))
    w.eval(False)
    assert _statuses(w) == {"S": "open", "A": "failure", "B": "open"}


def test_reset_clears_every_status() -> None:
    w = Walk(tree(seq("S", action("A", ins("a")), action("B", ins("b")))))
    w.submit("success")
    w.reset()
    snap = snapshot(w.tree, w.state, w.trace)
    assert {v.status for v in snap.nodes.values()} == {"not_reached"}
    assert snap.state["phase"] == "protocol"


def test_slider_state_equals_replay_of_the_prefix() -> None:
    w = Walk(tree(seq("S", action("A", ins("a")), action("B", ev("b"))), var={"n": 0}))
    w.write("n", 5)
    w.submit("success")
    w.eval(True)
    for k in range(len(w.trace) + 1):
        replayed, _ = replay(w.tree, w.state, w.trace, upto=k)
        snap = snapshot(w.tree, w.state, w.trace, k)
        assert snap.at == k
        assert (snap.state["var"], snap.state["open"]) == (replayed["var"], replayed["open"])
    assert snapshot(w.tree, w.state, w.trace, 2).state["var"] == {"n": 5}
    assert snapshot(w.tree, w.state, w.trace, 1).state["var"] == {"n": 0}


def test_feeding_in_pieces_equals_feeding_at_once() -> None:
    w = Walk(tree(seq("S", action("A", ins("a")), action("B", ev("b")))))
    w.submit("success")
    w.eval(True)
    timeline = Timeline(w.tree, w.state)
    for entry in w.trace:
        timeline.feed([entry])
    assert timeline.snapshot().to_dict() == snapshot(w.tree, w.state, w.trace).to_dict()
    assert progress(w.tree, timeline.snapshot()) == {"settled": 2, "actions": 2}


def test_progress_settles_what_nothing_can_run_any_more() -> None:
    greet = sel(
        "Greet", action("Hi", ev("hi?")), action("Hello", ev("hello?")), action("Yo", ev("yo?"))
    )
    w = Walk(tree(seq("Root", action("Time", ins("t")), greet, action("Confirm", ins("c")))))
    w.submit("success")
    assert progress(w.tree, snapshot(w.tree, w.state, w.trace)) == {"settled": 1, "actions": 5}
    w.eval(False)  # Hi fails: the selector tries Hello; Yo may still run
    assert progress(w.tree, snapshot(w.tree, w.state, w.trace)) == {"settled": 2, "actions": 5}
    w.eval(True)  # Hello succeeds: Yo never runs now
    assert progress(w.tree, snapshot(w.tree, w.state, w.trace)) == {"settled": 4, "actions": 5}
    w.submit("success")
    assert w.state["status"] == "complete"
    assert progress(w.tree, snapshot(w.tree, w.state, w.trace)) == {"settled": 5, "actions": 5}

    failed = Walk(tree(seq("Root", action("A", ev("a?")), action("B", ins("b")))))
    failed.eval(False)
    assert failed.state["status"] == "failed"
    done = progress(failed.tree, snapshot(failed.tree, failed.state, failed.trace))
    assert done == {"settled": 2, "actions": 2}


def test_a_trace_the_engine_refuses_stops_with_the_reason() -> None:
    w = Walk(tree(seq("S", action("A", ins("a")))))
    broken = [*w.trace, {"seq": 9, "ts": "t", "kind": "bogus", "cursor": None, "name": None}]
    snap = snapshot(w.tree, w.state, broken)
    assert snap.error is not None and "bogus" in snap.error
    assert snap.nodes["0"].status == "open"


# -- the engine as oracle ------------------------------------------------------------------------

ORACLE_TREES = [
    tree(
        seq(
            "Root",
            action("A", ev("a?"), retries=1),
            sel("Pick", action("P1", ev("p1?")), action("P2", ins("p2"), chk("VAR.n < 3"))),
            par(
                "Both",
                action("L", ins("l"), optional=True),
                seq("R", action("R1", ev("r1?")), action("R2", ins("r2"))),
                policy=1,
            ),
            action("Z", ins("z"), when="VAR.n != 2"),
        ),
        var={"n": 0},
    ),
    tree(
        par(
            "Top",
            sel("S", action("X", ev("x?"), retries=2), action("Y", ins("y"))),
            action("W", ins("w"), chk("VAR.n >= 1"), retries=1),
            policy="all",
        ),
        var={"n": 0},
    ),
]


@settings(max_examples=120, deadline=None)
@given(t=st.sampled_from(ORACLE_TREES), moves=st.lists(st.integers(0, 7), max_size=30))
def test_statuses_agree_with_the_engines_finished_nodes(
    t: dict[str, Any], moves: list[int]
) -> None:
    """Wherever the engine finishes a node, the model shows the engine's result for it."""
    records: list[dict[str, str]] = []
    run = Ticker.run

    def spying(self: Ticker) -> Ticker:
        run(self)
        records.append(dict(self.finished))
        return self

    w = Walk(t)
    timeline = Timeline(t, w.state)
    timeline.feed(w.trace)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(Ticker, "run", spying)
        for move in moves:
            if w.state["status"] != "running":
                break
            open_ = w.state["open"]
            req = open_[move % len(open_)]
            size = len(w.trace)
            records.clear()
            try:
                if move == 7:
                    w.write("n", move % 4)
                elif req["type"] == "evaluate":
                    w.eval(move % 3 != 0, step=req["step"])
                else:
                    w.submit(("success", "failure", "running")[move % 3], step=req["step"])
            except TetherError:
                continue
            timeline.feed(w.trace[size:])
            snap = timeline.snapshot()
            finished = records[-1] if records else {}
            for key, result in finished.items():
                if key not in w.state["runtime"]:
                    assert snap.nodes[key].status == result, (key, finished, w.trace)
            assert set(snap.open_keys()) <= {k for k, v in snap.nodes.items() if v.status == "open"}
            settled = progress(t, snap)
            if w.state["status"] != "running":
                assert settled["settled"] == settled["actions"], "a finished execution is 100%"
            else:
                assert settled["settled"] < settled["actions"], "an open action is not settled"


def test_a_jump_leaves_the_open_action_halted_and_opens_the_target() -> None:
    w = Walk(tree(seq("S", action("A", ins("a")), action("B", ins("b")), action("C", ins("c")))))
    w.apply(engine.Jump([2], "straight to C"))
    assert _statuses(w) == {"S": "open", "A": "halted", "B": "not_reached", "C": "open"}
    w.apply(engine.Close("done by hand"))
    assert _statuses(w) == {"S": "success", "A": "halted", "B": "not_reached", "C": "success"}
