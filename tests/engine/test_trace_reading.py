"""The one reading of a trace (`tether.engine.trace`): a step token read back, and refused as
stale when it spells none, whatever digits an agent types; where an action's attempt began, kept
in its frame, and an execution stored before it was kept still verifies."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from support.command import HELLO, ok, refused
from support.trees import Walk, action, ev, ins, par, seq, tree
from tether.engine.names import Key
from tether.engine.replay import refit, verify
from tether.engine.trace import Token, node_key
from tether.errors import EXIT_CONFLICT


def test_a_token_reads_back_what_built_it() -> None:
    read = Token.parse("0.2:1:3:17:salt")
    assert read is not None and (read.key, read.step, read.retry, read.opened) == ("0.2", 1, 3, 17)
    assert read.path == [0, 2] and node_key(read.path) == "0.2"
    assert str(read) == "0.2:1:3:17:salt"
    root = Token.parse("-:0:0:4:s")
    assert root is not None and root.path == [] and str(root) == "-:0:0:4:s"


@pytest.mark.parametrize(
    "token",
    ["", "x", "0:1:2:3", "0:1:2:3:s:t", "-:²:0:0:x", "0.²:0:0:0:x", "0.:0:0:0:x", "a:0:0:0:s"],
)
def test_a_token_that_spells_none_reads_as_none(token: str) -> None:
    assert Token.parse(token) is None


def test_an_answer_with_digits_that_are_not_ascii_is_a_stale_step(tmp_path: Path) -> None:
    run = tmp_path / "run.json"
    ok("start", HELLO, run)
    refused(EXIT_CONFLICT, "stale_step", "submit", run, "success", "--step", "-:²:0:0:x")
    assert (tmp_path / "run.json.refused.jsonl").exists()  # the refusal is logged, as any other


def test_an_action_frame_keeps_where_its_attempt_began_and_an_older_frame_without_it_verifies() -> (
    None
):
    t = tree(seq("S", par("P", action("A", ins("a"), ev("a?")), action("B", ins("b")))))
    w = Walk(t)
    w.submit("success", step=w.open()[1]["step"])  # B done; A still at its first step
    w.submit("success", step=w.open()[0]["step"])  # A's second step: its attempt goes on
    assert w.state["runtime"]["0.0"][Key.BEGAN] == 1
    assert min(e["seq"] for e in w.trace if (e["cursor"] or {}).get("path") == [0, 0]) >= 1
    # As an execution stored before Tether kept it: it verifies, and a refit numbers it.
    runtime = w.state["runtime"]
    older = {**w.state, "runtime": {k: _without_began(f) for k, f in runtime.items()}}
    assert verify(t, older, w.trace) == []
    assert refit(t, t, older, w.trace)["runtime"]["0.0"][Key.BEGAN] == 1
    wrong = {**w.state, "runtime": {**runtime, "0.0": {**runtime["0.0"], Key.BEGAN: 0}}}
    assert [d["field"] for d in verify(t, wrong, w.trace)] == ["runtime"]


def _without_began(frame: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in frame.items() if k != Key.BEGAN}
