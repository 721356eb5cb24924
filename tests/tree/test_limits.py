"""Attacks on tree input: `$ref` that climbs out of the load's root, files that are not files or
never end, YAML that expands or nests without end, and errors that would quote a file that is
not a tree. Each is refused with its code and exit class, through the API, a real `tether`
process and, for a server's `--root`, the MCP tool `start_execution`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp.client.client import Client

from tether.errors import EXIT_INVALID, TetherError
from tether.mcp.server import build_server
from tether.tree import load_tree, load_tree_text
from tether.tree.locations import MAX_DEPTH, MAX_LOAD_BYTES
from tether.verbs import Runtime

TETHER = [sys.executable, "-m", "tether.cli.main"]
ACTION = "{type: action, name: A, steps: [{instruct: x}]}"
SECRET = "hunter2-do-not-show"


def tree_with_ref(target: str) -> str:
    return f"name: t\ntree:\n  type: sequence\n  name: R\n  children:\n    - $ref: {target}\n"


def fails(path: Path, **options: Any) -> TetherError:
    with pytest.raises(TetherError) as caught:
        load_tree(path, **options)
    return caught.value


def tether(*args: str, cwd: Path) -> tuple[int, dict[str, Any]]:
    """Run `tether` in a fresh process; returns its exit code and the error it printed."""
    done = subprocess.run(
        [*TETHER, *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.stdout == "", done.stdout
    return done.returncode, json.loads(done.stderr)["error"]


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A tree's folder inside `tmp_path`, beside a secret file outside it."""
    (tmp_path / "secret.yaml").write_text(
        f"type: action\nname: S\nsteps: [{{instruct: {SECRET}}}]\n"
    )
    inside = tmp_path / "trees"
    inside.mkdir()
    return inside


# -- $ref stays under the root ----------------------------------------------------------------


@pytest.mark.parametrize(
    "target", ["/etc/passwd", "../secret.yaml", "/dev/zero", "link.yaml", "up/secret.yaml"]
)
def test_a_ref_outside_the_tree_folder_is_forbidden(folder: Path, target: str) -> None:
    os.symlink(folder.parent / "secret.yaml", folder / "link.yaml")
    os.symlink(folder.parent, folder / "up")
    (folder / "tree.yaml").write_text(tree_with_ref(target))
    error = fails(folder / "tree.yaml")
    assert (error.code, error.exit_code) == ("forbidden", EXIT_INVALID)
    assert error.details["key"] == "tree.children[0].$ref"
    assert (error.details["line"], error.details["column"]) == (6, 13)
    assert f"$ref {target!r} is outside the tree's folder" in error.message
    assert SECRET not in error.message and "root:" not in error.message


def test_the_cli_refuses_a_ref_outside_and_writes_no_trace(folder: Path) -> None:
    (folder / "tree.yaml").write_text(tree_with_ref("../secret.yaml"))
    for command in (["validate", "tree.yaml"], ["start", "tree.yaml", "run.json"]):
        code, error = tether(*command, cwd=folder)
        assert (code, error["code"]) == (EXIT_INVALID, "forbidden")
        assert SECRET not in json.dumps(error)
    assert sorted(p.name for p in folder.iterdir()) == ["tree.yaml"]


def test_a_ref_may_leave_the_tree_folder_but_not_a_given_root(tmp_path: Path) -> None:
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "step.yaml").write_text(ACTION + "\n")
    (tmp_path / "trees").mkdir()
    tree = tmp_path / "trees" / "tree.yaml"
    tree.write_text(tree_with_ref("../shared/step.yaml"))
    assert fails(tree).code == "forbidden"
    loaded = load_tree(tree, root=tmp_path)
    assert loaded.data["root"]["children"][0]["name"] == "A"
    assert load_tree(tree, root=tmp_path / "trees" / "..").data == loaded.data
    outside = fails(tree, root=tmp_path / "shared")
    assert outside.code == "forbidden"
    assert "is outside the allowed root" in outside.message


def test_ref_paths_in_text_stay_under_the_base_folder(folder: Path) -> None:
    with pytest.raises(TetherError) as caught:
        load_tree_text(tree_with_ref("../secret.yaml"), base_dir=str(folder))
    assert caught.value.code == "forbidden"
    assert "is outside the base folder" in caught.value.message


# -- files that are not small regular files ---------------------------------------------------


def test_a_fifo_or_a_directory_is_refused_without_blocking(folder: Path) -> None:
    os.mkfifo(folder / "pipe.yaml")
    (folder / "dir.yaml").mkdir()
    for target, kind in (("pipe.yaml", "a FIFO"), ("dir.yaml", "a directory")):
        (folder / "tree.yaml").write_text(tree_with_ref(target))
        error = fails(folder / "tree.yaml")
        assert error.code == "invalid_tree"
        assert error.details["key"] == "tree.children[0].$ref"
        assert f"{target}: not a regular file ({kind}) at tree.children[0].$ref" in error.message
    pipe = fails(folder / "pipe.yaml")
    assert (pipe.code, pipe.exit_code) == ("invalid_tree", EXIT_INVALID)


def test_a_device_given_as_the_tree_is_refused(tmp_path: Path) -> None:
    code, error = tether("validate", "/dev/zero", cwd=tmp_path)
    assert (code, error["code"]) == (EXIT_INVALID, "invalid_tree")
    assert "not a regular file (a character device)" in error["message"]


def test_a_huge_file_is_refused_after_reading_just_past_the_limit(folder: Path) -> None:
    with open(folder / "huge.yaml", "wb") as huge:
        huge.truncate(16 * 1024**3)  # sparse: reading it whole would take minutes
    code, error = tether("validate", "huge.yaml", cwd=folder)
    assert (code, error["code"]) == (EXIT_INVALID, "invalid_tree")
    assert error["byte_limit"] == MAX_LOAD_BYTES
    assert f"hold more than {MAX_LOAD_BYTES} bytes" in error["message"]


def test_fragments_together_may_not_exceed_the_limit(folder: Path) -> None:
    padding = "x" * (MAX_LOAD_BYTES // 2)
    for name in ("a", "b"):
        (folder / f"{name}.yaml").write_text(f"{ACTION[:-1]}, description: {padding}}}\n")
    (folder / "tree.yaml").write_text(
        "name: t\ntree:\n  type: parallel\n  name: R\n  children:\n"
        "    - $ref: a.yaml\n    - $ref: b.yaml\n"
    )
    error = fails(folder / "tree.yaml")
    assert error.code == "invalid_tree"
    assert error.details["key"] == "tree.children[1].$ref"
    assert (error.details["line"], error.details["column"]) == (7, 13)
    assert error.message.endswith(
        f"b.yaml: the tree and its fragments hold more than {MAX_LOAD_BYTES} bytes "
        "at tree.children[1].$ref"
    )


# -- errors never quote a file that is not a tree ---------------------------------------------


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (f"{SECRET}:x:0:0:root:/root:/bin/bash\nother:x:1:1::/:/bin/sh\n", "got a string"),
        (f"password: [{SECRET}\n", "malformed YAML"),
        (f"- {SECRET}\n- x\n", "got a list of 2"),
        (f"'{SECRET}\n", "malformed YAML"),
        (f"key: !{SECRET} value\n", "YAML tags are not allowed"),
    ],
)
def test_a_fragment_that_is_not_a_tree_is_named_never_quoted(
    folder: Path, content: str, problem: str
) -> None:
    (folder / "notes.txt").write_text(content)
    (folder / "tree.yaml").write_text(tree_with_ref("notes.txt"))
    error = fails(folder / "tree.yaml")
    assert error.code == "invalid_tree"
    assert error.details["file"].endswith("notes.txt")
    assert problem in error.message
    assert SECRET not in json.dumps(error.details) and SECRET not in error.message


# -- YAML that expands or nests -------------------------------------------------------------

BOMB = (
    "name: t\na: &a [x,x,x,x,x,x,x,x,x]\n"
    + "".join(
        f"{b}: &{b} [{', '.join([f'*{a}'] * 9)}]\n"
        for a, b in zip("abcdefgh", "bcdefghi", strict=True)
    )
    + f"tree: {ACTION}\n"
)


def test_an_alias_bomb_is_refused_at_its_first_anchor(tmp_path: Path) -> None:
    assert len(BOMB) < 800
    (tmp_path / "bomb.yaml").write_text(BOMB)
    code, error = tether("validate", "bomb.yaml", cwd=tmp_path)
    assert (code, error["code"]) == (EXIT_INVALID, "invalid_tree")
    assert error["message"] == (
        "bomb.yaml:2:4: YAML anchors and aliases (&name, *name) are not allowed"
    )


@pytest.mark.parametrize(
    ("text", "position", "problem"),
    [
        (f"name: t\nstate:\n  var:\n    <<: {{a: 1}}\ntree: {ACTION}\n", (4, 5), "merge keys"),
        (f"name: t\nx: &only 1\ntree: {ACTION}\n", (2, 4), "anchors and aliases"),
        (f"name: t\nx: *nowhere\ntree: {ACTION}\n", (2, 4), "anchors and aliases"),
        (f"name: t\nversion: !!python/name:os.system x\ntree: {ACTION}\n", (2, 10), "tags"),
        (f"name: t\nversion: !!int 3\ntree: {ACTION}\n", (2, 10), "tags"),
        (f"name: t\nstate:\n  var: {{d: 2024-13-45}}\ntree: {ACTION}\n", (3, 12), "date"),
    ],
)
def test_yaml_features_a_tree_has_no_use_for_are_refused(
    text: str, position: tuple[int, int], problem: str
) -> None:
    with pytest.raises(TetherError) as caught:
        load_tree_text(text, "t.yaml")
    error = caught.value
    assert error.code == "invalid_tree"
    assert (error.details["line"], error.details["column"]) == position
    assert problem in error.message


def test_quoted_merge_key_and_str_tag_are_plain_text() -> None:
    text = f"name: !!str 12\nstate:\n  var: {{'<<': 1}}\ntree: {ACTION}\n"
    data = load_tree_text(text).data
    assert data["name"] == "12" and data["state"]["var"] == {"<<": 1}


# 1,001 and more pass the limit of the libyaml in newer PyYAML wheels, which refuses first
@pytest.mark.parametrize("levels", [MAX_DEPTH + 1, 600, 1_001, 200_000])
@pytest.mark.parametrize("name", ["deep.yaml", "deep.json"])
def test_deep_nesting_is_refused_where_it_passes_the_limit(
    tmp_path: Path, name: str, levels: int
) -> None:
    nested = "[" * levels + "]" * levels
    if name.endswith(".json"):
        text = '{"name": "t",\n "state": {"var": {"a": ' + nested + "}}}"
    else:
        text = f"name: t\nstate:\n  var:\n    a: {nested}\ntree: {ACTION}\n"
    (tmp_path / name).write_text(text)
    code, error = tether("validate", name, cwd=tmp_path)
    assert (code, error["code"]) == (EXIT_INVALID, "invalid_tree")
    assert error["depth_limit"] == MAX_DEPTH
    assert f"nested more than {MAX_DEPTH} levels deep" in error["message"]
    # the first bracket past the limit: three levels of mapping come before the lists
    line = 2 if name.endswith(".json") else 4
    column = text.splitlines()[line - 1].index("[") + 1 + MAX_DEPTH - 3
    assert (error["line"], error["column"]) == (line, column)


def test_nesting_up_to_the_limit_loads() -> None:
    levels = MAX_DEPTH - 3
    text = f"name: t\nstate:\n  var:\n    a: {'[' * levels}{']' * levels}\ntree: {ACTION}\n"
    value = load_tree_text(text).data["state"]["var"]["a"]
    for _ in range(levels - 1):
        value = value[0]
    assert value == []


# -- syntax errors name where the construct began ---------------------------------------------


def test_an_unclosed_bracket_names_where_it_was_opened() -> None:
    text = f"name: t\ntree:\n  type: action\n  name: A\n  steps: [{{instruct: {SECRET}}},\n"
    with pytest.raises(TetherError) as caught:
        load_tree_text(text, "t.yaml")
    error = caught.value
    assert error.message == (
        "t.yaml:6:1: malformed YAML: did not find expected node content "
        "(the flow sequence opened at line 5, column 10 was never closed)"
    )
    assert (error.details["context_line"], error.details["context_column"]) == (5, 10)
    assert SECRET not in error.message


# -- a server's --root ----------------------------------------------------------------------


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def client(folder: Path) -> AsyncIterator[Client]:
    async with Client(build_server(Runtime(root=str(folder)))) as connected:
        yield connected


async def start(client: Client, tree: str) -> dict[str, Any]:
    result = await client.call_tool("start_execution", {"tree_uri": tree, "trace_output": "r.json"})
    text = result.content[0].text  # type: ignore[union-attr]
    assert result.is_error, text
    return dict(json.loads(text)["error"])


@pytest.mark.anyio
async def test_a_server_refuses_refs_that_leave_its_root(client: Client, folder: Path) -> None:
    os.symlink(folder.parent / "secret.yaml", folder / "link.yaml")
    targets = ["../secret.yaml", "/etc/passwd", "/dev/zero", "link.yaml"]
    for index, target in enumerate(targets):
        (folder / f"t{index}.yaml").write_text(tree_with_ref(target))
        error = await start(client, f"t{index}.yaml")
        assert error["code"] == "forbidden", error
        assert f"$ref {target!r} is outside the allowed root ." in error["message"]
        assert SECRET not in json.dumps(error) and "root:x" not in json.dumps(error)
    assert not (folder / "r.json").exists()


@pytest.mark.anyio
async def test_a_server_refuses_a_tree_that_is_not_a_small_regular_file(
    client: Client, folder: Path
) -> None:
    os.mkfifo(folder / "pipe.yaml")
    with open(folder / "huge.yaml", "wb") as huge:
        huge.truncate(MAX_LOAD_BYTES + 1)
    (folder / "bomb.yaml").write_text(BOMB)
    for tree, words in (
        ("pipe.yaml", "not a regular file (a FIFO)"),
        ("huge.yaml", f"more than {MAX_LOAD_BYTES} bytes"),
        ("bomb.yaml", "anchors and aliases"),
    ):
        error = await start(client, tree)
        assert error["code"] == "invalid_tree", error
        assert words in error["message"]
    assert not (folder / "r.json").exists()
