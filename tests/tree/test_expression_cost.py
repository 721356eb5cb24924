"""What one CEL expression may cost: comprehensions nest at most two deep (a load error beyond,
where the expression sits), and an expression whose work grows faster than its inputs runs only
while its bound, the longest list it could iterate to the power of its levels, is within limits.

The library itself has no cost limit and holds the interpreter while it evaluates: an expression
from a review, `map` three deep over 200 items, ran for minutes and froze a server."""

from __future__ import annotations

from pathlib import Path

import pytest

from tether.errors import TetherError
from tether.tree import ExpressionError, check_expression, evaluate, load_tree
from tether.tree.expressions import MAX_COST, MAX_WORK

THREE_DEEP = "VAR.xs.map(a, VAR.xs.map(b,\n  VAR.xs.map(c, a + b + c))).size() > 0"


def _tree(tmp_path: Path, check: str) -> Path:
    path = tmp_path / "costly.yaml"
    indented = check.replace("\n", "\n            ")
    path.write_text(
        "name: costly\nversion: '1'\nstate:\n  var:\n    xs: []\ntree:\n  type: sequence\n"
        "  name: root\n  children:\n    - type: action\n      name: Costly\n      steps:\n"
        f"        - instruct: go\n        - check: |-\n            {indented}\n"
    )
    return path


def test_the_reviews_three_deep_map_is_refused_at_load_where_it_sits(tmp_path: Path) -> None:
    with pytest.raises(TetherError) as caught:
        load_tree(_tree(tmp_path, THREE_DEEP))
    error = caught.value
    assert error.code == "invalid_tree"
    assert error.details["key"] == "tree.children[0].steps[1].check"
    assert (error.details["line"], error.details["expression_line"]) == (
        14,
        2,
    )  # the block scalar, then its second line
    assert error.details["expression_column"] == 10  # the innermost `map`
    assert "map is nested 3 comprehensions deep, more than 2" in error.message


@pytest.mark.parametrize(
    "src",
    [
        "VAR.xs.all(a, VAR.xs.exists(b, a == b))",  # two deep is allowed
        "VAR.xs.map(a, a).map(b, b).filter(c, c > 0).exists(d, d > 1)",  # a chain, not a nest
        "'.map(a, b.map(c, d.map(e, e)))' == VAR.s",  # inside a string literal
        "VAR.s == '' // .map(a, b.map(c, d.map(e, e)))",  # inside a comment
        "VAR.xs.exists(a, a.size() > 0 && VAR.ys.all(b, b.matches('x')))",
    ],
)
def test_what_does_not_nest_three_deep_loads(src: str) -> None:
    check_expression(src)


@pytest.mark.parametrize(
    "src",
    [
        "VAR.m.exists(k, VAR.m.exists(j, VAR.m.all(i, i != j)))",
        "VAR.xs.exists(a, [VAR.xs.filter(b, b > a).exists_one(c, VAR.xs.all(d, d > c))])",
        "VAR.xs . map ( a , VAR.xs.map(b, VAR.xs.map(c, c)))",
    ],
)
def test_three_deep_in_any_spelling_is_refused(src: str) -> None:
    with pytest.raises(TetherError) as caught:
        check_expression(src)
    assert caught.value.code == "invalid_tree"


@pytest.mark.parametrize(
    ("src", "longest", "power"),
    [
        ("VAR.xs.map(a, VAR.xs.map(b, [a, b])).size() > 0", 200, 3),
        ("VAR.xs.exists(a, VAR.xs.exists(b, a + b < 0))", 800, 2),
        ("VAR.xs.exists(a, a in VAR.ys)", 800, 2),  # `in` searches the list: n * n
        ("VAR.xs.map(a, a * 2).size() > 0", 800, 2),  # map copies its list once per item
        ("VAR.rows.exists(r, r.exists(c, c < 0))", 800, 2),  # the list inside a list counts
    ],
)
def test_an_expression_over_too_long_a_list_is_refused_before_it_runs(
    src: str, longest: int, power: int
) -> None:
    xs = list(range(longest))
    scopes = {"xs": xs, "ys": xs, "rows": [xs]}
    with pytest.raises(ExpressionError) as caught:
        evaluate(src, scopes, {})
    assert caught.value.reason.startswith(
        f"too costly: its work grows as n**{power} and its longest list or map has {longest} "
        f"items ({longest**power:,} > {MAX_WORK:,})"
    )


def test_a_list_written_in_the_expression_counts_too() -> None:
    written = "[" + ",".join(["1"] * 900) + "]"
    with pytest.raises(ExpressionError, match="too costly"):
        evaluate(f"{written}.map(a, a).size() > 0", {}, {})


def test_tools_and_loop_items_count_as_inputs() -> None:
    tools = [{"tool": "Bash", "input": {"n": i}, "ok": True, "seq": i} for i in range(800)]
    with pytest.raises(ExpressionError, match="800 items"):
        evaluate("TOOLS.map(t, t.tool).size() > 0", {}, {}, tools)
    with pytest.raises(ExpressionError, match="800 items"):
        evaluate("ITEM.map(t, t).size() > 0", {}, {}, None, {"ITEM": list(range(800))})


def test_what_stays_within_the_bound_is_evaluated() -> None:
    xs = list(range(300))
    assert evaluate("VAR.xs.map(a, a + 1).size()", {"xs": xs}, {}) == 300  # 90,000
    assert evaluate("VAR.xs.exists(a, a in VAR.ys)", {"xs": xs, "ys": [299]}, {}) is True


def test_work_that_grows_no_faster_than_its_inputs_is_never_refused() -> None:
    xs = list(range(MAX_WORK + 1))
    assert evaluate(f"{MAX_WORK} in VAR.xs && VAR.xs.exists(x, x == 3)", {"xs": xs}, {}) is True


def test_only_the_scopes_an_expression_reads_are_handed_to_the_library() -> None:
    # A long TOOLS does not make a check that never reads it too costly.
    tools = [{"tool": "Read", "input": {}, "ok": True, "seq": i} for i in range(900)]
    assert evaluate("VAR.xs.map(a, a).size()", {"xs": [1, 2]}, {}, tools) == 2


def test_r2_string_work_in_a_comprehension_is_counted_before_it_runs() -> None:
    """R2: the red team's expression (18.9 s at 1,000 items) and a long chain of string
    concatenations outside any comprehension (each copies what the ones before built) are
    refused before they run; the same expression over two items is evaluated."""
    big = "x" * (1 << 20)
    attack = "VAR.l.exists(a, size(VAR.s + VAR.s + VAR.s + VAR.s) < 0)"
    for items in (1000, 130_000):
        with pytest.raises(ExpressionError, match=r"too costly: it may copy or scan") as err:
            evaluate(attack, {"l": [0] * items, "s": big}, {})
        assert f"{MAX_COST:,}" in err.value.reason
    chain = "size(" + " + ".join(["VAR.s"] * 40) + ") > 0"
    with pytest.raises(ExpressionError, match="too costly"):
        evaluate(chain, {"s": big}, {})
    with pytest.raises(ExpressionError, match="too costly"):  # a string in a map's key counts
        evaluate(chain.replace("VAR.s", "VAR.m.keys()[0]"), {"m": {big: 1}}, {})
    assert evaluate(attack, {"l": [0, 0], "s": big}, {}) is False
    assert evaluate("VAR.s + '!' == VAR.s + '!'", {"s": big}, {}) is True
