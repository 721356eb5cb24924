"""Settings shared by the whole suite: Hypothesis runs without its per-example deadline, because a
property test asserts behaviour, never time (speed is measured by `bench/`), and a loaded
machine would otherwise fail an example that merely ran slowly."""

from hypothesis import settings

settings.register_profile("tether", deadline=None)
settings.load_profile("tether")
