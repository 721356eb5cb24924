"""The bot tools' close carries `next` like every answer, and never closes past a human step."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from bot.botkit import action, bot, phase
from tether.bot.session import BotSession
from tether.errors import TetherError
from tether.verbs import Runtime


def test_close_returns_the_request_that_follows(session: BotSession) -> None:
    closed = session.close("summary confirmed")
    following = Runtime().next(session.state)
    assert closed["next"] == following
    assert following["name"] == "identify_users"


def test_close_is_refused_while_a_human_step_is_to_come(
    write_tree: Callable[..., Path], tmp_path: Path
) -> None:
    tree = write_tree(
        bot(
            "gated",
            phase(
                "ship",
                action("build", {"instruct": "Build it."}, {"human": "Approve the build."}),
                action("publish"),
            ),
        )
    )
    session = BotSession(Runtime(), str(tree), str(tmp_path / "gated.json"))
    session.resume()
    before = Runtime().get(session.state)
    with pytest.raises(TetherError) as caught:
        session.close()
    assert caught.value.code == "human_only"
    assert Runtime().get(session.state) == before
    Runtime().submit(session.state, "success")
    human = Runtime().next(session.state)
    assert human["type"] == "human"
    with pytest.raises(TetherError) as again:
        session.close()
    assert again.value.code == "human_only"
    rejected = Runtime().reject(session.state, note="not today")
    assert rejected["next"] == {"status": "failure"} == Runtime().next(session.state)
    assert "The workflow has failed" in rejected["message"]
    assert Runtime().verify(session.state)["ok"] is True
