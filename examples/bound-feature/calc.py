"""The code the example's agent changes."""


def add(a: int, b: int) -> int:
    return a + b
