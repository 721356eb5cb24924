"""Trees written for abtree and behaviors-sh load as they are: JSON-pointer `$ref`s (and the
cycles they can form, refused by name), node names with spaces, and step texts trimmed the way
abtree trims them. Pointers obey the load's bounds: a pointer reads no file, and no pointer or
fragment named many times can make the tree grow past `MAX_TREE_CHARS` or `MAX_NODE_DEPTH`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tether.errors import EXIT_INVALID, TetherError
from tether.tree import load_tree, load_tree_text
from tether.tree.load import MAX_NODE_DEPTH, MAX_TREE_CHARS
from tether.verbs import Runtime

POINTERS = Path(__file__).parent / "fixtures" / "pointers"
TETHER = [sys.executable, "-m", "tether.cli.main"]
SECRET = "hunter2-do-not-show"


def fails(text: str, **options: Any) -> TetherError:
    with pytest.raises(TetherError) as caught:
        load_tree_text(text, "t.yaml", **options)
    return caught.value


def sequence(*children: str) -> str:
    """A wrapper whose root sequence `R` has these children (flow YAML, one per line)."""
    lines = "".join(f"    - {child}\n" for child in children)
    return f"name: t\ntree:\n  type: sequence\n  name: R\n  children:\n{lines}"


# -- pointers ---------------------------------------------------------------------------------


def test_a_pointer_and_a_fragment_pointer_load_as_the_tree_written_out() -> None:
    reused = load_tree(POINTERS / "reuse.yaml")
    spelled = load_tree(POINTERS / "spelled-out.yaml")
    assert reused.data == spelled.data
    assert reused.hash == spelled.hash


def test_a_behaviors_root_node_points_into_itself() -> None:
    root = load_tree(POINTERS / "behaviors.json").data["root"]
    assert root["children"][1] == root["children"][0]["children"][0]
    assert root["children"][1]["name"] == "Say good morning"


@pytest.mark.parametrize(
    ("children", "cycle", "line", "key"),
    [
        (['$ref: "#/tree"'], "#/tree -> #/tree", 6, "tree.children[0].$ref"),
        (['$ref: "#"'], "# -> #", 6, "tree.children[0].$ref"),
        (
            [
                '{type: sequence, name: A, children: [$ref: "#/tree/children/1"]}',
                '{type: sequence, name: B, children: [$ref: "#/tree/children/0"]}',
            ],
            "#/tree/children/0 -> #/tree/children/1 -> #/tree/children/0",
            7,
            "tree.children[1].children[0].$ref",
        ),
    ],
    ids=["to_its_own_parent", "to_the_whole_file", "two_pointers"],
)
def test_a_pointer_cycle_is_a_load_error_that_names_it(
    children: list[str], cycle: str, line: int, key: str
) -> None:
    error = fails(sequence(*children))
    assert (error.code, error.exit_code) == ("invalid_tree", EXIT_INVALID)
    assert f"$ref cycle: {cycle} at {key}" in error.message
    assert (error.details["line"], error.details["key"]) == (line, key)


def test_a_cycle_through_a_fragment_pointer_names_each_step(tmp_path: Path) -> None:
    (tmp_path / "main.yaml").write_text(
        sequence('{type: sequence, name: A, children: [$ref: "part.yaml#/children/0"]}')
    )
    (tmp_path / "part.yaml").write_text(
        "type: sequence\nname: P\nchildren:\n  - $ref: main.yaml#/tree/children/0\n"
    )
    with pytest.raises(TetherError) as caught:
        load_tree(tmp_path / "main.yaml")
    assert "$ref cycle: main.yaml#/tree/children/0 -> part.yaml#/children/0 -> " in str(
        caught.value
    )


@pytest.mark.parametrize(
    ("target", "problem"),
    [
        ("#/tree/kids/0", " names nothing: tree has no key 'kids' AT"),
        ("#/tree/children/7", " names nothing: tree.children has no item '7' (it holds 1) AT"),
        ("#/tree/children/00", " names nothing: tree.children has no item '00' (it holds 1) AT"),
        ("#/name/x", " names nothing: name is a string AT"),
        ("#tree", ": a JSON pointer after '#' begins with '/' AT (such as '#/tree/children/0')"),
        ("#/tr~ee", ": '~' in a JSON pointer is written '~0' ('/' is '~1') AT"),
    ],
)
def test_a_pointer_that_names_no_node_is_refused_at_the_ref(target: str, problem: str) -> None:
    error = fails(sequence(f'$ref: "{target}"'))
    assert error.code == "invalid_tree"
    tail = problem.replace("AT", "at tree.children[0].$ref")
    assert error.message == f"t.yaml:6:13: $ref {target!r}{tail}"


def test_a_pointer_is_a_uri_fragment_so_percent_escapes_decode() -> None:
    text = sequence(
        "{type: sequence, name: A, children: [{type: action, name: a b, steps: [instruct: x]}]}",
        '{type: sequence, name: B, children: [$ref: "#/tr%65e/children/0/children/0"]}',
    )
    assert load_tree_text(text).data["root"]["children"][1]["children"][0]["name"] == "a b"


def test_a_pointer_is_not_a_path_and_reads_no_file(tmp_path: Path) -> None:
    (tmp_path / "secret.yaml").write_text(f"type: action\nname: S\nsteps: [instruct: {SECRET}]\n")
    inside = tmp_path / "trees"
    inside.mkdir()
    for target in ("#/../secret.yaml", "#/../../secret.yaml/tree"):
        (inside / "tree.yaml").write_text(sequence(f'$ref: "{target}"'))
        with pytest.raises(TetherError) as caught:
            load_tree(inside / "tree.yaml")
        assert "names nothing: (root) has no key '..'" in caught.value.message
        assert SECRET not in caught.value.message
    (inside / "tree.yaml").write_text(sequence('$ref: "../secret.yaml#/steps/0"'))
    with pytest.raises(TetherError) as caught:
        load_tree(inside / "tree.yaml")
    assert caught.value.code == "forbidden"


def test_a_pointer_named_twice_at_every_level_is_refused_before_it_grows() -> None:
    ref = '$ref: "#/tree/children/1/children/{}"'
    levels = [
        f"{{type: sequence, name: L{i}, children: [{ref.format(i + 1)}, "
        f"{{type: sequence, name: again, children: [{ref.format(i + 1)}]}}]}}"
        for i in range(63)
    ]
    levels.append("{type: action, name: L63, steps: [{instruct: go}]}")
    text = sequence(
        '$ref: "#/tree/children/1/children/0"',
        "{type: sequence, name: Levels, children: [" + ", ".join(levels) + "]}",
    )
    error = fails(text)
    assert error.code == "invalid_tree"
    assert error.details["char_limit"] == MAX_TREE_CHARS
    assert f"the tree expands to more than {MAX_TREE_CHARS} characters" in error.message


def test_fragment_files_named_twice_at_every_level_are_refused_too(tmp_path: Path) -> None:
    for i in range(40):
        child = f"f{i + 1}.yaml"
        (tmp_path / f"f{i}.yaml").write_text(
            f"type: sequence\nname: L{i}\nchildren:\n  - $ref: {child}\n"
            f"  - {{type: sequence, name: again, children: [$ref: {child}]}}\n"
        )
    (tmp_path / "f40.yaml").write_text("type: action\nname: Leaf\nsteps: [instruct: go]\n")
    (tmp_path / "main.yaml").write_text(sequence("$ref: f0.yaml"))
    with pytest.raises(TetherError) as caught:
        load_tree(tmp_path / "main.yaml")
    assert caught.value.details["char_limit"] == MAX_TREE_CHARS


def test_a_chain_of_pointers_deeper_than_the_limit_is_refused() -> None:
    count = MAX_NODE_DEPTH + 5
    levels = [
        f'{{type: sequence, name: L{i}, children: [$ref: "#/tree/children/1/children/{i + 1}"]}}'
        for i in range(count)
    ]
    levels.append(f"{{type: action, name: L{count}, steps: [{{instruct: go}}]}}")
    text = sequence(
        '$ref: "#/tree/children/1/children/0"',
        "{type: sequence, name: Levels, children: [" + ", ".join(levels) + "]}",
    )
    error = fails(text)
    assert error.details["node_depth_limit"] == MAX_NODE_DEPTH
    assert f"the tree is more than {MAX_NODE_DEPTH} nodes deep" in error.message


def chain(count: int, at: int) -> str:
    """Sequences `L0`..`L{count-1}`, each holding a pointer to the next (the last holds an
    action), inside one sequence `Ls` that is child `at` of the root."""
    base = f"#/tree/children/{at}/children"
    links = [
        f'{{type: sequence, name: L{i}, children: [$ref: "{base}/{i + 1}"]}}'
        for i in range(count - 1)
    ]
    links.append(
        f"{{type: sequence, name: L{count - 1}, children: [{{type: action, name: A, "
        "steps: [instruct: go]}]}"
    )
    return f"{{type: sequence, name: Ls, children: [{', '.join(links)}]}}"


def test_a_reused_subtree_counts_its_depth_where_it_is_named_again() -> None:
    assert load_tree_text(sequence(chain(60, 0))).data["root"]["children"][0]["name"] == "Ls"
    nested = "{type: sequence, name: D, children: [" * 45
    again = nested + '$ref: "#/tree/children/0/children/1"' + "]}" * 45
    error = fails(sequence(chain(60, 0), again))
    assert error.details["node_depth_limit"] == MAX_NODE_DEPTH
    assert error.details["key"].endswith(".children[0].$ref")


# -- names --------------------------------------------------------------------------------------


def test_names_take_what_behaviors_sh_takes_and_stay_unique_among_siblings() -> None:
    names = ["Morning greeting", "Ask: what's next?", "Überprüfen (2)", "a.b", " padded "]
    text = sequence(
        *(f"{{type: action, name: {json.dumps(n)}, steps: [instruct: x]}}" for n in names)
    )
    loaded = [c["name"] for c in load_tree_text(text).data["root"]["children"]]
    assert loaded == names
    twice = fails(sequence(*["{type: action, name: 'Say hi', steps: [instruct: x]}"] * 2))
    assert "duplicate name 'Say hi' among siblings" in twice.message
    for bad in ("a/b", "me@home", ""):
        error = fails(sequence(f"{{type: action, name: {json.dumps(bad)}, steps: [instruct: x]}}"))
        assert "name must be a non-empty name without '/' or '@'" in error.message


def test_a_name_with_spaces_runs_with_the_usual_step_token(tmp_path: Path) -> None:
    rt = Runtime()
    uri = str(tmp_path / "run.json")
    rt.start(str(POINTERS / "behaviors.json"), uri)
    rt.submit(uri, "success")
    request = rt.next(uri)
    assert request["name"] == "Say good morning"
    assert request["path"] == [0, 0]
    assert request["step"].startswith("0.0:0:0:")


# -- step texts ---------------------------------------------------------------------------------


def test_step_texts_lose_blank_lines_and_shared_indentation() -> None:
    steps = load_tree(POINTERS / "behaviors.json").data["root"]["children"][0]["children"][0]
    assert steps["steps"] == [
        {"evaluate": "$VAR.hour is before 12"},
        {"instruct": "Greet the user:\n  good morning."},
    ]
    block = (
        "name: t\ntree:\n  type: action\n  name: A\n  steps:\n    - instruct: |+\n\n"
        "          First line\n            indented more\n\n\n    - evaluate: '  x  '\n"
    )
    data = load_tree_text(block).data
    assert data["root"]["steps"] == [
        {"instruct": "First line\n  indented more"},
        {"evaluate": "x"},
    ]
    assert (
        load_tree_text(block).hash
        == load_tree_text(
            "name: t\ntree: {type: action, name: A, steps: "
            '[{instruct: "First line\\n  indented more"}, {evaluate: x}]}\n'
        ).hash
    )


def test_a_step_text_of_white_space_alone_is_refused() -> None:
    error = fails('name: t\ntree: {type: action, name: A, steps: [{instruct: "\\t \\n "}]}\n')
    assert "instruct must be a string with more than white space in it" in error.message


def test_the_agent_sees_the_trimmed_text(tmp_path: Path) -> None:
    tree = tmp_path / "tree.json"
    tree.write_text(
        json.dumps(
            {
                "name": "t",
                "tree": {"type": "action", "name": "A", "steps": [{"instruct": "\n\t\tDo it\n"}]},
            }
        )
    )

    def tether(*args: str) -> Any:
        done = subprocess.run(
            [*TETHER, *args], cwd=tmp_path, capture_output=True, text=True, check=True
        )
        return json.loads(done.stdout)

    tether("start", "tree.json", "run.json")
    tether("submit", "run.json", "success")
    assert tether("next", "run.json")["instruction"] == "Do it"
    stored = json.loads((tmp_path / "run.json.tree.json").read_text())
    assert stored["root"]["steps"] == [{"instruct": "Do it"}]
