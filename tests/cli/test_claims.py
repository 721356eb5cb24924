"""`tether claim` and `--agent` through the real command: an agent holds a parallel branch, a
teammate's answer to it is refused naming the holder, the holder's goes through, and the
command says what it needs."""

from __future__ import annotations

import json
from pathlib import Path

from support.command import ok, refused
from support.trees import PAIR
from tether.errors import EXIT_CONFLICT, EXIT_USAGE


def test_a_teammates_answer_to_a_claimed_branch_is_refused(tmp_path: Path) -> None:
    tree, run = tmp_path / "pair.json", tmp_path / "run.json"
    tree.write_text(json.dumps(PAIR))
    ok("start", tree, run)
    ok("submit", run, "success")
    left = ok("next", run)["step"]
    held = ok("claim", run, "--agent", "alice", "--step", left, "--lease", "60")
    assert (held["status"], held["agent"]) == ("claimed", "alice")
    error = refused(
        EXIT_CONFLICT, "claimed", "submit", run, "success", "--step", left, "--agent", "bob"
    )
    assert error["holder"] == "alice" and "until" in error
    refused(EXIT_CONFLICT, "claimed", "claim", run, "--agent", "bob", "--step", left)
    done = ok("submit", run, "success", "--step", left, "--agent", "alice")
    assert done["status"] == "action_complete"
    assert ok("verify", run)["ok"] is True
    refused(EXIT_USAGE, "usage", "claim", run)  # no --agent
    refused(EXIT_USAGE, "usage", "claim", run, "--agent", "alice", "--lease", "soon")


def test_next_all_shows_who_holds_each_claimed_step(tmp_path: Path) -> None:
    tree, run = tmp_path / "pair.json", tmp_path / "run.json"
    tree.write_text(json.dumps(PAIR))
    ok("start", tree, run)
    ok("submit", run, "success")
    left, right = (r["step"] for r in ok("next", run, "--all"))
    ok("claim", run, "--agent", "alice", "--step", right, "--lease", "60")
    shown = {r["step"]: r.get("claim") for r in ok("next", run, "--all")}
    assert shown[left] is None, "an unclaimed step says nothing of a holder"
    assert shown[right] is not None and shown[right]["agent"] == "alice"
    assert shown[right]["until"].endswith("Z")
    assert ok("verify", run)["ok"] is True, "what next shows is not stored"
