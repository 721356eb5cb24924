"""`tether stats` on the file store and `memory://`: the figures of executions of known outcomes
(`support.stats_scenario`), the command's table and JSON (valid against
`schema/stats.schema.json`), the filters, the refusals of bad arguments, and the refusal log
that the figures count: written beside the trace, never changing an execution."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from support.command import REPO, TETHER
from support.stats_scenario import (
    EXPECTED_FORKS,
    EXPECTED_RELEASE,
    EXPECTED_TEAM_AGENTS,
    EXPECTED_TINY,
    RELEASE,
    Clock,
    drive,
    drive_forks,
    drive_team,
    drive_timeouts,
    refused,
    without_hashes,
)
from tether import stats
from tether.store import store_for
from tether.verbs import Runtime

SCHEMA = json.loads((REPO / "schema" / "stats.schema.json").read_text())


def _tether(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "TETHER_STORE"}
    return subprocess.run(
        [TETHER, *args], capture_output=True, text=True, timeout=60, cwd=cwd, env=env, check=False
    )


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder of the scenario's executions (`runs/`, its trees and guard file beside it)."""
    project = tmp_path_factory.mktemp("stats")
    (project / "runs").mkdir()
    drive(str(project / "runs"), project)
    return project / "runs"


def test_the_file_store_gives_the_known_figures(folder: Path) -> None:
    figures = stats.collect(str(folder))
    assert figures["place"] == f"file://{folder}"
    assert (figures["executions"], figures["unreadable"]) == (7, 0)
    assert without_hashes(figures) == [EXPECTED_RELEASE, EXPECTED_TINY]
    jsonschema.validate(figures, SCHEMA)


def test_memory_gives_the_same_figures(tmp_path: Path) -> None:
    drive("memory://stats-scenario", tmp_path)
    figures = stats.collect("memory://", tree="release")
    assert without_hashes(figures) == [EXPECTED_RELEASE]


def test_the_command_prints_json_valid_against_the_schema(folder: Path) -> None:
    done = _tether("stats", str(folder), "--json")
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout)
    jsonschema.validate(figures, SCHEMA)
    assert without_hashes(figures) == [EXPECTED_RELEASE, EXPECTED_TINY]


def test_the_table_shows_each_tree_its_actions_and_its_checks(folder: Path) -> None:
    done = _tether("stats", cwd=folder)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"file://{folder}: 7 executions"
    assert "release 2.1 (sha256:" in done.stdout and "tiny (sha256:" in done.stdout
    assert "  executions: 6 (2 running, 2 complete, 2 failed); time to finish 1m03s/1m55s" in lines
    build = next(line.split() for line in lines if line.startswith("  Build "))
    assert build[:5] == ["Build", "6", "8", "3", "2"]
    one = _tether("stats", "--tree", "tiny", cwd=folder)
    assert one.stdout.splitlines()[0] == f"file://{folder}: 1 execution", one.stderr
    assert "10s/10.4s" in build
    review = next(line.split() for line in lines if line.startswith("  Review "))
    assert review[-3:] == ["1", "1/1", "-"]
    sign_off = next(line.split() for line in lines if line.startswith("  Sign_Off "))
    assert sign_off[5] == "1" and sign_off[-1] == "51s/1m30s"
    assert "    Sign_Off: human_only 1" in lines
    assert "    Build: stale_step 1, writes_missing 1" in lines
    assert any("2  Build: $VAR.built == true (failed 2, refused a close 0)" in x for x in lines)
    assert max(len(line) for line in lines) <= stats.WIDTH
    wide = _tether("stats", "--wide", cwd=folder).stdout.splitlines()
    sign_off_wide = next(line for line in wide if line.startswith("  Sign_Off "))
    assert "human_only 1" in sign_off_wide and sign_off_wide.rstrip().endswith("51s/1m30s")
    assert "  refused answers by action:" not in wide


def test_the_table_fits_100_columns_cutting_a_long_name_that_wide_prints_whole(
    tmp_path: Path,
) -> None:
    long = "Run_The_Whole_Integration_Suite_Against_Every_Supported_Database_And_Python"
    check = "$VAR.suite == " + " + ".join(["'every database and every python'"] * 3)
    (tmp_path / "long.yaml").write_text(
        "name: long\nversion: 1\ntree:\n  type: sequence\n  name: Root\n  children:\n"
        f"    - type: action\n      name: {long}\n      steps:\n        - instruct: Run it.\n"
        f"        - check: {json.dumps(check)}\n"
    )
    rt = Runtime()
    uri = str(rt.start(str(tmp_path / "long.yaml"), str(tmp_path / "runs" / "l.json"))["uri"])
    rt.submit(uri, "success")
    rt.submit(uri, "success")  # its check fails
    refused(lambda: rt.submit(uri, "success"), "execution_finished")
    lines = _tether("stats", str(tmp_path / "runs")).stdout.splitlines()
    assert max(len(line) for line in lines) <= stats.WIDTH, lines
    row = next(line for line in lines if line.startswith("  Run_The_Whole"))
    assert "…" in row and long not in row and row.split()[1:6] == ["1", "1", "1", "0", "0"]
    checked = next(line for line in lines if line.startswith("       1  Run_The_Whole"))
    assert "…" in checked and checked.endswith("(failed 1, refused a close 0)")
    wide = _tether("stats", str(tmp_path / "runs"), "--wide").stdout
    assert f"  {long}  1" in wide and f": {check} (failed 1" in wide
    assert "(no step)" in wide and "execution_finished 1" in wide


@pytest.mark.parametrize("place", ["files", "memory"])
def test_a_fork_counts_only_what_happened_in_it(tmp_path: Path, place: str) -> None:
    """Forks after failures: each failure is counted once, in the execution it happened in;
    a run of failures goes on across the fork point; a fork's first answer was requested when
    the fork was made; a refused answer aimed at no step is counted apart, so the action rows
    and the tree's total agree."""
    where = str(tmp_path / "runs") if place == "files" else "memory://"
    drive_forks(where, tmp_path / "project")
    figures = stats.collect(where, tree="forks")
    assert without_hashes(figures) == [EXPECTED_FORKS]
    jsonschema.validate(figures, SCHEMA)
    (tree,) = figures["trees"]
    by_action = sum(sum(a["refused"].values()) for a in tree["actions"])
    assert by_action + sum(tree["refused_no_step"].values()) == sum(tree["refused"].values())
    if place == "files":
        lines = _tether("stats", where).stdout.splitlines()
        build = next(line.split() for line in lines if line.startswith("  Build "))
        assert build[:6] == ["Build", "3", "5", "3", "2", "0"]
        no_step = next(line.split() for line in lines if line.startswith("  (no step) "))
        assert no_step == ["(no", "step)", "1"]
        assert "    (no step): execution_finished 1" in lines


@pytest.mark.parametrize("place", ["files", "memory"])
def test_a_timed_out_human_step_counts_as_a_failed_attempt(tmp_path: Path, place: str) -> None:
    where = str(tmp_path / "runs") if place == "files" else "memory://"
    drive_timeouts(where, tmp_path / "project")
    (tree,) = stats.collect(where, tree="timed")["trees"]
    (action,) = tree["actions"]
    assert (action["attempts"], action["failures"], action["retries"]) == (2, 2, 1)
    assert action["reached"] == 1 and tree["executions"]["failed"] == 1


def test_a_timeout_that_fails_the_execution_uses_no_retry(tmp_path: Path) -> None:
    """`on_timeout: fail` ends the execution: its action's retries are not used."""
    from support.stats_scenario import TIMED

    (tmp_path / "fail.yaml").write_text(
        TIMED.replace("timeout: 1h", "timeout: 1h\n      on_timeout: fail").replace(
            "name: timed", "name: timed-fail"
        )
    )
    clock = Clock()
    rt = Runtime(clock=clock)
    rt.start(str(tmp_path / "fail.yaml"), "memory://timed-fail")
    rt.submit("memory://timed-fail", "success")
    clock.wait(2 * 3600)
    assert rt.next("memory://timed-fail") == {"status": "failure"}
    (tree,) = stats.collect("memory://", tree="timed-fail")["trees"]
    (action,) = tree["actions"]
    assert (action["attempts"], action["failures"], action["retries"], action["reached"]) == (
        1,
        1,
        0,
        1,
    )


def test_tree_and_since_choose_the_executions(folder: Path) -> None:
    only = stats.collect(str(folder), tree="tiny")
    assert (only["tree"], without_hashes(only)) == ("tiny", [EXPECTED_TINY])
    # the executions start 1,000 s apart from 09:16:40 on: e, f and g start after 10:20
    late = stats.collect(str(folder), since=stats.parse_since("2026-03-02T10:20:00Z"))
    assert late["since"] == "2026-03-02T10:20:00.000Z"
    assert late["executions"] == 3
    assert [t["executions"]["total"] for t in late["trees"]] == [2, 1]
    same = stats.collect(str(folder), since=stats.parse_since("2026-03-02T12:20+02:00"))
    assert same == late


def test_a_changed_tree_is_counted_apart(folder: Path, tmp_path: Path) -> None:
    tree = tmp_path / "release.yaml"
    tree.write_text((folder.parent / "release.yaml").read_text().replace("Ship it?", "Ship?"))
    rt = Runtime()
    rt.start(str(tree), str(tmp_path / "runs" / "new.json"))
    rt.start(str(folder.parent / "release.yaml"), str(tmp_path / "runs" / "old.json"))
    trees = stats.collect(str(tmp_path / "runs"))["trees"]
    assert [(t["name"], t["executions"]["total"]) for t in trees] == [("release", 1)] * 2
    assert trees[0]["hash"] != trees[1]["hash"]


@pytest.mark.parametrize(
    ("args", "code", "exit_code", "says"),
    [
        (["--since", "yesterday"], "usage", 2, "--since takes a time"),
        (["--since", "2026-02-30"], "usage", 2, "not '2026-02-30'"),
        (["--since", "2026-01-31T09:30:00.5x"], "usage", 2, "--since"),
        (["--tree", "nope"], "not_found", 4, "--tree 'nope': no execution of a tree"),
        (["{place}/missing"], "not_found", 4, "no folder at"),
        (["{place}/a.json"], "usage", 2, "names one execution, not a place"),
        (["memory://run-1"], "usage", 2, "names one execution, not a place"),
        (["postgresql://u@127.0.0.1:1/db#run"], "usage", 2, "names one execution"),
        (["--tree"], "usage", 2, "--tree"),
        (["{place}", "extra"], "usage", 2, "extra"),
    ],
)
def test_bad_arguments_are_refused_naming_them(
    folder: Path, args: list[str], code: str, exit_code: int, says: str
) -> None:
    done = _tether("stats", *(a.replace("{place}", str(folder)) for a in args), cwd=folder)
    assert done.returncode == exit_code, done.stderr
    error = json.loads(done.stderr)["error"]
    assert error["code"] == code and says in error["message"], error
    assert done.stdout == ""


def test_since_reads_times_zones_and_spans() -> None:
    assert stats.parse_since("2026-01-31") == "2026-01-31T00:00:00.000Z"
    assert stats.parse_since("2026-01-31T09:30") == "2026-01-31T09:30:00.000Z"
    assert stats.parse_since("2026-01-31 09:30:15.25Z") == "2026-01-31T09:30:15.250Z"
    assert stats.parse_since("2026-01-31T11:30-01:30") == "2026-01-31T13:00:00.000Z"
    now = 1_800_000_000.0
    assert stats.parse_since("90m", now=now) == stats.parse_since("2027-01-15T06:30:00Z")
    assert stats.parse_since("2w", now=now) == stats.parse_since("2027-01-01T08:00:00Z")


def test_an_unreadable_execution_is_left_out_and_counted(tmp_path: Path) -> None:
    drive(str(tmp_path / "runs"), tmp_path)
    (tmp_path / "runs" / "b.json").write_text("{not json")
    figures = stats.collect(str(tmp_path / "runs"), tree="release")
    assert (figures["executions"], figures["unreadable"]) == (5, 1)
    assert "(1 unreadable, left out: tether list names them)" in stats.table(figures)


# -- the refusal log ----------------------------------------------------------------------------


def _snapshot(rt: Runtime, uri: str) -> dict[str, Any]:
    store = store_for(uri)
    state, entries = store.read_execution(uri)
    return {"state": state, "trace": entries, "get": rt.get(uri), "verify": rt.verify(uri)}


def _forked(rt: Runtime, uri: str) -> dict[str, Any]:
    return {k: v for k, v in rt.get(uri).items() if k != "uri"}


@pytest.mark.parametrize("place", ["file", "memory"])
def test_a_refused_answer_changes_nothing_but_the_refusal_log(tmp_path: Path, place: str) -> None:
    """Replay, verify, fork and the stored state are the same whether or not refusals were
    recorded between the answers; only the log beside the trace grows."""
    (tmp_path / "release.yaml").write_text(RELEASE)
    rt = Runtime(clock=Clock())
    base = str(tmp_path / "runs") if place == "file" else "memory://refusal-log"
    uri = rt.start(str(tmp_path / "release.yaml"), f"{base}/x.json")["uri"]
    rt.submit(uri, "success")
    gate = rt.trace(uri)[0]
    before = _snapshot(rt, uri)
    rt.fork(uri, f"{base}/fork-before.json", at=1, same_tokens=True)
    build = rt.next(uri)
    refused(lambda: rt.submit(uri, "success"), "writes_missing")
    refused(lambda: rt.eval(uri, True), "wrong_phase")
    refused(lambda: rt.close(uri), "writes_missing")
    refused(lambda: rt.submit(uri, "success", step="gate:0:0:0:x"), "stale_step")
    refused(lambda: rt.approve(uri), "wrong_phase")
    assert _snapshot(rt, uri) == before
    assert before["verify"]["ok"]
    log = store_for(uri).refusals(uri)
    assert [(r["code"], r["answer"]) for r in log] == [
        ("writes_missing", "submit"),
        ("wrong_phase", "eval"),
        ("writes_missing", "close"),
        ("stale_step", "submit"),
        ("wrong_phase", "human"),
    ]
    aimed = {"path": build["path"], "step": build["index"]}
    assert [r["cursor"] for r in log] == [aimed, aimed, aimed, None, aimed]
    assert {r["seq"] for r in log} == {gate["seq"] + 1}
    # a fork after the refusals is the fork before them
    rt.fork(uri, f"{base}/fork-after.json", at=1, same_tokens=True)
    assert _forked(rt, f"{base}/fork-after.json") == _forked(rt, f"{base}/fork-before.json")
    assert store_for(uri).refusals(f"{base}/fork-after.json") == []
    # the answer refused before is taken now, and the log keeps what it holds
    rt.submit(uri, "success", values={"built": True})
    assert rt.verify(uri)["ok"] and len(store_for(uri).refusals(uri)) == 5


def test_the_refusal_log_sits_beside_the_trace_and_goes_with_a_new_start(tmp_path: Path) -> None:
    rt = Runtime()
    tree = tmp_path / "release.yaml"
    tree.write_text(RELEASE)
    run = tmp_path / "run.json"
    rt.start(str(tree), str(run))
    refused(lambda: rt.eval(str(run), True), "wrong_phase")
    log = tmp_path / "run.json.refused.jsonl"
    assert [json.loads(line)["code"] for line in log.read_text().splitlines()] == ["wrong_phase"]
    assert json.loads(run.read_text())["revision"] == 0
    for name in os.listdir(tmp_path):
        if name.startswith("run.json") and name != "run.json.refused.jsonl":
            os.remove(tmp_path / name)
    rt.start(str(tree), str(run))  # a start over a stale log begins a fresh one
    assert not log.exists() and store_for(str(run)).refusals(str(run)) == []


def test_a_link_planted_as_the_refusal_log_is_refused(tmp_path: Path) -> None:
    (tmp_path / "release.yaml").write_text(RELEASE)
    target = tmp_path / "elsewhere.txt"
    target.write_text("keep\n")
    rt = Runtime()
    run = str(tmp_path / "run.json")
    rt.start(str(tmp_path / "release.yaml"), run)
    os.symlink(target, tmp_path / "run.json.refused.jsonl")
    refused(lambda: rt.eval(run, True), "corrupt_execution")
    assert target.read_text() == "keep\n"
    assert stats.collect(str(tmp_path))["unreadable"] == 1


@pytest.mark.parametrize("place", ["files", "memory"])
def test_a_team_is_counted_per_agent(tmp_path: Path, place: str) -> None:
    """Two items of a fanned-out loop (`drive_team`): each agent's answers, attempts, claims,
    takeovers and refusals are its own; the items count for their loop's action."""
    where = str(tmp_path / "runs") if place == "files" else "memory://"
    drive_team(where, tmp_path)
    figures = stats.collect(where, tree="stats-team")
    jsonschema.validate(figures, SCHEMA)
    (tree,) = figures["trees"]
    assert tree["agents"] == EXPECTED_TEAM_AGENTS
    fix = next(a for a in tree["actions"] if a["name"] == "Fix")
    assert (fix["attempts"], fix["failures"], fix["refused"]) == (2, 1, {"claimed": 2})
    if place == "files":
        lines = _tether("stats", where).stdout.splitlines()
        assert lines[lines.index("  agents:") + 1].split() == [
            "AGENT", "ANSWERS", "ATTEMPTS", "FAILED", "CLAIMS", "TAKEOVERS", "LAPSED"
        ]  # fmt: skip
        assert "  alice  0        0         0       2       0          1" in lines
        assert "    carol: claimed 2" in lines
