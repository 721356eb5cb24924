"""The `tools` key of a node: loaded and normalised, every mistake located (file, line, key
path), and the JSON Schema accepting and rejecting the same files as the loader."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator

from tether.engine.public import tool_policy
from tether.errors import TetherError
from tether.tree import json_schema, load_tree, load_tree_text

TREE = """\
name: t
tree:
  type: sequence
  name: S
  tools: {deny: [Write]}
  children:
    - type: action
      name: Review
      tools:
        allow: [Read, Grep, mcp__github__get_pr, "Bash(git diff*)", "Edit(docs/**)"]
        deny: [Edit]
      steps:
        - instruct: Review the diff.
    - type: action
      name: Build
      steps:
        - instruct: Build it.
"""


def test_tools_are_kept_on_the_node_that_declares_them() -> None:
    data = load_tree_text(TREE, "t.yaml").data
    review = data["root"]["children"][0]
    assert review["tools"] == {
        "allow": ["Read", "Grep", "mcp__github__get_pr", "Bash(git diff*)", "Edit(docs/**)"],
        "deny": ["Edit"],
    }
    assert data["root"]["tools"] == {"deny": ["Write"]}


def test_the_nearest_node_that_declares_tools_applies() -> None:
    data = load_tree_text(TREE, "t.yaml").data
    assert (tool_policy(data, [0]) or {}).get("node") == "Review"
    assert tool_policy(data, [1]) == {"deny": ["Write"], "node": "S"}
    assert tool_policy(data, None) is None  # the protocol gate


def test_a_tree_without_tools_hashes_as_before() -> None:
    plain = TREE.replace("  tools: {deny: [Write]}\n", "")
    assert "tools" not in load_tree_text(plain, "t.yaml").data["root"]


BAD = [
    ("tools: {alow: [Read]}", 5, "tree.tools.alow", "did you mean 'allow'?"),
    ("tools: {allow: Read}", 5, "tree.tools.allow", "allow must be a list of tool names"),
    ('tools: {allow: [Read, "Bash(x"]}', 5, "tree.tools.allow[1]", "is not a tool entry"),
    ("tools: {deny: [Read, 3]}", 5, "tree.tools.deny[1]", "number 3 is not a tool entry"),
    ("tools: {}", 5, "tree.tools", "got an empty mapping"),
    ("tools: [Read]", 5, "tree.tools", "tools must be a mapping"),
    ('tools: {allow: ["Read Write"]}', 5, "tree.tools.allow[0]", "is not a tool entry"),
]


@pytest.mark.parametrize(("line", "at", "key", "says"), BAD, ids=[b[0] for b in BAD])
def test_a_bad_tools_key_is_located(line: str, at: int, key: str, says: str) -> None:
    text = TREE.replace("tools: {deny: [Write]}", line)
    with pytest.raises(TetherError) as info:
        load_tree_text(text, "t.yaml")
    error = info.value
    assert error.code == "invalid_tree"
    assert error.details["file"] == "t.yaml" and error.details["line"] == at
    assert error.details["key"] == key
    assert says in error.message


ACTION = {"type": "action", "name": "A", "steps": [{"instruct": "x"}]}


@pytest.mark.parametrize(
    "tools",
    [{"alow": ["Read"]}, {"allow": "Read"}, {"allow": ["Bash(x"]}, {}, ["Read"], {"deny": [3]}],
)
def test_schema_and_loader_reject_the_same_tools(tools: Any) -> None:
    raw = {"name": "t", "tree": {**ACTION, "tools": tools}}
    assert not Draft202012Validator(json_schema()).is_valid(raw)
    with pytest.raises(TetherError):
        load_tree_text(json.dumps(raw), "bad.json")


def test_schema_accepts_and_describes_tools() -> None:
    schema = json_schema()
    raw = {"name": "t", "tree": {**ACTION, "tools": {"allow": ["Bash(pytest*)"], "deny": ["*"]}}}
    assert Draft202012Validator(schema).is_valid(raw)
    assert schema["$defs"]["action"]["properties"]["tools"]["description"]
    assert schema["$defs"]["tools"]["properties"]["allow"]["description"]


def test_the_bound_example_is_valid_under_schema_and_loader() -> None:
    path = Path(__file__).resolve().parents[2] / "examples" / "bound-feature" / "feature.yaml"
    assert Draft202012Validator(json_schema()).is_valid(yaml.safe_load(path.read_text()))
    review = load_tree(path).data["root"]["children"][2]
    assert review["tools"]["deny"] == ["Edit", "Write", "NotebookEdit"]
