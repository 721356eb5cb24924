"""The viewer shows a bound session's `tool` and `stop` entries under the step they happened in."""

from __future__ import annotations

from support.trees import Walk, action, chk, ins, seq, tree
from tether.engine import public as engine
from tether.viewer.model import index_tree, snapshot


def test_tool_and_stop_entries_are_counted_under_their_step() -> None:
    w = Walk(tree(seq("Root", action("Implement", ins("code")), action("Test", ins("test")))))
    w.apply(engine.ToolCall("Edit", {"file_path": "/p/a.py"}, True))
    w.apply(engine.Stop(3))
    w.submit("success")
    w.apply(engine.ToolCall("Bash", {"command": "pytest"}, False))
    snap = snapshot(w.tree, w.state, w.trace)
    names = {k: n.name for k, n in index_tree(w.tree).items()}
    views = {names[k]: v for k, v in snap.nodes.items()}
    assert views["Implement"].entries == 3  # tool, stop, instruct
    assert views["Test"].entries == 1
    assert (views["Implement"].status, views["Test"].status) == ("success", "open")


def test_the_viewer_replays_a_check_over_tools_as_it_ran() -> None:
    tested = 'TOOLS.exists(t, t.tool == "Bash" && t.ok)'
    w = Walk(tree(seq("Root", action("Test", ins("run the tests"), chk(tested)))))
    w.apply(engine.ToolCall("Bash", {"command": "pytest"}, True))
    w.submit("success")
    assert w.next() == {"status": "done"}
    snap = snapshot(w.tree, w.state, w.trace)
    assert [v.status for v in snap.nodes.values()] == ["success", "success"]
    assert snap.state["status"] == "complete" and snap.error is None
