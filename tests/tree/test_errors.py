"""Every way a tree file can be wrong: the error code, the message with file, line, column, key
path and hint, and the same parts as details."""

from __future__ import annotations

from pathlib import Path

import pytest

from tether.errors import TetherError
from tether.tree import load_tree, load_tree_text, normalise

FIXTURES = Path(__file__).parent / "fixtures"
ACTION = "{type: action, name: A, steps: [{instruct: x}]}"


def fails(text: str, name: str = "t.yaml") -> TetherError:
    with pytest.raises(TetherError) as caught:
        load_tree_text(text, name)
    return caught.value


def fails_file(path: Path) -> TetherError:
    with pytest.raises(TetherError) as caught:
        load_tree(path)
    return caught.value


def relative(path: Path) -> str:
    return str(path.relative_to(Path.cwd())) if path.is_relative_to(Path.cwd()) else str(path)


# (case, text, message, key): each message is exact.
CASES = [
    (
        "malformed_yaml",
        "name: t\ntree:\n  type: action\n  name: [A\n  steps: []\n",
        "t.yaml:5:8: malformed YAML: did not find expected ',' or ']' "
        "(in the flow sequence opened at line 4, column 9)",
        "(root)",
    ),
    (
        "unknown_node_type",
        "name: t\ntree:\n  type: sequnce\n  name: R\n  children: [" + ACTION + "]\n",
        "t.yaml:3:9: unknown node type 'sequnce' at tree.type (did you mean 'sequence'?)",
        "tree.type",
    ),
    (
        "missing_type",
        "name: t\ntree:\n  name: R\n  steps: [{instruct: x}]\n",
        "t.yaml:3:3: a node needs a 'type' at tree "
        "(one of sequence, selector, parallel, action, fallback, or a '$ref')",
        "tree",
    ),
    (
        "missing_name",
        "name: t\ntree:\n  type: action\n  steps: [{instruct: x}]\n",
        "t.yaml:3:3: missing key 'name' at tree",
        "tree",
    ),
    (
        "bad_name_characters",
        "name: t\ntree:\n  type: action\n  name: Bad/Name\n  steps: [{instruct: x}]\n",
        "t.yaml:4:9: name must be a non-empty name without '/' or '@', "
        "got string 'Bad/Name' at tree.name",
        "tree.name",
    ),
    (
        "empty_children",
        "name: t\ntree:\n  type: sequence\n  name: R\n  children: []\n",
        "t.yaml:5:13: children must be a non-empty list of nodes, got an empty list "
        "at tree.children",
        "tree.children",
    ),
    (
        "empty_steps",
        "name: t\ntree:\n  type: action\n  name: R\n  steps: []\n",
        "t.yaml:5:10: steps must be a non-empty list of steps, got an empty list at tree.steps",
        "tree.steps",
    ),
    (
        "duplicate_sibling_names",
        "name: t\ntree:\n  type: sequence\n  name: R\n  children:\n    - "
        + ACTION
        + "\n    - "
        + ACTION
        + "\n",
        "t.yaml:7:7: duplicate name 'A' among siblings (first at children[0]) at tree.children[1]",
        "tree.children[1]",
    ),
    (
        "policy_too_large",
        "name: t\ntree:\n  type: parallel\n  name: R\n  policy: 3\n  children: [" + ACTION + "]\n",
        "t.yaml:5:11: policy 3 is more than the number of children (1) at tree.policy",
        "tree.policy",
    ),
    (
        "policy_not_a_policy",
        "name: t\ntree:\n  type: parallel\n  name: R\n  policy: most\n  children: ["
        + ACTION
        + "]\n",
        "t.yaml:5:11: policy must be 'all', 'any' or a whole number >= 1, got string 'most' "
        "at tree.policy",
        "tree.policy",
    ),
    (
        "policy_on_a_sequence",
        "name: t\ntree:\n  type: sequence\n  name: R\n  policy: all\n  children: ["
        + ACTION
        + "]\n",
        "t.yaml:5:3: unknown key 'policy' at tree ('policy' belongs to parallel nodes)",
        "tree.policy",
    ),
    (
        "retries_not_a_number",
        "name: t\ntree:\n  type: action\n  name: R\n  retries: '3'\n  steps: [{instruct: x}]\n",
        "t.yaml:5:12: retries must be a whole number >= 0, got string '3' at tree.retries",
        "tree.retries",
    ),
    (
        "retries_negative",
        "name: t\ntree:\n  type: action\n  name: R\n  retries: -1\n  steps: [{instruct: x}]\n",
        "t.yaml:5:12: retries must be a whole number >= 0, got number -1 at tree.retries",
        "tree.retries",
    ),
    (
        "optional_not_a_bool",
        "name: t\ntree:\n  type: action\n  name: R\n  optional: 1\n  steps: [{instruct: x}]\n",
        "t.yaml:5:13: optional must be true or false, got number 1 at tree.optional",
        "tree.optional",
    ),
    (
        "step_with_two_kinds",
        "name: t\ntree:\n  type: action\n  name: R\n  steps:\n    - instruct: x\n"
        "      evaluate: y\n",
        "t.yaml:6:7: a step takes exactly one of evaluate, instruct, check or human "
        "(found evaluate and instruct) at tree.steps[0]",
        "tree.steps[0]",
    ),
    (
        "step_with_no_kind",
        "name: t\ntree:\n  type: action\n  name: R\n  steps:\n    - writes: [a]\n",
        "t.yaml:6:7: a step takes exactly one of evaluate, instruct, check or human (found none) "
        "at tree.steps[0]",
        "tree.steps[0]",
    ),
    (
        "misspelt_step_key",
        "name: t\ntree:\n  type: action\n  name: R\n  steps:\n    - evalute: y\n",
        "t.yaml:6:7: unknown key 'evalute' at tree.steps[0] (did you mean 'evaluate'?)",
        "tree.steps[0].evalute",
    ),
    (
        "writes_on_evaluate",
        "name: t\ntree:\n  type: action\n  name: R\n  steps:\n    - evaluate: x\n"
        "      writes: [a]\n",
        "t.yaml:7:7: writes applies only to instruct steps at tree.steps[0].writes",
        "tree.steps[0].writes",
    ),
    (
        "empty_step_text",
        "name: t\ntree:\n  type: action\n  name: R\n  steps:\n    - instruct: ''\n",
        "t.yaml:6:17: instruct must be a string with more than white space in it, got string '' "
        "at tree.steps[0].instruct",
        "tree.steps[0].instruct",
    ),
    (
        "misspelt_wrapper_key",
        "name: t\ntre:\n  type: action\n",
        "t.yaml:2:1: unknown key 'tre' (did you mean 'tree'?)",
        "tre",
    ),
    (
        "unknown_key_without_near_miss",
        "name: t\nowner: me\ntree: " + ACTION + "\n",
        "t.yaml:2:1: unknown key 'owner' "
        "(a tree file takes $schema, name, version, description, state, tree, independent)",
        "owner",
    ),
    (
        "wrapper_and_node_at_once",
        "name: t\ntype: action\ntree: {}\n",
        "t.yaml:3:1: a file is either a wrapper ('tree:') or a node ('type:' at the root), "
        "not both at tree",
        "tree",
    ),
    (
        "missing_tree",
        "name: t\nversion: 1\n",
        "t.yaml:1:1: missing key 'tree'",
        "(root)",
    ),
    (
        "not_a_mapping",
        "- a\n",
        "t.yaml:1:1: a tree file must be a mapping, got a list of 1",
        "(root)",
    ),
    (
        "empty_file",
        "",
        "t.yaml:1:1: a tree file must be a mapping, got null",
        "(root)",
    ),
    (
        "duplicate_key",
        "name: t\nname: u\ntree: " + ACTION + "\n",
        "t.yaml:2:1: duplicate key 'name'",
        "name",
    ),
    (
        "scope_given_twice",
        "name: t\nstate:\n  var: {a: 1}\n  local: {b: 2}\ntree: " + ACTION + "\n",
        "t.yaml:3:3: 'var' and 'local' are the same scope; give one at state.var",
        "state.var",
    ),
    (
        "state_declared_twice_differently",
        "name: t\nstate:\n  var: {a: 1}\ntree:\n  type: action\n  name: A\n"
        "  state: {local: {a: 2}}\n  steps: [{instruct: x}]\n",
        "t.yaml:7:19: var 'a' is declared again with a different value at tree.state.local.a",
        "tree.state.local.a",
    ),
    (
        "state_key_not_text",
        "name: t\nstate:\n  var: {1: x}\ntree: " + ACTION + "\n",
        "t.yaml:3:9: key 1 is not text at state.var.1 (quote it)",
        "state.var.1",
    ),
    (
        "ref_with_other_keys",
        "name: t\ntree:\n  $ref: x.yaml\n  name: R\n",
        "t.yaml:4:3: unknown key 'name' at tree (a $ref node takes $ref)",
        "tree.name",
    ),
    (
        "ref_pointer_to_itself",
        "name: t\ntree:\n  $ref: '#/tree'\n",
        "t.yaml:3:9: $ref cycle: #/tree -> #/tree at tree.$ref",
        "tree.$ref",
    ),
    (
        "triggers_with_empty_text",
        "name: t\ntree:\n  type: action\n  name: A\n  triggers: [go, '']\n"
        "  steps: [{instruct: x}]\n",
        "t.yaml:5:13: triggers must be a non-empty list of non-empty strings, got a list of 2 "
        "at tree.triggers",
        "tree.triggers",
    ),
    (
        "version_bool",
        "name: t\nversion: true\ntree: " + ACTION + "\n",
        "t.yaml:2:10: version must be a string or a number, got boolean true at version",
        "version",
    ),
]


@pytest.mark.parametrize(
    ("text", "message", "key"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_invalid_tree_reports_location_and_key_path(text: str, message: str, key: str) -> None:
    error = fails(text)
    assert error.code == "invalid_tree"
    assert error.message == message
    assert error.details["file"] == "t.yaml"
    assert error.details["key"] == key
    line, column = message.split(":")[1:3]
    assert (error.details["line"], error.details["column"]) == (int(line), int(column))


def test_malformed_json_reports_json_line_and_column() -> None:
    error = fails('{"name": "t",\n "tree": {"type": "action",}\n}', "t.json")
    assert error.code == "invalid_tree"
    assert (
        error.message
        == "t.json:2:28: malformed JSON: Expecting property name enclosed in double quotes"
    )
    assert (error.details["line"], error.details["column"]) == (2, 28)


def test_json_key_locations_come_from_the_text() -> None:
    text = '{\n\t"name": "t",\n\t"tree": {\n\t\t"type": "action",\n\t\t"name": "R",\n'
    text += '\t\t"stesp": []\n\t}\n}'
    error = fails(text, "t.json")
    assert error.message == "t.json:6:3: unknown key 'stesp' at tree (did you mean 'steps'?)"


def test_misspelt_key_in_a_file() -> None:
    path = FIXTURES / "bad" / "misspelt_key.yaml"
    error = fails_file(path)
    assert error.message == (
        f"{relative(path)}:12:7: unknown key 'chidren' at tree.children[1] "
        "(did you mean 'children'?)"
    )
    assert error.details == {
        "file": relative(path),
        "line": 12,
        "column": 7,
        "key": "tree.children[1].chidren",
    }


def test_invalid_cel_in_check_names_file_position_and_expression_position() -> None:
    error = fails("name: t\ntree:\n  type: action\n  name: R\n  steps:\n    - check: VAR.x +\n")
    assert error.code == "invalid_expression"
    assert error.message == (
        "t.yaml:6:14: invalid CEL expression at tree.steps[0].check: "
        "1:8: Syntax error: mismatched input '<EOF>'"
    )
    assert error.details["key"] == "tree.steps[0].check"
    assert (error.details["line"], error.details["column"]) == (6, 14)
    assert (error.details["expression_line"], error.details["expression_column"]) == (1, 8)


def test_invalid_cel_in_when_on_a_later_line_of_the_expression() -> None:
    text = (
        "name: t\ntree:\n  type: action\n  name: R\n  when: |\n    VAR.x > 1 &&\n      (\n"
        "  steps: [{instruct: x}]\n"
    )
    error = fails(text)
    assert error.code == "invalid_expression"
    assert error.details["key"] == "tree.when"
    assert (error.details["line"], error.details["column"]) == (5, 9)
    assert (error.details["expression_line"], error.details["expression_column"]) == (3, 1)


def test_reserved_word_var_in_cel_suggests_VAR() -> None:
    error = fails("name: t\ntree:\n  type: action\n  name: R\n  steps:\n    - check: var.x\n")
    assert "reserved identifier: var (write VAR or $VAR)" in error.message


def test_missing_ref_names_the_file() -> None:
    path = FIXTURES / "bad" / "missing_ref.yaml"
    error = fails_file(path)
    missing = relative(FIXTURES / "bad" / "parts" / "nowhere.yaml")
    assert error.code == "invalid_tree"
    assert error.message == (
        f"{relative(path)}:6:13: $ref file {missing} does not exist at tree.children[0].$ref"
    )


def test_ref_cycle_names_the_cycle() -> None:
    error = fails_file(FIXTURES / "cycle" / "a.yaml")
    assert error.code == "invalid_tree"
    assert "$ref cycle: a.yaml -> b.yaml -> a.yaml at children[0].$ref" in error.message
    assert error.details["file"] == relative(FIXTURES / "cycle" / "b.yaml")
    assert (error.details["line"], error.details["column"]) == (4, 11)


def test_error_inside_a_fragment_names_the_fragment_and_where_it_was_included() -> None:
    error = fails_file(FIXTURES / "bad" / "fragment_error.yaml")
    fragment = relative(FIXTURES / "bad" / "bad_fragment" / "node.yaml")
    assert error.message == (
        f"{fragment}:5:5: unknown key 'evalute' at steps[1] (did you mean 'evaluate'?) "
        f"(in a fragment included from {relative(FIXTURES / 'bad' / 'fragment_error.yaml')} "
        "at tree.children[0])"
    )


def test_missing_tree_file_is_not_found() -> None:
    error = fails_file(FIXTURES / "no_such_tree.yaml")
    assert error.code == "not_found"
    assert error.exit_code == 4


def test_unreadable_tree_file_is_invalid() -> None:
    error = fails_file(FIXTURES / "bad")
    assert error.code == "invalid_tree"
    assert "cannot read" in error.message


def test_errors_in_parsed_data_name_the_key_path_without_a_position() -> None:
    with pytest.raises(TetherError) as caught:
        normalise({"name": "t", "tree": {"type": "action", "name": "A", "stepz": []}}, "raw")
    assert caught.value.message == "raw: unknown key 'stepz' at tree (did you mean 'steps'?)"
    assert "line" not in caught.value.details
