"""An execution read as spans (`tether.otel.spans`): one span per action attempt under the
workflow's span, every entry an event of its attempt, the step tokens the agent was given, and
the same spans every time."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from otel.receiver import walk, write_tree
from tether.otel.spans import Span, spans
from tether.store import store_for
from tether.verbs import Runtime


def _read(uri: str) -> tuple[int, list[Span]]:
    store = store_for(uri)
    state, entries = store.read_execution(uri)
    return spans(state, store.load_tree(uri), entries)


def _events(span: Span) -> list[tuple[str, Any]]:
    return [(e.name, e.attributes.get("tether.outcome")) for e in span.events]


def test_one_span_per_attempt_with_its_retry_item_and_events(tmp_path: Path) -> None:
    uri = "file://" + str(tmp_path / "run.json")
    walk(Runtime(), write_tree(tmp_path), uri)
    _, made = _read(uri)
    root, *attempts = made
    assert root.name == "invoke_workflow otel-demo" and root.parent_id is None
    assert root.attributes["gen_ai.operation.name"] == "invoke_workflow"
    assert (root.status, root.done) == ("ok", True)
    assert [(a.name, a.status) for a in attempts] == [
        ("invoke_agent Gather", "error"),
        ("invoke_agent Gather", "ok"),
        ("invoke_agent Each", "ok"),
        ("invoke_agent Each", "ok"),
        ("invoke_agent Approve", "ok"),
    ]
    assert {a.parent_id for a in attempts} == {root.span_id}
    assert [a.attributes["tether.attempt.retry"] for a in attempts] == [0, 1, 0, 0, 0]
    assert [a.attributes.get("tether.loop.item") for a in attempts] == [None, None, 0, 1, None]
    first, second, _, _, person = attempts
    assert _events(first) == [
        ("tether.tool", None),
        ("tether.stop", "refused"),
        ("tether.var_write", "written"),
        ("tether.answer", "action_failed"),
        ("tether.check", "failed"),
    ]
    assert first.message == "check $VAR.x > 1 failed"  # the reason, not the agent's note
    assert first.events[0].attributes["gen_ai.tool.name"] == "Bash"
    assert first.events[0].attributes["tether.tool.ok"] == "true"
    assert second.attributes["tether.answer.note"] == "measured again"
    assert _events(person) == [("tether.think", "recorded"), ("tether.human", "success")]
    assert person.attributes["tether.answer.by"] == "api"
    for span in made:
        assert span.attributes["tether.execution.uri"] == uri
        assert span.attributes["tether.tree.name"] == "otel-demo"
        assert span.attributes["tether.tree.hash"].startswith("sha256:")
        assert root.start <= span.start <= span.end <= root.end


def test_step_tokens_are_the_ones_the_agent_answered(tmp_path: Path) -> None:
    uri = "file://" + str(tmp_path / "run.json")
    answered = walk(Runtime(), write_tree(tmp_path), uri)
    _, made = _read(uri)
    answers = [
        e.attributes["tether.step.token"]
        for span in made[1:]
        for e in span.events
        if e.name in ("tether.answer", "tether.human")
    ]
    assert answers == answered
    assert [s.attributes["tether.step.token"] for s in made[1:]] == answered


def test_a_failed_execution_fails_its_root(tmp_path: Path) -> None:
    uri = "file://" + str(tmp_path / "run.json")
    walk(Runtime(), write_tree(tmp_path), uri, approve=False)
    _, (root, *attempts) = _read(uri)
    assert (root.status, root.attributes["tether.status"]) == ("error", "failed")
    assert (attempts[-1].status, attempts[-1].message) == ("error", "not today")


def test_the_same_execution_gives_the_same_spans(tmp_path: Path) -> None:
    tree = write_tree(tmp_path)
    one, other = ("file://" + str(tmp_path / name) for name in ("one.json", "other.json"))
    walk(Runtime(), tree, one)
    walk(Runtime(), tree, other)

    def shape(uri: str) -> list[tuple[Any, ...]]:
        tid, made = _read(uri)
        return [(tid, s.span_id, s.parent_id, s.start, s.end, s.name) for s in made]

    assert shape(one) == shape(one)
    assert {row[1] for row in shape(one)}.isdisjoint({row[1] for row in shape(other)})
    assert shape(one)[0][0] != shape(other)[0][0]


def test_a_running_execution_has_its_settled_attempts_done(tmp_path: Path) -> None:
    uri = "file://" + str(tmp_path / "run.json")
    rt = Runtime()
    rt.start(str(write_tree(tmp_path)), uri)
    rt.submit(uri, "success")
    rt.submit(uri, "success", values={"x": 5})
    rt.record_tool(uri, "Read", {"file_path": "a.txt"}, ok=None)
    _, (root, gather, each) = _read(uri)
    assert (root.done, gather.done, each.done) == (False, True, False)
    assert each.attributes["tether.outcome"] == "open"
    assert each.events[0].attributes["tether.tool.ok"] == "unknown"


PARALLEL = """\
name: race
version: 1
tree:
  type: parallel
  name: Race
  policy: any
  children:
    - {type: action, name: Fast, steps: [{instruct: Run fast.}]}
    - {type: action, name: Slow, steps: [{instruct: Run slow.}]}
"""


def test_a_branch_a_parallel_left_open_is_halted(tmp_path: Path) -> None:
    tree = tmp_path / "race.yaml"
    tree.write_text(PARALLEL)
    uri = "file://" + str(tmp_path / "run.json")
    rt = Runtime()
    rt.start(str(tree), uri)
    rt.submit(uri, "success")
    slow = rt.next(uri, all=True)[1]["step"]
    rt.record_tool(uri, "Bash", {"command": "sleep 60"}, ok=None, step=slow)
    rt.submit(uri, "success", step=rt.next(uri)["step"])
    _, (root, *attempts) = _read(uri)
    assert root.done and root.status == "ok"
    outcomes = {
        a.attributes["tether.action.name"]: a.attributes["tether.outcome"] for a in attempts
    }
    assert outcomes == {"Slow": "halted", "Fast": "success"}
    assert all(a.done for a in attempts)
    halted = next(a for a in attempts if a.attributes["tether.action.name"] == "Slow")
    assert halted.events[0].attributes["tether.step.token"] == slow
