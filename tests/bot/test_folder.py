"""Bot folders: the example builds to exactly the committed tree file, the layout's rules, and
bad folders that say what is wrong and where."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from bot.botkit import EXAMPLE_FOLDER, EXAMPLE_TREE
from tether.bot.folder import build_tree, render
from tether.bot.surface import surface_of
from tether.errors import TetherError
from tether.tree.load import load_tree

Files = dict[str, str]


@pytest.fixture
def make_bot(tmp_path: Path) -> Callable[[Files], Path]:
    """Writes a bot folder named `mybot` from {relative path: text}."""

    def make(files: Files) -> Path:
        root = tmp_path / "mybot"
        root.mkdir()
        for name, text in files.items():
            path = root / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        return root

    return make


def _fails(folder: Path) -> TetherError:
    with pytest.raises(TetherError) as caught:
        build_tree(folder)
    return caught.value


def test_rebuilding_the_example_folder_gives_exactly_the_committed_tree_file() -> None:
    text = render(build_tree(EXAMPLE_FOLDER), EXAMPLE_FOLDER.name)
    assert text == EXAMPLE_TREE.read_text(encoding="utf-8")
    assert load_tree(EXAMPLE_TREE).data == build_tree(EXAMPLE_FOLDER)


def test_the_example_has_three_phases_of_four_actions() -> None:
    surface = surface_of(build_tree(EXAMPLE_FOLDER))
    assert [p.name for p in surface.phases] == ["shape", "map", "slice"]
    assert [len(p.actions) for p in surface.phases] == [4, 4, 4]


def test_numbers_give_the_order_and_are_dropped_from_names(
    make_bot: Callable[[Files], Path],
) -> None:
    root = make_bot(
        {
            "10_last/1_only/instructions.md": "last",
            "2_first/2_b/instructions.md": "b",
            "2_first/1_a/instructions.md": "a",
        }
    )
    data = build_tree(root)
    assert data["name"] == "mybot"
    phases = data["root"]["children"]
    assert [p["name"] for p in phases] == ["first", "last"]
    assert [a["name"] for a in phases[0]["children"]] == ["a", "b"]


def test_folders_without_a_number_follow_the_numbered_ones_by_name(
    make_bot: Callable[[Files], Path],
) -> None:
    root = make_bot(
        {
            "review/b/instructions.md": "b",
            "review/1_first/instructions.md": "first",
            "review/a/instructions.md": "a",
            "2_build/1_only/instructions.md": "only",
            "archive/1_only/instructions.md": "only",
        }
    )
    phases = build_tree(root)["root"]["children"]
    assert [p["name"] for p in phases] == ["build", "archive", "review"]
    assert [a["name"] for a in phases[2]["children"]] == ["first", "a", "b"]


def test_files_give_instructions_criteria_checks_writes_description_and_triggers(
    make_bot: Callable[[Files], Path],
) -> None:
    root = make_bot(
        {
            "description.md": "The bot.\n",
            "triggers.txt": "go bot\n",
            "1_p/description.md": "\nThe phase.\n\n",
            "1_p/triggers.txt": "# a comment\n\n- start p\n- begin p\n",
            "1_p/1_a/instructions.md": "Do this.\n\nThen that.\n",
            "1_p/1_a/criteria.txt": "- it is done\n- the user agrees\n",
            "1_p/1_a/checks.txt": "size(VAR.items) > 0\n",
            "1_p/1_a/writes.txt": "items\n",
        }
    )
    data = build_tree(root)
    assert data["description"] == "The bot."
    assert data["root"]["triggers"] == ["go bot"]
    p = data["root"]["children"][0]
    assert (p["description"], p["triggers"]) == ("The phase.", ["start p", "begin p"])
    assert p["children"][0]["steps"] == [
        {"instruct": "Do this.\n\nThen that.", "writes": ["items"]},
        {"evaluate": "it is done"},
        {"evaluate": "the user agrees"},
        {"check": "size(VAR.items) > 0"},
    ]
    rendered = render(data, "mybot")
    assert "instruct: |-\n" in rendered, "texts of several lines are literal blocks"


@pytest.mark.parametrize(
    ("files", "where", "problem"),
    [
        (
            {"1_shape/1_a/instructions.md": "x", "shape/1_a/instructions.md": "y"},
            "shape",
            "claims the phase name 'shape' of 1_shape",
        ),
        (
            {"1_p/1_a/instructions.md": "x", "1_p/01_b/instructions.md": "y"},
            "1_p/1_a",
            "has the same number as 01_b",
        ),
        (
            {"1_p/1_a/instructions.md": "x", "1_p/1_a/notes.txt": "?"},
            "1_p/1_a/notes.txt",
            "is not a bot file; this folder takes instructions.md, criteria.txt",
        ),
        ({"1_p/1_a/criteria.txt": "done"}, "1_p/1_a/instructions.md", "is missing or empty"),
        ({"1_p/1_a/instructions.md": "  \n"}, "1_p/1_a/instructions.md", "is missing or empty"),
        (
            {"1_p/1_a/instructions.md": "x", "1_p/1_a/checks.txt": "size(VAR.x) >"},
            "1_p/1_a/checks.txt",
            "'size(VAR.x) >' is not a valid CEL expression",
        ),
        (
            {"1_p/1_a/instructions.md": "x", "1_p/1_a/writes.txt": "ok\nnot a path\n"},
            "1_p/1_a/writes.txt",
            "line 2: 'not a path' is not a var path",
        ),
        (
            {"1_p/1_a/instructions.md": "x", "1_p/1_a/1_deeper/instructions.md": "y"},
            "1_p/1_a/1_deeper",
            "is a folder inside an action folder",
        ),
        ({"1_p/description.md": "empty phase"}, "1_p", "holds no action folders"),
        ({"description.md": "no phases"}, "", "holds no phase folders"),
        ({"1_bad@name/1_a/instructions.md": "x"}, "1_bad@name", "the phase name 'bad@name'"),
        ({"README.md": "hi", "1_p/1_a/instructions.md": "x"}, "README.md", "is not a bot file"),
    ],
    ids=[
        "same_name",
        "same_number",
        "unknown_file",
        "no_instructions",
        "blank_instructions",
        "bad_cel",
        "bad_write_path",
        "folder_in_action",
        "empty_phase",
        "no_phases",
        "bad_name",
        "unknown_file_at_top",
    ],
)
def test_a_bad_bot_folder_names_the_folder_or_file_and_the_problem(
    make_bot: Callable[[Files], Path], files: Files, where: str, problem: str
) -> None:
    root = make_bot(files)
    error = _fails(root)
    assert error.code == "invalid_tree"
    path = str(root / where) if where else str(root)
    assert error.message.startswith(f"{path}: {problem}"), error.message
    assert error.details["file"] == path


def test_a_missing_folder_is_not_found(tmp_path: Path) -> None:
    error = _fails(tmp_path / "nowhere")
    assert error.code == "not_found" and "no such bot folder" in error.message
