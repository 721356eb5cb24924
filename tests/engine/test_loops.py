"""Loops and decorators (`for_each`, `repeat`, `invert`) and how they combine with `retries`,
`when`, `optional`, `parallel` and each other: each test proves one row of docs/semantics.md."""

from __future__ import annotations

from typing import Any

from support.trees import Walk, action, chk, each, ev, ins, par, refused, seq, tree
from tether.engine import public as engine
from tether.engine.replay import verify
from tether.engine.ticking import MAX_ENTRIES, MAX_VISITS

FILES = ["a.py", "b.py", "c.py"]


def _verify(w: Walk) -> None:
    assert verify(w.tree, w.state, w.trace) == []


def _items(w: Walk) -> list[Any]:
    """The item index of each step the agent answered, in order (None outside a loop)."""
    return [e.get("item") for e in w.trace if e["kind"] in ("evaluate", "instruct")]


def _loop_checks(w: Walk, on: str) -> list[dict[str, Any]]:
    return [e for e in w.trace if e["kind"] == "check" and e.get("on") == on]


def _walk_items(w: Walk) -> list[dict[str, Any]]:
    """Answer success to every open instruct until none is left; the items the requests
    carried, in order."""
    seen: list[Any] = []
    while w.next().get("type") == "instruct":
        seen.append(w.next().get("item"))
        w.submit("success")
    return seen


# -- for_each ----------------------------------------------------------------------------------


def test_for_each_runs_the_node_once_per_item_in_order_and_requests_carry_the_item() -> None:
    w = Walk(
        tree(
            action("Review", ins("Review $ITEM"), for_each=each("VAR.files", "file")),
            var={"files": FILES},
        )
    )
    first = w.next()
    assert first["instruction"] == "Review $ITEM", "the text is shown as written"
    assert first["item"] == {"name": "file", "index": 0, "value": "a.py"}
    assert _walk_items(w) == [
        {"name": "file", "index": 0, "value": "a.py"},
        {"name": "file", "index": 1, "value": "b.py"},
        {"name": "file", "index": 2, "value": "c.py"},
    ]
    assert w.next() == {"status": "done"}
    listed = _loop_checks(w, "for_each")
    assert [(e["outcome"], e["count"], e["submitted"]) for e in listed] == [
        ("entered", 3, "VAR.files")
    ]
    _verify(w)


def test_for_each_checks_see_item_and_item_index() -> None:
    w = Walk(
        tree(
            action(
                "Check",
                ins("Store the size of $ITEM at $VAR.sizes.<name>"),
                chk("VAR.sizes[ITEM.name] > ITEM_INDEX"),
                for_each=each("VAR.files"),
            ),
            var={"files": [{"name": "a"}, {"name": "b"}], "sizes": {}},
        )
    )
    w.write("sizes.a", 1)
    assert w.submit("success")["status"] == "action_complete"
    assert w.next()["item"]["value"] == {"name": "b"}
    w.write("sizes.b", 1)  # not > ITEM_INDEX 1
    response = w.submit("success")
    assert response["status"] == "action_failed"
    assert "'Check' failed at item 2 of 2" in response["message"]
    assert w.next()["status"] == "failure"
    _verify(w)


def test_for_each_evaluates_its_list_once_when_the_node_is_entered() -> None:
    w = Walk(tree(action("A", ins("x"), for_each=each("VAR.files")), var={"files": FILES}))
    w.write("files", ["z.py"])
    assert _walk_items(w) == [{"name": "item", "index": i, "value": f} for i, f in enumerate(FILES)]
    _verify(w)


def test_for_each_over_an_empty_list_succeeds_without_asking() -> None:
    w = Walk(
        tree(
            seq("S", action("A", ins("never"), for_each=each("VAR.files")), action("B", ins("b"))),
            var={"files": []},
        )
    )
    assert w.next()["name"] == "B"
    assert [(e["outcome"], e["count"]) for e in _loop_checks(w, "for_each")] == [("empty", 0)]
    _verify(w)


def test_for_each_fails_on_the_first_failing_item_and_asks_no_more() -> None:
    w = Walk(
        tree(
            seq("S", action("A", ev("fine?"), for_each=each("VAR.files")), action("B", ins("b"))),
            var={"files": FILES},
        )
    )
    w.eval(True)
    w.eval(False)
    assert w.next()["status"] == "failure"
    assert _items(w) == [0, 1]
    assert "'A' failed at item 2 of 3." in w.state["failure"]
    _verify(w)


def test_optional_for_each_goes_on_past_a_failing_item_and_succeeds() -> None:
    w = Walk(
        tree(
            seq(
                "S",
                action("A", ev("fine?"), for_each=each("VAR.files"), optional=True),
                action("B", ins("b")),
            ),
            var={"files": FILES},
        )
    )
    w.eval(False)
    w.eval(True)
    w.eval(False)
    assert w.next()["name"] == "B"
    assert _items(w) == [0, 1, 2]
    _verify(w)


def test_a_list_longer_than_max_fails_the_node_with_the_reason_in_the_trace() -> None:
    w = Walk(tree(action("A", ins("x"), for_each=each("VAR.files", max=2)), var={"files": FILES}))
    assert w.next()["status"] == "failure"
    (entry,) = _loop_checks(w, "for_each")
    assert entry["outcome"] == "error"
    assert entry["note"] == "the list has 3 items, more than its max 2"
    assert "The for_each of 'A' failed: the list has 3 items" in w.state["failure"]
    assert w.asked() == []
    _verify(w)


def test_a_for_each_that_is_not_a_list_or_cannot_be_evaluated_fails_with_the_reason() -> None:
    for expression, reason in [
        ("VAR.files", "for_each must produce a list, got string"),
        ("VAR.missing", "no such key"),
        ("[b'x']", "a list of JSON values"),
    ]:
        w = Walk(tree(action("A", ins("x"), for_each=each(expression)), var={"files": "a.py"}))
        assert w.next()["status"] == "failure"
        (entry,) = _loop_checks(w, "for_each")
        assert entry["outcome"] == "error" and reason in entry["note"], entry
        _verify(w)


def test_an_optional_for_each_whose_list_fails_counts_as_success() -> None:
    w = Walk(
        tree(
            seq(
                "S",
                action("A", ins("x"), for_each=each("VAR.files", max=1), optional=True),
                action("B", ins("b")),
            ),
            var={"files": FILES},
        )
    )
    assert w.next()["name"] == "B"
    _verify(w)


def test_nested_for_each_item_is_the_innermost_and_items_names_every_loop() -> None:
    w = Walk(
        tree(
            seq(
                "Files",
                action(
                    "Line",
                    ins("Look at $ITEM"),
                    chk("ITEMS.file == 'a.py' && ITEMS.line == ITEM && ITEM_INDEX < 2"),
                    for_each=each("[1, 2]", "line"),
                ),
                for_each=each("VAR.files", "file"),
            ),
            var={"files": ["a.py"]},
        )
    )
    assert _walk_items(w) == [
        {"name": "line", "index": 0, "value": 1},
        {"name": "line", "index": 1, "value": 2},
    ]
    assert w.next() == {"status": "done"}
    assert [e["outcome"] for e in w.trace if e["kind"] == "check" and "on" not in e] == [
        "passed",
        "passed",
    ]
    _verify(w)


def test_an_inner_for_each_list_sees_the_outer_item_and_is_evaluated_per_outer_item() -> None:
    w = Walk(
        tree(
            seq(
                "Groups",
                action("Member", ins("greet $ITEM"), for_each=each("ITEM.members", "member")),
                for_each=each("VAR.groups", "group"),
            ),
            var={"groups": [{"members": ["ann", "bo"]}, {"members": []}, {"members": ["cy"]}]},
        )
    )
    assert [i["value"] for i in _walk_items(w)] == ["ann", "bo", "cy"]
    assert [e["count"] for e in _loop_checks(w, "for_each")] == [3, 2, 0, 1]
    _verify(w)


def test_each_item_gets_new_step_tokens_and_an_earlier_items_token_is_stale() -> None:
    w = Walk(tree(action("A", ins("x"), for_each=each("VAR.files")), var={"files": FILES}))
    first = w.next()["step"]
    w.submit("success", step=first)
    assert w.next()["step"] != first
    refused("stale_step", w, engine.Submit("success", step=first))


def test_retries_inside_for_each_retry_the_failing_item_with_a_fresh_budget_per_item() -> None:
    w = Walk(
        tree(action("A", ev("ok?"), for_each=each("VAR.files"), retries=1), var={"files": FILES})
    )
    w.eval(False)  # a.py, attempt 1
    w.eval(True)  # a.py, attempt 2
    w.eval(False)  # b.py, attempt 1: the budget is whole again
    w.eval(True)  # b.py, attempt 2
    w.eval(True)  # c.py
    assert w.next() == {"status": "done"}
    assert _items(w) == [0, 0, 1, 1, 2]
    _verify(w)


def test_var_is_kept_across_items() -> None:
    w = Walk(tree(action("A", ins("count"), for_each=each("VAR.files")), var={"files": FILES}))
    for n in range(3):
        w.write("seen", n + 1)
        w.submit("success")
    assert w.state["var"]["seen"] == 3
    assert w.next() == {"status": "done"}


def test_when_on_a_for_each_node_is_checked_once_before_the_list() -> None:
    w = Walk(
        tree(
            seq(
                "S",
                action("A", ins("x"), for_each=each("VAR.files"), when="VAR.go"),
                action("B", ins("b")),
            ),
            var={"files": FILES, "go": True},
        )
    )
    w.write("go", False)
    assert len(_walk_items(w)) == 4, "three items of A, then B"
    assert [e["outcome"] for e in w.trace if e.get("on") == "when"] == ["entered"]
    trace_kinds = [e.get("on") for e in w.trace if e["kind"] == "check"]
    assert trace_kinds == ["when", "for_each"], "when first, then the list"
    _verify(w)


def test_when_inside_a_loop_is_checked_for_each_item_and_sees_it() -> None:
    w = Walk(
        tree(
            seq(
                "Each",
                action("Python", ins("lint $ITEM"), when="ITEM.endsWith('.py')"),
                for_each=each("VAR.files"),
            ),
            var={"files": ["a.py", "b.md", "c.py"]},
        )
    )
    assert [i["value"] for i in _walk_items(w)] == ["a.py", "c.py"]
    assert [e["outcome"] for e in w.trace if e.get("on") == "when"] == [
        "entered",
        "skipped",
        "entered",
    ]
    _verify(w)


def test_for_each_inside_a_parallel_branch_loops_while_the_other_branch_goes_on() -> None:
    w = Walk(
        tree(
            par("P", action("Each", ins("x"), for_each=each("VAR.files")), action("B", ins("b"))),
            var={"files": FILES[:2]},
        )
    )
    assert w.names() == ["Each", "B"]
    w.submit("success", step=w.open()[1]["step"])
    w.submit("success")
    assert w.open()[0]["item"]["index"] == 1
    w.submit("success")
    assert w.next() == {"status": "done"}
    _verify(w)


def test_for_each_on_a_parallel_runs_all_its_children_for_each_item_in_turn() -> None:
    w = Walk(
        tree(
            par("P", action("A", ins("a")), action("B", ins("b")), for_each=each("VAR.files")),
            var={"files": FILES[:2]},
        )
    )
    for index in (0, 1):
        assert [r["item"]["index"] for r in w.open()] == [index, index]
        w.submit("success", step=w.open()[1]["step"])
        w.submit("success")
    assert w.next() == {"status": "done"}
    _verify(w)


def test_outcome_events_name_each_finished_item() -> None:
    w = Walk(tree(action("A", ins("x"), for_each=each("VAR.files")), var={"files": FILES[:2]}))
    outcome = engine.apply(w.tree, w.state, engine.Submit("success"), "t")
    assert outcome.events == [("", "success"), ("", "item")]
    assert "Looping: 'A' item 2 of 2." in outcome.response["message"]


# -- repeat ------------------------------------------------------------------------------------


def _rep(until: str, max: int = 10) -> dict[str, Any]:
    return {"until": until, "max": max}


def test_repeat_runs_the_node_again_until_until_holds_keeping_var() -> None:
    w = Walk(
        tree(
            seq(
                "Polish",
                action("Draft", ins("improve the draft")),
                action("Score", ins("score it at $VAR.score")),
                repeat=_rep("VAR.score >= 8"),
            ),
            var={"score": 0},
        )
    )
    for score in (5, 9):
        assert w.submit("success")["status"] == "action_complete"
        w.write("score", score)
        w.submit("success")
    assert w.next() == {"status": "done"}
    assert w.asked() == ["Draft", "Score", "Draft", "Score"], "the subtree is reset each run"
    assert [e["outcome"] for e in _loop_checks(w, "until")] == ["repeat", "passed"]
    _verify(w)


def test_until_is_checked_only_after_a_successful_run_and_a_failed_run_fails_the_node() -> None:
    w = Walk(tree(action("A", ev("ok?"), repeat=_rep("true"))))
    assert _loop_checks(w, "until") == [], "not before the first run"
    w.eval(False)
    assert w.next()["status"] == "failure"
    assert _loop_checks(w, "until") == []
    _verify(w)


def test_repeat_fails_when_until_is_still_false_after_max_runs() -> None:
    w = Walk(tree(action("A", ins("try"), repeat=_rep("VAR.done", max=3)), var={"done": False}))
    runs = len(_walk_items(w))
    assert runs == 3
    assert w.next()["status"] == "failure"
    assert [e["outcome"] for e in _loop_checks(w, "until")] == ["repeat", "repeat", "failed"]
    assert "'A' ran 3 times and its until 'VAR.done' is still false." in w.state["failure"]
    _verify(w)


def test_an_until_that_cannot_be_evaluated_fails_the_node_with_the_reason() -> None:
    w = Walk(tree(action("A", ins("try"), repeat=_rep("VAR.missing"))))
    w.submit("success")
    (entry,) = _loop_checks(w, "until")
    assert entry["outcome"] == "error" and "missing" in entry["note"]
    assert "The until of 'A' could not be evaluated" in w.state["failure"]
    _verify(w)


def test_each_run_gets_new_step_tokens() -> None:
    w = Walk(tree(action("A", ins("try"), repeat=_rep("VAR.done")), var={"done": False}))
    first = w.next()["step"]
    w.submit("success", step=first)
    refused("stale_step", w, engine.Submit("success", step=first))


def test_retries_inside_repeat_retry_the_run_with_a_fresh_budget_per_run() -> None:
    w = Walk(tree(action("A", ev("ok?"), retries=1, repeat=_rep("VAR.n >= 2")), var={"n": 0}))
    w.eval(False)  # run 1, attempt 1
    w.write("n", 1)
    w.eval(True)  # run 1, attempt 2; until false
    w.eval(False)  # run 2, attempt 1: a whole budget again
    w.write("n", 2)
    w.eval(True)
    assert w.next() == {"status": "done"}
    assert [e["outcome"] for e in _loop_checks(w, "until")] == ["repeat", "passed"]
    _verify(w)


def test_repeat_inside_for_each_runs_per_item_and_until_sees_the_item() -> None:
    w = Walk(
        tree(
            action(
                "Fix",
                ins("fix $ITEM"),
                for_each=each("VAR.files"),
                repeat=_rep("VAR.clean[ITEM]"),
            ),
            var={"files": ["a", "b"], "clean": {"a": False, "b": True}},
        )
    )
    w.submit("success")  # a, run 1: not clean
    w.write("clean.a", True)
    w.submit("success")  # a, run 2: clean
    w.submit("success")  # b, run 1: clean
    assert w.next() == {"status": "done"}
    assert _items(w) == [0, 0, 1]
    assert [(e["outcome"], e["item"]) for e in _loop_checks(w, "until")] == [
        ("repeat", 0),
        ("passed", 0),
        ("passed", 1),
    ]
    _verify(w)


def test_optional_repeat_that_runs_out_counts_as_success() -> None:
    w = Walk(
        tree(
            seq(
                "S",
                action("A", ins("try"), repeat=_rep("false", max=2), optional=True),
                action("B", ins("b")),
            )
        )
    )
    w.submit("success")
    w.submit("success")
    assert w.next()["name"] == "B"
    _verify(w)


def test_repeat_on_a_parallel_runs_every_branch_again_and_in_a_branch_only_that_branch() -> None:
    w = Walk(
        tree(
            par("P", action("A", ins("a")), action("B", ins("b")), repeat=_rep("VAR.n > 0")),
            var={"n": 0},
        )
    )
    w.submit("success", step=w.open()[1]["step"])
    w.submit("success")
    assert w.names() == ["A", "B"], "a second run of the whole parallel"
    w.write("n", 1)
    w.submit("success")
    w.submit("success")
    assert w.next() == {"status": "done"}
    _verify(w)

    w = Walk(
        tree(
            par("P", action("A", ins("a"), repeat=_rep("VAR.n > 0")), action("B", ins("b"))),
            var={"n": 0},
        )
    )
    b = w.open()[1]
    w.submit("success")
    assert w.names() == ["A", "B"] and w.open()[1] == b, "B is untouched by A's second run"
    w.write("n", 1)
    w.submit("success")
    w.submit("success")
    assert w.next() == {"status": "done"}
    _verify(w)


def test_an_outer_repeat_starts_an_inner_repeat_afresh() -> None:
    w = Walk(
        tree(
            seq(
                "Outer",
                action("Inner", ins("x"), repeat=_rep("false", max=2), optional=True),
                repeat=_rep("VAR.outer", max=2),
            ),
            var={"outer": False},
        )
    )
    assert len(_walk_items(w)) == 4, "two outer runs of two inner runs each"
    assert [e["name"] for e in _loop_checks(w, "until")] == [
        "Inner",
        "Inner",
        "Outer",
        "Inner",
        "Inner",
        "Outer",
    ]
    assert w.next()["status"] == "failure", "the outer until is still false after its max"
    _verify(w)


def test_outcome_events_name_each_run() -> None:
    w = Walk(tree(action("A", ins("x"), repeat=_rep("false", max=2))))
    outcome = engine.apply(w.tree, w.state, engine.Submit("success"), "t")
    assert outcome.events == [("", "success"), ("", "repeat")]
    assert "Looping: 'A' run 2 of 2." in outcome.response["message"]


# -- invert ------------------------------------------------------------------------------------


def test_invert_swaps_success_and_failure() -> None:
    w = Walk(
        tree(
            seq(
                "S",
                action("No_Blockers", ev("are there blockers?"), invert=True),
                action("B", ins("b")),
            )
        )
    )
    assert w.eval(False)["status"] == "evaluation_failed"
    assert w.next()["name"] == "B", "a failed evaluate under invert is a success"
    _verify(w)

    w = Walk(tree(action("A", ins("x"), invert=True)))
    w.submit("success")
    assert w.next()["status"] == "failure"
    _verify(w)


def test_optional_on_top_of_invert_still_turns_failure_into_success() -> None:
    w = Walk(
        tree(seq("S", action("A", ins("x"), invert=True, optional=True), action("B", ins("b"))))
    )
    w.submit("success")
    assert w.next()["name"] == "B"
    _verify(w)


def test_retries_see_the_inverted_result() -> None:
    w = Walk(tree(action("Wait", ev("still blocked?"), invert=True, retries=2)))
    w.eval(True)  # inverted: failure, retried
    w.eval(True)
    w.eval(False)  # inverted: success
    assert w.next() == {"status": "done"}
    assert len(w.asked()) == 3
    _verify(w)


def test_a_node_skipped_by_when_counts_as_success_even_under_invert() -> None:
    w = Walk(
        tree(seq("S", action("A", ins("x"), invert=True, when="false"), action("B", ins("b"))))
    )
    assert w.next()["name"] == "B"
    _verify(w)


def test_invert_inside_for_each_inverts_each_item_and_an_empty_list_still_succeeds() -> None:
    w = Walk(
        tree(action("A", ev("bad?"), invert=True, for_each=each("VAR.files")), var={"files": FILES})
    )
    w.eval(False)
    w.eval(False)
    w.eval(True)  # inverted: failure of item 3
    assert "'A' failed at item 3 of 3." in w.state["failure"]
    _verify(w)

    w = Walk(tree(action("A", ev("bad?"), invert=True, for_each=each("[]"))))
    assert w.next() == {"status": "done"}


def test_repeat_checks_until_after_an_inverted_success() -> None:
    w = Walk(tree(action("A", ev("bad?"), invert=True, repeat=_rep("VAR.n > 0")), var={"n": 0}))
    w.eval(True)  # inverted: failure: no until, the node fails
    assert w.next()["status"] == "failure"
    assert _loop_checks(w, "until") == []

    w = Walk(tree(action("A", ev("bad?"), invert=True, repeat=_rep("VAR.n > 0")), var={"n": 0}))
    w.eval(False)  # inverted: success; until false: again
    w.write("n", 1)
    w.eval(False)
    assert w.next() == {"status": "done"}
    _verify(w)


def test_outcome_events_carry_the_inverted_result() -> None:
    w = Walk(tree(seq("S", action("A", ins("x"), invert=True))))
    outcome = engine.apply(w.tree, w.state, engine.Submit("success"), "t")
    assert outcome.events == [("0", "failure"), ("", "failure")]


# -- navigation (bot tools) ----------------------------------------------------------------------


def test_close_inside_a_loop_checks_with_the_item_and_moves_to_the_next_item() -> None:
    w = Walk(
        tree(
            seq(
                "Bot",
                action("Each", ins("review $ITEM"), chk("ITEM != 'skip'"), for_each=each("VAR.f")),
                action("After", ins("wrap up")),
            ),
            var={"f": ["a", "skip"]},
        )
    )
    response = w.apply(engine.Close())
    assert response["current"]["item"] == {"name": "item", "index": 1, "value": "skip"}
    refused("check_failed", w, engine.Close())
    _verify(w)


def test_a_jump_into_a_loop_starts_it_at_its_first_item() -> None:
    w = Walk(
        tree(
            seq(
                "Bot",
                action("First", ins("first")),
                seq("Loop", action("Each", ins("x")), for_each=each("VAR.f")),
            ),
            var={"f": ["a", "b"]},
        )
    )
    response = w.apply(engine.Jump([1, 0]))
    assert response["current"]["item"]["index"] == 0
    assert w.next()["item"]["value"] == "a"
    w.submit("success")
    assert w.next()["item"]["value"] == "b"
    _verify(w)


# -- every modifier on one node ------------------------------------------------------------------


def test_every_modifier_on_one_node_applies_in_the_documented_order() -> None:
    w = Walk(
        tree(
            seq(
                "S",
                action(
                    "A",
                    ev("is $ITEM bad?"),
                    invert=True,
                    retries=1,
                    repeat=_rep("ITEM in VAR.done", max=2),
                    optional=True,
                    for_each=each("VAR.files"),
                    when="VAR.go",
                ),
                action("B", ins("b")),
            ),
            var={"files": ["a", "b"], "done": ["b"], "go": True},
        )
    )
    w.eval(True)  # a, run 1, attempt 1: bad, inverted to a failure: retried
    w.eval(False)  # attempt 2: a success; until false: run 2, with a whole retry budget
    w.eval(True)
    w.eval(True)  # run 2 fails: the item fails, optional: the loop goes on
    w.eval(False)  # b, run 1: a success, and until holds
    assert w.next()["name"] == "B"
    assert _items(w) == [0, 0, 0, 0, 1]
    checks = [(e.get("on"), e["outcome"]) for e in w.trace if e["kind"] == "check"]
    assert checks == [
        ("when", "entered"),
        ("for_each", "entered"),
        ("until", "repeat"),
        ("until", "passed"),
    ]
    _verify(w)


def test_when_inside_a_repeat_is_checked_again_each_run() -> None:
    w = Walk(
        tree(
            seq(
                "Loop",
                action("Odd", ins("odd run"), when="VAR.n % 2 == 1"),
                action("Count", ins("count at $VAR.n")),
                repeat=_rep("VAR.n >= 3"),
            ),
            var={"n": 0},
        )
    )
    w.write("n", 1)
    w.submit("success")  # run 1 (Odd was skipped at n 0)
    assert w.next()["name"] == "Odd", "run 2 checks Odd's when again, at n 1"
    w.submit("success")
    w.write("n", 2)
    w.submit("success")
    assert w.next()["name"] == "Count", "run 3 skips Odd again, at n 2"
    w.write("n", 3)
    w.submit("success")
    assert w.next() == {"status": "done"}
    assert [e["outcome"] for e in w.trace if e.get("on") == "when"] == [
        "skipped",
        "entered",
        "skipped",
    ]
    _verify(w)


# -- the work one answer may do ----------------------------------------------------------------


def _runs(max: int) -> dict[str, Any]:
    return {"until": "false", "max": max}


def _checks_over(outer: int, inner: int) -> Walk:
    """A `for_each` of check-only actions inside a `for_each`, at the protocol gate."""
    action_ = action("Inner", chk("ITEMS.a >= 0"), for_each=each("VAR.xs", "b", 10_000))
    loops = seq("Outer", action_, for_each=each("VAR.ys", "a", 10_000))
    return Walk(tree(loops, var={"xs": list(range(inner)), "ys": list(range(outer))}), False)


def test_a_for_each_of_300_by_300_checks_is_refused_whole_naming_the_loop() -> None:
    # From a review: this took 20 s inside one answer and wrote 14 MB to the trace.
    w = _checks_over(300, 300)
    error = refused("work_limit", w, engine.Submit("success"))
    # The gate's entry, Outer's list, and 301 entries per outer item: the 2,001st entry is
    # Inner's 192nd check of Outer's 7th item.
    assert error.details["loop"] == "Inner"
    assert error.details["loops"] == [
        {"name": "Inner", "path": [0], "kind": "for_each", "at": "item 192 of 300"},
        {"name": "Outer", "path": [], "kind": "for_each", "at": "item 7 of 300"},
    ]
    assert error.message == (
        f"this answer would write more than {MAX_ENTRIES:,} trace entries, more than one answer "
        "may; it is refused whole and nothing changed (in the loop 'Inner' (for_each item 192 "
        "of 300, path [0]) inside 'Outer' (for_each item 7 of 300, path [])): give the loop "
        "fewer items or runs, or a step for the agent to answer"
    )
    assert w.trace == [] and w.next()["name"] == "Acknowledge_Protocol"


def test_an_answer_may_write_up_to_the_limit_and_no_more() -> None:
    w = _checks_over(1, MAX_ENTRIES - 3)  # gate, two lists and the checks: exactly the limit
    w.submit("success")
    assert len(w.trace) == MAX_ENTRIES and w.next() == {"status": "done"}
    _verify(w)
    refused("work_limit", _checks_over(1, MAX_ENTRIES - 2), engine.Submit("success"))


def test_a_repeat_inside_a_repeat_is_refused_whole_naming_the_inner_loop() -> None:
    # From a review: 10,000 x 10,000 runs had not finished after 90 s.
    poll = action("Poll", chk("true"), repeat=_runs(10_000))
    w = Walk(tree(seq("Rounds", poll, repeat=_runs(10_000))), accept=False)
    error = refused("work_limit", w, engine.Submit("success"))
    # The gate's entry, then a check and an until per run: the 2,001st is run 1,000's until.
    assert error.details["loops"] == [
        {"name": "Poll", "path": [0], "kind": "repeat", "at": "run 1000 of 10000"},
        {"name": "Rounds", "path": [], "kind": "repeat", "at": "run 1 of 10000"},
    ]


def test_visiting_too_many_nodes_is_refused_too_naming_the_loop() -> None:
    # Each item walks down 24 sequences to one check: the visits pass their limit while the
    # entries are well within theirs.
    node = action("Leaf", chk("true"))
    for depth in range(24):
        node = seq(f"S{depth}", node)
    w = Walk(
        tree(
            seq("Root", node, for_each=each("VAR.xs", "x", 10_000)), var={"xs": list(range(1_000))}
        ),
        accept=False,
    )
    error = refused("work_limit", w, engine.Submit("success"))
    assert error.message.startswith(f"this answer would visit more than {MAX_VISITS:,} nodes")
    assert error.details["loop"] == "Root"
    # Root once, then 25 nodes per item (24 sequences and the leaf).
    assert error.details["loops"][0]["at"] == f"item {(MAX_VISITS - 1) // 25 + 1} of 1000"
    assert len(w.trace) == 0


def test_a_tree_without_loops_past_the_limit_is_refused_outside_any_loop() -> None:
    checks = [action(f"C{i}", chk("true")) for i in range(MAX_ENTRIES)]
    w = Walk(tree(seq("Checks", *checks)), accept=False)
    error = refused("work_limit", w, engine.Submit("success"))
    assert (error.details["loop"], error.details["loops"]) == (None, [])
    assert "nothing changed (outside any loop)" in error.message
