"""The `for_each`, `repeat` and `invert` keys: their normalised form and every way each can be
wrong (exact messages, with file, line, column and key path). The JSON Schema's agreement with
the loader on them is in `test_schema.py`."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tether.errors import TetherError
from tether.tree import load_tree_text
from tether.tree.model import FOR_EACH_MAX, LOOP_MAX_LIMIT, REPEAT_MAX


def _action(**mods: Any) -> dict[str, Any]:
    return {"type": "action", "name": "A", "steps": [{"instruct": "x"}], **mods}


def test_defaults_are_filled_in_and_modifiers_keep_their_order() -> None:
    data = load_tree_text(
        "name: t\ntree:\n  type: action\n  name: A\n  for_each: {in: VAR.files}\n"
        "  repeat: {until: VAR.done}\n  invert: true\n  optional: true\n  retries: 1\n"
        "  when: 'true'\n  steps: [{instruct: Review $ITEM}]\n",
        "t.yaml",
    ).data
    root = data["root"]
    assert list(root) == [
        "type",
        "name",
        "steps",
        "retries",
        "optional",
        "invert",
        "repeat",
        "for_each",
        "when",
    ]
    assert root["for_each"] == {"in": "VAR.files", "as": "item", "max": FOR_EACH_MAX}
    assert root["repeat"] == {"until": "VAR.done", "max": REPEAT_MAX}
    assert root["steps"] == [{"instruct": "Review $ITEM"}], "texts keep $ITEM as written"


def test_given_values_are_kept_and_invert_false_is_left_out() -> None:
    data = load_tree_text(
        json.dumps(
            {
                "name": "t",
                "tree": _action(
                    for_each={"in": "[1, 2]", "as": "n", "max": 2},
                    repeat={"until": "true", "max": 3},
                    invert=False,
                ),
            }
        ),
        "t.json",
    ).data
    assert data["root"]["for_each"] == {"in": "[1, 2]", "as": "n", "max": 2}
    assert data["root"]["repeat"] == {"until": "true", "max": 3}
    assert "invert" not in data["root"]


HEAD = "name: t\ntree:\n  type: action\n  name: A\n  steps: [{instruct: x}]\n"

# (case, modifier lines, message, key): each message is exact.
CASES = [
    (
        "for_each_not_a_mapping",
        "  for_each: VAR.files\n",
        "t.yaml:6:13: for_each must be a mapping with 'in' (a CEL list), and optionally 'as', "
        "'max', 'parallel' and 'policy', got string 'VAR.files' at tree.for_each",
        "tree.for_each",
    ),
    (
        "for_each_without_in",
        "  for_each: {as: file}\n",
        "t.yaml:6:13: missing key 'in' at tree.for_each",
        "tree.for_each",
    ),
    (
        "for_each_misspelt_key",
        "  for_each: {in: VAR.files, ass: file}\n",
        "t.yaml:6:29: unknown key 'ass' at tree.for_each (did you mean 'as'?)",
        "tree.for_each.ass",
    ),
    (
        "for_each_unknown_key",
        "  for_each: {in: VAR.files, until: x}\n",
        "t.yaml:6:29: unknown key 'until' at tree.for_each "
        "(for_each takes in, as, max, parallel, policy)",
        "tree.for_each.until",
    ),
    (
        "for_each_name_not_an_identifier",
        "  for_each: {in: VAR.files, as: my-file}\n",
        "t.yaml:6:33: as must be a name made of letters, digits and '_', not starting with a "
        "digit, got string 'my-file' at tree.for_each.as",
        "tree.for_each.as",
    ),
    (
        "for_each_max_zero",
        "  for_each: {in: VAR.files, max: 0}\n",
        f"t.yaml:6:34: max must be a whole number from 1 to {LOOP_MAX_LIMIT}, got number 0 "
        "at tree.for_each.max",
        "tree.for_each.max",
    ),
    (
        "for_each_max_past_the_limit",
        f"  for_each: {{in: VAR.files, max: {LOOP_MAX_LIMIT + 1}}}\n",
        f"t.yaml:6:34: max must be a whole number from 1 to {LOOP_MAX_LIMIT}, got number "
        f"{LOOP_MAX_LIMIT + 1} at tree.for_each.max",
        "tree.for_each.max",
    ),
    (
        "for_each_in_empty",
        "  for_each: {in: ''}\n",
        "t.yaml:6:18: in must be a non-empty CEL expression (a string), got string '' "
        "at tree.for_each.in",
        "tree.for_each.in",
    ),
    (
        "for_each_parallel_not_a_flag",
        "  for_each: {in: VAR.files, parallel: yes please}\n",
        "t.yaml:6:39: parallel must be true or false, got string 'yes please' "
        "at tree.for_each.parallel",
        "tree.for_each.parallel",
    ),
    (
        "for_each_parallel_a_number",
        "  for_each: {in: VAR.files, parallel: 1}\n",
        "t.yaml:6:39: parallel must be true or false, got number 1 at tree.for_each.parallel",
        "tree.for_each.parallel",
    ),
    (
        "for_each_policy_without_parallel",
        "  for_each: {in: VAR.files, policy: any}\n",
        "t.yaml:6:37: policy applies only to a for_each with parallel: true (its items run in "
        "order, and the first failing item fails the node) at tree.for_each.policy",
        "tree.for_each.policy",
    ),
    (
        "for_each_policy_past_its_max",
        "  for_each: {in: VAR.files, parallel: true, max: 3, policy: 4}\n",
        "t.yaml:6:61: policy 4 is more than the loop's max (3 items) at tree.for_each.policy",
        "tree.for_each.policy",
    ),
    (
        "for_each_policy_a_word",
        "  for_each: {in: VAR.files, parallel: true, policy: most}\n",
        "t.yaml:6:53: policy must be 'all', 'any' or a whole number >= 1, got string 'most' "
        "at tree.for_each.policy",
        "tree.for_each.policy",
    ),
    (
        "repeat_without_until",
        "  repeat: {max: 3}\n",
        "t.yaml:6:11: missing key 'until' at tree.repeat",
        "tree.repeat",
    ),
    (
        "repeat_max_a_word",
        "  repeat: {until: VAR.done, max: many}\n",
        f"t.yaml:6:34: max must be a whole number from 1 to {LOOP_MAX_LIMIT}, got string "
        "'many' at tree.repeat.max",
        "tree.repeat.max",
    ),
    (
        "repeat_a_number",
        "  repeat: 3\n",
        "t.yaml:6:11: repeat must be a mapping with 'until' (a CEL condition), and optionally "
        "'max', got number 3 at tree.repeat",
        "tree.repeat",
    ),
    (
        "invert_not_a_bool",
        "  invert: yes please\n",
        "t.yaml:6:11: invert must be true or false, got string 'yes please' at tree.invert",
        "tree.invert",
    ),
]


@pytest.mark.parametrize(
    ("lines", "message", "key"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_a_wrong_loop_key_is_named_where_it_stands(lines: str, message: str, key: str) -> None:
    with pytest.raises(TetherError) as caught:
        load_tree_text(HEAD + lines, "t.yaml")
    assert caught.value.code == "invalid_tree"
    assert caught.value.message == message
    assert caught.value.details["key"] == key


@pytest.mark.parametrize(
    ("lines", "key", "line", "column"),
    [
        ("  for_each: {in: 'VAR.files +'}\n", "tree.for_each.in", 6, 18),
        ("  repeat:\n    until: VAR.done &&\n", "tree.repeat.until", 7, 12),
    ],
)
def test_loop_cel_is_compiled_at_load_with_its_position(
    lines: str, key: str, line: int, column: int
) -> None:
    with pytest.raises(TetherError) as caught:
        load_tree_text(HEAD + lines, "t.yaml")
    error = caught.value
    assert error.code == "invalid_expression"
    assert (error.details["key"], error.details["line"]) == (key, line)
    assert error.details["column"] == column
    assert (error.details["expression_line"], error.details["expression_column"]) == (1, 12)
