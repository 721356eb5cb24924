"""Spans read from a trace's tail (`tether.otel.spans.tail_spans`, what live export reads)
equal the spans read from the whole trace, over random trees and random answers: for each
commit, from every seq the tail could begin at, the tail either says it begins too late (None)
or gives the very spans, ids, times, attributes and events the whole trace gives."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from engine.test_properties import _node  # the random trees the engine property tests walk
from support.trees import Walk, tree
from tether.engine import answers as a
from tether.engine.names import Key
from tether.engine.public import attempt_began, node_at
from tether.engine.ticking import chain, fans
from tether.engine.trace import node_key
from tether.errors import TetherError
from tether.otel.spans import Span, spans, tail_spans


def _act(name: str, *steps: dict[str, Any], **more: Any) -> dict[str, Any]:
    return {"type": "action", "name": name, "steps": list(steps), **more}


def _fan(policy: str) -> dict[str, Any]:
    return {"in": "[1, 2, 3]", "as": "item", "max": 3, "parallel": True, "policy": policy}


_DO, _OK = {"instruct": "do"}, {"evaluate": "ok?"}
# Small trees whose walks meet what a tail can cut through: branches that interleave (and a
# branch `any` halts, re-entered by a `repeat`), retries, a check after an answer, loop items.
_TREES: list[dict[str, Any]] = [
    {
        "type": "sequence",
        "name": "S",
        "children": [
            {
                "type": "parallel",
                "name": "P",
                "policy": policy,
                "children": [_act("A", _DO), _act("B", _DO, _OK, retries=1)],
                **({"repeat": {"until": "VAR.flag == true", "max": 3}} if policy == "any" else {}),
            },
            _act("C", _OK),
        ],
    }
    for policy in ("all", "any")
] + [
    {
        "type": "sequence",
        "name": "S",
        "children": [
            _act("A", _DO, {"check": "VAR.flag == true"}, retries=2),
            _act("B", _OK, for_each={"in": "[1, 2]", "as": "item", "max": 3}, retries=1),
            _act("C", _DO, _OK),
        ],
    },
    # A fan-out whose items `any` halts, the sequence around it run again by a `repeat`.
    {
        "type": "sequence",
        "name": "S",
        "repeat": {"until": "VAR.flag == true", "max": 3},
        "children": [
            _act("A", _DO, _OK, retries=1, for_each=_fan("any")),
            _act("B", _DO),
        ],
    },
    # A fan-out of sequences that `all` halts when an item fails, run again by `retries`.
    {
        "type": "sequence",
        "name": "S",
        "retries": 1,
        "children": [
            {
                "type": "sequence",
                "name": "E",
                "for_each": _fan("all"),
                "children": [_act("A", _DO), _act("B", _OK, {"check": "VAR.flag == true"})],
            },
            _act("C", _OK),
        ],
    },
    # A `parallel` run once per item of a loop: each item's branches, halted or not, are new.
    {
        "type": "parallel",
        "name": "P",
        "policy": 1,
        "for_each": {"in": "[1, 2, 3]", "as": "item", "max": 3},
        "children": [_act("A", _DO, _OK), _act("B", _DO, retries=1)],
    },
]

_answers = st.lists(
    st.tuples(
        st.one_of(
            st.tuples(st.just("eval"), st.booleans()),
            st.tuples(
                st.just("submit"), st.sampled_from(["success", "success", "failure", "running"])
            ),
            st.just(("submit", "success")),  # answers that move, more often than others
            st.just(("eval", True)),
            st.tuples(st.just("write"), st.booleans()),
            st.tuples(st.just("think"), st.just("hmm")),
            st.tuples(st.just("tool"), st.booleans()),
            st.tuples(st.just("stop"), st.integers(1, 2)),
            st.tuples(st.just("close"), st.just(None)),
            st.tuples(st.just("reset"), st.just(None)),
            st.tuples(st.just("jump"), st.integers(0, 5)),
        ),
        st.integers(0, 3),  # which open request it answers (inside a `parallel`)
    ),
    min_size=5,
    max_size=50,
)


def _shape(made: list[Span]) -> list[tuple[Any, ...]]:
    return [
        (
            s.name,
            s.span_id,
            s.parent_id,
            s.start,
            s.end,
            s.attributes,
            [(e.name, e.time, e.attributes) for e in s.events],
            s.status,
            s.message,
            s.done,
        )
        for s in made
    ]


def _actions(node: dict[str, Any], path: list[int]) -> list[list[int]]:
    """The paths of the actions under `node` (at `path`)."""
    if node["type"] == "action":
        return [path]
    return [p for i, c in enumerate(node["children"]) for p in _actions(c, [*path, i])]


def _answer(w: Walk, verb: str, arg: Any, step: str | None) -> None:
    if verb == "eval":
        w.eval(arg, step=step)
    elif verb == "submit":
        w.submit(arg, step=step)
    elif verb == "write":
        w.write("flag", arg)
    elif verb == "think":
        w.think(arg)
    elif verb == "tool":
        w.apply(a.ToolCall("Bash", {"command": "make"}, arg, step=step))
    elif verb == "stop":
        w.apply(a.Stop(arg))
    elif verb == "close":
        w.apply(a.Close(step=step))
    elif verb == "jump":
        actions = _actions(w.tree["root"], [])
        w.apply(a.Jump(actions[arg % len(actions)]))
    else:
        w.reset()


def _check_commit(w: Walk, since: int, before: dict[str, Any]) -> tuple[int | None, str]:
    """Check every tail of the commit whose first entry is `since` (`before`: the state before
    it); the fewest entries before `since` a tail needed, and what the commit completed: no
    attempt, attempts outside any `parallel`, or inside one that the tail places or not."""
    whole = w.trace
    first = w.state["seq"] - len(whole)
    assert not whole or whole[0]["seq"] == first, "a trace's seqs follow each other"
    tid, expected = spans(w.state, w.tree, whole, since)
    enough = _enough_from(w, before, expected)
    shortest = None
    for start in range(since, first - 1, -1):
        tail = [e for e in whole if e["seq"] >= start]
        got = tail_spans(w.state, w.tree, tail, since, first, before)
        if start == first:
            assert got is not None, "the whole trace is always enough"
        if enough is not None and start <= enough:
            assert got is not None, f"a tail from {start} places what {since} completed"
        if got is not None:
            shortest = shortest or since - start
            assert got[0] == tid
            assert _shape(got[1]) == _shape(expected), f"tail from {start}, since {since}"
    keys = [s.attributes.get("tether.action.path") for s in expected]
    inside = _inside(w, before, keys)
    what = "inside a parallel, placed" if inside and enough is not None else "inside a parallel"
    return shortest, what if inside else "outside" if keys else "nothing"


def _enough_from(w: Walk, before: dict[str, Any], made: list[Span]) -> int | None:
    """The seq from which a tail is enough, as the design says, for the commit that completed
    the spans `made` from the state `before`: the execution runs, and each attempt completed
    is the one its action had open before the commit, alone of its action, which its frame
    places (`attempt_began`; inside a `parallel` too) and whose retry number its step token
    gives (an inverted action with `retries` aside): from the entry that opened it. None when
    the design does not say (the property still holds)."""
    keys = [s.attributes.get("tether.action.path") for s in made]
    if w.state["status"] != "running" or None in keys or len(set(keys)) < len(keys):
        return None
    starts = []
    asked = [r for r in before["open"] if r.get("path") is not None]  # not the protocol gate
    for key in keys:
        request = next((r for r in asked if node_key(r["path"]) == key), None)
        if request is None:
            return None
        began = attempt_began(w.tree, before["runtime"], request["path"])
        node = node_at(w.tree, request["path"])
        if began is None or (node.get("retries") and node.get("invert")):
            return None
        starts.append(began - 1)
    return min(starts, default=None)


def _inside(w: Walk, before: dict[str, Any], keys: list[Any]) -> bool:
    """Whether an attempt of the actions at `keys` open before the commit lies inside a
    `parallel` or a fanned-out `for_each`."""
    return any(
        n["type"] == "parallel" or fans(n)
        for r in before["open"]
        if r.get("path") is not None and node_key(r["path"]) in keys
        for n, _ in chain(w.tree, r["path"])[:-1]
    )


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(root=st.one_of(_node(3), st.sampled_from(_TREES)), answers=_answers, accept=st.booleans())
def test_spans_from_a_tail_are_the_spans_from_the_whole_trace(
    root: dict[str, Any], answers: list[tuple[tuple[str, Any], int]], accept: bool
) -> None:
    w = Walk(tree(root), accept=accept)
    for (verb, arg), pick in answers:
        open_ = w.open()
        step = open_[pick % len(open_)].get("step")
        since, before = w.state["seq"], w.state
        try:
            _answer(w, verb, arg, step)
        except TetherError:
            continue
        shortest, what = _check_commit(w, since, before)
        short = shortest is not None and shortest <= 4
        event(f"a tail of 4 entries before the commit is enough: {short}")
        event(f"the commit completed attempts: {what}")


def test_a_tail_that_cuts_an_attempt_of_a_parallel_branch_reads_further() -> None:
    w = Walk(tree(_TREES[0]))
    left, right = (r["step"] for r in w.open())
    w.apply(a.ToolCall("Bash", {"command": "make"}, True, step=left))  # the first entry of A
    w.submit("success", step=right)  # B moves on between A's first entry and its answer
    since, before = w.state["seq"], w.state
    w.submit("success", step=left)
    first = w.state["seq"] - len(w.trace)
    for start in (since - 1, since):
        tail = [e for e in w.trace if e["seq"] >= start]
        assert tail_spans(w.state, w.tree, tail, since, first, before) is None
    _check_commit(w, since, before)


def test_a_jump_back_to_an_action_left_open_begins_its_attempt_afresh() -> None:
    root = {"type": "sequence", "name": "S", "children": [_act("A", _DO, _OK), _act("B", _DO)]}
    w = Walk(tree(root))
    w.submit("success")  # A's first step passed: A is left open by the jump
    w.apply(a.Jump([1]))
    w.apply(a.Jump([0]))
    w.submit("success")
    since, before = w.state["seq"], w.state
    w.eval(True)
    _, made = spans(w.state, w.tree, w.trace, since)
    assert [(s.name, s.events[0].attributes["tether.entry.kind"]) for s in made] == [
        ("invoke_agent A", "jump")
    ]
    _check_commit(w, since, before)


def test_a_branch_whose_siblings_moved_since_its_attempt_began_is_read_from_where_it_began() -> (
    None
):
    root = {
        "type": "sequence",
        "name": "S",
        "children": [
            _act("Z", _DO),
            {"type": "parallel", "name": "P", "children": [_act("A", _DO, _OK), _act("B", _DO)]},
            _act("C", _DO),
        ],
    }
    w = Walk(tree(root))
    w.submit("success")  # Z: the parallel's branches begin at seq 2
    left, right = (r["step"] for r in w.open())
    w.submit("success", step=left)  # A's first step, then B's calls and A's, interleaved
    for _ in range(3):
        w.apply(a.ToolCall("Bash", {"command": "make"}, True, step=right))
    w.apply(a.ToolCall("Bash", {"command": "test"}, True, step=w.open()[0]["step"]))
    w.submit("success", step=right)
    since, before = w.state["seq"], w.state
    w.eval(True)  # ends A's attempt, begun at seq 2, seven entries back
    assert attempt_began(w.tree, before["runtime"], [1, 0]) == 2
    first = w.state["seq"] - len(w.trace)
    reads = {
        start: tail_spans(w.state, w.tree, w.trace[start:], since, first, before)
        for start in range(first + 1, since + 1)
    }
    assert [start for start, got in reads.items() if got is not None] == [1]
    _check_commit(w, since, before)
    # An execution stored before frames kept where attempts began reads the whole trace.
    runtime = {
        k: {n: v for n, v in f.items() if n != Key.BEGAN} for k, f in before["runtime"].items()
    }
    older = {**before, "runtime": runtime}
    assert tail_spans(w.state, w.tree, w.trace[1:], since, first, older) is None
    _check_commit(w, since, older)


def test_a_branch_a_parallel_halted_begins_afresh_when_a_repeat_runs_it_again() -> None:
    w = Walk(tree(_TREES[1], var={"flag": False}))  # `any`, run again by a `repeat`
    right = w.open()[1]["step"]
    w.apply(a.ToolCall("Bash", {"command": "make"}, True, step=right))  # B's attempt, halted
    w.submit("success", step=w.open()[0]["step"])  # A ends the parallel; the repeat runs again
    assert [r["name"] for r in w.open()] == ["A", "B"]
    assert attempt_began(w.tree, w.state["runtime"], [0, 1]) == 4  # after the `until` check
    w.submit("success", step=w.open()[1]["step"])
    since, before = w.state["seq"], w.state
    w.eval(True, step=w.open()[1]["step"])
    _, made = spans(w.state, w.tree, w.trace, since)
    assert [[e.attributes["tether.seq"] for e in s.events] for s in made] == [[4, 5]]
    tail = [e for e in w.trace if e["seq"] >= 3]
    assert tail_spans(w.state, w.tree, tail, since, 0, before) is not None
    _check_commit(w, since, before)


def test_a_branch_a_parallel_halted_and_entered_again_by_a_retry_is_not_placed() -> None:
    root = {
        "type": "sequence",
        "name": "S",
        "children": [
            {
                "type": "parallel",
                "name": "P",
                "retries": 1,
                "children": [_act("A", _DO), _act("B", _DO)],
            },
            _act("C", _DO),
        ],
    }
    w = Walk(tree(root))
    right = w.open()[1]["step"]
    w.apply(a.ToolCall("Bash", {"command": "make"}, True, step=right))  # B's attempt, halted
    w.submit("failure", step=w.open()[0]["step"])  # A fails the parallel, retried at once
    assert w.state["runtime"]["0.1"][Key.BEGAN] == 3
    # No entry says the parallel ran again: the reading goes on with B's halted attempt.
    assert attempt_began(w.tree, w.state["runtime"], [0, 1]) is None
    since, before = w.state["seq"], w.state
    w.submit("success", step=w.open()[1]["step"])
    _, made = spans(w.state, w.tree, w.trace, since)
    assert [[e.attributes["tether.seq"] for e in s.events] for s in made] == [[1, 3]]
    _check_commit(w, since, before)
