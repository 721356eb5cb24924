"""Fan-out at run time: a `for_each` with `parallel: true` runs its items side by side, one
branch per item over a list the workflow wrote, decided by its `policy` as a `parallel` node
is; each item's open step is claimable by one agent, and `verify` and fork re-derive the walk.
Each test proves one row of docs/semantics.md ("Fan-out")."""

from __future__ import annotations

from typing import Any

from support.trees import Walk, action, chk, each, ins, refused, seq, tree
from tether.engine import public as core
from tether.engine.replay import fork, verify
from tether.engine.ticking import MAX_ENTRIES

FILES = ["a.py", "b.py", "c.py"]


def _fan(*steps: dict[str, Any], policy: str | int = "all", **modifiers: Any) -> dict[str, Any]:
    """Plan (writes `files`), then Fix fanned out over them."""
    loop = each("VAR.files", "file", parallel=True, policy=policy)
    return tree(
        seq(
            "Root",
            action("Plan", ins("List the files to fix.", writes=["files"])),
            action("Fix", *(steps or (ins("Fix the file."),)), for_each=loop, **modifiers),
            action("Ship", ins("Ship it.")),
        )
    )


def _planned(t: dict[str, Any], files: list[Any]) -> Walk:
    w = Walk(t)
    w.write("files", files)
    w.submit("success")
    return w


def _verify(w: Walk) -> None:
    assert verify(w.tree, w.state, w.trace) == []


def _by_item(w: Walk) -> dict[Any, str]:
    """The open step tokens by the item value each request carries."""
    return {r["item"]["value"]: r["step"] for r in w.open() if "item" in r}


def test_a_parallel_for_each_opens_one_branch_per_item_the_workflow_wrote() -> None:
    w = _planned(_fan(), FILES)
    opened = w.open()
    assert [r["item"] for r in opened] == [
        {"name": "file", "index": i, "value": f} for i, f in enumerate(FILES)
    ]
    assert [r["path"] for r in opened] == [[1, 0], [1, 1], [1, 2]], "the item index in the path"
    assert len({r["step"] for r in opened}) == 3, "a token of its own per item"
    listed = [e for e in w.trace if e.get("on") == "for_each"]
    assert [(e["outcome"], e["count"]) for e in listed] == [("entered", 3)]
    _verify(w)


def test_the_items_are_answered_by_token_in_any_order_and_the_walk_goes_on() -> None:
    w = _planned(_fan(), FILES)
    tokens = _by_item(w)
    w.submit("success", step=tokens["c.py"])
    assert sorted(_by_item(w)) == ["a.py", "b.py"], "an untouched item keeps its step"
    assert _by_item(w)["a.py"] == tokens["a.py"]
    w.submit("success", step=tokens["a.py"])
    w.submit("success", step=tokens["b.py"])
    assert w.names() == ["Ship"]
    answered = [e["item"] for e in w.trace if e["kind"] == "instruct" and e["name"] == "Fix"]
    assert answered == [2, 0, 1], "every entry of an item names its index"
    w.submit("success")
    assert w.next() == {"status": "done"}
    _verify(w)


def test_each_item_runs_its_own_steps_side_by_side() -> None:
    w = _planned(_fan(ins("Fix the file."), ins("Test the fix.")), FILES[:2])
    tokens = _by_item(w)
    w.submit("success", step=tokens["b.py"])
    steps = {r["item"]["value"]: r["index"] for r in w.open() if "item" in r}
    assert steps == {"a.py": 0, "b.py": 1}, "b.py went on to its second step alone"
    _verify(w)


def test_policy_all_fails_on_the_first_failing_item_and_halts_the_others() -> None:
    w = _planned(_fan(), FILES)
    w.submit("failure", step=_by_item(w)["b.py"])
    assert w.next()["status"] == "failure"
    assert w.open() == [w.next()], "the other items were halted"
    _verify(w)


def test_policy_any_succeeds_on_the_first_item_that_succeeds() -> None:
    w = _planned(_fan(policy="any"), FILES)
    w.submit("failure", step=_by_item(w)["a.py"])
    assert sorted(_by_item(w)) == ["b.py", "c.py"]
    w.submit("success", step=_by_item(w)["c.py"])
    assert w.names() == ["Ship"], "b.py was halted"
    _verify(w)


def test_policy_n_needs_n_items_and_fails_once_they_cannot_be_reached() -> None:
    w = _planned(_fan(policy=2), FILES)
    w.submit("success", step=_by_item(w)["a.py"])
    w.submit("success", step=_by_item(w)["c.py"])
    assert w.names() == ["Ship"]
    w = _planned(_fan(policy=2), FILES)
    w.submit("failure", step=_by_item(w)["a.py"])
    w.submit("failure", step=_by_item(w)["b.py"])
    assert w.next()["status"] == "failure"
    _verify(w)


def test_a_list_shorter_than_the_policy_needs_fails_with_the_reason() -> None:
    w = _planned(_fan(policy=3), FILES[:2])
    assert w.next()["status"] == "failure"
    listed = [e for e in w.trace if e.get("on") == "for_each"]
    assert [(e["outcome"], e["note"]) for e in listed] == [
        ("error", "the list has 2 items, fewer than its policy 3 needs")
    ]
    assert "fewer than its policy 3 needs" in w.state["failure"]


def test_an_empty_list_succeeds_without_opening_a_branch_whatever_the_policy() -> None:
    for policy in ("all", "any", 2):
        w = _planned(_fan(policy=policy), [])
        assert w.names() == ["Ship"]
        assert [e["outcome"] for e in w.trace if e.get("on") == "for_each"] == ["empty"]


def test_with_optional_a_failed_item_counts_as_success() -> None:
    w = _planned(_fan(optional=True), FILES[:2])
    w.submit("failure", step=_by_item(w)["a.py"])
    assert sorted(_by_item(w)) == ["b.py"]
    w.submit("success", step=_by_item(w)["b.py"])
    assert w.names() == ["Ship"]
    _verify(w)


def test_retries_retry_the_failed_item_alone() -> None:
    w = _planned(_fan(retries=1), FILES[:2])
    before = _by_item(w)
    w.submit("failure", step=before["a.py"])
    after = _by_item(w)
    assert after["b.py"] == before["b.py"], "the other item goes on untouched"
    assert after["a.py"] != before["a.py"], "the failed item runs again, with a new token"
    w.submit("success", step=after["a.py"])
    w.submit("success", step=after["b.py"])
    assert w.names() == ["Ship"]
    _verify(w)


def test_checks_in_an_item_see_its_own_item() -> None:
    w = _planned(_fan(ins("Fix the file."), chk("ITEM == 'a.py'")), FILES[:2])
    w.submit("success", step=_by_item(w)["b.py"])
    assert w.next()["status"] == "failure", "b.py's check saw b.py"
    checks = [(e["item"], e["outcome"]) for e in w.trace if e["kind"] == "check" and "on" not in e]
    assert checks == [(1, "failed")]
    _verify(w)


def test_a_fan_out_past_the_work_limit_is_refused_whole_naming_the_item() -> None:
    t = _fan(chk("true"))
    t["root"]["children"][1]["for_each"]["max"] = 10_000
    w = Walk(t)
    w.write("files", list(range(MAX_ENTRIES + 10)))
    error = refused("work_limit", w, core.Submit("success"))
    assert error.details["loop"] == "Fix"
    assert error.details["loops"][0]["at"].startswith("item ")
    assert f"more than {MAX_ENTRIES:,} trace entries" in error.message


def test_a_jump_into_one_item_is_refused() -> None:
    w = _planned(_fan(), FILES)
    error = refused("invalid_value", w, core.Jump([1, 0]))
    assert "parallel: true" in error.message


def test_a_fork_in_the_middle_of_a_fan_out_verifies() -> None:
    w = _planned(_fan(), FILES)
    w.submit("success", step=_by_item(w)["b.py"])
    stored = dict(w.state, initial={"var": {}, "const": {}})
    at = len(w.trace)
    state, entries = fork(w.tree, stored, w.trace, at, uri="memory://f", salt="f0f0", now="t")
    assert entries == w.trace
    assert [r["item"]["value"] for r in state["open"]] == ["a.py", "c.py"]
