"""The file store's listing, attacked through the real `tether list`: which folders it enters
(sub-folders down to six levels; no hidden folder, no virtual environment, no link), and what it
does with what it cannot trust (a corrupt state, a state naming files elsewhere, a link or a FIFO
in the place of a state file): each is listed with its own error, the others as usual, and
nothing outside the folder is read or changed."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from support.command import HELLO, ok, refused, snapshot
from tether.errors import EXIT_INVALID, EXIT_NOT_FOUND

SECRET = '{"name": "TOP-SECRET", "status": "running", "TOP-SECRET": 1}'


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    folder = tmp_path / "runs"
    folder.mkdir()
    return folder


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder beside the listed one, with an execution and a secret in it."""
    folder = tmp_path / "outside"
    folder.mkdir()
    ok("start", HELLO, folder / "theirs.json")
    (folder / "secret.json").write_text(SECRET)
    return folder


def _listed(folder: Path | str, *options: str) -> dict[str, dict[str, object]]:
    rows = ok("list", folder, "--json", *options)
    assert [r["name"] for r in rows] == sorted(r["name"] for r in rows)
    return {str(r["name"]): r for r in rows}


def test_sub_folders_are_listed_down_to_six_levels(runs: Path) -> None:
    deep = runs
    for level in range(1, 8):
        deep = deep / f"l{level}"
        deep.mkdir()
        ok("start", HELLO, deep / "run.json")
    ok("start", HELLO, runs / "top.json")
    names = set(_listed(runs))
    assert "top.json" in names and "l1/run.json" in names
    assert "l1/l2/l3/l4/l5/l6/run.json" in names
    assert "l1/l2/l3/l4/l5/l6/l7/run.json" not in names, "seven levels down is not looked at"
    assert len(names) == 7


@pytest.mark.parametrize("folder", [".git", ".hidden", "venv", "node_modules", "__pycache__"])
def test_hidden_folders_and_environments_are_left_out(runs: Path, folder: str) -> None:
    (runs / folder).mkdir()
    ok("start", HELLO, runs / folder / "run.json")
    ok("start", HELLO, runs / "mine.json")
    assert set(_listed(runs)) == {"mine.json"}


def test_a_link_to_a_folder_is_not_entered(runs: Path, outside: Path) -> None:
    ok("start", HELLO, runs / "mine.json")
    (runs / "door").symlink_to(outside)
    assert set(_listed(runs)) == {"mine.json"}
    given = _listed(runs / "door")
    assert set(given) == {"theirs.json"}, "a folder named by the caller is followed"


def test_a_corrupt_execution_has_its_own_row_and_the_others_are_listed(runs: Path) -> None:
    ok("start", HELLO, runs / "good.json")
    (runs / "garbled.json").write_text("{not json")
    (runs / "garbled.json.tree.json").write_text("{}")
    (runs / "partial.json").write_text('{"status": "running"}')
    (runs / "partial.json.tree.json").write_text("{}")
    (runs / "notes.json").write_text("{}")  # no tree beside it: not an execution
    before = snapshot(runs)
    rows = _listed(runs)
    assert set(rows) == {"good.json", "garbled.json", "partial.json"}
    assert rows["good.json"]["status"] == "running" and "error" not in rows["good.json"]
    garbled = rows["garbled.json"]["error"]
    assert isinstance(garbled, dict) and garbled["code"] == "corrupt_execution"
    assert "not JSON" in garbled["message"]
    partial = rows["partial.json"]["error"]
    assert isinstance(partial, dict) and "missing" in partial["message"]
    assert set(rows["garbled.json"]) == {"name", "uri", "error"}
    filtered = _listed(runs, "--status", "complete")
    assert set(filtered) == {"garbled.json", "partial.json"}, "an unreadable one is kept"
    assert snapshot(runs) == before, "listing changes nothing"


def test_a_state_naming_files_elsewhere_is_listed_with_its_error(runs: Path, outside: Path) -> None:
    run_json = runs / "forged.json"
    ok("start", HELLO, run_json)
    state = json.loads(run_json.read_text())
    state["trace"]["file"] = "../outside/secret.json"
    run_json.write_text(json.dumps(state))
    ok("start", HELLO, runs / "good.json")
    rows = _listed(runs)
    error = rows["forged.json"]["error"]
    assert isinstance(error, dict) and error["code"] == "corrupt_execution"
    assert "TOP-SECRET" not in json.dumps(rows)
    assert rows["good.json"]["tree"] == "hello-world"


def test_a_linked_state_file_is_not_followed(runs: Path, outside: Path) -> None:
    (runs / "theirs.json").symlink_to(outside / "theirs.json")
    (runs / "theirs.json.tree.json").symlink_to(outside / "theirs.json.tree.json")
    (runs / "secret.json").symlink_to(outside / "secret.json")
    (runs / "secret.json.tree.json").write_text("{}")
    ok("start", HELLO, runs / "inside.json")
    (runs / "alias.json").symlink_to(runs / "inside.json")
    (runs / "alias.json.tree.json").write_text("{}")
    before = snapshot(outside)
    rows = _listed(runs)
    assert set(rows) == {"theirs.json", "secret.json", "inside.json", "alias.json"}
    for name in ("theirs.json", "secret.json", "alias.json"):
        error = rows[name]["error"]
        assert isinstance(error, dict) and error["code"] == "corrupt_execution", name
        assert "symbolic link" in error["message"], name
    assert "tree" not in rows["theirs.json"], "nothing of the linked execution is shown"
    assert "TOP-SECRET" not in json.dumps(rows)
    assert rows["inside.json"]["status"] == "running"
    assert snapshot(outside) == before


def test_a_fifo_in_the_place_of_a_state_file_is_listed_without_waiting(runs: Path) -> None:
    os.mkfifo(runs / "pipe.json")
    (runs / "pipe.json.tree.json").write_text("{}")
    ok("start", HELLO, runs / "good.json")
    rows = _listed(runs)
    error = rows["pipe.json"]["error"]
    assert isinstance(error, dict) and "not a regular file" in error["message"]
    assert rows["good.json"]["status"] == "running"


def test_listing_reads_only_the_state(runs: Path, outside: Path) -> None:
    run_json = runs / "run.json"
    ok("start", HELLO, run_json)
    ok("submit", run_json, "success")
    (runs / "run.json.trace.jsonl").unlink()
    tree = runs / "run.json.tree.json"
    tree.unlink()
    tree.symlink_to(outside / "secret.json")
    rows = _listed(runs)
    assert rows["run.json"]["revision"] == 1 and rows["run.json"]["phase"] == "performing"
    assert "TOP-SECRET" not in json.dumps(rows)


def test_a_place_that_is_not_a_folder_is_refused(runs: Path) -> None:
    ok("start", HELLO, runs / "run.json")
    error = refused(EXIT_NOT_FOUND, "not_found", "list", runs / "missing")
    assert str(runs / "missing") in error["message"]
    error = refused(EXIT_INVALID, "invalid_value", "list", runs / "run.json")
    assert "not a folder" in error["message"]
    refused(EXIT_INVALID, "invalid_value", "list", "file://" + str(runs / "run.json"))
    assert set(_listed("file://" + str(runs))) == {"run.json"}
