"""Node semantics: each test proves one row of docs/semantics.md."""

from __future__ import annotations

import pytest

from support.trees import Walk, action, chk, ev, ins, par, sel, seq, tree
from tether.engine import public as engine
from tether.engine.replay import verify
from tether.errors import TetherError


def _verify(w: Walk) -> None:
    assert verify(w.tree, w.state, w.trace) == []


# -- sequence ----------------------------------------------------------------------------------


def test_sequence_runs_children_in_order_and_succeeds() -> None:
    w = Walk(tree(seq("S", action("A", ins("a")), action("B", ev("b")), action("C", ins("c")))))
    assert w.next()["name"] == "A"
    assert w.submit("success")["status"] == "action_complete"
    assert w.next()["name"] == "B"
    assert w.eval(True)["status"] == "evaluation_passed"
    w.submit("success")
    assert w.next() == {"status": "done"}
    assert w.state["status"] == "complete"
    _verify(w)


def test_sequence_aborts_on_first_failing_child() -> None:
    w = Walk(tree(seq("S", action("A", ev("a")), action("B", ins("b")))))
    assert w.eval(False)["status"] == "evaluation_failed"
    assert w.next()["status"] == "failure"
    assert w.asked() == ["A"]
    _verify(w)


# -- selector ----------------------------------------------------------------------------------


def test_selector_first_success_wins() -> None:
    w = Walk(tree(sel("Pick", action("A", ev("a")), action("B", ev("b")))))
    w.eval(True)
    assert w.next() == {"status": "done"}
    assert w.asked() == ["A"]


def test_selector_falls_through_to_next_child() -> None:
    w = Walk(tree(sel("Pick", action("A", ev("a")), action("B", ev("b")))))
    w.eval(False)
    assert w.next()["name"] == "B"
    w.eval(True)
    assert w.next() == {"status": "done"}


def test_selector_fails_when_all_children_fail() -> None:
    w = Walk(tree(sel("Pick", action("A", ev("a")), action("B", ev("b")))))
    w.eval(False)
    w.eval(False)
    assert w.next()["status"] == "failure"
    _verify(w)


# -- parallel ----------------------------------------------------------------------------------


def _par(policy: object) -> Walk:
    return Walk(
        tree(
            par(
                "P",
                action("A", ins("a")),
                action("B", ins("b")),
                action("C", ins("c")),
                policy=policy,
            )
        )
    )


def test_parallel_opens_every_child_and_next_returns_declaration_order() -> None:
    w = _par("all")
    assert w.names() == ["A", "B", "C"]
    assert w.next()["name"] == "A"
    assert w.state["phase"] == "performing"


def test_parallel_all_answered_by_token_in_any_order() -> None:
    w = _par("all")
    a, b, c = w.open()
    w.submit("success", step=c["step"])
    assert w.names() == ["A", "B"]
    w.submit("success", step=a["step"])
    assert w.names() == ["B"]
    assert w.next()["step"] == b["step"], "an untouched step keeps its token"
    w.submit("success", step=b["step"])
    assert w.next() == {"status": "done"}
    _verify(w)


def test_parallel_all_fails_as_soon_as_one_child_fails() -> None:
    w = _par("all")
    w.submit("failure", step=w.open()[1]["step"])
    assert w.next()["status"] == "failure"
    assert w.state["runtime"] == {}, "the other children are halted"


def test_parallel_any_succeeds_on_first_success_and_halts_the_rest() -> None:
    w = _par("any")
    w.submit("failure", step=w.open()[0]["step"])
    assert w.names() == ["B", "C"]
    w.submit("success", step=w.open()[1]["step"])
    assert w.next() == {"status": "done"}
    _verify(w)


def test_parallel_n_needs_n_successes_and_fails_when_unreachable() -> None:
    w = _par(2)
    w.submit("success", step=w.open()[2]["step"])
    assert w.names() == ["A", "B"]
    w.submit("success", step=w.open()[0]["step"])
    assert w.next() == {"status": "done"}

    w = _par(2)
    w.submit("failure", step=w.open()[0]["step"])
    assert w.names() == ["B", "C"], "two successes are still possible"
    w.submit("failure", step=w.open()[0]["step"])
    assert w.next()["status"] == "failure"
    _verify(w)


def test_parallel_branches_progress_independently() -> None:
    w = Walk(tree(par("P", action("A", ins("a1"), ins("a2")), action("B", ev("b")))))
    a = w.open()[0]
    assert w.submit("success", step=a["step"])["status"] == "step_complete"
    assert [r["instruction" if r["type"] == "instruct" else "expression"] for r in w.open()] == [
        "a2",
        "b",
    ]
    _verify(w)


# -- action steps --------------------------------------------------------------------------------


def test_instruct_failure_fails_the_action() -> None:
    w = Walk(tree(seq("S", action("A", ins("a"), ins("never")))))
    assert w.submit("failure")["status"] == "action_failed"
    assert w.next()["status"] == "failure"


def test_running_keeps_the_cursor_and_the_token() -> None:
    w = Walk(tree(action("A", ins("long work"))))
    before = w.next()
    assert w.submit("running", step=before["step"])["status"] == "running"
    assert w.next() == before
    assert w.state["cursor"] == {"path": [], "step": 0}
    assert w.trace[-1]["outcome"] == "running"
    w.submit("success", step=before["step"])
    assert w.next() == {"status": "done"}
    _verify(w)


def test_check_step_is_evaluated_by_the_runtime_not_asked() -> None:
    w = Walk(tree(action("A", ins("set x"), chk("$VAR.x > 2"), ins("after")), var={"x": 0}))
    w.write("x", 5)
    w.submit("success")
    assert w.next()["instruction"] == "after"
    checks = [e for e in w.trace if e["kind"] == "check"]
    assert checks[0]["outcome"] == "passed" and checks[0]["submitted"] == "$VAR.x > 2"
    _verify(w)


def test_false_check_fails_the_action_with_the_reason() -> None:
    w = Walk(tree(action("A", ins("set x"), chk("VAR.x > 2")), var={"x": 0}))
    response = w.submit("success")
    assert response["status"] == "action_failed"
    assert "VAR.x > 2" in response["message"]
    assert w.next()["status"] == "failure"
    assert w.trace[-1]["outcome"] == "failed"


def test_check_that_cannot_be_evaluated_fails_with_reason_in_trace() -> None:
    w = Walk(tree(action("A", chk("VAR.missing.deep > 1"))))
    assert w.next()["status"] == "failure"
    entry = w.trace[-1]
    assert entry["kind"] == "check" and entry["outcome"] == "error"
    assert "missing" in entry["note"]
    assert "could not be evaluated" in w.state["failure"]
    _verify(w)


def test_writes_refuses_success_until_every_path_was_written() -> None:
    w = Walk(tree(action("A", ins("store a and b.c", writes=["a", "b.c"]))))
    with pytest.raises(TetherError) as err:
        w.submit("success")
    assert err.value.code == "writes_missing"
    assert err.value.details["missing"] == ["a", "b.c"]
    assert "$VAR.a" in err.value.message and "$VAR.b.c" in err.value.message
    w.write("a", 1)
    with pytest.raises(TetherError) as err:
        w.submit("success")
    assert err.value.details["missing"] == ["b.c"]
    w.write("b.c", "x")
    assert w.submit("success")["status"] == "action_complete"
    _verify(w)


def test_writes_must_happen_during_the_step_itself() -> None:
    w = Walk(tree(seq("S", action("A", ins("first")), action("B", ins("store a", writes=["a"])))))
    w.write("a", 1)  # while A is open: does not count for B
    w.submit("success")
    with pytest.raises(TetherError, match=r"\$VAR\.a"):
        w.submit("success")


def test_writes_do_not_block_failure() -> None:
    w = Walk(tree(action("A", ins("store a", writes=["a"]))))
    assert w.submit("failure")["status"] == "action_failed"


# -- modifiers ---------------------------------------------------------------------------------


def test_retries_success_on_last_attempt() -> None:
    w = Walk(tree(action("A", ev("ok?"), retries=2)))
    assert w.eval(False)["status"] == "evaluation_failed"
    w.eval(False)
    w.eval(True)
    assert w.next() == {"status": "done"}
    assert w.asked() == ["A", "A", "A"]
    _verify(w)


def test_retries_exhausted_fails() -> None:
    w = Walk(tree(action("A", ev("ok?"), retries=1)))
    w.eval(False)
    w.eval(False)
    assert w.next()["status"] == "failure"
    assert len(w.asked()) == 2


def test_nested_retries_outer_gives_inner_its_full_budget_again() -> None:
    w = Walk(tree(seq("Outer", action("Inner", ev("always false"), retries=1), retries=2)))
    asks = 0
    while w.next().get("type") == "evaluate":
        w.eval(False)
        asks += 1
    assert asks == 6
    assert w.next()["status"] == "failure"
    _verify(w)


def test_var_is_kept_across_retries() -> None:
    w = Walk(tree(action("A", ins("try"), chk("VAR.ok == true"), retries=1), var={"ok": False}))
    w.write("attempts", 1)
    w.submit("success")
    assert w.state["var"]["attempts"] == 1, "the failed attempt's writes survive the retry"
    w.write("ok", True)
    w.submit("success")
    assert w.next() == {"status": "done"}


def test_retry_token_differs_from_the_failed_attempt() -> None:
    w = Walk(tree(action("A", ev("ok?"), retries=1)))
    first = w.next()["step"]
    w.eval(False, step=first)
    with pytest.raises(TetherError) as err:
        w.eval(True, step=first)
    assert err.value.code == "stale_step"


def test_optional_failure_counts_as_success() -> None:
    w = Walk(tree(seq("S", action("Nice_To_Have", ev("x"), optional=True), action("B", ins("b")))))
    w.eval(False)
    assert w.next()["name"] == "B"


def test_when_false_skips_the_node_and_counts_as_success() -> None:
    w = Walk(
        tree(
            seq("S", action("Skipped", ins("never"), when="VAR.enabled"), action("B", ins("b"))),
            var={"enabled": False},
        )
    )
    assert w.next()["name"] == "B"
    when = next(e for e in w.trace if e["kind"] == "check")
    assert when["on"] == "when" and when["outcome"] == "skipped"
    _verify(w)


def test_when_true_enters_the_node_and_is_checked_once() -> None:
    w = Walk(tree(action("A", ins("one"), ins("two"), when="VAR.enabled"), var={"enabled": True}))
    w.write("enabled", False)
    w.submit("success")
    assert w.next()["instruction"] == "two", "when is not re-checked once the node is entered"


def test_when_is_checked_when_first_reached_with_current_var() -> None:
    w = Walk(
        tree(
            seq("S", action("A", ins("decide")), action("B", ins("b"), when="VAR.go == true")),
            var={"go": False},
        )
    )
    w.write("go", True)
    w.submit("success")
    assert w.next()["name"] == "B"


# -- node events (what the viewer derives statuses from) -------------------------------------


def test_outcome_events_name_finished_retried_and_skipped_nodes() -> None:
    w = Walk(
        tree(
            seq(
                "S",
                action("Skip", ins("x"), when="false"),
                seq("Outer", action("A", chk("VAR.n > 1")), retries=1),
            )
        ),
        accept=False,
        var={"n": 0},
    )
    outcome = engine.apply(w.tree, w.state, engine.Submit("success"), "t")
    assert outcome.events == [
        ("0", "skipped"),
        ("1.0", "failure"),
        ("1", "failure"),
        ("1", "retry"),
        ("1.0", "failure"),
        ("1", "failure"),
        ("", "failure"),
    ]


def test_outcome_events_leave_halted_nodes_out() -> None:
    w = Walk(tree(par("P", action("A", ins("a")), action("B", ins("b")), policy="any")))
    outcome = engine.apply(w.tree, w.state, engine.Submit("success", step=w.open()[0]["step"]), "t")
    assert outcome.events == [("0", "success"), ("", "success")]
    assert "1" in w.state["runtime"] and outcome.state["runtime"] == {}


def test_var_write_and_think_are_recorded_against_the_step_named_by_token() -> None:
    w = Walk(tree(par("P", action("A", ins("a")), action("B", ins("b", writes=["x"])))))
    _, b = w.open()
    w.write("x", 1)
    assert w.trace[-1]["name"] == "A", "without a token: the first open step"
    w.apply(engine.VarWrite("x", 2, b["step"]))
    w.apply(engine.Think("on B", b["step"]))
    assert [(e["kind"], e["name"]) for e in w.trace[-2:]] == [("var_write", "B"), ("think", "B")]
    assert w.trace[-1]["cursor"] == {"path": [1], "step": 0}
    with pytest.raises(TetherError) as err:
        w.apply(engine.VarWrite("x", 3, "stale:0:0:0:x"))
    assert err.value.code == "stale_step" and w.state["var"]["x"] == 2
    assert w.submit("success", step=b["step"])["status"] == "action_complete"
    _verify(w)
