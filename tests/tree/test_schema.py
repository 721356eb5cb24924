"""The JSON Schema: valid itself, described, accepting every valid tree file and rejecting the
structural mistakes the loader rejects (both read the tables in `tether.tree.model`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator

from tether.errors import TetherError
from tether.tree import json_schema, load_tree, load_tree_text
from tether.tree.model import LOOP_MAX_LIMIT

FIXTURES = Path(__file__).parent / "fixtures"
EXAMPLES = Path(__file__).parents[2] / "examples"
GOOD = [
    *sorted((FIXTURES / "spellings").iterdir()),
    *sorted((FIXTURES / "refs").rglob("*.yaml")),
    *sorted((FIXTURES / "cycle").iterdir()),
    *sorted((FIXTURES / "loops").iterdir()),
    *sorted(p for p in (FIXTURES / "pointers").rglob("*") if p.is_file()),
    *sorted(EXAMPLES.glob("*.yaml")),
]
ACTION = {"type": "action", "name": "A", "steps": [{"instruct": "x"}]}


def _read(path: Path) -> Any:
    text = path.read_text()
    return json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)


@pytest.fixture(scope="module")
def validator() -> Draft202012Validator:
    schema = json_schema()
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def test_schema_is_draft_2020_12_and_titled() -> None:
    schema = json_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["title"]


def test_every_field_has_a_description() -> None:
    def walk(node: Any, where: str) -> None:
        if isinstance(node, dict):
            for key, prop in node.get("properties", {}).items():
                assert prop.get("description"), f"{where}.{key} has no description"
            for key, value in node.items():
                walk(value, f"{where}.{key}")
        elif isinstance(node, list):
            for index, item in enumerate(node):
                walk(item, f"{where}[{index}]")

    walk(json_schema(), "schema")


@pytest.mark.parametrize("path", GOOD, ids=lambda p: str(p.relative_to(p.parents[1])))
def test_every_fixture_and_example_is_valid_under_the_schema(
    path: Path, validator: Draft202012Validator
) -> None:
    errors = [e.message for e in validator.iter_errors(_read(path))]
    assert errors == []


BAD: list[tuple[str, Any]] = [
    ("unknown_wrapper_key", {"name": "t", "tree": ACTION, "owner": "me"}),
    ("misspelt_node_key", {"name": "t", "tree": {**ACTION, "stesp": []}}),
    ("unknown_node_type", {"name": "t", "tree": {**ACTION, "type": "sequnce"}}),
    ("missing_name", {"name": "t", "tree": {"type": "action", "steps": [{"instruct": "x"}]}}),
    ("bad_name", {"name": "t", "tree": {**ACTION, "name": "Bad/Name"}}),
    ("name_with_at", {"name": "t", "tree": {**ACTION, "name": "me@home"}}),
    ("blank_step_text", {"name": "t", "tree": {**ACTION, "steps": [{"instruct": " \n\t "}]}}),
    ("empty_ref", {"name": "t", "tree": {"$ref": ""}}),
    ("empty_children", {"name": "t", "tree": {"type": "sequence", "name": "S", "children": []}}),
    ("empty_steps", {"name": "t", "tree": {**ACTION, "steps": []}}),
    (
        "step_two_kinds",
        {"name": "t", "tree": {**ACTION, "steps": [{"instruct": "x", "check": "true"}]}},
    ),
    ("step_no_kind", {"name": "t", "tree": {**ACTION, "steps": [{}]}}),
    (
        "writes_on_check",
        {"name": "t", "tree": {**ACTION, "steps": [{"check": "true", "writes": ["a"]}]}},
    ),
    ("retries_text", {"name": "t", "tree": {**ACTION, "retries": "3"}}),
    ("retries_negative", {"name": "t", "tree": {**ACTION, "retries": -1}}),
    (
        "policy_word",
        {
            "name": "t",
            "tree": {"type": "parallel", "name": "P", "policy": "most", "children": [ACTION]},
        },
    ),
    (
        "policy_on_sequence",
        {
            "name": "t",
            "tree": {"type": "sequence", "name": "S", "policy": "all", "children": [ACTION]},
        },
    ),
    ("ref_with_name", {"name": "t", "tree": {"$ref": "x.yaml", "name": "R"}}),
    ("unknown_scope", {"name": "t", "state": {"vars": {}}, "tree": ACTION}),
    ("wrapper_and_node", {"name": "t", "type": "action", "tree": ACTION}),
    ("no_tree", {"name": "t"}),
    ("for_each_a_string", {"name": "t", "tree": {**ACTION, "for_each": "VAR.files"}}),
    ("for_each_without_in", {"name": "t", "tree": {**ACTION, "for_each": {"as": "f"}}}),
    ("for_each_unknown_key", {"name": "t", "tree": {**ACTION, "for_each": {"in": "x", "y": 1}}}),
    ("for_each_bad_name", {"name": "t", "tree": {**ACTION, "for_each": {"in": "x", "as": "a-b"}}}),
    ("for_each_digit_name", {"name": "t", "tree": {**ACTION, "for_each": {"in": "x", "as": "1f"}}}),
    ("for_each_max_zero", {"name": "t", "tree": {**ACTION, "for_each": {"in": "x", "max": 0}}}),
    (
        "for_each_max_past_the_limit",
        {"name": "t", "tree": {**ACTION, "for_each": {"in": "x", "max": LOOP_MAX_LIMIT + 1}}},
    ),
    (
        "for_each_max_a_bool",
        {"name": "t", "tree": {**ACTION, "for_each": {"in": "x", "max": True}}},
    ),
    ("for_each_in_empty", {"name": "t", "tree": {**ACTION, "for_each": {"in": ""}}}),
    (
        "for_each_parallel_a_string",
        {"name": "t", "tree": {**ACTION, "for_each": {"in": "x", "parallel": "yes"}}},
    ),
    (
        "for_each_policy_a_word",
        {"name": "t", "tree": {**ACTION, "for_each": {"in": "x", "parallel": True, "policy": "m"}}},
    ),
    ("repeat_a_list", {"name": "t", "tree": {**ACTION, "repeat": ["VAR.done"]}}),
    ("repeat_without_until", {"name": "t", "tree": {**ACTION, "repeat": {"max": 2}}}),
    ("repeat_unknown_key", {"name": "t", "tree": {**ACTION, "repeat": {"until": "x", "in": "y"}}}),
    ("repeat_max_text", {"name": "t", "tree": {**ACTION, "repeat": {"until": "x", "max": "2"}}}),
    ("invert_a_string", {"name": "t", "tree": {**ACTION, "invert": "true"}}),
]


@pytest.mark.parametrize("raw", [b[1] for b in BAD], ids=[b[0] for b in BAD])
def test_schema_and_loader_both_reject_structural_mistakes(
    raw: Any, validator: Draft202012Validator
) -> None:
    assert not validator.is_valid(raw)
    with pytest.raises(TetherError):
        load_tree_text(json.dumps(raw), "bad.json")


@pytest.mark.parametrize("path", GOOD, ids=lambda p: str(p.relative_to(p.parents[1])))
def test_loader_accepts_what_the_schema_accepts(
    path: Path, validator: Draft202012Validator
) -> None:
    """Every file the schema accepts loads, but for a `$ref` cycle: structure alone cannot
    see one, so the loader refuses it, naming the cycle."""
    assert validator.is_valid(_read(path))
    if path.parent.name != "cycle":
        load_tree(path)
        return
    with pytest.raises(TetherError) as err:
        load_tree(path)
    assert (err.value.code, "cycle" in err.value.message) == ("invalid_tree", True)
