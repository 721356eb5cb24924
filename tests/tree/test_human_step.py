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
