"""`tether list` as a user runs it: the table and `--json`, the status filter, the default place,
names that try to drive the terminal, and refusals; and the same listing from the Python API on
`memory://`."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from support.command import HELLO, TETHER, ok, refused, run
from tether.errors import EXIT_USAGE, TetherError
from tether.verbs import Runtime

WALK = [  # hello-world from start to done
    ("submit", "success"),
    ("var", "time_of_day", "evening"),
    ("submit", "success"),
    ("eval", "false"),
    ("eval", "false"),
    ("eval", "true"),
    ("var", "greeting", "Good evening!"),
    ("submit", "success"),
]


def _complete(run_json: Path) -> None:
    ok("start", HELLO, run_json)
    for verb, *args in WALK:
        ok(verb, run_json, *args)


def _table(*args: str | Path, cwd: Path | None = None, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        [TETHER, "list", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        env={**os.environ, **(env or {})},
        check=False,
    )
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    return done.stdout


def test_the_table_shows_each_execution_on_its_line(tmp_path: Path) -> None:
    ok("start", HELLO, tmp_path / "a.json")
    ok("submit", tmp_path / "a.json", "success")
    (tmp_path / "sub").mkdir()
    _complete(tmp_path / "sub" / "b.json")
    (tmp_path / "bad.json").write_text("{not json")
    (tmp_path / "bad.json.tree.json").write_text("{}")
    lines = _table(tmp_path).splitlines()
    assert lines[0].split() == ["NAME", "TREE", "STATUS", "PHASE", "OPEN", "STEP", "UPDATED"]
    assert [line.split()[0] for line in lines[1:]] == ["a.json", "bad.json", "sub/b.json"]
    a, bad, b = lines[1:]
    assert a.split()[1:4] == ["hello-world", "running", "performing"]
    assert a.split()[4:6] == ["Determine_Time", "(instruct)"]
    assert a.index("hello-world") == b.index("hello-world") == lines[0].index("TREE")
    assert b.split()[1:5] == ["hello-world", "complete", "idle", "-"]
    assert "error corrupt_execution" in bad and "not JSON" in bad


def test_json_is_the_listing_the_python_api_gives(tmp_path: Path) -> None:
    ok("start", HELLO, tmp_path / "a.json")
    _complete(tmp_path / "b.json")
    listed = ok("list", tmp_path, "--json")
    assert listed == Runtime().list_executions(str(tmp_path))
    assert [(r["name"], r["status"]) for r in listed] == [
        ("a.json", "running"),
        ("b.json", "complete"),
    ]
    assert listed[0]["uri"] == "file://" + str(tmp_path / "a.json")
    assert listed[0]["open_step"] == {"name": "Acknowledge_Protocol", "type": "instruct"}
    assert set(listed[1]) == {
        "name",
        "uri",
        "tree",
        "status",
        "phase",
        "open_step",
        "revision",
        "updated_at",
    }
    assert [r["name"] for r in ok("list", tmp_path, "--json", "--status", "complete")] == ["b.json"]
    assert [r["name"] for r in ok("list", tmp_path, "--status=running", "--json")] == ["a.json"]
    assert ok("list", tmp_path, "--json", "--status", "failed") == []
    assert _table(tmp_path, "--status", "failed") == "no executions\n"


def test_the_default_place_is_the_default_store_else_the_current_folder(tmp_path: Path) -> None:
    here, store = tmp_path / "here", tmp_path / "store"
    for folder in (here, store):
        folder.mkdir()
        ok("start", HELLO, folder / f"in-{folder.name}.json")
    assert "in-here.json" in _table(cwd=here)
    listed = _table(cwd=here, env={"TETHER_STORE": str(store)})
    assert "in-store.json" in listed and "in-here.json" not in listed


def test_names_and_texts_cannot_drive_the_terminal(tmp_path: Path) -> None:
    folder = tmp_path / "\x1b[2Jevil"
    folder.mkdir()
    ok("start", HELLO, folder / "run\x07.json")
    (tmp_path / "x\x1b]0;title\x07.json").write_text("{not json")
    (tmp_path / "x\x1b]0;title\x07.json.tree.json").write_text("{}")
    shown = _table(tmp_path)
    assert "\x1b" not in shown and "\x07" not in shown
    assert "\\x1b[2Jevil/run\\x07.json" in shown
    assert shown.count("x\\x1b]0;title\\x07.json") == 2, "the name, and the path in its error"
    names = [r["name"] for r in ok("list", tmp_path, "--json")]
    assert "\x1b[2Jevil/run\x07.json" in names, "--json keeps the names as they are"


def test_bad_arguments_are_refused(tmp_path: Path) -> None:
    error = refused(EXIT_USAGE, "usage", "list", tmp_path, "--status", "done")
    assert "running, complete, failed" in error["message"]
    refused(EXIT_USAGE, "usage", "list", tmp_path, "--status")
    refused(EXIT_USAGE, "usage", "list", tmp_path, tmp_path)
    refused(3, "unknown_scheme", "list", "ftp://example.com/runs")
    done = run("list", "--help")
    assert done.returncode == 0 and b"usage: tether list [WHERE]" in done.stdout


def test_the_api_lists_the_memory_store() -> None:
    rt = Runtime()
    rt.start(str(HELLO), "memory://list-a")
    rt.start(str(HELLO), "memory://list-b")
    rt.submit("memory://list-b", "success")
    rows = {r["name"]: r for r in rt.list_executions("memory://")}
    assert {"list-a", "list-b"} <= set(rows)
    assert rows["list-a"]["uri"] == "memory://list-a" and rows["list-a"]["revision"] == 0
    assert rows["list-b"]["phase"] == "performing" and rows["list-b"]["revision"] == 1
    assert Runtime(default_store="memory://").list_executions() == rt.list_executions("memory://")
    error = json.dumps(refused(3, "invalid_value", "list", "memory://list-a"))
    assert "names one execution" in error


def test_a_root_confines_the_listing(tmp_path: Path) -> None:
    inside, outside = tmp_path / "inside", tmp_path / "outside"
    for folder in (inside, outside):
        folder.mkdir()
        ok("start", HELLO, folder / "run.json")
    rt = Runtime(root=str(inside))
    assert [r["name"] for r in rt.list_executions()] == ["run.json"]
    assert [r["name"] for r in rt.list_executions(".")] == ["run.json"]
    (inside / "door").symlink_to(outside)
    for where in ("../outside", str(outside), "door"):
        with pytest.raises(TetherError) as err:
            rt.list_executions(where)
        assert err.value.code == "forbidden", where


def test_limit_and_offset_print_one_page_of_the_listing(tmp_path: Path) -> None:
    for name in ("a.json", "c.json", "d.json"):
        ok("start", HELLO, tmp_path / name)
    _complete(tmp_path / "b.json")
    page = ok("list", tmp_path, "--limit", "2", "--offset", "1", "--json")
    assert [row["name"] for row in page] == ["b.json", "c.json"]
    running = ok("list", tmp_path, "--status", "running", "--limit", "2", "--json")
    assert [row["name"] for row in running] == ["a.json", "c.json"]
    error = refused(EXIT_USAGE, "usage", "list", tmp_path, "--limit", "-1")
    assert "--limit takes a whole number" in error["message"]
