"""The bot tool operations over a real file execution: continue, jumps, close, restart; every
operation re-reads the execution, so anything that changes it is seen at once."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from bot.botkit import action, bot, phase
from tether.bot.session import GATE_NOTE, BotSession
from tether.errors import TetherError
from tether.verbs import Runtime


def _fails(call: Callable[[], Any], code: str) -> TetherError:
    with pytest.raises(TetherError) as caught:
        call()
    assert caught.value.code == code, caught.value.message
    return caught.value


def _verified(session: BotSession) -> bool:
    return bool(Runtime().verify(session.state)["ok"])


def test_first_use_starts_the_execution_and_accepts_the_gate(session: BotSession) -> None:
    result = session.resume()
    assert result["status"] == "current"
    assert (result["phase"], result["action"]) == ("shape", "gather_context")
    assert result["position"] == {"phase": 1, "phases": 3, "action": 1, "actions": 4}
    assert result["instructions"][0].startswith("Ask the user what the product is")
    assert result["completion_criteria"] == [
        "The user confirmed the summary of the product and its situation."
    ]
    assert "call story_mapping_close_current_action" in result["message"]
    trace = Runtime().trace(session.state)
    assert [(e["kind"], e.get("note")) for e in trace] == [("protocol", GATE_NOTE)]


def test_continue_moves_nothing(session: BotSession) -> None:
    assert session.resume() == session.resume()
    assert len(Runtime().trace(session.state)) == 1


def test_close_moves_within_a_phase_then_to_the_next_phase_then_to_done(
    session: BotSession,
) -> None:
    closed = session.close("summary confirmed")
    assert closed["status"] == "closed"
    assert closed["closed"] == {"phase": "shape", "action": "gather_context"}
    assert (closed["phase"], closed["action"]) == ("shape", "identify_users")
    assert closed["completed"] == ["shape.gather_context"]
    session.enter_action("shape", "agree_scope")
    at_end = session.close()
    assert (at_end["phase"], at_end["action"]) == ("map", "list_activities")
    assert "Phase 'shape' is complete; on to phase 'map'." in at_end["message"]
    session.enter_action("slice", "record_the_plan")
    done = session.close(values={"releases": [{"goal": "a"}, {"goal": "b"}]})
    assert done["status"] == "done"
    assert done["closed"] == {"phase": "slice", "action": "record_the_plan"}
    assert done["completed"] == [
        "shape.gather_context",
        "shape.agree_scope",
        "slice.record_the_plan",
    ]
    assert session.resume()["status"] == "done"
    error = _fails(session.close, "execution_finished")
    assert "is complete; nothing more can move" in error.message
    assert _verified(session)


def test_after_a_jump_every_result_says_how_many_actions_were_closed_and_skipped(
    session: BotSession,
) -> None:
    assert session.resume()["actions"] == {"closed": 0, "skipped": 0, "total": 12}
    session.close()
    ahead = session.enter_action("map", "write_stories", "straight to the stories")
    assert ahead["actions"] == {"closed": 1, "skipped": 5, "total": 12}
    session.enter_action("slice", "record_the_plan")
    done = session.close(values={"releases": [{"goal": "a"}, {"goal": "b"}]})
    # The execution is complete, and the answer says how little of it was closed.
    assert done["status"] == "done"
    assert Runtime().get(session.state)["status"] == "complete"
    assert done["actions"] == {"closed": 2, "skipped": 10, "total": 12}
    assert (
        "only 2 of 12 actions were closed; 10 were skipped: shape.identify_users,"
        in (done["message"])
    )
    assert session.resume()["actions"] == done["actions"]


def test_close_is_refused_while_writes_or_checks_do_not_hold(session: BotSession) -> None:
    session.enter_action("shape", "identify_users")
    error = _fails(session.close, "writes_missing")
    assert "must write $VAR.users first" in error.message
    error = _fails(lambda: session.close(values={"users": []}), "check_failed")
    assert "its check 'size(VAR.users) >= 1' is false" in error.message
    assert Runtime().var_read(session.state, "users") == [], "values stay written"
    assert session.resume()["action"] == "identify_users", "a refused close moves nothing"
    closed = session.close(values={"users": ["reader", "editor"]})
    assert closed["action"] == "define_goal"
    assert _verified(session)


def test_jumps_go_anywhere_and_are_recorded_with_their_note(session: BotSession) -> None:
    jumped = session.enter_action("slice", "cut_walking_skeleton", "user asked to skip ahead")
    assert jumped["status"] == "jumped"
    assert (jumped["phase"], jumped["action"]) == ("slice", "cut_walking_skeleton")
    last = Runtime().trace(session.state)[-1]
    assert (last["kind"], last["note"], last["cursor"]["path"]) == (
        "jump",
        "user asked to skip ahead",
        [2, 1],
    )
    again = session.enter_action("slice", "cut_walking_skeleton")
    assert again["status"] == "current"
    assert len(Runtime().trace(session.state)) == 2, "jumping to where it is records nothing"
    assert _verified(session)


def test_a_phase_tool_goes_to_the_phase_s_first_unfinished_action(session: BotSession) -> None:
    session.close()
    session.enter_action("shape", "define_goal")
    session.close()
    session.enter_action("map", "write_stories")
    back = session.enter_phase("shape")
    assert (back["status"], back["action"]) == ("jumped", "identify_users")
    session.close(values={"users": ["reader"]})
    assert session.enter_phase("shape")["action"] == "agree_scope"
    session.close()
    complete = session.enter_phase("shape")
    assert complete["status"] == "phase_complete"
    assert (complete["phase"], complete["action"]) == ("map", "list_activities")
    assert "Every action of phase 'shape' is complete; nothing moved." in complete["message"]
    assert session.enter_phase("slice")["action"] == "set_release_goals"


def test_an_unknown_phase_or_action_is_refused_with_the_names(session: BotSession) -> None:
    error = _fails(lambda: session.enter_phase("ship"), "invalid_value")
    assert error.message == "story-mapping has no phase 'ship'; its phases are shape, map, slice"
    _fails(lambda: session.enter_action("map", "deploy"), "invalid_value")


def test_no_state_is_held_between_calls(example: Path, tmp_path: Path) -> None:
    state = str(tmp_path / "shared.json")
    one = BotSession(Runtime(), str(example), state)
    two = BotSession(Runtime(), str(example), state)
    one.enter_action("map", "walk_the_map")
    assert two.resume()["action"] == "walk_the_map"
    Runtime().jump(state, [1, 0], note="moved from the command line")
    assert one.resume()["action"] == "list_activities"
    Runtime().reset(state)
    fresh = two.resume()
    assert (fresh["action"], fresh["completed"]) == ("gather_context", [])
    assert Runtime().get(state)["protocol_accepted"] is True, "the re-armed gate is accepted"


def test_a_failed_execution_is_reported(example: Path, tmp_path: Path) -> None:
    state = str(tmp_path / "declined.json")
    Runtime().start(str(example), state)
    Runtime().submit(state, "failure")
    result = BotSession(Runtime(), str(example), state).resume()
    assert result["status"] == "failed"
    assert "The protocol was declined." in result["message"]


# -- restart -------------------------------------------------------------------------------------


def _edit(path: Path, change: Callable[[dict[str, Any]], None]) -> None:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")


def _action_node(data: dict[str, Any], i: int, j: int) -> dict[str, Any]:
    node: dict[str, Any] = data["tree"]["children"][i]["children"][j]
    return node


def test_restart_with_an_unchanged_file_changes_nothing(session: BotSession) -> None:
    session.resume()
    before = Runtime().get(session.state)
    result = session.restart()
    assert result["status"] == "unchanged"
    assert Runtime().get(session.state)["revision"] == before["revision"]


def test_restart_takes_edited_texts_and_keeps_the_execution(
    session: BotSession, example: Path
) -> None:
    session.close()
    session.enter_action("shape", "define_goal")
    before = Runtime().get(session.state)

    def edit(data: dict[str, Any]) -> None:
        _action_node(data, 0, 2)["steps"][0]["instruct"] = "State the goal in one sentence."
        _action_node(data, 0, 2)["triggers"] = ["goal"]
        data["tree"]["children"][2]["children"].append(
            {"type": "action", "name": "celebrate", "steps": [{"instruct": "Celebrate."}]}
        )

    _edit(example, edit)
    result = session.restart()
    assert result["status"] == "restarted"
    assert result["instructions"] == ["State the goal in one sentence."]
    assert (result["action"], result["completed"]) == ("define_goal", ["shape.gather_context"])
    after = Runtime().get(session.state)
    assert after["tree_hash"] != before["tree_hash"]
    assert after["open"][0]["instruction"] == "State the goal in one sentence."
    assert after["open"][0]["step"] == before["open"][0]["step"]
    assert Runtime().trace(session.state) == before["trace"], "no trace entry is rewritten"
    assert [a.name for a in session.surface().phases[2].actions][-1] == "celebrate"
    assert _verified(session)
    assert session.restart()["status"] == "unchanged"


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (
            lambda d: _action_node(d, 0, 0).update(name="collect_context"),
            "action 'gather_context' at [0, 0] is now action 'collect_context'",
        ),
        (
            lambda d: d["tree"]["children"][0]["children"].insert(
                0, {"type": "action", "name": "intro", "steps": [{"instruct": "Hi."}]}
            ),
            "action 'gather_context' at [0, 0] is now action 'intro'",
        ),
        (
            lambda d: d["tree"]["children"][1]["children"].pop(),
            "action 'walk_the_map' at [1, 3] is gone",
        ),
    ],
    ids=["renamed_visited_action", "action_inserted_before", "current_action_removed"],
)
def test_restart_refuses_a_tree_that_no_longer_fits(
    session: BotSession, example: Path, change: Callable[[dict[str, Any]], None], reason: str
) -> None:
    session.close()
    session.enter_action("map", "walk_the_map")
    before = Runtime().get(session.state)
    _edit(example, change)
    error = _fails(session.restart, "invalid_tree")
    assert error.message == f"the edited tree does not fit the execution: {reason}"
    assert Runtime().get(session.state) == before


def test_restart_refuses_a_close_that_would_no_longer_replay(
    session: BotSession, example: Path
) -> None:
    session.enter_action("shape", "identify_users")
    session.close(values={"users": ["reader"]})
    _edit(
        example,
        lambda d: _action_node(d, 0, 1)["steps"].append({"check": "size(VAR.users) >= 2"}),
    )
    error = _fails(session.restart, "invalid_tree")
    assert "its trace no longer replays" in error.message
    assert "size(VAR.users) >= 2" in error.message


def test_restart_refuses_a_file_that_is_not_a_bot(session: BotSession, example: Path) -> None:
    session.resume()
    example.write_text(
        yaml.safe_dump(bot("x", phase("p", action("a"))), sort_keys=False).replace(
            "sequence", "selector", 1
        ),
        encoding="utf-8",
    )
    error = _fails(session.restart, "invalid_tree")
    assert "is not a bot (phases of actions): the root is a selector" in error.message


def test_restart_of_an_edited_tree_works_on_a_memory_execution(example: Path) -> None:
    session = BotSession(Runtime(), str(example), "memory://bot-restart")
    session.resume()
    _edit(example, lambda d: _action_node(d, 0, 0).update(description="Edited."))
    assert session.restart()["status"] == "restarted"
    assert session.runtime.verify("memory://bot-restart")["ok"]


def test_a_tree_that_is_no_bot_is_refused_before_anything_is_stored(tmp_path: Path) -> None:
    hello = Path(__file__).resolve().parents[2] / "examples" / "hello-world.yaml"
    state = tmp_path / "run.json"
    session = BotSession(Runtime(), str(hello), str(state))
    error = _fails(session.resume, "invalid_tree")
    assert str(hello) in error.message and "is not a bot" in error.message
    assert not state.exists()
