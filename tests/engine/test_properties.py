"""Property tests: random valid trees and random answer sequences keep the engine's invariants.

Invariants: trace numbers strictly increase; terminal states stay terminal until a reset; a
running execution always has an open request; a refused answer changes nothing; and the trace
alone re-derives the state (`verify` finds no difference).
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from support.trees import Walk, tree
from tether.engine.replay import verify
from tether.engine.ticking import tree_path
from tether.errors import TetherError

_names = st.sampled_from(["a", "b", "c", "d", "e", "f"])


def _step() -> st.SearchStrategy[dict[str, Any]]:
    return st.one_of(
        st.builds(lambda t: {"evaluate": t}, st.just("ok?")),
        st.builds(
            lambda w: {"instruct": "do", **({"writes": ["flag"]} if w else {})}, st.booleans()
        ),
        st.builds(
            lambda e: {"check": e},
            st.sampled_from(["VAR.flag == true", "has(VAR.flag)", "VAR.missing > 1"]),
        ),
    )


def _modifiers() -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {},
        optional={
            "retries": st.integers(1, 2),
            "optional": st.just(True),
            "when": st.sampled_from(["VAR.flag == true", "!has(VAR.flag)"]),
            "invert": st.just(True),
            "repeat": st.builds(
                lambda until, n: {"until": until, "max": n},
                st.sampled_from(["VAR.flag == true", "has(VAR.flag)", "ITEM_INDEX > 0"]),
                st.integers(1, 3),
            ),
            "for_each": st.builds(
                lambda items, n, fan: (
                    {"in": items, "as": "item", "max": n}
                    | ({"parallel": True, "policy": fan} if fan else {})
                ),
                st.sampled_from(["[1, 2]", "[]", "[ITEM, 3]", "VAR.missing"]),
                st.integers(1, 3),
                st.sampled_from([None, None, "all", "any", 1, 2]),  # fanned out at run time
            ),
        },
    )


def _unique(children: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [dict(c, name=f"{c['name']}{i}") for i, c in enumerate(children)]


def _node(depth: int) -> st.SearchStrategy[dict[str, Any]]:
    action = st.builds(
        lambda n, steps, mods: {"type": "action", "name": n, "steps": steps, **mods},
        _names,
        st.lists(_step(), min_size=1, max_size=3),
        _modifiers(),
    )
    if depth == 0:
        return action
    children = st.lists(_node(depth - 1), min_size=1, max_size=3).map(_unique)
    composite = st.builds(
        lambda kind, n, kids, mods, policy: {
            "type": kind,
            "name": n,
            "children": kids,
            **mods,
            **(
                {"policy": policy if policy in ("all", "any") else min(int(policy), len(kids))}
                if kind == "parallel"
                else {}
            ),
        },
        st.sampled_from(["sequence", "selector", "parallel"]),
        _names,
        children,
        _modifiers(),
        st.sampled_from(["all", "any", "1", "2"]),
    )
    return st.one_of(action, composite)


_answers = st.lists(
    st.one_of(
        st.tuples(st.just("eval"), st.booleans()),
        st.tuples(st.just("eval"), st.just(True)),
        st.tuples(st.just("submit"), st.sampled_from(["success", "success", "failure", "running"])),
        st.tuples(st.just("submit"), st.just("success")),
        st.tuples(st.just("write"), st.booleans()),
        st.tuples(st.just("think"), st.just("hmm")),
        st.tuples(st.just("pick"), st.integers(0, 3)),
        st.tuples(st.just("stale"), st.just(None)),
        st.tuples(st.just("reset"), st.just(None)),
    ),
    min_size=5,
    max_size=60,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(root=_node(3), answers=_answers, accept=st.booleans())
def test_random_walks_keep_the_invariants(
    root: dict[str, Any], answers: list[tuple[str, Any]], accept: bool
) -> None:
    _walk_randomly(root, answers, accept)


def _fanned(node: dict[str, Any], policy: str | int) -> dict[str, Any]:
    loop = {"in": "[1, 2, 3]", "as": "item", "max": 3, "parallel": True, "policy": policy}
    return {**node, "for_each": loop}


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    root=st.builds(_fanned, _node(2), st.sampled_from(["all", "any", 1, 2, 3])),
    answers=_answers,
)
def test_random_walks_of_a_fan_out_keep_the_invariants(
    root: dict[str, Any], answers: list[tuple[str, Any]]
) -> None:
    """A random node fanned out over three items, walked at random (`pick` answers the items
    in any order): the same invariants, `verify` included."""
    _walk_randomly(root, answers, True)


def _walk_randomly(root: dict[str, Any], answers: list[tuple[str, Any]], accept: bool) -> None:
    w = Walk(tree(root), accept=accept)
    seen_stale: list[str] = []
    pick = 0
    for verb, arg in answers:
        before = dict(w.state)
        trace_before = list(w.trace)
        terminal = w.state["status"] != "running"
        open_ = w.open()
        step = open_[pick % len(open_)].get("step") if pick else None
        try:
            if verb == "eval":
                w.eval(arg, step=step)
            elif verb == "submit":
                w.submit(arg, step=step)
            elif verb == "write":
                w.write("flag", arg)
            elif verb == "think":
                w.think(arg)
            elif verb == "pick":
                pick = arg
                continue
            elif verb == "stale":
                if seen_stale:
                    w.eval(True, step=seen_stale[0])
                continue
            else:
                w.reset()
                terminal = False
        except TetherError:
            assert w.state == before, "a refused answer changes nothing"
            assert w.trace == trace_before
            continue
        if step and step not in [r.get("step") for r in w.open()]:
            seen_stale.append(step)
        seqs = [e["seq"] for e in w.trace]
        assert seqs == sorted(set(seqs)), "trace numbers strictly increase"
        if terminal:
            assert w.state["status"] == before["status"], "terminal states are sticky"
        if w.state["status"] == "running":
            assert w.state["open"], "a running execution always has an open request"
            assert w.next() == w.state["open"][0]
        else:
            assert w.next()["status"] in ("done", "failure")
    event(f"final status: {w.state['status']}")
    paths = [e["cursor"]["path"] for e in w.trace if e.get("cursor") and e["cursor"]["path"]]
    event(f"an item fanned out answered: {any(tree_path(w.tree, p) != p for p in paths)}")
    event(f"trace entries: {'>10' if len(w.trace) > 10 else '<=10'}")
    assert verify(w.tree, w.state, w.trace) == []
