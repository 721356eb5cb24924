"""The `human` step kind in tree files: how it loads, what it refuses, and its schema."""

from __future__ import annotations

import jsonschema
import pytest

from tether.errors import TetherError
from tether.tree import load_tree_text
from tether.tree.schema import json_schema

TREE = """\
name: t
tree:
  type: action
  name: Ship
  steps:
    - instruct: Build it.
    - human: |
        Look at the build. Approve to ship.
"""


def test_a_human_step_loads_as_its_text() -> None:
    tree = load_tree_text(TREE)
    # trimmed like every step text: the block's trailing newline goes
    assert tree.data["root"]["steps"][1] == {"human": "Look at the build. Approve to ship."}


@pytest.mark.parametrize(
    ("step", "message"),
    [
        ("- human: ''", "human must be a string with more than white space in it"),
        ("- human: x\n      writes: [a]", "writes applies only to instruct steps"),
        ("- human: x\n      evaluate: y", "exactly one of evaluate, instruct, check or human"),
        ("- human: [x]", "human must be a string with more than white space in it"),
    ],
)
def test_a_bad_human_step_is_refused_with_its_location(step: str, message: str) -> None:
    text = f"name: t\ntree:\n  type: action\n  name: R\n  steps:\n    {step}\n"
    with pytest.raises(TetherError) as err:
        load_tree_text(text, "t.yaml")
    assert err.value.code == "invalid_tree"
    assert message in err.value.message and "t.yaml:" in err.value.message


def test_the_schema_knows_the_human_step() -> None:
    schema = json_schema()
    document = {"name": "t", "tree": {"type": "action", "name": "A", "steps": [{"human": "ok?"}]}}
    jsonschema.validate(document, schema)
    bad = {"name": "t", "tree": {"type": "action", "name": "A", "steps": [{"human": ""}]}}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema)


@pytest.mark.parametrize(
    ("given", "seconds", "how"),
    [
        ("timeout: 30m", 1800, "reject"),
        ("timeout: 4h\n      on_timeout: fail", 14400, "fail"),
        ("timeout: 2d", 172800, "reject"),
        ("timeout: 1h30m\n      on_timeout: reject", 5400, "reject"),
        ("timeout: 1d2h3m4s", 93784, "reject"),
        ("timeout: 366d", 31622400, "reject"),
    ],
)
def test_a_timeout_loads_as_seconds_with_what_happens_then(
    given: str, seconds: int, how: str
) -> None:
    text = f"name: t\ntree:\n  type: action\n  name: R\n  steps:\n    - human: ok?\n      {given}\n"
    step = load_tree_text(text).data["root"]["steps"][0]
    assert step == {"human": "ok?", "timeout": seconds, "on_timeout": how}
    assert list(step) == ["human", "timeout", "on_timeout"]


def test_the_same_wait_spelt_two_ways_is_the_same_tree() -> None:
    text = (
        "name: t\ntree:\n  type: action\n  name: R\n  steps:\n    - human: ok?\n      timeout: {}\n"
    )
    assert load_tree_text(text.format("90m")).hash == load_tree_text(text.format("1h30m")).hash


@pytest.mark.parametrize(
    ("step", "where", "message"),
    [
        ("- human: x\n      timeout: 4 hours", "7:16", "timeout must be a duration such as 30m"),
        ("- human: x\n      timeout: 4H", "7:16", "got string '4H'"),
        ("- human: x\n      timeout: 30m4h", "7:16", "largest first"),
        ("- human: x\n      timeout: 14400", "7:16", "got number 14400"),
        ("- human: x\n      timeout: 1.5h", "7:16", "got string '1.5h'"),
        ("- human: x\n      timeout: 0m", "7:16", "timeout '0m' must be longer than zero"),
        ("- human: x\n      timeout: 367d", "7:16", "at most 366 days"),
        (
            "- human: x\n      timeout: 4h\n      on_timeout: escalate",
            "8:19",
            "one of reject, fail",
        ),
        ("- human: x\n      on_timeout: fail", "7:7", "on_timeout needs a timeout"),
        ("- instruct: x\n      timeout: 4h", "7:7", "timeout applies only to human steps"),
        ("- evaluate: x\n      on_timeout: fail", "7:7", "on_timeout applies only to human steps"),
    ],
)
def test_a_bad_timeout_is_refused_saying_what_and_where(
    step: str, where: str, message: str
) -> None:
    text = f"name: t\ntree:\n  type: action\n  name: R\n  steps:\n    {step}\n"
    with pytest.raises(TetherError) as err:
        load_tree_text(text, "t.yaml")
    assert err.value.code == "invalid_tree"
    assert err.value.message.startswith(f"t.yaml:{where}: "), err.value.message
    assert message in err.value.message and " at tree.steps[0]." in err.value.message


def test_the_schema_knows_timeout_and_on_timeout() -> None:
    schema = json_schema()

    def tree(step: dict[str, str]) -> dict[str, object]:
        return {"name": "t", "tree": {"type": "action", "name": "A", "steps": [step]}}

    jsonschema.validate(tree({"human": "ok?", "timeout": "4h", "on_timeout": "fail"}), schema)
    for bad in (
        {"human": "ok?", "timeout": "4 hours"},
        {"human": "ok?", "timeout": "4h", "on_timeout": "escalate"},
        {"instruct": "x", "timeout": "4h"},
    ):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(tree(bad), schema)
