"""The `writes` key of a node (the files its steps may write): loaded and kept, the nearest node's
carried on an open request as `scope`, every mistake located (file, line, key path), and the JSON
Schema accepting and rejecting the same files as the loader."""

from __future__ import annotations

import json
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from tether.engine.ticking import write_scope
from tether.errors import TetherError
from tether.tree import json_schema, load_tree_text
from tether.verbs import Runtime

TREE = """\
name: t
tree:
  type: sequence
  name: S
  writes: ["**"]
  children:
    - type: action
      name: Code
      writes: ["src/**", "tests/test_*.py"]
      steps:
        - instruct: Change the code.
          writes: [summary]
    - type: action
      name: Notes
      steps:
        - instruct: Write the notes.
"""


def test_writes_are_kept_on_the_node_and_apart_from_a_steps_writes() -> None:
    data = load_tree_text(TREE, "t.yaml").data
    code = data["root"]["children"][0]
    assert code["writes"] == ["src/**", "tests/test_*.py"]
    assert code["steps"][0]["writes"] == ["summary"]  # the step's var paths, unchanged


def test_the_nearest_node_that_declares_writes_applies() -> None:
    data = load_tree_text(TREE, "t.yaml").data
    assert write_scope(data, [0]) == {"writes": ["src/**", "tests/test_*.py"], "node": "Code"}
    assert write_scope(data, [1]) == {"writes": ["**"], "node": "S"}
    assert write_scope(data, None) is None  # the protocol gate


def test_an_open_request_carries_its_scope(tmp_path: Any) -> None:
    (tmp_path / "t.yaml").write_text(TREE)
    rt = Runtime()
    uri = rt.start(str(tmp_path / "t.yaml"), str(tmp_path / "t.json"))["uri"]
    rt.submit(uri, "success")
    request = rt.next(uri)
    assert request["scope"] == {"writes": ["src/**", "tests/test_*.py"], "node": "Code"}
    assert request["writes"] == ["summary"]
    assert "tools" not in request


def test_a_tree_without_writes_hashes_as_before() -> None:
    plain = TREE.replace('  writes: ["**"]\n', "", 1)
    assert "writes" not in load_tree_text(plain, "t.yaml").data["root"]


BAD = [
    ("writes: []", "tree.writes", "writes must be a list of distinct globs"),
    ("writes: src/**", "tree.writes", "writes must be a list of distinct globs"),
    ('writes: ["/etc/**"]', "tree.writes", "no leading '/'"),
    ('writes: ["~/x"]', "tree.writes", "no leading '/' or '~'"),
    ('writes: ["src/../../x"]', "tree.writes", "no '..'"),
    ('writes: [".."]', "tree.writes", "no '..'"),
    ('writes: ["a", "a"]', "tree.writes", "distinct"),
    ("writes: [3]", "tree.writes", "globs relative to the project"),
]


@pytest.mark.parametrize(("line", "key", "says"), BAD, ids=[b[0] for b in BAD])
def test_a_bad_writes_key_is_located(line: str, key: str, says: str) -> None:
    text = TREE.replace('writes: ["**"]', line)
    with pytest.raises(TetherError) as info:
        load_tree_text(text, "t.yaml")
    error = info.value
    assert error.code == "invalid_tree"
    assert error.details["file"] == "t.yaml" and error.details["line"] == 5
    assert error.details["key"] == key
    assert says in error.message


ACTION = {"type": "action", "name": "A", "steps": [{"instruct": "x"}]}


@pytest.mark.parametrize("writes", [[], "src/**", ["/abs"], ["~/x"], ["a/../b"], ["a", "a"], [3]])
def test_schema_and_loader_reject_the_same_writes(writes: Any) -> None:
    raw = {"name": "t", "tree": {**ACTION, "writes": writes}}
    assert not Draft202012Validator(json_schema()).is_valid(raw)
    with pytest.raises(TetherError):
        load_tree_text(json.dumps(raw), "bad.json")


@pytest.mark.parametrize("writes", [["**"], ["src/**", "docs/*.md"], ["a..b/c", ".github/**"]])
def test_schema_and_loader_accept_the_same_writes(writes: Any) -> None:
    raw = {"name": "t", "tree": {**ACTION, "writes": writes}}
    assert Draft202012Validator(json_schema()).is_valid(raw)
    assert load_tree_text(json.dumps(raw), "ok.json").data["root"]["writes"] == writes
    assert json_schema()["$defs"]["action"]["properties"]["writes"]["description"]
