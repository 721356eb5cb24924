"""Loading trees that are valid: the three spellings, the normalised form, `$ref`, the hash."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import yaml
from hypothesis import given
from hypothesis import strategies as st

from tether.tree import Tree, load_tree, load_tree_text, normalise, tree_hash

FIXTURES = Path(__file__).parent / "fixtures"
SPELLINGS = FIXTURES / "spellings"


def test_three_spellings_load_to_identical_data() -> None:
    native = load_tree(SPELLINGS / "native.yaml")
    abtree = load_tree(SPELLINGS / "abtree.yaml")
    behaviors = load_tree(SPELLINGS / "behaviors.json")
    assert native.data == abtree.data == behaviors.data
    assert native.hash == abtree.hash == behaviors.hash


def test_normalised_form_is_exact() -> None:
    data = load_tree(SPELLINGS / "native.yaml").data
    assert list(data) == ["name", "version", "description", "state", "root"]
    assert data["state"] == {
        "var": {"time_of_day": None, "greeting": None},
        "const": {"user": "ada", "tone": "friendly"},
    }
    root = data["root"]
    assert list(root) == ["type", "name", "children"]
    determine, choose, wrap_up = root["children"]
    assert determine == {
        "type": "action",
        "name": "Determine_Time",
        "steps": [
            {
                "instruct": 'Store "morning" or "evening" at $VAR.time_of_day.',
                "writes": ["time_of_day"],
            }
        ],
        "retries": 2,
    }
    morning, any_time = choose["children"]
    assert choose["type"] == "selector"
    assert morning == {
        "type": "action",
        "name": "Morning",
        "steps": [
            {"check": 'VAR.time_of_day == "morning"'},
            {
                "instruct": "Greet $CONST.user for the morning; store it at $VAR.greeting.",
                "writes": ["greeting"],
            },
        ],
        "when": '$VAR.time_of_day == "morning"',
    }
    assert list(any_time) == ["type", "name", "steps", "optional", "description"]
    assert any_time["optional"] is True
    assert list(wrap_up) == ["type", "name", "children", "policy"]
    assert wrap_up["policy"] == "any"


def test_triggers_are_kept_after_description_only_when_given() -> None:
    data = load_tree_text(
        "name: t\ntree:\n  type: sequence\n  name: S\n  triggers: [start over]\n"
        "  description: d\n  children:\n"
        "    - {type: action, name: A, steps: [{instruct: x}]}\n",
        "t.yaml",
    ).data
    root = data["root"]
    assert list(root) == ["type", "name", "children", "description", "triggers"]
    assert root["triggers"] == ["start over"]
    assert "triggers" not in root["children"][0]


def test_tree_record_carries_hash_of_canonical_json_and_absolute_source() -> None:
    tree = load_tree(SPELLINGS / "native.yaml")
    assert isinstance(tree, Tree)
    assert tree.source == str((SPELLINGS / "native.yaml").resolve())
    assert tree.hash == tree_hash(tree.data)
    assert tree.hash.startswith("sha256:") and len(tree.hash) == 7 + 64
    json.dumps(tree.data)  # plain JSON data


def test_fallback_is_normalised_to_selector() -> None:
    tree = load_tree_text(
        "name: t\ntree:\n  type: fallback\n  name: F\n  children:\n"
        "    - {type: action, name: A, steps: [{instruct: x}]}\n",
        "t.yaml",
    )
    assert tree.data["root"]["type"] == "selector"


def test_defaults_version_state_policy_and_omitted_modifiers() -> None:
    data = load_tree_text(
        "name: t\ntree:\n  type: parallel\n  name: P\n  retries: 0\n  optional: false\n"
        "  children:\n    - {type: action, name: A, steps: [{instruct: x}]}\n",
        "t.yaml",
    ).data
    assert data == {
        "name": "t",
        "version": "",
        "state": {"var": {}, "const": {}},
        "root": {
            "type": "parallel",
            "name": "P",
            "children": [{"type": "action", "name": "A", "steps": [{"instruct": "x"}]}],
            "policy": "all",
        },
    }


def test_numeric_version_is_kept_as_text_and_dates_in_state_become_iso_text() -> None:
    data = load_tree_text(
        "name: t\nversion: 2\nstate:\n  const: {since: 2024-05-01}\n"
        "tree: {type: action, name: A, steps: [{instruct: x}]}\n",
        "t.yaml",
    ).data
    assert data["version"] == "2"
    assert data["state"]["const"] == {"since": "2024-05-01"}


def test_ref_resolves_relative_to_the_referring_file() -> None:
    tree = load_tree(FIXTURES / "refs" / "main.yaml")
    review, again = tree.data["root"]["children"]
    # parts/review.yaml refers to check.yaml, its own sibling in parts/.
    assert review["name"] == "Review"
    assert [c["name"] for c in review["children"]] == ["Check", "Write_Verdict"]
    assert again["children"] == [review["children"][0]]
    assert review["children"][0] == {
        "type": "action",
        "name": "Check",
        "steps": [{"evaluate": "The change is ready for review."}],
    }
    # State declared on a fragment's node is merged into the tree's state.
    assert tree.data["state"]["var"] == {"verdict": None, "notes": []}
    assert tree.data["version"] == "2"


def test_load_tree_text_resolves_refs_against_base_dir() -> None:
    text = "name: t\ntree:\n  $ref: parts/check.yaml\n"
    tree = load_tree_text(text, "inline.yaml", base_dir=str(FIXTURES / "refs"))
    assert tree.data["root"]["name"] == "Check"
    assert tree.source == "inline.yaml"


def test_json_text_loads_like_yaml() -> None:
    text = (SPELLINGS / "behaviors.json").read_text()
    assert load_tree_text(text, "b.json").data == load_tree(SPELLINGS / "native.yaml").data


def test_normalise_accepts_parsed_data() -> None:
    raw = {"name": "t", "tree": {"type": "action", "name": "A", "steps": [{"check": "true"}]}}
    data = normalise(raw)
    assert data["root"] == {"type": "action", "name": "A", "steps": [{"check": "true"}]}


def test_examples_load() -> None:
    examples = sorted((Path(__file__).parents[2] / "examples").glob("*.yaml"))
    assert examples
    for file in examples:
        assert load_tree(file).data["root"]["name"]


def _shuffled(value: Any, rng: random.Random) -> Any:
    if isinstance(value, dict):
        items = list(value.items())
        rng.shuffle(items)
        return {k: _shuffled(v, rng) for k, v in items}
    if isinstance(value, list):
        return [_shuffled(v, rng) for v in value]
    return value


@given(st.randoms(use_true_random=False))
def test_hash_is_stable_across_key_order(rng: random.Random) -> None:
    raw = yaml.safe_load((SPELLINGS / "abtree.yaml").read_text())
    shuffled = _shuffled(raw, rng)
    assert tree_hash(normalise(shuffled)) == load_tree(SPELLINGS / "native.yaml").hash
