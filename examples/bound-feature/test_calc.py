"""The example's test suite: the Test step's check looks for a passing pytest run."""

from calc import add


def test_add() -> None:
    assert add(2, 3) == 5
