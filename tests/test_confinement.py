"""Path confinement, attacked: `tether.files.is_inside` (the one rule, `tests/test_one_home.py`
holds that every module uses it) and two of its users, a server's `--root` (`Runtime(root=...)`)
and a tree's `$ref` base (`load_tree(root=...)`). The attacks: a symbolic link climbing out,
`..` segments, a sibling folder whose name starts with the root's, and a root that is itself a
symbolic link."""

from __future__ import annotations

from pathlib import Path

import pytest

from tether.errors import TetherError
from tether.files import is_inside
from tether.tree import load_tree
from tether.verbs import Runtime

ACTION = "{type: action, name: A, steps: [{instruct: x}]}"
# Ways out of `root` to the sibling `root2`: `..`, a link, `..` after a way in.
CLIMBS = ["../root2/tree.yaml", "out/tree.yaml", "sub/../../root2/tree.yaml"]


@pytest.fixture
def place(tmp_path: Path) -> Path:
    """`root/` with a tree in it, a sibling `root2/` (the root's name as a prefix) with one too,
    `root/out` a link to the sibling, and `link` a link to `root`."""
    for name in ("root", "root2"):
        (tmp_path / name / "sub").mkdir(parents=True)
        (tmp_path / name / "tree.yaml").write_text(f"name: t\ntree: {ACTION}\n")
        (tmp_path / name / "node.yaml").write_text(ACTION + "\n")
    (tmp_path / "root" / "out").symlink_to(tmp_path / "root2")
    (tmp_path / "link").symlink_to(tmp_path / "root")
    return tmp_path


@pytest.mark.parametrize(
    ("path", "inside"),
    [
        ("root", True),
        ("root/tree.yaml", True),
        ("root/sub/../tree.yaml", True),
        ("root/not-yet/written.json", True),
        ("root/../root2/tree.yaml", False),
        ("root/sub/../../root2", False),
        ("root2", False),
        ("root2/tree.yaml", False),
        ("root/out", False),
        ("root/out/tree.yaml", False),
        ("root/out/../root2/tree.yaml", False),  # `..` after a link climbs from its target
        ("root/out/../root/tree.yaml", True),
        ("link/tree.yaml", True),
        ("link/out/tree.yaml", False),
        ("/", False),
    ],
)
def test_is_inside_resolves_before_it_compares(place: Path, path: str, inside: bool) -> None:
    target = place / path
    assert is_inside(target, place / "root") is inside
    assert is_inside(str(target), str(place / "link")) is inside  # a root reached by a link
    assert is_inside(target, place / "root" / "sub" / "..") is inside


def test_is_inside_takes_relative_paths_from_the_working_folder(
    place: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(place / "root")
    assert is_inside("tree.yaml", ".")
    assert is_inside("sub", place / "link")
    assert not is_inside("../root2", ".")
    assert not is_inside("out/tree.yaml", ".")
    assert is_inside(place / "root2", "out")  # the root itself a link, relative


@pytest.mark.parametrize("given", [*CLIMBS, "{place}/root2/tree.yaml"])
@pytest.mark.parametrize("root", ["root", "link"])
def test_a_servers_root_holds_against_every_climb(place: Path, given: str, root: str) -> None:
    rt = Runtime(root=str(place / root))
    with pytest.raises(TetherError) as caught:
        rt.start(given.format(place=place), str(place / "root" / "run.json"))
    assert caught.value.code == "forbidden"
    assert "is outside the allowed root" in caught.value.message
    assert not (place / "root" / "run.json").exists()
    rt.start("tree.yaml", "run.json")  # inside, through a linked root too
    assert rt.next(str(place / "root" / "run.json"))["type"] == "instruct"


@pytest.mark.parametrize(
    "ref", ["../root2/node.yaml", "out/node.yaml", "sub/../../root2/node.yaml"]
)
@pytest.mark.parametrize("root", ["root", "link"])
def test_a_ref_stays_under_the_root(place: Path, ref: str, root: str) -> None:
    (place / "root" / "uses.yaml").write_text(
        f"name: t\ntree:\n  type: sequence\n  name: R\n  children:\n    - $ref: {ref}\n"
    )
    with pytest.raises(TetherError) as caught:
        load_tree(place / root / "uses.yaml", root=place / root)
    assert caught.value.code == "forbidden"
    (place / "root" / "uses.yaml").write_text(
        "name: t\ntree:\n  type: sequence\n  name: R\n  children:\n    - $ref: sub/../node.yaml\n"
    )
    loaded = load_tree(place / root / "uses.yaml", root=place / root)
    assert loaded.data["root"]["children"][0]["name"] == "A"
