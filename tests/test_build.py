"""Trees in code (`tether.build`): what the builders make is checked as a tree file is, is the
tree a file with the same content loads to, and walks in process as the runtime drives it."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tether import build
from tether.build import Walk, action, evaluate, for_each, human, instruct, selector, sequence
from tether.errors import TetherError
from tether.tree.load import load_tree
from tether.verbs import Runtime

ROOT = sequence(
    "Review",
    action("Read", instruct("Read the change.", writes=["summary"]), retries=1),
    selector(
        "Decide",
        action("Small", evaluate("The change is small."), description="the quick path"),
        action("Ask", human("Approve the change?")),
    ),
    action("File", instruct("File $ITEM."), for_each=for_each("VAR.files", name="f")),
)


def test_a_built_tree_is_what_its_file_loads_to(tmp_path: Path) -> None:
    built = build.tree(ROOT, name="review", var={"files": ["a", "b"]})
    path = tmp_path / "review.json"
    path.write_text(json.dumps(build.document(ROOT, name="review", var={"files": ["a", "b"]})))
    assert load_tree(path).data == built
    assert built["root"]["children"][2]["for_each"] == {"in": "VAR.files", "as": "f", "max": 100}


@pytest.mark.parametrize(
    ("root", "says"),
    [
        (action("a/b", instruct("x")), "a/b"),
        (action("A", {"check": "VAR.x >"}), "check"),
        (sequence("S"), "children"),
        (action("A", instruct("x"), retries="3"), "retries"),
    ],
)
def test_a_mistake_is_refused_naming_where(root: dict[str, object], says: str) -> None:
    with pytest.raises(TetherError) as err:
        build.tree(root)
    assert err.value.code in ("invalid_tree", "invalid_expression")
    assert says in err.value.message and "built in code" in err.value.message


def test_a_walk_answers_as_the_runtime_does(tmp_path: Path) -> None:
    """The same answers give the same requests in process and through a store."""
    walk = Walk(build.tree(ROOT, var={"files": ["a", "b"]}))
    path = tmp_path / "review.json"
    path.write_text(json.dumps(build.document(ROOT, var={"files": ["a", "b"]})))
    rt = Runtime()
    uri = "memory://review"
    rt.start(str(path), uri)
    rt.submit(uri, "success")
    answers: list[tuple[Callable[[], object], Callable[[], object]]] = [
        (lambda: walk.write("summary", "ok"), lambda: rt.var_write(uri, "summary", "ok")),
        (lambda: walk.submit("success"), lambda: rt.submit(uri, "success")),
        (lambda: walk.eval(False), lambda: rt.eval(uri, False)),
        (walk.reject, lambda: rt.reject(uri)),
    ]
    for in_process, in_store in answers:
        in_process()
        in_store()
        mine, theirs = walk.next(), rt.next(uri)
        assert {k: v for k, v in mine.items() if k != "step"} == {
            k: v for k, v in theirs.items() if k != "step"
        }
    # Small was judged false and Ask rejected: Decide failed, and with it the review.
    assert walk.next() == {"status": "failure"}
    assert walk.asked("human") == ["Ask"]
    assert len(walk.responses) == 1 + len(answers)


def test_a_refused_answer_changes_nothing() -> None:
    walk = Walk(build.tree(ROOT), accept=False)
    before = json.dumps(walk.state)
    with pytest.raises(TetherError) as err:
        walk.approve()
    assert err.value.code == "wrong_phase"
    assert json.dumps(walk.state) == before and walk.trace == []
