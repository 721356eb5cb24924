"""Values that JSON cannot hold are refused at every way in, as bad input (exit 3,
`invalid_value`), with the execution left as it was; and a value that looks like an option is
still a value. Runs the real `tether` command, passing raw bytes where a test needs them."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from support.command import HELLO, Arg, ok, refused, run, snapshot
from tether.errors import EXIT_INVALID, EXIT_OK
from tether.values import MAX_DEPTH


@pytest.fixture
def run_json(tmp_path: Path) -> Path:
    path = tmp_path / "run.json"
    ok("start", HELLO, path)
    ok("submit", path, "success")
    return path


def _nested(levels: int) -> str:
    return "[" * levels + "]" * levels


@pytest.mark.parametrize("text", ["NaN", "Infinity", "-Infinity", "1e999", '{"a": [1, NaN]}'])
def test_var_refuses_numbers_json_has_not(run_json: Path, text: str) -> None:
    before = snapshot(run_json.parent)
    error = refused(EXIT_INVALID, "invalid_value", "var", run_json, "x", text)
    assert "JSON" in error["message"]
    refused(EXIT_INVALID, "invalid_value", "var", run_json, "x", text, "--json")
    assert snapshot(run_json.parent) == before
    assert ok("verify", run_json)["ok"]


def test_a_quoted_nan_is_text(run_json: Path) -> None:
    assert ok("var", run_json, "x", '"NaN"')["value"] == "NaN"
    assert ok("var", run_json, "x", "NaNa")["value"] == "NaNa"


@pytest.mark.parametrize("option", ["--var", "--const"])
def test_start_refuses_non_json_numbers_in_scopes(tmp_path: Path, option: str) -> None:
    for text in ("NaN", "-Infinity", "1e999"):
        args = ("start", HELLO, tmp_path / "run.json", option, f"limit={text}")
        error = refused(EXIT_INVALID, "invalid_value", *args)
        assert "limit" in error["message"] and "JSON" in error["message"], error
    assert list(tmp_path.iterdir()) == [], "nothing was started"


def test_deep_nesting_is_bad_input_with_its_limit(run_json: Path) -> None:
    before = snapshot(run_json.parent)
    for text in (_nested(1000), _nested(MAX_DEPTH)):
        error = refused(EXIT_INVALID, "invalid_value", "var", run_json, "x", text)
        assert f"deeper than {MAX_DEPTH} levels" in error["message"]
    deep_path = ".".join(["k"] * (MAX_DEPTH + 1))
    error = refused(EXIT_INVALID, "invalid_value", "var", run_json, deep_path, "1")
    assert f"deeper than {MAX_DEPTH} levels" in error["message"]
    refused(EXIT_INVALID, "invalid_value", "var", run_json, "a.b", _nested(MAX_DEPTH - 1))
    refused(
        EXIT_INVALID, "invalid_value", "start", HELLO, run_json.parent / "new.json",
        "--var", f"k={_nested(1000)}",
    )  # fmt: skip
    assert snapshot(run_json.parent) == before
    assert ok("var", run_json, "x", _nested(MAX_DEPTH - 1))["status"] == "written"
    assert ok("verify", run_json)["ok"]


def test_bytes_that_are_not_utf8_are_bad_input(run_json: Path, tmp_path: Path) -> None:
    before = snapshot(tmp_path)
    bad = os.fsencode("caf\udce9")  # b"caf\xe9": Latin-1, not UTF-8
    calls: list[list[Arg]] = [
        ["var", run_json, bad, "1"],
        ["var", run_json, "x", bad],
        ["think", run_json, bad],
        ["start", HELLO, tmp_path / "new.json", "--var", b"k=" + bad],
        ["start", HELLO, tmp_path / "new.json", "--const", bad + b"=1"],
        ["start", HELLO, os.fsencode(tmp_path) + b"/" + bad + b".json"],
    ]
    for args in calls:
        error = refused(EXIT_INVALID, "invalid_value", *args)
        assert "not UTF-8" in error["message"], error
    (tmp_path / "latin1.txt").write_bytes(b"caf\xe9")
    calls = [
        ["var", run_json, "x", "--file", tmp_path / "latin1.txt"],
        ["submit", run_json, "success", "--note-file", tmp_path / "latin1.txt"],
        ["think", run_json, "--file", tmp_path / "latin1.txt"],
    ]
    for args in calls:
        error = refused(EXIT_INVALID, "invalid_value", *args)
        assert "latin1.txt is not UTF-8 text: byte 0xe9 at offset 3" in error["message"]
    error = refused(EXIT_INVALID, "invalid_value", "var", run_json, "x", "--stdin", stdin=b"\xff")
    assert "standard input is not UTF-8" in error["message"]
    after = snapshot(tmp_path)
    after.pop("latin1.txt")
    assert after == before
    assert ok("verify", run_json)["ok"]


def test_help_in_the_place_of_a_value_is_the_value(run_json: Path) -> None:
    assert ok("var", run_json, "flag", "--help")["value"] == "--help"
    assert ok("var", run_json, "short", "-h")["value"] == "-h"
    assert ok("var", run_json, "flag") == "--help"
    assert ok("think", run_json, "--help")["status"] == "recorded"
    assert ok("trace", run_json)[-1]["submitted"] == "--help"
    for args in (["var", run_json, "--help"], ["var", "--help"], ["think", "-h"]):
        done = run(*args)
        assert done.returncode == EXIT_OK and done.stdout.startswith(b"usage: tether ")
    assert ok("var", run_json, "opt", "--", "--json")["value"] == "--json"
    assert json.loads(run_json.read_text())["var"]["opt"] == "--json"
