"""Settings shared by the whole suite: Hypothesis runs without its per-example deadline, because a
property test asserts behaviour, never time (speed is measured by `bench/`), and a loaded
machine would otherwise fail an example that merely ran slowly; and the marker a field test
carries for each capability of a harness it proves (`harness_capability`)."""

import pytest
from hypothesis import settings

settings.register_profile("tether", deadline=None)
settings.load_profile("tether")


def pytest_configure(config: pytest.Config) -> None:
    """`harness_capability(HARNESS, CAPABILITY)`: the test proves that the harness gives Tether
    the capability (events, deny, stop, context, evidence, person)."""
    config.addinivalue_line(
        "markers",
        "harness_capability(harness, capability): the test proves the harness's capability",
    )
