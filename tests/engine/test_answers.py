"""What every answer carries back (`next`) and forward (`values`): one call per step. Each test
proves one row of docs/semantics.md ("One call per step")."""

from __future__ import annotations

from typing import Any

from support.trees import Walk, action, chk, ev, ins, par, refused, seq, tree
from tether.engine import public as engine
from tether.engine.replay import verify

WRITES = tree(
    seq(
        "S",
        action(
            "Measure", ins("measure", writes=["coverage", "report.tag"]), chk("VAR.coverage > 80")
        ),
        action("Judge", ev("good?")),
    ),
    var={"coverage": None, "report": {}},
)


def test_every_answer_returns_next_the_request_that_follows_it() -> None:
    w = Walk(WRITES, accept=False)
    gate = w.next()
    accepted = w.submit("success", step=gate["step"])
    assert accepted["next"] == w.next() and accepted["next"]["name"] == "Measure"
    running = w.submit("running")
    assert running["next"] == w.next() == accepted["next"]
    done = w.apply(engine.Submit("success", values={"coverage": 90, "report.tag": "v1"}))
    assert done["status"] == "action_complete" and done["next"] == w.next()
    assert done["next"]["type"] == "evaluate"
    last = w.eval(True)
    assert last["next"] == {"status": "done"} == w.next()
    assert verify(w.tree, w.state, w.trace) == []


def test_next_of_a_failing_answer_is_the_terminal_status() -> None:
    w = Walk(WRITES)
    response = w.apply(engine.Submit("success", values={"coverage": 12, "report.tag": "v1"}))
    assert response["status"] == "action_failed"
    assert response["next"] == w.next() == {"status": "failure"}
    assert w.state["failure"] in response["message"]  # why: in the answer that ended it


def test_values_land_before_the_answer_is_judged_as_var_writes_of_the_step() -> None:
    w = Walk(WRITES)
    request = w.next()
    response = w.apply(
        engine.Submit("success", step=request["step"], values={"coverage": 95, "report.tag": "v2"})
    )
    assert response["status"] == "action_complete", "writes and check saw the values"
    assert w.state["var"] == {"coverage": 95, "report": {"tag": "v2"}}
    kinds = [(e["kind"], e.get("path"), e["cursor"]) for e in w.trace[1:]]
    cursor = {"path": request["path"], "step": 0}
    assert kinds[:3] == [
        ("var_write", "coverage", cursor),
        ("var_write", "report.tag", cursor),
        ("instruct", None, cursor),
    ]
    assert kinds[3][0] == "check"
    assert verify(w.tree, w.state, w.trace) == []


def test_values_on_an_eval_and_on_the_gate_are_written_too() -> None:
    w = Walk(WRITES, accept=False)
    w.apply(engine.Submit("success", values={"report.by": "gate"}))
    gate_write = w.trace[0]
    assert (gate_write["kind"], gate_write["cursor"]) == ("var_write", None)
    w.apply(engine.Submit("success", values={"coverage": 81, "report.tag": "t"}))
    w.apply(engine.Eval(True, values={"verdict": "good"}))
    assert w.state["var"]["verdict"] == "good" and w.next() == {"status": "done"}
    assert verify(w.tree, w.state, w.trace) == []


def test_an_answer_refused_takes_its_values_with_it() -> None:
    w = Walk(WRITES)
    request = w.next()
    w.submit("running")
    stale = "0:0:0:0:ffffffff"
    refused("stale_step", w, engine.Submit("success", step=stale, values={"coverage": 99}))
    refused("wrong_phase", w, engine.Eval(True, values={"coverage": 99}))
    err = refused("writes_missing", w, engine.Submit("success", values={"coverage": 99}))
    assert err.details["missing"] == ["report.tag"]
    bad = {"coverage": 99, "report.tag.": "x"}
    refused("invalid_path", w, engine.Submit("success", step=request["step"], values=bad))
    assert w.state["var"] == {"coverage": None, "report": {}}


def test_values_of_an_answer_in_a_parallel_go_to_the_step_it_answers() -> None:
    t = tree(par("P", action("A", ins("a", writes=["a"])), action("B", ins("b", writes=["b"]))))
    w = Walk(t)
    first, second = w.open()
    response = w.apply(engine.Submit("success", step=second["step"], values={"b": 2}))
    assert response["status"] == "action_complete"
    assert w.trace[-2]["cursor"] == {"path": second["path"], "step": 0}
    assert response["next"] == first == w.next()
    assert verify(w.tree, w.state, w.trace) == []


def test_a_walk_driven_by_the_next_of_each_answer_alone_reaches_the_end() -> None:
    """Walking by `next` of each answer alone reaches the same end as calling next each time."""
    t = tree(
        seq(
            "Root",
            action("One", ev("one?"), ins("one", writes=["x"])),
            par("Both", action("L", ins("l")), action("R", ins("r"), retries=1)),
        )
    )
    by_next: list[dict[str, Any]] = []
    w = Walk(t, accept=False)
    request = w.next()
    while "step" in request:
        if request["type"] == "evaluate":
            response = w.eval(True, step=request["step"])
        else:
            values = {p: 1 for p in request.get("writes", [])}
            response = w.apply(engine.Submit("success", step=request["step"], values=values))
        by_next.append(request)
        assert response["next"] == w.next()
        request = response["next"]
    assert request == {"status": "done"}
    assert [r["name"] for r in by_next] == ["Acknowledge_Protocol", "One", "One", "L", "R"]
