"""The harness capability table cannot drift from the tests: the shipped
`capabilities.json` and the docs' section equal what the field tests' `harness_capability` marks
yield now, every cell names a test that exists, and `tether guard harnesses` prints it."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from field.capability_marks import DOC, ROOT, collect, with_section
from tether.guard.cli import main
from tether.guard.harness.capabilities import CAPABILITIES, DATA, DOCUMENTED, build, shipped


def test_the_shipped_table_is_what_the_tests_marks_yield(tmp_path: Path) -> None:
    now = collect(tmp_path / "capabilities.json")
    assert json.loads(DATA.read_text()) == now, "run scripts/harness-capabilities"
    assert {r["harness"] for r in now["tested"]} >= {
        "claude",
        "codex",
        "gemini",
        "claude-agent-sdk",
    }


def test_the_docs_show_the_shipped_table() -> None:
    text = DOC.read_text()
    assert with_section(text, shipped()) == text, "run scripts/harness-capabilities"


def test_each_cell_names_a_test_that_exists() -> None:
    table = shipped()
    named = [t for r in table["tested"] for c in CAPABILITIES for t in r["cells"][c]]
    named += [r["stop_cap"]["test"] for r in table["tested"] if r["stop_cap"]]
    assert named
    for test in named:
        path, _, name = test.partition("::")
        tree = ast.parse((ROOT / path).read_text())
        defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
        assert name in defined, test


def test_a_mark_that_names_no_capability_or_an_unpinned_harness_is_refused() -> None:
    with pytest.raises(ValueError, match="'flies' is not one of"):
        build([("codex", "flies", "t.py::test_x", {})], {"codex": "1"})
    with pytest.raises(ValueError, match="'nobody' has no pinned version"):
        build([("nobody", "deny", "t.py::test_x", {})], {})


def test_guard_harnesses_prints_the_table_and_the_untested(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["harnesses"]) == 0
    text = capsys.readouterr().out
    claude = next(line for line in text.splitlines() if line.startswith("claude "))
    assert "2.1.332" in claude and "ends the turn at 9" in claude, claude
    for doc in DOCUMENTED:
        assert f"{doc['harness']}: " in text and doc["source"] in text
    assert main(["harnesses", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert next(d["tested"] for d in data["documented"]) == "not tested here"
    opencode = next(line for line in text.splitlines() if line.startswith("opencode "))
    assert " no " in opencode, opencode
    sdk = next(r for r in data["tested"] if r["harness"] == "claude-agent-sdk")
    assert sdk["version"] == "0.2.189" and sdk["cells"]["person"] == []


def test_the_binding_parks_before_the_lowest_cap_the_field_tests_saw() -> None:
    """The binding cannot tell which harness runs it, so it parks before the lowest own stop cap
    a field test saw; a harness found to end its turns sooner moves it."""
    from tether.guard.binding.binder import HARNESS_STOP_CAP
    from tether.guard.harness.capabilities import stop_caps

    assert min(stop_caps().values()) == HARNESS_STOP_CAP
