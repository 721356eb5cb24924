"""Fork: a new execution from any prefix of a trace, derived by replay. Each test proves one row
of docs/semantics.md ("Fork")."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from support.trees import Walk, action, chk, ev, ins, par, seq, tree
from tether.engine import public as engine
from tether.engine.replay import fork, verify
from tether.errors import TetherError

# A walk with parallel branches, a retry, writes sent with answers, checks and a human step.
REVIEW = tree(
    seq(
        "Review",
        action("Context", ins("summarise", writes=["summary"])),
        par(
            "Both",
            action("Style", ins("style", writes=["findings"])),
            action("Tests", ins("run tests", writes=["green"]), chk("VAR.green"), retries=2),
        ),
        action("Decide", ev("approve?"), {"human": "Sign off?"}),
    ),
    var={"summary": None, "findings": [], "green": None},
)


def _walk() -> tuple[Walk, dict[int, dict[str, Any]]]:
    """The walk, and what `next` returned after each prefix length it passed through."""
    w = Walk(REVIEW, accept=False)
    seen = {0: w.next()}

    def answer(a: engine.Answer) -> None:
        w.apply(a)
        seen[len(w.trace)] = w.next()

    answer(engine.Submit("success"))
    answer(engine.Submit("success", values={"summary": "a fix"}))
    style, tests = w.open()
    answer(engine.Submit("success", step=tests["step"], values={"green": False}))
    retry = w.open()[1]
    answer(engine.Think("flaky", step=retry["step"]))
    answer(engine.Submit("success", step=retry["step"], values={"green": True}))
    answer(engine.Submit("success", step=style["step"], values={"findings": ["typo"]}))
    answer(engine.Eval(True))
    answer(engine.Human(True, "cli", "ok"))
    assert w.next() == {"status": "done"}
    return w, seen


def _fork(w: Walk, at: int, uri: str = "memory://fork") -> Any:
    return fork(w.tree, w.state, w.trace, at, uri=uri, salt="f0f0f0f0", now="2026-02-02T00:00:00Z")


def _without_token(request: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in request.items() if k != "step"}


def test_a_fork_at_every_answer_boundary_replays_and_opens_what_the_original_had_open() -> None:
    w, seen = _walk()
    original = copy.deepcopy((w.state, w.trace))
    assert len(seen) > 8
    for at, expected in seen.items():
        state, entries = _fork(w, at)
        assert entries == w.trace[:at]
        assert state["uri"] == "memory://fork" and state["seq"] == len(entries)
        assert _without_token(engine.current(state)) == _without_token(expected), at
        assert verify(w.tree, state, entries) == [], at
        assert (w.state, w.trace) == original, "the original is untouched"


def test_a_fork_has_step_tokens_of_its_own() -> None:
    w, seen = _walk()
    at = max(k for k, r in seen.items() if "step" in r)
    state, _ = _fork(w, at)
    mine = engine.current(state)
    assert mine["step"] != seen[at]["step"] and mine["step"].endswith(":f0f0f0f0")


def test_a_fork_is_refused_outside_the_trace_or_between_an_answer_and_its_checks() -> None:
    w, _ = _walk()
    for at in (-1, len(w.trace) + 1):
        with pytest.raises(TetherError) as err:
            _fork(w, at)
        assert err.value.code == "invalid_value"
    checks = [i for i, e in enumerate(w.trace) if e["kind"] == "check"]
    assert checks
    with pytest.raises(TetherError) as split:
        _fork(w, checks[0])
    assert split.value.code == "invalid_value"
    assert f"fork at {checks[0] - 1} or at {checks[0] + 1}" in split.value.message


def test_a_fork_of_a_tampered_trace_is_refused() -> None:
    w, _ = _walk()
    tampered = copy.deepcopy(w.trace)
    tampered[2]["outcome"] = "action_failed"
    with pytest.raises(TetherError) as err:
        fork(w.tree, w.state, tampered, len(tampered), uri="m://x", salt="1", now="t")
    assert err.value.code == "corrupt_execution"


def test_a_fork_after_a_reset_keeps_the_numbering() -> None:
    w = Walk(REVIEW)
    w.apply(engine.Submit("success", values={"summary": "s"}))
    w.reset()
    w.submit("success")
    state, entries = _fork(w, len(w.trace))
    assert entries[0]["kind"] == "reset" and entries == w.trace
    assert state["seq"] == w.state["seq"]
    assert verify(w.tree, state, entries) == []
