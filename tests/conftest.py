"""Settings shared by the whole suite: Hypothesis runs without its per-example deadline, because a
property test asserts behaviour, never time (speed is measured by `bench/`), and a loaded
machine would otherwise fail an example that merely ran slowly. The `harness_capability` mark,
and `--harness-capabilities FILE`, which writes the table those marks make
(`field.capability_marks`)."""

from typing import Any

import pytest
from hypothesis import settings

settings.register_profile("tether", deadline=None)
settings.load_profile("tether")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--harness-capabilities",
        metavar="FILE",
        help="write the harness capability table the collected tests' marks make to FILE",
    )


def pytest_configure(config: pytest.Config) -> None:
    """`harness_capability(harness, capability)`: the test proves the harness can do it."""
    config.addinivalue_line(
        "markers",
        "harness_capability(harness, capability, cap=N): the test proves what a harness can do "
        "(events, deny, stop, context, evidence, person; cap: its own cap on refused stops)",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[Any]) -> None:
    path = config.getoption("--harness-capabilities")
    if path:
        from field.capability_marks import write

        write(items, path)
