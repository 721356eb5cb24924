"""Settings shared by the whole suite: Hypothesis runs without its per-example deadline, because a
property test asserts behaviour, never time (speed is measured by `bench/`), and a loaded
machine would otherwise fail an example that merely ran slowly."""

from hypothesis import settings

settings.register_profile("tether", deadline=None)
settings.load_profile("tether")


def pytest_configure(config: object) -> None:
    """`harness_capability(harness, capability)`: the test proves that the harness can do it
    (`tether.guard.harness.capabilities` builds the shipped table from these marks)."""
    config.addinivalue_line(  # type: ignore[attr-defined]
        "markers",
        "harness_capability(harness, capability): the test proves what a harness can do "
        "(events, deny, stop, context, evidence, person)",
    )
