"""Files that ship with Tether: the examples, the agent skill and the docs.

Owns where they are found. In the repository they are the top-level folders `examples/`,
`skills/` and `docs/`; an installed package carries the same folders inside it, as
`tether/examples`, `tether/skills` and `tether/docs` (setup.py copies them there), so `tether
init`, `tether install skill` and the MCP server's guidance read them the same way from a wheel
as from a checkout. It does not copy or serve anything (its callers do).
"""

from __future__ import annotations

import os

from tether.errors import TetherError

FOLDERS = ("examples", "skills", "docs")
_PACKAGE = os.path.dirname(os.path.abspath(__file__))


def folder(name: str) -> str:
    """The absolute path of the shipped folder `name` (one of `FOLDERS`): inside the installed
    package, else at the top of the repository this package runs from."""
    if name not in FOLDERS:
        raise ValueError(f"no shipped folder {name!r}")
    for candidate in (
        os.path.join(_PACKAGE, name),
        os.path.join(os.path.dirname(os.path.dirname(_PACKAGE)), name),
    ):
        if os.path.isdir(candidate):
            return candidate
    raise TetherError(
        "not_found",
        f"this installation of Tether has no {name}/ folder (looked in {_PACKAGE}); "
        "reinstall the package",
    )


def read(name: str, *parts: str) -> str:
    """The text of a shipped file, e.g. `read("skills", "tether", "SKILL.md")`."""
    path = os.path.join(folder(name), *parts)
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except FileNotFoundError:
        raise TetherError(
            "not_found", f"this installation of Tether has no {name}/{'/'.join(parts)}"
        ) from None
