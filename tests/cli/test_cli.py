"""The `tether` command: output contract, exit codes, and bad input that must lose nothing."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tether.cli.main import main
from tether.errors import (
    EXIT_CONFLICT,
    EXIT_INTERNAL,
    EXIT_INVALID,
    EXIT_NOT_FOUND,
    EXIT_OK,
    EXIT_USAGE,
)

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
HELLO = str(EXAMPLES / "hello-world.yaml")


class Cli:
    """Runs `tether` in-process and returns (exit code, stdout JSON, stderr JSON)."""

    def __init__(self, capsys: pytest.CaptureFixture[str], folder: Path) -> None:
        self.capsys = capsys
        self.folder = folder

    def __call__(self, *args: str) -> tuple[int, Any, Any]:
        code = main(list(args))
        out, err = self.capsys.readouterr()
        return (
            code,
            json.loads(out) if out.strip() else None,
            json.loads(err) if err.strip() else None,
        )

    def ok(self, *args: str) -> Any:
        code, out, err = self(*args)
        assert code == EXIT_OK, err
        return out

    def fails(self, exit_code: int, error_code: str, *args: str) -> dict[str, Any]:
        code, out, err = self(*args)
        assert out is None
        assert (code, err["error"]["code"]) == (exit_code, error_code), err
        return dict(err["error"])


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Cli:
    monkeypatch.chdir(tmp_path)
    return Cli(capsys, tmp_path)


def _files(folder: Path) -> dict[str, bytes]:
    """The files of the executions in `folder`, but their locks and refusal logs."""
    return {
        p.name: p.read_bytes()
        for p in sorted(folder.iterdir())
        if not p.name.endswith((".lock", ".refused.jsonl"))
    }


def _started(cli: Cli) -> Path:
    cli.ok("start", HELLO, "run.json")
    cli.ok("submit", "run.json", "success")
    return cli.folder / "run.json"


def test_exit_codes_are_distinct_per_class() -> None:
    codes = [EXIT_OK, EXIT_INTERNAL, EXIT_USAGE, EXIT_INVALID, EXIT_NOT_FOUND, EXIT_CONFLICT]
    assert len(set(codes)) == len(codes)


def test_walk_hello_world_through_the_cli(cli: Cli) -> None:
    started = cli.ok("start", HELLO, "run.json")
    assert started["uri"] == "file://" + str(cli.folder / "run.json")
    assert cli.ok("next", "run.json")["name"] == "Acknowledge_Protocol"
    cli.ok("submit", "run.json", "success")
    request = cli.ok("next", "run.json")
    assert request["name"] == "Determine_Time" and request["writes"] == ["time_of_day"]
    cli.ok("var", "run.json", "time_of_day", "morning")
    cli.ok("submit", "run.json", "success", "--step", request["step"])
    cli.ok("eval", "run.json", "true", "--note", "it is 9:00")
    cli.ok("var", "run.json", "greeting", '"Good morning!"')
    assert cli.ok("submit", "run.json", "success")["status"] == "action_complete"
    assert cli.ok("next", "run.json") == {"status": "done"}
    assert cli.ok("verify", "run.json")["ok"] is True
    doc = cli.ok("get", "run.json")
    assert doc["status"] == "complete" and doc["tree"]["name"] == "hello-world"
    assert doc["var"] == {"time_of_day": "morning", "greeting": "Good morning!"}
    notes = [e.get("note") for e in doc["trace"] if e["kind"] == "evaluate"]
    assert notes == ["it is 9:00"]


def test_next_all_and_trace_slices(cli: Cli) -> None:
    _started(cli)
    assert [r["name"] for r in cli.ok("next", "run.json", "--all")] == ["Determine_Time"]
    cli.ok("think", "run.json", "looking at the clock")
    trace = cli.ok("trace", "run.json")
    assert [e["seq"] for e in trace] == [0, 1]
    assert cli.ok("trace", "run.json", "--from", "1") == trace[1:]
    assert cli.ok("trace", "run.json", "--to", "1") == trace[:1]


def test_start_with_var_and_const_overrides(cli: Cli) -> None:
    cli.ok(
        "start",
        str(EXAMPLES / "deploy.yaml"),
        "run.json",
        "--const",
        "coverage_threshold=90",
        "--var",
        "coverage=-1",
        "--const",
        "registry=r.example/x",
    )
    assert cli.ok("const", "run.json", "coverage_threshold") == 90
    assert cli.ok("const", "run.json", "registry") == "r.example/x"
    assert cli.ok("var", "run.json", "coverage") == -1


def test_values_beginning_with_a_dash_are_values(cli: Cli) -> None:
    _started(cli)
    assert cli.ok("var", "run.json", "delta", "-5")["value"] == -5
    assert cli.ok("var", "run.json", "msg", "-fix the flaky test")["value"] == "-fix the flaky test"
    assert cli.ok("var", "run.json", "flag", "--", "--all")["value"] == "--all"
    cli.ok("think", "run.json", "-x marks the spot")
    cli.ok("var", "run.json", "time_of_day", "evening")
    cli.ok("submit", "run.json", "success", "--note", "-done quickly")
    trace = cli.ok("trace", "run.json")
    assert trace[-1]["note"] == "-done quickly"
    assert any(e.get("submitted") == "-x marks the spot" for e in trace)


def test_var_value_from_file_and_stdin(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    _started(cli)
    (cli.folder / "v.json").write_text('{"a": [1, 2]}')
    assert cli.ok("var", "run.json", "blob", "--file", "v.json", "--json")["value"] == {"a": [1, 2]}
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"from stdin")))
    assert cli.ok("var", "run.json", "text", "--stdin")["value"] == "from stdin"
    assert cli.ok("var", "run.json") == {
        "time_of_day": None,
        "greeting": None,
        "blob": {"a": [1, 2]},
        "text": "from stdin",
    }


# -- errors: each checks the message and that the stored execution is unchanged ----------------


def test_bad_json_under_json_is_refused_and_nothing_changes(cli: Cli) -> None:
    run = _started(cli)
    before = _files(run.parent)
    err = cli.fails(EXIT_INVALID, "invalid_json", "var", "run.json", "x", "{not json", "--json")
    assert "line 1 column 2" in err["message"]
    assert _files(run.parent) == before


def test_bad_var_path_is_refused_and_nothing_changes(cli: Cli) -> None:
    run = _started(cli)
    before = _files(run.parent)
    err = cli.fails(EXIT_INVALID, "invalid_path", "var", "run.json", "a..b", "1")
    assert "'a..b'" in err["message"]
    assert _files(run.parent) == before
    cli.fails(EXIT_NOT_FOUND, "not_found", "var", "run.json", "nope.deeper")


def test_unknown_uri_scheme(cli: Cli) -> None:
    err = cli.fails(EXIT_INVALID, "unknown_scheme", "next", "s3://bucket/run.json")
    assert "'s3'" in err["message"]
    cli.fails(EXIT_INVALID, "unknown_scheme", "start", HELLO, "redis://x/run")


def test_missing_tree_and_missing_execution(cli: Cli) -> None:
    cli.fails(EXIT_NOT_FOUND, "not_found", "start", "nope.yaml", "run.json")
    assert not (cli.folder / "run.json").exists()
    err = cli.fails(EXIT_NOT_FOUND, "not_found", "next", "missing.json")
    assert "missing.json" in err["message"]


def test_unreadable_tree_and_execution(cli: Cli) -> None:
    (cli.folder / "folder.yaml").mkdir()
    cli.fails(EXIT_INVALID, "invalid_tree", "start", "folder.yaml", "run.json")
    (cli.folder / "folder.json").mkdir()
    err = cli.fails(EXIT_INVALID, "invalid_value", "next", "folder.json")
    assert "folder" in err["message"]


def test_invalid_tree_is_reported_with_location_and_nothing_is_created(cli: Cli) -> None:
    (cli.folder / "bad.yaml").write_text(
        "name: x\nversion: 1\ntree:\n  type: sequense\n  name: S\n  children: []\n"
    )
    err = cli.fails(EXIT_INVALID, "invalid_tree", "start", "bad.yaml", "run.json")
    assert "bad.yaml:4" in err["message"]
    assert not (cli.folder / "run.json").exists()
    cli.fails(EXIT_INVALID, "invalid_tree", "validate", "bad.yaml")


def test_corrupt_execution_is_named_and_never_overwritten(cli: Cli) -> None:
    run = _started(cli)
    run.write_text('{"status": "running", truncated')
    before = _files(run.parent)
    for args in (
        ("next", "run.json"),
        ("submit", "run.json", "success"),
        ("var", "run.json", "x", "1"),
        ("reset", "run.json"),
        ("verify", "run.json"),
    ):
        err = cli.fails(EXIT_INVALID, "corrupt_execution", *args)
        assert "corrupt" in err["message"] and "run.json" in err["message"]
    cli.fails(EXIT_CONFLICT, "already_exists", "start", HELLO, "run.json")
    assert _files(run.parent) == before


def test_start_on_an_existing_execution_is_refused(cli: Cli) -> None:
    run = _started(cli)
    before = _files(run.parent)
    err = cli.fails(EXIT_CONFLICT, "already_exists", "start", HELLO, "run.json")
    assert "resume" in err["message"]
    assert _files(run.parent) == before


def test_wrong_phase_and_stale_step_carry_the_current_request(cli: Cli) -> None:
    run = _started(cli)
    token = cli.ok("next", "run.json")["step"]
    before = _files(run.parent)
    err = cli.fails(EXIT_CONFLICT, "wrong_phase", "eval", "run.json", "true")
    assert err["current"]["name"] == "Determine_Time"
    assert _refused(run) == ["wrong_phase"]  # for tether stats, beside the trace
    assert _files(run.parent) == before
    cli.ok("var", "run.json", "time_of_day", "morning")
    cli.ok("submit", "run.json", "success", "--step", token)
    run_files = _files(run.parent)
    err = cli.fails(EXIT_CONFLICT, "stale_step", "submit", "run.json", "success", "--step", token)
    assert err["current"]["name"] == "Morning_Greeting"
    assert _files(run.parent) == run_files
    assert _refused(run) == ["wrong_phase", "stale_step"]


def _refused(run: Path) -> list[str]:
    """The codes of the execution's refusal log."""
    log = run.parent / (run.name + ".refused.jsonl")
    return [json.loads(line)["code"] for line in log.read_text().splitlines()]


def test_writes_missing_names_the_paths(cli: Cli) -> None:
    _started(cli)
    err = cli.fails(EXIT_CONFLICT, "writes_missing", "submit", "run.json", "success")
    assert err["missing"] == ["time_of_day"] and "$VAR.time_of_day" in err["message"]


def test_const_is_read_only(cli: Cli) -> None:
    cli.ok("start", str(EXAMPLES / "deploy.yaml"), "run.json")
    err = cli.fails(EXIT_CONFLICT, "read_only", "const", "run.json", "registry", "x")
    assert "read-only" in err["message"]
    assert cli.ok("const", "run.json", "registry") == "ghcr.io/example/service"


def test_usage_errors(cli: Cli) -> None:
    _started(cli)
    cli.fails(EXIT_USAGE, "usage", "frobnicate")
    err = cli.fails(EXIT_USAGE, "usage", "eval", "run.json", "maybe")
    assert "true or false" in err["message"]
    cli.fails(EXIT_USAGE, "usage", "submit", "run.json", "done")
    cli.fails(EXIT_USAGE, "usage", "next")
    cli.fails(EXIT_USAGE, "usage", "submit", "run.json", "success", "--note")
    cli.fails(EXIT_USAGE, "usage", "trace", "run.json", "--from", "two")
    err = cli.fails(EXIT_USAGE, "usage", "next", "run.json", "--al")
    assert "did you mean --all" in err["message"]
    cli.fails(EXIT_USAGE, "usage", "start", HELLO, "other.json", "--var", "novalue")


def test_verify_reports_a_tampered_state(cli: Cli) -> None:
    run = _started(cli)
    state = json.loads(run.read_text())
    state["var"]["time_of_day"] = "tampered"
    run.write_text(json.dumps(state))
    code, out, _ = cli("verify", "run.json")
    assert code == EXIT_INVALID and out["ok"] is False
    assert out["differences"][0]["field"] == "var"


def test_reset_through_the_cli(cli: Cli) -> None:
    _started(cli)
    cli.ok("var", "run.json", "time_of_day", "noon")
    assert cli.ok("reset", "run.json")["status"] == "reset"
    assert cli.ok("var", "run.json", "time_of_day") is None
    assert cli.ok("next", "run.json")["name"] == "Acknowledge_Protocol"
    assert [e["kind"] for e in cli.ok("trace", "run.json")] == ["reset"]
    assert cli.ok("verify", "run.json")["ok"]


def test_schema_is_json_schema_2020_12(cli: Cli) -> None:
    schema = cli.ok("schema")
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"


def test_the_installed_command_runs_in_a_fresh_process(tmp_path: Path) -> None:
    tether = Path(sys.executable).with_name("tether")
    env = {**os.environ}
    start = subprocess.run(
        [str(tether), "start", HELLO, "run.json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert start.returncode == 0, start.stderr
    bad = subprocess.run(
        [str(tether), "eval", "run.json", "true"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert bad.returncode == EXIT_CONFLICT
    assert bad.stdout == ""
    assert json.loads(bad.stderr)["error"]["code"] == "wrong_phase"


def test_start_creates_the_folders_of_a_new_trace(cli: Cli) -> None:
    cli.ok("start", HELLO, "runs/today/run.json")
    assert cli.ok("next", "runs/today/run.json")["name"] == "Acknowledge_Protocol"
    (cli.folder / "blocker").write_text("a file, not a folder")
    err = cli.fails(EXIT_INVALID, "invalid_value", "start", HELLO, "blocker/run.json")
    assert "cannot create folder" in err["message"]


def test_var_and_think_take_a_step_token(cli: Cli) -> None:
    _started(cli)
    token = cli.ok("next", "run.json")["step"]
    cli.ok("var", "run.json", "time_of_day", "noon", "--step", token)
    cli.ok("think", "run.json", "checked the clock", "--step", token)
    assert [e["cursor"]["path"] for e in cli.ok("trace", "run.json")[1:]] == [[0], [0]]
    err = cli.fails(EXIT_CONFLICT, "stale_step", "var", "run.json", "x", "1", "--step", "old")
    assert err["current"]["name"] == "Determine_Time"
    cli.fails(EXIT_USAGE, "usage", "var", "run.json", "x", "--step", token)


def test_a_tree_file_given_as_trace_is_named_a_tree(cli: Cli) -> None:
    (cli.folder / "tree.json").write_text('{"name": "t", "version": "1", "tree": {}}')
    for tree in (HELLO, "tree.json"):
        err = cli.fails(EXIT_INVALID, "invalid_value", "next", tree)
        assert "is a tree file, not an execution" in err["message"]
        assert "tether start" in err["message"]


def test_python_m_tether_is_the_tether_command(tmp_path: Path) -> None:
    """The guard and its docs read `python -m tether …` as a call of Tether: it runs as one."""
    tree = Path(__file__).parents[2] / "examples" / "hello-world.yaml"
    done = subprocess.run(
        [sys.executable, "-m", "tether", "validate", str(tree)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["name"]
