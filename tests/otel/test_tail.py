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
from tether.errors import TetherError
from tether.otel.spans import Span, spans, tail_spans


def _act(name: str, *steps: dict[str, Any], **more: Any) -> dict[str, Any]:
    return {"type": "action", "name": name, "steps": list(steps), **more}


_DO, _OK = {"instruct": "do"}, {"evaluate": "ok?"}
# Small trees whose walks meet what a tail can cut through: branches that interleave (and a
# branch `any` halts, re-entered by a `repeat`), retries, a check after an answer, loop items.
_TREES = [
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
    }
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


def _check_commit(w: Walk, since: int, asked: list[dict[str, Any]]) -> int | None:
    """Check every tail of the commit whose first entry is `since`; the fewest entries before
    `since` a tail needed (`asked`: the requests open before it)."""
    whole = w.trace
    first = w.state["seq"] - len(whole)
    assert not whole or whole[0]["seq"] == first, "a trace's seqs follow each other"
    tid, expected = spans(w.state, w.tree, whole, since)
    shortest = None
    for start in range(since, first - 1, -1):
        tail = [e for e in whole if e["seq"] >= start]
        got = tail_spans(w.state, w.tree, tail, since, first, asked)
        if start == first:
            assert got is not None, "the whole trace is always enough"
        if got is not None:
            shortest = shortest or since - start
            assert got[0] == tid
            assert _shape(got[1]) == _shape(expected), f"tail from {start}, since {since}"
    return shortest


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(root=st.one_of(_node(3), st.sampled_from(_TREES)), answers=_answers, accept=st.booleans())
def test_spans_from_a_tail_are_the_spans_from_the_whole_trace(
    root: dict[str, Any], answers: list[tuple[tuple[str, Any], int]], accept: bool
) -> None:
    w = Walk(tree(root), accept=accept)
    for (verb, arg), pick in answers:
        open_ = w.open()
        step = open_[pick % len(open_)].get("step")
        since, asked = w.state["seq"], w.state["open"]
        try:
            _answer(w, verb, arg, step)
        except TetherError:
            continue
        shortest = _check_commit(w, since, asked)
        short = shortest is not None and shortest <= 4
        event(f"a tail of 4 entries before the commit is enough: {short}")


def test_a_tail_that_cuts_an_attempt_of_a_parallel_branch_reads_further() -> None:
    w = Walk(tree(_TREES[0]))
    left, right = (r["step"] for r in w.open())
    w.apply(a.ToolCall("Bash", {"command": "make"}, True, step=left))  # the first entry of A
    w.submit("success", step=right)  # B moves on between A's first entry and its answer
    since, asked = w.state["seq"], w.state["open"]
    w.submit("success", step=left)
    first = w.state["seq"] - len(w.trace)
    for start in (since - 1, since):
        tail = [e for e in w.trace if e["seq"] >= start]
        assert tail_spans(w.state, w.tree, tail, since, first, asked) is None
    _check_commit(w, since, asked)


def test_a_jump_back_to_an_action_left_open_begins_its_attempt_afresh() -> None:
    root = {"type": "sequence", "name": "S", "children": [_act("A", _DO, _OK), _act("B", _DO)]}
    w = Walk(tree(root))
    w.submit("success")  # A's first step passed: A is left open by the jump
    w.apply(a.Jump([1]))
    w.apply(a.Jump([0]))
    w.submit("success")
    since, asked = w.state["seq"], w.state["open"]
    w.eval(True)
    _, made = spans(w.state, w.tree, w.trace, since)
    assert [(s.name, s.events[0].attributes["tether.entry.kind"]) for s in made] == [
        ("invoke_agent A", "jump")
    ]
    _check_commit(w, since, asked)
