"""Navigation answers for the bot tool surface: jump to an action, close the current action."""

from __future__ import annotations

from typing import Any

import pytest

from support.trees import Walk, action, chk, ev, ins, seq, tree
from tether.engine import public as engine
from tether.engine.replay import verify
from tether.errors import TetherError

BOT = tree(
    seq(
        "Bot",
        seq(
            "Shape",
            action("Goal", ins("state the goal", writes=["goal"])),
            action("Users", ev("users are known"), ins("list users")),
        ),
        seq(
            "Build", action("Plan", ins("plan"), chk("has(VAR.goal)")), action("Ship", ins("ship"))
        ),
    )
)


def _jump(w: Walk, path: list[int]) -> dict[str, Any]:
    return w.apply(engine.Jump(path, "user asked"))


def _close(w: Walk, **kw: object) -> dict[str, Any]:
    return w.apply(engine.Close(**kw))  # type: ignore[arg-type]


def test_jump_moves_to_any_action_and_is_in_the_trace() -> None:
    w = Walk(BOT)
    response = _jump(w, [1, 1])
    assert response["status"] == "jumped" and response["current"]["name"] == "Ship"
    assert w.next()["name"] == "Ship"
    assert w.trace[-1]["kind"] == "jump" and w.trace[-1]["note"] == "user asked"
    assert verify(w.tree, w.state, w.trace) == []


def test_jump_refuses_a_composite_or_a_missing_path() -> None:
    w = Walk(BOT)
    with pytest.raises(TetherError, match="is a sequence"):
        _jump(w, [1])
    with pytest.raises(TetherError, match="no child 5"):
        _jump(w, [1, 5])


def test_close_completes_the_action_and_moves_to_the_next() -> None:
    w = Walk(BOT)
    _jump(w, [0, 1])
    response = _close(w, note="users listed in chat")
    assert response["status"] == "action_complete"
    assert w.next()["name"] == "Plan", "after a phase's last action comes the next phase"
    assert w.trace[-1]["kind"] == "close"
    assert verify(w.tree, w.state, w.trace) == []


def test_close_is_refused_until_writes_are_made() -> None:
    w = Walk(BOT)
    with pytest.raises(TetherError) as err:
        _close(w)
    assert err.value.code == "writes_missing" and err.value.details["missing"] == ["goal"]
    w.write("goal", "ship it")
    _close(w)
    assert w.next()["name"] == "Users"


def test_close_is_refused_while_a_check_does_not_hold() -> None:
    w = Walk(BOT)
    _jump(w, [1, 0])
    before = dict(w.state)
    with pytest.raises(TetherError) as err:
        _close(w)
    assert err.value.code == "check_failed" and "has(VAR.goal)" in err.value.message
    assert w.state == before
    w.write("goal", "g")
    _close(w)
    assert w.next()["name"] == "Ship"


def test_closing_the_last_action_finishes_the_bot() -> None:
    w = Walk(BOT)
    _jump(w, [1, 1])
    assert "done" in str(_close(w)["message"])
    assert w.next() == {"status": "done"}
    assert verify(w.tree, w.state, w.trace) == []
