"""The tree test files' JSON Schema: valid, described, and in agreement with `tether test`'s
reader (the reader checks files against the same schema): every case file here and in the
examples is accepted by both, and each mistake below is refused by both."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator

from tether.errors import TetherError
from tether.treetest.cases import case_schema, read_cases

ROOT = Path(__file__).resolve().parents[2]
GOOD = sorted((ROOT / "examples" / "cases").glob("*.yaml")) + sorted(
    (Path(__file__).parent / "abtree" / "cases").glob("*.yaml")
)
STEP = {"instruct": "A"}
CASE = {"name": "c", "steps": [STEP], "end": {"status": "done"}}


@pytest.fixture(scope="module")
def validator() -> Draft202012Validator:
    schema = case_schema()
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def test_every_field_is_described() -> None:
    def walk(node: Any, where: str) -> None:
        if isinstance(node, dict):
            for key, prop in node.get("properties", {}).items():
                assert prop.get("description"), f"{where}.{key} has no description"
            for key, value in node.items():
                walk(value, f"{where}.{key}")
        elif isinstance(node, list):
            for index, item in enumerate(node):
                walk(item, f"{where}[{index}]")

    walk(case_schema(), "schema")


@pytest.mark.parametrize("path", GOOD, ids=lambda p: p.name)
def test_every_case_file_is_valid_for_both(path: Path, validator: Draft202012Validator) -> None:
    assert [e.message for e in validator.iter_errors(yaml.safe_load(path.read_text()))] == []
    assert read_cases(str(path))


def tether_file(*steps: Any, **case: Any) -> dict[str, Any]:
    """A file in Tether's format with one case: `CASE` with these steps and keys."""
    return {
        "tree": "t.yaml",
        "cases": [{**CASE, **({"steps": list(steps)} if steps else {}), **case}],
    }


def abtree_file(**keys: Any) -> dict[str, Any]:
    """abtree's case with no steps that expects done, with these keys instead."""
    return {"tree": "x", "steps": [], "final": {"status": "done"}, **keys}


BAD: list[tuple[str, Any]] = [
    ("no_tree", {"cases": [CASE]}),
    ("no_cases_key_and_no_steps", {"tree": "t.yaml"}),
    ("empty_cases", {"tree": "t.yaml", "cases": []}),
    ("case_without_end", {"tree": "t.yaml", "cases": [{"name": "c", "steps": []}]}),
    ("case_without_name", {"tree": "t.yaml", "cases": [{"steps": [], "end": {"status": "done"}}]}),
    ("unknown_case_key", tether_file(expect={})),
    ("two_step_kinds", tether_file({**STEP, "human": "H"})),
    ("no_step_kind", tether_file({"write": {}})),
    ("bad_submit", tether_file({**STEP, "submit": "ok"})),
    ("result_text", tether_file({"evaluate": "E", "result": "yes"})),
    ("no_decision", tether_file({"human": "H"})),
    ("bad_decision", tether_file({"human": "H", "decision": "ok"})),
    ("empty_name", tether_file({"instruct": ""})),
    ("bad_status", tether_file(end={"status": "complete"})),
    ("negative_retries", tether_file(end={"status": "done", "retries": {"A": -1}})),
    ("abtree_no_final", {"tree": "x", "steps": []}),
    ("abtree_evaluate_without_result", abtree_file(steps=[{"type": "evaluate", "name": "A"}])),
    ("abtree_unknown_type", abtree_file(steps=[{"type": "check", "name": "A"}])),
    ("abtree_unknown_key", abtree_file(expect=1)),
    ("abtree_file_outside", abtree_file(files={"../x.yaml": ""})),
    ("abtree_file_deep_outside", abtree_file(files={"a/../../x.yaml": ""})),
    ("abtree_absolute_file", abtree_file(files={"/x.yaml": ""})),
    ("abtree_file_not_text", abtree_file(files={"x.yaml": 1})),
]


@pytest.mark.parametrize("raw", [b[1] for b in BAD], ids=[b[0] for b in BAD])
def test_both_refuse_each_mistake(
    raw: Any, validator: Draft202012Validator, tmp_path: Path
) -> None:
    assert not validator.is_valid(raw)
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(raw))
    with pytest.raises(TetherError) as caught:
        read_cases(str(path))
    assert caught.value.code == "invalid_value"
