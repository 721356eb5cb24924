"""The file store does not trust what it finds on disk: a state file that names files elsewhere,
symbolic links planted beside an execution, leftovers of another start, and the temporary files
of killed writers. Every attack runs the real `tether` command and asserts the refusal (exit code
and error code), that nothing outside the folder was read, changed or deleted, and that nothing
inside was lost."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from support.command import HELLO, Arg, ok, refused, snapshot
from tether.errors import EXIT_CONFLICT, EXIT_INTERNAL, EXIT_INVALID

SECRET = b'{"seq":0,"kind":"think","submitted":"TOP-SECRET"}\n'


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder beside the executions' folder, holding what an attacker wants read or ruined."""
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.jsonl").write_bytes(SECRET)
    (folder / "tree.json").write_text('{"name": "TOP-SECRET", "root": {}}')
    return folder


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    folder = tmp_path / "runs"
    folder.mkdir()
    return folder


def _started(runs: Path) -> Path:
    run_json = runs / "run.json"
    ok("start", HELLO, run_json)
    ok("submit", run_json, "success")
    return run_json


def _forge(run_json: Path, **changes: object) -> None:
    state = json.loads(run_json.read_text())
    state.update(changes)
    run_json.write_text(json.dumps(state, indent=1))


def _leaks(error: dict[str, object]) -> bool:
    """Whether what the command printed (only its error: stdout is empty) shows a secret."""
    return "TOP-SECRET" in json.dumps(error)


@pytest.mark.parametrize(
    "name",
    ["ABSOLUTE", "../outside/secret.jsonl", "other.json.trace.jsonl", "run.json.trace.x.jsonl"],
)
def test_a_state_file_naming_another_trace_file_is_corrupt(
    runs: Path, outside: Path, name: str
) -> None:
    run_json = _started(runs)
    ok("start", HELLO, runs / "other.json")
    forged = str(outside / "secret.jsonl") if name == "ABSOLUTE" else name
    _forge(run_json, trace={"file": forged, "entries": 1, "bytes": len(SECRET)})
    before, secret_before = snapshot(runs), snapshot(outside)
    verbs: list[list[Arg]] = [
        ["submit", run_json, "success"],
        ["reset", run_json],
        ["get", run_json],
        ["trace", run_json],
        ["verify", run_json],
        ["next", run_json],
        ["var", run_json, "x", "1"],
    ]
    for verb in verbs:
        error = refused(EXIT_INVALID, "corrupt_execution", *verb)
        assert forged in error["message"] and "not run.json.trace[.N].jsonl" in error["message"]
        assert not _leaks(error)
    assert snapshot(outside) == secret_before, "nothing outside was written or deleted"
    assert snapshot(runs) == before, "nothing inside was changed or lost"


def test_a_state_file_naming_another_tree_file_is_corrupt(runs: Path, outside: Path) -> None:
    run_json = _started(runs)
    for forged in (str(outside / "tree.json"), "../outside/tree.json", "run.json.tree.1.json.x"):
        _forge(run_json, tree_file=forged)
        before = snapshot(runs)
        verbs: list[list[Arg]] = [
            ["get", run_json],
            ["submit", run_json, "success"],
            ["resume", run_json],
        ]
        for verb in verbs:
            error = refused(EXIT_INVALID, "corrupt_execution", *verb)
            assert "not run.json.tree[.N].json" in error["message"]
            assert not _leaks(error)
        assert snapshot(runs) == before
    assert (outside / "tree.json").read_text().startswith('{"name": "TOP-SECRET"')


def test_a_committed_length_that_is_not_a_count_is_corrupt(runs: Path) -> None:
    run_json = _started(runs)
    _forge(run_json, trace={"file": "run.json.trace.jsonl", "entries": 1, "bytes": -5})
    refused(EXIT_INVALID, "corrupt_execution", "submit", run_json, "success")
    _forge(run_json, trace={"file": "run.json.trace.jsonl", "entries": 1, "bytes": 10**15})
    refused(EXIT_INVALID, "corrupt_execution", "get", run_json)


@pytest.mark.parametrize("sidecar", ["run.json.trace.jsonl", "run.json.tree.json"])
def test_a_symlinked_sidecar_is_neither_followed_nor_written(
    runs: Path, outside: Path, sidecar: str
) -> None:
    run_json = _started(runs)
    target = outside / ("secret.jsonl" if "trace" in sidecar else "tree.json")
    kept = (runs / sidecar).read_bytes()
    (runs / sidecar).unlink()
    (runs / sidecar).symlink_to(target)
    secret_before = snapshot(outside)
    before = snapshot(runs)
    verbs: list[list[Arg]] = [["get", run_json], ["think", run_json, "hm"], ["verify", run_json]]
    for verb in verbs:
        error = refused(EXIT_INVALID, "corrupt_execution", *verb)
        assert "symbolic link" in error["message"]
        assert not _leaks(error)
    assert snapshot(outside) == secret_before and snapshot(runs) == before
    (runs / sidecar).unlink()
    (runs / sidecar).write_bytes(kept)
    assert ok("verify", run_json)["ok"], "the execution itself was not touched"


def test_a_reset_drops_a_symlinked_trace_without_touching_its_target(
    runs: Path, outside: Path
) -> None:
    run_json = _started(runs)
    (runs / "run.json.trace.jsonl").unlink()
    (runs / "run.json.trace.jsonl").symlink_to(outside / "secret.jsonl")
    ok("reset", run_json)
    assert not (runs / "run.json.trace.jsonl").is_symlink(), "the link, not its target, went"
    assert (outside / "secret.jsonl").read_bytes() == SECRET
    assert ok("verify", run_json)["ok"]


def test_a_symlinked_state_file_or_lock_is_refused(runs: Path, outside: Path) -> None:
    real = _started(runs)
    (runs / "alias.json").symlink_to(real)
    error = refused(EXIT_INVALID, "corrupt_execution", "submit", runs / "alias.json", "success")
    assert "symbolic link" in error["message"]
    (runs / "run.json.lock").unlink()
    (runs / "run.json.lock").symlink_to(outside / "planted.lock")
    before = snapshot(runs)
    refused(EXIT_INVALID, "corrupt_execution", "submit", real, "success")
    assert not (outside / "planted.lock").exists(), "no file was created through the link"
    assert snapshot(runs) == before


def test_a_fifo_as_trace_file_is_refused_without_waiting(runs: Path) -> None:
    run_json = _started(runs)
    (runs / "run.json.trace.jsonl").unlink()
    os.mkfifo(runs / "run.json.trace.jsonl")
    error = refused(EXIT_INVALID, "corrupt_execution", "get", run_json)
    assert "not a regular file" in error["message"]


def test_a_reset_into_a_planted_link_is_refused_then_tidied(runs: Path, outside: Path) -> None:
    run_json = _started(runs)
    revision = json.loads(run_json.read_text())["revision"]
    planted = runs / f"run.json.trace.{revision + 1}.jsonl"
    planted.symlink_to(outside / "secret.jsonl")
    error = refused(EXIT_INVALID, "corrupt_execution", "reset", run_json)
    assert "symbolic link" in error["message"]
    assert (outside / "secret.jsonl").read_bytes() == SECRET
    assert ok("verify", run_json)["ok"] and ok("get", run_json)["revision"] == revision
    assert ok("reset", run_json)["status"] == "reset", "the next writer removed the link"
    assert not planted.is_symlink() and (outside / "secret.jsonl").read_bytes() == SECRET
    assert ok("verify", run_json)["ok"]


@pytest.mark.parametrize(
    "leftover",
    [
        "run.json.tree.json",
        "run.json.trace.jsonl",
        "run.json.trace.4.jsonl",
        "run.json.tree.2.json",
        "LINK",
    ],
)
def test_start_refuses_while_any_file_of_the_execution_is_there(
    runs: Path, outside: Path, leftover: str
) -> None:
    if leftover == "LINK":
        (runs / "run.json.trace.jsonl").symlink_to(outside / "secret.jsonl")
    else:
        (runs / leftover).write_text("kept\n")
    before, secret_before = snapshot(runs), snapshot(outside)
    error = refused(EXIT_CONFLICT, "already_exists", "start", HELLO, runs / "run.json")
    assert "without its state" in error["message"]
    assert snapshot(runs) == before and snapshot(outside) == secret_before


def test_start_goes_ahead_over_a_lock_and_temporaries_and_tidies_them(runs: Path) -> None:
    (runs / "run.json.lock").write_bytes(b"")
    (runs / "run.json.4242.tmp").write_text("{half")
    (runs / "run.json.tree.json.77.0badf00d.tmp").write_text("{half")
    (runs / "run.json.5.tmp").mkdir()  # not a temporary file of ours: a folder is left alone
    ok("start", HELLO, runs / "run.json")
    assert sorted(p.name for p in runs.iterdir()) == [
        ".tether-index.jsonl",
        "run.json",
        "run.json.5.tmp",
        "run.json.lock",
        "run.json.trace.jsonl",
        "run.json.tree.json",
    ]


_KILLED_AT_RENAME = """
import os, signal, sys
from tether.verbs import Runtime
renames = []
replace = os.replace
def killed(*args, **kwargs):
    renames.append(args)
    if len(renames) == {nth}:
        os.kill(os.getpid(), signal.SIGKILL)
    return replace(*args, **kwargs)
os.replace = killed
Runtime().{call}
"""


def _killed_writer(call: str, nth: int = 1) -> None:
    """Run `Runtime().call` in a process killed at its `nth` rename."""
    done = subprocess.run(
        [sys.executable, "-c", _KILLED_AT_RENAME.format(call=call, nth=nth)],
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == -9, done.stderr


def test_temporary_files_of_killed_writers_are_removed_by_the_next(runs: Path) -> None:
    run_json = _started(runs)
    _killed_writer(f"var_write({str(run_json)!r}, 'time_of_day', 'noon')")
    (runs / "run.json.4242.tmp").write_text("{left by an older Tether")
    assert len(list(runs.glob("*.tmp"))) == 2
    assert ok("next", run_json)["name"] == "Determine_Time", "readers neither wait nor tidy"
    assert len(list(runs.glob("*.tmp"))) == 2
    ok("var", run_json, "time_of_day", "evening")
    assert list(runs.glob("*.tmp")) == []
    assert ok("var", run_json, "time_of_day") == "evening"
    assert ok("verify", run_json)["ok"]


def test_a_start_or_a_fork_killed_before_its_state_was_written_can_be_run_again(
    runs: Path,
) -> None:
    """Killed at the state's rename (the second: the tree's comes first), a create leaves its
    tree and trace without a state, and its mark on the lock: the same command run again goes
    ahead over them, where files found without the mark are refused (above)."""
    run_json, fork_json = runs / "run.json", runs / "fork.json"
    _killed_writer(f"start({str(HELLO)!r}, {str(run_json)!r})", nth=2)
    assert (runs / "run.json.tree.json").exists() and not run_json.exists()
    refused(4, "not_found", "next", run_json)
    ok("start", HELLO, run_json)
    ok("submit", run_json, "success")
    ok("var", run_json, "time_of_day", "noon")
    _killed_writer(f"fork({str(run_json)!r}, {str(fork_json)!r}, at=2)", nth=2)
    assert (runs / "fork.json.trace.jsonl").exists() and not fork_json.exists()
    assert ok("fork", run_json, fork_json, "--at", "2")["entries"] == 2
    for run in (run_json, fork_json):
        assert ok("verify", run)["ok"]
    assert list(runs.glob("*.tmp")) == []


def test_a_reset_tidies_whatever_a_killed_reset_left(runs: Path) -> None:
    run_json = _started(runs)
    ok("think", run_json, "a thought")
    _killed_writer(f"reset({str(run_json)!r})")
    assert list(runs.glob("*.tmp")) and list(runs.glob("run.json.trace.*.jsonl"))
    assert ok("get", run_json)["protocol_accepted"], "the killed reset committed nothing"
    ok("reset", run_json)
    names = sorted(p.name for p in runs.iterdir())
    state = json.loads(run_json.read_text())
    assert names == sorted(
        [
            ".tether-index.jsonl",
            "run.json",
            "run.json.lock",
            "run.json.tree.json",
            state["trace"]["file"],
        ]
    )
    assert ok("verify", run_json)["ok"]


def test_a_full_disk_commits_nothing_and_leaves_no_temporary_file(runs: Path) -> None:
    run_json = _started(runs)
    before = ok("get", run_json)
    value = "x" * 20_000
    limit = run_json.stat().st_size + 10_000  # the trace grows less; the new state cannot fit
    done = subprocess.run(
        [sys.executable, "-m", "tether.cli.main", "var", str(run_json), "big", value],
        capture_output=True,
        timeout=60,
        check=False,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit)),
    )
    error = json.loads(done.stderr)["error"]
    assert (done.returncode, error["code"]) == (EXIT_INTERNAL, "store_unavailable"), error
    assert list(runs.glob("*.tmp")) == []
    assert ok("get", run_json) == before
    ok("var", run_json, "small", "1")
    assert ok("verify", run_json)["ok"]


def test_a_folder_a_sandbox_made_read_only_is_store_unavailable_and_nothing_changes(
    runs: Path,
) -> None:
    """An answer from behind a wall that keeps the executions read-only (strict mode's, here
    bubblewrap's read-only bind, which root cannot write through either) says what stopped it,
    naming the lock file, instead of an internal error."""
    run_json = _started(runs)
    before = snapshot(runs)
    done = subprocess.run(
        [
            "bwrap",
            "--dev-bind",
            "/",
            "/",
            "--ro-bind",
            str(runs),
            str(runs),
            sys.executable,
            "-m",
            "tether.cli.main",
            "submit",
            str(run_json),
            "success",
        ],
        capture_output=True,
        timeout=60,
        check=False,
    )
    error = json.loads(done.stderr)["error"]
    assert (done.returncode, error["code"]) == (EXIT_INTERNAL, "store_unavailable"), error
    assert f"{run_json}.lock" in error["message"] and "Read-only file system" in error["message"]
    assert snapshot(runs) == before
    ok("var", run_json, "time_of_day", "evening")  # outside the wall it commits
