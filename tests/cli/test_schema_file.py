"""The committed `schema/tree.schema.json` (for editors) is what `tether schema` prints."""

from __future__ import annotations

import json
from pathlib import Path

from tether.tree.schema import json_schema

SCHEMA_FILE = Path(__file__).resolve().parents[2] / "schema" / "tree.schema.json"


def test_committed_schema_is_current() -> None:
    committed = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    assert committed == json_schema(), "regenerate with: tether schema > schema/tree.schema.json"


def test_examples_point_editors_at_the_schema() -> None:
    for name in ("hello-world.yaml", "deploy.yaml", "code-review.yaml", "review-changes.yaml"):
        example = SCHEMA_FILE.parents[1] / "examples" / name
        first = example.read_text(encoding="utf-8").splitlines()[0]
        assert first == "# yaml-language-server: $schema=../schema/tree.schema.json", example
