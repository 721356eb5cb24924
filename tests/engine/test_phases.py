"""The phase machine: gate, tokens, phases, terminal states, think, reset, var. Each test
proves one row of docs/semantics.md ("Phases, tokens and scopes")."""

from __future__ import annotations

import pytest

from support.trees import Walk, action, ev, ins, seq, tree
from tether.engine.protocol import GATE_NAME, PROTOCOL_TEXT
from tether.engine.replay import verify
from tether.errors import TetherError

SIMPLE = tree(
    seq("S", action("A", ev("a?")), action("B", ins("b"))), var={"n": 1}, const={"limit": 3}
)


def _refused(code: str, call: object, *args: object, **kwargs: object) -> TetherError:
    with pytest.raises(TetherError) as err:
        call(*args, **kwargs)  # type: ignore[operator]
    assert err.value.code == code, err.value.message
    return err.value


def test_fresh_execution_is_gated_by_the_protocol() -> None:
    w = Walk(SIMPLE, accept=False)
    request = w.next()
    assert request["type"] == "instruct" and request["name"] == GATE_NAME
    assert request["instruction"] == PROTOCOL_TEXT
    assert len(PROTOCOL_TEXT) < 1500
    assert w.state["phase"] == "protocol"


def test_gate_accept_then_first_step() -> None:
    w = Walk(SIMPLE, accept=False)
    assert w.submit("success")["status"] == "protocol_accepted"
    assert w.next()["name"] == "A"
    assert w.state["protocol_accepted"] is True
    assert w.trace[0]["kind"] == "protocol"


def test_gate_reject_fails_the_execution() -> None:
    w = Walk(SIMPLE, accept=False)
    assert w.submit("failure")["status"] == "protocol_rejected"
    assert w.next()["status"] == "failure"


def test_gate_running_reprompts() -> None:
    w = Walk(SIMPLE, accept=False)
    assert w.submit("running")["status"] == "running"
    assert w.next()["name"] == GATE_NAME
    assert w.submit("success")["status"] == "protocol_accepted"
    assert verify(w.tree, w.state, w.trace) == []


def test_eval_on_the_gate_is_wrong_phase() -> None:
    w = Walk(SIMPLE, accept=False)
    err = _refused("wrong_phase", w.eval, True)
    assert err.details["current"]["name"] == GATE_NAME


def test_next_is_replay_safe() -> None:
    w = Walk(SIMPLE)
    first = w.next()
    assert w.next() == first
    assert w.next() == first


def test_eval_on_an_instruct_and_submit_on_an_evaluate_are_refused() -> None:
    w = Walk(SIMPLE)
    err = _refused("wrong_phase", w.submit, "success")
    assert "eval" in err.message and err.details["current"]["name"] == "A"
    w.eval(True)
    _refused("wrong_phase", w.eval, True)


def test_stale_token_is_refused_with_the_current_request() -> None:
    w = Walk(SIMPLE)
    token = w.next()["step"]
    w.eval(True, step=token)
    err = _refused("stale_step", w.eval, True, step=token)
    assert err.details["current"]["name"] == "B"
    assert len(w.asked()) == 1, "a retried answer never advances twice"


def test_foreign_token_is_refused() -> None:
    other = Walk(SIMPLE)
    w = Walk(SIMPLE)
    w.state["salt"] = "ffff0000"
    w.reset()
    w.submit("success")
    err = _refused("stale_step", w.eval, True, step=other.next()["step"])
    assert err.details["current"]["step"] == w.next()["step"]


def test_state_unchanged_after_refusal() -> None:
    w = Walk(SIMPLE)
    before = dict(w.state)
    _refused("stale_step", w.eval, True, step="nonsense")
    assert w.state == before


def test_terminal_states_are_sticky() -> None:
    w = Walk(tree(action("A", ev("a"))))
    w.eval(True)
    assert w.next() == {"status": "done"}
    _refused("execution_finished", w.eval, True)
    _refused("execution_finished", w.submit, "success")
    _refused("execution_finished", w.write, "x", 1)
    assert w.next() == {"status": "done"}

    w = Walk(tree(action("A", ev("a"))))
    w.eval(False)
    _refused("execution_finished", w.eval, True)
    assert w.next()["status"] == "failure"


def test_think_only_while_an_action_is_in_flight() -> None:
    w = Walk(SIMPLE, accept=False)
    _refused("wrong_phase", w.think, "too early")
    w.submit("success")
    assert w.think("half way")["status"] == "recorded"
    assert w.trace[-1] == {**w.trace[-1], "kind": "think", "name": "A", "submitted": "half way"}
    assert w.next()["name"] == "A", "think does not move the cursor"
    w.eval(True)
    w.submit("success")
    _refused("execution_finished", w.think, "after the end")


def test_reset_clears_trace_and_runtime_restores_scopes_and_rearms_gate() -> None:
    w = Walk(SIMPLE, var={"n": 7})
    w.write("n", 100)
    w.eval(True)
    assert w.state["runtime"]
    assert w.reset()["status"] == "reset"
    assert w.state["var"] == {"n": 7}, "restored to the scopes given at start"
    assert w.state["runtime"] == {}
    assert [e["kind"] for e in w.trace] == ["reset"]
    assert w.next()["name"] == GATE_NAME
    assert w.state["protocol_accepted"] is False
    assert verify(w.tree, w.state, w.trace) == []


def test_reset_is_idempotent() -> None:
    w = Walk(SIMPLE)
    w.eval(True)
    w.reset()
    once = dict(w.state)
    trace_once = list(w.trace)
    w.reset()
    assert w.state == once
    assert w.trace == trace_once


def test_reset_of_a_finished_execution_starts_over() -> None:
    w = Walk(tree(action("A", ev("a"))))
    w.eval(False)
    w.reset()
    w.submit("success")
    w.eval(True)
    assert w.next() == {"status": "done"}
    assert verify(w.tree, w.state, w.trace) == []


def test_tokens_from_before_a_reset_are_stale() -> None:
    w = Walk(SIMPLE)
    token = w.next()["step"]
    w.reset()
    w.submit("success")
    _refused("stale_step", w.eval, True, step=token)


def test_trace_numbers_keep_increasing_across_reset() -> None:
    w = Walk(SIMPLE)
    w.eval(True)
    last = w.trace[-1]["seq"]
    w.reset()
    w.submit("success")
    assert [e["seq"] for e in w.trace] == [last + 1, last + 2]


def test_var_write_dotted_paths_create_objects() -> None:
    w = Walk(SIMPLE)
    w.write("build.image.tag", "v1")
    assert w.state["var"]["build"] == {"image": {"tag": "v1"}}
    w.write("$VAR.build.image.digest", "sha")
    assert w.state["var"]["build"]["image"] == {"tag": "v1", "digest": "sha"}
    entry = w.trace[-1]
    assert entry["kind"] == "var_write" and entry["value"] == "sha"


def test_var_write_into_a_scalar_is_a_bad_path() -> None:
    w = Walk(SIMPLE)
    err = _refused("invalid_path", w.write, "n.deeper", 1)
    assert "$VAR.n holds 1, not an object" in err.message
    for bad in ("", "a..b", ".a", "a."):
        _refused("invalid_path", w.write, bad, 1)


def test_const_is_never_written_after_start() -> None:
    w = Walk(SIMPLE, const={"limit": 5})
    assert w.state["const"] == {"limit": 5}
    w.write("limit", 99)
    assert w.state["const"] == {"limit": 5}
    assert w.state["var"]["limit"] == 99
