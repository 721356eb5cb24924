"""CEL expressions: scopes and their spellings, errors, and how the library is loaded."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tether.errors import TetherError
from tether.tree import ExpressionError, check_expression, evaluate, evaluate_condition
from tether.tree.expressions import evaluate_list, prepare

FIXTURES = Path(__file__).parent / "fixtures"
VAR = {"x": 5, "name": "ada", "review": {"notes": ["ok"]}}
CONST = {"limit": 3}


@pytest.mark.parametrize(
    "src",
    [
        "VAR.x > CONST.limit",
        "LOCAL.x > GLOBAL.limit",
        "$VAR.x > $CONST.limit",
        "$LOCAL.x > $GLOBAL.limit",
        "size($LOCAL.review.notes) == 1 && $VAR.name == 'ada'",
    ],
)
def test_scopes_under_every_spelling(src: str) -> None:
    assert evaluate_condition(src, VAR, CONST) is True


def test_evaluate_returns_plain_python_values() -> None:
    assert evaluate("$VAR.review", VAR, CONST) == {"notes": ["ok"]}
    assert evaluate("VAR.x + 1", VAR, CONST) == 6


def test_dollar_prefixes_inside_string_literals_are_kept() -> None:
    assert evaluate("'cost: $VAR.x' + \"$GLOBAL\"", VAR, CONST) == "cost: $VAR.x$GLOBAL"
    assert prepare("'''$VAR''' + $VAR.x") == "'''$VAR''' +  VAR.x"
    assert prepare("'it\\'s $VAR' + $CONST.limit") == "'it\\'s $VAR' +  CONST.limit"


def test_prepare_keeps_columns_and_leaves_other_dollar_words() -> None:
    src = "$VAR.x == $VARIABLE"
    assert prepare(src) == " VAR.x == $VARIABLE"
    assert len(prepare(src)) == len(src)


@given(st.text(alphabet="$VARLOCNSTGBx.'\"\\ r", max_size=40))
def test_prepare_only_blanks_dollars_and_never_moves_a_column(src: str) -> None:
    out = prepare(src)
    assert len(out) == len(src)
    assert all(a == b or (a == "$" and b == " ") for a, b in zip(src, out, strict=True))


def test_loop_items_under_every_spelling_and_undefined_outside_a_loop() -> None:
    names = {"ITEM": {"path": "a.py"}, "ITEM_INDEX": 1, "ITEMS": {"file": {"path": "a.py"}}}
    for src in (
        "ITEM.path == 'a.py' && ITEM_INDEX == 1 && ITEMS.file == ITEM",
        "$ITEM.path == 'a.py' && $ITEM_INDEX == 1 && $ITEMS.file == $ITEM",
    ):
        assert evaluate_condition(src, VAR, CONST, names=names) is True
    assert evaluate("'$ITEM' + ITEM.path", VAR, CONST, names=names) == "$ITEMa.py"
    with pytest.raises(ExpressionError, match="ITEM"):
        evaluate("ITEM.path", VAR, CONST)


def test_a_for_each_list_must_be_a_list_of_json_values() -> None:
    assert evaluate_list("VAR.review.notes + [1, {'a': null}]", VAR, CONST) == [
        "ok",
        1,
        {"a": None},
    ]
    with pytest.raises(ExpressionError, match=r"^for_each must produce a list, got map"):
        evaluate_list("VAR.review", VAR, CONST)
    with pytest.raises(ExpressionError, match="a list of JSON values, got list"):
        evaluate_list("[duration('1s')]", VAR, CONST)
    with pytest.raises(ExpressionError) as caught:
        evaluate_list("VAR.big", {"big": "x" * 10_000}, CONST)
    assert len(caught.value.reason) < 200, "a reason quotes only the start of a long value"


def test_missing_key_is_an_expression_error() -> None:
    with pytest.raises(ExpressionError) as caught:
        evaluate("VAR.y == 1", VAR, CONST)
    assert caught.value.reason == "no such key 'y'"


def test_type_error_is_an_expression_error() -> None:
    with pytest.raises(ExpressionError) as caught:
        evaluate("VAR.name + 1", VAR, CONST)
    assert caught.value.reason == "Unsupported operation: string + int"


@pytest.mark.parametrize(
    ("src", "reason"),
    [
        ("VAR.x", "check must produce a bool, got int 5"),
        ("VAR.name", 'check must produce a bool, got string "ada"'),
        ("VAR.review", 'check must produce a bool, got map {"notes": ["ok"]}'),
    ],
)
def test_condition_must_be_a_bool(src: str, reason: str) -> None:
    with pytest.raises(ExpressionError) as caught:
        evaluate_condition(src, VAR, CONST)
    assert caught.value.reason == reason


def test_check_expression_reports_position_inside_the_expression() -> None:
    with pytest.raises(TetherError) as caught:
        check_expression("VAR.x +")
    error = caught.value
    assert error.code == "invalid_expression"
    assert (error.details["line"], error.details["column"]) == (1, 8)
    assert error.message == "invalid CEL expression at 1:8: Syntax error: mismatched input '<EOF>'"


def test_check_expression_position_on_a_later_line() -> None:
    with pytest.raises(TetherError) as caught:
        check_expression("VAR.x > 1 &&\n  (")
    assert (caught.value.details["line"], caught.value.details["column"]) == (2, 4)


def test_check_expression_accepts_valid_expressions_with_dollar_spellings() -> None:
    check_expression("$LOCAL.tests_passed == true && double($GLOBAL.limit) > 0.5")


def test_compiled_programs_are_cached_by_source() -> None:
    from tether.tree import expressions

    evaluate("VAR.x == 5 || false", VAR, CONST)
    program = expressions._programs["VAR.x == 5 || false"]
    evaluate("VAR.x == 5 || false", VAR, CONST)
    assert expressions._programs["VAR.x == 5 || false"] is program


def _run(code: str) -> str:
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    return result.stdout.strip()


def test_library_is_loaded_lazily_without_its_cli() -> None:
    code = (
        "import sys\n"
        "import tether.tree.expressions as e\n"
        "print(sorted(m for m in ('cel', 'cel.cel', 'yaml', 'pydantic') if m in sys.modules))\n"
        "e.evaluate('1 + 1', {}, {})\n"
        "print('cel.cel' in sys.modules, 'cel' in sys.modules, 'prompt_toolkit' in sys.modules)\n"
        "import cel\n"
        "print(cel.evaluate('2 * 3'))\n"
    )
    assert _run(code).splitlines() == ["[]", "True False False", "6"]


def test_tree_package_imports_nothing_of_tether_but_errors_and_files() -> None:
    """`tether.files` holds the one path confinement a `$ref` base is held to."""
    code = (
        "import sys\n"
        "from tether.tree import load_tree, json_schema\n"
        f"load_tree({str(FIXTURES / 'refs' / 'main.yaml')!r})\n"
        "json_schema()\n"
        "print(sorted(m for m in sys.modules if m.startswith('tether') and "
        "not m.startswith('tether.tree')))\n"
    )
    assert _run(code) == "['tether', 'tether.errors', 'tether.files']"
